// Webhook delivery at scale (SPEC §17): the scenarios of `node bench/webhooks.ts`
// and of `npm run bench -- --only webhooks`, over a database of their own (they
// add organizations: the bench's scale databases keep their 2,000) migrated with
// the committed migrations.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { sealSecret } from '../src/webhooks/secrets.ts';
import { WebhookWorker } from '../src/webhooks/worker.ts';

export const SECRET = 'b'.repeat(43);
const ACTOR = { kind: 'system', id: null, credential_kind: null, credential_id: null, impersonator_id: null, oauth2_client_id: null };

/** A database to bench delivery in, and a receiver on loopback that answers 204 (under /hang: never). */
export interface WebhookBench {
  ownerUrl: string;
  authenticatorUrl: string;
  owner: pg.Pool;
  receiver: http.Server;
  /** the receiver's base URL */
  base: string;
  /** deliveries the receiver answered since the last reset */
  delivered: number;
  /** n organizations, each with one endpoint subscribed to product.created at base/<prefix>-<i> */
  organizations(n: number, prefix: string): Promise<string[]>;
  /** n product.created events of an organization, in one statement */
  insertEvents(organization: string, n: number): Promise<unknown>;
  close(): Promise<void>;
}

export async function openWebhookBench(ownerUrl: string, authenticatorUrl: string): Promise<WebhookBench> {
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 10 });
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/hang')) return; // never answered
      bench.delivered++;
      res.writeHead(204).end();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const bench: WebhookBench = {
    ownerUrl,
    authenticatorUrl,
    owner,
    base,
    receiver,
    delivered: 0,
    async organizations(n, prefix) {
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
    },
    insertEvents: (organization, n) =>
      owner.query(
        `insert into rowgate.events (organization_id, type, resource_id, data, actor, audience)
         select $1, 'product.created', gen_random_uuid(), '{}', $2, 'members' from generate_series(1, $3::int)`,
        [organization, ACTOR, n],
      ),
    async close() {
      receiver.close();
      await owner.end();
    },
  };
  return bench;
}

const best = (xs: number[]) => Math.max(...xs);

/**
 * write_with_notify_vs_polling: writes that queue a delivery, per second, when
 * the queueing trigger also calls pg_notify (as the release before leases did,
 * with a sender LISTENing) against as it is now (nothing notified; the senders
 * poll). Every organization is subscribed; 8 writers; best of two rounds each.
 */
