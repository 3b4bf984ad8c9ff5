// GraphQL (POST /graphql, PostGraphile 5) over the same RLS as REST: two
// organizations, every subject kind, each seeing exactly its rows (and the same
// ids REST lists for the same credential); archived products omitted unless
// asked for (our omit-archived plugin); scopes binding mutations in the
// database; 401s shaped like REST's; nothing secret in the schema.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApp } from '../src/server/app.ts';
import { createGraphql } from '../src/graphql/server.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { generateToken } from '../src/auth/tokens.ts';
import { Metrics } from '../src/operating/metrics.ts';
import { startTestApp, type RequestOptions, type TestApp } from './harness.ts';

let app: TestApp;

type Auth = Pick<RequestOptions, 'token' | 'session' | 'headers'>;

interface GraphqlResult {
  status: number;
  headers: Headers;
  body: { data?: any; errors?: { message: string; extensions?: { code?: string } }[] } & Record<string, any>;
}

async function gql(query: string, variables: Record<string, unknown> = {}, auth: Auth = {}): Promise<GraphqlResult> {
  const response = await app.request('POST', '/graphql', {
    ...auth,
    headers: { accept: 'application/json', ...auth.headers },
    body: { query, variables },
  });
  return response as GraphqlResult;
}

/** data of a query that must succeed */
async function data(query: string, variables: Record<string, unknown> = {}, auth: Auth = {}) {
  const result = await gql(query, variables, auth);
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined();
  return result.body.data;
}

const sorted = (ids: string[]) => [...ids].sort();
const rowIds = (connection: { nodes: { rowId: string }[] }) => sorted(connection.nodes.map((n) => n.rowId));

/** ids REST lists for the credential (every page of 100) */
async function restIds(path: string, auth: Auth, query = ''): Promise<string[]> {
  const ids: string[] = [];
  for (let page = 1; ; page++) {
    const response = await app.get(`${path}?limit=100&page=${page}${query ? `&${query}` : ''}`, auth);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    ids.push(...response.body.items.map((item: { id: string }) => item.id));
    if (page >= response.body.pagination.max_page) return sorted(ids);
  }
}

const PRODUCTS = `query ($include: IncludeArchivedOption) {
  allProducts(includeArchived: $include) { totalCount nodes { rowId organizationId isArchived } }
}`;
const DEFAULT_PRODUCTS = `{ allProducts { totalCount nodes { rowId isArchived } } }`;
const CUSTOMERS = `{ allCustomers { nodes { rowId } } }`;
const ORDERS = `{ allOrders { nodes { rowId } } }`;
const ORGANIZATIONS = `{ allOrganizations { nodes { rowId } } }`;

// ---------------------------------------------------------------------------
// Two organizations and everybody who may look at them.

const w = {} as {
  adminA: { id: string; session: string };
  memberA: { id: string; session: string };
  adminB: { id: string; session: string };
  outsider: { id: string; session: string };
  platformAdmin: { id: string; session: string };
  orgA: string;
  orgB: string;
  productsA: { live: string[]; archived: string[] };
  productsB: { live: string[]; archived: string[] };
  customersA: string[];
  customersB: string[];
  ordersA: string[];
  ordersB: string[];
  seat: string;
  ordersOfCustomerA0: string[];
};
const tokens = {} as Record<
  | 'patRead'
  | 'patB'
  | 'oatRead'
  | 'oatWrite'
  | 'oauthUserRead'
  | 'oauthOrgWrite'
  | 'customer'
  | 'member'
  | 'impersonation'
  | 'expiredPat'
  | 'revokedOat',
  string
>;

const READ_SCOPES = ['organizations_read', 'members_read', 'products_read', 'customers_read', 'orders_read'];

beforeAll(async () => {
  app = await startTestApp();
  w.adminA = await app.user();
  w.memberA = await app.user();
  w.adminB = await app.user();
  w.outsider = await app.user();
  w.platformAdmin = await app.user({ admin: true });
  w.orgA = (await app.organization(w.adminA.id)).id;
  w.orgB = (await app.organization(w.adminB.id)).id;
  await app.membership(w.orgA, w.memberA.id, 'member');

  w.productsA = {
    live: [await app.product(w.orgA, { name: 'A one' }), await app.product(w.orgA, { name: 'A two' })],
    archived: [await app.product(w.orgA, { name: 'A old', is_archived: true })],
  };
  w.productsB = {
    live: [await app.product(w.orgB, { name: 'B one' })],
    archived: [
      await app.product(w.orgB, { name: 'B old', is_archived: true }),
      await app.product(w.orgB, { name: 'B older', is_archived: true }),
    ],
  };
  w.customersA = [await app.customer(w.orgA), await app.customer(w.orgA)];
  w.customersB = [await app.customer(w.orgB)];
  w.ordersA = [
    await app.order(w.productsA.live[0]!, w.customersA[0]!, 'paid'),
    await app.order(w.productsA.archived[0]!, w.customersA[0]!),
    await app.order(w.productsA.live[1]!, w.customersA[1]!),
  ];
  w.ordersOfCustomerA0 = w.ordersA.slice(0, 2);
  w.ordersB = [await app.order(w.productsB.live[0]!, w.customersB[0]!)];
  w.seat = await app.customerMember(w.customersA[0]!);

  tokens.patRead = await app.pat(w.adminA.id, ['products_read', 'customers_read', 'orders_read', 'organizations_read']);
  tokens.patB = await app.pat(w.adminB.id, ['products_read']);
  tokens.oatRead = await app.oat(w.orgA, READ_SCOPES);
  tokens.oatWrite = await app.oat(w.orgA, ['products_write']);
  tokens.oauthUserRead = await app.oauthUserToken(w.adminA.id, ['products_read', 'customers_read', 'orders_read']);
  tokens.oauthOrgWrite = await app.oauthOrganizationToken(w.adminA.id, w.orgA, ['products_write', 'orders_read']);
  tokens.customer = await app.customerSession(w.customersA[0]!);
  tokens.member = await app.memberSession(w.seat);
  tokens.impersonation = await app.session(w.adminA.id, { impersonatorId: w.platformAdmin.id, lifetime: '1 hour' });
  tokens.expiredPat = await app.pat(w.adminA.id, ['products_read'], { expiresAt: new Date(Date.now() - 60_000) });
  tokens.revokedOat = await app.oat(w.orgA, ['products_read']);
  await app.sql(
    `update rowgate.organization_access_tokens set deleted_at = now()
     where id = (select organization_access_token_id from rowgate_private.access_token_hashes where token_hash = $1)`,
    [app.hash(tokens.revokedOat)],
  );
});
afterAll(async () => app?.close());

const allA = () => ({
  products: sorted([...w.productsA.live, ...w.productsA.archived]),
  live: sorted(w.productsA.live),
  archived: sorted(w.productsA.archived),
  customers: sorted(w.customersA),
  orders: sorted(w.ordersA),
  organizations: [w.orgA],
});
const allB = () => ({
  products: sorted([...w.productsB.live, ...w.productsB.archived]),
  live: sorted(w.productsB.live),
  archived: sorted(w.productsB.archived),
  customers: sorted(w.customersB),
  orders: sorted(w.ordersB),
  organizations: [w.orgB],
});

// ---------------------------------------------------------------------------

