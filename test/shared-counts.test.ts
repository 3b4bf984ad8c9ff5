// The rate limits' counts a cluster's workers share (src/operating/shared-counts.ts),
// without processes: two workers' SharedCounts exchanging with one primary's
// count in this process, the same limiters (rate-limiter-flexible, in memory).
import { afterEach, describe, expect, test } from 'vitest';
import { RateLimits, WRONG_CODES_POLICY } from '../src/operating/rate-limit.ts';
import { countSpending, MAX_REPORT, SharedCounts, type Spent, type Standing } from '../src/operating/shared-counts.ts';

const QUOTA = 8;

/** A primary and two workers; what each exchange carried is kept */
function cluster() {
  const primary = countSpending(new RateLimits({ perCredential: QUOTA, perAddress: QUOTA, wrongCodesPerAddress: 4 }).counts());
  const exchanged: Spent[][] = [];
  const workers: SharedCounts[] = [];
  const worker = () => {
    const shared = new SharedCounts(async (spent) => {
      exchanged.push(structuredClone(spent));
      const standings = await primary(spent);
      // as the primary does (src/http/cluster.ts): the others learn of the keys this spending refused
      const refused = standings.filter(([policy, , , until]) => until > 0 || policy === WRONG_CODES_POLICY);
      for (const other of workers) if (other !== shared && refused.length) other.learn(refused);
      return standings;
    });
    workers.push(shared);
    return { shared, limits: new RateLimits({ perCredential: QUOTA, perAddress: QUOTA, wrongCodesPerAddress: 4, shared }) };
  };
  return { a: worker(), b: worker(), exchanged, workers };
}

let running: SharedCounts[] = [];
afterEach(() => {
  for (const shared of running) shared.stop();
  running = [];
});

const spend = async (limits: RateLimits, key: string, n: number) => {
  const allowed: boolean[] = [];
  for (let i = 0; i < n; i++) allowed.push((await limits.credential.consume(key)).allowed);
  return allowed;
};

