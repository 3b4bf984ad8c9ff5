// HTTP fuzzing from the OpenAPI document, the fixed-seed slice `npm
// test` runs: generated valid and invalid requests for every operation; zero
// 5xx, every error in SPEC §7's shape, the server alive after. `npm run
// test:fuzz` runs 20,000 requests.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';
import { runFuzz } from './fuzz/fuzz.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

test('1,500 fuzzed requests: no 5xx, every error in the shape of SPEC §7 (fixed seed)', async () => {
  const counters = await runFuzz(app, { numRuns: 1500, seed: 20261121 });
  console.log(JSON.stringify(counters.byStatus));
  expect(counters.requests).toBe(1500);
  expect(counters.serverErrors).toBe(0);
  // every operation was reached
  expect(
    Object.entries(counters.byOperation)
      .filter(([, n]) => n === 0)
      .map(([id]) => id),
  ).toEqual([]);
  // and the server still answers, with its database
  expect((await app.get('/healthz')).status).toBe(200);
  expect((await app.get('/readyz')).status).toBe(200);
}, 180_000);
