// Client authentication at the token, revocation and introspection endpoints
// (RFC 6749 §2.3.1). The database compares the secret's keyed hash.
import type { Request } from 'express';
import { hashToken } from '../auth/tokens.ts';
import { oauth2InvalidClient, oauth2InvalidRequest } from '../core/errors.ts';

/** How a request authenticated its client: RFC 7591's token_endpoint_auth_method, which the database compares with the registration */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

export interface ClientCredentials {
  clientId: string;
  clientSecret: string | null;
  method: ClientAuthMethod;
}

/**
 * RFC 6749 §2.3.1 client credentials: HTTP Basic (client_secret_basic) or the
 * body (client_secret_post), or a bare client_id (a public client). Only one
 * method per request.
 */
export function clientCredentials(req: Request, body: { client_id?: string; client_secret?: string }): ClientCredentials {
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
    // no client's id or secret holds a NUL (PostgreSQL's text cannot), nor runs past a few hundred characters
    if (/\0/.test(clientId + clientSecret) || clientId.length > 200 || clientSecret.length > 500) throw oauth2InvalidClient();
    if (body.client_secret) throw oauth2InvalidRequest('Use one client authentication method: HTTP Basic or client_secret, not both');
    if (body.client_id && body.client_id !== clientId) throw oauth2InvalidClient();
    return { clientId, clientSecret, method: 'client_secret_basic' };
  }
  if (!body.client_id) throw oauth2InvalidClient();
  return body.client_secret
    ? { clientId: body.client_id, clientSecret: body.client_secret, method: 'client_secret_post' }
    : { clientId: body.client_id, clientSecret: null, method: 'none' };
}

/** The client's arguments of the SQL functions that authenticate it: its id, its secret's keyed hash, the method it used */
export const clientArguments = (secret: string, client: ClientCredentials) =>
  [client.clientId, client.clientSecret === null ? null : hashToken(secret, client.clientSecret), client.method] as const;
