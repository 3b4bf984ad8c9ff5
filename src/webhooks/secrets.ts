// Webhook signing secrets (SPEC §17): `whsec_` + base64 of 24 random bytes, shown
// once at creation. The server must read them back to sign, so they are stored
// sealed (AES-256-GCM under a key derived from the server secret) in a table no
// API role or analyst can read: a copy of the database alone does not give them
// away (docs/security.md).
import { randomBytes } from 'node:crypto';
import { open, seal } from '../auth/at-rest-encryption.ts';

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret. */
export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

const PURPOSE = 'rowgate webhook secrets v1';

/** iv (12 bytes) | tag (16 bytes) | ciphertext */
export const sealSecret = (secret: string, serverSecret: string): Buffer => seal(secret, serverSecret, PURPOSE);

export const openSecret = (sealed: Buffer, serverSecret: string): string => open(sealed, serverSecret, PURPOSE);
