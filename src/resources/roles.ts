// /v1/organizations/{id}/roles: the built-in roles and the roles an organization defines
// (SPEC §21). The rules (who may define or change a role, which permissions it may hold,
// that a role in use stays) are the database's: rowgate.create_organization_role and its
// siblings; what members see is rowgate.organization_roles under RLS.
import { PERMISSIONS } from '../auth/authorize.ts';
import { z } from 'zod';
import { notFound } from '../core/errors.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import type { Tx } from '../db/pool.ts';
import { doc, uuid } from '../core/fields.ts';
import { listQuery, listSchema } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';

const roleName = doc(
  z.string().regex(/^[a-z][a-z0-9_-]{0,49}$/, 'A lower-case letter, then up to 49 lower-case letters, digits, _ and -'),
  'The role’s name, its key within the organization: a lower-case letter, then up to 49 lower-case letters, digits, `_` and `-`.',
  'support',
);
const description = doc(
  z.string().max(500).nullable(),
  'What the role is for; null for none.',
  'Answers customers: customers and orders, no products.',
);
const permissions = doc(
  z.array(doc(z.enum(PERMISSIONS), 'A permission (SPEC §5).', 'customers:write')).max(50),
  'The permissions the role grants (SPEC §5). Every member reads the organization’s products, customers, orders and members whatever its role.',
  ['customers:write', 'orders:write'],
);
const nullableTimestamp = (text: string) => doc(z.iso.datetime({ offset: true }).nullable(), text, '2026-11-21T09:30:00.123456+00:00');

const RoleRead = z
  .object({
    id: doc(z.uuid().nullable(), 'The role id; null for a built-in role.', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    organization_id: doc(
      z.uuid().nullable(),
      'The organization that defined it; null for a built-in role.',
      '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b',
    ),
    name: roleName,
    description,
    permissions,
    built_in: doc(z.boolean(), '`admin`, `member` and `finance` are built in: the same in every organization, not editable.', false),
    created_at: nullableTimestamp('When it was created (RFC 3339, UTC); null for a built-in role.'),
    updated_at: nullableTimestamp('When it last changed (RFC 3339, UTC); null for a built-in role.'),
  })
  .meta({ id: 'Role', description: 'A role a membership or an invitation names: built in, or defined by the organization.' });

const RoleCreate = z
  .strictObject({ name: roleName, description: description.optional(), permissions })
  .meta({ id: 'RoleCreate', description: 'A role of the organization. Its permissions are at most those the caller holds.' });
const RoleUpdate = z
  .strictObject({ description: description.optional(), permissions: permissions.optional() })
  .meta({ id: 'RoleUpdate', description: 'Fields to change; only the fields sent change. A role’s name is its key and does not change.' });

const organizationParams = z.object({ id: uuid('The organization id.') });
const roleParams = z.object({ id: uuid('The organization id.'), name: doc(z.string().min(1).max(50), 'The role’s name.', 'support') });

// built-in roles with their permissions, and the organization's own (RLS: its members only)
const from = `(select null::uuid as id, null::uuid as organization_id, r.name, r.description,
    array(select rp.permission from rowgate.role_permissions rp where rp.role = r.name order by 1) as permissions,
    true as built_in, null::timestamptz as created_at, null::timestamptz as updated_at
  from rowgate.roles r
  union all
  select o.id, o.organization_id, o.name, o.description, o.permissions, false, o.created_at, o.updated_at
  from rowgate.organization_roles o) roles`; // RLS: live roles of the caller's organizations
const columns = 'id, organization_id, name, description, permissions, built_in, created_at, updated_at';
const roleList: ListSpec = { from, columns, id: 'name', sortable: { created_at: 'created_at', name: 'name', built_in: 'built_in' } };

async function readRole(tx: Tx, organizationId: string, name: string) {
  const row = await tx.one(`select ${columns} from ${from} where (built_in or organization_id = $1) and name = $2`, [organizationId, name]);
  if (!row) throw notFound();
  return row;
}

const returned = `id, organization_id, name, description, permissions, false as built_in, created_at, updated_at`;

export const roleRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/roles',
    operationId: 'roles:list',
    summary: 'List the roles of an organization',
    description: 'The built-in roles and the roles the organization defined, seen by its members only.',
    tag: 'roles',
    access: access.organization(...readScopes('members')),
    params: organizationParams,
    query: listQuery(roleList, {
      built_in: doc(
        z
          .enum(['true', 'false'])
          .transform((v) => v === 'true')
          .optional(),
        'Only built-in roles (true) or only the organization’s own (false).',
        'false',
      ),
    }),
    status: 200,
    response: listSchema(RoleRead, 'Role'),
    authorize: { resource: 'organization', policy: 'read' },
    handler: ({ tx, params, query }) => {
      const where = new Where();
      where.conditions.push(`(built_in or organization_id = ${where.params.add(params.id)}::uuid)`);
      return runList(tx, roleList, query, where.equals('built_in', query.built_in));
    },
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/organizations/{id}/roles',
    operationId: 'roles:create',
    summary: 'Define a role',
    description:
      'A role of the organization, with at most the permissions the caller holds (422 at `body.permissions` otherwise). At most 100 roles per organization.',
    tag: 'roles',
    access: access.organization(...writeScopes('members')),
    params: organizationParams,
    body: RoleCreate,
    status: 201,
    response: RoleRead,
    authorize: { resource: 'organization', policy: 'members_management' },
    handler: async ({ tx, params, body }) =>
      tx.one(`select ${returned} from rowgate.create_organization_role($1, $2, $3, $4)`, [
        params.id,
        body.name,
        body.description ?? null,
        body.permissions,
      ]),
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/organizations/{id}/roles/{name}',
    operationId: 'roles:update',
    summary: 'Change a role',
    description:
      'Built-in roles are not editable (403). A role holding a permission the caller lacks is not the caller’s to change (403); its new permissions are at most the caller’s (422).',
    tag: 'roles',
    access: access.organization(...writeScopes('members')),
    params: roleParams,
    body: RoleUpdate,
    status: 200,
    response: RoleRead,
    authorize: {
      resource: 'organization',
      policy: 'members_management',
      resolve: (tx, params) => readRole(tx, params.id, params.name),
    },
    handler: async ({ tx, params, body }) =>
      tx.one(`select ${returned} from rowgate.update_organization_role($1, $2, $3, $4, $5)`, [
        params.id,
        params.name,
        'description' in body,
        body.description ?? null,
        body.permissions ?? null,
      ]),
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/organizations/{id}/roles/{name}',
    operationId: 'roles:delete',
    summary: 'Delete a role',
    description: 'A role in use, by a member or a pending invitation, is not deleted (422). Built-in roles are not deletable (403).',
    tag: 'roles',
    access: access.organization(...writeScopes('members')),
    params: roleParams,
    status: 204,
    authorize: {
      resource: 'organization',
      policy: 'members_management',
      resolve: (tx, params) => readRole(tx, params.id, params.name),
    },
    handler: async ({ tx, params }) => {
      await tx.one('select rowgate.delete_organization_role($1, $2)', [params.id, params.name]);
    },
  }),
];
