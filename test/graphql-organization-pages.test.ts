// Pages of Query.allOrders read in REST's per-organization shape
// (src/graphql/organization-pages.ts) are PostGraphile's own pages: every
// subject × page arguments × order, answered by this app and by one without the
// plugin, must be identical (edges, cursors, page info, totalCount). The data has
// ties everywhere (every order of a transaction shares its created_at, amounts
// repeat), across organizations, so a tie broken differently would show.
// And the plugin is shown to be at work, and harmless when it is wrong: with
// rowgate_hidden.visible_by_organization made to say yes to everybody, a
// customer session loses its orders (they are not its organizations' rows to
// it) and sees nothing it did not see before.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApp } from '../src/server/app.ts';
import { createGraphql } from '../src/graphql/server.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
/** the same API without the plugins that change how the page and its total are read */
let plain: { url: string; close(): Promise<void> };

async function serveWithout(...plugins: string[]) {
  const graphql = await createGraphql({ pool: app.pool, secret: app.secret, development: false, preset: { disablePlugins: plugins } });
  const other = createApp({ pool: app.pool, secret: app.secret, routes: allRoutes(app.pool), mounts: [graphql.mount] });
  const server = other.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await graphql.release();
    },
  };
}

type Headers = Record<string, string>;
interface Page {
  totalCount: number;
  pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; startCursor: string | null; endCursor: string | null };
  edges: { cursor: string; node: { rowId: string; organizationId: string } }[];
}

const PAGE = `query ($first: Int, $last: Int, $offset: Int, $after: Cursor, $before: Cursor, $orderBy: [OrderOrderBy!]) {
  allOrders(first: $first, last: $last, offset: $offset, after: $after, before: $before, orderBy: $orderBy) {
    totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { cursor node { rowId organizationId } }
  }
}`;

/** the page without its totalCount (which reads the counters where visible_by_organization says yes) */
const ROWS = PAGE.replace('totalCount ', '');

async function page(
  url: string,
  headers: Headers,
  variables: Record<string, unknown>,
  query = PAGE,
): Promise<{ data?: Page; errors?: unknown }> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json()) as { data?: { allOrders: Page }; errors?: unknown };
  expect(response.status, JSON.stringify(body)).toBe(200);
  return { data: body.data?.allOrders, errors: body.errors };
}

const SUBJECTS = [
  'admin of three organizations (web session)',
  'member of one (web session)',
  'user of none (web session)',
  'PAT with orders_read',
  'PAT without orders_read',
  'organization access token',
  'customer session (its orders through a second policy)',
  'anonymous',
] as const;
const subjects = {} as Record<(typeof SUBJECTS)[number], Headers>;
let orderCount = 0;

