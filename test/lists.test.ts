// The list conventions of SPEC §6, tested once, generically, over every list
// endpoint of the route table: pagination, sorting (allow-list, both directions,
// id tie-break), the default order, filters, unknown parameters, and list items
// equal to the item's own GET. Each list only declares how to seed its rows, which
// credential reads them, and which rows each filter must return.
import { randomBytes, randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { ApiRoute } from '../src/http/route-declaration.ts';
import { apiRoutes } from '../src/server/route-table.ts';
import { expectValidationError } from './expect-api.ts';
import { startTestApp, type RequestOptions, type TestApp } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  // the lists' own requests would land in the request log this file lists
  app = await startTestApp({ operating: { requestLog: undefined } });
});
afterAll(async () => app?.close());

/** rows seeded per list: more than four pages of five */
const N = 23;
const LIMIT = 5;

// ---------------------------------------------------------------------------
// Discovery: the list routes and what their query schemas allow.

type Item = Record<string, any>;

const isListSchema = (schema: unknown) => {
  const shape = (schema as z.ZodObject | undefined)?.shape;
  return !!shape && 'items' in shape && 'pagination' in shape;
};

const listRoutes = apiRoutes.filter((r): r is ApiRoute => r.method === 'get' && r.access !== null && isListSchema(r.response));

const queryShape = (route: ApiRoute): Record<string, z.ZodType> => (route.query as z.ZodObject | undefined)?.shape ?? {};

/** The sortable fields, read from the published description of the `sorting` parameter. */
function sortableFields(route: ApiRoute): string[] {
  const description = String(queryShape(route).sorting?.meta()?.description ?? '');
  const match = /fields of ([a-z_, ]+);/.exec(description);
  return match ? match[1]!.split(',').map((f) => f.trim()) : [];
}

const PAGINATION_PARAMS = ['page', 'limit', 'sorting'];
const filterParams = (route: ApiRoute) => Object.keys(queryShape(route)).filter((k) => !PAGINATION_PARAMS.includes(k));

/** The GET of one item, when the list has one: `/v1/things/` → `/v1/things/{id}`. */
const getRouteOf = (route: ApiRoute) =>
  route.path.endsWith('/') ? apiRoutes.find((r) => r.method === 'get' && r.path === `${route.path}{id}`) : undefined;

// ---------------------------------------------------------------------------
// Seeding helpers (as the table owner).

const pad = (i: number) => String(i).padStart(2, '0');
/** 8 lower-case hex characters */
const unique = () => randomBytes(4).toString('hex');
const BASE = Date.parse('2026-03-01T10:00:00.000Z');

async function insertRow(table: string, values: Record<string, unknown>): Promise<string> {
  const columns = Object.keys(values);
  const [row] = await app.sql<{ id: string }>(
    `insert into ${table} (${columns.join(', ')}) values (${columns.map((_, i) => `$${i + 1}`).join(', ')}) returning id`,
    Object.values(values),
  );
  return row!.id;
}

/**
 * Gives the rows distinct-but-tied creation times unrelated to their insertion
 * order or ids: pairs of rows share a second, in a shuffled order. The timestamp
 * trigger would overwrite created_at, so it is off for this one transaction.
 */
