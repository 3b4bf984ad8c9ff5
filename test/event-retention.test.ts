// Event retention (SPEC §17): with ROWGATE_EVENT_RETENTION_DAYS the server
// prunes older events, but never one whose webhook delivery is still pending;
// a pruned event's finished deliveries and attempts go with it. Only the
// authenticator may prune, and never less than a day's worth.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';
import { pruneEvents } from '../src/upkeep/event-retention.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

process.env.ROWGATE_WEBHOOKS_ALLOW_LOOPBACK = '1';

let app: TestApp;
let admin: TestUser;
let A: string;

beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  A = (await app.organization(admin.id)).id;
});
afterAll(() => app?.close());

const eventOf = async (resourceId: string) =>
  (await app.sql<{ id: string }>('select id from rowgate.events where resource_id = $1', [resourceId]))[0]!.id;
const age = (eventIds: string[], days: number) =>
  app.sql(`update rowgate.events set created_at = now() - make_interval(days => $2) where id = any ($1::uuid[])`, [eventIds, days]);

test('events older than the retention go, unless a delivery of theirs is pending; finished deliveries go with them', async () => {
  const endpoint = await app.post(
    '/v1/webhook-endpoints/',
    { organization_id: A, url: 'http://127.0.0.1:9/hook', event_types: ['customer.created'] },
    { session: admin.session },
  );
  expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
  // no worker runs here: c1's delivery stays pending; c2's is made to have succeeded, with its attempt
  const pendingEvent = await eventOf(await app.customer(A));
  const deliveredEvent = await eventOf(await app.customer(A));
  const [delivery] = await app.sql<{ id: string }>(
    `update rowgate_private.webhook_deliveries set status = 'succeeded', attempts = 1 where event_id = $1 returning id`,
    [deliveredEvent],
  );
  await app.sql(
    `insert into rowgate.webhook_attempts (organization_id, endpoint_id, event_id, delivery_id, attempt, status, response_code, duration_ms)
     values ($1, $2, $3, $4, 1, 'succeeded', 200, 5)`,
    [A, endpoint.body.id, deliveredEvent, delivery!.id],
  );
  const oldEvent = await eventOf(await app.product(A));
  const recentEvent = await eventOf(await app.product(A));
  const borderEvent = await eventOf(await app.product(A));
  await age([pendingEvent, deliveredEvent, oldEvent], 40);
  await age([borderEvent], 29);

  expect(await pruneEvents(app.pool, 30)).toBe(2);
  const left = (await app.sql<{ id: string }>('select id from rowgate.events where organization_id = $1', [A])).map((r) => r.id);
  expect(left).not.toContain(oldEvent);
  expect(left).not.toContain(deliveredEvent);
  expect(left).toEqual(expect.arrayContaining([pendingEvent, recentEvent, borderEvent]));
  expect(await app.sql('select 1 from rowgate_private.webhook_deliveries where event_id = $1', [deliveredEvent])).toEqual([]);
  expect(await app.sql('select 1 from rowgate.webhook_attempts where event_id = $1', [deliveredEvent])).toEqual([]);
  // the pending delivery is untouched; once it is over, its event goes too
  await app.sql(`update rowgate_private.webhook_deliveries set status = 'failed' where event_id = $1`, [pendingEvent]);
  expect(await pruneEvents(app.pool, 30)).toBe(1);
  expect(await pruneEvents(app.pool, 30)).toBe(0);
  // the API lists what is left, and an event pruned is a 404
  const listed = await app.get('/v1/events/?limit=100&type=product.created&type=customer.created', { session: admin.session });
  expect(listed.body.items.map((e: { id: string }) => e.id).sort()).toEqual([recentEvent, borderEvent].sort()); // the pruned ones (customers' and the old product's) are gone;
  expect((await app.get(`/v1/events/${oldEvent}`, { session: admin.session })).status).toBe(404);
});

test('less than a day is refused, and only the authenticator may prune', async () => {
  await expect(app.pool.query(`select rowgate_private.prune_events(interval '23 hours')`)).rejects.toThrow(/at least a day/);
  const roles = await app.sql<{ role: string; allowed: boolean }>(
    `select r as role, has_function_privilege(r, 'rowgate_private.prune_events(interval, integer)', 'execute') as allowed
     from unnest(array['rowgate_authenticator', 'rowgate_user', 'rowgate_organization', 'rowgate_anonymous', 'rowgate_analyst']) r
     where exists (select 1 from pg_roles where rolname = r)`,
  );
  expect(roles.find((r) => r.role === 'rowgate_authenticator')?.allowed).toBe(true);
  expect(roles.filter((r) => r.role !== 'rowgate_authenticator' && r.allowed)).toEqual([]);
  expect(roles.length).toBeGreaterThanOrEqual(4);
});

test('ROWGATE_EVENT_RETENTION_DAYS: unset keeps events; a whole number of days, at least one', () => {
  expect(loadConfig({}).ROWGATE_EVENT_RETENTION_DAYS).toBeUndefined();
  expect(loadConfig({ ROWGATE_EVENT_RETENTION_DAYS: '30' }).ROWGATE_EVENT_RETENTION_DAYS).toBe(30);
  for (const bad of ['0', '1.5', 'forever', '-3']) expect(() => loadConfig({ ROWGATE_EVENT_RETENTION_DAYS: bad })).toThrow(ConfigError);
});
