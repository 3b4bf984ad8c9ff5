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
// Prints one JSON object (and writes it to --json FILE). The scenarios are those
// of bench/webhook-scenarios.ts; `npm run bench -- --only webhooks` runs the last
// one (and the API's write with every organization subscribed).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DATABASE_NAME, embeddedUrl, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase } from '../src/db/setup.ts';
import { deliveriesWithHangingVsWithout, idlePoll, openWebhookBench, writeWithNotifyVsPolling } from './webhook-scenarios.ts';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, json: { type: 'string' } } });
const SECONDS = Number(args.seconds);

const home = await mkdtemp(path.join(tmpdir(), 'rowgate-bench-webhooks-'));
const db = await openEmbeddedDatabase({ home, exclusive: false, log: () => {} });
let results: Record<string, unknown> = {};
try {
  const superuser = embeddedUrl(db.state, 'superuser', 'postgres');
  await ensureRoles(superuser, { owner: db.state.ownerPassword, authenticator: db.state.authenticatorPassword });
  await ensureDatabase(superuser, DATABASE_NAME);
  await hardenDatabase(superuser, DATABASE_NAME);
  await migrateDatabase(embeddedUrl(db.state, 'owner'));
  const bench = await openWebhookBench(embeddedUrl(db.state, 'owner'), embeddedUrl(db.state, 'authenticator', DATABASE_NAME));
  try {
    results = { ...(await writeWithNotifyVsPolling(bench, SECONDS)) };
    Object.assign(results, await idlePoll(bench));
    Object.assign(results, await deliveriesWithHangingVsWithout(bench));
  } finally {
    await bench.close();
  }
} finally {
  await db.stop();
  await rm(home, { recursive: true, force: true });
}
const text = JSON.stringify(results, null, 2);
console.log(text);
if (args.json) await writeFile(args.json, `${text}\n`);
