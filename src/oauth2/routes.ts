// The OAuth2 authorization server (RFC 6749, 7636, 7009, 7662, 7591, 8414):
// client registration and management by a signed-in user, the authorization
// code grant with PKCE (S256) behind a consent page, rotating refresh tokens,
// revocation, introspection, userinfo and the server's metadata. The rules are
// SQL functions (the sign-in and OAuth2 part of the migration); these modules
// parse the protocol, make the secrets (only their keyed hashes reach SQL) and
// map the database's answers onto RFC 6749's responses. Here: the routes of
// clients, of the authorization and of the metadata; the token endpoints are in
// token-endpoints.ts.
import { API_VERSION_COLUMN, API_VERSIONS, PIN_API_VERSION } from '../core/versions.ts';
import { hashToken, randomCharacters, randomToken } from '../auth/tokens.ts';
import { found, notFound } from '../core/errors.ts';
import { access, anonymousRoute, route } from '../http/route-declaration.ts';
import { idParams } from '../core/fields.ts';
import { listQuery, listSchema } from '../listing/lists.ts';
import { type ListSpec, runList } from '../listing/list-statement.ts';
import { checkRequest, issuer, RedirectError, redirectUrl, scopeList } from './authorize-request.ts';
import { authorizationErrorPage, consentPage, consentPolicy, errorPagePolicy } from './consent-page.ts';
import {
  AUTH_METHODS,
  AuthorizeQuery,
  ConsentBody,
  GRANT_TYPES,
  OAuth2ClientCreated,
  OAuth2ClientRead,
  OAuth2ClientRegistration,
  ServerMetadata,
  UserInfo,
} from './schemas.ts';
import { tokenRoutes } from './token-endpoints.ts';
import { explain } from '../http/explanation.ts';

const clientColumns = `id, client_id, client_name, redirect_uris, array_to_string(scopes, ' ') as scope, token_endpoint_auth_method,
  array['authorization_code', 'refresh_token'] as grant_types, array['code'] as response_types,
  extract(epoch from created_at)::bigint as client_id_issued_at, ${API_VERSION_COLUMN}, created_at, updated_at`;

const clientList: ListSpec = {
  from: 'rowgate.oauth2_clients',
  columns: clientColumns,
  sortable: { created_at: 'created_at', client_name: 'client_name' },
};

