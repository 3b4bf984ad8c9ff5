// Rate limits for the whole deployment (SPEC §14): several servers' counts on
// one database, each its own DeploymentCounts as each server process has, give
// a key its allowance once, within the bound docs/fleet-bounds.md states.
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import pg from 'pg';
import { REPLACE_MS } from '../src/operating/counts-exchange.ts';
import { DeploymentCounts } from '../src/operating/deployment-counts.ts';
import { RateLimits } from '../src/operating/rate-limit.ts';
import { startStallingProxy } from './faults/stalling-proxy.ts';
import { startTestApp, type TestApp } from './harness.ts';

/** How long a decision may wait on the store before its server decides alone (src/operating/deployment-counts.ts) */
const STALL_TIME_MS = 250;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

/** `n` servers' limits on the test's database, registered with each other; `skewMs[i]` sets server i's clock off */
async function servers(n: number, quota: number, skewMs: number[] = []) {
  const counts = Array.from({ length: n }, (_, i) => DeploymentCounts.inDatabase(app.pool, { clock: () => Date.now() + (skewMs[i] ?? 0) }));
  for (const c of counts) await c.start();
  // each learns how many servers there are at its next exchange
  await Promise.all(counts.map((c) => c.exchanged()));
  return {
    counts,
    limits: counts.map((c) => new RateLimits({ perCredential: quota, perAddress: quota, counts: c })),
    stop: () => Promise.all(counts.map((c) => c.stop())),
    stalledSeconds: () => counts.reduce((sum, c) => sum + c.stalledSeconds, 0),
    /**
     * Whether a scenario left its window, or met a stalled store (a machine so busy
     * that an exchange took longer than the stall time): then it is run again
     */
    disturbed: (second: number, stalled: number) =>
      Math.floor(counts[0]!.now() / 1000) !== second || counts.reduce((sum, c) => sum + c.stalledSeconds, 0) !== stalled,
  };
}

/**
 * Waits for the start of a second on `counts`' clock (the database's), so that a burst stays
 * within one window; 50 ms in, as each server's offset from the database's clock is known to
 * within half a round trip, and a busy machine's round trips are tens of milliseconds
 */
