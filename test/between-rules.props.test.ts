// SPEC §3, §20, §21, §22 between the rules, the fixed-seed slice `npm test` runs: random
// steps of four users over two organizations (roles, assignments, invitations, organization
// tokens minted and used, demotions, removals, leaving, deleting a user, token lifetime caps),
// some pairs at once, with the invariants of test/props/between-rules.ts checked after each
// step. `npm run test:props` runs 10,000 cases.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';
import { coverage, runBetweenRules } from './props/between-rules.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ log: () => {} });
});
afterAll(() => app?.close());

test('no path around a rule: 60 cases of random steps, some pairs at once (fixed seed)', async () => {
  const counters = await runBetweenRules(app, { numRuns: 60, seed: 20261207 });
  console.log(`between the rules:\n  ${coverage(counters)}`);
  expect(counters.cases).toBe(60);
}, 120_000);
