// /v1/organizations/{id}/members: who belongs to an organization, with which role.
// Changes go through the members-management policy (SPEC §5).
import { z } from 'zod';
import { notFound } from '../core/errors.ts';
import { listQuery, listSchema, multi } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import type { Tx } from '../db/pool.ts';
import { type Authorization, authorizeRequest } from '../auth/authorize.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { doc, timestamps, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

const role = doc(
  z.string().min(1).max(50),
  'The role: a built-in one (`admin`, `member`, `finance`) or one the organization defined (GET /v1/organizations/{id}/roles).',
  'member',
);

export const MembershipRead = z
  .object({
    user_id: uuid("The member's user id."),
    organization_id: uuid('The organization.'),
    role,
    email: doc(z.string(), "The member's e-mail address.", 'ada@example.com'),
    name: doc(z.string().nullable(), "The member's display name.", 'Ada Lovelace'),
    ...timestamps,
  })
  .meta({ id: 'Membership', description: "A user's membership of an organization." });

const MembershipCreate = z
  .strictObject({
    email: doc(z.email().max(320), 'The e-mail address of an existing user.', 'grace@example.com'),
    role,
  })
  .meta({ id: 'MembershipCreate', description: 'Adds an existing user to the organization.' });
const MembershipUpdate = z.strictObject({ role }).meta({ id: 'MembershipUpdate', description: 'The new role.' });

const organizationParams = z.object({ id: uuid('The organization id.') });
const memberParams = z.object({ id: uuid('The organization id.'), user_id: uuid("The member's user id.") });

const from = 'rowgate.memberships m join rowgate.colleagues u on u.id = m.user_id';
const columns = 'm.user_id, m.organization_id, m.role, u.email, u.name, m.created_at, m.updated_at';

async function readMembership(tx: Tx, organizationId: string, userId: string) {
  const row = await tx.one(`select ${columns} from ${from} where m.organization_id = $1 and m.user_id = $2`, [organizationId, userId]);
  if (!row) throw notFound();
  return row;
}

// the membership is resolved (404) before the policy is asked (403), as SPEC §5 orders them
const memberChange: Authorization = {
  resource: 'organization',
  policy: 'members_management',
  resolve: (tx, params) => readMembership(tx, String(params.id), String(params.user_id)),
};

const membershipList: ListSpec = { from, columns, id: 'm.id', sortable: { created_at: 'm.created_at', email: 'u.email', role: 'm.role' } };

export const memberRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/members',
    operationId: 'members:list',
    summary: 'List the members of an organization',
    tag: 'members',
    access: access.organization(...readScopes('members')),
    params: organizationParams,
    query: listQuery(membershipList, {
      role: multi(role, 'Only members with this role (repeatable).', 'admin'),
    }),
    status: 200,
    response: listSchema(MembershipRead, 'Membership'),
    authorize: { resource: 'organization', policy: 'read' },
    handler: ({ tx, params, query }) =>
      runList(tx, membershipList, query, new Where().equals('m.organization_id', params.id).anyOf('m.role', query.role)),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/organizations/{id}/members',
    operationId: 'members:add',
    summary: 'Add a member',
    tag: 'members',
    access: access.organization(...writeScopes('members')),
    params: organizationParams,
    body: MembershipCreate,
    status: 201,
    response: MembershipRead,
    authorize: { resource: 'organization', policy: 'members_management' },
    handler: async ({ tx, params, body }) => {
      const added = await tx.one<{ user_id: string }>('select user_id from rowgate.add_member($1, $2, $3)', [
        params.id,
        body.email,
        body.role,
      ]);
      return readMembership(tx, params.id, added!.user_id);
    },
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/organizations/{id}/members/{user_id}',
    operationId: 'members:update',
    // the membership is resolved (404) before the policy (403)
    explanation: explain.visible('memberships', { id: 'organization_id', user_id: 'user_id' }, 'members_management'),
    summary: "Change a member's role",
    tag: 'members',
    access: access.organization(...writeScopes('members')),
    params: memberParams,
    body: MembershipUpdate,
    status: 200,
    response: MembershipRead,
    authorize: memberChange,
    handler: async ({ tx, params, body }) => {
      const changed = await tx.count('update rowgate.memberships set role = $3 where organization_id = $1 and user_id = $2', [
        params.id,
        params.user_id,
        body.role,
      ]);
      // the policy was asked before this statement; when a request committed in between took
      // the caller's permission or the membership away, the policy answers as it does now
      if (changed === 0) {
        await authorizeRequest(tx, memberChange, params);
        throw notFound();
      }
      return readMembership(tx, params.id, params.user_id);
    },
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/organizations/{id}/members/{user_id}',
    operationId: 'members:remove',
    explanation: explain.visible('memberships', { id: 'organization_id', user_id: 'user_id' }, 'members_management'),
    summary: 'Remove a member',
    description: 'Access ends at once. The membership is kept, soft-deleted.',
    tag: 'members',
    access: access.organization(...writeScopes('members')),
    params: memberParams,
    status: 204,
    authorize: { resource: 'membership', policy: 'members_management', checkedBy: 'rowgate.delete_resource' },
    handler: async ({ tx, params }) => {
      const membership = await tx.one<{ id: string }>('select id from rowgate.memberships where organization_id = $1 and user_id = $2', [
        params.id,
        params.user_id,
      ]);
      if (!membership) throw notFound();
      await tx.one(`select rowgate.delete_resource('membership', $1)`, [membership.id]);
    },
  }),
];
