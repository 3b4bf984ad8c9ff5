// /v1/organizations/{id}/sql-credentials (SPEC §24): an organization's SQL logins, minted,
// listed and revoked by its users with organization:manage. The rules (who may, which
// scopes, at most 10 live) are rowgate.create_sql_credential's and
// rowgate.delete_sql_credential's; the server draws the name and password and hands the
// database only the password's verifier (src/db/sql-logins.ts).
import { z } from 'zod';
import { found } from '../core/errors.ts';
import { doc, expiresIn, nullableTimestamp, scopeList, timestamps, uuid } from '../core/fields.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { loginUrl, newLogin } from '../db/sql-logins.ts';
import { listQuery, listSchema, multi } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';

const SqlCredentialRead = z
  .object({
    id: uuid('The credential id.'),
    organization_id: uuid('The organization whose data the login reads.'),
    login: doc(z.string(), 'The SQL login role: `rg_sql_` and 20 base32 characters.', 'rg_sql_k3v7q2m4x5z6w7y2a3b4'),
    comment: doc(z.string(), 'What the login is for.', 'Metabase'),
    scopes: doc(z.array(z.string()), 'The read scopes the login carries.', ['orders_read', 'products_read']),
    created_by: uuid('The user who minted the login. The login belongs to the organization: it keeps working when that user leaves.'),
    expires_at: nullableTimestamp('When it stops working (it reads nothing from then on, and its sessions end); null: never.'),
    last_used_at: nullableTimestamp('When a session of it was last seen (to the minute); null: never used.'),
    ...timestamps,
  })
  .meta({ id: 'SqlCredential', description: 'An organization’s SQL login (the password is never shown again).' });

const SqlCredentialCreate = z
  .strictObject({
    comment: doc(z.string().trim().min(1).max(200), 'What the login is for.', 'Metabase'),
    scopes: scopeList('Read scopes for the login; never more than the calling user could read itself in the organization.'),
    expires_in: expiresIn,
  })
  .meta({ id: 'SqlCredentialCreate', description: 'A new SQL login for the organization.' });

const SqlCredentialCreated = SqlCredentialRead.extend({
  database_url: doc(
    z.string(),
    'The URL to hand to psql or a BI tool, with the password: shown only in this answer.',
    'postgres://rg_sql_k3v7q2m4x5z6w7y2a3b4:secret@db.example.com:5432/rowgate',
  ),
}).meta({ id: 'SqlCredentialCreated', description: 'The new SQL login, with its URL and password (shown once).' });

const columns = 'id, organization_id, login, comment, scopes, created_by, expires_at, last_used_at, created_at, updated_at';

const list: ListSpec = {
  from: 'rowgate.sql_credentials',
  columns,
  sortable: { created_at: 'created_at', comment: 'comment', last_used_at: 'last_used_at', expires_at: 'expires_at' },
};

const organizationParams = z.object({ id: uuid('The organization id.') });
const credentialParams = z.object({ id: uuid('The organization id.'), credential_id: uuid('The SQL credential id.') });
const manage = { resource: 'organization', policy: 'organization:manage' } as const;

export const sqlCredentialRoutes = [
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/organizations/{id}/sql-credentials',
    operationId: 'sql_credentials:create',
    summary: 'Create a SQL login for the organization',
    description:
      'A login for psql or a BI tool that reads exactly what an organization access token of the organization with these scopes reads, read-only (SPEC §24). Scopes are read scopes, each one the calling user could itself use in the organization (422 at `["body", "scopes", i]`). At most 10 live per organization (422 at `body`). `database_url` carries the password and is shown only here.',
    tag: 'sql-credentials',
    access: access.organizationUser(...writeScopes('organizations')),
    params: organizationParams,
    body: SqlCredentialCreate,
    status: 201,
    response: SqlCredentialCreated,
    authorize: manage,
    handler: async ({ tx, params, body, server }) => {
      const made = newLogin();
      const created = await tx.one(
        `select ${columns} from rowgate.create_sql_credential($1, $2, $3, now() + make_interval(secs => $4), $5, $6)`,
        [params.id, body.comment, body.scopes, body.expires_in ?? null, made.login, made.verifier],
      );
      return { ...found(created), database_url: loginUrl(server.sqlLoginUrl, made.login, made.password) };
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/sql-credentials',
    operationId: 'sql_credentials:list',
    summary: 'List the SQL logins of the organization',
    description:
      'The live and expired SQL logins of the organization (revoked ones are gone). For users whose role grants `organization:manage`.',
    tag: 'sql-credentials',
    access: access.organizationUser(...readScopes('organizations')),
    params: organizationParams,
    query: listQuery(list, {
      created_by: multi(z.uuid(), 'Only logins minted by these users (repeatable).', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    }),
    status: 200,
    response: listSchema(SqlCredentialRead, 'SqlCredential'),
    authorize: manage,
    handler: ({ tx, params, query }) =>
      runList(tx, list, query, new Where().equals('organization_id', params.id).anyOf('created_by', query.created_by, 'uuid')),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/sql-credentials/{credential_id}',
    operationId: 'sql_credentials:get',
    summary: 'Get a SQL login of the organization',
    tag: 'sql-credentials',
    access: access.organizationUser(...readScopes('organizations')),
    params: credentialParams,
    status: 200,
    response: SqlCredentialRead,
    authorize: manage,
    handler: async ({ tx, params }) =>
      found(
        await tx.one(`select ${columns} from rowgate.sql_credentials where organization_id = $1 and id = $2`, [
          params.id,
          params.credential_id,
        ]),
      ),
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/organizations/{id}/sql-credentials/{credential_id}',
    operationId: 'sql_credentials:delete',
    summary: 'Revoke a SQL login of the organization',
    description:
      'From the commit on, the login reads no rows and cannot connect, and its open sessions end within a second on each database host that serves logins.',
    tag: 'sql-credentials',
    access: access.organizationUser(...writeScopes('organizations')),
    params: credentialParams,
    status: 204,
    authorize: manage,
    handler: async ({ tx, params }) => {
      await tx.one('select rowgate.delete_sql_credential($1, $2)', [params.id, params.credential_id]);
    },
  }),
];
