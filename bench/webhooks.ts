// `node bench/webhooks.ts [--seconds 5] [--json FILE]`: webhook delivery at scale
// (SPEC §17), on a throwaway embedded PostgreSQL with the committed migrations.
//  - write_with_notify_vs_polling: writes that queue a delivery, per second, when
//    the queueing trigger also calls pg_notify (as the release before leases did,
//    with a sender LISTENing) against as it is now (nothing notified; the senders
//    poll). Every organization is subscribed; 8 writers.
//  - idle_poll_ms: what one idle sender's poll costs (a claim that finds nothing)
//    with 1,000 lanes waiting for retries hours away and 10,000 deliveries behind
//    them: not-due work is never read.
//  - deliveries_with_hanging_vs_without: deliveries per second to 50 healthy
//    endpoints, with one endpoint beside them that never answers (10 s timeout),
//    against without it.
// Prints one JSON object (and writes it to --json FILE).
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { DATABASE_NAME, embeddedUrl, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase } from '../src/db/setup.ts';
import { sealSecret } from '../src/webhooks/secrets.ts';
import { WebhookWorker } from '../src/webhooks/worker.ts';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, json: { type: 'string' } } });
const SECONDS = Number(args.seconds);
const SECRET = 'b'.repeat(43);
const ACTOR = { kind: 'system', id: null, credential_kind: null, credential_id: null, impersonator_id: null, oauth2_client_id: null };

