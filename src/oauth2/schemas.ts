// The OAuth2 endpoints' zod schemas: client metadata (RFC 7591), the authorization
// request (RFC 6749 §4.1.1, RFC 7636), the token endpoint's requests and answers,
// introspection (RFC 7662), userinfo and the server's metadata (RFC 8414). The same
// schemas validate requests and write the OpenAPI document.
import { apiVersionField, apiVersionRead } from '../core/versions.ts';
import { z } from 'zod';
import { doc, timestamps, uuid } from '../core/fields.ts';

export const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;
export const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'] as const;

/**
 * A redirect URI (RFC 6749 §3.1.2, RFC 8252 §7): absolute, without a fragment;
 * https, http on the loopback interface only, or a native app's private-use
 * scheme (reverse domain name, e.g. `com.example.app:/callback`).
 */
const ANSWER_PARAMETERS = ['code', 'state', 'iss', 'error', 'error_description', 'error_uri'];

function redirectUriProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URI';
  }
  if (url.hash || value.includes('#')) return 'must not have a fragment';
  // `https://trusted.example@evil.example/cb` goes to evil.example: shown on the consent page, a phishing aid
  if (url.username || url.password) return 'must not have a user name or password (userinfo)';
  // the answer's own parameters are appended to the query as registered (RFC 6749 §3.1: never twice)
  const taken = ANSWER_PARAMETERS.find((name) => url.searchParams.has(name));
  if (taken) return `must not have a ${taken} parameter in its query: the answer adds it`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:') {
    return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) ? null : 'http is allowed on the loopback interface only; use https';
  }
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol)
    ? null
    : 'must be https, http on localhost, or a private-use scheme like com.example.app:';
}

const redirectUri = doc(
  z
    .string()
    .max(2000)
    .superRefine((value, ctx) => {
      const problem = redirectUriProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: `redirect URI ${problem}` });
    }),
  'Where the user is sent back with the code: https, http on localhost, or a private-use scheme (com.example.app:/cb). Compared exactly.',
  'https://app.example.com/callback',
);

const scopeString = (description: string, example = 'user:read products_read') =>
  doc(
    z
      .string()
      .max(2000)
      .regex(/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/, 'Scopes are separated by single spaces (RFC 6749 §3.3)'),
    description,
    example,
  );

export const OAuth2ClientRead = z
  .object({
    id: uuid("The client's id in this API (its management paths use it)."),
    client_id: doc(z.string(), 'The client identifier (public).', 'rg_ci_4fT9kQ2mXb7LwZp3Rn8sVc1d'),
    client_name: doc(z.string(), 'The name users see on the consent page.', 'Acme Reports'),
    redirect_uris: doc(z.array(z.string()), 'The registered redirect URIs.', ['https://app.example.com/callback']),
    scope: doc(z.string(), 'The scopes the client may ask for, space-separated.', 'user:read products_read'),
    token_endpoint_auth_method: doc(
      z.enum(AUTH_METHODS),
      'How the client authenticates at the token, revocation and introspection endpoints, and the only way it may: `client_secret_basic` (HTTP Basic), `client_secret_post` (the secret in the body), or `none` (a public client, `client_id` alone, which must use PKCE).',
      'client_secret_basic',
    ),
    grant_types: doc(z.array(z.enum(GRANT_TYPES)), 'The grants the client uses.', ['authorization_code', 'refresh_token']),
    response_types: doc(z.array(z.literal('code')), 'The response types the client uses.', ['code']),
    client_id_issued_at: doc(z.number().int(), 'When the client was registered (seconds since the epoch, RFC 7591).', 1795253400),
    api_version: apiVersionRead("the client's tokens use when their requests send no Rowgate-Version, refreshed ones included"),
    ...timestamps,
  })
  .meta({ id: 'OAuth2Client', description: 'An OAuth2 client registered by the current user (RFC 7591 metadata).' });

