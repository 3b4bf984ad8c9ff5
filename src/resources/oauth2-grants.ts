// An organization's OAuth2 grants (SPEC §25): the live authorizations that let an
// app act as the organization, whoever made them, listed and revoked by the users
// who manage its access tokens. The rows are found by rowgate.organization_oauth2_grants,
// and rowgate.revoke_organization_oauth2_grant, which check reach and the access-token
// management policy themselves (a 404, then a 403).
import { z } from 'zod';
import { doc, nullableTimestamp, timestamp, uuid } from '../core/fields.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { explain } from '../http/explanation.ts';
import { listQuery, listSchema } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';

const OAuth2GrantRead = z
  .object({
    id: uuid('The grant id.'),
    organization_id: uuid('The organization its tokens act as.'),
    client_id: doc(z.string(), 'The OAuth2 client.', 'rg_ci_3Zk0Qm8rT1vX9bN2cY7wL5pA'),
    client_name: doc(z.string(), 'Its registered name.', 'Acme Reports'),
    scopes: doc(z.array(z.string()), 'The scopes the grant carries.', ['products_read']),
    user_id: uuid('The user who authorized it.'),
    created_at: timestamp('When it was authorized.'),
    last_used_at: nullableTimestamp('When one of its access tokens last authenticated a request, to the minute; null: never.'),
  })
  .meta({ id: 'OAuth2Grant', description: 'A live OAuth2 grant on an organization.' });

const grantList: ListSpec = {
  from: 'rowgate.organization_oauth2_grants(null)',
  columns: 'id, organization_id, client_id, client_name, scopes, user_id, created_at, last_used_at',
  sortable: { created_at: 'created_at', last_used_at: 'last_used_at' },
};

const params = z.object({ id: uuid('The organization id.') });

export const oauth2GrantRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/oauth2-grants',
    operationId: 'oauth2_grants:list',
    summary: 'List the OAuth2 grants of an organization',
    description: 'The live grants (holding an access or refresh token) that let an app act as the organization, whoever made them.',
    tag: 'organization-access-tokens',
    access: access.organizationUser(...readScopes('organization_access_tokens')),
    params,
    query: listQuery(grantList, {}),
    status: 200,
    response: listSchema(OAuth2GrantRead, 'OAuth2Grant'),
    explanation: explain.authorized('organization', 'access_token_management'),
    handler: ({ tx, params, query }) => {
      const where = new Where();
      const organization = where.params.add(params.id);
      return runList(tx, { ...grantList, from: `rowgate.organization_oauth2_grants(${organization}::uuid)` }, query, where);
    },
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/organizations/{id}/oauth2-grants/{grant_id}',
    operationId: 'oauth2_grants:delete',
    summary: 'Revoke an OAuth2 grant of an organization',
    description: 'Its access and refresh tokens stop working at once.',
    tag: 'organization-access-tokens',
    access: access.organizationUser(...writeScopes('organization_access_tokens')),
    params: params.extend({ grant_id: uuid('The grant id.') }),
    status: 204,
    explanation: explain.authorized('organization', 'access_token_management'),
    handler: async ({ tx, params }) => {
      await tx.one('select rowgate.revoke_organization_oauth2_grant($1, $2)', [params.id, params.grant_id]);
    },
  }),
];