describe('isolation: each subject sees exactly its rows, as REST lists them', () => {
  // credentials of organization-facing subjects; REST lists products with each of them
  const subjects: { name: string; auth: () => Auth; sees: () => ReturnType<typeof allA> | null; restLists: string[] }[] = [
    {
      name: 'admin of A (web session cookie)',
      auth: () => ({ session: w.adminA.session }),
      sees: allA,
      restLists: ['products', 'customers', 'orders', 'organizations'],
    },
    {
      name: 'member of A (web session)',
      auth: () => ({ session: w.memberA.session }),
      sees: allA,
      restLists: ['products', 'customers', 'orders', 'organizations'],
    },
    {
      name: 'admin of B (web session)',
      auth: () => ({ session: w.adminB.session }),
      sees: allB,
      restLists: ['products', 'customers', 'orders', 'organizations'],
    },
    {
      name: 'a user of no organization',
      auth: () => ({ session: w.outsider.session }),
      sees: () => null,
      restLists: ['products', 'customers', 'orders', 'organizations'],
    },
    {
      name: 'PAT of the admin of A (read scopes)',
      auth: () => ({ token: tokens.patRead }),
      sees: allA,
      restLists: ['products', 'customers', 'orders', 'organizations'],
    },
    {
      name: 'OAT of A (read scopes)',
      auth: () => ({ token: tokens.oatRead }),
      sees: allA,
      restLists: ['products', 'customers', 'orders', 'organizations'],
    },
    { name: 'OAT of A (products_write)', auth: () => ({ token: tokens.oatWrite }), sees: allA, restLists: ['products'] },
    {
      name: 'OAuth2 user token of the admin of A',
      auth: () => ({ token: tokens.oauthUserRead }),
      sees: allA,
      restLists: ['products', 'customers', 'orders'],
    },
    {
      name: 'OAuth2 organization token of A',
      auth: () => ({ token: tokens.oauthOrgWrite }),
      sees: allA,
      restLists: ['products', 'orders'],
    },
    {
      name: 'impersonation session of the admin of A',
      auth: () => ({ session: tokens.impersonation }),
      sees: allA,
      restLists: ['products', 'customers', 'orders', 'organizations'],
    },
  ];

  for (const subject of subjects) {
    test(subject.name, async () => {
      const auth = subject.auth();
      const expected = subject.sees() ?? { products: [], live: [], archived: [], customers: [], orders: [], organizations: [] };
      const got = await data(
        `{
          all: allProducts(includeArchived: YES) { totalCount nodes { rowId } }
          live: allProducts { totalCount nodes { rowId } }
          archived: allProducts(includeArchived: EXCLUSIVELY) { nodes { rowId } }
          allCustomers { nodes { rowId } }
          allOrders { nodes { rowId } }
          allOrganizations { nodes { rowId } }
        }`,
        {},
        auth,
      );
      expect(rowIds(got.all)).toEqual(expected.products);
      expect(got.all.totalCount).toBe(expected.products.length);
      expect(rowIds(got.live)).toEqual(expected.live);
      expect(got.live.totalCount).toBe(expected.live.length);
      expect(rowIds(got.archived)).toEqual(expected.archived);
      // the other lists its scopes cover (select policies do not check read scopes; REST does)
      const lists = { customers: got.allCustomers, orders: got.allOrders, organizations: got.allOrganizations };
      for (const list of ['customers', 'orders', 'organizations'] as const) {
        if (subject.restLists.includes(list)) expect(rowIds(lists[list]), list).toEqual(expected[list]);
      }

      // REST and GraphQL agree for the same credential
      for (const list of subject.restLists) {
        const graphqlIds = list === 'products' ? rowIds(got.all) : rowIds(lists[list as keyof typeof lists]);
        expect(await restIds(`/v1/${list}/`, auth), list).toEqual(graphqlIds);
      }
      if (subject.restLists.includes('products')) {
        expect(await restIds('/v1/products/', auth, 'is_archived=false')).toEqual(rowIds(got.live));
        expect(await restIds('/v1/products/', auth, 'is_archived=true')).toEqual(rowIds(got.archived));
      }
    });
  }

  test('a bearer token wins over the session cookie', async () => {
    const got = await data(PRODUCTS, { include: 'YES' }, { token: tokens.patB, session: w.adminA.session });
    expect(rowIds(got.allProducts)).toEqual(allB().products);
  });

  test('a customer session sees its own customer row and orders, and no products', async () => {
    const auth = { token: tokens.customer };
    const got = await data(`{ allCustomers { nodes { rowId } } allOrders { nodes { rowId } } }`, {}, auth);
    expect(rowIds(got.allCustomers)).toEqual([w.customersA[0]]);
    expect(rowIds(got.allOrders)).toEqual(sorted(w.ordersOfCustomerA0));
    // the customer portal lists the same orders
    expect(await restIds('/v1/customer-portal/orders/', auth)).toEqual(rowIds(got.allOrders));
    const me = await app.get('/v1/customer-portal/customers/me', auth);
    expect(me.body.id).toBe(w.customersA[0]);
    // customers are granted nothing on products: the database refuses, nothing leaks
    const products = await gql(DEFAULT_PRODUCTS, {}, auth);
    expect(products.body.data?.allProducts ?? null).toBeNull();
    expect(products.body.errors?.[0]?.extensions?.code).toBe('NotPermitted');
  });

  test('a member session sees the customer it belongs to and its orders', async () => {
    const auth = { token: tokens.member };
    const got = await data(
      `{ allCustomers { nodes { rowId } } allOrders { nodes { rowId } } allCustomerMembers { nodes { rowId } } }`,
      {},
      auth,
    );
    expect(rowIds(got.allCustomers)).toEqual([w.customersA[0]]);
    expect(rowIds(got.allOrders)).toEqual(sorted(w.ordersOfCustomerA0));
    expect(rowIds(got.allCustomerMembers)).toEqual([w.seat]);
    expect(await restIds('/v1/customer-portal/orders/', auth)).toEqual(rowIds(got.allOrders));
  });

  test('organization subjects and users reach no row of the other organization by key', async () => {
    for (const auth of [{ token: tokens.oatRead }, { session: w.adminA.session }]) {
      const got = await data(
        `query ($p: UUID!, $c: UUID!, $o: UUID!, $org: UUID!) {
          productByRowId(rowId: $p) { rowId } customerByRowId(rowId: $c) { rowId }
          orderByRowId(rowId: $o) { rowId } organizationByRowId(rowId: $org) { rowId }
        }`,
        { p: w.productsB.live[0], c: w.customersB[0], o: w.ordersB[0], org: w.orgB },
        auth,
      );
      expect(got).toEqual({ productByRowId: null, customerByRowId: null, orderByRowId: null, organizationByRowId: null });
    }
  });

  test('without a credential the anonymous role sees nothing', async () => {
    for (const query of [DEFAULT_PRODUCTS, CUSTOMERS, ORDERS, ORGANIZATIONS]) {
      const result = await gql(query);
      expect(result.status).toBe(200);
      const value = result.body.data ? Object.values(result.body.data)[0] : null;
      expect(value).toBeNull();
      expect(result.body.errors?.[0]?.extensions?.code).toBe('NotPermitted');
    }
    const byKey = await gql(`query ($p: UUID!) { productByRowId(rowId: $p) { rowId name } }`, { p: w.productsA.live[0] });
    expect(byKey.body.data?.productByRowId ?? null).toBeNull();
  });

  test('one statement twice behind a refused one: both refused for what they are, never "prepared statement does not exist"', async () => {
    // found by the GraphQL fuzzer (seed 340874639, document 2114): the refused
    // statement aborts the shared read transaction; the first copy of the
    // statement behind it fails its Parse (aborted), and the second, sent
    // without one, named a statement that was never prepared (26000)
    const id = (rowId: string) => Buffer.from(JSON.stringify(['Transaction', rowId])).toString('base64');
    const query = `{ allProducts(first: 5) { totalCount }
      a: transaction(id: "${id('2dbdd624-15ac-43ed-8940-247b78d366c5')}") { __typename }
      b: transaction(id: "${id('24d88fe1-3883-4b5c-85fc-374331e5f695')}") { __typename } }`;
    for (let attempt = 0; attempt < 3; attempt++) {
      const result = await gql(query);
      expect(result.status).toBe(200);
      expect(result.body.errors?.map((e) => e.extensions?.code)).toEqual(['NotPermitted', 'NotPermitted', 'NotPermitted']);
    }
  });

  test('the settings are transaction-local: a pooled connection keeps no subject after a GraphQL request', async () => {
    await data(DEFAULT_PRODUCTS, {}, { session: w.adminA.session });
    const clients = await Promise.all([app.pool.connect(), app.pool.connect(), app.pool.connect(), app.pool.connect()]);
    try {
      for (const client of clients) {
        const { rows } = await client.query(
          `select current_user as role, coalesce(current_setting('rowgate.subject_id', true), '') as subject,
             coalesce(current_setting('rowgate.scopes', true), '') as scopes`,
        );
        expect(rows[0]).toEqual({ role: 'rowgate_authenticator', subject: '', scopes: '' });
      }
    } finally {
      for (const client of clients) client.release();
    }
  });
});

