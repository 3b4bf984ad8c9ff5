// How long an event waits for the feed while a transaction holding an xid stays
// open in another database of the same server (SPEC §17: within a second of its
// commit, held back by no other transaction). The servers' sequencer
// (src/upkeep/event-feed.ts) runs as a server runs it; events are written one at a
// time, each in its own transaction, and the time from its commit until it has
// a feed position (what the next poll hands out) is measured. The feed itself
// reads positions through an index: its poll adds one statement to this.
import pg from 'pg';
import { keepFeed } from '../src/upkeep/event-feed.ts';
import { embeddedUrl, type EmbeddedDatabase } from '../src/db/embedded.ts';
import { ensureDatabase, hardenDatabase, migrateDatabase } from '../src/db/setup.ts';

const WRITES = 40;

export async function benchFeedLatency(
  db: EmbeddedDatabase,
  superuser: string,
  log: (line: string) => void,
): Promise<{ p50_ms: number; p99_ms: number; max_ms: number }> {
  const database = 'bench_feed';
  const admin = new pg.Client({ connectionString: superuser });
  await admin.connect();
  await admin.query(`drop database if exists ${database} with (force)`);
  await admin.query('drop database if exists bench_feed_foreign with (force)');
  await admin.query('create database bench_feed_foreign');
  await ensureDatabase(superuser, database);
  await hardenDatabase(superuser, database);
  await migrateDatabase(embeddedUrl(db.state, 'owner', database));
  const owner = new pg.Client({ connectionString: embeddedUrl(db.state, 'owner', database) });
  await owner.connect();
  const pool = new pg.Pool({ connectionString: embeddedUrl(db.state, 'authenticator', database), max: 2 });
  const foreign = new pg.Client({ connectionString: embeddedUrl(db.state, 'superuser', 'bench_feed_foreign') });
  await foreign.connect();
  const feed = keepFeed(pool, { log });
  const waits: number[] = [];
  try {
    const { rows } = await owner.query<{ id: string }>(
      `insert into rowgate.organizations (name, slug) values ('feed bench', 'feed-bench') returning id`,
    );
    const organization = rows[0]!.id;
    // held open for the whole run: before, the feed waited for it to end
    await foreign.query('begin');
    await foreign.query('select pg_current_xact_id()');
    for (let i = 0; i < WRITES; i++) {
      const written = await owner.query<{ id: string }>(
        `insert into rowgate.events (organization_id, type, resource_id, data, actor, audience)
         values ($1, 'product.created', gen_random_uuid(), '{}', '{"kind": "system"}', 'members') returning id`,
        [organization],
      );
      const committedAt = performance.now();
      for (;;) {
        const placed = await owner.query('select 1 from rowgate.events where id = $1 and feed_position is not null', [written.rows[0]!.id]);
        if (placed.rowCount) break;
        if (performance.now() - committedAt > 10_000) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      waits.push(performance.now() - committedAt);
      // writes at random points of the sequencer's period, not in step with it
      await new Promise((r) => setTimeout(r, Math.random() * 200));
    }
  } finally {
    await feed.stop();
    await foreign.query('rollback').catch(() => {});
    await foreign.end();
    await pool.end();
    await owner.end();
    await admin.query('drop database if exists bench_feed_foreign with (force)');
    await admin.end();
  }
  waits.sort((a, b) => a - b);
  const at = (q: number) => Math.round(waits[Math.min(waits.length - 1, Math.floor(q * waits.length))]!);
  const result = { p50_ms: at(0.5), p99_ms: at(0.99), max_ms: Math.round(waits[waits.length - 1]!) };
  log(`feed: ${WRITES} events placed under an open foreign transaction: p50 ${result.p50_ms} ms, p99 ${result.p99_ms} ms`);
  return result;
}