export const OAuth2ClientCreated = OAuth2ClientRead.extend({
  client_secret: doc(
    z.string().optional(),
    'The client secret of a confidential client. Shown once, in this answer only: store it now. Absent for public clients.',
    'rg_cs_Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS',
  ),
  client_secret_expires_at: doc(z.number().int().optional(), 'When the secret expires; 0: never (RFC 7591).', 0),
}).meta({ id: 'OAuth2ClientCreated', description: 'The registered client, with its secret (confidential clients; shown once).' });

export const OAuth2ClientRegistration = z
  .object({
    client_name: doc(z.string().trim().min(1).max(200), 'The name users see on the consent page.', 'Acme Reports'),
    redirect_uris: doc(z.array(redirectUri).min(1).max(10), 'Redirect URIs, 1 to 10, matched exactly.', [
      'https://app.example.com/callback',
    ]),
    scope: scopeString(
      'The scopes the client may ever ask for, space-separated (SPEC §3); omitted: every scope the server supports (`scopes_supported`).',
    ).optional(),
    token_endpoint_auth_method: doc(
      z.enum(AUTH_METHODS).default('client_secret_basic'),
      '`client_secret_basic` (default: HTTP Basic) or `client_secret_post` (the secret in the body): a confidential client, given a secret; `none`: a public client (a native or browser app, `client_id` alone), which must use PKCE. The client then authenticates this way only: another is 401 `invalid_client`.',
      'client_secret_basic',
    ),
    grant_types: doc(z.array(z.enum(GRANT_TYPES)).min(1).optional(), 'The grants the client will use; both are always available.', [
      'authorization_code',
      'refresh_token',
    ]),
    response_types: doc(z.array(z.literal('code')).min(1).optional(), 'Only `code` is supported.', ['code']),
    api_version: apiVersionField("the client's tokens use when their requests send no Rowgate-Version, refreshed ones included"),
  })
  .meta({
    id: 'OAuth2ClientRegistration',
    description: 'RFC 7591 client metadata. Metadata this server does not use is ignored, as RFC 7591 §2 requires.',
  });