describe('values as PostgreSQL writes them (timestamptz and bigint selected as they are, src/graphql/transport/codecs.ts)', () => {
  test("an order's fields are REST's, and its cursor pages on", async () => {
    const auth = { session: w.adminA.session };
    const got = await data(
      `{ allOrders(first: 2, orderBy: [CREATED_AT_DESC, PRIMARY_KEY_DESC]) { edges { cursor node { rowId amount createdAt updatedAt } } } }`,
      {},
      auth,
    );
    for (const { node } of got.allOrders.edges) {
      const rest = await app.get(`/v1/orders/${node.rowId}`, auth);
      expect(rest.status).toBe(200);
      expect(node).toEqual({
        rowId: rest.body.id,
        amount: String(rest.body.amount),
        createdAt: rest.body.created_at,
        updatedAt: rest.body.updated_at,
      });
    }
    const [first, second] = got.allOrders.edges;
    const next = await data(
      `query ($after: Cursor) { allOrders(first: 1, after: $after, orderBy: [CREATED_AT_DESC, PRIMARY_KEY_DESC]) { nodes { rowId } } }`,
      { after: first.cursor },
      auth,
    );
    expect(next.allOrders.nodes).toEqual([{ rowId: second.node.rowId }]);
  });
});

describe('totalCount of an unfiltered root connection: the row counters, as REST reads them (src/graphql/counted-total.ts)', () => {
  const COUNTS = `query ($org: UUID) {
    allOrders { totalCount nodes { rowId } }
    paged: allOrders(first: 1, orderBy: [CREATED_AT_DESC]) { totalCount }
    empty: allOrders(first: 0) { totalCount }
    past: allOrders(offset: 1000) { totalCount nodes { rowId } }
    ofA: allOrders(condition: { organizationId: $org }) { totalCount nodes { rowId } }
    allCustomers { totalCount nodes { rowId } }
  }`;
  const subjects: [string, () => Auth][] = [
    ['admin of A (web session)', () => ({ session: w.adminA.session })],
    ['member of A (web session)', () => ({ session: w.memberA.session })],
    ['admin of B (web session)', () => ({ session: w.adminB.session })],
    ['a user of no organization', () => ({ session: w.outsider.session })],
    ['PAT of the admin of A (read scopes)', () => ({ token: tokens.patRead })],
    ['PAT of the admin of B without orders_read or customers_read', () => ({ token: tokens.patB })],
    ['organization access token of A', () => ({ token: tokens.oatRead })],
    ['OAuth2 organization token (orders_read, no customers_read)', () => ({ token: tokens.oauthOrgWrite })],
    ['customer session (its own orders, through a second policy)', () => ({ token: tokens.customer })],
    ['member session (its customer orders, through a second policy)', () => ({ token: tokens.member })],
  ];

  test.each(subjects)('%s: every totalCount is the number of rows RLS shows', async (_name, auth) => {
    const got = await data(COUNTS, { org: w.orgA }, auth());
    expect(got.allOrders.totalCount).toBe(got.allOrders.nodes.length);
    expect(got.paged.totalCount).toBe(got.allOrders.nodes.length);
    // a page without rows has no row to carry its total: it is counted on its own
    expect(got.empty.totalCount).toBe(got.allOrders.nodes.length);
    expect(got.past).toEqual({ totalCount: got.allOrders.nodes.length, nodes: [] });
    expect(got.ofA.totalCount).toBe(got.ofA.nodes.length);
    expect(got.allCustomers.totalCount).toBe(got.allCustomers.nodes.length);
  });

  test('the counters are what is read, exactly where they apply', async () => {
    // a counter off by 1,000 shows where it is read: unfiltered connections of
    // user and organization subjects; never a filtered one, never a role that
    // sees rows through another policy
    const skew = (by: number) =>
      app.sql(
        `update rowgate_private.organization_row_counts set row_count = row_count + $2 where organization_id = $1 and resource = 'orders' and stripe = (select min(stripe) from rowgate_private.organization_row_counts where organization_id = $1 and resource = 'orders')`,
        [w.orgA, by],
      );
    await skew(1_000);
    try {
      const admin = await data(COUNTS, { org: w.orgA }, { session: w.adminA.session });
      expect(admin.allOrders.totalCount).toBe(w.ordersA.length + 1_000);
      expect(admin.paged.totalCount).toBe(w.ordersA.length + 1_000);
      expect(admin.empty.totalCount).toBe(w.ordersA.length + 1_000);
      expect(admin.past.totalCount).toBe(w.ordersA.length + 1_000);
      expect(admin.ofA.totalCount).toBe(w.ordersA.length);
      expect((await data(COUNTS, { org: w.orgA }, { token: tokens.oatRead })).allOrders.totalCount).toBe(w.ordersA.length + 1_000);
      expect((await data(COUNTS, { org: w.orgA }, { token: tokens.customer })).allOrders.totalCount).toBe(w.ordersOfCustomerA0.length);
      expect((await data(COUNTS, { org: w.orgA }, { token: tokens.patB })).allOrders.totalCount).toBe(0);
      // a condition given as a variable: counted, even when the variable is absent
      const byVariable = await data(
        `query ($c: OrderCondition) { allOrders(condition: $c) { totalCount } }`,
        {},
        { session: w.adminA.session },
      );
      expect(byVariable.allOrders.totalCount).toBe(w.ordersA.length);
    } finally {
      await skew(-1_000);
    }
    // REST's total_count reads the same counters
    const rest = await app.get('/v1/orders/?limit=1', { session: w.adminA.session });
    expect(rest.body.pagination.total_count).toBe(w.ordersA.length);
  });
});

