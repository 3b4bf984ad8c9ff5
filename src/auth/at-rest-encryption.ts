// What the server must read back but the database must not give away (webhook
// signing secrets, stored answers that carry tokens): sealed with AES-256-GCM
// under a key derived from the server secret and the purpose, so a copy of the
// database alone does not hold them in clear (docs/security.md).
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

const keys = new Map<string, Buffer>();
function keyOf(serverSecret: string, purpose: string): Buffer {
  const id = `${purpose}\n${serverSecret}`;
  let key = keys.get(id);
  if (!key) {
    key = createHmac('sha256', serverSecret).update(purpose).digest();
    keys.set(id, key);
  }
  return key;
}

/**
 * iv (12 bytes) | tag (16 bytes) | ciphertext. `boundTo`: what the sealed text
 * belongs to (its row's identity), authenticated with it: a copy moved to
 * another row does not open there.
 */
export function seal(plain: string, serverSecret: string, purpose: string, boundTo?: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(serverSecret, purpose), iv);
  if (boundTo !== undefined) cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
}

/** The plain text; throws when the seal was made under another key or altered. */
export function open(sealed: Buffer, serverSecret: string, purpose: string, boundTo?: string): string {
  const decipher = createDecipheriv('aes-256-gcm', keyOf(serverSecret, purpose), sealed.subarray(0, 12));
  if (boundTo !== undefined) decipher.setAAD(Buffer.from(boundTo, 'utf8'));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
}
