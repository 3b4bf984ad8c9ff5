// An authorization request (RFC 6749 §4.1.1, PKCE per RFC 7636) as the authorization
// endpoint and the consent POST check it: the parameters here, the client, redirect
// URI, scopes and organization policy in the database; and where the answer goes back.
import type { Request } from 'express';
import type { Tx } from '../db/pool.ts';
import { invalidField } from '../core/errors.ts';
import { UUID } from '../core/fields.ts';
import type { AuthorizeParams } from './schemas.ts';
import { publicUrl } from '../core/public-url.ts';

/** RFC 6749 §3.3: space-delimited scope tokens; none (or an empty string) is null. */
export const scopeList = (scope: string | undefined) => {
  const list = (scope ?? '').split(' ').filter(Boolean);
  return list.length ? list : null;
};

/** The issuer (RFC 8414 §2): ROWGATE_PUBLIC_URL, else http://HOST:PORT; never the Host header. */
export const issuer = (req: Request) => publicUrl(req);

export interface CheckedRequest {
  clientName: string;
  scopes: string[];
  organizationId: string | null;
  organizationName: string | null;
  /** what the grant leaves out of the scopes asked for (an organization grant: SPEC §21), null when nothing */
  withheld: string | null;
}

/** An RFC 6749 §4.1.2.1 error, for the client (whose name it carries once the client is known). */
export class RedirectError {
  readonly error: string;
  readonly description: string;
  readonly clientName: string;
  constructor(error: string, description: string, clientName = '') {
    this.error = error;
    this.description = description;
    this.clientName = clientName;
  }
}

/** The redirect URI with the response's parameters (RFC 6749 §4.1.2). */
export function redirectUrl(req: Request, redirect: string, params: Record<string, string | undefined>) {
  const url = new URL(redirect);
  const added = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined && value !== '') added.append(key, value);
  // RFC 9207: the issuer, so a client talking to several servers is not mixed up
  added.append('iss', issuer(req));
  // appended to the registered query as it was written (RFC 6749 §3.1.2: it is retained), not re-encoded
  url.search = url.search ? `${url.search}&${added}` : `?${added}`;
  return url.toString();
}

/**
 * The checks of an authorization request, the database's (client, redirect URI,
 * PKCE, scopes, organization policy) and the parameters'. An unknown client or
 * redirect URI is answered here (422), never sent there; any other problem is a
 * RedirectError for the client (on the authorization endpoint, behind a page the
 * user reads first: RFC 9700 §4.11.2).
 */
export async function checkRequest(tx: Tx, p: AuthorizeParams, source: 'query' | 'body'): Promise<CheckedRequest | RedirectError> {
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
  if (problem) return new RedirectError(problem.error, problem.description, row!.client_name);
  if (row!.status !== 'ok') return new RedirectError(row!.status, row!.description!, row!.client_name);
  return {
    clientName: row!.client_name,
    scopes: row!.scopes,
    organizationId,
    organizationName: row!.organization_name,
    withheld: row!.description,
  };
}
