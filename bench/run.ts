// `npm run bench [-- --quick] [-- --json FILE] [-- --scales 100k,1m,10m]`
//
// Measures, in one run on this machine: the REST API against pgbench running the
// API's own SQL (the database ceiling), pgbench running the straightforward SQL
// (initPlan policy, ORDER BY … LIMIT, count(*)), PostGraphile asking for the same
// page, and a bare Express route (the HTTP ceiling). Writes bench/results/<date>.json
// and .md, and with --json FILE the summary {scenarios, ratios}.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { AUTHENTICATE } from '../src/auth/authenticate.ts';
import { ensureDatabase, ensureRoles, migrateDatabase, projectRoot } from '../src/db/setup.ts';
import { embeddedUrl, freePort, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { listStatement, Where } from '../src/resources/list-statement.ts';
import { orderListSpec } from '../src/resources/orders.ts';
import { hashToken } from '../src/auth/tokens.ts';
import { ME } from '../src/resources/users.ts';
import { benchUsers, ensureOrderCounts, isLoaded, issueSessions, load, SCALES, type Scale } from './data.ts';

/** The API's authentication statement for pgbench: its credential as pgbench variables, a request id as the server sets one. */
const authenticateForPgbench = () =>
  AUTHENTICATE.replace('$1', ':kind').replace('$2', ':hash').replace('$3', "'bench-request-id'").replace(/\s+/g, ' ').trim();

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    scales: { type: 'string' },
    duration: { type: 'string' },
  },
});

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
  /** of the median run */
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** every run's rps, in order */
  runs_rps?: number[];
}

/** The run with the median rps, and every run's rps. */
function median(name: string, runs: Omit<Scenario, 'name'>[]): Scenario {
  const sorted = [...runs].sort((a, b) => a.rps - b.rps);
  const middle = sorted[Math.floor(sorted.length / 2)]!;
  const scenario = { name, rps: middle.rps, p50_ms: middle.p50_ms, p99_ms: middle.p99_ms, runs_rps: runs.map((r) => Math.round(r.rps)) };
  log(
    `  ${name}: ${scenario.rps.toFixed(0)}/s (runs ${scenario.runs_rps.join(', ')}), p50 ${scenario.p50_ms} ms, p99 ${scenario.p99_ms} ms`,
  );
  scenarios.push(scenario);
  return scenario;
}
const scenarios: Scenario[] = [];
const extra: Record<string, number> = {};

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

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** wrk's latency text ("812.00us", "4.28ms", "1.02s") in milliseconds */
function wrkMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(text.trim());
  if (!m) throw new Error(`unreadable wrk latency ${text}`);
  const value = Number(m[1]) * (m[2] === 'us' ? 0.001 : m[2] === 's' ? 1000 : 1);
  return Math.round(value * 100) / 100;
}

/**
 * An HTTP scenario, driven by wrk (Debian's package): written in C, it takes
 * ~25 µs of CPU a request where autocannon took ~100 µs, on the two cores the
 * server and PostgreSQL share. `sample` runs every 250 ms while it measures.
 */
