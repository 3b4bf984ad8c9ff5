// Events, their client addresses and webhook attempts live in daily partitions
// (UTC days of their UUIDv7 ids) so that retention (SPEC §17) drops whole days:
// the servers make them a week ahead through a function the authenticator may
// call; a row lands in its day's partition, one past them in the default
// partition until its day's is made; pruning detaches the days older than the
// retention (and drops them at its next call), except a day with a pending
// delivery, and the feed answers an older cursor with 410 CursorExpired.
// Partitions carry no grants and no interface publishes them: every read goes
// through the parent's grants and policies.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { addEventPartitions } from '../src/upkeep/event-partitions.ts';
import { pruneEvents } from '../src/upkeep/event-retention.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

process.env.ROWGATE_WEBHOOKS_ALLOW_LOOPBACK = '1';

let app: TestApp;
let admin: TestUser;
let A: string;
/** an organization whose product's event lends its data to the events the tests write */
let Z: string;
const SYSTEM = {
  kind: 'system',
  id: null,
  credential_kind: null,
  credential_id: null,
  impersonator_id: null,
  oauth2_client_id: null,
};

const TABLES = [
  { parent: 'rowgate.events', key: 'id', name: 'events' },
  { parent: 'rowgate.event_clients', key: 'event_id', name: 'event_clients' },
  { parent: 'rowgate.webhook_attempts', key: 'id', name: 'webhook_attempts' },
];

/** The partitions of a table: name and the UTC day its range starts (null: the default one or the oldest). */
const partitionsOf = (parent: string) =>
  app.sql<{ name: string; day: string | null }>(
    `select r.partition::text as name,
       case when r.lower_id = '00000000-0000-0000-0000-000000000000' then null
         else to_char(rowgate_private.uuidv7_time(r.lower_id) at time zone 'UTC', 'YYYY-MM-DD') end as day
     from rowgate_private.partition_ranges($1::regclass) r order by r.lower_id`,
    [parent],
  );
/** The UTC day `days` from today, as YYYY-MM-DD. */
const dayFromToday = async (days: number) =>
  (
    await app.sql<{ day: string }>(`select to_char(date_trunc('day', now(), 'UTC') + make_interval(days => $1), 'YYYY-MM-DD') as day`, [
      days,
    ])
  )[0]!.day;
/** Which partition holds the event. */
const partitionOfEvent = async (id: string) =>
  (await app.sql<{ name: string }>('select tableoid::regclass::text as name from rowgate.events where id = $1', [id]))[0]?.name;
/** A UUIDv7 of now shifted by `by`: PostgreSQL 18's uuidv7(interval), or the set-up's on 16 and 17 (db/database.sql). */
const uuidv7 = (by: string) => `${inject('serverVersionNum') >= 180000 ? '' : 'rowgate_compat.'}uuidv7(interval '${by}')`;
/** An event inserted as the owner, with the id and created_at given (SQL expressions). */
const insertEvent = async (organizationId: string, id: string, createdAt = 'now()') =>
  (
    await app.sql<{ id: string }>(
      `insert into rowgate.events (id, organization_id, type, resource_id, data, actor, audience, created_at)
       select ${id}, $1, 'product.created', $2, e.data, $3, 'members', ${createdAt}
       from rowgate.events e where e.organization_id = $4 and e.type = 'product.created' limit 1
       returning id`,
      [organizationId, randomUUID(), SYSTEM, Z],
    )
  )[0]!.id;

beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  A = (await app.organization(admin.id)).id;
  Z = (await app.organization(admin.id)).id;
  await app.product(Z);
  // as if the servers had run for 40 days: the partition of the rows from before
  // partitioning ends 40 days ago, and every day since has its own (it is empty
  // here: the clone of the migrated template holds no events)
  for (const { parent, key, name } of TABLES) {
    const [before] = await app.sql<{ name: string }>(
      `select r.partition::text as name from rowgate_private.partition_ranges($1::regclass) r
       where r.lower_id = '00000000-0000-0000-0000-000000000000'`,
      [parent],
    );
    expect(await app.sql(`select 1 from ${before!.name} limit 1`)).toEqual([]);
    await app.sql(`drop table ${before!.name}`);
    await app.sql(
      `select rowgate_private.add_partition($1::regclass, $2, $3 || '_before_past', '00000000-0000-0000-0000-000000000000',
         rowgate_private.uuidv7_bound(date_trunc('day', now(), 'UTC') - interval '40 days'))`,
      [parent, key, name],
    );
    await app.sql(
      `select rowgate_private.add_partition($1::regclass, $2, $3 || '_past_' || d, rowgate_private.uuidv7_bound(at), rowgate_private.uuidv7_bound(at + interval '24 hours'))
       from generate_series(40, 1, -1) d, lateral (select date_trunc('day', now(), 'UTC') - make_interval(days => d) as at) x`,
      [parent, key, name],
    );
  }
});
afterAll(() => app?.close());

test('the partitions are made a week ahead, by the authenticator through a function only it may call', async () => {
  for (const { parent } of TABLES) {
    const days = (await partitionsOf(parent)).map((p) => p.day);
    for (let d = 0; d <= 7; d++) expect(days, parent).toContain(await dayFromToday(d));
  }
  // everything due is made: another call makes nothing (app.pool is the authenticator's)
  expect(await addEventPartitions(app.pool)).toBe(0);
  // a day lost (no server ran) is made again, by the authenticator, with the days after it
  await app.sql(`drop table rowgate_partitions.events_${(await dayFromToday(7)).replaceAll('-', '')}`);
  expect(await addEventPartitions(app.pool)).toBe(1);
  expect((await partitionsOf('rowgate.events')).map((p) => p.day)).toContain(await dayFromToday(7));
  const roles = await app.sql<{ role: string; allowed: boolean }>(
    `select r as role, has_function_privilege(r, 'rowgate_private.add_event_partitions()', 'execute') as allowed
     from unnest(array['rowgate_authenticator', 'rowgate_user', 'rowgate_organization', 'rowgate_anonymous', 'rowgate_analyst']) r`,
  );
  expect(roles.filter((r) => r.allowed).map((r) => r.role)).toEqual(['rowgate_authenticator']);
});

test('partitions carry no grants and no interface shows them: reads go through the parents', async () => {
  const [found] = await app.sql<{ partitions: number; granted: number; schema_usage: number }>(
    `select count(*)::int as partitions,
       count(*) filter (where c.relacl is not null
         or exists (select from pg_attribute a where a.attrelid = c.oid and a.attacl is not null))::int as granted,
       (select count(*) from pg_roles r where r.rolname like 'rowgate\\_%' and r.rolname <> 'rowgate_owner'
          and has_schema_privilege(r.oid, 'rowgate_partitions', 'usage'))::int as schema_usage
     from pg_class c where c.relnamespace = 'rowgate_partitions'::regnamespace and c.relkind = 'r'`,
  );
  expect(found!.partitions).toBeGreaterThan(3 * 48);
  expect(found!.granted).toBe(0);
  expect(found!.schema_usage).toBe(0);
  const introspection = await app.request('POST', '/graphql', {
    session: admin.session,
    headers: { accept: 'application/json' },
    body: { query: '{ __schema { types { name } queryType { fields { name } } } }' },
  });
  expect(introspection.status).toBe(200);
  const names: string[] = [
    ...introspection.body.data.__schema.types.map((t: { name: string }) => t.name),
    ...introspection.body.data.__schema.queryType.fields.map((f: { name: string }) => f.name),
  ];
  expect(names).toContain('Event');
  expect(names.filter((n) => /partition|\d{8}|events_?(default|before|past)/i.test(n))).toEqual([]);
});

