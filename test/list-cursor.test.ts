// The keyset cursor's signature (src/listing/list-cursor.ts): a cursor a server
// handed out stays good on every server of the deployment and across releases,
// so its bytes are pinned here to the formula: HMAC-SHA-256 under a key derived
// from the server secret, over the list's fingerprint, a newline and the key.
import { createHmac } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { openCursor, signCursor } from '../src/listing/list-cursor.ts';

const secret = 'a server secret of at least thirty-two characters';
const fingerprint = '{"from":"rowgate.orders","sorting":["-created_at"],"filters":[],"organizations":null}';
const key = ['2026-12-01 10:00:00+00', '0193b2c4-8f1e-7000-8000-000000000000'] as const;

describe('keyset cursors', () => {
  test('are the payload and its HMAC under the derived key, base64url', () => {
    const derived = createHmac('sha256', secret).update('rowgate list cursor').digest();
    const payload = JSON.stringify(key);
    const mac = createHmac('sha256', derived).update(`${fingerprint}\n${payload}`).digest('base64url');
    expect(signCursor(secret, fingerprint, key)).toBe(`${Buffer.from(payload).toString('base64url')}.${mac}`);
  });

  test('open under the secret and fingerprint they were signed with, and no other', () => {
    const cursor = signCursor(secret, fingerprint, key);
    expect(openCursor(secret, fingerprint, cursor, 2)).toEqual(key);
    for (const [s, f] of [
      [`${secret}!`, fingerprint],
      [secret, fingerprint.replace('-created_at', 'created_at')],
    ] as const) {
      expect(() => openCursor(s, f, cursor, 2)).toThrow();
    }
    // two secrets in one process: each its own key
    expect(signCursor(`${secret}!`, fingerprint, key)).not.toBe(cursor);
    expect(openCursor(secret, fingerprint, cursor, 2)).toEqual(key);
  });
});
