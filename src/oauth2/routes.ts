// The OAuth2 authorization server (RFC 6749, 7636, 7009, 7662, 7591, 8414):
// client registration and management by a signed-in user, the authorization
// code grant with PKCE (S256) behind a consent page, rotating refresh tokens,
// revocation, introspection, userinfo and the server's metadata. The rules are
// SQL functions (the sign-in and OAuth2 part of the migration); this file
// parses the protocol, makes the secrets (only their keyed hashes reach SQL) and
// maps the database's answers onto RFC 6749's responses.
import { createHash, randomInt } from 'node:crypto';
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { Tx } from '../db/pool.ts';
import { found, invalidField, notFound, notPermitted, OAuth2Error, oauth2InvalidClient, oauth2InvalidRequest } from '../http/errors.ts';
import { listQuery, listSchema, runList } from '../resources/lists.ts';
import { access, anonymousRoute, route } from '../http/route.ts';
import { doc, idParams, timestamps, uuid } from '../resources/fields.ts';
import { generateToken, hashToken, type CredentialKind } from '../auth/tokens.ts';

export const ACCESS_TOKEN_LIFETIME_SECONDS = 3600;

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** prefix + base62 characters: 43 of them are ~256 bits */
function randomString(prefix: string, length = 43) {
  let body = '';
  for (let i = 0; i < length; i++) body += ALPHABET[randomInt(ALPHABET.length)];
  return prefix + body;
}
const newClientId = () => randomString('rg_ci_', 24);
const newClientSecret = () => randomString('rg_cs_');
const newAuthorizationCode = () => randomString('rg_ac_');
const newRefreshToken = () => randomString('rg_rt_');

/** RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))) */
export const s256 = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url');

/** RFC 6749 §3.3: space-delimited scope tokens; none (or an empty string) is null. */
const scopeList = (scope: string | undefined) => {
  const list = (scope ?? '').split(' ').filter(Boolean);
  return list.length ? list : null;
};

/** The issuer: this server as the client reached it (RFC 8414 §2). */
const issuer = (req: Request) => `${req.protocol}://${req.get('host')}`;

const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'] as const;

// ---------------------------------------------------------------- clients

/**
 * A redirect URI (RFC 6749 §3.1.2, RFC 8252 §7): absolute, without a fragment;
 * https, http on the loopback interface only, or a native app's private-use
 * scheme (reverse domain name, e.g. `com.example.app:/callback`).
 */
function redirectUriProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URI';
  }
  if (url.hash || value.includes('#')) return 'must not have a fragment';
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

const OAuth2ClientRead = z
  .object({
    id: uuid("The client's id in this API (its management paths use it)."),
    client_id: doc(z.string(), 'The client identifier (public).', 'rg_ci_4fT9kQ2mXb7LwZp3Rn8sVc1d'),
    client_name: doc(z.string(), 'The name users see on the consent page.', 'Acme Reports'),
    redirect_uris: doc(z.array(z.string()), 'The registered redirect URIs.', ['https://app.example.com/callback']),
    scope: doc(z.string(), 'The scopes the client may ask for, space-separated.', 'user:read products_read'),
    token_endpoint_auth_method: doc(
      z.enum(AUTH_METHODS),
      'How the client authenticates at the token endpoint: `client_secret_basic`, `client_secret_post`, or `none` (a public client, which must use PKCE).',
      'client_secret_basic',
    ),
    grant_types: doc(z.array(z.enum(GRANT_TYPES)), 'The grants the client uses.', ['authorization_code', 'refresh_token']),
    response_types: doc(z.array(z.literal('code')), 'The response types the client uses.', ['code']),
    client_id_issued_at: doc(z.number().int(), 'When the client was registered (seconds since the epoch, RFC 7591).', 1795253400),
    ...timestamps,
  })
  .meta({ id: 'OAuth2Client', description: 'An OAuth2 client registered by the current user (RFC 7591 metadata).' });