async function startOfASecond(counts?: DeploymentCounts) {
  const now = counts ? counts.now() : Date.now();
  await new Promise((r) => setTimeout(r, 1000 - (now % 1000) + 50));
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
        await startOfASecond(fleet.counts[0]);
        const second = Math.floor(fleet.counts[0]!.now() / 1000);
        const stalled = fleet.stalledSeconds();
        // the requests of one client, spread over every server, all at once
        const decisions = await Promise.all(Array.from({ length: 4 * quota }, (_, i) => fleet.limits[i % n]!.credential.consume(key)));
        if (fleet.disturbed(second, stalled) && tries < 3) continue;
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

  test("servers whose clocks differ by seconds share one window: they measure it on the database's clock", async () => {
    const quota = 40;
    const skew = [0, 2_500, 5_000];
    const fleet = await servers(3, quota, skew);
    try {
      // each server's offset is within a round trip of the skew it was given
      for (const [i, c] of fleet.counts.entries()) expect(Math.abs(c.offsetMs + skew[i]!)).toBeLessThan(100);
      const share = fleet.counts[0]!.share(quota);
      for (let tries = 0; ; tries++) {
        const key = `skewed-${Math.random()}`;
        await startOfASecond(fleet.counts[0]);
        const second = Math.floor(fleet.counts[0]!.now() / 1000);
        const stalled = fleet.stalledSeconds();
        const decisions = await Promise.all(Array.from({ length: 6 * quota }, (_, i) => fleet.limits[i % 3]!.credential.consume(key)));
        if (fleet.disturbed(second, stalled) && tries < 3) continue;
        const allowed = decisions.filter((d) => d.allowed).length;
        expect(allowed).toBeGreaterThanOrEqual(2 * quota);
        expect(allowed).toBeLessThanOrEqual(2 * (quota + 3 * share));
        break;
      }
    } finally {
      await fleet.stop();
    }
  });

  test("a credential's first answer on a server reports the deployment's count, read in one shared statement", async () => {
    const fleet = await servers(2, 10);
    try {
      const [a, b] = fleet.limits as [RateLimits, RateLimits];
      for (let tries = 0; ; tries++) {
        const key = `first-${Math.random()}`;
        await startOfASecond(fleet.counts[0]);
        const second = Math.floor(fleet.counts[0]!.now() / 1000);
        const stalled = fleet.stalledSeconds();
        for (let i = 0; i < 6; i++) expect((await a.credential.consume(key)).allowed).toBe(true);
        const answered = await fleet.counts[0]!.exchanged();
        // b has never seen the key: its first answer waits for the deployment's count, and so do those asked with it
        const first = await Promise.all([b.credential.consume(key), b.credential.consume(key)]);
        if ((!answered || fleet.disturbed(second, stalled)) && tries < 3) continue;
        expect(first.map((d) => d.remaining).sort()).toEqual([2, 3]);
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
        await startOfASecond(fleet.counts[0]);
        const second = Math.floor(fleet.counts[0]!.now() / 1000);
        const stalled = fleet.stalledSeconds();
        for (let i = 0; i < 6; i++) expect((await a.address.consume(key)).allowed).toBe(true);
        // b decides its first request of the key from its own view (within its share), then exchanges
        const first = await b.address.consume(key);
        // an exchange that did not answer within the stall time (a busy machine) leaves the sums unknown: again.
        // An exchange reads the sums of the keys asked for since the one before: b's first point may have
        // left (and its sum come back) before a's points landed, so b asks for the key again once they
        // have, and the exchange after that reads the sum with them
        let answered = await fleet.counts[0]!.exchanged();
        b.address.refused(key);
        answered = answered && (await fleet.counts[1]!.exchanged());
        const next = await b.address.consume(key);
        if ((!answered || fleet.disturbed(second, stalled)) && tries < 3) continue;
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
      await startOfASecond(fleet.counts[0]);
      for (let i = 0; i < 5; i++) limits.address.giveBack(await limits.address.consume(key));
      await fleet.counts[0]!.exchanged();
      expect((await limits.address.consume(key)).remaining).toBe(4);
    } finally {
      await fleet.stop();
    }
  });

  test('the slice whose windows are over is emptied whole, whatever it holds; the current one is kept; servers gone for an hour go', async () => {
    const sliceNow = `rowgate_private.rate_limit_slice(now())`;
    // one transaction, so that now() and its slice are the same for the rows and for the prune
    const client = await app.owner.connect();
    try {
      await client.query('begin');
      // many keys in the slice two ahead of now's (the one written half a minute ago), one in now's
      await client.query(
        `insert into rowgate_private.rate_limit_counts (policy, key, window_number, points, slice)
         select 'anonymous', 'flood-' || i, 1, 1, (${sliceNow} + 2) % 4 from generate_series(1, 20000) i
         union all select 'default', 'current', 2, 3, ${sliceNow}`,
      );
      await client.query(
        `insert into rowgate_private.rate_limit_servers (id, seen_at) values (gen_random_uuid(), now() - interval '2 hours')`,
      );
      const { rows } = await client.query<{ pruned: number }>('select rowgate_private.prune_rate_limit_counts() as pruned');
      expect(rows[0]!.pruned).toBe(1);
      const { rows: left } = await client.query<{ flood: number; current: number; servers: number }>(
        `select (select count(*) from rowgate_private.rate_limit_counts where starts_with(key, 'flood-'))::int as flood,
          (select count(*) from rowgate_private.rate_limit_counts where key = 'current')::int as current,
          (select count(*) from rowgate_private.rate_limit_servers where seen_at < now() - interval '1 hour')::int as servers`,
      );
      expect(left[0]).toEqual({ flood: 0, current: 1, servers: 0 });
    } finally {
      await client.query('rollback');
      client.release();
    }
  });

  test('a transaction holding the counts delays the emptying to a later call; the emptying never waits for it', async () => {
    const [row] = await app.sql<{ n: number }>(
      `select count(*)::int as n from pg_inherits where inhparent = 'rowgate_private.rate_limit_counts'::regclass`,
    );
    expect(row!.n).toBe(4);
    const holder = await app.owner.connect();
    try {
      await holder.query('begin');
      await holder.query(`insert into rowgate_private.rate_limit_counts (policy, key, window_number, points, slice)
        values ('default', 'held', 1, 1, (rowgate_private.rate_limit_slice(now()) + 2) % 4)`);
      await holder.query('commit');
      await holder.query('begin');
      await holder.query('select count(*) from rowgate_private.rate_limit_counts');
      // answered while the holder's transaction is still open (it ends in `finally`): a prune that waited for it would hang here
      const { rows } = await app.pool.query<{ pruned: number }>('select rowgate_private.prune_rate_limit_counts() as pruned');
      expect(rows[0]!.pruned).toBe(0);
    } finally {
      await holder.query('rollback');
      holder.release();
    }
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

describe('rate limits when the shared counts stall', () => {
  test('a store that does not answer: each key gets a local q/N, one stall is told, and sharing resumes when it answers', async () => {
    // the server's clock and timers are the test's: "at once" and "within the stall time" are steps of that clock
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    vi.setSystemTime(Math.ceil(Date.now() / 1000) * 1000 + 50);
    let frozen = false;
    const waiting: (() => void)[] = [];
    const stalls: boolean[] = [];
    const counts = new DeploymentCounts({
      // two servers alive as far as this one knows
      exchange: async (_server, batch) => {
        if (frozen) await new Promise<void>((resolve) => waiting.push(resolve));
        return { sums: batch.map((b) => b.points), servers: 2, clock: Date.now() };
      },
      onStall: (stalled) => stalls.push(stalled),
    });
    await counts.start();
    try {
      const limits = new RateLimits({ perCredential: 20, perAddress: 20, counts });
      frozen = true;
      let settled = false;
      const decided = Promise.all(Array.from({ length: 60 }, () => limits.credential.consume('stall'))).finally(() => {
        settled = true;
      });
      // nobody waits past the stall time for the store, and nothing is refused for want of it
      await vi.advanceTimersByTimeAsync(STALL_TIME_MS);
      expect(settled).toBe(true);
      const decisions = await decided;
      // the second's window and the burst, each q/N on this server alone
      expect(decisions.filter((d) => d.allowed)).toHaveLength(2 * counts.localShare(20));
      // stalled once the exchange itself (started up to a gap after the first decision asked) is past the stall time
      await vi.advanceTimersByTimeAsync(300);
      expect(counts.stalled).toBe(true);
      frozen = false;
      for (const resolve of waiting.splice(0)) resolve();
      await vi.advanceTimersByTimeAsync(300);
      expect(counts.stalled).toBe(false);
      expect(stalls).toEqual([true, false]);
      expect(counts.stalledSeconds).toBeGreaterThan(0.2);
    } finally {
      frozen = false;
      for (const resolve of waiting.splice(0)) resolve();
      vi.useRealTimers();
      await counts.stop();
    }
  });

  test('a connection that stops answering mid-exchange is replaced within two seconds', async () => {
    const url = new URL(app.authenticatorUrl);
    const proxy = await startStallingProxy({ host: url.hostname, port: Number(url.port) });
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const pool = new pg.Pool({ connectionString: url.toString(), max: 1, connectionTimeoutMillis: REPLACE_MS });
    pool.on('error', () => {});
    const counts = DeploymentCounts.inDatabase(pool);
    try {
      await counts.start();
      expect(counts.stalled).toBe(false);
      expect(proxy.opened).toBe(1);
      // the link freezes: nothing forwarded, nothing closed
      proxy.stallOpenConnections();
      const frozenAt = Date.now();
      // a request's exchange meets the frozen link
      expect(await counts.exchanged()).toBe(false);
      // stalled once the exchange itself (started up to a gap after the request asked) is past the stall time
      await new Promise((r) => setTimeout(r, 50));
      expect(counts.stalled).toBe(true);
      // the link stays frozen: only the exchange's own deadline can replace the connection (TCP would take minutes)
      while (counts.stalled && Date.now() - frozenAt < 10 * REPLACE_MS) await new Promise((r) => setTimeout(r, 50));
      expect(counts.stalled).toBe(false);
      // a new connection answered; the deadline that replaced it is the contract's two seconds at most
      expect(proxy.opened).toBe(2);
      expect(REPLACE_MS).toBeLessThanOrEqual(2_000);
    } finally {
      await counts.stop();
      await proxy.close();
      await pool.end();
    }
  });
});