describe('credentials that authenticate nobody: 401 like REST', () => {
  const cases: { name: string; auth: () => Auth }[] = [
    { name: 'a malformed bearer token', auth: () => ({ headers: { authorization: 'Bearer not-a-token' } }) },
    { name: 'a web session sent as a bearer token', auth: () => ({ token: w.adminA.session }) },
    { name: 'an unknown token', auth: () => ({ token: generateToken('personal_access_token') }) },
    { name: 'an expired PAT', auth: () => ({ token: tokens.expiredPat }) },
    { name: 'a revoked OAT', auth: () => ({ token: tokens.revokedOat }) },
    { name: 'an unknown session cookie', auth: () => ({ session: generateToken('web_session') }) },
    { name: 'a malformed session cookie', auth: () => ({ headers: { cookie: 'rowgate_session=nope' } }) },
  ];
  // a query's authentication goes in its first read transaction, a mutation's
  // before it, and a query that reads nothing asks alone (src/graphql/transport/deferred-authentication.ts)
  const documents = {
    'a query that reads': DEFAULT_PRODUCTS,
    'a query that reads nothing': '{ __typename }',
    'two queries, one of them failing': `{ allProducts { nodes { rowId } } allUsers { nodes { rowId isAdmin } } }`,
    // the credential before the document: 401 whatever the document
    'a query over the limits (30 aliases)': `{ ${Array.from({ length: 30 }, (_, i) => `a${i}: __typename`).join(' ')} }`,
    'a mutation': `mutation { createProduct(input: { product: { organizationId: "${randomUUID()}", name: "x", priceAmount: "1", priceCurrency: "usd" } }) { product { rowId } } }`,
  };
  for (const c of cases) {
    test.each(Object.entries(documents))(`${c.name}: %s`, async (_kind, document) => {
      const result = await gql(document, {}, c.auth());
      expect(result.status).toBe(401);
      expect(result.body.error).toBe('Unauthorized');
      expect(typeof result.body.detail).toBe('string');
      expect(Object.keys(result.body).sort()).toEqual(['detail', 'error']);
      expect(result.headers.get('www-authenticate')).toBe('Bearer realm="rowgate", error="invalid_token"');
      // and REST says the same
      const rest = await app.get('/v1/products/', c.auth());
      expect(rest.status).toBe(401);
      expect(rest.headers.get('www-authenticate')).toBe(result.headers.get('www-authenticate'));
    });
  }
});

describe("a query's authentication in its first read transaction (src/graphql/transport/deferred-authentication.ts)", () => {
  test('a token the server has not seen authenticate is asked first: its over-limit document is never planned', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const own = await startTestApp({ operating: { metrics } });
    try {
      const refusals = async () => (await metrics.graphqlRefusals.get()).values.reduce((sum, v) => sum + v.value, 0);
      const overLimit = `{ ${Array.from({ length: 30 }, (_, i) => `a${i}: __typename`).join(' ')} }`;
      const token = generateToken('personal_access_token');
      for (let i = 0; i < 3; i++) {
        const response = await own.request('POST', '/graphql', { token, body: { query: overLimit } });
        expect(response.status).toBe(401);
      }
      expect(await refusals()).toBe(0);
      // the same document without a credential is planned, and refused by the limits
      const anonymous = await own.request('POST', '/graphql', { body: { query: overLimit } });
      expect(anonymous.body.errors?.[0]?.extensions?.code).toBe('QUERY_TOO_COMPLEX');
      expect(await refusals()).toBe(1);
    } finally {
      await own.close();
    }
  });

  test('a session revoked after it authenticated: its next queries wait for the verdict, get the 401, and log nothing', async () => {
    const lines: string[] = [];
    const own = await startTestApp({ log: (line) => lines.push(line) });
    try {
      const user = await own.user();
      const organization = (await own.organization(user.id)).id;
      await own.product(organization);
      for (const query of [ORDERS, '{ __typename }', `{ a: allOrders { totalCount } b: allProducts { nodes { rowId } } }`]) {
        const session = await own.session(user.id);
        const ask = (document: string) => own.request('POST', '/graphql', { session, body: { query: document } });
        // the first query authenticates before it is planned; the next ones in their first transaction
        expect((await ask(DEFAULT_PRODUCTS)).status).toBe(200);
        expect((await ask(DEFAULT_PRODUCTS)).status).toBe(200);
        await own.sql('update rowgate_private.sessions set revoked_at = now() where token_hash = $1', [own.hash(session)]);
        const response = await ask(query);
        expect(response.status, query).toBe(401);
        expect(response.body).toEqual({ error: 'Unauthorized', detail: 'The credential is unknown, expired or revoked' });
        expect(response.headers.get('www-authenticate')).toBe('Bearer realm="rowgate", error="invalid_token"');
      }
      expect(lines.filter((line) => line.includes('graphql'))).toEqual([]);
    } finally {
      await own.close();
    }
  });

  test('a good credential: the settings of the authentication reach every transaction of the request', async () => {
    const token = tokens.patRead;
    const got = await data(
      `{ a: allOrders { nodes { rowId } } b: allProducts { totalCount } c: allCustomers { totalCount } }`,
      {},
      { token },
    );
    expect(rowIds(got.a)).toEqual(allA().orders);
    expect(got.b.totalCount).toBe(allA().products.length - allA().archived.length);
    expect(got.c.totalCount).toBe(allA().customers.length);
  });
});

