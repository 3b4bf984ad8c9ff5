// The event feed (SPEC §17): a client polling GET /v1/events/feed with the last
// next_cursor gets every event it may read exactly once, in feed order, even one
// whose transaction committed after a later one's; an older write still open
// holds the feed back rather than letting it skip; a cursor older than what
// retention kept is a 410; GraphQL and analysts read the same position.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
let A: string;
let B: string;
const web = () => ({ session: admin.session });

interface Feed {
  items: { id: string; organization_id: string; type: string; resource_id: string }[];
  next_cursor: string;
}

async function poll(query: string): Promise<Feed> {
  const res = await app.get(`/v1/events/feed?${query}`, web());
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Feed;
}

/** polls from the cursor until a poll brings nothing new; every event handed out, in order */
async function drain(cursor: string | undefined, filter = ''): Promise<{ ids: string[]; cursor: string }> {
  const ids: string[] = [];
  for (;;) {
    const page = await poll(`${filter}&limit=3${cursor ? `&after=${cursor}` : ''}`);
    ids.push(...page.items.map((e) => e.id));
    cursor = page.next_cursor;
    if (page.items.length < 3) return { ids, cursor };
  }
}

/** the value once it satisfies the predicate (polled for at most 30 s): the feed may be held back a moment */
async function until<T>(get: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (let i = 0; ; i++) {
    const v = await get();
    if (ok(v) || i === 300) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  A = (await app.organization(admin.id)).id;
  B = (await app.organization(admin.id)).id;
});
afterAll(async () => {
  await app?.close();
});

const SYSTEM = { kind: 'system', id: null, credential_kind: null, credential_id: null, impersonator_id: null, oauth2_client_id: null };
const insertEvent = (client: { query: (t: string, v: unknown[]) => Promise<{ rows: { id: string }[] }> }, organization: string) =>
  client
    .query(
      `insert into rowgate.events (organization_id, type, resource_id, data, actor, audience)
       values ($1, 'product.created', gen_random_uuid(), '{}', $2, 'members') returning id`,
      [organization, SYSTEM],
    )
    .then((r) => r.rows[0]!.id);

test('two transactions committing out of order: the feed holds the later back until the earlier commits, then hands out both, once each', async () => {
  const filter = `organization_id=${A}&organization_id=${B}`;
  // from past every event written so far (another database's open transaction may hold the feed back a moment)
  const [{ n }] = (await app.sql<{ n: number }>('select count(*)::int as n from rowgate.events where organization_id = any ($1)', [
    [A, B],
  ])) as [{ n: number }];
  const start = await until(
    () => drain(undefined, filter),
    (d) => d.ids.length >= n,
  );
  const early = await app.owner.connect();
  const late = await app.owner.connect();
  try {
    // the early transaction writes first (its xid is the smaller) and commits last
    await early.query('begin');
    const first = await insertEvent(early, A);
    await late.query('begin');
    const second = await insertEvent(late, B);
    await late.query('commit');
    // committed, but an older write that could still commit an earlier event is open: held back
    const held = await drain(start.cursor, filter);
    expect(held.ids).toEqual([]);
    // a reader paging the list by created_at sees the second now, and would never see the first
    const listed = await app.get(`/v1/events/?organization_id=${A}&organization_id=${B}&sorting=-created_at&limit=1`, web());
    expect(listed.body.items[0].id).toBe(second);
    await early.query('commit');
    // handed out once no older write of the cluster is open (other databases' transactions count too)
    const both = await until(
      () => drain(held.cursor, filter),
      (d) => d.ids.length >= 2,
    );
    expect(both.ids).toEqual([first, second]);
    // nothing twice: polling again from there brings nothing
    expect((await drain(both.cursor, filter)).ids).toEqual([]);
    // nor from the first cursor taken before them: the same two, in the same order
    expect((await drain(start.cursor, filter)).ids).toEqual([first, second]);
  } finally {
    await early.query('rollback').catch(() => {});
    await late.query('rollback').catch(() => {});
    early.release();
    late.release();
  }
});

