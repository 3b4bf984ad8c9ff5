// Benchmark data at a chosen scale: 2,000 organizations, orders spread evenly over
// them, users of 1–3 organizations and an admin of 50. Generated in SQL by the
// owner (triggers off while loading: transactions are not part of these lists).
import pg from 'pg';
import { generateToken, hashToken } from '../src/auth/tokens.ts';

export interface Scale {
  name: string;
  orders: number;
}

export const SCALES: Record<string, Scale> = {
  '100k': { name: '100k', orders: 100_000 },
  '1m': { name: '1m', orders: 1_000_000 },
  '10m': { name: '10m', orders: 10_000_000 },
};

export const ORGANIZATIONS = 2_000;
export const SMALL_USERS = 20; // each a member of 1–3 organizations
export const BIG_USER_ORGANIZATIONS = 50;

export interface BenchUsers {
  /** a user of 3 organizations */
  small: string;
  /** the admin of 50 organizations */
  big: string;
}

/**
 * The per-organization order counts the triggers keep (migration 000011),
 * which the load skips with the triggers: REST's `total_count` and GraphQL's
 * `totalCount` read them. Data loaded before this step existed answered 0.
 */
const ORDER_COUNTS = `
  delete from rowgate_private.organization_row_counts where resource = 'orders';
  insert into rowgate_private.organization_row_counts (organization_id, resource, stripe, row_count)
  select organization_id, 'orders', 0, count(*) from rowgate.orders group by organization_id`;

/** Data loaded without the order counts gets them (an exact count of 1M orders takes ~0.2 s). */
export async function ensureOrderCounts(ownerUrl: string, log: (l: string) => void) {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      `select (select count(*) from rowgate.orders) = (select coalesce(sum(row_count), 0) from rowgate_private.organization_row_counts
         where resource = 'orders') as exact`,
    );
    if ((rows[0] as { exact: boolean }).exact) return;
    log('  order counts: recounting (the data was loaded without them)');
    await client.query(`begin; ${ORDER_COUNTS}; commit`);
  } finally {
    await client.end();
  }
}

export async function isLoaded(ownerUrl: string, scale: Scale): Promise<boolean> {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      `select (select count(*) from rowgate.organizations) as organizations,
              (select reltuples::bigint from pg_class where oid = 'rowgate.orders'::regclass) as orders_estimate`,
    );
    const row = rows[0] as { organizations: string; orders_estimate: string };
    return Number(row.organizations) === ORGANIZATIONS && Math.abs(Number(row.orders_estimate) - scale.orders) < scale.orders * 0.05;
  } finally {
    await client.end();
  }
}

