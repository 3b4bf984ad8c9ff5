// `npm run test:fuzz`: HTTP fuzzing from the OpenAPI document at full size:
// 20,000 generated requests (FUZZ_RUNS overrides; FUZZ_SEED fixes the seed,
// printed either way), every operation reached, zero 5xx, every error in SPEC
// §7's shape, and the server alive with its database after.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from '../harness.ts';
import { runFuzz, type FuzzCounters } from '../fuzz/fuzz.ts';

const runs = Number(process.env.FUZZ_RUNS ?? 20_000);
const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Date.now() % 2 ** 31;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

const summary = (c: FuzzCounters, started: number) => {
  const perOperation = Object.values(c.byOperation);
  return `${c.requests} requests, ${c.serverErrors} 5xx, statuses ${JSON.stringify(c.byStatus)}, ${perOperation.length} operations (each reached ${Math.min(...perOperation)} to ${Math.max(...perOperation)} times) in ${((Date.now() - started) / 1000).toFixed(1)} s`;
};

test(`${runs} fuzzed requests from the OpenAPI document: zero 5xx, every error in SPEC §7's shape (seed printed)`, async () => {
  console.log(`HTTP fuzzing: seed ${seed}, ${runs} requests`);
  const started = Date.now();
  const counters = await runFuzz(app, { numRuns: runs, seed, progress: (c) => console.log(`  … ${summary(c, started)}`) });
  console.log(`HTTP fuzzing passed: ${summary(counters, started)}`);
  expect(counters.requests).toBe(runs);
  expect(counters.serverErrors).toBe(0);
  expect(
    Object.entries(counters.byOperation)
      .filter(([, n]) => n === 0)
      .map(([id]) => id),
  ).toEqual([]);
  expect((await app.get('/healthz')).status).toBe(200);
  expect((await app.get('/readyz')).status).toBe(200);
});