const home = await mkdtemp(path.join(tmpdir(), 'rowgate-bench-webhooks-'));
const db = await openEmbeddedDatabase({ home, exclusive: false, log: () => {} });
const results: Record<string, unknown> = {};
try {
  const superuser = embeddedUrl(db.state, 'superuser', 'postgres');
  await ensureRoles(superuser, { owner: db.state.ownerPassword, authenticator: db.state.authenticatorPassword });
  await ensureDatabase(superuser, DATABASE_NAME);
  await hardenDatabase(superuser, DATABASE_NAME);
  await migrateDatabase(embeddedUrl(db.state, 'owner'));
  const ownerUrl = embeddedUrl(db.state, 'owner');
  const authenticatorUrl = embeddedUrl(db.state, 'authenticator', DATABASE_NAME);
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 10 });

  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/hang')) return; // never answered
      delivered++;
      res.writeHead(204).end();
    });
  });
  let delivered = 0;
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  /** n organizations, each with one endpoint subscribed to product.created at base/<path>-<i> */
  async function organizations(n: number, prefix: string): Promise<string[]> {
    const { rows } = await owner.query<{ organization_id: string; id: string }>(
      `with orgs as (insert into rowgate.organizations (name, slug)
                     select $1 || ' ' || g, $1 || '-' || g || '-' || substr(md5(random()::text), 1, 6) from generate_series(1, $2::int) g returning id)
       insert into rowgate.webhook_endpoints (organization_id, url, event_types)
       select id, $3 || '/' || $1 || '-' || row_number() over (), '{product.created}' from orgs returning organization_id, id`,
      [prefix, n, base],
    );
    for (const r of rows)
      await owner.query('insert into rowgate_private.webhook_secrets (organization_id, endpoint_id, sealed_secret) values ($1, $2, $3)', [
        r.organization_id,
        r.id,
        sealSecret('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', SECRET),
      ]);
    return rows.map((r) => r.organization_id);
  }
  const insertEvents = (organization: string, n: number) =>
    owner.query(
      `insert into rowgate.events (organization_id, type, resource_id, data, actor, audience)
       select $1, 'product.created', gen_random_uuid(), '{}', $2, 'members' from generate_series(1, $3::int)`,
      [organization, ACTOR, n],
    );

  // -- the write path: pg_notify on every queueing write, or nothing ------------------------------
  const writers = await organizations(64, 'writer');
  const restore = (
    await owner.query<{ def: string }>(`select pg_get_functiondef('rowgate_private.tg_events__enqueue_deliveries'::regproc) as def`)
  ).rows[0]!.def;
  const notifying = restore.replace(
    /return null;\s*end;/,
    `if found then perform pg_notify('rowgate_webhooks', ''); end if;\n  return null;\nend;`,
  );
  async function writesPerSecond(): Promise<number> {
    let writes = 0;
    const deadline = Date.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: 8 }, async (_, w) => {
        const client = new pg.Client({ connectionString: ownerUrl });
        await client.connect();
        let i = w;
        while (Date.now() < deadline) {
          await client.query(
            `insert into rowgate.events (organization_id, type, resource_id, data, actor, audience)
             values ($1, 'product.created', gen_random_uuid(), '{}', $2, 'members')`,
            [writers[i++ % writers.length], ACTOR],
          );
          writes++;
        }
        await client.end();
      }),
    );
    return writes / SECONDS;
  }
  const listener = new pg.Client({ connectionString: authenticatorUrl });
  await listener.connect();
  const rates = { polling: [] as number[], notify: [] as number[] };
  for (let round = 0; round < 2; round++) {
    await owner.query(restore);
    rates.polling.push(await writesPerSecond());
    await owner.query(notifying);
    await listener.query('listen rowgate_webhooks');
    rates.notify.push(await writesPerSecond());
    await listener.query('unlisten *');
  }
  await owner.query(restore);
  await listener.end();
  const best = (xs: number[]) => Math.max(...xs);
  results.writes_per_s_polling = Math.round(best(rates.polling));
  results.writes_per_s_notify = Math.round(best(rates.notify));
  results.write_with_notify_vs_polling = Number((best(rates.notify) / best(rates.polling)).toFixed(3));
  // what the write phase queued is not this bench's to deliver
  await owner.query(`update rowgate_private.webhook_deliveries set status = 'failed' where status = 'pending'`);

  // -- an idle poll, with work waiting hours away -------------------------------------------------
  const waiting = await organizations(1000, 'waiting');
  for (const o of waiting) await insertEvents(o, 10);
  await owner.query(
    `update rowgate_private.webhook_deliveries d set attempts = 1, next_attempt_at = now() + interval '6 hours'
     where d.organization_id = any ($1) and d.status = 'pending'`,
    [waiting],
  );
  const authenticator = new pg.Client({ connectionString: authenticatorUrl });
  await authenticator.connect();
  // the first polls take the new deliveries into their lanes and set each lane's time to its retry
  for (let i = 0; i < 100; i++) await authenticator.query(`select * from rowgate_private.claim_webhook_deliveries(16, '30 seconds')`);
  const { rows: due } = await owner.query<{ n: number }>(
    `select count(*)::int as n from rowgate_private.webhook_lanes where due_at <= now()`,
  );
  if (due[0]!.n) throw new Error(`${due[0]!.n} lanes still due`);
  const polls = 500;
  const started = performance.now();
  for (let i = 0; i < polls; i++) await authenticator.query(`select * from rowgate_private.claim_webhook_deliveries(16, '30 seconds')`);
  results.idle_poll_ms = Number(((performance.now() - started) / polls).toFixed(3));
  // the same round trip doing nothing, for scale on a busy machine
  const baseline = performance.now();
  for (let i = 0; i < polls; i++) await authenticator.query('select 1');
  results.round_trip_ms = Number(((performance.now() - baseline) / polls).toFixed(3));
  await authenticator.end();

  // -- deliveries to 50 healthy endpoints, with and without one that hangs --------------------------
  const healthy = await organizations(50, 'healthy');
  const hanging = (await organizations(1, 'hang'))[0]!;
  async function deliveriesPerSecond(withHanging: boolean): Promise<number> {
    const PER_ENDPOINT = 40;
    const worker = new WebhookWorker({
      connectionString: authenticatorUrl,
      secret: SECRET,
      allowLoopback: true,
      pollMs: 50,
      log: () => {},
    });
    delivered = 0;
    for (const o of healthy) await insertEvents(o, PER_ENDPOINT);
    if (withHanging) await insertEvents(hanging, PER_ENDPOINT);
    const t0 = performance.now();
    await worker.start();
    while (delivered < healthy.length * PER_ENDPOINT) await new Promise((r) => setTimeout(r, 10));
    const rate = delivered / ((performance.now() - t0) / 1000);
    await owner.query(`update rowgate_private.webhook_deliveries set status = 'failed' where status = 'pending'`);
    const stopping = worker.stop();
    // the attempt in flight to the hanging endpoint ends with its timeout
    receiver.closeAllConnections();
    await stopping;
    return rate;
  }
  const without = [await deliveriesPerSecond(false)];
  const withHanging = [await deliveriesPerSecond(true)];
  without.push(await deliveriesPerSecond(false));
  withHanging.push(await deliveriesPerSecond(true));
  results.deliveries_per_s_without_hanging = Math.round(best(without));
  results.deliveries_per_s_with_hanging = Math.round(best(withHanging));
  results.deliveries_with_hanging_vs_without = Number((best(withHanging) / best(without)).toFixed(3));

  receiver.close();
  await owner.end();
} finally {
  await db.stop();
  await rm(home, { recursive: true, force: true });
}
const text = JSON.stringify(results, null, 2);
console.log(text);
if (args.json) await writeFile(args.json, `${text}\n`);
