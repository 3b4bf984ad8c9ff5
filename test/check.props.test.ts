// SPEC §20, the fixed-seed slice `npm test` runs: for generated subjects,
// credentials, scopes, roles and operations, POST /v1/authorization/check answers
// exactly the status, error and reason of the real request, and never a reason where
// the real request answers 404 (test/props/check.ts). `npm run test:props` runs
// 10,000 cases.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';
import { runCheck } from './props/check.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

test('a check answers what the real request answers (1000 cases, fixed seed)', async () => {
  const counters = await runCheck(app, { numRuns: 1000, seed: 20261121 });
  console.log(JSON.stringify(counters));
  expect(counters.cases).toBe(1000);
}, 120_000);
