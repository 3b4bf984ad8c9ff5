// Webhook signing secrets (SPEC §17): `whsec_` + base64 of 24 random bytes, shown
// once at creation. The server must read them back to sign, so they are stored
// sealed (AES-256-GCM under a key derived from the server secret) in a table no
// API role or analyst can read: a copy of the database alone does not give them
// away (docs/security.md).
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret. */
export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(24).toString('base64');
}

const keyOf = (serverSecret: string) => createHmac('sha256', serverSecret).update('rowgate webhook secrets v1').digest();

/** iv (12 bytes) | tag (16 bytes) | ciphertext */
export function sealSecret(secret: string, serverSecret: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(serverSecret), iv);
  const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
}

export function openSecret(sealed: Buffer, serverSecret: string): string {
  const decipher = createDecipheriv('aes-256-gcm', keyOf(serverSecret), sealed.subarray(0, 12));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
}