export async function writeWithNotifyVsPolling(bench: WebhookBench, seconds: number): Promise<Record<string, number>> {
  const { owner, ownerUrl, authenticatorUrl } = bench;
  const writers = await bench.organizations(64, 'writer');
  const restore = (
    await owner.query<{ def: string }>(`select pg_get_functiondef('rowgate_private.tg_events__enqueue_deliveries'::regproc) as def`)
  ).rows[0]!.def;
  const notifying = restore.replace(
    /return null;\s*end;/,
    `if found then perform pg_notify('rowgate_webhooks', ''); end if;\n  return null;\nend;`,
  );
  async function writesPerSecond(): Promise<number> {
    let writes = 0;
    const deadline = Date.now() + seconds * 1000;
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
    return writes / seconds;
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
  // what the write phase queued is not this bench's to deliver
  await owner.query(`update rowgate_private.webhook_deliveries set status = 'failed' where status = 'pending'`);
  return {
    writes_per_s_polling: Math.round(best(rates.polling)),
    writes_per_s_notify: Math.round(best(rates.notify)),
    write_with_notify_vs_polling: Number((best(rates.notify) / best(rates.polling)).toFixed(3)),
  };
}

/**
 * idle_poll_ms: what one idle sender's poll costs (a claim that finds nothing)
 * with 1,000 lanes waiting for retries hours away and 10,000 deliveries behind
 * them: not-due work is never read. round_trip_ms: a bare `select 1`, for scale.
 */
export async function idlePoll(bench: WebhookBench): Promise<Record<string, number>> {
  const { owner } = bench;
  const waiting = await bench.organizations(1000, 'waiting');
  for (const o of waiting) await bench.insertEvents(o, 10);
  await owner.query(
    `update rowgate_private.webhook_deliveries d set attempts = 1, next_attempt_at = now() + interval '6 hours'
     where d.organization_id = any ($1) and d.status = 'pending'`,
    [waiting],
  );
  const authenticator = new pg.Client({ connectionString: bench.authenticatorUrl });
  await authenticator.connect();
  try {
    // the first polls take the new deliveries into their lanes and set each lane's time to its retry
    for (let i = 0; i < 100; i++) await authenticator.query(`select * from rowgate_private.claim_webhook_deliveries(16, '30 seconds')`);
    const { rows: due } = await owner.query<{ n: number }>(
      `select count(*)::int as n from rowgate_private.webhook_lanes where due_at <= now()`,
    );
    if (due[0]!.n) throw new Error(`${due[0]!.n} lanes still due`);
    const polls = 500;
    const started = performance.now();
    for (let i = 0; i < polls; i++) await authenticator.query(`select * from rowgate_private.claim_webhook_deliveries(16, '30 seconds')`);
    const idle = (performance.now() - started) / polls;
    // the same round trip doing nothing, for scale on a busy machine
    const baseline = performance.now();
    for (let i = 0; i < polls; i++) await authenticator.query('select 1');
    const roundTrip = (performance.now() - baseline) / polls;
    return { idle_poll_ms: Number(idle.toFixed(3)), round_trip_ms: Number(roundTrip.toFixed(3)) };
  } finally {
    await authenticator.end();
  }
}

/**
 * deliveries_with_hanging_vs_without: 50 healthy endpoints (one organization
 * each) and one endpoint beside them that never answers (its attempts end at
 * the 10 s timeout). The answer measures one run: 40 events to each healthy
 * endpoint (and with `withHanging`, 40 to the hanging one) delivered by one
 * sender (16 in flight, polling every 50 ms), in deliveries per second until
 * every healthy endpoint has all of its events.
 */
export async function deliveryRuns(bench: WebhookBench): Promise<(withHanging: boolean) => Promise<number>> {
  const { owner, receiver } = bench;
  const healthy = await bench.organizations(50, 'healthy');
  const hanging = (await bench.organizations(1, 'hang'))[0]!;
  return async (withHanging) => {
    const PER_ENDPOINT = 40;
    const worker = new WebhookWorker({
      connectionString: bench.authenticatorUrl,
      secret: SECRET,
      allowLoopback: true,
      pollMs: 50,
      log: () => {},
    });
    bench.delivered = 0;
    for (const o of healthy) await bench.insertEvents(o, PER_ENDPOINT);
    if (withHanging) await bench.insertEvents(hanging, PER_ENDPOINT);
    const t0 = performance.now();
    await worker.start();
    while (bench.delivered < healthy.length * PER_ENDPOINT) await new Promise((r) => setTimeout(r, 10));
    const rate = bench.delivered / ((performance.now() - t0) / 1000);
    await owner.query(`update rowgate_private.webhook_deliveries set status = 'failed' where status = 'pending'`);
    const stopping = worker.stop();
    // the attempt in flight to the hanging endpoint ends with its timeout
    receiver.closeAllConnections();
    await stopping;
    return rate;
  };
}

/** deliveries_with_hanging_vs_without as bench/webhooks.ts reports it: best of two runs each, in turns. */
export async function deliveriesWithHangingVsWithout(bench: WebhookBench): Promise<Record<string, number>> {
  const run = await deliveryRuns(bench);
  const without = [await run(false)];
  const withHanging = [await run(true)];
  without.push(await run(false));
  withHanging.push(await run(true));
  return {
    deliveries_per_s_without_hanging: Math.round(best(without)),
    deliveries_per_s_with_hanging: Math.round(best(withHanging)),
    deliveries_with_hanging_vs_without: Number((best(withHanging) / best(without)).toFixed(3)),
  };
}
