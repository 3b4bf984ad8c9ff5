// `npm run test:props`: the between-the-rules property (test/props/between-rules.ts) at full
// size. 10,000 cases with a fixed seed (PROPS_RUNS and PROPS_SEED override both), each fresh
// users and organizations on one shared database going through up to 8 steps, some pairs at
// once, with every invariant checked after each step.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from '../harness.ts';
import { type Counters, coverage, runBetweenRules } from '../props/between-rules.ts';

const runs = Number(process.env.PROPS_RUNS ?? 10_000);
const seed = Number(process.env.PROPS_SEED ?? 20261207);

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ log: () => {} });
});
afterAll(() => app?.close());

const summary = (c: Counters, started: number) => `${((Date.now() - started) / 1000).toFixed(1)} s:\n  ${coverage(c)}`;

test(`no path around a rule: ${runs} cases (seed ${seed})`, async () => {
  console.log(`between the rules: seed ${seed}, ${runs} cases`);
  const started = Date.now();
  const counters = await runBetweenRules(app, { numRuns: runs, seed, progress: (c) => console.log(`  … ${summary(c, started)}`) });
  console.log(`between the rules passed in ${summary(counters, started)}`);
  expect(counters.cases).toBe(runs);
});
