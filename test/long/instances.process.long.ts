// Many instances (SPEC §19), `npm run test:instances`: three server
// processes (`node src/main.ts`) on ONE database, started together (the
// migrations run once, under graphile-migrate's lock), with the configuration a
// deployment uses (DATABASE_URL, AUTH_DATABASE_URL, ROWGATE_SECRET). The npm
// script runs it twice: against its own embedded PostgreSQL, and through
// PgBouncer in transaction mode (scripts/test-pgbouncer.ts sets
// TEST_DATABASE_URL and TEST_PGBOUNCER_PORT; the webhook senders poll through
// it too).
//  - a change through one instance is seen through the others on their next
//    request, with or without the write's Rowgate-Consistency token;
//  - SIGTERM to one, under load on all three, loses no request of the others,
//    and every write acknowledged by any of them is in the database.
//  - webhooks (SPEC §17): with the delivery worker running in every instance,
//    each event of a burst created through all of them reaches a receiver in
//    this process once per attempt the database records (first attempts that
//    fail are retried, by whichever instance claims them), including while one
//    instance is sent SIGTERM mid-burst: its claimed attempts are finished or
//    left to the others, never made twice.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { generateToken, hashToken } from '../../src/auth/tokens.ts';
import { embeddedUrl, openEmbeddedDatabase, type EmbeddedDatabase } from '../../src/db/embedded.ts';
import { ensureDatabase, ensureRoles, hardenDatabase } from '../../src/db/setup.ts';
import { withDatabase } from '../database-server.ts';
import { call, seed, spawnServer, type Outcome, type Seeded, type SpawnedServer } from '../faults/server-process.ts';

const throughPgBouncer = process.env.TEST_PGBOUNCER_PORT !== undefined;
let embedded: EmbeddedDatabase | undefined;
let home: string | undefined;
let servers: SpawnedServer[] = [];
let ownerUrl: string;
let authenticatorUrl: string;
let secret: string;
let data: Seeded;
/** the environment the three servers were started with */
let env: Record<string, string>;

beforeAll(async () => {
  let superuserUrl = process.env.TEST_DATABASE_URL;
  if (!superuserUrl) {
    home = await mkdtemp(path.join(tmpdir(), 'rowgate-instances-'));
    embedded = await openEmbeddedDatabase({ home, exclusive: false });
    superuserUrl = embeddedUrl(embedded.state, 'superuser', 'postgres');
  }
  const passwords = { owner: randomBytes(18).toString('base64url'), authenticator: randomBytes(18).toString('base64url') };
  await ensureRoles(superuserUrl, passwords);
  const database = `rowgate_instances_${randomBytes(4).toString('hex')}`;
  await ensureDatabase(superuserUrl, database);
  await hardenDatabase(superuserUrl, database);
  ownerUrl = withDatabase(superuserUrl, database, { name: 'rowgate_owner', password: passwords.owner });
  authenticatorUrl = withDatabase(superuserUrl, database, { name: 'rowgate_authenticator', password: passwords.authenticator });
  const bounced = new URL(authenticatorUrl);
  if (throughPgBouncer) bounced.port = process.env.TEST_PGBOUNCER_PORT!;
  secret = randomBytes(32).toString('base64url');
  env = {
    DATABASE_URL: ownerUrl,
    AUTH_DATABASE_URL: bounced.toString(),
    ROWGATE_SECRET: secret,
    ROWGATE_POOL_SIZE: '4',
    ROWGATE_WEBHOOKS_ALLOW_LOOPBACK: '1',
    ROWGATE_PREPARED_STATEMENTS: throughPgBouncer && process.env.TEST_PGBOUNCER_STATEMENTS !== 'named' ? 'unnamed' : 'named',
  };
  const started = await Promise.allSettled([0, 1, 2].map(() => spawnServer(env)));
  servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  for (const s of started) if (s.status === 'rejected') throw s.reason;
  data = await seed({ ownerUrl, state: { secret } }, { products: 300, customers: 50, orders: 300 });
  console.error(`instances: 3 servers on ${database}${throughPgBouncer ? ', authenticator through PgBouncer' : ''}`);
});