describe('omit archived (our PostGraphile 5 plugin)', () => {
  const admin = () => ({ session: w.adminA.session });

  test('collections omit archived products by default, include them with YES, only them with EXCLUSIVELY', async () => {
    const byDefault = await data(DEFAULT_PRODUCTS, {}, admin());
    expect(rowIds(byDefault.allProducts)).toEqual(allA().live);
    expect(byDefault.allProducts.nodes.every((n: { isArchived: boolean }) => !n.isArchived)).toBe(true);
    for (const [include, expected] of [
      ['NO', allA().live],
      ['YES', allA().products],
      ['EXCLUSIVELY', allA().archived],
      [null, allA().live], // an explicit null means the default
    ] as const) {
      const got = await data(PRODUCTS, { include }, admin());
      expect(rowIds(got.allProducts), String(include)).toEqual(expected);
      expect(got.allProducts.totalCount).toBe(expected.length);
    }
    const literal = await data(`{ allProducts(includeArchived: EXCLUSIVELY) { nodes { rowId isArchived } } }`, {}, admin());
    expect(literal.allProducts.nodes.map((n: { isArchived: boolean }) => n.isArchived)).toEqual([true]);
  });

  test('relation collections too: Organization.productsByOrganizationId', async () => {
    const query = `query ($include: IncludeArchivedOption) {
      allOrganizations(first: 10) { nodes { rowId
        default: productsByOrganizationId { totalCount nodes { rowId } }
        chosen: productsByOrganizationId(includeArchived: $include) { totalCount nodes { rowId } }
      } }
    }`;
    for (const [include, pick] of [
      ['NO', 'live'],
      ['YES', 'products'],
      ['EXCLUSIVELY', 'archived'],
    ] as const) {
      // an organization subject and a user reach the relation the same way
      for (const auth of [admin(), { token: tokens.oatRead }]) {
        const got = await data(query, { include }, auth);
        expect(got.allOrganizations.nodes).toHaveLength(1);
        const [organization] = got.allOrganizations.nodes;
        expect(organization.rowId).toBe(w.orgA);
        expect(rowIds(organization.default)).toEqual(allA().live);
        expect(rowIds(organization.chosen)).toEqual(allA()[pick]);
        expect(organization.chosen.totalCount).toBe(allA()[pick].length);
      }
    }
  });

  test('pagination and ordering work on the filtered collection', async () => {
    const got = await data(
      `{ first: allProducts(first: 1, orderBy: NAME_ASC) { totalCount nodes { name } pageInfo { hasNextPage endCursor } }
         all: allProducts(orderBy: NAME_DESC, includeArchived: YES) { nodes { name } } }`,
      {},
      admin(),
    );
    expect(got.first.totalCount).toBe(2);
    expect(got.first.nodes).toEqual([{ name: 'A one' }]);
    expect(got.first.pageInfo.hasNextPage).toBe(true);
    const next = await data(
      `query ($after: Cursor) { allProducts(first: 5, after: $after, orderBy: NAME_ASC) { nodes { name } pageInfo { hasNextPage } } }`,
      { after: got.first.pageInfo.endCursor },
      admin(),
    );
    expect(next.allProducts.nodes).toEqual([{ name: 'A two' }]);
    expect(next.allProducts.pageInfo.hasNextPage).toBe(false);
    expect(got.all.nodes.map((n: { name: string }) => n.name)).toEqual(['A two', 'A one', 'A old']);
  });

  test('a product named by its key is returned whatever its state; single relations are not filtered', async () => {
    const got = await data(
      `query ($p: UUID!, $o: UUID!) { productByRowId(rowId: $p) { rowId isArchived }
         orderByRowId(rowId: $o) { productByProductId { rowId isArchived } } }`,
      { p: w.productsA.archived[0], o: w.ordersA[1] },
      admin(),
    );
    expect(got.productByRowId).toEqual({ rowId: w.productsA.archived[0], isArchived: true });
    expect(got.orderByRowId.productByProductId).toEqual({ rowId: w.productsA.archived[0], isArchived: true });
  });

  test('only tables with an is_archived column get the argument', async () => {
    const schema = await data(`{ __schema { queryType { fields { name args { name type { name } defaultValue } } } } }`);
    const fields: { name: string; args: { name: string; type: { name: string | null }; defaultValue: string | null }[] }[] =
      schema.__schema.queryType.fields;
    const withArgument = fields.filter((f) => f.args.some((a) => a.name === 'includeArchived')).map((f) => f.name);
    expect(withArgument).toEqual(['allProducts']);
    const argument = fields.find((f) => f.name === 'allProducts')!.args.find((a) => a.name === 'includeArchived')!;
    expect(argument).toEqual({ name: 'includeArchived', type: { name: 'IncludeArchivedOption' }, defaultValue: 'NO' });
    const enumType = await data(`{ __type(name: "IncludeArchivedOption") { enumValues { name } } }`);
    expect(enumType.__type.enumValues.map((v: { name: string }) => v.name)).toEqual(['NO', 'YES', 'EXCLUSIVELY']);
    const unknown = await gql(`{ allProducts(includeArchived: SOMETIMES) { totalCount } }`, {}, admin());
    expect(unknown.body.errors?.length).toBeGreaterThan(0);
    expect(unknown.body.data ?? null).toBeNull();
  });
});

