// Tokens: prefix + 37 random base62 characters (~220 bits) + a 6-character
// checksum, stored only as an HMAC-SHA256 keyed with the server secret (SPEC §2,
// §22). The checksum is GitHub's scheme: the CRC-32 of the random part, in base62,
// so a secret scanner tells a real token from noise offline (docs/credentials.md).
// Tokens issued before carried 43 random characters and no checksum; they look
// the same and keep working: the database, not the checksum, says who a token is.
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
/** random part and checksum: the 43 characters every token has had */
const BODY_LENGTH = 43;
export const CHECKSUM_LENGTH = 6;
const shape = /^(rg_(?:us|pat|oat|at_u|at_o|cst|mst)_)([0-9A-Za-z]{32,64})$/;

/** `length` characters drawn uniformly and independently from `alphabet` (base62 by default). */
export function randomCharacters(length: number, alphabet = ALPHABET): string {
  let text = '';
  for (let i = 0; i < length; i++) text += alphabet[randomInt(alphabet.length)];
  return text;
}

/** CRC-32 (IEEE 802.3, reflected, as zlib computes it), one table, byte at a time */
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'utf8')) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** The checksum of a token's random part: its CRC-32 in base62 (`0-9A-Za-z`), most significant first, padded to 6 with `0` */
export function tokenChecksum(random: string): string {
  let value = crc32(random);
  let text = '';
  do {
    text = ALPHABET[value % 62]! + text;
    value = Math.floor(value / 62);
  } while (value > 0);
  return text.padStart(CHECKSUM_LENGTH, '0');
}

/**
 * A secret: the prefix that names its kind, random base62 characters and their
 * checksum, `length` characters after the prefix (43: 37 random, ~220 bits).
 */
export const randomToken = (prefix: string, length = BODY_LENGTH) => {
  const random = randomCharacters(length - CHECKSUM_LENGTH);
  return prefix + random + tokenChecksum(random);
};

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