describe('shared counts', () => {
  test('two workers that each stay within the allowance are refused once their sum is past it, and only for that key', async () => {
    const { a, b, workers } = cluster();
    running = workers;
    // the window (QUOTA) and the burst allowance (QUOTA): 2 × QUOTA a second for the server, not per worker;
    // each worker lets 1.5 × QUOTA through on its own counts
    const each = QUOTA + QUOTA / 2;
    expect(await spend(a.limits, 'k', each)).toEqual(Array(each).fill(true));
    await a.shared.sync();
    // a worker's batch is counted as its requests one by one: the window's, then the burst's, so not refused yet
    expect(a.shared.refusedUntil('default', 'k')).toBe(0);
    // the other worker's requests wait for the primary's count once it is a tenth ahead: past the allowance, refused
    expect(await spend(b.limits, 'k', each)).toEqual([...Array(2 * QUOTA - each).fill(true), ...Array(2 * each - 2 * QUOTA).fill(false)]);
    await b.shared.sync();
    const refusedA = await a.limits.credential.consume('k');
    const refusedB = await b.limits.credential.consume('k');
    expect([refusedA.allowed, refusedB.allowed]).toEqual([false, false]);
    expect(refusedA.reset).toBeGreaterThanOrEqual(1);
    expect((await a.limits.credential.consume('other')).allowed).toBe(true);
  });

  test('a worker lets no more than a tenth of a key through before the primary has counted it: its next request waits', async () => {
    const { a, exchanged, workers } = cluster();
    running = workers;
    // QUOTA / 10 rounds down to one: every request is counted before the next is decided
    await spend(a.limits, 'k', 3);
    expect(exchanged).toEqual([[['default', 'k', 1]], [['default', 'k', 1]]]);
    // requests decided at once, before any answer: one goes, the others wait for its count
    const decided = await Promise.all(Array.from({ length: 4 }, () => a.limits.credential.consume('k')));
    expect(decided.every((d) => d.allowed)).toBe(true);
    expect(exchanged.slice(2).every((report) => report.length === 1 && report[0]![2] === 1)).toBe(true);
  });

  test("the RateLimit field's remaining is the server's, less what this worker spent since", async () => {
    const { a, b, workers } = cluster();
    running = workers;
    await spend(b.limits, 'k', 5);
    await b.shared.sync();
    await spend(a.limits, 'k', 1);
    await a.shared.sync();
    // the primary counted 6 of QUOTA; this worker spent one more since
    expect((await a.limits.credential.consume('k')).remaining).toBe(QUOTA - 7);
  });

  test('a report carries at most MAX_REPORT keys; the rest go in the next, at once', async () => {
    const { a, exchanged, workers } = cluster();
    running = workers;
    for (let i = 0; i < MAX_REPORT + 500; i++) a.shared.spent('anonymous', `192.0.2.${i}`, 1);
    await a.shared.sync();
    await new Promise((resolve) => setImmediate(resolve));
    expect(exchanged.map((report) => report.length)).toEqual([MAX_REPORT, 500]);
  });

  test('wrong sign-in codes: the address refused by every worker once their sum reaches the allowance', async () => {
    const { a, b, workers } = cluster();
    running = workers;
    for (const shared of [a.shared, b.shared, a.shared, b.shared]) {
      shared.spent(WRONG_CODES_POLICY, '192.0.2.1', 1);
      await shared.sync();
    }
    expect(a.shared.refusedUntil(WRONG_CODES_POLICY, '192.0.2.1')).toBeGreaterThan(Date.now() + 14 * 60_000);
    expect(b.shared.refusedUntil(WRONG_CODES_POLICY, '192.0.2.1')).toBeGreaterThan(Date.now() + 14 * 60_000);
    expect(a.shared.refusedUntil(WRONG_CODES_POLICY, '192.0.2.2')).toBe(0);
  });

  test("a right code's point back lifts the address's refusal on every worker", async () => {
    const { a, b, workers } = cluster();
    running = workers;
    for (let i = 0; i < 4; i++) expect(await a.limits.reserveCode('192.0.2.9')).toBe(0);
    await a.shared.sync();
    expect(b.shared.refusedUntil(WRONG_CODES_POLICY, '192.0.2.9')).toBeGreaterThan(Date.now());
    expect(await b.limits.reserveCode('192.0.2.9')).toBeGreaterThan(Date.now());
    // the fourth attempt's code was right
    a.limits.refundCode('192.0.2.9');
    await a.shared.sync();
    expect(b.shared.refusedUntil(WRONG_CODES_POLICY, '192.0.2.9')).toBe(0);
    expect(await b.limits.reserveCode('192.0.2.9')).toBe(0);
    // that point taken again, once counted: refused everywhere
    await b.shared.sync();
    expect(await a.limits.reserveCode('192.0.2.9')).toBeGreaterThan(Date.now());
  });

  test('a primary that does not answer a report: the worker decides alone, reporting nothing, until it answers again', async () => {
    const reports: Spent[][] = [];
    let answering = false;
    const silent = new SharedCounts(async (spent) => {
      reports.push(structuredClone(spent));
      return answering ? [] : undefined;
    });
    running = [silent];
    const limits = new RateLimits({ perCredential: QUOTA, perAddress: QUOTA, shared: silent });
    const decided = [];
    for (let i = 0; i < 2 * QUOTA; i++) decided.push((await limits.credential.consume('k')).allowed);
    // the local allowance (window and burst), decided without a report a request
    expect(decided).toEqual(Array(2 * QUOTA).fill(true));
    expect(reports.length).toBeLessThanOrEqual(2);
    // what it spent while the primary was silent is never reported: the next report only asks whether it is back
    await silent.sync();
    expect(reports.at(-1)).toEqual([]);
    answering = true;
    await silent.sync();
    await limits.address.consume('a');
    await silent.sync();
    expect(reports.at(-1)).toEqual([['anonymous', 'a', 1]]);
  });

  test('the primary ignores what is not a count (unknown policies, odd points, not an array)', async () => {
    const primary = countSpending(new RateLimits({ perCredential: QUOTA, perAddress: QUOTA }).counts());
    const odd = [
      ['nope', 'k', 1],
      ['default', 1, 1],
      ['default', 'k', 0],
      ['default', 'k', 1.5],
      ['default', 'k', -1],
      'x',
      null,
    ] as unknown as Spent[];
    expect(await primary(odd)).toEqual([]);
    expect(await primary('x' as unknown as Spent[])).toEqual([]);
    // a key with room is not named; one past half its window is, with what is left
    expect(await primary([['default', 'k', 2]])).toEqual([]);
    expect(await primary([['default', 'k', 3]])).toEqual([['default', 'k', QUOTA - 5, 0]] satisfies Standing[]);
  });

  test('a primary that does not answer loses that count and refuses nobody; what it says of keys is forgotten once stale', async () => {
    const silent = new SharedCounts(async () => undefined);
    running = [silent];
    silent.spent('default', 'k', QUOTA * 3);
    await silent.sync();
    expect(silent.refusedUntil('default', 'k')).toBe(0);
    silent.learn([['default', 'k', 3, 0]], Date.now());
    expect(silent.refusedUntil('default', 'k')).toBe(0);
    expect(silent.remaining('default', 'k')).toBe(3);
    expect(silent.remaining('default', 'k', Date.now() + 1_500)).toBeUndefined();
  });
});
