// SPEC §5's first checks, one way for REST and GraphQL: a credential of a kind
// the interface accepts (401), a cookie-authenticated change from this server's
// own pages only (403), the database's word on whom it authenticates (401), and
// the scopes (403). The database decides who; this only reads and maps.
import type { Request } from 'express';
import type pg from 'pg';
import { insufficientScope, notPermitted, unauthorized } from '../core/errors.ts';
import { publicUrl } from '../core/public-url.ts';
import { poolStatements, statementName, type Tx } from '../db/pool.ts';
import { ANONYMOUS, authenticate, type Authenticated, type RequestOrigin } from './authenticate.ts';
import { credentialNames, type PresentedCredential, readCredential } from './credentials.ts';
import type { CredentialKind } from './tokens.ts';

/** What an interface takes of a request's credential. */
export interface CredentialRule {
  /** the kinds it accepts; null: any kind */
  kinds: readonly CredentialKind[] | null;
  /** whether the request may change something (a cookie-authenticated change must come from this server's pages) */
  changes: boolean;
}

const acceptedKinds = (kinds: readonly CredentialKind[]) => `This endpoint accepts ${kinds.map((k) => credentialNames[k]).join(', ')}`;

/**
 * The credential a request presents, when the rule accepts it; null when it
 * presents none (whether one is needed is the caller's: authenticationRequired).
 * A malformed one, or one of another kind, is a 401; a cross-site cookie
 * change a 403.
 */
export function acceptCredential(req: Request, rule: CredentialRule): PresentedCredential | null {
  const credential = readCredential(req);
  if (credential === 'malformed') throw unauthorized('The credential is malformed', true);
  if (!credential) return null;
  if (rule.kinds && !rule.kinds.includes(credential.kind)) {
    throw new CredentialOfAnotherKind(credential, `${acceptedKinds(rule.kinds)}; ${credentialNames[credential.kind]} was sent`);
  }
  if (credential.kind === 'web_session' && rule.changes) refuseCrossSiteCookie(req);
  return credential;
}

/** The 401 of a request without the credential its endpoint needs. */
export const authenticationRequired = (kinds: readonly CredentialKind[]) =>
  unauthorized(`Authentication required. ${acceptedKinds(kinds)}`, false);

/** The 401 of a credential the database knows nobody by. */
export const unknownCredential = () => unauthorized('The credential is unknown, expired or revoked', true);

/**
 * A credential of a kind the endpoint does not accept. Whether the 401 says
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

/** The 401 for a credential of another kind, asked of the database on its own (only on this path). */
export async function otherKindRefusal(pool: pg.Pool, secret: string, refusal: CredentialOfAnotherKind) {
  const subject = await authenticateOnPool(pool, secret, refusal.credential, '');
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
  if (!subject) throw unknownCredential();
  return subject;
}

/** Whom the credential authenticates, asked in one statement of its own on the pool (null: nobody). */
export function authenticateOnPool(
  pool: pg.Pool,
  secret: string,
  credential: PresentedCredential,
  requestId: string,
  origin: RequestOrigin = {},
): Promise<Authenticated | null> {
  const { named } = poolStatements(pool);
  const run = async <T extends object>(text: string, values: unknown[]) =>
    (await pool.query<T>(named ? { name: statementName(text), text, values } : { text, values })).rows[0];
  return authenticate(run, secret, credential, requestId, origin);
}

/** A 403 unless the subject holds one of the scopes (no check without a subject: anonymous endpoints). */
export function requireScopes(scopes: readonly string[], subject: Pick<Authenticated, 'scopes'> | null) {
  // an endpoint that names no scope (SPEC §20's explanations) takes any valid credential
  if (subject && scopes.length && !scopes.some((s) => subject.scopes.has(s))) throw insufficientScope(scopes);
}
