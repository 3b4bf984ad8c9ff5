// Tenant isolation, the fixed-seed slice `npm test` runs: generated
// worlds of organizations, users, memberships (some removed), credentials with
// random scopes and resources; every REST probe, the GraphQL reads and an
// analyst's SQL reads and an organization's SQL login agree with the reference model
// (test/props/model.ts).
// `npm run test:props` runs the same properties for 10,000 cases.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';
import { runGraphqlScopes, runIsolation } from './props/isolation.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

test('REST, GraphQL and analyst reads agree with the isolation model (200 cases, fixed seed)', async () => {
  const counters = await runIsolation(app, { numRuns: 200, seed: 20261121 });
  console.log(JSON.stringify(counters));
  expect(counters.cases).toBe(200);
}, 120_000);

test("GraphQL reads honour the token's read scopes (SPEC §3) (100 cases, fixed seed)", async () => {
  const counters = await runGraphqlScopes(app, { numRuns: 100, seed: 20261121 });
  expect(counters.cases).toBe(100);
}, 120_000);