test('a row lands in the partition of its id’s UTC day; one past the partitions made waits in the default one', async () => {
  const B = (await app.organization(admin.id)).id;
  // the greatest UUIDv7 of today's last millisecond, and the least of tomorrow's first
  const v7 = (at: string, rest: string) => `(left(replace(rowgate_private.uuidv7_bound(${at})::text, '-', ''), 12) || '${rest}')::uuid`;
  const midnight = `date_trunc('day', now(), 'UTC') + interval '1 day'`;
  const lastOfToday = await insertEvent(B, v7(`${midnight} - interval '1 millisecond'`, '7fffbfffffffffffffff'));
  const firstOfTomorrow = await insertEvent(B, v7(midnight, '70008000000000000000'));
  expect(await partitionOfEvent(lastOfToday)).toBe(`rowgate_partitions.events_${(await dayFromToday(0)).replaceAll('-', '')}`);
  expect(await partitionOfEvent(firstOfTomorrow)).toBe(`rowgate_partitions.events_${(await dayFromToday(1)).replaceAll('-', '')}`);
  // 30 days ahead: no partition yet, the default one takes it; making its day's moves it there
  const ahead = await insertEvent(B, uuidv7('30 days'));
  expect(await partitionOfEvent(ahead)).toBe('rowgate_partitions.events_default');
  await app.sql(
    `select rowgate_private.add_partition('rowgate.events', 'id', 'events_ahead', rowgate_private.uuidv7_bound(at), rowgate_private.uuidv7_bound(at + interval '24 hours'))
     from (select date_trunc('day', now() + interval '30 days', 'UTC') as at) x`,
  );
  expect(await partitionOfEvent(ahead)).toBe('rowgate_partitions.events_ahead');
  // every one of them reads through the parent as any event: the API lists them
  const listed = await app.get(`/v1/events/?organization_id=${B}&limit=100`, { session: admin.session });
  expect(listed.status).toBe(200);
  expect(listed.body.items.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining([lastOfToday, firstOfTomorrow, ahead]));
  await app.sql('delete from rowgate.events where organization_id = $1', [B]);
  await app.sql('drop table rowgate_partitions.events_ahead');
});

