// Reading the credential a request presents: a bearer token wins over the
// session cookie (SPEC §2). Only parsing happens here; the database decides
// whether the token names anybody.
import { hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { parseCookie } from 'cookie';
import { requestAddress } from '../core/client-address.ts';
import { tokenKind, type CredentialKind } from './tokens.ts';

export const SESSION_COOKIE = 'rowgate_session';

/** Each kind of credential as a sentence names it (the 401's detail, the OpenAPI document). */
export const credentialNames: Record<CredentialKind, string> = {
  web_session: 'a web session cookie',
  personal_access_token: 'a personal access token',
  organization_access_token: 'an organization access token',
  oauth2_user_token: 'an OAuth2 user token',
  oauth2_organization_token: 'an OAuth2 organization token',
  customer_session: 'a customer session token',
  member_session: 'a member session token',
};

export interface PresentedCredential {
  kind: CredentialKind;
  token: string;
  /** the client's full address it came from (SPEC §14, §22: a token may be bound to addresses); none: no allow-list admits it */
  from?: string | null;
  /** its key in the server's memories, once asked (credentialKey) */
  key?: string;
}

type Read = PresentedCredential | 'malformed' | null;

/** Where a request keeps what it presented: the rate limit, the pipeline and GraphQL all ask, and it is read once. */
const READ = Symbol('rowgate.presented-credential');

export function readCredential(req: IncomingMessage): Read {
  const memo = req as IncomingMessage & { [READ]?: Read };
  const read = memo[READ];
  if (read !== undefined) return read;
  return (memo[READ] = parseCredential(req));
}

/**
 * A credential's key in the server's memories (rate limits, credentials seen,
 * the last write's position): the token's SHA-256, which nobody can turn back
 * into a 256-bit random token, at a tenth of the HMAC's cost; computed once a
 * request.
 */
export function credentialKey(credential: PresentedCredential): string {
  credential.key ??= hash('sha256', credential.token, 'base64');
  return credential.key;
}

function parseCredential(req: IncomingMessage): Read {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    const kind = match ? tokenKind(match[1]!) : null;
    // a web session travels only as the cookie
    if (!match || !kind || kind === 'web_session') return 'malformed';
    return { kind, token: match[1]!, from: requestAddress(req) };
  }
  const cookieHeader = req.headers.cookie;
  if (cookieHeader) {
    const token = parseCookie(cookieHeader)[SESSION_COOKIE];
    if (token !== undefined) {
      return tokenKind(token) === 'web_session' ? { kind: 'web_session', token, from: requestAddress(req) } : 'malformed';
    }
  }
  return null;
}
