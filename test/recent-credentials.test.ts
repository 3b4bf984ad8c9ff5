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

test('a key is told when it enters the current generation (first seen, or again a generation later), not when learned from another worker', () => {
  const recent = new RecentCredentials(10);
  const told: string[] = [];
  recent.onRemembered = (key) => told.push(key);
  recent.add('a');
  recent.add('a');
  recent.learn(['b']);
  recent.add('b');
  for (let i = 0; i < 10; i++) recent.add(`x${i}`); // 'a' and 'b' now in the older generation, still held
  recent.add('a'); // seen again: a worker that dropped it learns it back
  expect(recent.has('b')).toBe(true);
  expect(told).toEqual(['a', ...Array.from({ length: 10 }, (_, i) => `x${i}`), 'a']);
});

test("a held key a 401 ends is told, once; another worker's 401 drops it here untold", () => {
  const recent = new RecentCredentials(10);
  const forgotten: string[] = [];
  recent.onForgotten = (key) => forgotten.push(key);
  recent.add('a');
  recent.add('b');
  recent.delete('a');
  recent.delete('a');
  recent.delete('never-held');
  recent.learn([], ['b']);
  expect(forgotten).toEqual(['a']);
  expect(recent.has('a')).toBe(false);
  expect(recent.has('b')).toBe(false);
});

test("another worker's news that a key was seen, crossing this worker's 401 of it, does not bring it back", () => {
  const recent = new RecentCredentials(10);
  recent.add('a');
  recent.delete('a'); // a 401 here
  const now = Date.now();
  recent.learn(['a'], [], now + 500); // told by a worker that saw it authenticate before the 401
  expect(recent.has('a')).toBe(false);
  recent.learn(['a'], [], now + 1_500); // a second later it is news again
  expect(recent.has('a')).toBe(true);
  recent.delete('a');
  recent.add('a'); // authenticated here again: held at once, whatever was told
  expect(recent.has('a')).toBe(true);
  // a key never held here is not marked by its 401: news of it is taken
  recent.delete('b');
  recent.learn(['b']);
  expect(recent.has('b')).toBe(true);
  // another worker's 401 of a key not held here marks it too: a third worker's stale "seen" may follow
  recent.learn([], ['c']);
  recent.learn(['c']);
  expect(recent.has('c')).toBe(false);
});
