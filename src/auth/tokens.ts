// Tokens: prefix + 43 random base62 characters (~256 bits), stored only as an
// HMAC-SHA256 keyed with the server secret (SPEC §2).
import { createHmac, randomInt } from 'node:crypto';

export const credentialKinds = [
  'web_session',
  'personal_access_token',
  'organization_access_token',
  'oauth2_user_token',
  'oauth2_organization_token',
  'customer_session',
  'member_session',
] as const;
export type CredentialKind = (typeof credentialKinds)[number];

export const tokenPrefixes: Record<CredentialKind, string> = {
  web_session: 'rg_us_',
  personal_access_token: 'rg_pat_',
  organization_access_token: 'rg_oat_',
  oauth2_user_token: 'rg_at_u_',
  oauth2_organization_token: 'rg_at_o_',
  customer_session: 'rg_cst_',
  member_session: 'rg_mst_',
};

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 43;
const shape = /^(rg_(?:us|pat|oat|at_u|at_o|cst|mst)_)([0-9A-Za-z]{32,64})$/;

/** `length` characters drawn uniformly and independently from `alphabet` (base62 by default). */
export function randomCharacters(length: number, alphabet = ALPHABET): string {
  let text = '';
  for (let i = 0; i < length; i++) text += alphabet[randomInt(alphabet.length)];
  return text;
}

/** A secret: the prefix that names its kind, then base62 characters (43: ~256 bits). */
export const randomToken = (prefix: string, length = BODY_LENGTH) => prefix + randomCharacters(length);

/** A credential of a kind. */
export const generateToken = (kind: CredentialKind): string => randomToken(tokenPrefixes[kind]);

/** The credential kind a token claims by its prefix, or null when it is malformed. */
export function tokenKind(token: string): CredentialKind | null {
  const match = shape.exec(token);
  if (!match) return null;
  return credentialKinds.find((kind) => tokenPrefixes[kind] === match[1]) ?? null;
}

export function hashToken(secret: string, token: string): Buffer {
  return createHmac('sha256', secret).update(token).digest();
}
