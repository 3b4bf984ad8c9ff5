// The signed-in user's own view of its credentials (SPEC §25): its live web sessions
// and the OAuth2 apps holding its tokens, each listed and ended here. Web sessions
// only (SPEC §4); the database decides which rows are the caller's.
import { z } from 'zod';
import { notFound } from '../core/errors.ts';
import { doc, nullableTimestamp, timestamp, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';
import { access, route } from '../http/route-declaration.ts';
import { clearSessionCookie } from '../auth/session-cookie.ts';
import { listQuery, listSchema, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';

const SessionRead = z
  .object({
    id: uuid('The session id.'),
    created_at: timestamp('When the user signed in (or the impersonation began).'),
    last_used_at: nullableTimestamp('When the session last authenticated a request, to the minute; null: not since it was made.'),
    client_ip: doc(z.string().nullable(), 'The client address of its latest request; null before one.', '203.0.113.7'),
    user_agent: doc(
      z.string().nullable(),
      'The User-Agent of its latest request (at most 256 characters); null before one.',
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5)',
    ),
    current: doc(z.boolean(), 'Whether this is the session of the request.', true),
    impersonated_by: doc(
      z.uuid().nullable(),
      'The platform admin impersonating the user through it; null for the user’s own session.',
      null,
    ),
  })
  .meta({ id: 'Session', description: 'A live web session of the signed-in user.' });

const sessionList: ListSpec = {
  from: 'rowgate.current_user_sessions()',
  columns: 'id, created_at, last_used_at, client_ip, user_agent, current, impersonated_by',
  sortable: { created_at: 'created_at', last_used_at: 'last_used_at' },
};

const AuthorizedAppRead = z
  .object({
    client_id: doc(z.string(), 'The OAuth2 client.', 'rg_ci_3Zk0Qm8rT1vX9bN2cY7wL5pA'),
    client_name: doc(z.string(), 'Its registered name.', 'Acme Reports'),
    scopes: doc(z.array(z.string()), 'The scopes its live grants carry.', ['products_read']),
    sub_type: doc(z.enum(['user', 'organization']), 'Whether its tokens act as the user or as an organization.', 'user'),
    organization_id: doc(
      z.uuid().nullable(),
      'The organization its tokens act as (`sub_type` `organization`); null for user tokens.',
      null,
    ),
    first_authorized_at: timestamp('When the user first authorized it, of its live grants.'),
    last_used_at: nullableTimestamp('When one of its access tokens last authenticated a request, to the minute; null: never.'),
    created_at: timestamp('The same instant as `first_authorized_at` (every list sorts by `created_at`).'),
  })
  .meta({ id: 'AuthorizedApp', description: 'An OAuth2 client holding live tokens of the signed-in user.' });

const appList: ListSpec = {
  from: 'rowgate.current_user_authorized_apps()',
  columns:
    'client_id, client_name, scopes, sub_type, organization_id, first_authorized_at, last_used_at, first_authorized_at as created_at',
  sortable: {
    created_at: 'first_authorized_at',
    first_authorized_at: 'first_authorized_at',
    last_used_at: 'last_used_at',
    client_name: 'client_name',
  },
  id: 'app_key',
};

export const sessionRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/users/me/sessions',
    operationId: 'sessions:list',
    explanation: explain.none,
    summary: 'List your sessions',
    description:
      'The live web sessions of the signed-in user, impersonation sessions made for it included, with the address and User-Agent of each one’s latest request.',
    tag: 'users',
    access: access.webUserRead,
    query: listQuery(sessionList, {}),
    status: 200,
    response: listSchema(SessionRead, 'Session'),
    handler: ({ tx, query }) => runList(tx, sessionList, query),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/users/me/sessions/revoke-others',
    operationId: 'sessions:revoke_others',
    explanation: explain.none,
    summary: 'End every other session',
    description: 'Ends every live session of the signed-in user but the one of this request.',
    tag: 'users',
    access: access.webUserWrite,
    status: 204,
    handler: async ({ tx }) => {
      await tx.one('select rowgate.end_other_sessions()');
    },
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/users/me/sessions/{id}',
    operationId: 'sessions:delete',
    explanation: explain.none,
    summary: 'End a session',
    description:
      'Ends one of the signed-in user’s live sessions: its next request is a 401, on every instance. Ending the session of this request signs out. Any other id is a 404.',
    tag: 'users',
    access: access.webUserWrite,
    params: z.object({ id: uuid('The session id.') }),
    status: 204,
    handler: async ({ tx, params, res }) => {
      const row = await tx.one<{ ended: boolean; current: boolean }>(
        `select rowgate.end_session($1) as ended, $1::text = current_setting('rowgate.credential_id', true) as current`,
        [params.id],
      );
      if (!row?.ended) throw notFound();
      if (row.current) clearSessionCookie(res);
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/users/me/authorized-apps',
    operationId: 'authorized_apps:list',
    explanation: explain.none,
    summary: 'List the apps you authorized',
    description:
      'One row per OAuth2 client, kind of subject and organization holding live tokens (access or refresh) of the signed-in user.',
    tag: 'users',
    access: access.webUserRead,
    query: listQuery(appList, { organization_id: organizationFilter }),
    status: 200,
    response: listSchema(AuthorizedAppRead, 'AuthorizedApp'),
    handler: ({ tx, query }) => runList(tx, appList, query, new Where().organizations(query.organization_id)),
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/users/me/authorized-apps/{client_id}',
    operationId: 'authorized_apps:delete',
    explanation: explain.none,
    summary: 'Revoke an app',
    description:
      'Revokes every grant the signed-in user made to the client, organization grants included: their access and refresh tokens stop working at once. A client without live grants of the user is a 404.',
    tag: 'users',
    access: access.webUserWrite,
    params: z.object({ client_id: doc(z.string().min(1).max(100), 'The OAuth2 client id.', 'rg_ci_3Zk0Qm8rT1vX9bN2cY7wL5pA') }),
    status: 204,
    handler: async ({ tx, params }) => {
      const row = await tx.one<{ revoked: boolean }>('select rowgate.revoke_authorized_app($1) as revoked', [params.client_id]);
      if (!row?.revoked) throw notFound();
    },
  }),
];