const OAuth2ClientCreated = OAuth2ClientRead.extend({
  client_secret: doc(
    z.string().optional(),
    'The client secret of a confidential client. Shown once, in this answer only: store it now. Absent for public clients.',
    'rg_cs_Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS',
  ),
  client_secret_expires_at: doc(z.number().int().optional(), 'When the secret expires; 0: never (RFC 7591).', 0),
}).meta({ id: 'OAuth2ClientCreated', description: 'The registered client, with its secret (confidential clients; shown once).' });

const OAuth2ClientRegistration = z
  .object({
    client_name: doc(z.string().trim().min(1).max(200), 'The name users see on the consent page.', 'Acme Reports'),
    redirect_uris: doc(z.array(redirectUri).min(1).max(10), 'Redirect URIs, 1 to 10, matched exactly.', [
      'https://app.example.com/callback',
    ]),
    scope: scopeString('The scopes the client may ever ask for, space-separated (SPEC §3).'),
    token_endpoint_auth_method: doc(
      z.enum(AUTH_METHODS).default('client_secret_basic'),
      '`client_secret_basic` (default) or `client_secret_post`: a confidential client, given a secret; `none`: a public client (a native or browser app), which must use PKCE.',
      'client_secret_basic',
    ),
    grant_types: doc(z.array(z.enum(GRANT_TYPES)).min(1).optional(), 'The grants the client will use; both are always available.', [
      'authorization_code',
      'refresh_token',
    ]),
    response_types: doc(z.array(z.literal('code')).min(1).optional(), 'Only `code` is supported.', ['code']),
  })
  .meta({
    id: 'OAuth2ClientRegistration',
    description: 'RFC 7591 client metadata. Metadata this server does not use is ignored, as RFC 7591 §2 requires.',
  });

const clientColumns = `id, client_id, client_name, redirect_uris, array_to_string(scopes, ' ') as scope, token_endpoint_auth_method,
  array['authorization_code', 'refresh_token'] as grant_types, array['code'] as response_types,
  extract(epoch from created_at)::bigint as client_id_issued_at, created_at, updated_at`;

// ---------------------------------------------------------------- authorization requests

