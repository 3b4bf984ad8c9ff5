// `node bench/pair.ts --a <tree> --b <tree> [--path /v1/users/me | --graphql] [--rounds 10] [--seconds 3]`
//
// Two trees (or one tree twice, with --a-env/--b-env switching something) measured
// in pairs: both servers run at once on the bench's data (.rowgate-bench/, loaded
// by `npm run bench`), and wrk drives one then the other, alternating which goes
// first, so that both see the same minute of this shared machine. Prints each
// round's req/s and server CPU per request, and the median of B ÷ A: on this
// machine two runs of one tree a minute apart differ by up to 10 %, and a
// difference smaller than that shows only this way (docs/performance.md).
//
// A tree is a checkout with the project's node_modules (a `git worktree` with a
// symlink to this one's is enough); its migrations may be older than the bench
// database's, which only ever gains them.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { embeddedUrl, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { projectRoot } from '../src/db/setup.ts';
import { benchUsers, ensureOrderCounts, issueSessions } from './data.ts';
import { processTree, readProc } from './process-tree.ts';

const { values: args } = parseArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    'a-env': { type: 'string', default: '' },
    'b-env': { type: 'string', default: '' },
    path: { type: 'string', default: '/v1/users/me' },
    graphql: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '3' },
    scale: { type: 'string', default: '1m' },
  },
});
if (!args.a || !args.b)
  throw new Error('usage: node bench/pair.ts --a <tree> --b <tree> [--path P | --graphql] [--rounds N] [--seconds S]');

const db = await openEmbeddedDatabase({ home: path.join(projectRoot, '.rowgate-bench'), exclusive: false, log: (l) => console.error(l) });
const ownerUrl = embeddedUrl(db.state, 'owner', `bench_${args.scale}`);
await ensureOrderCounts(ownerUrl, (l) => console.error(l));
const secret = randomBytes(32).toString('base64url');
const { small } = await issueSessions(ownerUrl, await benchUsers(ownerUrl), secret);

// the bench's GraphQL document: the page of 50 orders with totalCount (bench/run.ts)
const lua = path.join(mkdtempSync(path.join(tmpdir(), 'rowgate-pair-')), 'graphql.lua');
const document = JSON.stringify({
  query:
    '{ allOrders(first: 50, orderBy: [CREATED_AT_DESC, PRIMARY_KEY_DESC]) { totalCount nodes { id organizationId customerId productId amount currency status createdAt updatedAt } } }',
});
writeFileSync(lua, `wrk.method = "POST"\nwrk.body = ${JSON.stringify(document)}\n`);

/** A tree's `npm start` node arguments (its V8 memory settings included): each tree runs as its own npm start would. */
const startArgs = (tree: string) =>
  JSON.parse(readFileSync(path.join(path.resolve(tree), 'package.json'), 'utf8'))
    .scripts.start.split(/\s+/)
    .slice(1) as string[];
const envOf = (list: string) =>
  Object.fromEntries(
    list
      .split(/\s+/)
      .filter(Boolean)
      .map((kv) => kv.split('=', 2) as [string, string]),
  );