describe('mutations: scopes and policies bind in the database', () => {
  const CREATE = `mutation ($organizationId: UUID!, $name: String!) {
    createProduct(input: { product: { organizationId: $organizationId, name: $name, priceAmount: "1200", priceCurrency: "usd" } }) {
      product { rowId organizationId name }
    }
  }`;
  const UPDATE = `mutation ($id: UUID!, $name: String!) {
    updateProductByRowId(input: { rowId: $id, productPatch: { name: $name } }) { product { rowId name } }
  }`;
  const productName = async (id: string) =>
    (await app.sql<{ name: string }>('select name from rowgate.products where id = $1', [id]))[0]?.name;
  const productCount = async (name: string) =>
    Number((await app.sql<{ n: string }>('select count(*) as n from rowgate.products where name = $1', [name]))[0]!.n);

  const refused: { name: string; auth: () => Auth; organization: () => string }[] = [
    { name: 'an OAT with read scopes only', auth: () => ({ token: tokens.oatRead }), organization: () => w.orgA },
    { name: 'a PAT with products_read only', auth: () => ({ token: tokens.patRead }), organization: () => w.orgA },
    { name: 'an OAuth2 user token with read scopes', auth: () => ({ token: tokens.oauthUserRead }), organization: () => w.orgA },
    { name: 'an impersonation session (read scopes)', auth: () => ({ session: tokens.impersonation }), organization: () => w.orgA },
    { name: 'an OAT with products_write, in another organization', auth: () => ({ token: tokens.oatWrite }), organization: () => w.orgB },
    { name: 'a member-role user, in another organization', auth: () => ({ session: w.memberA.session }), organization: () => w.orgB },
    { name: 'a user of no organization', auth: () => ({ session: w.outsider.session }), organization: () => w.orgA },
    { name: 'a customer session', auth: () => ({ token: tokens.customer }), organization: () => w.orgA },
    { name: 'no credential', auth: () => ({}), organization: () => w.orgA },
  ];
  for (const c of refused) {
    test(`${c.name} cannot create or update products`, async () => {
      const name = `refused-${randomBytes(4).toString('hex')}`;
      const created = await gql(CREATE, { organizationId: c.organization(), name }, c.auth());
      expect(created.status).toBe(200);
      expect(created.body.errors?.length, JSON.stringify(created.body)).toBeGreaterThan(0);
      expect(created.body.data?.createProduct ?? null).toBeNull();
      expect(await productCount(name)).toBe(0);

      const target = c.organization() === w.orgA ? w.productsA.live[0]! : w.productsB.live[0]!;
      const before = await productName(target);
      const updated = await gql(UPDATE, { id: target, name }, c.auth());
      expect(updated.body.errors?.length, JSON.stringify(updated.body)).toBeGreaterThan(0);
      // RLS filtered the row out (or, without a grant, refused the statement)
      expect(['NotUpdated', 'NotPermitted']).toContain(updated.body.errors![0]!.extensions?.code);
      expect(updated.body.data?.updateProductByRowId ?? null).toBeNull();
      expect(await productName(target)).toBe(before);
    });
  }

  test('what the errors say: RLS refused the new row; no row was updated', async () => {
    const result = await gql(CREATE, { organizationId: w.orgA, name: 'nope' }, { token: tokens.oatRead });
    const error = result.body.errors?.[0];
    // the write policy requires products_write
    expect(error).toMatchObject({ message: expect.stringMatching(/row-level security/), extensions: { code: 'NotPermitted' } });
    const update = await gql(UPDATE, { id: w.productsA.live[0], name: 'nope' }, { token: tokens.oatRead });
    expect(update.body.errors?.[0]).toMatchObject({
      message: 'No products row was updated: it does not exist, or this credential may not change it',
      extensions: { code: 'NotUpdated' },
      path: ['updateProductByRowId'],
    });
    // REST, which checks scopes before it reaches the database, says which scope is missing
    const rest = await app.post('/v1/products/', { name: 'nope', price_amount: 1, price_currency: 'usd' }, { token: tokens.oatRead });
    expect(rest.status).toBe(403);
    expect(rest.body.error).toBe('InsufficientScope');
  });

  // An id that is not a Product's node id inhibits PostGraphile's update instead of failing it: the payload
  // was null with no error, which a client could not tell from a success (found by a hostile audit)
  test('an update by an id that is not a product node id is NotUpdated, by a credential that may write', async () => {
    const BY_NODE_ID = `mutation ($id: ID!, $name: String!) {
      updateProduct(input: { id: $id, productPatch: { name: $name } }) { product { rowId name } }
    }`;
    const nodeId = (...parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64');
    const target = w.productsA.live[0]!;
    const before = await productName(target);
    for (const id of ['garbage', '', nodeId('Order', target), nodeId('Product'), nodeId('Product', randomUUID())]) {
      const result = await gql(BY_NODE_ID, { id, name: 'by-a-bad-id' }, { token: tokens.oatWrite });
      expect(result.body.data?.updateProduct ?? null, id).toBeNull();
      expect(
        result.body.errors?.map((e) => e.extensions?.code),
        `${id}: ${JSON.stringify(result.body)}`,
      ).toEqual(['NotUpdated']);
    }
    // one whose key is not a uuid reaches the database, which says so: the client's input, not REST's body
    const notUuid = await gql(BY_NODE_ID, { id: nodeId('Product', 'not-a-uuid'), name: 'by-a-bad-id' }, { token: tokens.oatWrite });
    expect(notUuid.body.errors).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/^invalid input syntax for type uuid/),
        extensions: { code: 'BAD_USER_INPUT' },
      }),
    ]);
    // the database's sentence quotes the value whole: bounded (SPEC §14; a review sent 100,000 characters)
    const long = await gql(BY_NODE_ID, { id: nodeId('Product', 'x'.repeat(100_000)), name: 'by-a-bad-id' }, { token: tokens.oatWrite });
    expect(long.body.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    expect(JSON.stringify(long.body).length).toBeLessThan(2_000);
    // and so is graphql-js's own sentence about a variable of the wrong type
    const variable = await gql('query ($n: Int) { __typename }', { n: 'y'.repeat(50_000) }, { token: tokens.oatWrite });
    expect(variable.body.errors?.map((e) => e.extensions?.code)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(JSON.stringify(variable.body).length).toBeLessThan(2_000);
    expect(await productName(target)).toBe(before);
    // the product's own node id updates it
    const renamed = `renamed-${randomBytes(4).toString('hex')}`;
    const updated = await data(BY_NODE_ID, { id: nodeId('Product', target), name: renamed }, { token: tokens.oatWrite });
    expect(updated.updateProduct.product).toEqual({ rowId: target, name: renamed });
    await app.sql('update rowgate.products set name = $2 where id = $1', [target, before]);
  });

  const allowed: { name: string; auth: () => Auth }[] = [
    { name: 'an OAT with products_write', auth: () => ({ token: tokens.oatWrite }) },
    { name: 'an OAuth2 organization token with products_write', auth: () => ({ token: tokens.oauthOrgWrite }) },
    { name: 'a member-role user of the organization (web session)', auth: () => ({ session: w.memberA.session }) },
  ];
  for (const c of allowed) {
    test(`${c.name} creates and updates products of its organization`, async () => {
      const name = `made-${randomBytes(4).toString('hex')}`;
      const created = await data(CREATE, { organizationId: w.orgA, name }, c.auth());
      expect(created.createProduct.product).toMatchObject({ organizationId: w.orgA, name });
      const id = created.createProduct.product.rowId as string;
      const [row] = await app.sql('select organization_id, name, is_archived, deleted_at from rowgate.products where id = $1', [id]);
      expect(row).toEqual({ organization_id: w.orgA, name, is_archived: false, deleted_at: null });

      const renamed = `${name}-renamed`;
      const updated = await data(UPDATE, { id, name: renamed }, c.auth());
      expect(updated.updateProductByRowId.product).toEqual({ rowId: id, name: renamed });
      expect(await productName(id)).toBe(renamed);
      // REST reads it back the same
      const rest = await app.get(`/v1/products/${id}`, { session: w.adminA.session });
      expect(rest.body.name).toBe(renamed);
    });
  }

  test('a member-role user cannot change the organization itself (organization:manage), an admin can', async () => {
    const mutation = `mutation ($id: UUID!, $name: String!) {
      updateOrganizationByRowId(input: { rowId: $id, organizationPatch: { name: $name } }) { organization { name } }
    }`;
    const [{ name: before }] = await app.sql('select name from rowgate.organizations where id = $1', [w.orgA]);
    const refused = await gql(mutation, { id: w.orgA, name: 'taken over' }, { session: w.memberA.session });
    expect(refused.body.errors?.length).toBeGreaterThan(0);
    expect((await app.sql('select name from rowgate.organizations where id = $1', [w.orgA]))[0].name).toBe(before);
    const other = await gql(mutation, { id: w.orgB, name: 'taken over' }, { session: w.adminA.session });
    expect(other.body.errors?.length).toBeGreaterThan(0);
    expect((await app.sql('select name from rowgate.organizations where id = $1', [w.orgB]))[0].name).not.toBe('taken over');
    const done = await data(mutation, { id: w.orgA, name: `${before} renamed` }, { session: w.adminA.session });
    expect(done.updateOrganizationByRowId.organization.name).toBe(`${before} renamed`);
  });

  test("createOrder in another currency names its amount, as REST's does (the database's rule)", async () => {
    const mutation = `mutation ($product: UUID!, $customer: UUID!, $amount: BigInt) {
      createOrder(input: { pProductId: $product, pCustomerId: $customer, pCurrency: "eur", pAmount: $amount }) { result { amount currency } }
    }`;
    const count = async () => (await app.sql('select count(*)::int as n from rowgate.orders'))[0].n;
    const before = await count();
    const refused = await gql(mutation, { product: w.productsA.live[1], customer: w.customersA[1] }, { session: w.memberA.session });
    expect(refused.body.errors?.[0]).toMatchObject({
      message: 'body.amount: amount is required when currency is given',
      extensions: { code: 'RequestValidationError' },
    });
    expect(await count()).toBe(before);
    const made = await data(
      mutation,
      { product: w.productsA.live[1], customer: w.customersA[1], amount: '900' },
      { session: w.memberA.session },
    );
    expect(made.createOrder.result).toEqual([{ amount: '900', currency: 'eur' }]);
  });

  test('a metadata key named __proto__ is refused by the database, as REST refuses it', async () => {
    const mutation = `mutation ($org: UUID!, $metadata: JSON) {
      createCustomer(input: { customer: { organizationId: $org, email: "proto@example.com", metadata: $metadata } }) { customer { rowId } }
    }`;
    const refused = await gql(mutation, { org: w.orgA, metadata: JSON.parse('{"__proto__": "x", "b": 2}') }, { session: w.adminA.session });
    expect(refused.body.errors?.[0]).toMatchObject({
      message: expect.stringMatching(/metadata/),
      extensions: { code: 'RequestValidationError' },
    });
    expect(await app.sql("select 1 from rowgate.customers where email = 'proto@example.com'")).toEqual([]);
    const rest = await app.post(
      '/v1/customers/',
      JSON.parse(`{"organization_id": "${w.orgA}", "email": "proto@example.com", "metadata": {"__proto__": "x"}}`),
      {
        session: w.adminA.session,
      },
    );
    expect(rest.status).toBe(422);
    expect(rest.body.detail).toEqual([expect.objectContaining({ type: 'reserved_key', loc: ['body', 'metadata', '__proto__'] })]);
  });

  test('createOrder is rowgate.create_order: organization and amount come from the product', async () => {
    const mutation = `mutation ($product: UUID!, $customer: UUID!) {
      createOrder(input: { pProductId: $product, pCustomerId: $customer }) { result { rowId organizationId amount currency status } }
    }`;
    const created = await data(mutation, { product: w.productsA.live[1], customer: w.customersA[1] }, { session: w.memberA.session });
    const [order] = created.createOrder.result;
    expect(order).toMatchObject({ organizationId: w.orgA, amount: '1000', currency: 'usd', status: 'pending' });
    expect(await app.sql('select organization_id from rowgate.orders where id = $1', [order.rowId])).toEqual([{ organization_id: w.orgA }]);
    // an OAT of A without orders_write: refused by the database
    const before = (await app.sql('select count(*)::int as n from rowgate.orders'))[0].n;
    const refused = await gql(mutation, { product: w.productsA.live[1], customer: w.customersA[1] }, { token: tokens.oatRead });
    expect(refused.body.errors?.length).toBeGreaterThan(0);
    expect((await app.sql('select count(*)::int as n from rowgate.orders'))[0].n).toBe(before);
  });

  test('member seats: created and changed under the rules of /v1/customers/{id}/members (customers:write, the organization from the customer)', async () => {
    const create = `mutation ($customer: UUID!, $email: String!) {
      createCustomerMember(input: { customerMember: { customerId: $customer, email: $email, role: "billing_manager" } }) {
        customerMember { rowId organizationId customerId email role }
      }
    }`;
    const seats = async (email: string) =>
      Number((await app.sql<{ n: string }>('select count(*) as n from rowgate.customer_members where email = $1', [email]))[0]!.n);
    const email = `seat-${randomBytes(4).toString('hex')}@example.com`;
    const made = await data(create, { customer: w.customersA[1], email }, { session: w.memberA.session });
    expect(made.createCustomerMember.customerMember).toMatchObject({
      organizationId: w.orgA,
      customerId: w.customersA[1],
      email,
      role: 'billing_manager',
    });
    // REST reads the same seat
    const rest = await app.get(`/v1/customers/${w.customersA[1]}/members/${made.createCustomerMember.customerMember.rowId}`, {
      session: w.adminA.session,
    });
    expect({ status: rest.status, role: rest.body.role }).toEqual({ status: 200, role: 'billing_manager' });
    // a customer of another organization, a token without customers_write, a second seat with the e-mail: refused, nothing stored
    for (const [customer, auth, address] of [
      [w.customersB[0]!, { session: w.memberA.session }, `b-${email}`],
      [w.customersA[1]!, { token: tokens.oatWrite }, `w-${email}`],
      [w.customersA[1]!, { token: tokens.oatRead }, `r-${email}`],
      [w.customersA[1]!, { session: w.memberA.session }, email],
    ] as const) {
      const refused = await gql(create, { customer, email: address }, auth);
      expect(refused.body.errors?.length, JSON.stringify(refused.body)).toBeGreaterThan(0);
      expect(await seats(address)).toBe(address === email ? 1 : 0);
    }
    const update = `mutation ($id: UUID!) {
      updateCustomerMemberByRowId(input: { rowId: $id, customerMemberPatch: { role: "owner" } }) { customerMember { role } }
    }`;
    const id = made.createCustomerMember.customerMember.rowId as string;
    expect((await gql(update, { id }, { token: tokens.oatRead })).body.errors?.[0]?.extensions?.code).toBe('NotUpdated');
    expect((await data(update, { id }, { session: w.adminA.session })).updateCustomerMemberByRowId.customerMember.role).toBe('owner');
  });

  test('a user cannot be changed through GraphQL at all (REST keeps that to web sessions with user:write)', async () => {
    const result = await gql(
      `mutation ($id: UUID!) { updateUserByRowId(input: { rowId: $id, userPatch: { name: "x" } }) { user { name } } }`,
      { id: w.adminA.id },
      { token: tokens.patRead },
    );
    expect(result.body.errors?.[0]?.message).toMatch(/updateUserByRowId/);
  });
});

