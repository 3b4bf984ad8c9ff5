// A metadata filter uses the GIN index for a subject under row-level
// security (rowgate_hidden.metadata_ids, found past RLS within the subject's
// organizations), and the helper never answers with rows out of reach.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { listStatement, Where } from '../src/listing/list-statement.ts';
import { orderListSpec } from '../src/resources/orders.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
let authenticator: pg.Pool;
let alice: string;
let bob: string;
let orgA: string;
let orgB: string;
/** orders of A: 6,000 (past the helper's 5,000 rows), `erp_id` INV-<i>, every second one `channel: web` */
const ROWS = 6_000;
let firstOfA: string;
let onlyOfB: string;

beforeAll(async () => {
  app = await startTestApp();
  authenticator = new pg.Pool({ connectionString: app.authenticatorUrl, max: 2 });
  // an idle client ended by the database's drop at teardown is not a failure
  authenticator.on('error', () => {});
  alice = (await app.user()).id;
  bob = (await app.user()).id;
  orgA = (await app.organization(alice)).id;
  orgB = (await app.organization(bob)).id;
  for (const [org, count] of [
    [orgA, ROWS],
    [orgB, 1],
  ] as const) {
    const product = await app.product(org);
    const customer = await app.customer(org);
    await app.sql(
      `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, metadata)
       select $1, $2, $3, 100, 'usd', jsonb_build_object('erp_id', 'INV-' || i) || case when i % 2 = 0 then '{"channel": "web"}'::jsonb else '{}'::jsonb end
       from generate_series(1, $4::int) i`,
      [org, customer, product, count],
    );
  }
  await app.sql('analyze rowgate.orders');
  [firstOfA, onlyOfB] = await Promise.all(
    [orgA, orgB].map(
      async (org) =>
        (await app.sql(`select id from rowgate.orders where organization_id = $1 and metadata->>'erp_id' = 'INV-1'`, [org]))[0].id,
    ),
  );
}, 120_000);
afterAll(async () => {
  await authenticator?.end();
  await app?.close();
});

/** Runs `fn` in a transaction of the authenticator with a user's settings, as the server sets them. */
async function asUser<T>(userId: string, fn: (client: pg.PoolClient) => Promise<T>, scopes = 'orders_read'): Promise<T> {
  const client = await authenticator.connect();
  try {
    await client.query('begin');
    await client.query(
      `select set_config('role', 'rowgate_user', true), set_config('rowgate.subject_kind', 'user', true),
              set_config('rowgate.subject_id', $1, true), set_config('rowgate.credential_kind', 'web_session', true),
              set_config('rowgate.scopes', $2, true)`,
      [userId, scopes],
    );
    return await fn(client);
  } finally {
    await client.query('rollback');
    client.release();
  }
}

const ids = async (client: pg.PoolClient, filter: unknown, ...rest: unknown[]) =>
  (
    await client.query<{ ids: string[] | null }>(
      `select rowgate_hidden.metadata_ids('orders', $1::jsonb${rest.map((_, i) => `, $${i + 2}`).join('')}) as ids`,
      [JSON.stringify(filter), ...rest],
    )
  ).rows[0]!.ids;