const authorizeFields = {
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
const AuthorizeQuery = z.object(authorizeFields);

const ConsentBody = z
  .strictObject({
    ...authorizeFields,
    action: doc(z.enum(['allow', 'deny']), '`allow` issues a code; `deny` sends the client `error=access_denied`.', 'allow'),
  })
  .meta({ id: 'OAuth2Consent', description: "The authorization request's parameters and the user's answer." });

type AuthorizeParams = z.infer<typeof AuthorizeQuery>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface CheckedRequest {
  clientName: string;
  scopes: string[];
  organizationId: string | null;
  organizationName: string | null;
}

/** Sends the user agent back to the client with an RFC 6749 §4.1.2.1 error. */
class RedirectError {
  readonly error: string;
  readonly description: string;
  constructor(error: string, description: string) {
    this.error = error;
    this.description = description;
  }
}

/** The redirect URI with the response's parameters (RFC 6749 §4.1.2). */
function redirectUrl(req: Request, redirect: string, params: Record<string, string | undefined>) {
  const url = new URL(redirect);
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') url.searchParams.set(key, value);
  // RFC 9207: the issuer, so a client talking to several servers is not mixed up
  url.searchParams.set('iss', issuer(req));
  return url.toString();
}

/**
 * The checks of an authorization request, the database's (client, redirect URI,
 * PKCE, scopes, organization policy) and the parameters'. An unknown client or
 * redirect URI is answered here (422), never redirected; any other problem is a
 * RedirectError for the client.
 */
async function checkRequest(tx: Tx, p: AuthorizeParams, source: 'query' | 'body'): Promise<CheckedRequest | RedirectError> {
  let problem: RedirectError | null = null;
  if (!p.response_type) problem = new RedirectError('invalid_request', 'response_type is required');
  else if (p.response_type !== 'code') problem = new RedirectError('unsupported_response_type', 'Only response_type=code is supported');
  const subType = p.sub_type || 'user';
  let organizationId: string | null = null;
  if (subType === 'organization') {
    if (!p.organization_id || !UUID.test(p.organization_id)) {
      problem ??= new RedirectError('invalid_request', 'sub_type=organization needs an organization_id (a uuid)');
    } else {
      organizationId = p.organization_id;
    }
  } else if (subType !== 'user') {
    problem ??= new RedirectError('invalid_request', 'sub_type must be user or organization');
  } else if (p.organization_id) {
    problem ??= new RedirectError('invalid_request', 'organization_id goes with sub_type=organization');
  }
  const row = await tx.one<{
    status: string;
    description: string | null;
    client_name: string;
    scopes: string[];
    organization_name: string | null;
  }>('select status, description, client_name, scopes, organization_name from rowgate.check_oauth2_authorization($1, $2, $3, $4, $5, $6)', [
    p.client_id,
    p.redirect_uri,
    scopeList(p.scope),
    organizationId,
    p.code_challenge || null,
    p.code_challenge_method || null,
  ]);
  if (row!.status === 'invalid_client') throw invalidField([source, 'client_id'], row!.description!, p.client_id);
  if (row!.status === 'invalid_redirect_uri') throw invalidField([source, 'redirect_uri'], row!.description!, p.redirect_uri);
  if (problem) return problem;
  if (row!.status !== 'ok') return new RedirectError(row!.status, row!.description!);
  return { clientName: row!.client_name, scopes: row!.scopes, organizationId, organizationName: row!.organization_name };
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The consent page's policy: its form may post here, and the redirect after it may go to the client. */
function consentPolicy(redirect: string) {
  const url = new URL(redirect);
  const target = url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
  return `default-src 'none'; style-src 'unsafe-inline'; form-action 'self' ${target}; frame-ancestors 'none'; base-uri 'none'`;
}

function consentPage(p: AuthorizeParams, checked: CheckedRequest, userEmail: string) {
  const hidden = Object.keys(authorizeFields)
    .map((key) => [key, p[key as keyof AuthorizeParams]] as const)
    .filter(([, value]) => value !== undefined && value !== '')
    .map(([key, value]) => `<input type="hidden" name="${key}" value="${escapeHtml(value!)}">`)
    .join('\n      ');
  const who = checked.organizationName
    ? `the organization <strong>${escapeHtml(checked.organizationName)}</strong> (you are signed in as ${escapeHtml(userEmail)})`
    : `you, <strong>${escapeHtml(userEmail)}</strong>`;
  const client = escapeHtml(checked.clientName);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Authorize ${client} — rowgate</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .25rem}button{font:inherit;padding:.4rem 1.2rem;margin-right:.5rem}</style>
</head><body><main>
  <h1>Authorize ${client}</h1>
  <p><strong>${client}</strong> asks for access to rowgate acting as ${who}, with these scopes:</p>
  <ul>${checked.scopes.map((s) => `<li><code>${escapeHtml(s)}</code></li>`).join('')}</ul>
  <p>You will be sent back to <code>${escapeHtml(p.redirect_uri)}</code>.</p>
  <form method="post" action="/v1/oauth2/consent">
      ${hidden}
      <button type="submit" name="action" value="allow">Allow</button>
      <button type="submit" name="action" value="deny">Deny</button>
  </form>
</main></body></html>`;
}

/**
 * The consent POST is authenticated by the session cookie. SameSite=Lax keeps
 * the cookie off cross-site POSTs; as a second line, a request a browser marks
 * as cross-site (Sec-Fetch-Site, or a foreign Origin) is refused. Clients that
 * send neither header (curl) are not browsers a site can drive.
 */
function refuseCrossSite(req: Request) {
  const site = req.get('sec-fetch-site');
  const origin = req.get('origin');
  const crossSite = site !== undefined ? !['same-origin', 'none'].includes(site) : origin !== undefined && origin !== issuer(req);
  if (crossSite) throw notPermitted("Consent must be given on this server's own page (cross-site request refused)");
}

// ---------------------------------------------------------------- the token endpoints

/**
 * RFC 6749 §2.3.1 client credentials: HTTP Basic (client_secret_basic) or the
 * body (client_secret_post), or a bare client_id (a public client). Only one
 * method per request.
 */
function clientCredentials(req: Request, body: { client_id?: string; client_secret?: string }) {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const match = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header);
    if (!match) throw oauth2InvalidClient();
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw oauth2InvalidClient();
    let clientId: string;
    let clientSecret: string;
    try {
      // each part is form-encoded before it is joined (RFC 6749 §2.3.1)
      const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
      clientId = formDecode(decoded.slice(0, colon));
      clientSecret = formDecode(decoded.slice(colon + 1));
    } catch {
      throw oauth2InvalidClient();
    }
    if (body.client_secret) throw oauth2InvalidRequest('Use one client authentication method: HTTP Basic or client_secret, not both');
    if (body.client_id && body.client_id !== clientId) throw oauth2InvalidClient();
    return { clientId, clientSecret };
  }
  if (!body.client_id) throw oauth2InvalidClient();
  return { clientId: body.client_id, clientSecret: body.client_secret || null };
}

const clientHashes = (secret: string, client: { clientId: string; clientSecret: string | null }) =>
  [client.clientId, client.clientSecret === null ? null : hashToken(secret, client.clientSecret)] as const;

const optionalParam = (description: string, example: string) => doc(z.string().max(2000).optional(), description, example);
const clientAuthFields = {
  client_id: optionalParam('The client, unless it authenticates with HTTP Basic (client_secret_basic).', 'rg_ci_4fT9kQ2mXb7LwZp3Rn8sVc1d'),
  client_secret: optionalParam(
    'The client secret, for client_secret_post (confidential clients that do not use HTTP Basic).',
    'rg_cs_Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS',
  ),
};

// RFC 6749 §3.2: the token endpoint ignores parameters it does not know
const TokenRequest = z
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

const TokenResponse = z
  .object({
    access_token: doc(
      z.string(),
      'The access token: `rg_at_u_…` acting as the user, `rg_at_o_…` acting for the organization. Valid 1 hour.',
      'rg_at_u_Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS',
    ),
    token_type: doc(z.literal('Bearer'), 'Always `Bearer`.', 'Bearer'),
    expires_in: doc(z.number().int(), 'Seconds the access token stays valid.', ACCESS_TOKEN_LIFETIME_SECONDS),
    refresh_token: doc(
      z.string(),
      'A refresh token, good for one refresh (then a new one comes); valid 30 days. Presenting a used one revokes the whole grant.',
      'rg_rt_Pq8wE3rT6yU9iO2pA5sD8fG1hJ4kL7zX0cV3bN6mQ9w',
    ),
    scope: doc(z.string(), 'The scopes of the access token, space-separated.', 'user:read products_read'),
  })
  .meta({ id: 'OAuth2Token', description: 'An access token and a refresh token (RFC 6749 §5.1).' });

const TokenByValue = z
  .object({
    token: doc(z.string().min(1).max(2000), 'The access token or refresh token.', 'rg_at_u_Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS'),
    token_type_hint: optionalParam('`access_token` or `refresh_token` (optional; both are looked up anyway).', 'refresh_token'),
    ...clientAuthFields,
  })
  .meta({ id: 'OAuth2TokenByValue', description: 'A token, presented by the client it was issued to (RFC 7009, RFC 7662).' });

const Revoked = z
  .object({})
  .meta({ id: 'OAuth2Revoked', description: 'An empty object: the token is revoked, or was unknown (RFC 7009 §2.2).', example: {} });

const Introspection = z
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

const UserInfo = z
  .object({
    sub: doc(z.string(), 'The user id.', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    email: doc(z.string(), 'The e-mail address.', 'ada@example.com'),
    name: doc(z.string().nullable(), 'Display name.', 'Ada Lovelace'),
    picture: doc(z.string().nullable(), 'URL of the avatar image.', 'https://example.com/ada.png'),
    updated_at: doc(z.number().int(), 'When the profile last changed (seconds since the epoch).', 1795253400),
  })
  .meta({ id: 'OAuth2UserInfo', description: 'Claims about the user the token acts as (OpenID Connect userinfo names).' });

const ServerMetadata = z
  .object({
    issuer: doc(z.string(), 'This server (scheme, host and port as the client reached it).', 'http://127.0.0.1:8080'),
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

interface GrantRow {
  status: string;
  description: string | null;
  token_kind: CredentialKind | null;
  scopes: string[] | null;
  expires_at: string | null;
}

/** An RFC 6749 §5.1 answer from the database's, or the §5.2 error (returned, so what was recorded stays). */
function tokenAnswer(res: Response, row: GrantRow | undefined, tokens: Partial<Record<CredentialKind, string>>, refreshToken: string) {
  if (!row || row.status === 'invalid_client') return oauth2InvalidClient();
  if (row.status !== 'ok') return new OAuth2Error(400, row.status, row.description ?? 'The grant is invalid');
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
  return {
    access_token: tokens[row.token_kind!]!,
    token_type: 'Bearer',
    expires_in: Math.max(0, Math.round((Date.parse(row.expires_at!) - Date.now()) / 1000)),
    refresh_token: refreshToken,
    scope: row.scopes!.join(' '),
  };
}

const oauth2Endpoint = { tag: 'oauth2', errorFormat: 'oauth2', bodyTypes: ['form', 'json'] } as const;

export const oauth2Routes = [
  route({
    method: 'post',
    path: '/v1/oauth2/register',
    operationId: 'oauth2:register',
    summary: 'Register an OAuth2 client',
    description:
      'RFC 7591 dynamic registration, by a signed-in user (web session), who owns the client. A confidential client (`client_secret_basic`, `client_secret_post`) gets a `client_secret`, shown once; a public client (`none`) gets none and must use PKCE.',
    tag: 'oauth2',
    access: access.webUserWrite,
    body: OAuth2ClientRegistration,
    status: 201,
    response: OAuth2ClientCreated,
    handler: async ({ tx, body, secret }) => {
      const clientId = newClientId();
      const clientSecret = body.token_endpoint_auth_method === 'none' ? null : newClientSecret();
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
    path: '/v1/oauth2/clients/',
    operationId: 'oauth2_clients:list',
    summary: 'List your OAuth2 clients',
    tag: 'oauth2',
    access: access.webUserRead,
    query: listQuery(['created_at', 'client_name'], {}),
    status: 200,
    response: listSchema(OAuth2ClientRead, 'OAuth2Client'),
    handler: ({ tx, query }) =>
      runList(
        tx,
        { from: 'rowgate.oauth2_clients', columns: clientColumns, sortable: { created_at: 'created_at', client_name: 'client_name' } },
        query,
      ),
  }),
  route({
    method: 'get',
    path: '/v1/oauth2/clients/{id}',
    operationId: 'oauth2_clients:get',
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
    path: '/v1/oauth2/clients/{id}',
    operationId: 'oauth2_clients:delete',
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
    path: '/v1/oauth2/authorize',
    operationId: 'oauth2:authorize',
    summary: 'Ask the signed-in user to authorize a client',
    description:
      'The authorization endpoint (RFC 6749 §4.1.1, PKCE per RFC 7636). Answers an HTML consent page whose form posts to `/v1/oauth2/consent`. Sign in first (`/v1/login-code/…`): the page needs the web session. An unknown client or redirect URI is a 422 shown here; any other problem redirects to the client with `error` (and `state`).',
    tag: 'oauth2',
    access: access.webUserWrite,
    query: AuthorizeQuery,
    status: 200,
    responseType: 'text/html',
    headers: 'page',
    handler: async ({ tx, query, req, res }) => {
      const checked = await checkRequest(tx, query, 'query');
      if (checked instanceof RedirectError) {
        // nothing was recorded: redirecting from within the transaction is fine
        const params = { error: checked.error, error_description: checked.description, state: query.state };
        return res.set('Cache-Control', 'no-store').redirect(302, redirectUrl(req, query.redirect_uri, params));
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
    path: '/v1/oauth2/consent',
    operationId: 'oauth2:consent',
    summary: 'Allow or deny a client',
    description:
      "What the consent page posts (form-encoded), or a client of the API sends as JSON: the authorization request's parameters and `action`. Redirects (302) to the redirect URI with `code` and `state`, or with `error=access_denied`. The code is valid 10 minutes, once.",
    tag: 'oauth2',
    access: access.webUserWrite,
    body: ConsentBody,
    bodyTypes: ['form', 'json'],
    status: 302,
    handler: async ({ tx, body, secret, req, res }) => {
      refuseCrossSite(req);
      const { action, ...request } = body;
      const checked = await checkRequest(tx, request, 'body');
      res.set('Cache-Control', 'no-store');
      // the Location, sent once the code is committed
      const back = (params: Record<string, string | undefined>) =>
        redirectUrl(req, request.redirect_uri, { ...params, state: request.state });
      if (checked instanceof RedirectError) return back({ error: checked.error, error_description: checked.description });
      if (action === 'deny') return back({ error: 'access_denied', error_description: 'The user denied the request' });
      const code = newAuthorizationCode();
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
  anonymousRoute({
    ...oauth2Endpoint,
    method: 'post',
    path: '/v1/oauth2/token',
    operationId: 'oauth2:token',
    summary: 'Exchange a code or a refresh token for tokens',
    description:
      'The token endpoint (RFC 6749 §4.1.3 and §6; form-encoded, JSON accepted too). The client authenticates with HTTP Basic (`client_secret_basic`), `client_id` + `client_secret` in the body (`client_secret_post`), or, public clients, `client_id` alone. `authorization_code` needs `code`, `redirect_uri` and the PKCE `code_verifier`; `refresh_token` rotates the refresh token: a used one presented again revokes every token of its grant.',
    body: TokenRequest,
    status: 200,
    response: TokenResponse,
    errors: [401],
    handler: async ({ tx, body, secret, req, res }) => {
      const client = clientCredentials(req, body);
      const tokens = {
        oauth2_user_token: generateToken('oauth2_user_token'),
        oauth2_organization_token: generateToken('oauth2_organization_token'),
      };
      const refreshToken = newRefreshToken();
      const grantHashes = [
        hashToken(secret, tokens.oauth2_user_token),
        hashToken(secret, tokens.oauth2_organization_token),
        hashToken(secret, refreshToken),
      ];
      if (body.grant_type === 'authorization_code') {
        if (!body.code) throw oauth2InvalidRequest('code is required');
        if (!body.redirect_uri) throw oauth2InvalidRequest('redirect_uri is required');
        if (body.code_verifier && !/^[A-Za-z0-9._~-]{43,128}$/.test(body.code_verifier)) {
          throw oauth2InvalidRequest('code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~');
        }
        const row = await tx.one<GrantRow>(
          'select status, description, token_kind, scopes, expires_at from rowgate.exchange_oauth2_authorization_code($1, $2, $3, $4, $5, $6, $7, $8)',
          [
            ...clientHashes(secret, client),
            hashToken(secret, body.code),
            body.redirect_uri,
            body.code_verifier ? s256(body.code_verifier) : null,
            ...grantHashes,
          ],
        );
        return tokenAnswer(res, row, tokens, refreshToken);
      }
      if (body.grant_type === 'refresh_token') {
        if (!body.refresh_token) throw oauth2InvalidRequest('refresh_token is required');
        const row = await tx.one<GrantRow>(
          'select status, description, token_kind, scopes, expires_at from rowgate.refresh_oauth2_token($1, $2, $3, $4, $5, $6, $7)',
          [...clientHashes(secret, client), hashToken(secret, body.refresh_token), scopeList(body.scope), ...grantHashes],
        );
        return tokenAnswer(res, row, tokens, refreshToken);
      }
      throw new OAuth2Error(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    },
  }),
  anonymousRoute({
    ...oauth2Endpoint,
    method: 'post',
    path: '/v1/oauth2/revoke',
    operationId: 'oauth2:revoke',
    summary: 'Revoke a token',
    description:
      "RFC 7009, by the client the token was issued to (authenticated as at the token endpoint). A refresh token revokes its whole grant (every access token issued from it); an access token only itself. Takes effect at once. An unknown token, or another client's, is answered 200 too.",
    body: TokenByValue,
    status: 200,
    response: Revoked,
    errors: [401],
    handler: async ({ tx, body, secret, req }) => {
      const client = clientCredentials(req, body);
      const row = await tx.one<{ status: string }>('select rowgate.revoke_oauth2_token($1, $2, $3) as status', [
        ...clientHashes(secret, client),
        hashToken(secret, body.token),
      ]);
      if (row?.status !== 'ok') return oauth2InvalidClient();
      return {};
    },
  }),
  anonymousRoute({
    ...oauth2Endpoint,
    method: 'post',
    path: '/v1/oauth2/introspect',
    operationId: 'oauth2:introspect',
    summary: 'Introspect a token',
    description:
      'RFC 7662, by the client the token was issued to (authenticated as at the token endpoint); for any other client every token is `{"active": false}`.',
    body: TokenByValue,
    status: 200,
    response: Introspection,
    errors: [401],
    handler: async ({ tx, body, secret, req, res }) => {
      const client = clientCredentials(req, body);
      const row = await tx.one<{
        status: string;
        active: boolean;
        token_type: 'access_token' | 'refresh_token' | null;
        scopes: string[] | null;
        user_id: string | null;
        username: string | null;
        organization_id: string | null;
        expires_at: string | null;
        issued_at: string | null;
      }>(
        'select status, active, token_type, scopes, user_id, username, organization_id, expires_at, issued_at from rowgate.introspect_oauth2_token($1, $2, $3)',
        [...clientHashes(secret, client), hashToken(secret, body.token)],
      );
      if (row?.status !== 'ok') return oauth2InvalidClient();
      res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
      if (!row.active) return { active: false };
      const seconds = (timestamp: string) => Math.floor(Date.parse(timestamp) / 1000);
      return {
        active: true,
        scope: row.scopes!.join(' '),
        client_id: client.clientId,
        username: row.username!,
        token_type: row.token_type === 'access_token' ? 'Bearer' : 'refresh_token',
        exp: seconds(row.expires_at!),
        iat: seconds(row.issued_at!),
        sub: row.organization_id ?? row.user_id!,
        sub_type: row.organization_id ? 'organization' : 'user',
        user_id: row.user_id!,
        ...(row.organization_id ? { organization_id: row.organization_id } : {}),
        iss: issuer(req),
      };
    },
  }),
  route({
    method: 'get',
    path: '/v1/oauth2/userinfo',
    operationId: 'oauth2:userinfo',
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
    path: '/.well-known/oauth-authorization-server',
    operationId: 'oauth2:metadata',
    summary: 'Authorization server metadata',
    description: 'RFC 8414. URLs are built from the host the request was sent to.',
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
