// /v1/organizations: the tenants (SPEC §9, §11).
import { z } from 'zod';
import { notFound } from '../core/errors.ts';
import { listQuery, listSchema, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { doc, idParams, timestamps, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

const slug = doc(
  z
    .string()
    .min(2)
    .max(64)
    .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'Lower-case letters, digits and single hyphens'),
  'Unique, URL-friendly name: lower-case letters, digits and hyphens.',
  'acme',
);
const name = doc(z.string().trim().min(1).max(200), 'Display name.', 'Acme Inc.');

/** SPEC §22: the database checks the same bounds (organizations_max_token_lifetime_days_check) */
const maxTokenLifetimeDays = doc(
  z.number().int().min(1).max(3650).nullable(),
  'The longest an organization access token of this organization may live, in days (1 to 3650): a token created without `expires_in`, or beyond it, is refused. null: no cap. Tokens created before a cap are not changed.',
  90,
);

const OrganizationRead = z
  .object({
    id: uuid('The organization id.'),
    name,
    slug,
    account_id: doc(z.uuid().nullable(), "The organization's account, once created; null before.", '7d1e2f3a-4b5c-4d6e-8f90-a1b2c3d4e5f6'),
    max_token_lifetime_days: maxTokenLifetimeDays,
    ...timestamps,
  })
  .meta({ id: 'Organization', description: 'An organization: the tenant that owns members, products, customers and orders.' });

const OrganizationCreate = z.strictObject({ name, slug }).meta({ id: 'OrganizationCreate', description: 'A new organization.' });
const OrganizationUpdate = z
  .strictObject({ name: name.optional(), slug: slug.optional(), max_token_lifetime_days: maxTokenLifetimeDays.optional() })
  .meta({ id: 'OrganizationUpdate', description: 'Fields to change; only the fields sent change.' });

const organizationColumns = 'id, name, slug, account_id, max_token_lifetime_days, created_at, updated_at';

const organizationList: ListSpec = {
  from: 'rowgate.organizations',
  columns: organizationColumns,
  sortable: { created_at: 'created_at', name: 'name', slug: 'slug' },
};

export const organizationRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/',
    operationId: 'organizations:list',
    explanation: explain.list,
    summary: 'List organizations',
    description: "The organizations the subject reaches: a user's memberships, or the token's own organization.",
    tag: 'organizations',
    access: access.organization(...readScopes('organizations')),
    query: listQuery(organizationList, {
      organization_id: organizationFilter,
      slug: doc(z.string().max(64).optional(), 'Only the organization with this slug.', 'acme'),
    }),
    status: 200,
    response: listSchema(OrganizationRead, 'Organization'),
    handler: ({ tx, query }) =>
      runList(tx, organizationList, query, new Where().anyOf('id', query.organization_id, 'uuid').equals('slug', query.slug)),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}',
    operationId: 'organizations:get',
    explanation: explain.visible('organizations'),
    summary: 'Get an organization',
    tag: 'organizations',
    access: access.organization(...readScopes('organizations')),
    params: idParams,
    status: 200,
    response: OrganizationRead,
    handler: async ({ tx, params }) => {
      const row = await tx.one(`select ${organizationColumns} from rowgate.organizations where id = $1`, [params.id]);
      if (!row) throw notFound();
      return row;
    },
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/organizations/',
    operationId: 'organizations:create',
    explanation: explain.none,
    summary: 'Create an organization',
    description: 'The creating user becomes its `admin`.',
    tag: 'organizations',
    access: access.organizationUser(...writeScopes('organizations')),
    body: OrganizationCreate,
    status: 201,
    response: OrganizationRead,
    handler: ({ tx, body }) => tx.one(`select ${organizationColumns} from rowgate.create_organization($1, $2)`, [body.name, body.slug]),
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/organizations/{id}',
    operationId: 'organizations:update',
    summary: 'Update an organization',
    tag: 'organizations',
    access: access.organization(...writeScopes('organizations')),
    params: idParams,
    body: OrganizationUpdate,
    status: 200,
    response: OrganizationRead,
    authorize: { resource: 'organization', policy: 'organization:manage' },
    handler: ({ tx, params, body }) =>
      tx.one(
        `update rowgate.organizations set name = coalesce($2, name), slug = coalesce($3, slug),
           max_token_lifetime_days = case when $4 then $5::integer else max_token_lifetime_days end
         where id = $1 returning ${organizationColumns}`,
        // null clears the cap: only a field that was sent changes
        [params.id, body.name ?? null, body.slug ?? null, body.max_token_lifetime_days !== undefined, body.max_token_lifetime_days ?? null],
      ),
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/organizations/{id}',
    operationId: 'organizations:delete',
    summary: 'Delete an organization',
    description: 'A soft delete: the organization and everything it owns disappear from every API.',
    tag: 'organizations',
    access: access.organizationUser(...writeScopes('organizations')),
    params: idParams,
    status: 204,
    authorize: { resource: 'organization', policy: 'organization:manage', checkedBy: 'rowgate.delete_resource' },
    handler: async ({ tx, params }) => {
      await tx.one(`select rowgate.delete_resource('organization', $1)`, [params.id]);
    },
  }),
];
