// The path past one primary (docs/scaling.md): Citus distributes a table by one
// column, and every primary key, unique constraint and foreign key between two
// distributed tables must include it. The tenant tables here would be
// distributed by `organization_id` (rowgate.organizations by its `id`). This
// reads from the catalog which of them would block that today, and compares it
// with the list below, which may only shrink: a new table whose keys block
// distribution fails here, and so does a table that no longer blocks but is
// still listed.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';

/**
 * Tenant tables whose keys would block distribution by organization_id today,
 * and why (docs/scaling.md, "What blocks Citus today"). Only ever remove entries.
 */
const KNOWN_BLOCKERS: Record<string, string[]> = {
  'rowgate.accounts': ['primary key rowgate.accounts_pkey leaves out organization_id'],
  'rowgate.customer_members': [
    'foreign key customer_members_customer_id_fkey to rowgate.customers leaves out organization_id',
    'primary key rowgate.customer_members_pkey leaves out organization_id',
    'unique index rowgate.customer_members_email_live leaves out organization_id',
  ],
  'rowgate.customers': ['primary key rowgate.customers_pkey leaves out organization_id'],
  'rowgate.memberships': ['primary key rowgate.memberships_pkey leaves out organization_id'],
  'rowgate.orders': [
    'foreign key orders_customer_id_fkey to rowgate.customers leaves out organization_id',
    'foreign key orders_product_id_fkey to rowgate.products leaves out organization_id',
    'primary key rowgate.orders_pkey leaves out organization_id',
  ],
  'rowgate.organization_access_tokens': ['primary key rowgate.organization_access_tokens_pkey leaves out organization_id'],
  'rowgate.organizations': [
    'foreign key organizations_account_id_fkey to rowgate.accounts leaves out id',
    'unique index rowgate.organizations_slug_live leaves out id',
  ],
  'rowgate.payout_accounts': ['primary key rowgate.payout_accounts_pkey leaves out organization_id'],
  'rowgate.products': ['primary key rowgate.products_pkey leaves out organization_id'],
  // a login is a role name, which PostgreSQL keeps unique across the whole cluster
  'rowgate.sql_credentials': ['unique index rowgate.sql_credentials_login_key leaves out organization_id'],
  'rowgate.transactions': [
    'foreign key transactions_order_id_fkey to rowgate.orders leaves out organization_id',
    'primary key rowgate.transactions_pkey leaves out organization_id',
  ],
};

/** table → its reasons that are in `of` but not in `other` */
function beyond(of: Record<string, string[]>, other: Record<string, string[]>) {
  const result: Record<string, string[]> = {};
  for (const [name, reasons] of Object.entries(of)) {
    const extra = reasons.filter((r) => !(other[name] ?? []).includes(r));
    if (extra.length) result[name] = extra;
  }
  return result;
}

/**
 * Every tenant table with its distribution column: a table of the API's schemas
 * with a NOT NULL `organization_id`, and the organizations themselves by `id`.
 * For each, the unique indexes (primary keys and unique constraints included)
 * and the foreign keys to another tenant table that leave that column out.
 */
const BLOCKERS = `
  with tenant as (
    select c.oid, c.oid::regclass::text as name, a.attnum as column_number, a.attname as column_name
    from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = c.oid and not a.attisdropped and a.attnum > 0
    where n.nspname in ('rowgate', 'rowgate_private', 'rowgate_hidden')
      and c.relkind in ('r', 'p') and not c.relispartition
      and ((a.attname = 'organization_id' and a.attnotnull) or (c.oid = 'rowgate.organizations'::regclass and a.attname = 'id'))
  ),
  reasons as (
    select t.name, format('%s %s leaves out %s',
        case when i.indisprimary then 'primary key' else 'unique index' end,
        i.indexrelid::regclass, t.column_name) as reason
    from tenant t join pg_index i on i.indrelid = t.oid and i.indisunique
    where not (t.column_number = any (i.indkey::int2[]))
    union all
    select t.name, format('foreign key %s to %s leaves out %s', co.conname, r.name, t.column_name)
    from tenant t
      join pg_constraint co on co.conrelid = t.oid and co.contype = 'f'
      join tenant r on r.oid = co.confrelid
    where not (t.column_number = any (co.conkey) and r.column_number = any (co.confkey))
  )
  select name, array_agg(reason order by reason) as reasons from reasons group by name order by name`;

describe('Citus readiness: tenant tables whose keys would block distribution by organization_id', () => {
  let app: TestApp;
  let found: Record<string, string[]>;
  beforeAll(async () => {
    app = await startTestApp();
    const rows = await app.sql<{ name: string; reasons: string[] }>(BLOCKERS);
    found = Object.fromEntries(rows.map((r) => [r.name, r.reasons]));
  });
  afterAll(() => app?.close());

  test('the catalog finds the tenant tables (the query reads what it should)', async () => {
    // a table known to be fine and one known to block, so the query cannot pass by finding nothing
    const [row] = await app.sql<{ tenants: number }>(
      `select count(*)::int as tenants from pg_attribute a join pg_class c on c.oid = a.attrelid
       where c.relnamespace = 'rowgate'::regnamespace and a.attname = 'organization_id' and a.attnotnull and c.relkind = 'r'`,
    );
    expect(row?.tenants).toBeGreaterThan(5);
    // organization_row_counts: primary key (organization_id, resource), a foreign key on organization_id
    expect(found['rowgate_private.organization_row_counts']).toBeUndefined();
    expect(found['rowgate.customers']).toEqual(['primary key rowgate.customers_pkey leaves out organization_id']);
    expect(found['rowgate.orders']).toContainEqual(expect.stringMatching(/^primary key .* leaves out organization_id$/));
  });

  test('nothing blocks distribution that is not on the list (new tables and keys carry organization_id)', () => {
    expect(
      beyond(found, KNOWN_BLOCKERS),
      'a tenant table whose keys leave out organization_id: make its primary key (organization_id, id) and its unique ' +
        'constraints and foreign keys to tenant tables include organization_id (docs/scaling.md)',
    ).toEqual({});
  });

  test('everything on the list still blocks (what was fixed is removed from the list)', () => {
    expect(
      beyond(KNOWN_BLOCKERS, found),
      'these no longer block distribution: remove them from KNOWN_BLOCKERS and from docs/scaling.md',
    ).toEqual({});
  });
});