async function stamp(table: string, ids: string[]): Promise<Map<string, number>> {
  const at = ids.map((_, i) => new Date(BASE + Math.floor(((i * 7) % ids.length) / 2) * 1000).toISOString());
  const client = await app.owner.connect();
  try {
    await client.query('begin');
    await client.query(`alter table ${table} disable trigger _100_timestamps`);
    await client.query(`update ${table} t set created_at = v.at from unnest($1::uuid[], $2::timestamptz[]) v(id, at) where t.id = v.id`, [
      ids,
      at,
    ]);
    await client.query(`alter table ${table} enable trigger _100_timestamps`);
    await client.query('commit');
    return new Map(ids.map((id, i) => [id, Date.parse(at[i]!)]));
  } catch (error) {
    await client.query('rollback');
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Time windows (SPEC §18) over stamped rows: bounds fall on instants that pairs of
 * rows share (>= keeps them, < drops them), in UTC and at another offset.
 */
function windowCases(stamps: Map<string, number>): FilterCase[] {
  const [t1, t2] = [BASE + 3_000, BASE + 8_000];
  const iso = (t: number) => new Date(t).toISOString();
  const where = (keep: (t: number) => boolean) => [...stamps].filter(([, t]) => keep(t)).map(([id]) => id);
  return [
    { query: `created_after=${iso(t1)}`, expect: where((t) => t >= t1) },
    { query: `created_before=${iso(t2)}`, expect: where((t) => t < t2) },
    { query: `created_after=${iso(t1)}&created_before=${iso(t2)}`, expect: where((t) => t >= t1 && t < t2) },
    // the same instant as t1, written at +01:00 (the + encoded, as a client must)
    { query: 'created_after=2026-03-01T11:00:03%2B01:00', expect: where((t) => t >= t1) },
    // offsets RFC 3339 allows and PostgreSQL does not read (past ±15:59: they were a 500), a fraction kept as sent
    { query: 'created_after=2026-03-02T02:00:03%2B16:00', expect: where((t) => t >= t1) },
    { query: 'created_before=2026-02-28T10:01:08.000001-23:59', expect: where((t) => t <= t2) },
    { query: `created_after=${iso(t2)}&created_before=${iso(t1)}`, expect: [] },
  ];
}
const INVALID_WINDOWS = [
  'created_after=2026-03-01T10:00:00',
  'created_before=2026-03-01',
  'created_after=yesterday',
  'created_before=2026-03-01T10:00:00+01:00',
  // valid RFC 3339, but before year 1: refused at its parameter, not by the database
  'created_after=0000-01-01T00:00:00Z',
  'created_before=0000-12-31T23:59:59%2B01:00',
  // in year 0 or 10000 once read in UTC (no timestamp holds them)
  'created_after=0001-01-01T00:00:00%2B01:00',
  'created_before=9999-12-31T23:59:59-16:00',
  // a fraction finer than nanoseconds (130 digits reached the database, whose error was located at the body)
  'created_after=2026-03-01T10:00:00.1234567890Z',
  `created_before=2026-03-01T10:00:00.${'1'.repeat(130)}Z`,
];
// (an unencoded + is a space in a query string: no time zone left)

/** Metadata (SPEC §18) on seeded rows: a string, an integer and a boolean key, in patterns unrelated to the rest. */
async function tagMetadata(table: string, ids: string[]): Promise<Map<string, Record<string, unknown>>> {
  const metas = new Map(ids.map((id, i) => [id, { tier: ['gold', 'silver', 'bronze'][i % 3]!, n: i % 4, vip: i % 5 === 0 }]));
  await app.sql(`update ${table} t set metadata = v.m from unnest($1::uuid[], $2::jsonb[]) v(id, m) where t.id = v.id`, [
    ids,
    ids.map((id) => JSON.stringify(metas.get(id))),
  ]);
  return metas;
}
/** one key: any of its values (an integer and a boolean spelt as text too); several keys: all of them */
function metadataCases(metas: Map<string, Record<string, unknown>>): FilterCase[] {
  const where = (keep: (m: Record<string, unknown>) => boolean) => [...metas].filter(([, m]) => keep(m)).map(([id]) => id);
  return [
    { query: 'metadata[tier]=gold', expect: where((m) => m.tier === 'gold') },
    { query: 'metadata[tier]=gold&metadata[tier]=bronze', expect: where((m) => m.tier !== 'silver') },
    { query: 'metadata[n]=2', expect: where((m) => m.n === 2) },
    { query: 'metadata[vip]=true&metadata[tier]=gold', expect: where((m) => m.vip === true && m.tier === 'gold') },
    { query: 'metadata[tier]=GOLD', expect: [] },
    { query: 'metadata[missing]=gold', expect: [] },
  ];
}
const INVALID_METADATA = ['metadata[bad.key]=1', `metadata[${'k'.repeat(41)}]=1`, 'metadata=gold', `metadata[tier]=${'x'.repeat(501)}`];

/** A user with two organizations it administers, and a stranger's organization. */
async function world() {
  const user = await app.user();
  const stranger = await app.user();
  const a = (await app.organization(user.id)).id;
  const b = (await app.organization(user.id)).id;
  const c = (await app.organization(stranger.id)).id;
  return { user, stranger, a, b, c };
}

const product = (organizationId: string, price = 700) =>
  insertRow('rowgate.products', { organization_id: organizationId, name: 'P', price_amount: price, price_currency: 'usd' });
const customer = (organizationId: string) =>
  insertRow('rowgate.customers', { organization_id: organizationId, email: `x${unique()}@example.com` });

/** Distinct-but-tied creation times (as `stamp`) on a table without the timestamps trigger, by a key column. */
async function stampBy(table: string, column: string, keys: string[]): Promise<Map<string, number>> {
  const at = keys.map((_, i) => new Date(BASE + Math.floor(((i * 7) % keys.length) / 2) * 1000).toISOString());
  await app.sql(
    `update ${table} t set created_at = v.at from unnest($1::text[], $2::timestamptz[]) v(k, at) where t.${column}::text = v.k`,
    [keys, at],
  );
  return new Map(keys.map((k, i) => [k, Date.parse(at[i]!)]));
}

/** An OAuth2 client of its own and a grant of it by `userId` (on an organization, when named): its family id */
async function oauth2Grant(userId: string, organizationId: string | null = null) {
  const clientId = `rg_ci_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
  await app.sql(
    `insert into rowgate.oauth2_clients (client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method)
     values ($1, $2, $3, '{https://example.com/cb}', '{products_read}', 'none')`,
    [clientId, userId, `App ${unique()}`],
  );
  const [family] = await app.sql<{ id: string }>(
    `with code as (
       insert into rowgate_private.oauth2_authorization_codes (code_hash, client_id, user_id, organization_id, scopes, redirect_uri, expires_at, used_at)
       values (sha256(gen_random_uuid()::text::bytea), $1, $2, $3, '{products_read}', 'https://example.com/cb', now(), now()) returning id)
     insert into rowgate_private.oauth2_token_families (client_id, user_id, organization_id, scopes, authorization_code_id)
     select $1, $2, $3, '{products_read}', id from code returning id`,
    [clientId, userId, organizationId],
  );
  await app.sql(
    'select rowgate_private.issue_oauth2_tokens($1, $2, sha256(gen_random_uuid()::text::bytea), sha256(gen_random_uuid()::text::bytea))',
    [family!.id, ['products_read']],
  );
  return { clientId, familyId: family!.id };
}

// ---------------------------------------------------------------------------
// The declarations: one per list route.

interface FilterCase {
  /** a query string: `status=a&status=b` */
  query: string;
  /** the keys of exactly the rows it must return */
  expect: string[];
}

interface Fixture {
  /** the concrete list path */
  path: string;
  auth: RequestOptions;
  /** the key of every row this caller sees in the list, no more */
  keys: string[];
  filters: FilterCase[];
  /** the item's key (default: its id) */
  key?: (item: Item) => string;
  /** key → the id that breaks ties, when it is not the key itself (memberships) */
  tie?: Map<string, string>;
}

interface Declaration {
  seed: (n: number) => Promise<Fixture>;
  /** query strings refused with a single issue at ['query', <their first parameter>] */
  invalid?: string[];
}

const ids = <T extends { id: string }>(rows: T[], keep: (row: T) => boolean = () => true) => rows.filter(keep).map((r) => r.id);

/** organization_id narrowing: each reachable one, both, an unreachable one, an unknown one, a mix */
function organizationCases<T extends { id: string; org: string }>(rows: T[], reachable: string[], unreachable: string[]): FilterCase[] {
  const [a, b] = reachable as [string, string];
  return [
    { query: `organization_id=${a}`, expect: ids(rows, (r) => r.org === a) },
    { query: `organization_id=${b}`, expect: ids(rows, (r) => r.org === b) },
    { query: `organization_id=${a}&organization_id=${b}`, expect: ids(rows) },
    ...unreachable.map((o) => ({ query: `organization_id=${o}`, expect: [] })),
    { query: `organization_id=${randomUUID()}`, expect: [] },
    { query: `organization_id=${a}&organization_id=${unreachable[0]}`, expect: ids(rows, (r) => r.org === a) },
  ];
}

const SYSTEM_ACTOR = {
  kind: 'system',
  id: null,
  credential_kind: null,
  credential_id: null,
  impersonator_id: null,
  oauth2_client_id: null,
};

const declarations: Record<string, Declaration> = {
  'products:list': {
    invalid: [
      'is_archived=maybe',
      'is_archived=yes',
      'is_archived=1',
      'organization_id=not-a-uuid',
      `query=${'x'.repeat(201)}`,
      ...INVALID_WINDOWS,
      ...INVALID_METADATA,
    ],
    seed: async (n) => {
      const { user, a, b, c } = await world();
      const rows: { id: string; org: string; name: string; archived: boolean }[] = [];
      for (let i = 0; i < n; i++) {
        const org = i % 4 === 3 ? b : a;
        const name = `n${pad(i % 8)}`;
        const archived = i % 3 === 0;
        const id = await insertRow('rowgate.products', {
          organization_id: org,
          name,
          description: i % 2 ? `About ${name}` : null,
          price_amount: ((i * 5) % 7) * 100,
          price_currency: 'usd',
          is_archived: archived,
        });
        rows.push({ id, org, name, archived });
      }
      const stamps = await stamp('rowgate.products', ids(rows));
      const metas = await tagMetadata('rowgate.products', ids(rows));
      // out of sight: another organization's products, and a deleted one
      await insertRow('rowgate.products', { organization_id: c, name: 'n03', price_amount: 1, price_currency: 'usd' });
      await insertRow('rowgate.products', {
        organization_id: a,
        name: 'n03',
        price_amount: 1,
        price_currency: 'usd',
        deleted_at: new Date(),
      });
      return {
        path: '/v1/products/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          ...windowCases(stamps),
          ...metadataCases(metas),
          ...organizationCases(rows, [a, b], [c]),
          { query: 'is_archived=true', expect: ids(rows, (r) => r.archived) },
          { query: 'is_archived=false', expect: ids(rows, (r) => !r.archived) },
          { query: `organization_id=${a}&is_archived=false`, expect: ids(rows, (r) => r.org === a && !r.archived) },
          { query: 'query=N03', expect: ids(rows, (r) => r.name === 'n03') },
          { query: 'query=0', expect: ids(rows) },
          { query: 'query=%25', expect: [] },
          { query: 'query=_', expect: [] },
          { query: 'query=n0&is_archived=true', expect: ids(rows, (r) => r.archived) },
        ],
      };
    },
  },

  'customers:list': {
    invalid: ['status=bogus', 'organization_id=not-a-uuid', `email=${'x'.repeat(321)}`, ...INVALID_WINDOWS, ...INVALID_METADATA],
    seed: async (n) => {
      const { user, a, b, c } = await world();
      // a deleted customer whose e-mail a live one reuses: never listed
      await insertRow('rowgate.customers', { organization_id: a, email: 'c05@example.com', deleted_at: new Date() });
      await insertRow('rowgate.customers', { organization_id: c, email: 'c05@example.com', first_name: 'Zelda' });
      const rows: { id: string; org: string; email: string; status: string; first: string | null; last: string }[] = [];
      for (let i = 0; i < n; i++) {
        // pairs share an e-mail across the two organizations (ties when sorting by email)
        const row = {
          org: i % 2 === 0 ? a : b,
          email: `c${pad(Math.floor(i / 2))}@example.com`,
          status: i % 3 === 0 ? 'active' : 'pending',
          first: i % 5 === 0 ? 'Zelda' : null,
          last: i % 4 === 1 ? 'Quux' : `L${pad(i)}`,
        };
        const id = await insertRow('rowgate.customers', {
          organization_id: row.org,
          email: row.email,
          status: row.status,
          first_name: row.first,
          last_name: row.last,
        });
        rows.push({ id, ...row });
      }
      const stamps = await stamp('rowgate.customers', ids(rows));
      const metas = await tagMetadata('rowgate.customers', ids(rows));
      // every third customer has an external id
      const external = new Map(rows.flatMap((r, i) => (i % 3 === 0 ? [[r.id, `x${pad(i)}`] as const] : [])));
      for (const [id, externalId] of external)
        await app.sql('update rowgate.customers set external_id = $2 where id = $1', [id, externalId]);
      return {
        path: '/v1/customers/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          ...windowCases(stamps),
          ...metadataCases(metas),
          ...organizationCases(rows, [a, b], [c]),
          { query: 'status=active', expect: ids(rows, (r) => r.status === 'active') },
          { query: 'status=pending', expect: ids(rows, (r) => r.status === 'pending') },
          { query: 'status=active&status=pending', expect: ids(rows) },
          { query: 'external_id=x00', expect: [rows[0]!.id] },
          { query: 'external_id=x00&external_id=x06', expect: [rows[0]!.id, rows[6]!.id] },
          { query: 'external_id=x01', expect: [] },
          { query: `organization_id=${b}&status=active`, expect: ids(rows, (r) => r.org === b && r.status === 'active') },
          { query: 'email=C05@Example.com', expect: ids(rows, (r) => r.email === 'c05@example.com') },
          { query: 'email=c05', expect: [] },
          { query: 'email=nobody@example.com', expect: [] },
          { query: 'query=zEL', expect: ids(rows, (r) => r.first === 'Zelda') },
          { query: 'query=QUUX', expect: ids(rows, (r) => r.last === 'Quux') },
          { query: 'query=c03@', expect: ids(rows, (r) => r.email === 'c03@example.com') },
          { query: 'query=%25', expect: [] },
        ],
      };
    },
  },

  'orders:list': {
    invalid: ['status=bogus', 'customer_id=nope', 'product_id=nope', 'organization_id=nope', ...INVALID_WINDOWS, ...INVALID_METADATA],
    seed: async (n) => {
      const { user, a, b, c } = await world();
      const [pa1, pa2, pb, pc] = [await product(a), await product(a), await product(b), await product(c)];
      const [ca1, ca2, cb, cc] = [await customer(a), await customer(a), await customer(b), await customer(c)];
      const rows: { id: string; org: string; product: string; customer: string; status: string }[] = [];
      for (let i = 0; i < n; i++) {
        const org = i % 3 === 2 ? b : a;
        const row = {
          org,
          product: org === b ? pb : i % 2 ? pa1 : pa2,
          customer: org === b ? cb : i % 4 < 2 ? ca1 : ca2,
          status: ['pending', 'paid', 'refunded'][Math.floor(i / 2) % 3]!,
        };
        const id = await insertRow('rowgate.orders', {
          organization_id: row.org,
          customer_id: row.customer,
          product_id: row.product,
          amount: ((i * 3) % 5) * 100,
          currency: 'usd',
          status: row.status,
        });
        rows.push({ id, ...row });
      }
      const stamps = await stamp('rowgate.orders', ids(rows));
      const metas = await tagMetadata('rowgate.orders', ids(rows));
      // external ids of the customers: the same one in two organizations, a third of its own
      for (const [id, externalId] of [
        [ca1, 'ext-1'],
        [cb, 'ext-1'],
        [ca2, 'ext-2'],
        [cc, 'ext-2'],
      ])
        await app.sql('update rowgate.customers set external_id = $2 where id = $1', [id, externalId]);
      await app.order(pc, cc, 'paid');
      return {
        path: '/v1/orders/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          ...windowCases(stamps),
          ...metadataCases(metas),
          ...organizationCases(rows, [a, b], [c]),
          { query: `customer_id=${ca1}`, expect: ids(rows, (r) => r.customer === ca1) },
          { query: `customer_id=${ca1}&customer_id=${cb}`, expect: ids(rows, (r) => r.customer === ca1 || r.customer === cb) },
          { query: `customer_id=${cc}`, expect: [] },
          { query: 'external_customer_id=ext-1', expect: ids(rows, (r) => r.customer === ca1 || r.customer === cb) },
          { query: 'external_customer_id=ext-2', expect: ids(rows, (r) => r.customer === ca2) },
          { query: 'external_customer_id=ext-1&external_customer_id=ext-2', expect: ids(rows) },
          { query: 'external_customer_id=nope', expect: [] },
          { query: `product_id=${pa2}`, expect: ids(rows, (r) => r.product === pa2) },
          { query: `product_id=${pa1}&product_id=${pb}`, expect: ids(rows, (r) => r.product === pa1 || r.product === pb) },
          { query: `product_id=${pc}`, expect: [] },
          { query: 'status=paid', expect: ids(rows, (r) => r.status === 'paid') },
          { query: 'status=pending&status=refunded', expect: ids(rows, (r) => r.status !== 'paid') },
          {
            query: `organization_id=${a}&customer_id=${ca2}&product_id=${pa1}&status=paid&status=pending`,
            expect: ids(rows, (r) => r.customer === ca2 && r.product === pa1 && r.status !== 'refunded'),
          },
        ],
      };
    },
  },

  'events:list': {
    invalid: ['type=bogus', 'resource_id=nope', 'organization_id=nope', 'created_after=yesterday', 'actor_id=nope'],
    seed: async (n) => {
      const { user, a, b, c } = await world();
      // only the rows seeded here: the events of making the organizations go
      await app.sql('delete from rowgate.events where organization_id = any($1::uuid[])', [[a, b, c]]);
      const types = ['product.created', 'order.paid', 'customer.updated'];
      const resources = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      const rows: { id: string; org: string; type: string; resource: string }[] = [];
      for (let i = 0; i < n; i++) {
        const row = { org: i % 3 === 2 ? b : a, type: types[i % 3]!, resource: resources[i % 4]! };
        const id = await insertRow('rowgate.events', {
          organization_id: row.org,
          type: row.type,
          resource_id: row.resource,
          data: { id: row.resource },
          actor: i % 5 === 0 ? { ...SYSTEM_ACTOR, kind: 'user', id: user.id } : SYSTEM_ACTOR,
          audience: 'members',
          // distinct-but-tied creation times, as stamp() gives other tables
          created_at: new Date(BASE + Math.floor(((i * 7) % n) / 2) * 1000).toISOString(),
        });
        rows.push({ id, ...row });
      }
      await insertRow('rowgate.events', {
        organization_id: c,
        type: 'product.created',
        resource_id: resources[0],
        data: {},
        actor: SYSTEM_ACTOR,
        audience: 'members',
      });
      return {
        path: '/v1/events/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          ...organizationCases(rows, [a, b], [c]),
          { query: 'type=order.paid', expect: ids(rows, (r) => r.type === 'order.paid') },
          { query: 'type=order.paid&type=product.created', expect: ids(rows, (r) => r.type !== 'customer.updated') },
          { query: 'type=order.refunded', expect: [] },
          { query: `resource_id=${resources[1]}`, expect: ids(rows, (r) => r.resource === resources[1]) },
          { query: `actor_id=${user.id}`, expect: ids(rows).filter((_, i) => i % 5 === 0) },
          { query: `actor_id=${randomUUID()}`, expect: [] },
          {
            query: `resource_id=${resources[0]}&resource_id=${resources[2]}&type=product.created`,
            expect: ids(rows, (r) => (r.resource === resources[0] || r.resource === resources[2]) && r.type === 'product.created'),
          },
          {
            query: `created_after=${new Date(BASE + 5000).toISOString()}`,
            expect: ids(rows).filter((_, i) => BASE + Math.floor(((i * 7) % n) / 2) * 1000 >= BASE + 5000),
          },
          {
            query: `created_before=${new Date(BASE + 5000).toISOString()}`,
            expect: ids(rows).filter((_, i) => BASE + Math.floor(((i * 7) % n) / 2) * 1000 < BASE + 5000),
          },
        ],
      };
    },
  },

  'webhook_endpoints:list': {
    invalid: ['organization_id=nope', 'enabled=true'],
    seed: async (n) => {
      const { user, a, b, c } = await world();
      const endpoint = (org: string, i: number) =>
        insertRow('rowgate.webhook_endpoints', {
          organization_id: org,
          url: `https://hooks.example.com/${i}`,
          event_types: ['order.paid'],
        });
      const rows: { id: string; org: string }[] = [];
      // both organizations below their 16 endpoints (migration 000032), the deleted one included
      for (let i = 0; i < n; i++) {
        const org = i % 2 === 1 ? b : a;
        rows.push({ id: await endpoint(org, i), org });
      }
      await stamp('rowgate.webhook_endpoints', ids(rows));
      // out of sight: another organization's endpoint, and a deleted one
      await endpoint(c, 100);
      await app.sql('update rowgate.webhook_endpoints set deleted_at = now() where id = $1', [await endpoint(a, 101)]);
      return {
        path: '/v1/webhook-endpoints/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: organizationCases(rows, [a, b], [c]),
      };
    },
  },

  'sessions:list': {
    invalid: ['sorting=ip'],
    seed: async (n) => {
      const { user } = await world();
      for (let i = 1; i < n; i++) await app.session(user.id);
      const rows = await app.sql<{ id: string }>("select id from rowgate_private.sessions where user_id = $1 and kind = 'user'", [user.id]);
      await stampBy('rowgate_private.sessions', 'id', ids(rows));
      return { path: '/v1/users/me/sessions', auth: { session: user.session }, keys: ids(rows), filters: [] };
    },
  },

  'authorized_apps:list': {
    invalid: ['sorting=scopes'],
    seed: async (n) => {
      const { user, a } = await world();
      const grants = [];
      // the first on an organization: a row of its own kind
      for (let i = 0; i < n; i++) grants.push(await oauth2Grant(user.id, i === 0 ? a : null));
      await stampBy(
        'rowgate_private.oauth2_token_families',
        'id',
        grants.map((g) => g.familyId),
      );
      return {
        path: '/v1/users/me/authorized-apps',
        auth: { session: user.session },
        keys: grants.map((g) => g.clientId),
        key: (item) => item.client_id as string,
        filters: [
          { query: `organization_id=${a}`, expect: [grants[0]!.clientId] },
          { query: `organization_id=${randomUUID()}`, expect: [] },
        ],
      };
    },
  },

  'oauth2_grants:list': {
    invalid: ['sorting=scopes'],
    seed: async (n) => {
      const { user, a } = await world();
      const grants = [];
      for (let i = 0; i < n; i++) grants.push(await oauth2Grant(user.id, a));
      await oauth2Grant(user.id); // the user's own grant: not the organization's
      await stampBy(
        'rowgate_private.oauth2_token_families',
        'id',
        grants.map((g) => g.familyId),
      );
      return {
        path: `/v1/organizations/${a}/oauth2-grants`,
        auth: { session: user.session },
        keys: grants.map((g) => g.familyId),
        filters: [],
      };
    },
  },

  'sql_credentials:list': {
    invalid: ['sorting=login'],
    seed: async (n) => {
      const { user, stranger, a, b } = await world();
      // logins made in SQL, without their roles: the list reads the rows
      const login = () => `rg_sql_${Array.from(randomBytes(20), (x) => 'abcdefghijklmnopqrstuvwxyz234567'[x % 32]).join('')}`;
      const insert = (organization: string, by: string) =>
        app.sql<{ id: string }>(
          `insert into rowgate.sql_credentials (organization_id, login, comment, scopes, created_by)
           values ($1, $2, 'bi', '{orders_read}', $3) returning id`,
          [organization, login(), by],
        );
      const rows: { id: string; by: string }[] = [];
      for (let i = 0; i < n; i++) {
        const by = i % 3 ? user.id : stranger.id;
        rows.push({ id: (await insert(a, by))[0]!.id, by });
      }
      await insert(b, user.id); // another organization's login
      await stamp('rowgate.sql_credentials', ids(rows));
      return {
        path: `/v1/organizations/${a}/sql-credentials`,
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          { query: `created_by=${stranger.id}`, expect: ids(rows, (r) => r.by === stranger.id) },
          { query: `created_by=${randomUUID()}`, expect: [] },
        ],
      };
    },
  },

  'requests:list': {
    invalid: ['status=6xx', 'method=PUT', 'created_after=yesterday'],
    seed: async (n) => {
      const { user, a, b } = await world();
      const rows: { id: string; status: number; method: string }[] = [];
      for (let i = 0; i < n; i++) {
        const row = { id: randomUUID(), status: [200, 201, 404, 403][i % 4]!, method: i % 2 ? 'POST' : 'GET' };
        await app.sql(
          `insert into rowgate.request_log (id, organization_id, request_id, method, route, path, status, duration_ms, user_id, created_at)
           values ($1, $2, $3, $4, '/v1/products/', '/v1/products/', $5, $6, $7, now())`,
          [row.id, a, `r-${i}`, row.method, row.status, i % 3, user.id],
        );
        rows.push(row);
      }
      // another organization's row
      await app.sql(
        `insert into rowgate.request_log (id, organization_id, request_id, method, route, path, status, duration_ms, created_at)
         values ($1, $2, 'elsewhere', 'GET', '/v1/products/', '/v1/products/', 200, 1, now())`,
        [randomUUID(), b],
      );
      const stamps = await stampBy('rowgate.request_log', 'id', ids(rows));
      return {
        path: `/v1/organizations/${a}/requests`,
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          { query: 'status=4xx', expect: ids(rows, (r) => r.status >= 400) },
          { query: 'status=200&status=403', expect: ids(rows, (r) => r.status === 200 || r.status === 403) },
          { query: 'method=POST', expect: ids(rows, (r) => r.method === 'POST') },
          { query: 'request_id=r-1', expect: [rows[1]!.id] },
          { query: 'route=/v1/products/', expect: ids(rows) },
          { query: 'route=/v1/orders/', expect: [] },
          { query: `credential_id=${randomUUID()}`, expect: [] },
          ...windowCases(stamps),
        ],
      };
    },
  },

  'denials:list': {
    invalid: ['user_id=nope', 'created_after=yesterday'],
    seed: async (n) => {
      const { user, a } = await world();
      const operations = ['products:create', 'orders:update', 'customers:delete'];
      const users = [user.id, randomUUID()];
      const rows: { id: string; operation: string; user: string }[] = [];
      for (let i = 0; i < n; i++) {
        const row = { operation: operations[i % 3]!, user: users[i % 2]! };
        const id = await insertRow('rowgate.denials', {
          organization_id: a,
          operation: row.operation,
          credential_kind: 'web_session',
          user_id: row.user,
          step: 'policy',
          error: 'NotPermitted',
          reason: 'not allowed',
        });
        rows.push({ id, ...row });
      }
      const stamps = await stamp('rowgate.denials', ids(rows));
      return {
        path: `/v1/organizations/${a}/denials`,
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          { query: `user_id=${users[0]}`, expect: ids(rows, (r) => r.user === users[0]) },
          { query: 'operation=orders:update', expect: ids(rows, (r) => r.operation === 'orders:update') },
          {
            query: `operation=products:create&user_id=${users[1]}`,
            expect: ids(rows, (r) => r.operation === 'products:create' && r.user === users[1]),
          },
          ...windowCases(stamps),
          { query: `user_id=${randomUUID()}`, expect: [] },
        ],
      };
    },
  },

  'webhook_deliveries:list': {
    invalid: ['status=bogus', 'event_id=nope'],
    seed: async (n) => {
      const { user, a } = await world();
      const endpoint = await insertRow('rowgate.webhook_endpoints', {
        organization_id: a,
        url: 'https://hooks.example.com/',
        event_types: ['order.paid'],
      });
      const other = await insertRow('rowgate.webhook_endpoints', {
        organization_id: a,
        url: 'https://hooks.example.com/2',
        event_types: ['order.paid'],
      });
      const events = [randomUUID(), randomUUID(), randomUUID()];
      const attempt = (endpointId: string, i: number, at?: string) =>
        insertRow('rowgate.webhook_attempts', {
          organization_id: a,
          endpoint_id: endpointId,
          event_id: events[i % 3],
          delivery_id: (i % 3) + 1,
          attempt: Math.floor(i / 3) + 1,
          status: i % 2 ? 'failed' : 'succeeded',
          response_code: i % 2 ? 500 : 200,
          duration_ms: 10 + i,
          ...(at ? { created_at: at } : {}),
        });
      const rows: { id: string; event: string; status: string }[] = [];
      for (let i = 0; i < n; i++) {
        const at = new Date(BASE + Math.floor(((i * 7) % n) / 2) * 1000).toISOString();
        rows.push({ id: await attempt(endpoint, i, at), event: events[i % 3]!, status: i % 2 ? 'failed' : 'succeeded' });
      }
      await attempt(other, 0);
      return {
        path: `/v1/webhook-endpoints/${endpoint}/deliveries`,
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          { query: `event_id=${events[0]}`, expect: ids(rows, (r) => r.event === events[0]) },
          { query: `event_id=${events[1]}&event_id=${events[2]}`, expect: ids(rows, (r) => r.event !== events[0]) },
          { query: 'status=failed', expect: ids(rows, (r) => r.status === 'failed') },
          { query: `status=succeeded&event_id=${events[1]}`, expect: ids(rows, (r) => r.status === 'succeeded' && r.event === events[1]) },
          { query: `event_id=${randomUUID()}`, expect: [] },
        ],
      };
    },
  },

  'transactions:list': {
    invalid: ['type=bogus', 'order_id=nope', 'organization_id=nope', ...INVALID_WINDOWS],
    seed: async (n) => {
      const { user, stranger, a, b, c } = await world();
      // an organization the user reaches as a plain member: no finance:read there
      const d = (await app.organization(stranger.id)).id;
      await app.membership(d, user.id, 'member');
      const refunds = Math.floor(n / 3);
      const payments = n - refunds;
      const products = { [a]: await product(a), [b]: await product(b) };
      const customers = { [a]: await customer(a), [b]: await customer(b) };
      const orders: { id: string; org: string }[] = [];
      for (let j = 0; j < payments; j++) {
        const org = j % 3 === 2 ? b : a;
        const id = await insertRow('rowgate.orders', {
          organization_id: org,
          customer_id: customers[org],
          product_id: products[org],
          amount: (((j * 3) % 5) + 1) * 100,
          currency: 'usd',
          status: 'paid',
        });
        orders.push({ id, org });
      }
      for (const order of orders.slice(0, refunds)) {
        await app.sql(`update rowgate.orders set status = 'refunded' where id = $1`, [order.id]);
      }
      for (const org of [c, d]) await app.order(await product(org), await customer(org), 'paid');
      const rows = await app.sql<{ id: string; org: string; order: string; type: string }>(
        `select id, organization_id as org, order_id as order, type from rowgate.transactions
         where organization_id = any($1::uuid[]) order by id`,
        [[a, b]],
      );
      expect(rows.length).toBe(n);
      const stamps = await stamp('rowgate.transactions', ids(rows));
      const [o0, o1, o10] = [orders[0]!.id, orders[1]!.id, orders[10]!.id];
      return {
        path: '/v1/transactions/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          ...windowCases(stamps),
          ...organizationCases(rows, [a, b], [c, d]),
          { query: `order_id=${o0}`, expect: ids(rows, (r) => r.order === o0) },
          { query: `order_id=${o1}&order_id=${o10}`, expect: ids(rows, (r) => r.order === o1 || r.order === o10) },
          { query: 'type=refund', expect: ids(rows, (r) => r.type === 'refund') },
          { query: 'type=payment', expect: ids(rows, (r) => r.type === 'payment') },
          { query: 'type=payment&type=refund', expect: ids(rows) },
          { query: `organization_id=${b}&type=refund`, expect: ids(rows, (r) => r.org === b && r.type === 'refund') },
        ],
      };
    },
  },

  'refunds:list': {
    invalid: ['order_id=nope', 'organization_id=nope', ...INVALID_WINDOWS, ...INVALID_METADATA],
    seed: async (n) => {
      const { user, a, b, c } = await world();
      // a few paid orders per organization, refunded in several parts (written as the owner: the amounts need not add up here)
      const orders: { id: string; org: string }[] = [];
      for (const org of [a, a, a, b, b, c]) {
        const id = await insertRow('rowgate.orders', {
          organization_id: org,
          customer_id: await customer(org),
          product_id: await product(org),
          amount: 100_000,
          currency: 'usd',
          status: 'paid',
        });
        orders.push({ id, org });
      }
      const rows: { id: string; org: string; order: string }[] = [];
      for (let i = 0; i < n; i++) {
        const order = orders[i % 5]!;
        const id = await insertRow('rowgate.refunds', {
          organization_id: order.org,
          order_id: order.id,
          amount: (((i * 3) % 5) + 1) * 100,
          currency: 'usd',
          reason: ['duplicate', 'fraudulent', 'customer_request', 'other'][i % 4],
        });
        rows.push({ id, org: order.org, order: order.id });
      }
      const stamps = await stamp('rowgate.refunds', ids(rows));
      const metas = await tagMetadata('rowgate.refunds', ids(rows));
      const hidden = orders[5]!.id;
      await insertRow('rowgate.refunds', { organization_id: c, order_id: hidden, amount: 100, currency: 'usd', reason: 'other' });
      const [o0, o1, o3] = [orders[0]!.id, orders[1]!.id, orders[3]!.id];
      return {
        path: '/v1/refunds/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          ...windowCases(stamps),
          ...metadataCases(metas),
          ...organizationCases(rows, [a, b], [c]),
          { query: `order_id=${o0}`, expect: ids(rows, (r) => r.order === o0) },
          { query: `order_id=${o1}&order_id=${o3}`, expect: ids(rows, (r) => r.order === o1 || r.order === o3) },
          { query: `order_id=${hidden}`, expect: [] },
          { query: `organization_id=${b}&order_id=${o0}`, expect: [] },
        ],
      };
    },
  },

  'payout_accounts:list': {
    invalid: ['organization_id=nope'],
    seed: async (n) => {
      const { user, stranger, a, b, c } = await world();
      await app.account(a, user.id);
      await app.account(b, user.id);
      await app.account(c, stranger.id);
      // the user administers organization e, but its account is someone else's
      const e = (await app.organization(user.id)).id;
      await app.membership(e, stranger.id, 'admin');
      await app.account(e, stranger.id);
      const rows: { id: string; org: string }[] = [];
      for (let i = 0; i < n; i++) {
        const org = i % 3 === 0 ? b : a;
        const id = await insertRow('rowgate.payout_accounts', {
          organization_id: org,
          type: ['bank_account', 'stripe', 'open_collective'][i % 3],
          country: i % 2 ? 'US' : 'DE',
          currency: i % 2 ? 'usd' : 'eur',
        });
        rows.push({ id, org });
      }
      await stamp('rowgate.payout_accounts', ids(rows));
      for (const org of [c, e])
        await insertRow('rowgate.payout_accounts', { organization_id: org, type: 'stripe', country: 'US', currency: 'usd' });
      await insertRow('rowgate.payout_accounts', {
        organization_id: a,
        type: 'stripe',
        country: 'US',
        currency: 'usd',
        deleted_at: new Date(),
      });
      return {
        path: '/v1/payout-accounts/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: organizationCases(rows, [a, b], [c, e]),
      };
    },
  },

  'organization_access_tokens:list': {
    invalid: ['organization_id=nope', 'created_by=nope'],
    seed: async (n) => {
      const { user, stranger, a, b, c } = await world();
      // the user is a plain member of f: no access_tokens:manage there
      const f = (await app.organization(stranger.id)).id;
      await app.membership(f, user.id, 'member');
      // the makers: the user, another user, or none (a token minted before created_by was kept)
      const other = await app.user();
      const makers = [user.id, other.id, null];
      const rows: { id: string; org: string; maker: string | null }[] = [];
      for (let i = 0; i < n; i++) {
        const org = i % 3 === 0 ? b : a;
        const maker = makers[i % 5 === 0 ? 2 : i % 2]!;
        const id = await insertRow('rowgate.organization_access_tokens', {
          organization_id: org,
          comment: `k${pad(i % 6)}`,
          scopes: ['products_read'],
          last_used_at: i % 4 === 0 ? null : new Date(BASE + ((i * 3) % 5) * 60_000),
          created_by: maker,
        });
        rows.push({ id, org, maker });
      }
      const madeBy = (...who: string[]) => ids(rows.filter((r) => r.maker !== null && who.includes(r.maker)));
      await stamp('rowgate.organization_access_tokens', ids(rows));
      await app.oat(c, ['products_read']);
      await app.oat(f, ['products_read']);
      await insertRow('rowgate.organization_access_tokens', {
        organization_id: a,
        comment: 'k00',
        scopes: ['products_read'],
        deleted_at: new Date(),
      });
      return {
        path: '/v1/organization-access-tokens/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          ...organizationCases(rows, [a, b], [c, f]),
          { query: `created_by=${user.id}`, expect: madeBy(user.id) },
          { query: `created_by=${user.id}&created_by=${other.id}`, expect: madeBy(user.id, other.id) },
          { query: `created_by=${stranger.id}`, expect: [] },
          { query: `created_by=${other.id}&organization_id=${b}`, expect: ids(rows.filter((r) => r.maker === other.id && r.org === b)) },
        ],
      };
    },
  },

  'personal_access_tokens:list': {
    seed: async (n) => {
      const user = await app.user();
      const stranger = await app.user();
      const issue = async (userId: string) => {
        const [row] = await app.sql<{ id: string }>('select id from rowgate_private.issue_personal_access_token($1, $2, $3, null, $4)', [
          userId,
          'x',
          ['user:read'],
          randomBytes(32),
        ]);
        return row!.id;
      };
      const keys: string[] = [];
      for (let i = 0; i < n; i++) {
        const id = await issue(user.id);
        await app.sql('update rowgate.personal_access_tokens set comment = $2, last_used_at = $3 where id = $1', [
          id,
          `k${pad(i % 6)}`,
          i % 4 === 0 ? null : new Date(BASE + ((i * 3) % 5) * 60_000),
        ]);
        keys.push(id);
      }
      await stamp('rowgate.personal_access_tokens', keys);
      await issue(stranger.id);
      const revoked = await issue(user.id);
      await app.sql('update rowgate.personal_access_tokens set deleted_at = now() where id = $1', [revoked]);
      return { path: '/v1/personal-access-tokens/', auth: { session: user.session }, keys, filters: [] };
    },
  },

  'oauth2_clients:list': {
    seed: async (n) => {
      const user = await app.user();
      const stranger = await app.user();
      const client = (userId: string, name: string, deletedAt: Date | null = null) =>
        insertRow('rowgate.oauth2_clients', {
          client_id: `rg_ci_${randomBytes(12).toString('hex')}`,
          user_id: userId,
          client_name: name,
          redirect_uris: ['https://app.example.com/cb'],
          scopes: ['user:read'],
          token_endpoint_auth_method: 'none',
          deleted_at: deletedAt,
        });
      const keys: string[] = [];
      for (let i = 0; i < n; i++) keys.push(await client(user.id, `k${pad(i % 6)}`));
      await stamp('rowgate.oauth2_clients', keys);
      // out of sight: a stranger's client, a deleted one
      await client(stranger.id, 'k00');
      await client(user.id, 'k00', new Date());
      return { path: '/v1/oauth2/clients/', auth: { session: user.session }, keys, filters: [] };
    },
  },

  'organizations:list': {
    invalid: [`slug=${'x'.repeat(65)}`],
    seed: async (n) => {
      const user = await app.user();
      const stranger = await app.user();
      const rows: { id: string; slug: string }[] = [];
      for (let i = 0; i < n; i++) {
        const options = { name: `o${pad(i % 7)}`, slug: `s${pad((i * 7) % n)}${unique()}` };
        // most are the user's own; some it joined as a member
        const owner = i % 5 === 4 ? stranger : user;
        const { id } = await app.organization(owner.id, options);
        if (owner === stranger) await app.membership(id, user.id, i % 2 ? 'member' : 'finance');
        rows.push({ id, slug: options.slug });
      }
      await stamp('rowgate.organizations', ids(rows));
      // out of sight: a stranger's organization, a deleted one, one the user left
      const foreign = await app.organization(stranger.id);
      const deleted = await app.organization(user.id);
      await app.sql('update rowgate.organizations set deleted_at = now() where id = $1', [deleted.id]);
      const left = await app.organization(stranger.id);
      await app.membership(left.id, user.id, 'member');
      await app.sql('update rowgate.memberships set deleted_at = now() where organization_id = $1 and user_id = $2', [left.id, user.id]);
      return {
        path: '/v1/organizations/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          { query: `slug=${rows[3]!.slug}`, expect: [rows[3]!.id] },
          { query: `slug=${rows[4]!.slug}`, expect: [rows[4]!.id] },
          { query: `slug=${foreign.slug}`, expect: [] },
          { query: `slug=${deleted.slug}`, expect: [] },
          { query: 'slug=no-such-organization', expect: [] },
          // organization_id narrows to some of the user's organizations; others yield nothing
          { query: `organization_id=${rows[0]!.id}`, expect: [rows[0]!.id] },
          { query: `organization_id=${rows[0]!.id}&organization_id=${rows[4]!.id}`, expect: [rows[0]!.id, rows[4]!.id].sort() },
          { query: `organization_id=${foreign.id}`, expect: [] },
          { query: `organization_id=${deleted.id}`, expect: [] },
          { query: `organization_id=${left.id}`, expect: [] },
        ],
      };
    },
  },

  'roles:list': {
    invalid: ['built_in=maybe', 'sorting=permissions'],
    seed: async (n) => {
      const admin = await app.user();
      const a = (await app.organization(admin.id)).id;
      const builtIn = ['admin', 'finance', 'member'];
      const rows: { id: string; name: string }[] = [];
      for (let i = 0; i < n - builtIn.length; i++) {
        const name = `r${pad((i * 5) % n)}${unique()}`;
        rows.push({
          name,
          id: await insertRow('rowgate.organization_roles', { organization_id: a, name, permissions: ['products:write'] }),
        });
      }
      await stamp(
        'rowgate.organization_roles',
        rows.map((r) => r.id),
      );
      // out of sight: a deleted role, and another organization's
      await insertRow('rowgate.organization_roles', { organization_id: a, name: 'gone', permissions: [], deleted_at: new Date() });
      const other = await app.organization(admin.id);
      await insertRow('rowgate.organization_roles', { organization_id: other.id, name: 'elsewhere', permissions: [] });
      return {
        path: `/v1/organizations/${a}/roles`,
        auth: { session: admin.session },
        keys: [...builtIn, ...rows.map((r) => r.name)],
        key: (item) => item.name,
        filters: [
          { query: 'built_in=true', expect: builtIn },
          { query: 'built_in=false', expect: rows.map((r) => r.name) },
        ],
      };
    },
  },
  'invitations:list': {
    invalid: ['status=bogus'],
    seed: async (n) => {
      const admin = await app.user();
      const a = (await app.organization(admin.id)).id;
      const statuses = ['pending', 'accepted', 'declined', 'revoked', 'expired'];
      const rows: { id: string; status: string }[] = [];
      for (let i = 0; i < n; i++) {
        const status = statuses[i % 5]!;
        const id = await insertRow('rowgate.invitations', {
          organization_id: a,
          email: `i${pad((i * 5) % n)}${unique()}@example.com`,
          role: 'member',
          invited_by: admin.id,
          status: status === 'expired' ? 'pending' : status,
          ...(status === 'expired' ? { expires_at: new Date(Date.now() - 3_600_000 - i * 1000) } : {}),
        });
        rows.push({ id, status });
      }
      await stamp(
        'rowgate.invitations',
        rows.map((r) => r.id),
      );
      const other = await app.organization(admin.id);
      await insertRow('rowgate.invitations', {
        organization_id: other.id,
        email: `o${unique()}@example.com`,
        role: 'member',
        invited_by: admin.id,
      });
      return {
        path: `/v1/organizations/${a}/invitations`,
        auth: { session: admin.session },
        keys: ids(rows),
        filters: [
          { query: 'status=pending', expect: ids(rows, (r) => r.status === 'pending') },
          { query: 'status=expired', expect: ids(rows, (r) => r.status === 'expired') },
          { query: 'status=accepted&status=declined', expect: ids(rows, (r) => r.status === 'accepted' || r.status === 'declined') },
        ],
      };
    },
  },
  'invitations:mine': {
    seed: async (n) => {
      const inviter = await app.user();
      const invitee = await app.user();
      const rows: { id: string; org: string }[] = [];
      for (let i = 0; i < n; i++) {
        const org = (await app.organization(inviter.id)).id;
        rows.push({
          org,
          id: await insertRow('rowgate.invitations', {
            organization_id: org,
            email: invitee.email,
            role: 'member',
            invited_by: inviter.id,
          }),
        });
      }
      await stamp(
        'rowgate.invitations',
        rows.map((r) => r.id),
      );
      // out of sight: answered and expired invitations to the invitee, and someone else's
      const org = (await app.organization(inviter.id)).id;
      await insertRow('rowgate.invitations', {
        organization_id: org,
        email: invitee.email,
        role: 'member',
        invited_by: inviter.id,
        status: 'declined',
      });
      await insertRow('rowgate.invitations', {
        organization_id: org,
        email: invitee.email,
        role: 'member',
        invited_by: inviter.id,
        expires_at: new Date(Date.now() - 1000),
      });
      await insertRow('rowgate.invitations', { organization_id: org, email: inviter.email, role: 'member', invited_by: inviter.id });
      return {
        path: '/v1/invitations/',
        auth: { session: invitee.session },
        keys: ids(rows),
        filters: [
          { query: `organization_id=${rows[0]!.org}`, expect: [rows[0]!.id] },
          { query: `organization_id=${rows[0]!.org}&organization_id=${rows[1]!.org}`, expect: [rows[0]!.id, rows[1]!.id] },
          { query: `organization_id=${org}`, expect: [] },
          { query: `organization_id=${randomUUID()}`, expect: [] },
        ],
      };
    },
  },
  'members:list': {
    invalid: [`role=${'x'.repeat(51)}`],
    seed: async (n) => {
      const admin = await app.user();
      const a = (await app.organization(admin.id)).id;
      const rows: { id: string; role: string }[] = [{ id: admin.id, role: 'admin' }];
      for (let i = 1; i < n; i++) {
        const member = await app.user({ email: `m${pad((i * 5) % n)}${unique()}@example.com` });
        const role = ['member', 'finance', 'admin'][i % 3]!;
        await app.membership(a, member.id, role);
        rows.push({ id: member.id, role });
      }
      const memberships = await app.sql<{ id: string; user_id: string }>(
        'select id, user_id from rowgate.memberships where organization_id = $1',
        [a],
      );
      const tie = new Map(memberships.map((m) => [m.user_id, m.id]));
      await stamp(
        'rowgate.memberships',
        rows.map((r) => tie.get(r.id)!),
      );
      // out of sight: a removed member, and the members of another organization
      const removed = await app.user();
      await app.membership(a, removed.id, 'member');
      await app.sql('update rowgate.memberships set deleted_at = now() where organization_id = $1 and user_id = $2', [a, removed.id]);
      const other = await app.organization(admin.id);
      await app.membership(other.id, (await app.user()).id, 'member');
      return {
        path: `/v1/organizations/${a}/members`,
        auth: { session: admin.session },
        keys: ids(rows),
        key: (item) => item.user_id,
        tie,
        filters: [
          { query: 'role=admin', expect: ids(rows, (r) => r.role === 'admin') },
          { query: 'role=member&role=finance', expect: ids(rows, (r) => r.role !== 'admin') },
          { query: 'role=owner', expect: [] },
        ],
      };
    },
  },

  'customer_members:list_all': {
    invalid: ['customer_id=nope', 'organization_id=nope', `email=${'x'.repeat(321)}`, ...INVALID_WINDOWS, ...INVALID_METADATA],
    seed: async (n) => {
      const { user, a, b, c } = await world();
      const [ca1, ca2, cb, cc] = [await customer(a), await customer(a), await customer(b), await customer(c)];
      const orgOf = { [ca1]: a, [ca2]: a, [cb]: b };
      const rows: { id: string; org: string; customer: string; email: string }[] = [];
      for (let i = 0; i < n; i++) {
        // each e-mail on three customers (ties when sorting by email; unique per customer)
        const row = { customer: [ca1, ca2, cb][i % 3]!, email: `s${pad(Math.floor(i / 3))}@example.com` };
        const id = await insertRow('rowgate.customer_members', { customer_id: row.customer, email: row.email, role: 'member' });
        rows.push({ id, org: orgOf[row.customer]!, ...row });
      }
      const stamps = await stamp('rowgate.customer_members', ids(rows));
      const metas = await tagMetadata('rowgate.customer_members', ids(rows));
      // out of sight: another organization's seat, a removed seat, the seat of a removed customer
      await insertRow('rowgate.customer_members', { customer_id: cc, email: 's01@example.com' });
      await insertRow('rowgate.customer_members', { customer_id: ca1, email: 'gone@example.com', deleted_at: new Date() });
      const removed = await customer(a);
      await insertRow('rowgate.customer_members', { customer_id: removed, email: 's01@example.com' });
      await app.sql('update rowgate.customers set deleted_at = now() where id = $1', [removed]);
      return {
        path: '/v1/members/',
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          ...windowCases(stamps),
          ...metadataCases(metas),
          ...organizationCases(rows, [a, b], [c]),
          { query: `customer_id=${ca1}`, expect: ids(rows, (r) => r.customer === ca1) },
          { query: `customer_id=${ca2}&customer_id=${cb}`, expect: ids(rows, (r) => r.customer !== ca1) },
          { query: `customer_id=${cc}`, expect: [] },
          { query: `customer_id=${removed}`, expect: [] },
          { query: 'email=S01@Example.com', expect: ids(rows, (r) => r.email === 's01@example.com') },
          { query: `organization_id=${a}&email=s02@example.com`, expect: ids(rows, (r) => r.org === a && r.email === 's02@example.com') },
          { query: 'email=nobody@example.com', expect: [] },
        ],
      };
    },
  },

  'customer_members:list': {
    invalid: [`email=${'x'.repeat(321)}`, ...INVALID_WINDOWS, ...INVALID_METADATA],
    seed: async (n) => {
      const user = await app.user();
      const a = (await app.organization(user.id)).id;
      const [mine, neighbour] = [await customer(a), await customer(a)];
      const rows: { id: string; email: string }[] = [];
      for (let i = 0; i < n; i++) {
        const email = `s${pad((i * 5) % n)}@example.com`;
        const role = ['owner', 'billing_manager', 'member'][i % 3];
        rows.push({ id: await insertRow('rowgate.customer_members', { customer_id: mine, email, role }), email });
      }
      const stamps = await stamp('rowgate.customer_members', ids(rows));
      const metas = await tagMetadata('rowgate.customer_members', ids(rows));
      // out of sight: the neighbour's seat with the same e-mail, a removed seat
      await insertRow('rowgate.customer_members', { customer_id: neighbour, email: 's01@example.com' });
      await insertRow('rowgate.customer_members', { customer_id: mine, email: 'gone@example.com', deleted_at: new Date() });
      return {
        path: `/v1/customers/${mine}/members`,
        auth: { session: user.session },
        keys: ids(rows),
        filters: [
          ...windowCases(stamps),
          ...metadataCases(metas),
          { query: 'email=S01@example.COM', expect: ids(rows, (r) => r.email === 's01@example.com') },
          { query: 'email=gone@example.com', expect: [] },
        ],
      };
    },
  },

  'customer_portal:list_orders': {
    invalid: ['status=bogus'],
    seed: async (n) => {
      const user = await app.user();
      const a = (await app.organization(user.id)).id;
      const [p1, p2] = [await product(a, 500), await product(a, 900)];
      const [me, neighbour] = [await customer(a), await customer(a)];
      const rows: { id: string; status: string }[] = [];
      for (let i = 0; i < n; i++) {
        const status = ['pending', 'paid', 'refunded'][i % 3]!;
        const id = await insertRow('rowgate.orders', {
          organization_id: a,
          customer_id: me,
          product_id: i % 2 ? p1 : p2,
          amount: ((i * 3) % 5) * 100,
          currency: 'usd',
          status,
        });
        rows.push({ id, status });
      }
      await stamp('rowgate.orders', ids(rows));
      for (const status of ['pending', 'paid', 'refunded']) await app.order(p1, neighbour, status);
      return {
        path: '/v1/customer-portal/orders/',
        auth: { token: await app.customerSession(me) },
        keys: ids(rows),
        filters: [
          { query: 'status=paid', expect: ids(rows, (r) => r.status === 'paid') },
          { query: 'status=pending&status=refunded', expect: ids(rows, (r) => r.status !== 'paid') },
        ],
      };
    },
  },
};

