// `npm run test:props`: the between-the-rules property (test/props/between-rules.ts) at full
// size: 10,000 cases (PROPS_RUNS), each fresh users and organizations going through up to 8
// steps, some pairs at once, with every invariant checked after each step. The cases run in
// chunks of 500, each chunk with its own fixed seed (PROPS_SEED + its number) on a database of
// its own: a database that kept every case's users and organizations would slow each next case.
// PROPS_SHARD=i/n runs every n-th chunk from the i-th (two processes on two cores: 0/2 and 1/2).
import { expect, test } from 'vitest';
import { startTestApp } from '../harness.ts';
import { type Counters, coverage, runBetweenRules } from '../props/between-rules.ts';

const runs = Number(process.env.PROPS_RUNS ?? 10_000);
const seed = Number(process.env.PROPS_SEED ?? 20261207);
const CHUNK = 500;
const [shard, shards] = (process.env.PROPS_SHARD ?? '0/1').split('/').map(Number) as [number, number];

const chunks = Array.from({ length: Math.ceil(runs / CHUNK) }, (_, k) => ({
  k,
  seed: seed + k,
  runs: Math.min(CHUNK, runs - k * CHUNK),
})).filter(({ k }) => k % shards === shard);

const summary = (c: Counters, started: number) => `${((Date.now() - started) / 1000).toFixed(1)} s:\n  ${coverage(c)}`;

test.each(chunks)('no path around a rule: chunk $k, $runs cases (seed $seed)', async (chunk) => {
  const app = await startTestApp({ log: () => {} });
  try {
    const started = Date.now();
    const counters = await runBetweenRules(app, { numRuns: chunk.runs, seed: chunk.seed });
    console.log(`between the rules, chunk ${chunk.k} (seed ${chunk.seed}) passed in ${summary(counters, started)}`);
    expect(counters.cases).toBe(chunk.runs);
  } finally {
    await app.close();
  }
});