test('pruning takes the days older than the retention, keeps a day with a pending delivery, and the feed expires older cursors', async () => {
  const endpoint = await app.post(
    '/v1/webhook-endpoints/',
    { organization_id: A, url: 'http://127.0.0.1:9/hook', event_types: ['customer.created'] },
    { session: admin.session },
  );
  expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
  // 35 days ago: two events, one delivered (with its attempt) and with its client row
  const old1 = await insertEvent(A, uuidv7('-35 days'), `now() - interval '35 days'`);
  const old2 = await insertEvent(A, uuidv7('-35 days'), `now() - interval '35 days'`);
  const [delivery] = await app.sql<{ id: string }>(
    `insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id, status, attempts, created_at)
     values ($1, $2, $3, 'succeeded', 1, now() - interval '35 days') returning id`,
    [A, endpoint.body.id, old1],
  );
  await app.sql(
    `insert into rowgate.webhook_attempts (id, organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms, created_at)
     values (${uuidv7('-35 days')}, $1, $2, $3, $4, 1, 'succeeded', 200, 5, now() - interval '35 days')`,
    [A, endpoint.body.id, old1, delivery!.id],
  );
  await app.sql(
    `insert into rowgate.event_clients (organization_id, event_id, audience, ip, created_at) values ($1, $2, 'members', '192.0.2.1', now() - interval '35 days')`,
    [A, old2],
  );
  // 33 days ago: one event still being delivered, one done
  const pending = await insertEvent(A, uuidv7('-33 days'), `now() - interval '33 days'`);
  const besidePending = await insertEvent(A, uuidv7('-33 days'), `now() - interval '33 days'`);
  await app.sql(
    `insert into rowgate_private.webhook_deliveries (organization_id, endpoint_id, event_id, status, created_at)
     values ($1, $2, $3, 'pending', now() - interval '33 days')`,
    [A, endpoint.body.id, pending],
  );
  // 2 days ago: kept
  const recent = await insertEvent(A, uuidv7('-2 days'), `now() - interval '2 days'`);
  const dayOf = (days: number) => `rowgate_partitions.events_past_${days}`;
  expect(await partitionOfEvent(old1)).toBe(dayOf(35));
  expect(await partitionOfEvent(pending)).toBe(dayOf(33));

  // a feed cursor from 35 days ago: the first event of the organization's feed
  const web = { session: admin.session };
  // (the feed holds events back while an older transaction of the cluster runs: other test files' too)
  let first = await app.get(`/v1/events/feed?organization_id=${A}&type=product.created&limit=1`, web);
  for (let i = 0; i < 300 && first.status === 200 && first.body.items.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    first = await app.get(`/v1/events/feed?organization_id=${A}&type=product.created&limit=1`, web);
  }
  expect(first.status).toBe(200);
  expect(first.body.items.map((e: { id: string }) => e.id)).toEqual([old1]);
  expect((await app.get(`/v1/events/feed?organization_id=${A}&after=${first.body.next_cursor}`, web)).status).toBe(200);

  await pruneEvents(app.pool, 30);
  const events = (await partitionsOf('rowgate.events')).map((p) => p.name);
  // the days before the retention's are gone, with their client rows and attempts, but the pending one's
  for (const days of [40, 36, 35, 34, 32, 31]) expect(events).not.toContain(dayOf(days));
  expect(events).not.toContain('rowgate_partitions.events_before_past');
  expect(events).toContain(dayOf(33));
  const clients = (await partitionsOf('rowgate.event_clients')).map((p) => p.name);
  expect(clients).not.toContain('rowgate_partitions.event_clients_past_35');
  expect(clients).toContain('rowgate_partitions.event_clients_past_33');
  // attempts of days before the oldest pending delivery go; from its day on, they stay
  const attempts = (await partitionsOf('rowgate.webhook_attempts')).map((p) => p.name);
  expect(attempts).not.toContain('rowgate_partitions.webhook_attempts_past_35');
  expect(attempts).toContain('rowgate_partitions.webhook_attempts_past_33');
  // the day within the retention's day, and after it, stay
  expect(events).toEqual(expect.arrayContaining([dayOf(30), dayOf(29), dayOf(2)]));
  const left = (await app.sql<{ id: string }>('select id from rowgate.events where organization_id = $1', [A])).map((r) => r.id);
  expect(left).toEqual(expect.arrayContaining([pending, recent]));
  // the pending delivery's event stays; its day's other event went by itself
  expect(left).not.toContain(besidePending);
  for (const gone of [old1, old2]) expect(left).not.toContain(gone);
  expect(await app.sql('select 1 from rowgate.event_clients where event_id = $1', [old2])).toEqual([]);
  expect(await app.sql('select 1 from rowgate.webhook_attempts where event_id = $1', [old1])).toEqual([]);
  // and so is the finished delivery of an event that went with its day
  expect(await app.sql('select 1 from rowgate_private.webhook_deliveries where id = $1', [delivery!.id])).toEqual([]);
  // the days went detached (the parents' lock stays short); the next call drops them
  const detached = () =>
    app.sql<{ name: string }>(
      `select c.oid::regclass::text as name from pg_class c
       where c.relnamespace = 'rowgate_partitions'::regnamespace and c.relkind = 'r' and not c.relispartition`,
    );
  expect((await detached()).map((t) => t.name)).toContain(dayOf(35));
  await app.sql(`select rowgate_private.prune_events(interval '30 days')`);
  expect(await detached()).toEqual([]);

  // the cursor from before the retention is expired; a poll from the start works
  const expired = await app.get(`/v1/events/feed?organization_id=${A}&after=${first.body.next_cursor}`, web);
  expect(expired.status).toBe(410);
  expect(expired.body.error).toBe('CursorExpired');
  const again = await app.get(`/v1/events/feed?organization_id=${A}&limit=100`, web);
  expect(again.status).toBe(200);
  expect(again.body.items.map((e: { id: string }) => e.id)).toEqual(expect.arrayContaining([pending, recent]));

  // once the delivery is over, its day goes too
  await app.sql(`update rowgate_private.webhook_deliveries set status = 'failed' where event_id = $1`, [pending]);
  await pruneEvents(app.pool, 30);
  expect((await partitionsOf('rowgate.events')).map((p) => p.name)).not.toContain(dayOf(33));
  expect((await partitionsOf('rowgate.webhook_attempts')).map((p) => p.name)).not.toContain('rowgate_partitions.webhook_attempts_past_33');
  expect((await app.sql<{ id: string }>('select id from rowgate.events where organization_id = $1', [A])).map((r) => r.id)).toEqual(
    expect.arrayContaining([recent]),
  );
});
