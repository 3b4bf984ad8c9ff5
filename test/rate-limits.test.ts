// Rate limits for the whole deployment (SPEC §14): several servers' counts on
// one database, each its own DeploymentCounts as each server process has, give
// a key its allowance once, within the bound docs/decisions.md states.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DeploymentCounts } from '../src/operating/deployment-counts.ts';
import { RateLimits } from '../src/operating/rate-limit.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

/** `n` servers' limits on the test's database, registered with each other */
async function servers(n: number, quota: number) {
  const counts = Array.from({ length: n }, () => DeploymentCounts.inDatabase(app.pool));
  for (const c of counts) await c.start();
  // each learns how many servers there are at its next exchange
  await new Promise((r) => setTimeout(r, 250));
  return {
    counts,
    limits: counts.map((c) => new RateLimits({ perCredential: quota, perAddress: quota, counts: c })),
    stop: () => Promise.all(counts.map((c) => c.stop())),
  };
}

/** Waits for the start of a second, so that a burst stays within one window */
async function startOfASecond() {
  await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
}

describe('rate limits counted in the database', () => {
  test.each([1, 2, 3])('%i servers let a key through its allowance once, within q + N × share per window', async (n) => {
    const quota = 40;
    const fleet = await servers(n, quota);
    try {
      expect(fleet.counts.map((c) => c.servers)).toEqual(Array(n).fill(n));
      const share = fleet.counts[0]!.share(quota);
      // the bound is per window: on a machine so busy that the burst spans two, it is sent again
      for (let tries = 0; ; tries++) {
        const key = `fleet-${n}-${Math.random()}`;
        await startOfASecond();
        const second = Math.floor(Date.now() / 1000);
        // the requests of one client, spread over every server, all at once
        const decisions = await Promise.all(Array.from({ length: 4 * quota }, (_, i) => fleet.limits[i % n]!.credential.consume(key)));
        if (Math.floor(Date.now() / 1000) !== second && tries < 3) continue;
        const allowed = decisions.filter((d) => d.allowed).length;
        // the second's window and the burst allowance, each passed by at most N × share
        expect(allowed).toBeGreaterThanOrEqual(2 * quota);
        expect(allowed).toBeLessThanOrEqual(2 * (quota + n * share));
        expect(decisions.filter((d) => !d.allowed).every((d) => d.reset >= 1 && d.remaining === 0)).toBe(true);
        // the database holds the deployment's count, whichever server let each through
        await Promise.all(fleet.counts.map((c) => c.exchanged()));
        const [row] = await app.sql<{ points: number }>(
          `select sum(points)::int as points from rowgate_private.rate_limit_counts where key = $1 and policy = 'default'`,
          [key],
        );
        expect(row!.points).toBe(allowed);
        break;
      }
    } finally {
      await fleet.stop();
    }
  });

  test("what one server let through refuses the key on another: the RateLimit fields report the deployment's count", async () => {
    const fleet = await servers(2, 10);
    try {
      const [a, b] = fleet.limits as [RateLimits, RateLimits];
      // the scenario holds within one window: on a machine so busy that it spans two, it is run again
      for (let tries = 0; ; tries++) {
        const key = `seen-${Math.random()}`;
        await startOfASecond();
        const second = Math.floor(Date.now() / 1000);
        for (let i = 0; i < 6; i++) expect((await a.address.consume(key)).allowed).toBe(true);
        // b decides its first request of the key from its own view (within its share), then exchanges
        const first = await b.address.consume(key);
        await fleet.counts[0]!.exchanged();
        await fleet.counts[1]!.exchanged();
        const next = await b.address.consume(key);
        if (Math.floor(Date.now() / 1000) !== second && tries < 3) continue;
        expect(first).toMatchObject({ allowed: true, remaining: 9 });
        expect(next).toMatchObject({ allowed: true, remaining: 2 });
        break;
      }
    } finally {
      await fleet.stop();
    }
  });

  test('a point given back within its window is not counted', async () => {
    const fleet = await servers(1, 5);
    try {
      const key = `back-${Math.random()}`;
      const [limits] = fleet.limits as [RateLimits];
      await startOfASecond();
      for (let i = 0; i < 5; i++) limits.address.giveBack(await limits.address.consume(key));
      await fleet.counts[0]!.exchanged();
      expect((await limits.address.consume(key)).remaining).toBe(4);
    } finally {
      await fleet.stop();
    }
  });

  test('windows that are over are pruned, with servers gone for an hour', async () => {
    await app.owner.query(
      `insert into rowgate_private.rate_limit_counts (policy, key, window_number, points, expires_at)
       values ('default', 'old', 1, 3, now() - interval '1 second')`,
    );
    await app.owner.query(
      `insert into rowgate_private.rate_limit_servers (id, seen_at) values (gen_random_uuid(), now() - interval '2 hours')`,
    );
    const { rows } = await app.pool.query<{ pruned: number }>('select rowgate_private.prune_rate_limit_counts() as pruned');
    expect(rows[0]!.pruned).toBeGreaterThanOrEqual(1);
    const left = await app.sql<{ n: number }>(
      `select (select count(*) from rowgate_private.rate_limit_counts where key = 'old')::int
        + (select count(*) from rowgate_private.rate_limit_servers where seen_at < now() - interval '1 hour')::int as n`,
    );
    expect(left[0]!.n).toBe(0);
  });

  test('only the API server may exchange counts: no subject role, no analyst', async () => {
    for (const role of ['rowgate_anonymous', 'rowgate_user', 'rowgate_analyst']) {
      const [row] = await app.sql<{ allowed: boolean }>(
        `select has_function_privilege($1, 'rowgate_private.exchange_rate_limit_counts(uuid, text[], text[], bigint[], integer[], integer[])', 'execute') as allowed`,
        [role],
      );
      expect(row!.allowed, role).toBe(false);
    }
  });
});