export const oauth2Routes = [
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/oauth2/register',
    operationId: 'oauth2:register',
    explanation: explain.none,
    summary: 'Register an OAuth2 client',
    description:
      "RFC 7591 dynamic registration, by a signed-in user (web session), who owns the client. A confidential client (`client_secret_basic`, `client_secret_post`) gets a `client_secret`, shown once; a public client (`none`) gets none and must use PKCE. Without `scope`, the client may ask for any scope the server supports (the consent page shows what it asks for). Refused metadata is a 400 in RFC 7591's shape: `invalid_redirect_uri` or `invalid_client_metadata`. A user owns at most 100 clients; past them: 403 `NotPermitted` (delete one to make room).",
    tag: 'oauth2',
    access: access.webUserWrite,
    body: OAuth2ClientRegistration,
    errorFormat: 'oauth2-registration',
    status: 201,
    response: OAuth2ClientCreated,
    handler: async ({ tx, body, secret }) => {
      // an identifier, not a secret: no checksum (docs/credentials.md)
      const clientId = `rg_ci_${randomCharacters(24)}`;
      const clientSecret = body.token_endpoint_auth_method === 'none' ? null : randomToken('rg_cs_');
      await tx.one(PIN_API_VERSION, [body.api_version ?? API_VERSIONS.newest]);
      await tx.one('select 1 from rowgate.register_oauth2_client($1, $2, $3, $4, $5, $6)', [
        clientId,
        body.client_name,
        body.redirect_uris,
        scopeList(body.scope),
        body.token_endpoint_auth_method,
        clientSecret === null ? null : hashToken(secret, clientSecret),
      ]);
      const client = await tx.one(`select ${clientColumns} from rowgate.oauth2_clients where client_id = $1`, [clientId]);
      return { ...client, ...(clientSecret === null ? {} : { client_secret: clientSecret, client_secret_expires_at: 0 }) };
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/oauth2/clients/',
    operationId: 'oauth2_clients:list',
    explanation: explain.none,
    summary: 'List your OAuth2 clients',
    tag: 'oauth2',
    access: access.webUserRead,
    query: listQuery(clientList, {}),
    status: 200,
    response: listSchema(OAuth2ClientRead, 'OAuth2Client'),
    handler: ({ tx, query }) => runList(tx, clientList, query),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/oauth2/clients/{id}',
    operationId: 'oauth2_clients:get',
    explanation: explain.own('oauth2_clients'),
    summary: 'Get one of your OAuth2 clients',
    tag: 'oauth2',
    access: access.webUserRead,
    params: idParams,
    status: 200,
    response: OAuth2ClientRead,
    handler: async ({ tx, params }) =>
      found(await tx.one(`select ${clientColumns} from rowgate.oauth2_clients where id = $1`, [params.id])),
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/oauth2/clients/{id}',
    operationId: 'oauth2_clients:delete',
    explanation: explain.own('oauth2_clients'),
    summary: 'Delete one of your OAuth2 clients',
    description: 'Deletes the client and revokes every token and pending code issued to it.',
    tag: 'oauth2',
    access: access.webUserWrite,
    params: idParams,
    status: 204,
    handler: async ({ tx, params }) => {
      const row = await tx.one<{ deleted: boolean }>('select rowgate.delete_oauth2_client($1) as deleted', [params.id]);
      if (!row?.deleted) throw notFound();
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/oauth2/authorize',
    operationId: 'oauth2:authorize',
    explanation: explain.none,
    summary: 'Ask the signed-in user to authorize a client',
    description:
      'The authorization endpoint (RFC 6749 §4.1.1, PKCE per RFC 7636). Answers an HTML consent page whose form posts to `/v1/oauth2/consent`. Sign in first (`/v1/login-code/…`): the page needs the web session. With `sub_type=organization`, the grant holds only the asked-for scopes whose operations open to organization tokens the user may perform itself in that organization (SPEC §21, as for organization access tokens): the others are left out, the page says how many, and the `scope` of the token answer names what was granted; a request left with no scope is `invalid_scope` naming the permission or policy missing. An unknown client or redirect URI is a 422 shown here, never sent to the redirect URI; any other problem is a 400 HTML page telling the user, whose link back to the client carries `error`, `error_description`, `state` and `iss` (RFC 9700 §4.11.2: clients are registered by any user, so their redirect URIs are not trusted to receive the user unasked).',
    tag: 'oauth2',
    access: access.webUserWrite,
    query: AuthorizeQuery,
    status: 200,
    responseType: 'text/html',
    // the page telling the user what its client got wrong
    errors: [400],
    headers: 'page',
    handler: async ({ tx, query, req, res }) => {
      const checked = await checkRequest(tx, query, 'query');
      if (checked instanceof RedirectError) {
        const params = { error: checked.error, error_description: checked.description, state: query.state };
        const back = redirectUrl(req, query.redirect_uri, params);
        return res
          .status(400)
          .set({ 'Content-Security-Policy': errorPagePolicy, 'Referrer-Policy': 'no-referrer', 'Cache-Control': 'no-store' })
          .type('html')
          .send(authorizationErrorPage(checked.clientName, checked.error, checked.description, back));
      }
      const user = await tx.one<{ email: string }>('select email from rowgate.users where id = rowgate_hidden.current_user_id()');
      res
        .status(200)
        .set({
          'Content-Security-Policy': consentPolicy(query.redirect_uri),
          // the form's POST then carries this page's Origin (no-referrer would send "null")
          'Referrer-Policy': 'same-origin',
          'Cache-Control': 'no-store',
        })
        .type('html')
        .send(consentPage(query, checked, user!.email));
    },
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/oauth2/consent',
    operationId: 'oauth2:consent',
    explanation: explain.none,
    summary: 'Allow or deny a client',
    description:
      "What the consent page posts (form-encoded), or a client of the API sends as JSON: the authorization request's parameters and `action`. Redirects (302) to the redirect URI with `code` and `state`, or with `error=access_denied`. The code is valid 10 minutes, once.",
    tag: 'oauth2',
    access: access.webUserWrite,
    body: ConsentBody,
    bodyTypes: ['form', 'json'],
    status: 302,
    handler: async ({ tx, body, secret, req, res }) => {
      const { action, ...request } = body;
      const checked = await checkRequest(tx, request, 'body');
      res.set('Cache-Control', 'no-store');
      // the Location, sent once the code is committed
      const back = (params: Record<string, string | undefined>) =>
        redirectUrl(req, request.redirect_uri, { ...params, state: request.state });
      if (checked instanceof RedirectError) return back({ error: checked.error, error_description: checked.description });
      if (action === 'deny') return back({ error: 'access_denied', error_description: 'The user denied the request' });
      const code = randomToken('rg_ac_');
      await tx.one('select rowgate.create_oauth2_authorization_code($1, $2, $3, $4, $5, $6, $7)', [
        request.client_id,
        request.redirect_uri,
        checked.scopes,
        checked.organizationId,
        request.code_challenge || null,
        request.code_challenge_method || null,
        hashToken(secret, code),
      ]);
      return back({ code });
    },
  }),
  ...tokenRoutes,
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/oauth2/userinfo',
    operationId: 'oauth2:userinfo',
    explanation: explain.none,
    summary: 'The user an access token acts as',
    description: 'Claims about the user (OpenID Connect names; no ID tokens are issued). Organization tokens act for no user: 401.',
    tag: 'oauth2',
    access: access.userRead,
    status: 200,
    response: UserInfo,
    handler: async ({ tx }) => {
      const user = found(
        await tx.one<{ id: string; email: string; name: string | null; avatar_url: string | null; updated_at: string }>(
          'select id, email, name, avatar_url, updated_at from rowgate.users where id = rowgate_hidden.current_user_id()',
        ),
      );
      return {
        sub: user.id,
        email: user.email,
        name: user.name,
        picture: user.avatar_url,
        updated_at: Math.floor(Date.parse(user.updated_at) / 1000),
      };
    },
  }),
  anonymousRoute({
    tag: 'oauth2',
    errorFormat: 'oauth2',
    method: 'get',
    effect: 'reads',
    path: '/.well-known/oauth-authorization-server',
    operationId: 'oauth2:metadata',
    summary: 'Authorization server metadata',
    description:
      'RFC 8414. Its URLs start with ROWGATE_PUBLIC_URL (else http://HOST:PORT), whatever Host the request names. Any origin may read it (`Access-Control-Allow-Origin: *`).',
    status: 200,
    response: ServerMetadata,
    handler: async ({ tx, req }) => {
      const row = await tx.one<{ scopes: string[] }>('select rowgate.oauth2_scopes_supported() as scopes');
      const base = issuer(req);
      return {
        issuer: base,
        authorization_endpoint: `${base}/v1/oauth2/authorize`,
        token_endpoint: `${base}/v1/oauth2/token`,
        registration_endpoint: `${base}/v1/oauth2/register`,
        revocation_endpoint: `${base}/v1/oauth2/revoke`,
        introspection_endpoint: `${base}/v1/oauth2/introspect`,
        userinfo_endpoint: `${base}/v1/oauth2/userinfo`,
        scopes_supported: row!.scopes,
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: [...GRANT_TYPES],
        token_endpoint_auth_methods_supported: [...AUTH_METHODS],
        revocation_endpoint_auth_methods_supported: [...AUTH_METHODS],
        introspection_endpoint_auth_methods_supported: [...AUTH_METHODS],
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
        service_documentation: `${base}/docs`,
      };
    },
  }),
];
