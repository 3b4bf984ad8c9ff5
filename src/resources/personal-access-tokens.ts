// /v1/personal-access-tokens: a user's own API tokens (SPEC §9, §11).
import { z } from 'zod';
import type { Tx } from '../db/pool.ts';
import { found, notFound } from '../core/errors.ts';
import { listQuery, listSchema } from '../listing/lists.ts';
import { type ListSpec, runList } from '../listing/list-statement.ts';
import { access, route } from '../http/route-declaration.ts';
import { doc, expiresIn, idParams, nullableTimestamp, scopeList, timestamps, tokenField, uuid } from '../core/fields.ts';
import { generateToken, hashToken } from '../auth/tokens.ts';
import { allowedIpsCreate, allowedIpsRead } from './allowed-ips.ts';
import { explain } from '../http/explanation.ts';
import { API_VERSION_COLUMN, API_VERSIONS, apiVersionField, apiVersionRead, PIN_API_VERSION } from '../core/versions.ts';

const PersonalAccessTokenRead = z
  .object({
    id: uuid('The token id.'),
    comment: doc(z.string(), 'What the token is for.', 'CI deploys'),
    scopes: doc(z.array(z.string()), 'The scopes the token carries.', ['products_read']),
    expires_at: nullableTimestamp('When it stops working; null: never.'),
    last_used_at: nullableTimestamp('When it last authenticated a request (to the minute); null: never used.'),
    allowed_ips: allowedIpsRead,
    organization_ids: doc(
      z.array(z.uuid()).nullable(),
      'The only organizations the token reaches (any other answers 404 and is left out of lists); null: every organization of its user. Fixed at creation.',
      ['3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'],
    ),
    api_version: apiVersionRead('requests with this token use when they send no Rowgate-Version'),
    ...timestamps,
  })
  .meta({ id: 'PersonalAccessToken', description: 'A personal access token (the token itself is never shown again).' });

const PersonalAccessTokenCreate = z
  .strictObject({
    comment: doc(z.string().trim().min(1).max(200), 'What the token is for.', 'CI deploys'),
    scopes: scopeList('Scopes for the token; each must be one the calling credential holds.'),
    expires_in: expiresIn,
    allowed_ips: allowedIpsCreate,
    organization_ids: doc(
      z.array(uuid('An organization the calling user belongs to.')).min(1).max(50).nullable().optional(),
      'Keeps the token to these organizations (1 to 50, each one the calling user belongs to; otherwise 422 at that item). Such a token cannot create organizations or delete its user, and lives no longer than the smallest `max_token_lifetime_days` of its organizations (422 at `body.expires_in`). Absent or null: every organization of the user.',
      ['3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'],
    ),
    api_version: apiVersionField('requests with this token use when they send no Rowgate-Version'),
  })
  .meta({ id: 'PersonalAccessTokenCreate', description: 'A new personal access token.' });

const PersonalAccessTokenCreated = PersonalAccessTokenRead.extend({ token: tokenField('rg_pat_') }).meta({
  id: 'PersonalAccessTokenCreated',
  description: 'The new token, with the token itself (shown once).',
});

const columns = `id, comment, scopes, expires_at, last_used_at, allowed_ips, organization_ids, ${API_VERSION_COLUMN}, created_at, updated_at`;

const personalAccessTokenList: ListSpec = {
  from: 'rowgate.personal_access_tokens',
  columns,
  sortable: { created_at: 'created_at', comment: 'comment', last_used_at: 'last_used_at' },
};

export const personalAccessTokenRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/personal-access-tokens/',
    operationId: 'personal_access_tokens:list',
    explanation: explain.none,
    summary: 'List personal access tokens',
    tag: 'personal-access-tokens',
    access: access.webUserRead,
    query: listQuery(personalAccessTokenList, {}),
    status: 200,
    response: listSchema(PersonalAccessTokenRead, 'PersonalAccessToken'),
    handler: ({ tx, query }) => runList(tx, personalAccessTokenList, query),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/personal-access-tokens/{id}',
    operationId: 'personal_access_tokens:get',
    explanation: explain.own('personal_access_tokens'),
    summary: 'Get a personal access token',
    description: 'One of the calling user’s tokens (the token itself is never shown again); another user’s, or a revoked one, is 404.',
    tag: 'personal-access-tokens',
    access: access.webUserRead,
    params: idParams,
    status: 200,
    response: PersonalAccessTokenRead,
    handler: async ({ tx, params }) =>
      found(await tx.one(`select ${columns} from rowgate.personal_access_tokens where id = $1`, [params.id])),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/personal-access-tokens/',
    operationId: 'personal_access_tokens:create',
    explanation: explain.none,
    summary: 'Create a personal access token',
    description:
      'A user holds at most 100 personal access tokens that are not revoked (expired ones count); past them: 403 `NotPermitted` (revoke one to make room).',
    tag: 'personal-access-tokens',
    access: access.webUserWrite,
    body: PersonalAccessTokenCreate,
    status: 201,
    response: PersonalAccessTokenCreated,
    handler: async ({ tx, body, secret }) => {
      const token = generateToken('personal_access_token');
      await tx.one(PIN_API_VERSION, [body.api_version ?? API_VERSIONS.newest]);
      const created = await tx.one(
        `select ${columns} from rowgate.create_personal_access_token($1, $2, now() + make_interval(secs => $3), $4, $5, $6)`,
        [
          body.comment,
          body.scopes,
          body.expires_in ?? null,
          hashToken(secret, token),
          body.allowed_ips ?? null,
          body.organization_ids ?? null,
        ],
      );
      return { ...created, token };
    },
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/personal-access-tokens/{id}',
    operationId: 'personal_access_tokens:delete',
    explanation: explain.own('personal_access_tokens'),
    summary: 'Revoke a personal access token',
    tag: 'personal-access-tokens',
    access: access.webUserWrite,
    params: idParams,
    status: 204,
    handler: async ({ tx, params }) => revoke(tx, params.id),
  }),
];

async function revoke(tx: Tx, id: string) {
  const row = await tx.one<{ revoked: boolean }>('select rowgate.revoke_personal_access_token($1) as revoked', [id]);
  if (!row?.revoked) throw notFound();
}
