// The event feed (SPEC §17): a client polling GET /v1/events/feed with the last
// next_cursor gets every event it may read exactly once, in feed order (the order
// in which events' transactions become visible), even one whose transaction
// committed after a later one's; an older write still open holds nothing back; an
// event's position is null until the feed places it; a cursor older than what
// retention kept (or of the old format) is a 410; GraphQL and analysts read the
// same position.
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

/** waits (at most 30 s) until every event of the organizations has its feed position */
const placed = (organizations: string[]) =>
  until(
    () => app.sql('select 1 from rowgate.events where organization_id = any ($1) and feed_position is null', [organizations]),
    (rows) => rows.length === 0,
  );

test('two transactions committing out of order: the later-committed is handed out first, the earlier when it commits, once each', async () => {
  const filter = `organization_id=${A}&organization_id=${B}`;
  await placed([A, B]);
  const start = await drain(undefined, filter);
  const early = await app.owner.connect();
  const late = await app.owner.connect();
  try {
    // the early transaction writes first (its id is the smaller) and commits last
    await early.query('begin');
    const first = await insertEvent(early, A);
    // not placed while its transaction is open: its own transaction sees a null position
    expect((await early.query('select feed_position from rowgate.events where id = $1', [first])).rows[0].feed_position).toBeNull();
    await late.query('begin');
    const second = await insertEvent(late, B);
    await late.query('commit');
    // committed: handed out although an older write is still open (it holds nothing back)
    const alone = await until(
      () => drain(start.cursor, filter),
      (d) => d.ids.length >= 1,
    );
    expect(alone.ids).toEqual([second]);
    await early.query('commit');
    // committed late: after the one handed out before it, not skipped
    const then = await until(
      () => drain(alone.cursor, filter),
      (d) => d.ids.length >= 1,
    );
    expect(then.ids).toEqual([first]);
    // nothing twice: polling again from there brings nothing
    expect((await drain(then.cursor, filter)).ids).toEqual([]);
    // from the first cursor taken before them: the same two, in the order they became visible
    expect((await drain(start.cursor, filter)).ids).toEqual([second, first]);
    const positions = await early.query<{ id: string }>('select id from rowgate.events where id = any ($1) order by feed_position', [
      [first, second],
    ]);
    expect(positions.rows.map((p) => p.id)).toEqual([second, first]);
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
  await placed([A, B]);
  const expected = await app.sql<{ id: string }>(`select id from rowgate.events where organization_id = any ($1) order by feed_position`, [
    [A, B],
  ]);
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
  // a cursor of the format that named transactions points into positions renumbered since
  const before = Buffer.from(`${'0'.repeat(19)}1-${'0'.repeat(18)}7|${Math.floor(Date.now() / 1000)}`).toString('base64url');
  const old = await app.get(`/v1/events/feed?after=${before}`, web());
  expect(old.status).toBe(410);
  expect(old.body.error).toBe('CursorExpired');
  const bad = await app.get('/v1/events/feed?after=bm90IGEgY3Vyc29y', web());
  expect(bad.status).toBe(422);
  expect(bad.body.detail[0].loc).toEqual(['query', 'after']);
  expect((await app.get('/v1/events/feed?limit=101', web())).status).toBe(422);
});

test('the position is a column analysts and GraphQL read and order by', async () => {
  await placed([A]);
  const [row] = await app.sql<{ feed_position: string }>(
    'select feed_position from rowgate.events where organization_id = $1 order by feed_position desc limit 1',
    [A],
  );
  expect(String(row!.feed_position)).toMatch(/^[1-9][0-9]*$/);
  const grants = await app.sql<{ grantee: string }>(
    `select grantee from information_schema.column_privileges
     where table_schema = 'rowgate' and table_name = 'events' and column_name = 'feed_position' and privilege_type = 'SELECT'
       and grantee <> 'rowgate_owner' order by 1`,
  );
  expect(grants.map((g) => g.grantee)).toEqual(['rowgate_analyst', 'rowgate_organization', 'rowgate_sql_login', 'rowgate_user']);
  const res = await app.post('/graphql', { query: '{ allEvents(first: 100) { nodes { rowId feedPosition } } }' }, web());
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  const positions = new Map(res.body.data.allEvents.nodes.map((n: { rowId: string; feedPosition: string }) => [n.rowId, n.feedPosition]));
  const [last] = await app.sql<{ id: string; feed_position: string }>(
    'select id, feed_position from rowgate.events where organization_id = $1 order by feed_position desc limit 1',
    [A],
  );
  expect(positions.get(last!.id)).toBe(String(last!.feed_position));
});

test('writers committing in any order while a client polls: every event handed out once, none skipped', async () => {
  const C = (await app.organization(admin.id)).id;
  const filter = `organization_id=${C}`;
  await placed([C]);
  let cursor = (await drain(undefined, filter)).cursor;
  const seen: string[] = [];
  let writing = true;
  const poller = (async () => {
    while (writing) {
      const page = await drain(cursor, filter);
      seen.push(...page.ids);
      cursor = page.cursor;
    }
  })();
  const written: string[] = [];
  // four writers, each transaction holding its event open for a random while: commits land out of id order
  await Promise.all(
    Array.from({ length: 4 }, async (_, w) => {
      const client = await app.owner.connect();
      try {
        for (let i = 0; i < 12; i++) {
          await client.query('begin');
          const id = await insertEvent(client, C);
          await new Promise((r) => setTimeout(r, ((w * 7 + i * 13) % 5) * 40));
          await client.query('commit');
          written.push(id);
        }
      } finally {
        client.release();
      }
    }),
  ).finally(() => {
    writing = false;
  });
  await poller;
  const rest = await until(
    () => drain(cursor, filter),
    (d) => seen.length + d.ids.length >= written.length,
  );
  seen.push(...rest.ids);
  expect(new Set(seen).size).toBe(seen.length);
  expect([...seen].sort()).toEqual([...written].sort());
}, 60_000);
