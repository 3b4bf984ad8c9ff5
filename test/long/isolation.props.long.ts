// `npm run test:props`: the tenant-isolation properties at full size. 10,000
// generated worlds (PROPS_RUNS overrides; PROPS_SEED fixes the seed, which is
// printed either way so a failure can be replayed), each with REST probes, a
// GraphQL read of every collection, an analyst's SQL read of every table and an
// organization SQL login's, all compared with the reference model (test/props/model.ts).
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from '../harness.ts';
import { runGraphqlScopes, runIsolation, type Counters } from '../props/isolation.ts';

const runs = Number(process.env.PROPS_RUNS ?? 10_000);
const seed = process.env.PROPS_SEED ? Number(process.env.PROPS_SEED) : Date.now() % 2 ** 31;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

const summary = (c: Counters, started: number) =>
  `${c.cases} cases, ${c.probes} REST probes ${JSON.stringify(c.byStatus)}, ${c.graphqlRequests} GraphQL reads, ${c.analystQueries} analyst reads, ${c.sqlLoginQueries} SQL login reads in ${((Date.now() - started) / 1000).toFixed(1)} s`;

test(`tenant isolation: ${runs} cases through REST, GraphQL and an analyst session (seed printed)`, async () => {
  console.log(`isolation property: seed ${seed}, ${runs} cases`);
  const started = Date.now();
  const counters = await runIsolation(app, {
    numRuns: runs,
    seed,
    progress: (c) => console.log(`  … ${summary(c, started)}`),
  });
  console.log(`isolation property passed: ${summary(counters, started)}`);
  expect(counters.cases).toBe(runs);
});

test(`GraphQL reads honour the token's read scopes: ${Math.ceil(runs / 5)} cases (seed printed)`, async () => {
  const n = Math.ceil(runs / 5);
  console.log(`GraphQL read-scope property: seed ${seed}, ${n} cases`);
  const started = Date.now();
  const counters = await runGraphqlScopes(app, { numRuns: n, seed });
  console.log(`GraphQL read-scope property passed: ${summary(counters, started)}`);
  expect(counters.cases).toBe(n);
});