describe('rowgate_hidden.metadata_ids', () => {
  test('finds the rows of the subject through the filter: any value of a key, all keys', async () => {
    await asUser(alice, async (client) => {
      expect(await ids(client, [[{ erp_id: 'INV-1' }]])).toEqual([firstOfA]);
      expect((await ids(client, [[{ erp_id: 'INV-1' }, { erp_id: 'INV-2' }, { erp_id: 'INV-3' }]]))!.length).toBe(3);
      expect((await ids(client, [[{ erp_id: 'INV-1' }, { erp_id: 'INV-2' }], [{ channel: 'web' }]]))!.length).toBe(1);
      expect(await ids(client, [[{ erp_id: 'INV-1' }], [{ channel: 'web' }]])).toEqual([]);
    });
  });

  test('null past its limit (a common value): the list then tests every row', async () => {
    await asUser(alice, async (client) => {
      expect(await ids(client, [[{ channel: 'web' }]])).toBeNull();
      expect((await ids(client, [[{ channel: 'web' }]], ROWS))!.length).toBe(ROWS / 2);
    });
  });

  test('never answers with rows of an organization out of reach, nor without the read scope', async () => {
    // bob's one order is below the 5,000 rows: null unless p_min_rows says otherwise
    await asUser(bob, async (client) => {
      expect(await ids(client, [[{ erp_id: 'INV-1' }]])).toBeNull();
      expect(await ids(client, [[{ erp_id: 'INV-1' }]], 500, 0)).toEqual([onlyOfB]);
      expect(await ids(client, [[{ erp_id: 'INV-2' }]], 500, 0)).toEqual([]);
      expect(await ids(client, [[{ channel: 'web' }]], 100_000, 0)).toEqual([]);
    });
    await asUser(alice, async (client) => expect(await ids(client, [[{ erp_id: 'INV-1' }]], 500, 0)).toEqual([]), 'products_read');
  });

  test('refuses a table it does not serve', async () => {
    await expect(asUser(alice, (client) => client.query(`select rowgate_hidden.metadata_ids('users', '[[{"a": 1}]]')`))).rejects.toThrow(
      /No metadata filter on users/,
    );
  });
});

describe('the orders list under RLS', () => {
  const statement = (query: Record<string, string | string[]>) =>
    listStatement(orderListSpec, { page: 1, limit: 50 }, new Where().metadata(query));

  test('an ERP id lookup reads its order by the GIN index and the primary key, not every order of the organization', async () => {
    await asUser(alice, async (client) => {
      const st = statement({ 'metadata[erp_id]': 'INV-1' });
      const { rows } = await client.query(st.text, st.values);
      expect(rows[0].total_count).toBe(1);
      expect(JSON.parse(rows[0].items).map((o: { id: string }) => o.id)).toEqual([firstOfA]);
      const plan = (await client.query(`explain (analyze, costs off, timing off, summary off) ${st.text}`, st.values)).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      expect(plan).toMatch(/Index Scan (using|on) orders_pkey/);
      // an InitPlan's value is `(InitPlan n).col1` from PostgreSQL 17 on, `$n` on 16
      const initPlan = String.raw`(?:\(InitPlan \d+\)\.col1|\$\d+)`;
      expect(plan).toMatch(new RegExp(String.raw`Index Cond: \(id = ANY \(${initPlan}\)\)`));
      expect(plan).toMatch(new RegExp(String.raw`One-Time Filter: \(${initPlan} IS NULL\)`));
      expect(plan).not.toMatch(/Rows Removed by Filter: [1-9]\d{2,}/);
      // the helper's own plan is hidden inside it: its GIN scan shows in this transaction's index counters
      await client.query('reset role');
      const [{ oid }] = await app.sql(`select 'rowgate.orders_metadata'::regclass::oid as oid`);
      const scans = await client.query(`select pg_stat_get_xact_numscans($1)::int as n`, [oid]);
      expect(scans.rows[0].n).toBeGreaterThan(0);
    });
  });

  test('a common value falls back to testing the rows, with the same answer', async () => {
    await asUser(alice, async (client) => {
      const st = statement({ 'metadata[channel]': 'web' });
      const { rows } = await client.query(st.text, st.values);
      expect(rows[0].total_count).toBe(ROWS / 2);
      expect(JSON.parse(rows[0].items)).toHaveLength(50);
    });
  });

  test('the same lookup by bob finds only his order', async () => {
    await asUser(bob, async (client) => {
      const st = statement({ 'metadata[erp_id]': 'INV-1' });
      const { rows } = await client.query(st.text, st.values);
      expect(JSON.parse(rows[0].items).map((o: { id: string }) => o.id)).toEqual([onlyOfB]);
    });
  });
});