export async function load(ownerUrl: string, scale: Scale, log: (l: string) => void) {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  const step = async (what: string, sql: string, values: unknown[] = []) => {
    const started = Date.now();
    await client.query(sql, values);
    log(`  ${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };
  try {
    await step(
      'users',
      `insert into rowgate.users (email, name)
       select 'bench-' || i || '@example.com', 'Bench user ' || i from generate_series(0, $1) i`,
      [SMALL_USERS],
    );
    await step(
      'organizations',
      `insert into rowgate.organizations (name, slug)
       select 'Organization ' || i, 'bench-org-' || i from generate_series(1, $1) i`,
      [ORGANIZATIONS],
    );
    // user 0 administers the first 50 organizations; user i (1..20) belongs to 1–3 others
    await step(
      'memberships',
      `insert into rowgate.memberships (user_id, organization_id, role)
       select u.id, o.id, 'admin' from rowgate.users u, rowgate.organizations o
       where u.email = 'bench-0@example.com' and o.slug in (select 'bench-org-' || i from generate_series(1, $1) i)
       union all
       select u.id, o.id, case when k = 1 then 'admin' else 'member' end
       from generate_series(1, $2) i
         join rowgate.users u on u.email = 'bench-' || i || '@example.com'
         cross join lateral generate_series(1, 1 + i % 3) k
         join rowgate.organizations o on o.slug = 'bench-org-' || (100 + i * 10 + k)`,
      [BIG_USER_ORGANIZATIONS, SMALL_USERS],
    );
    await step(
      'products',
      `insert into rowgate.products (organization_id, name, price_amount, price_currency)
       select o.id, 'Product ' || k, 500 * k, 'usd' from rowgate.organizations o, generate_series(1, 5) k`,
    );
    await step(
      'customers',
      `insert into rowgate.customers (organization_id, email, status)
       select o.id, 'customer-' || k || '@' || o.slug || '.example.com', 'active'
       from rowgate.organizations o, generate_series(1, 20) k`,
    );
    await step('disable order triggers', 'alter table rowgate.orders disable trigger user');
    await step(
      'orders',
      `with o as (select id, row_number() over (order by slug) - 1 as n from rowgate.organizations),
            p as (select organization_id, array_agg(id) as ids from rowgate.products group by organization_id),
            c as (select organization_id, array_agg(id) as ids from rowgate.customers group by organization_id)
       insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status, created_at, updated_at)
       select o.id, c.ids[1 + (i / $2) % 20], p.ids[1 + i % 5], 500 * (1 + i % 5), 'usd',
              case when i % 10 = 0 then 'pending' else 'paid' end,
              t, t
       from generate_series(0, $1 - 1) i
         join o on o.n = i % $2
         join p on p.organization_id = o.id
         join c on c.organization_id = o.id
         cross join lateral (select now() - (random() * interval '365 days') as t) ts`,
      [scale.orders, ORGANIZATIONS],
    );
    await step('enable order triggers', 'alter table rowgate.orders enable trigger user');
    await step('order counts', ORDER_COUNTS);
    await step(
      'vacuum analyze',
      'vacuum (analyze) rowgate.orders, rowgate.organizations, rowgate.memberships, rowgate.products, rowgate.customers',
    );
  } finally {
    await client.end();
  }
}

/**
 * Metadata on about 1.2 % of the orders (SPEC §18), as merchants link
 * orders to their own records: `{"channel": "web", "erp_id": "INV-<first 8
 * hex digits of the id>"}` on the orders whose id's last byte is below 3. A
 * separate step, run once over data loaded before it (the marker is the first
 * tagged order): the other scenarios' rows, order and counts stay as they were;
 * only these rows are rewritten (triggers off, as when loading: no events, no
 * updated_at). Vacuumed after, so the pages' visibility is as before.
 */
export async function tagOrderMetadata(ownerUrl: string, log: (l: string) => void) {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const { rows } = await client.query(`select exists (select 1 from rowgate.orders where metadata @> '{"channel": "web"}') as done`);
    if ((rows[0] as { done: boolean }).done) return;
    const started = Date.now();
    await client.query('begin');
    await client.query('alter table rowgate.orders disable trigger user');
    const { rowCount } = await client.query(
      `update rowgate.orders set metadata = jsonb_build_object('channel', 'web', 'erp_id', 'INV-' || left(id::text, 8))
       where get_byte(uuid_send(id), 15) < 3`,
    );
    await client.query('alter table rowgate.orders enable trigger user');
    await client.query('commit');
    await client.query('vacuum (analyze) rowgate.orders');
    log(`  metadata on ${rowCount} orders: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await client.end();
  }
}

export async function benchUsers(ownerUrl: string): Promise<BenchUsers> {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ email: string; id: string }>(
      `select email, id from rowgate.users where email in ('bench-0@example.com', 'bench-2@example.com')`,
    );
    const id = (email: string) => rows.find((r) => r.email === email)!.id;
    return { big: id('bench-0@example.com'), small: id('bench-2@example.com') };
  } finally {
    await client.end();
  }
}

/** A web session for each bench user, hashed with `secret` (the server's ROWGATE_SECRET): who → token. */
export async function issueSessions(ownerUrl: string, users: BenchUsers, secret: string): Promise<Record<keyof BenchUsers, string>> {
  const owner = new pg.Client({ connectionString: ownerUrl });
  await owner.connect();
  try {
    const sessions = {} as Record<keyof BenchUsers, string>;
    for (const [who, id] of Object.entries(users) as [keyof BenchUsers, string][]) {
      const token = generateToken('web_session');
      await owner.query(`select rowgate_private.issue_user_session($1, $2, interval '1 day')`, [id, hashToken(secret, token)]);
      sessions[who] = token;
    }
    return sessions;
  } finally {
    await owner.end();
  }
}
