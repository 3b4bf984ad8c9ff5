// `npm run test:fuzz`: GraphQL fuzzing from the introspected schema at full
// size: 6,000 generated documents (GRAPHQL_FUZZ_RUNS
// overrides; GRAPHQL_FUZZ_SEED, or FUZZ_SEED, fixes the seed, printed either
// way; GRAPHQL_FUZZ_ONLY=i,j,… sends only those documents of the seed;
// GRAPHQL_FUZZ_SKIP_KINDS=fragments,… generates but does not send documents of
// those kinds, while a bug they find is open), valid
// and hostile, anonymous and under every kind of credential. Zero 5xx, every
// error in `errors` with an extensions.code (none InternalServerError), no
// answer slower than the time limit, the process's RSS within 1 GiB of its size
// at the start, /readyz answering every probe (one a second, 2 s timeout), and
// the server alive with its database after.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp } from '../harness.ts';
import { runGraphqlFuzz, summary } from '../fuzz/graphql-fuzz.ts';

const GiB = 1024 ** 3;
const env = process.env;
const only = env.GRAPHQL_FUZZ_ONLY ? env.GRAPHQL_FUZZ_ONLY.split(',').map(Number) : undefined;
const runs = only?.length ?? Number(env.GRAPHQL_FUZZ_RUNS ?? 6_000);
const seedText = env.GRAPHQL_FUZZ_SEED ?? env.FUZZ_SEED;
const seed = seedText ? Number(seedText) : Date.now() % 2 ** 31;

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

test(`${runs} fuzzed GraphQL documents: zero 5xx, every error with a code, RSS bounded, /readyz answering (seed printed)`, async () => {
  console.log(`GraphQL fuzzing: seed ${seed}, ${runs} documents (replay: GRAPHQL_FUZZ_SEED=${seed} npm run test:fuzz)`);
  const stats = await runGraphqlFuzz(app, {
    seed,
    documents: runs,
    only,
    skipKinds: env.GRAPHQL_FUZZ_SKIP_KINDS?.split(','),
    concurrency: Number(env.GRAPHQL_FUZZ_CONCURRENCY ?? 3),
    timeoutMs: 30_000,
    progress: (s) => console.log(`  … ${summary(s)}`),
  });
  console.log(`GraphQL fuzzing (seed ${seed}) done: ${summary(stats)}`);
  for (const slow of stats.slow.slice(0, 10)) console.log(`  slow: document ${slow.index} (${slow.kind}) ${slow.ms} ms: ${slow.request}`);
  expect(stats.documents + stats.skipped).toBe(runs);
  // every property said, not only the first that fails
  expect
    .soft(
      [...stats.distinctProblems.values()].map(
        ({ count, first }) => `${count}× like document ${first.index} (${first.kind}): ${first.problem}`,
      ),
    )
    .toEqual([]);
  if (!only) expect.soft(stats.executed / stats.documents).toBeGreaterThan(0.3);
  expect.soft(stats.rss.max - stats.rss.start, 'RSS growth').toBeLessThan(GiB);
  expect.soft(stats.readyz.failures, '/readyz probes that failed (with the documents in flight)').toEqual([]);
  expect((await app.get('/healthz')).status).toBe(200);
  expect((await app.get('/readyz')).status).toBe(200);
});
