// A cluster's workers share what each credential wrote (src/db/consistency.ts,
// src/http/cluster.ts): with standbys, a client's read after its write may
// reach another worker, which must then wait for (or go to) data as recent as
// the write, as the worker that took the write does. Two Consistency memories
// here, joined as the primary joins workers.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Consistency, type ConsistencyNews } from '../src/db/consistency.ts';
import { createPool } from '../src/db/pool.ts';
import { startTestApp, type TestApp } from './harness.ts';

describe("a cluster's workers and a credential's writes", () => {
  let app: TestApp;
  let pool: ReturnType<typeof createPool>;
  beforeAll(async () => {
    app = await startTestApp();
    pool = createPool({ connectionString: app.authenticatorUrl, max: 1, statementTimeoutMs: 10_000 });
  });
  afterAll(async () => {
    await pool?.end();
    await app?.close();
  });

  function workers() {
    const told: ConsistencyNews[] = [];
    let b: Consistency;
    const a = new Consistency({
      primary: pool,
      holdMs: 60_000,
      elsewhere: async (news) => {
        told.push(news);
        b.learn(news);
      },
    });
    b = new Consistency({ primary: pool, holdMs: 60_000 });
    return { a, b, told };
  }

  test('a write through one is known to the other before it is answered; a later position is never replaced by an earlier one', async () => {
    const { a, b, told } = workers();
    expect(b.required('key', undefined)).toBeNull();
    const token = await a.written('key');
    expect(token).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    expect(told).toEqual([{ written: ['key', token] }]);
    expect(b.required('key', undefined)).toBe(a.required('key', undefined));
    expect(b.required('other', undefined)).toBeNull();
    b.learn({ written: ['key', '0/1'] });
    expect(b.required('key', undefined)).toBe(a.required('key', undefined));
    // what cannot be a position is no news
    b.learn({ written: ['odd', 'not a position'] });
    expect(b.required('odd', undefined)).toBeNull();
  });

  test("a GraphQL mutation's hold keeps the credential's reads on the primary through the other too", () => {
    const { a, b } = workers();
    expect(b.onPrimary('key')).toBe(false);
    a.hold('key');
    expect(b.onPrimary('key')).toBe(true);
    expect(b.onPrimary('other')).toBe(false);
  });
});