export const authorizeFields = {
  response_type: doc(z.string().max(100).optional(), 'Must be `code`.', 'code'),
  client_id: doc(z.string().min(1).max(100), 'The client asking for authorization.', 'rg_ci_4fT9kQ2mXb7LwZp3Rn8sVc1d'),
  redirect_uri: doc(
    z.string().min(1).max(2000),
    "One of the client's registered redirect URIs, exactly.",
    'https://app.example.com/callback',
  ),
  scope: doc(
    z.string().max(2000).optional(),
    'Scopes asked for, space-separated, within those the client registered; omitted: all of them.',
    'user:read products_read',
  ),
  state: doc(z.string().max(2000).optional(), 'An opaque value sent back with the code (CSRF protection for the client).', 'af0ifjsldkj'),
  code_challenge: doc(
    z.string().max(200).optional(),
    'PKCE (RFC 7636): BASE64URL(SHA256(code_verifier)), 43 characters. Required of public clients.',
    'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  ),
  code_challenge_method: doc(z.string().max(20).optional(), 'Must be `S256` when a code_challenge is sent.', 'S256'),
  sub_type: doc(
    z.string().max(20).optional(),
    '`user` (default): a token acting as you (`rg_at_u_`); `organization`: a token acting for `organization_id` (`rg_at_o_`), which needs the right to manage its access tokens.',
    'organization',
  ),
  organization_id: doc(
    z.string().max(100).optional(),
    'With sub_type=organization: the organization the token acts for.',
    '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b',
  ),
};

// RFC 6749 §3.1: unrecognized parameters are ignored
export const AuthorizeQuery = z.object(authorizeFields);

export const ConsentBody = z
  .strictObject({
    ...authorizeFields,
    action: doc(z.enum(['allow', 'deny']), '`allow` issues a code; `deny` sends the client `error=access_denied`.', 'allow'),
  })
  .meta({ id: 'OAuth2Consent', description: "The authorization request's parameters and the user's answer." });

export type AuthorizeParams = z.infer<typeof AuthorizeQuery>;

const optionalParam = (description: string, example: string) => doc(z.string().max(2000).optional(), description, example);
const clientAuthFields = {
  client_id: optionalParam('The client, unless it authenticates with HTTP Basic (client_secret_basic).', 'rg_ci_4fT9kQ2mXb7LwZp3Rn8sVc1d'),
  client_secret: optionalParam(
    'The client secret, for client_secret_post (confidential clients that do not use HTTP Basic).',
    'rg_cs_Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS',
  ),
};

// RFC 6749 §3.2: the token endpoint ignores parameters it does not know
export const TokenRequest = z
  .object({
    grant_type: doc(z.string().min(1).max(100), '`authorization_code` or `refresh_token`.', 'authorization_code'),
    code: optionalParam('authorization_code: the code the redirect brought.', 'rg_ac_Gh7kQ2mXb7LwZp3Rn8sVc1dT5yU9iO0pLkJhGfDsA1'),
    redirect_uri: optionalParam(
      'authorization_code: the redirect_uri of the authorization request, identical.',
      'https://app.example.com/callback',
    ),
    code_verifier: optionalParam(
      'authorization_code: the PKCE code_verifier (43 to 128 characters of A-Z a-z 0-9 - . _ ~).',
      'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
    ),
    refresh_token: optionalParam(
      'refresh_token: the refresh token (each is good for one refresh).',
      'rg_rt_Pq8wE3rT6yU9iO2pA5sD8fG1hJ4kL7zX0cV3bN6mQ9w',
    ),
    scope: optionalParam('refresh_token: fewer scopes for the new access token (never more).', 'products_read'),
    ...clientAuthFields,
  })
  .meta({ id: 'OAuth2TokenRequest', description: 'A token request (RFC 6749 §4.1.3, §6), form-encoded.' });

export const TokenResponse = z
  .object({
    access_token: doc(
      z.string(),
      'The access token: `rg_at_u_…` acting as the user, `rg_at_o_…` acting for the organization. Valid 1 hour.',
      'rg_at_u_Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS',
    ),
    token_type: doc(z.literal('Bearer'), 'Always `Bearer`.', 'Bearer'),
    expires_in: doc(z.number().int(), 'Seconds the access token stays valid.', 3600),
    refresh_token: doc(
      z.string(),
      'A refresh token, good for one refresh (then a new one comes); valid 30 days. Presenting a used one revokes the whole grant.',
      'rg_rt_Pq8wE3rT6yU9iO2pA5sD8fG1hJ4kL7zX0cV3bN6mQ9w',
    ),
    scope: doc(z.string(), 'The scopes of the access token, space-separated.', 'user:read products_read'),
  })
  .meta({ id: 'OAuth2Token', description: 'An access token and a refresh token (RFC 6749 §5.1).' });

export const TokenByValue = z
  .object({
    token: doc(z.string().min(1).max(2000), 'The access token or refresh token.', 'rg_at_u_Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS'),
    token_type_hint: optionalParam('`access_token` or `refresh_token` (optional; both are looked up anyway).', 'refresh_token'),
    ...clientAuthFields,
  })
  .meta({ id: 'OAuth2TokenByValue', description: 'A token, presented by the client it was issued to (RFC 7009, RFC 7662).' });

export const Revoked = z
  .object({})
  .meta({ id: 'OAuth2Revoked', description: 'An empty object: the token is revoked, or was unknown (RFC 7009 §2.2).', example: {} });

export const Introspection = z
  .object({
    active: doc(z.boolean(), 'Whether the token is valid now. Every other field is present only when it is.', true),
    scope: doc(z.string().optional(), 'Its scopes, space-separated.', 'user:read products_read'),
    client_id: doc(z.string().optional(), 'The client it was issued to.', 'rg_ci_4fT9kQ2mXb7LwZp3Rn8sVc1d'),
    username: doc(z.string().optional(), 'The e-mail address of the user who granted it.', 'ada@example.com'),
    token_type: doc(z.string().optional(), '`Bearer` for an access token, `refresh_token` for a refresh token.', 'Bearer'),
    exp: doc(z.number().int().optional(), 'When it expires (seconds since the epoch).', 1795257000),
    iat: doc(z.number().int().optional(), 'When it was issued (seconds since the epoch).', 1795253400),
    sub: doc(
      z.string().optional(),
      'The subject it acts as: the user id, or for an organization token the organization id.',
      '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b',
    ),
    sub_type: doc(z.enum(['user', 'organization']).optional(), 'What `sub` is.', 'user'),
    user_id: doc(z.string().optional(), 'The user who granted it.', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    organization_id: doc(z.string().optional(), 'For an organization token: the organization.', '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a'),
    iss: doc(z.string().optional(), 'This server.', 'http://127.0.0.1:8080'),
  })
  .meta({ id: 'OAuth2Introspection', description: 'What the server knows of a token (RFC 7662 §2.2).' });

export const UserInfo = z
  .object({
    sub: doc(z.string(), 'The user id.', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    email: doc(z.string(), 'The e-mail address.', 'ada@example.com'),
    name: doc(z.string().nullable(), 'Display name.', 'Ada Lovelace'),
    picture: doc(z.string().nullable(), 'URL of the avatar image.', 'https://example.com/ada.png'),
    updated_at: doc(z.number().int(), 'When the profile last changed (seconds since the epoch).', 1795253400),
  })
  .meta({ id: 'OAuth2UserInfo', description: 'Claims about the user the token acts as (OpenID Connect userinfo names).' });

export const ServerMetadata = z
  .object({
    issuer: doc(z.string(), "This server: ROWGATE_PUBLIC_URL, else http://HOST:PORT (never the request's Host).", 'http://127.0.0.1:8080'),
    authorization_endpoint: doc(z.string(), 'Where the user consents.', 'http://127.0.0.1:8080/v1/oauth2/authorize'),
    token_endpoint: doc(z.string(), 'Where codes and refresh tokens become tokens.', 'http://127.0.0.1:8080/v1/oauth2/token'),
    registration_endpoint: doc(z.string(), 'Client registration (needs a web session).', 'http://127.0.0.1:8080/v1/oauth2/register'),
    revocation_endpoint: doc(z.string(), 'RFC 7009 revocation.', 'http://127.0.0.1:8080/v1/oauth2/revoke'),
    introspection_endpoint: doc(z.string(), 'RFC 7662 introspection.', 'http://127.0.0.1:8080/v1/oauth2/introspect'),
    userinfo_endpoint: doc(z.string(), "Claims about the token's user.", 'http://127.0.0.1:8080/v1/oauth2/userinfo'),
    scopes_supported: doc(z.array(z.string()), 'Every scope a client may register.', ['user:read', 'products_read']),
    response_types_supported: doc(z.array(z.string()), 'Only `code`.', ['code']),
    response_modes_supported: doc(z.array(z.string()), 'Only `query`.', ['query']),
    grant_types_supported: doc(z.array(z.string()), 'The grants.', ['authorization_code', 'refresh_token']),
    token_endpoint_auth_methods_supported: doc(z.array(z.string()), 'Client authentication methods.', [...AUTH_METHODS]),
    revocation_endpoint_auth_methods_supported: doc(z.array(z.string()), 'Client authentication methods.', [...AUTH_METHODS]),
    introspection_endpoint_auth_methods_supported: doc(z.array(z.string()), 'Client authentication methods.', [...AUTH_METHODS]),
    code_challenge_methods_supported: doc(z.array(z.string()), 'PKCE methods: S256 only.', ['S256']),
    authorization_response_iss_parameter_supported: doc(z.boolean(), 'The redirect carries `iss` (RFC 9207).', true),
    service_documentation: doc(z.string(), 'The API reference.', 'http://127.0.0.1:8080/docs'),
  })
  .meta({ id: 'OAuth2ServerMetadata', description: 'Authorization server metadata (RFC 8414).' });
