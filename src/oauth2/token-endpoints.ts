// The token endpoints (RFC 6749 §4.1.3 and §6, RFC 7009, RFC 7662): the client
// authenticates, the database decides the grant, and the answers have RFC 6749's
// shape. Tokens and codes are made here; only their keyed hashes reach SQL.
import { createHash } from 'node:crypto';
import type { Response } from 'express';
import { type CredentialKind, generateToken, hashToken, randomToken } from '../auth/tokens.ts';
import { OAuth2Error, oauth2InvalidClient, oauth2InvalidRequest } from '../core/errors.ts';
import { anonymousRoute } from '../http/route-declaration.ts';
import { issuer, scopeList } from './authorize-request.ts';
import { clientArguments, clientCredentials } from './client-auth.ts';
import { Introspection, Revoked, TokenByValue, TokenRequest, TokenResponse } from './schemas.ts';

/** RFC 7636 §4.2: BASE64URL(SHA256(ASCII(code_verifier))) */
const s256 = (verifier: string) => createHash('sha256').update(verifier, 'ascii').digest('base64url');

/** Tag, error shape and body types of the protocol endpoints. */
const oauth2Endpoint = { tag: 'oauth2', errorFormat: 'oauth2', bodyTypes: ['form', 'json'], clientAuthentication: true } as const;

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

export const tokenRoutes = [
  anonymousRoute({
    ...oauth2Endpoint,
    method: 'post',
    effect: 'writes',
    path: '/v1/oauth2/token',
    operationId: 'oauth2:token',
    summary: 'Exchange a code or a refresh token for tokens',
    description:
      'The token endpoint (RFC 6749 §4.1.3 and §6; form-encoded, JSON accepted too). The client authenticates the way it registered (its `token_endpoint_auth_method`): HTTP Basic (`client_secret_basic`), `client_id` + `client_secret` in the body (`client_secret_post`), or, public clients, `client_id` alone; another way is 401 `invalid_client`. `authorization_code` needs `code`, `redirect_uri` and the PKCE `code_verifier`; `refresh_token` rotates the refresh token: a used one presented again revokes every token of its grant.',
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
      const refreshToken = randomToken('rg_rt_');
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
          'select status, description, token_kind, scopes, expires_at from rowgate.exchange_oauth2_authorization_code($1, $2, $3, $4, $5, $6, $7, $8, $9)',
          [
            ...clientArguments(secret, client),
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
          'select status, description, token_kind, scopes, expires_at from rowgate.refresh_oauth2_token($1, $2, $3, $4, $5, $6, $7, $8)',
          [...clientArguments(secret, client), hashToken(secret, body.refresh_token), scopeList(body.scope), ...grantHashes],
        );
        return tokenAnswer(res, row, tokens, refreshToken);
      }
      throw new OAuth2Error(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    },
  }),
  anonymousRoute({
    ...oauth2Endpoint,
    method: 'post',
    effect: 'writes',
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
      const row = await tx.one<{ status: string }>('select rowgate.revoke_oauth2_token($1, $2, $3, $4) as status', [
        ...clientArguments(secret, client),
        hashToken(secret, body.token),
      ]);
      if (row?.status !== 'ok') return oauth2InvalidClient();
      return {};
    },
  }),
  anonymousRoute({
    ...oauth2Endpoint,
    method: 'post',
    effect: 'writes',
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
        'select status, active, token_type, scopes, user_id, username, organization_id, expires_at, issued_at from rowgate.introspect_oauth2_token($1, $2, $3, $4)',
        [...clientArguments(secret, client), hashToken(secret, body.token)],
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
];
