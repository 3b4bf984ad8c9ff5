// /v1/organization-access-tokens: tokens that act as an organization (SPEC §2, §9).
// Users with access_tokens:manage only; an organization token never mints or revokes them.
import { z } from 'zod';
import { listQuery, listSchema, multi, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { doc, expiresIn, idParams, nullableTimestamp, scopeList, timestamps, tokenField, uuid } from '../core/fields.ts';
import { generateToken, hashToken } from '../auth/tokens.ts';
import { allowedIpsCreate, allowedIpsRead } from './allowed-ips.ts';
import { explain } from '../http/explanation.ts';
import { API_VERSION_COLUMN, API_VERSIONS, apiVersionField, apiVersionRead, PIN_API_VERSION } from '../core/versions.ts';

const OrganizationAccessTokenRead = z
  .object({
    id: uuid('The token id.'),
    organization_id: uuid('The organization the token acts as.'),
    comment: doc(z.string(), 'What the token is for.', 'Storefront backend'),
    scopes: doc(z.array(z.string()), 'The scopes the token carries.', ['products_read', 'orders_write']),
    expires_at: nullableTimestamp('When it stops working; null: never.'),
    last_used_at: nullableTimestamp('When it last authenticated a request (to the minute); null: never used.'),
    allowed_ips: allowedIpsRead,
    created_by: doc(
      z.uuid().nullable(),
      'The user who minted the token; null for tokens minted before the API recorded it. The token belongs to the organization: it keeps working when that user leaves or loses a permission.',
      '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b',
    ),
    api_version: apiVersionRead('requests with this token use when they send no Rowgate-Version'),
    ...timestamps,
  })
  .meta({ id: 'OrganizationAccessToken', description: 'An organization access token (the token itself is never shown again).' });

const OrganizationAccessTokenCreate = z
  .strictObject({
    organization_id: uuid('The organization the token will act as.'),
    comment: doc(z.string().trim().min(1).max(200), 'What the token is for.', 'Storefront backend'),
    scopes: scopeList('Organization scopes for the token; each must be one the calling credential holds.'),
    expires_in: expiresIn,
    allowed_ips: allowedIpsCreate,
    api_version: apiVersionField('requests with this token use when they send no Rowgate-Version'),
  })
  .meta({ id: 'OrganizationAccessTokenCreate', description: 'A new organization access token.' });

const OrganizationAccessTokenCreated = OrganizationAccessTokenRead.extend({ token: tokenField('rg_oat_') }).meta({
  id: 'OrganizationAccessTokenCreated',
  description: 'The new token, with the token itself (shown once).',
});

const columns = `id, organization_id, comment, scopes, expires_at, last_used_at, allowed_ips, created_by, ${API_VERSION_COLUMN}, created_at, updated_at`;

const organizationAccessTokenList: ListSpec = {
  from: 'rowgate.organization_access_tokens',
  columns,
  sortable: { created_at: 'created_at', comment: 'comment', last_used_at: 'last_used_at' },
};

export const organizationAccessTokenRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organization-access-tokens/',
    operationId: 'organization_access_tokens:list',
    explanation: explain.list,
    summary: 'List organization access tokens',
    description:
      'The tokens of the organizations where the user may manage access tokens; `created_by` narrows to the tokens some users minted.',
    tag: 'organization-access-tokens',
    access: access.organizationUser(...readScopes('organization_access_tokens')),
    query: listQuery(organizationAccessTokenList, {
      organization_id: organizationFilter,
      created_by: multi(z.uuid(), 'Only tokens minted by these users (repeatable).', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    }),
    status: 200,
    response: listSchema(OrganizationAccessTokenRead, 'OrganizationAccessToken'),
    handler: ({ tx, query }) =>
      runList(
        tx,
        organizationAccessTokenList,
        query,
        new Where().organizations(query.organization_id).anyOf('created_by', query.created_by, 'uuid'),
      ),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/organization-access-tokens/',
    operationId: 'organization_access_tokens:create',
    explanation: explain.target('access_token_management'),
    summary: 'Create an organization access token',
    description:
      'A token never exceeds its maker (SPEC §21): each scope\'s operations open to organization tokens must be ones the calling user may perform itself in the organization with a web session (what `GET /v1/organizations/{id}/permissions` answers for it); otherwise 422 at `["body", "scopes", i]` naming the permission or policy missing. The token belongs to the organization: it keeps working when its maker leaves or loses a permission (`created_by` names the maker). An organization holds at most 100 organization access tokens that are not revoked (expired ones count); past them: 403 `NotPermitted` (revoke one to make room). When the organization sets `max_token_lifetime_days`, `expires_in` is required and at most that many days (422 at `body.expires_in` otherwise).',
    tag: 'organization-access-tokens',
    access: access.organizationUser(...writeScopes('organization_access_tokens')),
    body: OrganizationAccessTokenCreate,
    status: 201,
    response: OrganizationAccessTokenCreated,
    handler: async ({ tx, body, secret }) => {
      const token = generateToken('organization_access_token');
      await tx.one(PIN_API_VERSION, [body.api_version ?? API_VERSIONS.newest]);
      const created = await tx.one(
        `select ${columns} from rowgate.create_organization_access_token($1, $2, $3, now() + make_interval(secs => $4), $5, $6)`,
        [body.organization_id, body.comment, body.scopes, body.expires_in ?? null, hashToken(secret, token), body.allowed_ips ?? null],
      );
      return { ...created, token };
    },
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/organization-access-tokens/{id}',
    operationId: 'organization_access_tokens:delete',
    summary: 'Revoke an organization access token',
    tag: 'organization-access-tokens',
    access: access.organizationUser(...writeScopes('organization_access_tokens')),
    params: idParams,
    status: 204,
    authorize: { resource: 'organization_access_token', policy: 'access_token_management', checkedBy: 'rowgate.delete_resource' },
    handler: async ({ tx, params }) => {
      await tx.one(`select rowgate.delete_resource('organization_access_token', $1)`, [params.id]);
    },
  }),
];