test('from the start, in pages, by type and organization: every readable event exactly once in feed order', async () => {
  for (let i = 0; i < 4; i++) {
    await app.post('/v1/products/', { organization_id: i % 2 ? A : B, name: `feed ${i}`, price_amount: 1, price_currency: 'usd' }, web());
  }
  const expected = await app.sql<{ id: string }>(`select id from rowgate.events where organization_id = any ($1) order by feed_position`, [
    [A, B],
  ]);
  // the horizon is the whole server's: another database's open transaction holds the feed back a moment
  const all = await until(
    () => drain(undefined),
    (d) => d.ids.length >= expected.length,
  );
  expect(all.ids).toEqual(expected.map((e) => e.id));
  expect(new Set(all.ids).size).toBe(all.ids.length);
  const expectedA = await app.sql<{ id: string }>(
    `select id from rowgate.events where organization_id = $1 and type = 'product.created' order by feed_position`,
    [A],
  );
  const onlyA = await until(
    () => drain(undefined, `organization_id=${A}&type=product.created`),
    (d) => d.ids.length >= expectedA.length,
  );
  expect(onlyA.ids).toEqual(expectedA.map((e) => e.id));
  // another user's organizations are not scanned, and their events never appear
  const other = await app.user();
  const C = (await app.organization(other.id)).id;
  await app.post(
    '/v1/products/',
    { organization_id: C, name: 'elsewhere', price_amount: 1, price_currency: 'usd' },
    { session: other.session },
  );
  expect((await drain(all.cursor)).ids).toEqual([]);
});

test('a cursor older than what retention kept is a 410 CursorExpired; a bad one a 422', async () => {
  const { cursor } = await drain(undefined);
  expect((await app.get(`/v1/events/feed?after=${cursor}`, web())).status).toBe(200);
  await app.sql(
    `insert into rowgate_private.event_retention (singleton, pruned_before) values (true, now() + interval '1 minute')
     on conflict (singleton) do update set pruned_before = excluded.pruned_before`,
  );
  try {
    const expired = await app.get(`/v1/events/feed?after=${cursor}`, web());
    expect(expired.status).toBe(410);
    expect(expired.body.error).toBe('CursorExpired');
    // starting again without a cursor works
    expect((await app.get('/v1/events/feed', web())).status).toBe(200);
  } finally {
    await app.sql('delete from rowgate_private.event_retention');
  }
  const bad = await app.get('/v1/events/feed?after=bm90IGEgY3Vyc29y', web());
  expect(bad.status).toBe(422);
  expect(bad.body.detail[0].loc).toEqual(['query', 'after']);
  expect((await app.get('/v1/events/feed?limit=101', web())).status).toBe(422);
});

test('the position is a column analysts and GraphQL read and order by', async () => {
  const [row] = await app.sql<{ feed_position: string }>(
    'select feed_position from rowgate.events where organization_id = $1 order by feed_position desc limit 1',
    [A],
  );
  expect(row!.feed_position).toMatch(/^[0-9]{20}-[0-9]{19}$/);
  const grants = await app.sql<{ grantee: string }>(
    `select grantee from information_schema.column_privileges
     where table_schema = 'rowgate' and table_name = 'events' and column_name = 'feed_position' and privilege_type = 'SELECT'
       and grantee <> 'rowgate_owner' order by 1`,
  );
  expect(grants.map((g) => g.grantee)).toEqual(['rowgate_analyst', 'rowgate_organization', 'rowgate_user']);
  const res = await app.post('/graphql', { query: '{ allEvents(first: 100) { nodes { rowId feedPosition } } }' }, web());
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  const positions = new Map(res.body.data.allEvents.nodes.map((n: { rowId: string; feedPosition: string }) => [n.rowId, n.feedPosition]));
  const [last] = await app.sql<{ id: string; feed_position: string }>(
    'select id, feed_position from rowgate.events where organization_id = $1 order by feed_position desc limit 1',
    [A],
  );
  expect(positions.get(last!.id)).toBe(last!.feed_position);
});