describe('what the schema publishes', () => {
  let types: {
    name: string;
    kind: string;
    fields: { name: string; args: { name: string }[] }[] | null;
    inputFields: { name: string }[] | null;
  }[];
  let queryFields: string[];
  let mutationFields: string[];
  beforeAll(async () => {
    const schema = await data(`{ __schema {
      queryType { fields { name } } mutationType { fields { name } }
      types { name kind fields { name args { name } } inputFields { name } }
    } }`);
    types = schema.__schema.types;
    queryFields = schema.__schema.queryType.fields.map((f: { name: string }) => f.name);
    mutationFields = schema.__schema.mutationType.fields.map((f: { name: string }) => f.name);
  });

  test('the tenant tables are there', () => {
    for (const field of ['allProducts', 'allCustomers', 'allOrders', 'allOrganizations', 'allMemberships', 'productByRowId']) {
      expect(queryFields).toContain(field);
    }
    for (const field of ['createProduct', 'updateProductByRowId', 'createCustomer', 'createOrder', 'createOrganization', 'addMember']) {
      expect(mutationFields).toContain(field);
    }
  });

  test('every published mutation is named in the reference (docs/api.md, section 13)', () => {
    const reference = readFileSync(new URL('../docs/api.md', import.meta.url), 'utf8');
    const section = reference.slice(reference.indexOf('\n## 13.'), reference.indexOf('\n## 14.'));
    expect(section.length).toBeGreaterThan(0);
    expect(mutationFields.length).toBeGreaterThan(0);
    expect(mutationFields.filter((name) => !section.includes(`\`${name}\``))).toEqual([]);
  });

  test('no token tables, no hash-taking or REST-only functions', () => {
    const hiddenFields = [
      'createPersonalAccessToken',
      'createOrganizationAccessToken',
      'createImpersonationSession',
      'createCustomerSession',
      'deleteResource',
      'deleteCurrentUser',
      'revokePersonalAccessToken',
      'allPersonalAccessTokens',
      'allOrganizationAccessTokens',
      'personalAccessTokenByRowId',
      'organizationAccessTokenByRowId',
    ];
    for (const field of hiddenFields) {
      expect(queryFields).not.toContain(field);
      expect(mutationFields).not.toContain(field);
    }
    const everyName = types.flatMap((t) => [t.name, ...(t.fields ?? []).map((f) => f.name), ...(t.inputFields ?? []).map((f) => f.name)]);
    expect(everyName.filter((n) => /token|session|impersonat|hash|secret/i.test(n))).toEqual([]);
    expect(types.map((t) => t.name)).not.toContain('PersonalAccessToken');
    expect(types.map((t) => t.name)).not.toContain('OrganizationAccessToken');
  });

  test('nothing from rowgate_private or rowgate_hidden', () => {
    const helpers = [
      'authenticate',
      'issueUserSession',
      'issuePersonalAccessToken',
      'currentSubjectKind',
      'currentSubjectId',
      'currentUserId',
      'currentScopes',
      'currentOrganizationIds',
      'hasScope',
      'assertScope',
      'hasPermission',
      'policyDenial',
      'authorize',
      'analystUserId',
      'readScopes',
      'allScopes',
    ];
    const everyField = types.flatMap((t) => (t.fields ?? []).map((f) => f.name));
    for (const helper of helpers) expect(everyField).not.toContain(helper);
    expect(types.map((t) => t.name).filter((n) => /^(Scope|Session|Analyst|AccessTokenHash|Oauth2)/i.test(n))).toEqual([]);
  });

  test('without the smart-tag comments of the migrations, GraphQL publishes exactly the same', async () => {
    const tagged = await app.sql<{ kind: string; ident: string; comment: string; owner: string }>(
      `select 'function' as kind, p.oid::regprocedure::text as ident, d.description as comment, p.proowner::regrole::text as owner
         from pg_proc p join pg_description d on d.objoid = p.oid and d.classoid = 'pg_proc'::regclass
         where p.pronamespace = 'rowgate'::regnamespace and d.description like '%@behavior%'
       union all
       select 'table', c.oid::regclass::text, d.description, c.relowner::regrole::text
         from pg_class c join pg_description d on d.objoid = c.oid and d.classoid = 'pg_class'::regclass and d.objsubid = 0
         where c.relnamespace = 'rowgate'::regnamespace and d.description like '%@behavior%'`,
    );
    // a comment is its object's owner's to change: the SQL logins' functions belong to rowgate_sql_admin
    const comment = (t: (typeof tagged)[number], text: string) =>
      app.sql(`begin; set local role ${t.owner}; comment on ${t.kind} ${t.ident} is ${text}; commit`);
    // the two token tables and seven REST-only functions, at least
    expect(tagged.filter((t) => t.kind === 'table').length).toBeGreaterThanOrEqual(2);
    expect(tagged.filter((t) => t.kind === 'function').length).toBeGreaterThanOrEqual(7);
    const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
    try {
      for (const t of tagged) await comment(t, 'null');
      await withApp({}, async (url) => {
        const { body } = await postGraphql(
          url,
          `{ __schema { queryType { fields { name } } mutationType { fields { name } } types { name } } }`,
          {},
          {},
        );
        const names = (fields: { name: string }[]) => fields.map((f) => f.name).sort();
        expect(names(body.data.__schema.queryType.fields)).toEqual([...queryFields].sort());
        expect(names(body.data.__schema.mutationType.fields)).toEqual([...mutationFields].sort());
        expect(names(body.data.__schema.types)).toEqual(types.map((t) => t.name).sort());
      });
    } finally {
      for (const t of tagged) await comment(t, literal(t.comment));
    }
  });

  test('operations REST keeps to web sessions, and the raw order insert, are not mutations', () => {
    expect(mutationFields).not.toContain('updateUser');
    expect(mutationFields).not.toContain('updateUserByRowId');
    expect(mutationFields).not.toContain('createPayoutAccount');
    const createOrder = types.find((t) => t.name === 'CreateOrderInput')!;
    expect(createOrder.inputFields!.map((f) => f.name)).not.toContain('order');
  });
});