async function http(
  name: string,
  options: { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string; connections?: number },
  sample?: () => void,
): Promise<Scenario> {
  const dir = mkdtempSync(path.join(tmpdir(), 'rowgate-wrk-'));
  try {
    const args = ['-t1', `-c${options.connections ?? CONNECTIONS}`, '--latency', '--timeout', '10s'];
    for (const [k, v] of Object.entries(options.headers ?? {})) args.push('-H', `${k}: ${v}`);
    if (options.method === 'POST') {
      const script = path.join(dir, 'post.lua');
      writeFileSync(script, `wrk.method = "POST"\nwrk.body = ${JSON.stringify(options.body ?? '')}\n`);
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
    // Warm-up: prepared statements, pools, and V8's optimised code, which takes
    // thousands of requests: after 2 s, four 8 s runs in a row measured 2,295 →
    // 2,345 → 2,390 → 2,422 req/s on the orders page.
    await run(5);
    const runs = [];
    for (let i = 0; i < REPEATS; i++) {
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
      runs.push({ rps, p50_ms: wrkMs(p50), p99_ms: wrkMs(p99) });
    }
    return median(name, runs);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** pgbench with a script of `:name` variables (prepared), -c4 -j2; tps and latency percentiles from its log. */
function pgbench(name: string, url: string, script: string, variables: Record<string, string>): Scenario {
  const dir = mkdtempSync(path.join(tmpdir(), 'rowgate-pgbench-'));
  try {
    writeFileSync(path.join(dir, 'script.sql'), script);
    const defines = Object.entries(variables).flatMap(([k, v]) => ['-D', `${k}=${v}`]);
    const runs = [];
    for (let i = 0; i < REPEATS; i++) {
      const prefix = `log${i}`;
      const output = execFileSync(
        'pgbench',
        [
          '-n',
          '-c',
          '4',
          '-j',
          '2',
          '-T',
          String(DURATION),
          '-M',
          'prepared',
          '-f',
          path.join(dir, 'script.sql'),
          '-l',
          '--log-prefix',
          path.join(dir, prefix),
          ...defines,
          url,
        ],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const tps = Number(/tps = ([\d.]+)/.exec(output)?.[1]);
      const latencies = readdirSync(dir)
        .filter((f) => f.startsWith(`${prefix}.`))
        .flatMap((f) => readFileSync(path.join(dir, f), 'utf8').trim().split('\n'))
        .map((line) => Number(line.split(' ')[2]) / 1000)
        .sort((a, b) => a - b);
      const at = (q: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]! * 100) / 100;
      runs.push({ rps: tps, p50_ms: at(0.5), p99_ms: at(0.99) });
    }
    return median(name, runs);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `$n` placeholders → pgbench `:pn` variables. */
function toPgbench(text: string, values: unknown[]) {
  const variables: Record<string, string> = {};
  for (const [i, v] of values.entries()) variables[`p${i + 1}`] = Array.isArray(v) ? `{${v.join(',')}}` : String(v);
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
    for (const scale of scales) {
      await benchScale(scale, db.state, db.socketDir, superuser, children, p50ByScale);
    }
  } finally {
    for (const child of children) await stopProcess(child);
    if (db.startedHere) await db.stop();
  }
  const find = (name: string) => scenarios.find((s) => s.name === name);
  const ratio = (a?: Scenario, b?: Scenario) => (a && b ? Math.round((a.rps / b.rps) * 100) / 100 : null);
  const main = scales[scales.length - 1]!.name;
  const ratios: Record<string, number | null> = {
    rest_vs_sql: ratio(find(`${main}/rest_orders_small_user`), find(`${main}/sql_api_orders_small_user`)),
    rest_vs_sql_big_user: ratio(find(`${main}/rest_orders_big_user`), find(`${main}/sql_api_orders_big_user`)),
    sql_vs_naive: ratio(find(`${main}/sql_api_orders_big_user`), find(`${main}/sql_naive_orders_big_user`)),
    sql_vs_naive_small_user: ratio(find(`${main}/sql_api_orders_small_user`), find(`${main}/sql_naive_orders_small_user`)),
    rest_vs_graphql: ratio(find(`${main}/rest_orders_small_user`), find(`${main}/graphql_orders_small_user`)),
    // issue 12's target: a GraphQL page of 50 orders with totalCount against REST's page, same user, same run
    graphql_vs_rest: ratio(find(`${main}/graphql_orders_small_user`), find(`${main}/rest_orders_small_user`)),
    me_vs_bare: ratio(find(`${main}/rest_users_me`), find('bare_express')),
    // the database alone, on GET /v1/users/me's transaction, against the same HTTP ceiling
    me_sql_vs_bare: ratio(find(`${main}/sql_users_me`), find('bare_express')),
    // without the answer cache: the REST endpoint against the database alone on its transaction
    me_uncached_vs_sql: ratio(find(`${main}/rest_users_me_uncached`), find(`${main}/sql_users_me`)),
    rss_mb_at_64_connections: extra.rss_mb_at_64_connections ?? null,
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
    ...scenarios.map((s) => `| ${s.name} | ${s.rps.toFixed(0)} | ${s.p50_ms} | ${s.p99_ms} | ${s.runs_rps?.join(', ') ?? ''} |`),
    '',
    '| ratio | value |',
    '|---|---:|',
    ...Object.entries(ratios).map(([k, v]) => `| ${k} | ${v} |`),
  ].join('\n');
  writeFileSync(path.join(results, `${stamp}.md`), `# Benchmark ${meta.date}\n\n${JSON.stringify(meta)}\n\n${table}\n`);
  if (args.json) writeFileSync(args.json, `${JSON.stringify(summary, null, 2)}\n`);
  console.log(table);
}

async function benchScale(
  scale: Scale,
  state: Parameters<typeof embeddedUrl>[0],
  socketDir: string | null,
  superuser: string,
  children: ChildProcess[],
  p50ByScale: Record<string, number>,
) {
  const database = `bench_${scale.name}`;
  await ensureDatabase(superuser, database);
  const ownerUrl = embeddedUrl(state, 'owner', database);
  // the server's connections and pgbench's take the same way: the socket, as `npm start` does
  const authenticatorUrl = embeddedUrl(state, 'authenticator', database, socketDir);
  await migrateDatabase(ownerUrl);
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
  const secret = randomBytes(32).toString('base64url');
  const sessions = await issueSessions(ownerUrl, await benchUsers(ownerUrl), secret);

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

  // the database ceiling: the API's own statements for GET /v1/orders/?limit=50, and the straightforward ones
  const page = listStatement(orderListSpec, { page: 1, limit: 50 }, new Where());
  for (const who of ['small', 'big'] as const) {
    const hash = `\\x${hashToken(secret, sessions[who]!).toString('hex')}`;
    const list = toPgbench(page.text, page.values);
    const auth = authenticateForPgbench();
    const variables = { kind: 'web_session', hash, ...list.variables };
    pgbench(`${scale.name}/sql_api_orders_${who}_user`, authenticatorUrl, `begin;\n${auth};\n${list.text};\ncommit;\n`, variables);
    pgbench(
      `${scale.name}/sql_naive_orders_${who}_user`,
      authenticatorUrl,
      `begin;\n${auth};\n${NAIVE_LIST};\n${NAIVE_COUNT};\ncommit;\n`,
      { kind: 'web_session', hash },
    );
    const rest = await http(`${scale.name}/rest_orders_${who}_user`, {
      url: `${base}/v1/orders/?limit=50`,
      headers: { cookie: `rowgate_session=${sessions[who]}` },
    });
    if (who === 'small') p50ByScale[scale.name] = rest.p50_ms;
  }
  const graphqlQuery = JSON.stringify({
    query: `{ allOrders(first: 50, orderBy: [CREATED_AT_DESC, PRIMARY_KEY_DESC]) { totalCount nodes { id organizationId customerId productId amount currency status createdAt updatedAt } } }`,
  });
  const probe = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: `rowgate_session=${sessions.small}` },
    body: graphqlQuery,
  });
  const probeBody = (await probe.json()) as { errors?: unknown; data?: { allOrders?: { nodes: unknown[] } } };
  if (probe.ok && !probeBody.errors && probeBody.data?.allOrders?.nodes.length === 50) {
    await http(`${scale.name}/graphql_orders_small_user`, {
      url: `${base}/graphql`,
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `rowgate_session=${sessions.small}` },
      body: graphqlQuery,
    });
  } else {
    log(`  graphql: skipped, the probe query failed: ${JSON.stringify(probeBody).slice(0, 300)}`);
  }
  // GET /v1/users/me's own transaction: what the database alone does per request
  const auth = authenticateForPgbench();
  pgbench(`${scale.name}/sql_users_me`, authenticatorUrl, `begin;\n${auth};\n${ME};\ncommit;\n`, {
    kind: 'web_session',
    hash: `\\x${hashToken(secret, sessions.small!).toString('hex')}`,
  });
  await http(`${scale.name}/rest_users_me`, { url: `${base}/v1/users/me`, headers: { cookie: `rowgate_session=${sessions.small}` } });

  let peak = 0;
  await http(
    `${scale.name}/rest_orders_small_user_64_connections`,
    { url: `${base}/v1/orders/?limit=50`, headers: { cookie: `rowgate_session=${sessions.small}` }, connections: 64 },
    () => (peak = Math.max(peak, rssMb(server.pid!))),
  );
  extra.rss_mb_at_64_connections = Math.round(Math.max(extra.rss_mb_at_64_connections ?? 0, peak));
  log(`  server RSS peak at 64 connections: ${extra.rss_mb_at_64_connections} MB`);
  await stopProcess(server);

  // GET /v1/users/me asked of the database every time: a server without the answer cache
  const uncached = await startServer({ ROWGATE_ANSWER_CACHE_SECONDS: '0' });
  await http(`${scale.name}/rest_users_me_uncached`, {
    url: `${uncached.url}/v1/users/me`,
    headers: { cookie: `rowgate_session=${sessions.small}` },
  });
  await stopProcess(uncached.child);

  if (!scenarios.some((s) => s.name === 'bare_express')) {
    const barePort = await freePort();
    const bare = startProcess(['bench/bare-server.ts', String(barePort)], {});
    children.push(bare);
    await waitFor(`http://127.0.0.1:${barePort}/bare`);
    await http('bare_express', { url: `http://127.0.0.1:${barePort}/bare` });
    await stopProcess(bare);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