async function start(tree: string, port: number, extra: string) {
  const child = spawn(process.execPath, startArgs(tree), {
    cwd: path.resolve(tree),
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      DATABASE_URL: ownerUrl,
      AUTH_DATABASE_URL: embeddedUrl(db.state, 'authenticator', `bench_${args.scale}`, db.socketDir),
      ROWGATE_SECRET: secret,
      NODE_ENV: 'production',
      PORT: String(port),
      ROWGATE_RATE_LIMIT: '1000000',
      ROWGATE_ANONYMOUS_RATE_LIMIT: '1000000',
      ...envOf(extra),
    },
  });
  for (let i = 0; i < 120; i++) {
    if (
      await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return child;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${tree}: not ready on port ${port}`);
}

/** utime and stime of the server and its descendants, in clock ticks (1/100 s) */
const cpuTicks = (pid: number) => {
  let user = 0;
  let system = 0;
  for (const each of processTree(pid)) {
    const fields = readProc(each, 'stat').split(') ')[1]?.split(' ') ?? [];
    user += Number(fields[11] ?? 0);
    system += Number(fields[12] ?? 0);
  }
  return { user, system };
};

function wrk(port: number, seconds: number) {
  const target = args.graphql
    ? ['-H', 'content-type: application/json', '-s', lua, `http://127.0.0.1:${port}/graphql`]
    : [`http://127.0.0.1:${port}${args.path}`];
  const out = spawnSync('wrk', ['-t1', '-c8', `-d${seconds}s`, '-H', `cookie: rowgate_session=${small}`, ...target], {
    encoding: 'utf8',
  }).stdout;
  if (/Non-2xx/.test(out)) throw new Error(`failed requests:\n${out}`);
  return Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
}

/** The p-quantile of values, interpolated between the two nearest */
function quantile(values: readonly number[], p: number): number {
  const sorted = values.toSorted((x, y) => x - y);
  const at = (sorted.length - 1) * p;
  const below = sorted[Math.floor(at)]!;
  return below + (sorted[Math.ceil(at)]! - below) * (at % 1);
}

/** Where the median of rounds like these falls 90 % of the time: 2,000 resamples, a fixed seed (the same rounds, the same interval) */
function medianInterval(values: readonly number[]): [number, number] {
  let seed = 2_463_534_242;
  const random = () => {
    // xorshift32
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  const medians = Array.from({ length: 2_000 }, () =>
    quantile(
      values.map(() => values[Math.floor(random() * values.length)]!),
      0.5,
    ),
  );
  return [quantile(medians, 0.05), quantile(medians, 0.95)];
}

function measure(pid: number, port: number) {
  const before = cpuTicks(pid);
  const requests = wrk(port, Number(args.seconds));
  const after = cpuTicks(pid);
  const us = (ticks: number) => Math.round((ticks * 10_000) / requests);
  const user = us(after.user - before.user);
  const system = us(after.system - before.system);
  return { rps: Math.round(requests / Number(args.seconds)), cpu: `${user + system} µs (user ${user}, system ${system})` };
}

const a = await start(args.a, 8111, args['a-env']!);
const b = await start(args.b, 8112, args['b-env']!);
try {
  wrk(8111, 3);
  wrk(8112, 3);
  const ratios: number[] = [];
  for (let round = 1; round <= Number(args.rounds); round++) {
    const first = round % 2 === 1;
    const x = first ? measure(a.pid!, 8111) : undefined;
    const y = measure(b.pid!, 8112);
    const xa = x ?? measure(a.pid!, 8111);
    ratios.push(y.rps / xa.rps);
    console.log(`round ${round}: A ${xa.rps} req/s ${xa.cpu} | B ${y.rps} req/s ${y.cpu} | B/A ${(y.rps / xa.rps).toFixed(3)}`);
  }
  console.log(`median B/A ${quantile(ratios, 0.5).toFixed(3)} over ${ratios.length} rounds`);
  // how far the median can be trusted: rounds of one pair differ by up to 40 % on this machine
  const geometricMean = Math.exp(ratios.reduce((sum, r) => sum + Math.log(r), 0) / ratios.length);
  const [low, high] = medianInterval(ratios);
  console.log(
    `quartiles ${quantile(ratios, 0.25).toFixed(3)}–${quantile(ratios, 0.75).toFixed(3)}, geometric mean ${geometricMean.toFixed(3)}, ` +
      `90 % bootstrap interval of the median ${low.toFixed(3)}–${high.toFixed(3)}`,
  );
} finally {
  await Promise.all([a, b].map((child) => new Promise((exited) => (child.once('exit', exited), child.kill('SIGTERM')))));
  await db.stop(); // when this run started the cluster
}