/** Another app on the test database, with its own GraphQL configuration. */
async function withApp(options: Partial<Parameters<typeof createGraphql>[0]>, work: (url: string) => Promise<void>) {
  const graphql = await createGraphql({ pool: app.pool, secret: app.secret, development: false, ...options });
  const other = createApp({ pool: app.pool, secret: app.secret, routes: allRoutes(app.pool), mounts: [graphql.mount] });
  const server = other.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    await work(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await graphql.release();
  }
}

async function postGraphql(url: string, query: string, variables: Record<string, unknown>, headers: Record<string, string>) {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: response.status, body: (await response.json()) as GraphqlResult['body'] };
}

describe('omit archived on simple lists (a schema with lists turned on)', () => {
  test('Query.allProductsList and Organization.productsByOrganizationIdList', async () => {
    await withApp({ preset: { schema: { defaultBehavior: '+list' } } }, async (url) => {
      const query = `query ($include: IncludeArchivedOption) {
        byDefault: allProductsList { rowId }
        chosen: allProductsList(includeArchived: $include) { rowId }
        allOrganizationsList(first: 10) { rowId
          byDefault: productsByOrganizationIdList { rowId }
          chosen: productsByOrganizationIdList(includeArchived: $include) { rowId }
        }
        allCustomersList { rowId }
      }`;
      const cookie = { cookie: `rowgate_session=${w.adminB.session}` };
      for (const [include, pick] of [
        ['NO', 'live'],
        ['YES', 'products'],
        ['EXCLUSIVELY', 'archived'],
      ] as const) {
        const { status, body } = await postGraphql(url, query, { include }, cookie);
        expect(status).toBe(200);
        expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
        const ids = (rows: { rowId: string }[]) => sorted(rows.map((r) => r.rowId));
        expect(ids(body.data.byDefault)).toEqual(allB().live);
        expect(ids(body.data.chosen)).toEqual(allB()[pick]);
        expect(body.data.allOrganizationsList).toHaveLength(1);
        expect(ids(body.data.allOrganizationsList[0].byDefault)).toEqual(allB().live);
        expect(ids(body.data.allOrganizationsList[0].chosen)).toEqual(allB()[pick]);
        expect(ids(body.data.allCustomersList)).toEqual(allB().customers);
      }
    });
  });
});

describe('the explorer (Ruru) is served in development only', () => {
  test('not in this (non-development) app', async () => {
    for (const path of ['/graphiql', '/']) {
      const response = await app.get(path, { headers: { accept: 'text/html' } });
      expect(response.status, path).toBe(404);
    }
    const get = await app.get('/graphql', { headers: { accept: 'text/html' } });
    expect(String(get.body)).not.toMatch(/ruru/i);
  });

  test('in development, at GET /graphiql, while POST /graphql still needs valid credentials', async () => {
    await withApp({ development: true }, async (url) => {
      const page = await fetch(`${url}/graphiql`, { headers: { accept: 'text/html' } });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/text\/html/);
      const html = await page.text();
      expect(html).toMatch(/ruru/i);
      // its scripts are served too, and helmet's CSP (which forbids its inline scripts) is lifted for it alone
      const asset = /["'](\/graphiql-static\/[^"']+\.js)["']/.exec(html)?.[1];
      expect(asset, html.slice(0, 2000)).toBeDefined();
      expect((await fetch(`${url}${asset}`)).status).toBe(200);
      expect(page.headers.get('content-security-policy')).toBeNull();
      expect((await fetch(`${url}/healthz`)).headers.get('content-security-policy')).not.toBeNull();
      const bad = await postGraphql(url, '{ __typename }', {}, { authorization: 'Bearer nope' });
      expect(bad.status).toBe(401);
      const query = '{ allProducts(includeArchived: YES) { totalCount } }';
      const good = await postGraphql(url, query, {}, { cookie: `rowgate_session=${w.adminA.session}` });
      const expected = (await restIds('/v1/products/', { session: w.adminA.session })).length;
      expect(expected).toBeGreaterThanOrEqual(3);
      expect(good.body).toEqual({ data: { allProducts: { totalCount: expected } } });
    });
  });
});

describe('the transport', () => {
  test('only JSON bodies (a form post is refused, so a cross-site form cannot drive it)', async () => {
    const response = await app.request('POST', '/graphql', {
      session: w.adminA.session,
      rawBody: 'query=%7B__typename%7D',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    });
    expect(response.status).toBe(415);
  });

  test('a malformed JSON body is a 422 in SPEC §7 shape, as on the REST routes', async () => {
    const response = await app.request('POST', '/graphql', {
      session: w.adminA.session,
      rawBody: '{',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(422);
    expect(response.body).toMatchObject({ error: 'RequestValidationError', detail: [{ type: 'json_invalid', loc: ['body'] }] });
  });

  test('a body over 1 MiB is a 413, as on the REST routes', async () => {
    const response = await app.request('POST', '/graphql', {
      session: w.adminA.session,
      body: { query: '{ __typename }', variables: { pad: 'x'.repeat(1024 * 1024) } },
    });
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ error: 'PayloadTooLarge' });
  });

  test('GET /graphql does not run queries', async () => {
    const response = await app.get(`/graphql?query=${encodeURIComponent('{ allProducts { totalCount } }')}`, {
      session: w.adminA.session,
      headers: { accept: 'application/json' },
    });
    expect(response.status).toBe(405);
  });
});