beforeAll(async () => {
  app = await startTestApp();
  const admin = await app.user();
  const member = await app.user();
  const outsider = await app.user();
  const organizations = [
    (await app.organization(admin.id)).id,
    (await app.organization(admin.id)).id,
    (await app.organization(admin.id)).id,
  ];
  await app.membership(organizations[0]!, member.id, 'member');
  let someCustomer = '';
  for (const organization of organizations) {
    const products = [
      await app.product(organization, { price_amount: 100 }),
      await app.product(organization, { price_amount: 250 }),
      await app.product(organization, { price_amount: 250 }),
    ];
    const customers = [await app.customer(organization), await app.customer(organization)];
    someCustomer ||= customers[0]!;
    // orders of one statement share their transaction's created_at: three batches a
    // organization, amounts repeating within and across organizations
    for (const batch of [7, 5, 9]) {
      await app.sql(
        `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status)
         select $1, ($2::uuid[])[1 + i % 2], p.id, p.price_amount, 'usd', 'pending'
         from generate_series(1, $4) as i join rowgate.products p on p.id = ($3::uuid[])[1 + i % 3]`,
        [organization, customers, products, batch],
      );
      orderCount += batch;
    }
  }
  // one transaction for orders of every organization: ties across organizations
  await app.sql(
    `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status)
     select c.organization_id, c.id, p.id, p.price_amount, 'usd', 'paid'
     from rowgate.customers c join rowgate.products p on p.organization_id = c.organization_id
     where c.organization_id = any($1::uuid[])`,
    [organizations],
  );
  orderCount += organizations.length * 2 * 3;
  const cookie = (session: string) => ({ cookie: `rowgate_session=${session}` });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  subjects['admin of three organizations (web session)'] = cookie(admin.session);
  subjects['member of one (web session)'] = cookie(member.session);
  subjects['user of none (web session)'] = cookie(outsider.session);
  subjects['PAT with orders_read'] = bearer(await app.pat(admin.id, ['orders_read']));
  subjects['PAT without orders_read'] = bearer(await app.pat(admin.id, ['products_read']));
  subjects['organization access token'] = bearer(await app.oat(organizations[1]!, ['orders_read']));
  subjects['customer session (its orders through a second policy)'] = bearer(await app.customerSession(someCustomer));
  subjects.anonymous = {};
  // PostGraphile's own page and its own count(*): totalCount read in the page's statement is compared too
  plain = await serveWithout('RowgateOrganizationPagesPlugin', 'RowgateCountedTotalPlugin');
});
afterAll(async () => {
  await plain?.close();
  await app?.close();
});

const ORDERS = [
  undefined,
  ['CREATED_AT_DESC'],
  ['CREATED_AT_DESC', 'PRIMARY_KEY_DESC'],
  ['CREATED_AT_ASC', 'PRIMARY_KEY_ASC'],
  ['CREATED_AT_ASC'],
  ['AMOUNT_DESC', 'PRIMARY_KEY_DESC'],
  ['AMOUNT_ASC'],
  ['CREATED_AT_DESC', 'PRIMARY_KEY_ASC'],
  ['STATUS_ASC'],
  ['PRIMARY_KEY_DESC'],
];

/** page arguments, with cursors picked from the whole list (`at(i)`: the cursor of its i-th row) */
const PAGES: [string, (at: (i: number) => string | undefined) => Record<string, unknown>][] = [
  ['no argument', () => ({})],
  ['first 5', () => ({ first: 5 })],
  ['first 0', () => ({ first: 0 })],
  ['first 100', () => ({ first: 100 })],
  ['first 5 offset 7', () => ({ first: 5, offset: 7 })],
  ['offset 30', () => ({ offset: 30 })],
  ['first 2, offset past the bound of the shape (PostGraphile alone)', () => ({ first: 2, offset: 1_001 })],
  ['last 5', () => ({ last: 5 })],
  ['last 100', () => ({ last: 100 })],
  ['first 5 after the 10th', (at) => ({ first: 5, after: at(10) })],
  ['first 5 after the 10th, offset 2', (at) => ({ first: 5, after: at(10), offset: 2 })],
  ['after the 60th', (at) => ({ after: at(60) })],
  ['last 5 before the 20th', (at) => ({ last: 5, before: at(20) })],
  ['first 4 after the 3rd before the 20th', (at) => ({ first: 4, after: at(3), before: at(20) })],
  ['last 3 after the 3rd before the 20th', (at) => ({ last: 3, after: at(3), before: at(20) })],
  ['before the 2nd', (at) => ({ before: at(2) })],
  ['first 3 last 2', () => ({ first: 3, last: 2 })],
  ['a cursor that is not one', () => ({ first: 3, after: 'bm90IGEgY3Vyc29y' })],
];