// ---------------------------------------------------------------------------
// The table itself.

describe('the declarations cover every list route', () => {
  test('there are list routes, found both by response schema and by path', () => {
    const byPath = apiRoutes.filter(
      (r) =>
        r.method === 'get' &&
        // an export streams every row of a list: no pages
        !r.path.startsWith('/v1/exports/') &&
        (r.path.endsWith('/') ||
          [
            '/members',
            '/deliveries',
            '/roles',
            '/invitations',
            '/denials',
            '/sessions',
            '/authorized-apps',
            '/oauth2-grants',
            '/requests',
            '/sql-credentials',
          ].some((end) => r.path.endsWith(end))),
    );
    expect(listRoutes.map((r) => r.operationId).sort()).toEqual(byPath.map((r) => r.operationId).sort());
    expect(listRoutes.length).toBeGreaterThanOrEqual(10);
  });

  test('every list route has a declaration, and every declaration a route', () => {
    expect(Object.keys(declarations).sort()).toEqual(listRoutes.map((r) => r.operationId).sort());
  });

  test('every list names its sortable fields, created_at among them', () => {
    const missing = listRoutes.filter((r) => !sortableFields(r).includes('created_at')).map((r) => r.operationId);
    expect(missing).toEqual([]);
  });

  test('every list of organization-owned items that a User may call can narrow by organization_id', () => {
    const missing = listRoutes
      .filter((r) => r.access.credentials.includes('web_session'))
      .filter((r) => 'organization_id' in (((r.response as z.ZodObject).shape.items as any).element?.shape ?? {}))
      .filter((r) => !r.path.includes('{id}')) // a list under one organization's path is narrowed already
      .filter((r) => !filterParams(r).includes('organization_id'))
      .map((r) => r.operationId);
    expect(missing).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// The checks, generated for each list.

type SortKey = { field: string; descending: boolean };

const parseSorting = (sorting: string): SortKey[] =>
  sorting.split(',').map((k) => ({ field: k.replace(/^-/, ''), descending: k.startsWith('-') }));

/** nulls sort after every value (PostgreSQL's default: last ascending, first descending) */
function compare(x: unknown, y: unknown): number {
  if (x === y) return 0;
  if (x === null || x === undefined) return 1;
  if (y === null || y === undefined) return -1;
  if (typeof x === 'number' && typeof y === 'number') return x < y ? -1 : 1;
  return String(x) < String(y) ? -1 : 1;
}

describe.each(listRoutes.map((r) => [r.operationId, r] as const))('%s', (operationId, route) => {
  const declaration = declarations[operationId];
  let fx: Fixture;
  let keyOf: (item: Item) => string;
  let tieOf: (item: Item) => string;

  beforeAll(async () => {
    if (!declaration) throw new Error(`no declaration for the list ${operationId}: add one to the table`);
    fx = await declaration.seed(N);
    keyOf = fx.key ?? ((item) => item.id);
    tieOf = (item) => fx.tie?.get(keyOf(item)) ?? keyOf(item);
    expect(fx.keys.length).toBe(N);
  });

  const list = (query = '') => app.get(`${fx.path}${query ? `?${query}` : ''}`, fx.auth);

  async function listOk(query: string) {
    const res = await list(query);
    expect({ query, status: res.status }).toEqual({ query, status: 200 });
    return res.body as { items: Item[]; pagination: { total_count: number; max_page: number } };
  }

  /** every page of `limit`, checked for sizes and totals, concatenated */
  async function allPages(query: string, limit: number) {
    const pages = Math.ceil(N / limit);
    const seen: Item[] = [];
    for (let page = 1; page <= pages; page++) {
      const body = await listOk(`${query}&limit=${limit}&page=${page}`);
      expect(body.pagination).toEqual({ total_count: N, max_page: pages });
      expect(body.items.length).toBe(Math.min(limit, N - (page - 1) * limit));
      seen.push(...body.items);
    }
    return seen;
  }

  /** adjacent items in order by the keys, ties broken by id (one direction throughout) */
  function orderViolations(items: Item[], keys: SortKey[]): string[] {
    const violations: string[] = [];
    let tieDirection: number | undefined;
    for (let j = 1; j < items.length; j++) {
      const [p, q] = [items[j - 1]!, items[j]!];
      let c = 0;
      for (const { field, descending } of keys) {
        c = compare(p[field], q[field]) * (descending ? -1 : 1);
        if (c !== 0) break;
      }
      const show = (item: Item) => `${keys.map((k) => JSON.stringify(item[k.field])).join('/')} (${tieOf(item)})`;
      if (c > 0) violations.push(`#${j - 1} ${show(p)} before #${j} ${show(q)}`);
      if (c === 0) {
        const t = compare(tieOf(p), tieOf(q));
        tieDirection ??= t;
        if (t === 0 || t !== tieDirection) violations.push(`tie #${j - 1} ${show(p)} / #${j} ${show(q)} not broken by id`);
      }
    }
    return violations;
  }

  const sortable = sortableFields(route);

  test('pagination: 5 pages of 5 cover every row once, in order, with the true totals', async () => {
    const full = await listOk('limit=100');
    expect(full.pagination).toEqual({ total_count: N, max_page: 1 });
    expect(full.items.map(keyOf).sort()).toEqual([...fx.keys].sort());
    const paged = await allPages('', LIMIT);
    expect(paged.map(keyOf)).toEqual(full.items.map(keyOf));
  });

  test('pagination: defaults to page 1 of 10; limit 1 and 100 are accepted', async () => {
    const body = await listOk('');
    expect(body.pagination).toEqual({ total_count: N, max_page: Math.ceil(N / 10) });
    expect(body.items.map(keyOf)).toEqual((await listOk('limit=10&page=1')).items.map(keyOf));
    expect(body.items.length).toBe(10);
    const last = await listOk(`limit=1&page=${N}`);
    expect({ n: last.items.length, pagination: last.pagination }).toEqual({ n: 1, pagination: { total_count: N, max_page: N } });
  });

  test.each([Math.ceil(N / LIMIT) + 1, 1_000])('pagination: page %i, past the end, is empty with the true totals', async (page) => {
    const body = await listOk(`limit=${LIMIT}&page=${page}`);
    expect(body).toEqual({ items: [], pagination: { total_count: N, max_page: Math.ceil(N / LIMIT) } });
  });

  test.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=2.5', 'limit'],
    ['limit=', 'limit'],
    ['limit=5&limit=6', 'limit'],
    ['limit=5&limit=5', 'limit'],
    ['page=0', 'page'],
    ['page=-1', 'page'],
    ['page=abc', 'page'],
    ['page=1.5', 'page'],
    ['page=1&page=2', 'page'],
  ])('pagination: %s → 422 at query.%s', async (query, param) => {
    const issues = expectValidationError(await list(query));
    expect(issues.map((i) => i.loc)).toEqual([['query', param]]);
  });

  test('sorting: the allow-list read from the schema is the one the 422 names', async () => {
    expect(sortable.length).toBeGreaterThan(0);
    const issues = expectValidationError(await list('sorting=unknown'));
    expect(issues.map((i) => i.loc)).toEqual([['query', 'sorting']]);
    expect(issues[0]!.msg).toContain(sortable.join(', '));
  });

  test.each([
    'unknown',
    '-unknown',
    'created_at,unknown',
    'created_at&sorting=unknown',
    'deleted_at',
    'id',
    'created_at%20desc',
    'created_at,-created_at',
    'created_at&sorting=created_at',
  ])('sorting=%s → 422 at query.sorting', async (sorting) => {
    const issues = expectValidationError(await list(`sorting=${sorting}`));
    expect(issues.map((i) => i.loc)).toEqual([['query', 'sorting']]);
  });

  test.each(sortable.flatMap((field) => [field, `-${field}`]))(
    'sorting=%s: in order, ties broken by id, pages neither overlap nor skip',
    async (sorting) => {
      const full = await listOk(`sorting=${sorting}&limit=100`);
      expect(full.items.map(keyOf).sort()).toEqual([...fx.keys].sort());
      expect(orderViolations(full.items, parseSorting(sorting))).toEqual([]);
      const paged = await allPages(`sorting=${sorting}`, LIMIT);
      expect(paged.map(keyOf)).toEqual(full.items.map(keyOf));
    },
  );

  test('sorting by several fields, comma-separated or repeated', async () => {
    // first by the field with the most repeated values, so that the second key matters
    const all = (await listOk('limit=100')).items;
    const repeats = (field: string) => all.length - new Set(all.map((item) => JSON.stringify(item[field]))).size;
    const candidates = sortable.filter((f) => f !== 'created_at');
    if (!candidates.length) {
      // one sortable field: naming it twice is refused, not a second sort key
      expect(expectValidationError(await list('sorting=created_at,-created_at')).map((i) => i.loc)).toEqual([['query', 'sorting']]);
      return;
    }
    const first = candidates.sort((x, y) => repeats(y) - repeats(x))[0]!;
    const second = 'created_at';
    expect(repeats(first)).toBeGreaterThan(0);
    const keys = `${first},-${second}`;
    const comma = await listOk(`sorting=${keys}&limit=100`);
    expect(orderViolations(comma.items, parseSorting(keys))).toEqual([]);
    const repeated = await listOk(`sorting=${first}&sorting=-${second}&limit=100`);
    expect(repeated.items.map(keyOf)).toEqual(comma.items.map(keyOf));
    const paged = await allPages(`sorting=${keys}`, LIMIT);
    expect(paged.map(keyOf)).toEqual(comma.items.map(keyOf));
  });

  test('the default order is -created_at', async () => {
    const byDefault = await listOk('limit=100');
    expect(orderViolations(byDefault.items, parseSorting('-created_at'))).toEqual([]);
    // the seeded rows have creation times unrelated to their insertion order
    expect(byDefault.items.map(keyOf)).not.toEqual([...fx.keys].reverse());
    expect(byDefault.items.map(keyOf)).toEqual((await listOk('sorting=-created_at&limit=100')).items.map(keyOf));
  });

  test('every filter returns exactly the expected rows', async () => {
    // each filter parameter of the list is exercised by a declared case
    const exercised = new Set(
      fx.filters.flatMap((f) => [...new URLSearchParams(f.query).keys()].map((k) => k.replace(/^metadata\[.*\]$/, 'metadata'))),
    );
    expect(filterParams(route).filter((p) => !exercised.has(p))).toEqual([]);
    const got: Record<string, unknown> = {};
    const want: Record<string, unknown> = {};
    for (const { query, expect: expected } of fx.filters) {
      const body = await listOk(`${query}&limit=100`);
      got[query] = { keys: body.items.map(keyOf).sort(), pagination: body.pagination };
      want[query] = {
        keys: [...expected].sort(),
        pagination: { total_count: expected.length, max_page: Math.ceil(expected.length / 100) },
      };
    }
    expect(got).toEqual(want);
    // the cases are not vacuous: some narrow to a proper, non-empty subset
    expect(fx.filters.some((f) => f.expect.length > 0 && f.expect.length < N) || filterParams(route).length === 0).toBe(true);
  });

  test.each(declaration?.invalid ?? [])('filter %s → 422 at its parameter', async (query) => {
    const issues = expectValidationError(await list(query));
    const param = query.split('=')[0]!;
    expect(issues.map((i) => i.loc.slice(0, 2))).toEqual([['query', param]]);
  });

  test.each(['bogus=1', 'per_page=5', 'Limit=5', 'organization=x'])('an unknown query parameter (%s) → 422 at its name', async (query) => {
    const issues = expectValidationError(await list(query));
    expect(issues.map((i) => i.loc)).toEqual([['query', query.split('=')[0]]]);
  });

  const getRoute = getRouteOf(route);
  test(getRoute ? `a list item equals its GET ${getRoute.path}` : 'a list item has the read schema (no GET route)', async () => {
    const body = await listOk('limit=100');
    expect(body.items.length).toBe(N);
    // the list's own item schema, strictly: no field more, none less
    const itemSchema = ((route.response as z.ZodObject).shape.items as z.ZodArray<z.ZodObject>).element;
    for (const item of body.items) expect(Object.keys(item).sort()).toEqual(Object.keys(itemSchema.shape).sort());
    if (!getRoute) return;
    const gotten: Item[] = [];
    for (const item of body.items) {
      const res = await app.get(getRoute.path.replace('{id}', item.id), fx.auth);
      expect(res.status).toBe(200);
      gotten.push(res.body);
    }
    expect(gotten).toEqual(body.items);
  });

  // ---------------------------------------------------------------------------
  // 2026-12-15 (SPEC §23): the same list in keyset pages, side by side with 2026-11-20's.

  const KEYSET = '2026-12-15';
  const inKeyset = (query: string, headers: Record<string, string> = {}) =>
    app.get(`${fx.path}${query ? `?${query}` : ''}`, {
      ...fx.auth,
      headers: { ...fx.auth.headers, 'rowgate-version': KEYSET, ...headers },
    });

  async function keysetOk(query: string, headers: Record<string, string> = {}) {
    const res = await inKeyset(query, headers);
    expect({ query, status: res.status, body: res.status === 200 ? undefined : res.body }).toEqual({ query, status: 200, body: undefined });
    expect(res.headers.get('rowgate-version')).toBe(KEYSET);
    expect(Object.keys(res.body)).toEqual(['items', 'next_cursor']);
    return res as { headers: Headers; body: { items: Item[]; next_cursor: string | null } };
  }

  /** every keyset page of `limit` after the first, following next_cursor */
  async function allKeysetPages(query: string, limit: number) {
    const seen: Item[] = [];
    let after: string | null = null;
    for (let pages = 0; pages <= N; pages++) {
      const { body } = await keysetOk(`${query}&limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ''}`);
      seen.push(...body.items);
      if (body.next_cursor === null) return seen;
      expect(body.items.length).toBe(limit);
      after = body.next_cursor;
    }
    throw new Error('next_cursor never ended');
  }

  test.each(['', ...sortable.flatMap((field) => [field, `-${field}`])])(
    '2026-12-15: sorting=%s in keyset pages is 2026-11-20 order, each row once',
    async (sorting) => {
      const query = sorting ? `sorting=${sorting}` : '';
      const numbered = await listOk(`${query}&limit=100`);
      const paged = await allKeysetPages(query, LIMIT);
      // the items themselves, byte for byte as 2026-11-20 answers them
      expect(paged).toEqual(numbered.items);
      const single = await keysetOk(`${query}&limit=100`);
      expect(single.body).toEqual({ items: numbered.items, next_cursor: null });
    },
  );

  test('2026-12-15: a sort on two fields in keyset pages', async () => {
    const keys = `${sortable.find((f) => f !== 'created_at') ?? 'created_at'},-created_at`;
    if (keys.startsWith('created_at,')) return;
    const numbered = await listOk(`sorting=${keys}&limit=100`);
    expect(await allKeysetPages(`sorting=${keys}`, 4)).toEqual(numbered.items);
  });

  test('2026-12-15: next_cursor is null on the page holding the last item; no count unless asked', async () => {
    const first = await keysetOk(`limit=${N}`);
    expect(first.body.next_cursor).toBeNull();
    expect(first.headers.get('rowgate-total-count')).toBeNull();
    const short = await keysetOk(`limit=${N - 1}`);
    expect(short.body.next_cursor).toEqual(expect.any(String));
    const last = await keysetOk(`limit=${N - 1}&after=${encodeURIComponent(short.body.next_cursor!)}`);
    expect(last.body.items.length).toBe(1);
    expect(last.body.next_cursor).toBeNull();
    const counted = await keysetOk('limit=2', { prefer: 'count=exact' });
    expect(counted.headers.get('rowgate-total-count')).toBe(String(N));
    expect(counted.headers.get('preference-applied')).toBe('count=exact');
  });

  test('2026-12-15: page is 422 at query.page; a cursor of other filters, another sorting or forged is 422 at query.after', async () => {
    expect(expectValidationError(await inKeyset('page=1')).map((i) => i.loc)).toEqual([['query', 'page']]);
    expect(expectValidationError(await inKeyset('limit=0')).map((i) => i.loc)).toEqual([['query', 'limit']]);
    const { body } = await keysetOk('limit=2');
    const after = encodeURIComponent(body.next_cursor!);
    expect((await inKeyset(`limit=3&after=${after}`)).status).toBe(200); // limit may change between pages
    expect(expectValidationError(await inKeyset(`sorting=created_at&after=${after}`)).map((i) => i.loc)).toEqual([['query', 'after']]);
    const narrowing = fx.filters.find((f) => f.expect.length > 0);
    if (narrowing) {
      expect(expectValidationError(await inKeyset(`${narrowing.query}&after=${after}`)).map((i) => i.loc)).toEqual([['query', 'after']]);
    }
    const [payload] = body.next_cursor!.split('.');
    const forged = `${payload}.${Buffer.alloc(32).toString('base64url')}`;
    expect(expectValidationError(await inKeyset(`after=${forged}`)).map((i) => i.loc)).toEqual([['query', 'after']]);
    expect(expectValidationError(await inKeyset('after=not-a-cursor')).map((i) => i.loc)).toEqual([['query', 'after']]);
  });

  test('2026-12-15: every filter returns the rows it does in 2026-11-20, and its cursor continues with its values in any order', async () => {
    for (const { query, expect: expected } of fx.filters) {
      const { body } = await keysetOk(`${query}&limit=100`);
      expect({ query, keys: body.items.map(keyOf).sort() }).toEqual({ query, keys: [...expected].sort() });
    }
    const repeated = fx.filters.find((f) => f.expect.length > 1 && new URLSearchParams(f.query).size > 1);
    if (!repeated) return;
    const { body } = await keysetOk(`${repeated.query}&limit=1`);
    const reordered = [...new URLSearchParams(repeated.query)]
      .reverse()
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
    const next = await keysetOk(`${reordered.join('&')}&limit=100&after=${encodeURIComponent(body.next_cursor!)}`);
    expect(next.body.items.length).toBe(repeated.expect.length - 1);
  });
});
