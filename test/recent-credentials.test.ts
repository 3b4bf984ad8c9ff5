// The server's memory of credentials seen to authenticate (src/auth/recent-credentials.ts):
// bounded, a busy key kept however many others arrive, a 401's key forgotten.
import { expect, test } from 'vitest';
import { RecentCredentials } from '../src/auth/recent-credentials.ts';

test('holds at most its bound, and forgets the keys nobody used since', () => {
  const recent = new RecentCredentials(100);
  for (let i = 0; i < 1_000; i++) recent.add(`k${i}`);
  const held = Array.from({ length: 1_000 }, (_, i) => recent.has(`k${i}`)).filter(Boolean).length;
  expect(held).toBeLessThanOrEqual(200);
  expect(held).toBeGreaterThanOrEqual(100);
  expect(recent.has('k0')).toBe(false);
  expect(recent.has('k999')).toBe(true);
});

test('a key used while its bound of others arrive is never dropped', () => {
  const recent = new RecentCredentials(100);
  recent.add('busy');
  for (let i = 0; i < 10_000; i++) {
    recent.add(`other${i}`);
    if (i % 99 === 0) recent.add('busy');
    expect(recent.has('busy')).toBe(true);
  }
});

test('a deleted key is gone from either generation', () => {
  const recent = new RecentCredentials(10);
  recent.add('a');
  for (let i = 0; i < 10; i++) recent.add(`x${i}`); // 'a' now in the older generation
  recent.add('b');
  recent.delete('a');
  recent.delete('b');
  expect(recent.has('a')).toBe(false);
  expect(recent.has('b')).toBe(false);
});
