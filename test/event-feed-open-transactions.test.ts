// The event feed and webhook first attempts are held back by no stranger's
// transaction (SPEC §17): while a transaction holding an xid stays open in another
// database of the same PostgreSQL server, and another in this database as an
// analyst's session would, an event written through the API is handed out by the
// feed and its endpoint's first attempt is made, within the contract's second of
// its commit (the bound here leaves half a second for the test's own polling).
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { WebhookWorker } from '../src/webhooks/worker.ts';
import { withDatabase } from './database-server.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

const BOUND_MS = 1_500;

let app: TestApp;
let admin: TestUser;
let A: string;
let worker: WebhookWorker;
let server: http.Server;
const received: { id: string; at: number }[] = [];
const scratch = `rowgate_scratch_${randomBytes(6).toString('hex')}`;
const web = () => ({ session: admin.session });

beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  A = (await app.organization(admin.id)).id;
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push({ id: String(req.headers['webhook-id']), at: Date.now() });
      res.writeHead(200).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  process.env.ROWGATE_WEBHOOKS_ALLOW_LOOPBACK = '1';
  const created = await app.post('/v1/webhook-endpoints/', { organization_id: A, url, event_types: ['product.created'] }, web());
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  worker = new WebhookWorker({
    connectionString: app.authenticatorUrl,
    secret: app.secret,
    allowLoopback: true,
    pollMs: 200,
    log: () => {},
  });
  await worker.start();
  const admin_ = new pg.Client({ connectionString: inject('superuserUrl') });
  await admin_.connect();
  await admin_.query(`create database ${scratch}`);
  await admin_.end();
});
afterAll(async () => {
  await worker?.stop();
  server?.closeAllConnections();
  server?.close();
  await app?.close();
  const admin_ = new pg.Client({ connectionString: inject('superuserUrl') });
  await admin_.connect();
  await admin_.query(`drop database if exists ${scratch} with (force)`);
  await admin_.end();
});

async function feedFrom(cursor: string | undefined): Promise<{ ids: string[]; cursor: string }> {
  const ids: string[] = [];
  for (;;) {
    const res = await app.get(`/v1/events/feed?organization_id=${A}${cursor ? `&after=${cursor}` : ''}`, web());
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    ids.push(...(res.body.items as { id: string }[]).map((e) => e.id));
    cursor = res.body.next_cursor as string;
    if (res.body.items.length < 100) return { ids, cursor };
  }
}

test('an open transaction in another database and an analyst-like one here hold back neither the feed nor a first attempt', async () => {
  // past every event so far (the endpoint's own creation among them)
  let start = await feedFrom(undefined);
  for (let i = 0; i < 50 && (await app.sql('select 1 from rowgate.events where feed_position is null')).length; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  start = await feedFrom(start.cursor);
  const foreign = new pg.Client({ connectionString: withDatabase(inject('superuserUrl'), scratch) });
  const analystLike = await app.owner.connect();
  await foreign.connect();
  try {
    // both hold an xid, so both hold the cluster's xmin horizon back while they stay open
    await foreign.query('begin');
    await foreign.query('select pg_current_xact_id()');
    await analystLike.query('begin');
    await analystLike.query('select pg_current_xact_id(), count(*) from rowgate.events');
    const written = await app.post(
      '/v1/products/',
      { organization_id: A, name: 'while others wait', price_amount: 1, price_currency: 'usd' },
      web(),
    );
    expect(written.status).toBe(201);
    const answeredAt = Date.now();
    const [event] = await app.sql<{ id: string }>(`select id from rowgate.events where resource_id = $1 and type = 'product.created'`, [
      written.body.id,
    ]);
    let fed: string[] = [];
    let fedAt = 0;
    while (Date.now() - answeredAt < BOUND_MS) {
      fed = (await feedFrom(start.cursor)).ids;
      fedAt = Date.now();
      if (fed.includes(event!.id)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(fed, `the feed after ${fedAt - answeredAt} ms`).toEqual([event!.id]);
    while (Date.now() - answeredAt < BOUND_MS && !received.some((r) => r.id === event!.id)) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(
      received.map((r) => r.id),
      'a first attempt while both transactions stay open',
    ).toContain(event!.id);
    // both are still open: nothing above waited for them to end
    expect((await foreign.query('select pg_current_xact_id() is not null as open')).rows[0].open).toBe(true);
    expect((await analystLike.query('select count(*) from rowgate.events')).rowCount).toBe(1);
  } finally {
    await foreign.query('rollback').catch(() => {});
    await foreign.end();
    await analystLike.query('rollback').catch(() => {});
    analystLike.release();
  }
});
