// `npm run test:props`: the check property of SPEC §20 at full size. 10,000
// generated cases (PROPS_RUNS overrides; PROPS_SEED fixes the seed, which is printed
// either way so a failure can be replayed), each a credential and 1 to 3 operations
// asked of POST /v1/authorization/check and made for real (test/props/check.ts).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from '../harness.ts';
import { type Counters, LEFT_OUT, OPERATIONS, runCheck } from '../props/check.ts';

const runs = Number(process.env.PROPS_RUNS ?? 10_000);
const seed = process.env.PROPS_SEED ? Number(process.env.PROPS_SEED) : Date.now() % 2 ** 31;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

const summary = (c: Counters, started: number) =>
  `${c.cases} cases, ${c.comparisons} comparisons ${JSON.stringify(c.byStatus)}, ${c.refused} items refused by the check (asserted), in ${((Date.now() - started) / 1000).toFixed(1)} s`;

test(`a check answers what the real request answers: ${runs} cases (seed printed)`, async () => {
  console.log(`check property: seed ${seed}, ${runs} cases, ${OPERATIONS.length} operations (left out: ${LEFT_OUT.join(', ')})`);
  const started = Date.now();
  const counters = await runCheck(app, { numRuns: runs, seed, progress: (c) => console.log(`  … ${summary(c, started)}`) });
  console.log(`check property passed: ${summary(counters, started)}`);
  expect(counters.cases).toBe(runs);
});
