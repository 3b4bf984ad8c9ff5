// SPEC §5's first checks, as the HTTP layer makes them: a credential of a kind the
// route accepts (401), the database's word on whom it authenticates (401), and the
// route's scopes (403). The database decides who; this only reads and maps.
import type { Request } from 'express';
import type pg from 'pg';
import { ANONYMOUS, authenticate, type Authenticated, type RequestOrigin } from '../auth/authenticate.ts';
import { credentialNames, type PresentedCredential, readCredential } from '../auth/credentials.ts';
import { inTransaction, type Tx } from '../db/pool.ts';
import { insufficientScope, notPermitted, unauthorized } from './errors.ts';
import { publicUrl } from './public-url.ts';
import type { ApiRoute } from './route.ts';

function acceptedCredentials(route: ApiRoute) {
  return `This endpoint accepts ${route.access.credentials.map((k) => credentialNames[k]).join(', ')}`;
}

/** The credential of a request, when it is of a kind the route accepts; a 401 otherwise. */
export function acceptCredential(route: ApiRoute, req: Request): PresentedCredential {
  const credential = readCredential(req);
  if (credential === 'malformed') throw unauthorized('The credential is malformed', true);
  if (!credential) throw unauthorized(`Authentication required. ${acceptedCredentials(route)}`, false);
  if (!route.access.credentials.includes(credential.kind)) {
    throw new CredentialOfAnotherKind(credential, `${acceptedCredentials(route)}; ${credentialNames[credential.kind]} was sent`);
  }
  if (credential.kind === 'web_session' && route.method !== 'get') refuseCrossSiteCookie(req);
  return credential;
}

/**
 * A credential of a kind the route does not accept. Whether the 401 says
 * `error="invalid_token"` depends on the database's word on it: a good token of
 * another kind is fine, the endpoint just wants another (SPEC §16), and a client
 * library told `invalid_token` discards or refreshes it; an unknown, expired or
 * revoked one is `invalid_token` as anywhere else (SPEC §7). See `otherKindRefusal`.
 */
export class CredentialOfAnotherKind extends Error {
  readonly credential: PresentedCredential;
  constructor(credential: PresentedCredential, detail: string) {
    super(detail);
    this.credential = credential;
  }
}

/** The 401 for a credential of another kind, asked of the database in a transaction of its own (only on this path). */
export async function otherKindRefusal(pool: pg.Pool, secret: string, refusal: CredentialOfAnotherKind) {
  const subject = await inTransaction(pool, (tx) => authenticate((text, values) => tx.one(text, values), secret, refusal.credential));
  return unauthorized(refusal.message, subject === null);
}

/**
 * A change the session cookie authenticates, which the browser says another
 * origin's page sent, is refused (SPEC §16), logout and the OAuth2 consent
 * included: `Sec-Fetch-Site` other than `same-origin` or `none` (a sibling
 * subdomain's page, which SameSite=Lax lets the cookie go with, says
 * `same-site`); from a browser that sends no `Sec-Fetch-Site`, an `Origin` other
 * than this server's (or `null`). Bearer tokens are not ambient: a cross-origin
 * app sends them on purpose (CORS). A client that sends neither header (curl, a
 * script) is not a browser another page can drive.
 */
export function refuseCrossSiteCookie(req: Request) {
  const site = req.get('sec-fetch-site');
  const origin = req.get('origin');
  const crossSite = site !== undefined ? site !== 'same-origin' && site !== 'none' : origin !== undefined && origin !== publicUrl(req);
  if (crossSite) {
    const said = site !== undefined ? `Sec-Fetch-Site: ${site}` : `Origin: ${origin}`;
    throw notPermitted(`A change made with the session cookie must come from this server's own pages (${said.slice(0, 120)})`);
  }
}

/**
 * Authenticates in the transaction: its role and settings become the subject's
 * (rowgate_anonymous without a credential, and no subject). A 401 when the
 * database knows no live credential of that token.
 */
export async function authenticateIn(
  tx: Tx,
  secret: string,
  credential: PresentedCredential | null,
  requestId: string,
  origin: RequestOrigin = {},
): Promise<Authenticated | null> {
  if (!credential) {
    await tx.rows(ANONYMOUS, [requestId]);
    return null;
  }
  const subject = await authenticate((text, values) => tx.one(text, values), secret, credential, requestId, origin);
  if (!subject) throw unauthorized('The credential is unknown, expired or revoked', true);
  return subject;
}

/** A 403 unless the subject holds one of the route's scopes (no check without a subject: anonymous routes). */
export function requireScopes(route: ApiRoute, subject: Pick<Authenticated, 'scopes'> | null) {
  if (subject && !route.access.scopes.some((s) => subject.scopes.has(s))) throw insufficientScope(route.access.scopes);
}