afterAll(async () => {
  for (const server of servers) if (server.alive()) server.child.kill('SIGTERM');
  await Promise.all(servers.map((s) => s.exited));
  await embedded?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

/** A web session of a new user, made as the operator CLI makes one. */
async function webSession(name: string) {
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    const session = generateToken('web_session');
    const {
      rows: [user],
    } = await owner.query<{ id: string }>(`insert into rowgate.users (email, name) values ($1, $2) returning id`, [
      `instances-${randomBytes(4).toString('hex')}@example.com`,
      name,
    ]);
    await owner.query(`select rowgate_private.issue_user_session($1, $2, '1 day', null)`, [user!.id, hashToken(secret, session)]);
    return session;
  } finally {
    await owner.end();
  }
}

async function request(base: string, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
}

test('a change through one instance is seen through the others on their next request, token or not', async () => {
  const session = await webSession('Before');
  const cookie = { cookie: `rowgate_session=${session}` };
  for (const server of servers) {
    for (let i = 0; i < 2; i++) expect((await request(server.url, 'GET', '/v1/users/me', cookie)).body.name).toBe('Before');
  }
  for (let round = 0; round < 5; round++) {
    const writer = servers[round % 3]!;
    const patched = await request(writer.url, 'PATCH', '/v1/users/me', cookie, { name: `Name ${round}` });
    expect(patched.status).toBe(200);
    const token = patched.headers.get('rowgate-consistency');
    expect(token).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    for (const server of servers) {
      const me = await request(server.url, 'GET', '/v1/users/me', cookie);
      expect(me.body.name, `round ${round}, written through ${writer.url}, read through ${server.url}`).toBe(`Name ${round}`);
      const withToken = await request(server.url, 'GET', '/v1/users/me', { ...cookie, 'rowgate-consistency': token! });
      expect(withToken.body.name).toBe(`Name ${round}`);
    }
  }
  // signing out through one ends the session everywhere
  const out = await request(servers[1]!.url, 'POST', '/v1/auth/logout', cookie);
  expect(out.status).toBeLessThan(300);
  for (const server of servers) expect((await request(server.url, 'GET', '/v1/users/me', cookie)).status).toBe(401);
  // a product created through one is read through the others
  const bearer = { authorization: `Bearer ${data.token}` };
  const product = await request(servers[2]!.url, 'POST', '/v1/products/', bearer, {
    organization_id: data.organizationId,
    name: 'Everywhere',
    price_amount: 5,
    price_currency: 'usd',
  });
  expect(product.status).toBe(201);
  for (const server of servers) expect((await request(server.url, 'GET', `/v1/products/${product.body.id}`, bearer)).status).toBe(200);
});

test('webhooks: every attempt the database records is made once, across instances and through a SIGTERM', async () => {
  // a fourth instance, stopped mid-burst, so the three others stay for the next test
  const extra = await spawnServer(env);
  const instances = [...servers, extra];
  const seen = new Map<string, number>();
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const nth = (seen.get(id) ?? 0) + 1;
      seen.set(id, nth);
      // one event in four fails its first attempt: its retry is claimed by whichever instance comes first
      const failFirst = Number.parseInt(id.replace(/-/g, '').slice(-2), 16) % 4 === 0;
      res.writeHead(failFirst && nth === 1 ? 500 : 200).end('ok');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    const bearer = { authorization: `Bearer ${data.token}` };
    const created = await request(servers[0]!.url, 'POST', '/v1/webhook-endpoints/', bearer, {
      organization_id: data.organizationId,
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
      event_types: ['customer.created'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const BURST = 200;
    let made = 0;
    const burst = Array.from({ length: 8 }, async (_, w) => {
      for (let i = w; i < BURST; i += 8) {
        const alive = instances.filter((s) => s.alive());
        const through = alive[i % alive.length]!;
        const res = await request(through.url, 'POST', '/v1/customers/', bearer, {
          organization_id: data.organizationId,
          email: `hook-${i}-${randomBytes(3).toString('hex')}@example.com`,
        }).catch(() => null);
        // a request cut by the SIGTERM is sent again through another instance
        if (res?.status !== 201) i -= 8;
        else made++;
      }
    });
    while (made < BURST / 3) await new Promise((r) => setTimeout(r, 20));
    extra.child.kill('SIGTERM');
    expect((await extra.exited).code).toBe(0);
    await Promise.all(burst);

    // a request whose answer the SIGTERM cut may have committed: count the events the database holds
    const {
      rows: [{ events } = { events: 0 }],
    } = await owner.query<{ events: number }>(
      `select count(*)::int as events from rowgate.customers where organization_id = $1 and email like 'hook-%'`,
      [data.organizationId],
    );
    expect(events).toBeGreaterThanOrEqual(BURST);
    // every delivery ends succeeded: failed first attempts wait 5 s for their retry
    const deadline = Date.now() + 60_000;
    let deliveries: { event_id: string; status: string; attempts: number }[] = [];
    for (;;) {
      ({ rows: deliveries } = await owner.query(
        'select event_id, status, attempts from rowgate_private.webhook_deliveries where endpoint_id = $1',
        [created.body.id],
      ));
      if (deliveries.length === events && deliveries.every((d) => d.status === 'succeeded')) break;
      if (Date.now() > deadline)
        throw new Error(`deliveries not done: ${JSON.stringify(deliveries.filter((d) => d.status !== 'succeeded'))}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const { rows: duplicates } = await owner.query(
      'select delivery_id, attempt from rowgate.webhook_attempts where endpoint_id = $1 group by 1, 2 having count(*) > 1',
      [created.body.id],
    );
    expect(duplicates).toEqual([]);
    // the receiver got each event exactly as often as the database recorded an attempt
    expect(Object.fromEntries(seen)).toEqual(Object.fromEntries(deliveries.map((d) => [d.event_id, d.attempts])));
    expect(deliveries.filter((d) => d.attempts === 2).length).toBeGreaterThan(0);
    expect(deliveries.every((d) => d.attempts <= 2)).toBe(true);
    console.error(
      `instances, webhooks: ${events} events, ${seen.size} delivered, ${deliveries.filter((d) => d.attempts === 2).length} retried`,
    );
  } finally {
    await owner.end();
    receiver.closeAllConnections();
    receiver.close();
    if (extra.alive()) extra.child.kill('SIGTERM');
  }
});

test('SIGTERM to one instance under load loses no request of the others', async () => {
  const [a, b, stopped] = servers as [SpawnedServer, SpawnedServer, SpawnedServer];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 24 });
  const outcomes = new Map<SpawnedServer, (Outcome & { write: boolean })[]>(servers.map((s) => [s, []]));
  let running = true;
  const workers = servers.flatMap((server) =>
    Array.from({ length: 6 }, async (_, w) => {
      for (let i = 0; running; i++) {
        const write = (i + w) % 4 === 0;
        const outcome = write
          ? await call(agent, `${server.url}/v1/products/`, {
              method: 'POST',
              token: data.token,
              body: { organization_id: data.organizationId, name: `load ${w}-${i}`, price_amount: 1, price_currency: 'usd' },
            })
          : await call(agent, `${server.url}/v1/products/?limit=50&sorting=name`, { token: data.token });
        outcomes.get(server)!.push({ ...outcome, write });
        if (!server.alive()) break;
      }
    }),
  );
  await new Promise((r) => setTimeout(r, 1_500));
  const signalled = Date.now();
  stopped.child.kill('SIGTERM');
  const exit = await stopped.exited;
  await new Promise((r) => setTimeout(r, 1_500)); // the others keep serving
  running = false;
  await Promise.all(workers);
  agent.destroy();

  const summary = (server: SpawnedServer) => {
    const list = outcomes.get(server)!;
    const counts: Record<string, number> = {};
    for (const o of list) counts[String(o.status || o.error)] = (counts[String(o.status || o.error)] ?? 0) + 1;
    return { requests: list.length, after_signal: list.filter((o) => o.start > signalled).length, outcomes: counts };
  };
  console.error(
    `instances, SIGTERM to one: ${JSON.stringify({ a: summary(a), b: summary(b), stopped: summary(stopped), exit: exit.code })}`,
  );
  expect(exit.code).toBe(0);
  for (const server of [a, b]) {
    const list = outcomes.get(server)!;
    expect(list.filter((o) => o.start > signalled).length).toBeGreaterThan(0);
    expect(list.filter((o) => o.status !== (o.write ? 201 : 200))).toEqual([]);
  }
  // the stopped one answered nothing but success: what it did not answer was refused or cut, never a 5xx
  expect(outcomes.get(stopped)!.filter((o) => o.status >= 300)).toEqual([]);
  // every acknowledged write is there
  const acknowledged = [...outcomes.values()].flat().filter((o) => o.write && o.status === 201);
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  const { rows } = await owner.query<{ n: number }>(
    `select count(*)::int as n from rowgate.products where organization_id = $1 and name like 'load %'`,
    [data.organizationId],
  );
  await owner.end();
  expect(rows[0]!.n).toBeGreaterThanOrEqual(acknowledged.length);
});