describe('allOrders pages: the same with and without the per-organization shape', () => {
  test('the data has every order, ties within and across organizations', async () => {
    const all = await page(plain.url, subjects['admin of three organizations (web session)'], { first: 100 });
    expect(all.errors).toBeUndefined();
    expect(all.data?.totalCount).toBe(orderCount);
    expect(orderCount).toBeGreaterThan(60);
  });

  test.each(SUBJECTS)('%s: every order × page', async (name) => {
    const headers = subjects[name];
    for (const orderBy of ORDERS) {
      const whole = await page(plain.url, headers, { first: 100, orderBy });
      const at = (i: number) => whole.data?.edges[Math.min(i, whole.data.edges.length - 1)]?.cursor;
      for (const [label, args] of PAGES) {
        const variables = { ...args(at), orderBy };
        const expected = await page(plain.url, headers, variables);
        const got = await page(app.url, headers, variables);
        expect(got, `${name}, ${JSON.stringify(orderBy)}, ${label}`).toEqual(expected);
      }
    }
  });

  test('paged through with first and after, the pages make the whole list', async () => {
    const headers = subjects['admin of three organizations (web session)'];
    for (const orderBy of [['CREATED_AT_DESC'], ['AMOUNT_ASC', 'PRIMARY_KEY_ASC']]) {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const { data } = await page(app.url, headers, { first: 7, after, orderBy });
        seen.push(...data!.edges.map((e) => e.node.rowId));
        if (!data!.pageInfo.hasNextPage) break;
        after = data!.pageInfo.endCursor!;
      }
      const whole = await page(plain.url, headers, { first: 100, orderBy });
      expect(seen).toEqual(whole.data!.edges.map((e) => e.node.rowId));
    }
  });

  test('the orderBy of the document itself (no variables): the same page', async () => {
    const headers = subjects['admin of three organizations (web session)'];
    const query = `{ allOrders(first: 9, orderBy: [CREATED_AT_DESC, PRIMARY_KEY_DESC]) { totalCount nodes { rowId } } }`;
    const ask = async (url: string) =>
      (
        await fetch(`${url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ query }),
        })
      ).json();
    expect(await ask(app.url)).toEqual(await ask(plain.url));
  });
});

describe('the database decides where the shape applies', () => {
  test('told wrongly that it applies to everybody, it loses rows (so it is at work) and shows none it should not', async () => {
    await app.sql(`alter function rowgate_hidden.visible_by_organization(text) rename to visible_by_organization_kept`);
    await app.sql(
      `create function rowgate_hidden.visible_by_organization(p_resource text) returns boolean
       language sql stable set search_path = pg_catalog, pg_temp as $$ select true $$`,
    );
    await app.sql(`grant execute on function rowgate_hidden.visible_by_organization(text) to rowgate_customer`);
    try {
      const customer = subjects['customer session (its orders through a second policy)'];
      const orderBy = ['CREATED_AT_DESC'];
      const without = await page(plain.url, customer, { first: 100, orderBy }, ROWS);
      const got = await page(app.url, customer, { first: 100, orderBy }, ROWS);
      expect(got.errors, JSON.stringify(got.errors)).toBeUndefined();
      expect(without.data!.edges.length).toBeGreaterThan(0);
      expect(got.data!.edges).toEqual([]);
      // the order written in the document, not a variable, takes the shape too
      const literal = await fetch(`${app.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...customer },
        body: JSON.stringify({ query: '{ allOrders(orderBy: [CREATED_AT_DESC]) { nodes { rowId } } }' }),
      });
      expect(((await literal.json()) as { data: { allOrders: { nodes: unknown[] } } }).data.allOrders.nodes).toEqual([]);
      for (const name of SUBJECTS) {
        const wrong = await page(app.url, subjects[name], { first: 100, orderBy }, ROWS);
        const right = await page(plain.url, subjects[name], { first: 100, orderBy }, ROWS);
        const allowed = new Set(right.data?.edges.map((e) => e.node.rowId) ?? []);
        for (const edge of wrong.data?.edges ?? []) expect(allowed.has(edge.node.rowId), name).toBe(true);
      }
    } finally {
      await app.sql(`drop function rowgate_hidden.visible_by_organization(text)`);
      await app.sql(`alter function rowgate_hidden.visible_by_organization_kept(text) rename to visible_by_organization`);
    }
  });
});
