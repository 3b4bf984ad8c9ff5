// GraphQL bounded (SPEC §13): documents refused before they are planned (depth,
// aliases, tokens, nodes), page arguments checked before any SQL, every
// collection a page at most, statement timeouts as TIMEOUT, and documents
// built to exhaust a server (huge alias counts, nested lists, fragments spread
// exponentially) refused or bounded while REST is served beside them.
import type { AddressInfo } from 'node:net';
import type { Request } from 'express';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApp } from '../src/server/app.ts';
import { loadConfig } from '../src/config.ts';
import { createPool } from '../src/db/pool.ts';
import { createGraphql, requestSettings } from '../src/graphql/server.ts';
import { makeWithPgClient, ReadTransactions, STARTUP_STATEMENT_TIMEOUT_MS } from '../src/graphql/transport/pg-client.ts';
import { LIMITS, makeParseAndValidate } from '../src/graphql/limits.ts';
import { OPERATION_PLANS_KEPT } from '../src/graphql/preset.ts';
import { buildSchema } from 'postgraphile/graphql';
import { allRoutes } from '../src/server/route-table.ts';
import { startTestApp, type RequestOptions, type TestApp } from './harness.ts';

let app: TestApp;
let session: string;
let pat: string;
let organizationId: string;
let productId: string;
const ORDERS = 2_000;

type Auth = Pick<RequestOptions, 'token' | 'session'>;
interface GraphqlBody {
  data?: any;
  errors?: { message: string; extensions?: { code?: string; argument?: string } }[];
}

async function gql(query: string, variables: Record<string, unknown> = {}, auth: Auth = {}) {
  const response = await app.request('POST', '/graphql', { ...auth, headers: { accept: 'application/json' }, body: { query, variables } });
  return response as { status: number; body: GraphqlBody };
}
const codes = (body: GraphqlBody) => (body.errors ?? []).map((e) => e.extensions?.code);

/** Runs `work` while a REST request is made beside it; both must finish (a document that holds the server hangs the test). */
async function besideRest<T>(work: () => Promise<T>): Promise<{ result: T; rest: number }> {
  const [result, rest] = await Promise.all([work(), app.get('/v1/users/me', { session }).then((r) => r.status)]);
  return { result, rest };
}

/** A pg client that records the text of each statement it sends (pg-pool's `Client` option). */
class RecordingClient extends pg.Client {
  static texts: string[] | null = null;
  override query(...args: unknown[]): any {
    const q = args[0];
    RecordingClient.texts?.push(typeof q === 'string' ? q : String((q as { text?: string })?.text));
    return (pg.Client.prototype.query as (...a: unknown[]) => unknown).apply(this, args);
  }
}

/** A GraphQL server of its own on a pool of RecordingClients, over the suite's database. */
let recording: { url: string; close(): Promise<void> };

async function startRecording() {
  const pool = new pg.Pool({ connectionString: app.authenticatorUrl, max: 4, Client: RecordingClient });
  const graphql = await createGraphql({ pool, secret: app.secret, development: false });
  const server = createApp({ pool, secret: app.secret, routes: allRoutes(pool), mounts: [graphql.mount] }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  recording = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await graphql.release();
      await pool.end();
    },
  };
}

/** gql, answered by the recording server */
async function recordedGql(query: string, variables: Record<string, unknown> = {}, auth: Auth = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (auth.token) headers.authorization = `Bearer ${auth.token}`;
  if (auth.session) headers.cookie = `rowgate_session=${auth.session}`;
  const response = await fetch(`${recording.url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  return { status: response.status, body: (await response.json()) as GraphqlBody };
}

/**
 * The statements the recording server runs while `work` runs, but for the
 * transactions' own (BEGIN, the settings, COMMIT, savepoints) and the authentication
 */
async function dataStatementsDuring(work: () => Promise<unknown>): Promise<string[]> {
  const texts: string[] = [];
  RecordingClient.texts = texts;
  try {
    await work();
  } finally {
    RecordingClient.texts = null;
  }
  return texts.filter(
    (t) =>
      !/^\s*(begin|commit|rollback|savepoint|release savepoint)\b/i.test(t) &&
      !/rowgate_private\.authenticate|json_each_text|set_config\(/.test(t),
  );
}

beforeAll(async () => {
  app = await startTestApp();
  const user = await app.user();
  session = user.session;
  pat = await app.pat(user.id, ['orders_read', 'products_read']);
  organizationId = (await app.organization(user.id)).id;
  productId = await app.product(organizationId);
  const customerId = await app.customer(organizationId);
  await app.sql(
    `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency)
     select $1, $2, $3, 1000, 'usd' from generate_series(1, $4)`,
    [organizationId, customerId, productId, ORDERS],
  );
  await startRecording();
});
afterAll(async () => {
  await recording?.close();
  await app?.close();
});

describe('documents built to exhaust the server are refused or bounded, and REST is served meanwhile', () => {
  test('the schema bounds the operation plans grafast keeps, so many distinct documents cannot fill the heap', async () => {
    const graphql = await createGraphql({ pool: app.pool, secret: app.secret, development: false });
    try {
      const schema = await graphql.instance.getSchema();
      expect(schema.extensions.grafast?.operationsCacheMaxLength).toBe(OPERATION_PLANS_KEPT);
    } finally {
      await graphql.release();
    }
  });

  test('anonymous: 1,600 node(id:) aliases (154 KB)', async () => {
    const id = Buffer.from(JSON.stringify(['orders', '00000000-0000-0000-0000-000000000000'])).toString('base64');
    const query = `{ ${Array.from({ length: 1600 }, (_, i) => `a${i}: node(id: "${id}") { id }`).join(' ')} }`;
    expect(query.length).toBeGreaterThan(100_000);
    const { result, rest } = await besideRest(() => gql(query));
    expect(result.body.data).toBeUndefined();
    expect(codes(result.body)).toEqual(['QUERY_TOO_COMPLEX']);
    expect(rest).toBe(200);
  });

  test('ten successive documents of 100 aliases', async () => {
    const query = `{ ${Array.from({ length: 100 }, (_, i) => `a${i}: allProducts { totalCount }`).join(' ')} }`;
    for (let i = 0; i < 10; i++) {
      const { result, rest } = await besideRest(() => gql(query, {}, { session }));
      expect(codes(result.body)).toEqual(['QUERY_TOO_COMPLEX']);
      expect(result.body.errors![0]!.message).toMatch(/100 aliases; the limit is 20/);
      expect(rest).toBe(200);
    }
  });

  test(`signed-in: orders of a product within orders, over ${ORDERS.toLocaleString('en')} orders`, async () => {
    const unbounded = `{ allOrders { nodes { rowId productByProductId { ordersByProductId { nodes { rowId } } } } } }`;
    const refused = await besideRest(() => gql(unbounded, {}, { session }));
    expect(codes(refused.result.body)).toEqual(['QUERY_TOO_COMPLEX']);
    expect(refused.rest).toBe(200);

    // the largest document the budget admits: 100 + 100 × 99 = 10,000 nodes
    const largest = `{ allOrders(first: 100) { nodes { rowId productByProductId { ordersByProductId(first: 99) { nodes { rowId } } } } } }`;
    const bounded = await besideRest(() => gql(largest, {}, { session }));
    expect(bounded.result.body.errors).toBeUndefined();
    const nodes = bounded.result.body.data.allOrders.nodes;
    expect(nodes).toHaveLength(100);
    expect(nodes.every((n: any) => n.productByProductId.ordersByProductId.nodes.length === 99)).toBe(true);
    expect(bounded.rest).toBe(200);
  });
});

describe('limits before planning (QUERY_TOO_COMPLEX), each at its edge', () => {
  const nested = (levels: number) => {
    // allOrganizations (1) > nodes (2) > an organization's account (3) > its organization (4) > … > rowId (levels)
    const relations = Array.from({ length: levels - 3 }, (_, i) => (i % 2 ? 'organizationByOrganizationId' : 'accountByAccountId'));
    const inner = relations.reduceRight((selection, relation) => `${relation} { ${selection} }`, 'rowId');
    return `{ allOrganizations(first: 1) { nodes { ${inner} } } }`;
  };

  test(`depth: ${LIMITS.depth} levels pass, ${LIMITS.depth + 1} are refused; fragments add no level`, async () => {
    const ok = await gql(nested(LIMITS.depth), {}, { session });
    expect(ok.body.errors).toBeUndefined();
    const deep = await gql(nested(LIMITS.depth + 1), {}, { session });
    expect(codes(deep.body)).toEqual(['QUERY_TOO_COMPLEX']);
    expect(deep.body.errors![0]!.message).toMatch(/11 levels deep; the limit is 10/);
    const viaFragment = await gql(
      `query { allProducts(first: 1) { ...P } } fragment P on ProductConnection { nodes { rowId } }`,
      {},
      { session },
    );
    expect(viaFragment.body.errors).toBeUndefined();
  });

  test(`aliases: ${LIMITS.aliases} pass, ${LIMITS.aliases + 1} are refused (in fragments too)`, async () => {
    const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} }`;
    expect((await gql(aliased(LIMITS.aliases))).body.errors).toBeUndefined();
    expect(codes((await gql(aliased(LIMITS.aliases + 1))).body)).toEqual(['QUERY_TOO_COMPLEX']);
    const inFragment = `{ ...F a: __typename } fragment F on Query { ${Array.from({ length: LIMITS.aliases }, (_, i) => `f${i}: __typename`).join(' ')} }`;
    expect(codes((await gql(inFragment)).body)).toEqual(['QUERY_TOO_COMPLEX']);
  });

  test(`tokens: ${LIMITS.tokens} pass, one more is refused`, async () => {
    // 18 tokens around a list whose every value is one token
    const withTokens = (n: number) =>
      `{ allProducts(first: 1, orderBy: [${Array.from({ length: n - 18 }, () => 'NAME_ASC').join(' ')}]) { nodes { rowId } } }`;
    const at = await gql(withTokens(LIMITS.tokens), {}, { session });
    expect(at.body.errors, JSON.stringify(at.body.errors)).toBeUndefined();
    const over = await gql(withTokens(LIMITS.tokens + 1), {}, { session });
    expect(codes(over.body)).toEqual(['QUERY_TOO_COMPLEX']);
    expect(over.body.errors![0]!.message).toMatch(/more than 2,000 tokens/);
  });

  test('nodes: counted as GitHub counts them (page sizes multiplied along nesting, 100 when not given or a variable)', async () => {
    const at = (outer: string, inner: string) =>
      `query${outer.includes('$n') ? ' ($n: Int)' : ''} { allOrders${outer} { nodes { productByProductId { ordersByProductId${inner} { nodes { rowId } } } } } }`;
    expect((await gql(at('(first: 100)', '(first: 99)'), {}, { session })).body.errors).toBeUndefined(); // 10,000
    expect(codes((await gql(at('(first: 100)', '(first: 100)'), {}, { session })).body)).toEqual(['QUERY_TOO_COMPLEX']); // 10,100
    // a variable counts what it could be, 100, whatever this request's value: 100 + 10,000
    expect(codes((await gql(at('(first: $n)', '(first: 100)'), { n: 1 }, { session })).body)).toEqual(['QUERY_TOO_COMPLEX']);
    expect((await gql(at('(last: 50)', '(first: 100)'), {}, { session })).body.errors).toBeUndefined(); // 50 + 5,000
    expect(codes((await gql(at('', '(first: 100)'), {}, { session })).body)).toEqual(['QUERY_TOO_COMPLEX']); // 100 + 10,000
  });

  test('a refused document runs no statement beyond the authentication (anonymous: none at all)', async () => {
    const anonymous = await dataStatementsDuring(() =>
      recordedGql(`{ ${Array.from({ length: 30 }, (_, i) => `a${i}: __typename`).join(' ')} }`),
    );
    expect(anonymous).toEqual([]);
    const run = await dataStatementsDuring(() =>
      recordedGql(`{ ${Array.from({ length: 30 }, (_, i) => `a${i}: allProducts { totalCount }`).join(' ')} }`, {}, { session }),
    );
    expect(run).toEqual([]);
    // (the probe sees the statements of an accepted one)
    expect((await dataStatementsDuring(() => recordedGql('{ allProducts { totalCount } }', {}, { session }))).join('\n')).toMatch(
      /count\(\*\)/,
    );
  });
});

describe('page arguments (BAD_USER_INPUT, no SQL) and the default page', () => {
  test.each([
    ['first: -1', {}, 'first'],
    ['first: 101', {}, 'first'],
    ['last: 101', {}, 'last'],
    ['offset: -1', {}, 'offset'],
    ['first: $n', { n: -5 }, 'first'],
    ['first: $n', { n: 1_000_000 }, 'first'],
    ['last: $n', { n: 101 }, 'last'],
  ])('allOrders(%s) with %j is refused, naming %s', async (args, variables, argument) => {
    let result: Awaited<ReturnType<typeof gql>> | undefined;
    const run = await dataStatementsDuring(async () => {
      result = await recordedGql(`query${args.includes('$n') ? ' ($n: Int)' : ''} { allOrders(${args}) { nodes { rowId } } }`, variables);
    });
    expect(result!.status).toBe(200);
    expect(codes(result!.body)).toEqual(['BAD_USER_INPUT']);
    expect(result!.body.errors![0]!.extensions!.argument).toBe(argument);
    expect(result!.body.errors![0]!.message).toContain(`"${argument}"`);
    expect(run).toEqual([]);
  });

  test('a variable of the wrong type is BAD_USER_INPUT, not an internal error', async () => {
    const result = await gql(`query ($n: Int) { allOrders(first: $n) { nodes { rowId } } }`, { n: 'ten' }, { session });
    expect(codes(result.body)).toEqual(['BAD_USER_INPUT']);
  });

  test('without first or last, a connection returns its first 100 nodes and says more exist', async () => {
    const { body } = await gql(`{ allOrders { totalCount pageInfo { hasNextPage } nodes { rowId } } }`, {}, { session });
    expect(body.errors).toBeUndefined();
    expect(body.data.allOrders.totalCount).toBe(ORDERS);
    expect(body.data.allOrders.nodes).toHaveLength(LIMITS.pageSize);
    expect(body.data.allOrders.pageInfo.hasNextPage).toBe(true);
  });

  test('first and last at their bounds; a null variable means not given; last alone is the last page', async () => {
    const page = async (args: string, variables: Record<string, unknown> = {}) => {
      const { body } = await gql(
        `query${args.includes('$n') ? ' ($n: Int)' : ''} { allOrders(${args}, orderBy: [CREATED_AT_ASC, ROW_ID_ASC]) { nodes { rowId } } }`,
        variables,
        { session },
      );
      expect(body.errors, JSON.stringify(body.errors)).toBeUndefined();
      return body.data.allOrders.nodes.map((n: { rowId: string }) => n.rowId) as string[];
    };
    expect(await page('first: 0')).toHaveLength(0);
    expect(await page('first: 100')).toHaveLength(100);
    expect(await page('first: $n', { n: null })).toHaveLength(100);
    const last = await page('last: 3');
    expect(last).toHaveLength(3);
    const all = await app.sql<{ id: string }>('select id from rowgate.orders where organization_id = $1 order by created_at, id', [
      organizationId,
    ]);
    expect(last).toEqual(all.slice(-3).map((r) => r.id));
  });
});

describe('one authentication for REST and GraphQL', () => {
  test('GraphQL sets what REST sets, the credential id included', async () => {
    const req = { headers: { authorization: `Bearer ${pat}` } } as unknown as Request;
    const settings = await requestSettings(app.pool, app.secret, req);
    // and they are what a query's statements run under
    const reads = new ReadTransactions(app.pool, settings);
    const { rows } = await reads.query<{ credential_id: string; role: string }>({
      text: `select current_setting('rowgate.credential_id') as credential_id, current_user as role`,
    });
    expect(rows[0]).toEqual({ credential_id: settings['rowgate.credential_id'], role: 'rowgate_user' });
    const [token] = await app.sql<{ id: string; user_id: string }>(
      'select id, user_id from rowgate.personal_access_tokens order by created_at desc limit 1',
    );
    expect(settings).toEqual({
      role: 'rowgate_user',
      'rowgate.subject_kind': 'user',
      'rowgate.subject_id': token!.user_id,
      'rowgate.credential_kind': 'personal_access_token',
      'rowgate.credential_id': token!.id,
      'rowgate.scopes': expect.stringContaining('orders_read'),
      // a request that passed no request-id middleware has none (SPEC §14: src/operating/request-id.ts)
      'rowgate.request_id': '',
      // the request log keeps /v1 requests only (SPEC §25): GraphQL's link no row
      'rowgate.request_log_id': '',
      // nor a client address or user agent (SPEC §21: an event's origin)
      'rowgate.client_address': '',
      'rowgate.user_agent': '',
      // a personal access token has neither an impersonator nor an OAuth2 client
      'rowgate.credential_impersonator': `${token!.id}:`,
      'rowgate.credential_client': `${token!.id}:`,
      // the API version the credential is pinned to (SPEC §23)
      'rowgate.api_version': expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
    });
  });
});

describe("a query's statements share transactions", () => {
  test('a statement that fails fails alone: the others of its transaction still run', async () => {
    // anonymous: no grant on any table, so every statement fails, each with its own error
    const { body } = await gql(`{ allProducts { totalCount } allOrders { totalCount } allCustomers(first: 1) { nodes { rowId } } }`);
    expect(codes(body)).toEqual(['NotPermitted', 'NotPermitted', 'NotPermitted']);
    // a signed-in query after them, on the same pool, is whole
    const ok = await gql(`{ allProducts { totalCount } allOrders(first: 2) { totalCount nodes { rowId } } }`, {}, { session });
    expect(ok.body.errors).toBeUndefined();
    expect(ok.body.data.allOrders.totalCount).toBe(ORDERS);
  });

  test('collections within a page (statements asked for later) run in a transaction of their own, under the same settings', async () => {
    const { body } = await gql(
      `{ allOrders(first: 5) { totalCount nodes { rowId productByProductId { rowId ordersByProductId(first: 1) { totalCount } } } } }`,
      {},
      { session },
    );
    expect(body.errors).toBeUndefined();
    for (const node of body.data.allOrders.nodes) expect(node.productByProductId.ordersByProductId.totalCount).toBe(ORDERS);
  });
});

describe('bad input is a client error with a code (found by the GraphQL fuzzer)', () => {
  test('a body that is not a GraphQL request is refused as REST refuses one', async () => {
    const asText = await app.request('POST', '/graphql', { rawBody: '{ __typename }', headers: { 'content-type': 'text/plain' } });
    expect(asText.status).toBe(415);
    expect(asText.body.error).toBe('UnsupportedMediaType');
    const notString = await app.request('POST', '/graphql', { body: { query: 42, variables: [] } });
    expect(notString.status).toBe(422);
    expect(notString.body.detail.map((i: { loc: string[] }) => i.loc.join('.'))).toEqual(['body.query', 'body.variables']);
  });

  test('a NUL in a string, a cursor of another ordering: BAD_USER_INPUT', async () => {
    const nul = await gql(`query ($name: String!) { roleByName(name: $name) { name } }`, { name: 'a\u0000b' }, { session });
    expect(codes(nul.body)).toEqual(['BAD_USER_INPUT']);
    const page = await gql(`{ allOrders(first: 1, orderBy: [CREATED_AT_ASC]) { pageInfo { endCursor } } }`, {}, { session });
    const cursor = page.body.data.allOrders.pageInfo.endCursor;
    const other = await gql(
      `query ($c: Cursor) { allOrders(first: 1, after: $c, orderBy: [AMOUNT_DESC]) { nodes { rowId } } }`,
      { c: cursor },
      { session },
    );
    expect(codes(other.body)).toEqual(['BAD_USER_INPUT']);
  });
});

describe('bounded error messages (a hostile review, 2026-11-26)', () => {
  test("a document's long name is echoed at most 200 characters in its error, as REST echoes inputs", async () => {
    const name = 'q'.repeat(100_000);
    const res = await gql(`{ ${name} }`, {}, { session });
    expect(codes(res.body)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    const [error] = res.body.errors as { message: string }[];
    expect(error!.message.length).toBeLessThanOrEqual(400);
    expect(error!.message).toContain(`"${'q'.repeat(199)}…"`);
    expect(JSON.stringify(res.body).length).toBeLessThan(2_000);
  });
});

describe('more found by the GraphQL fuzzer', () => {
  test('fragments spread twice in each of 40 fragments (2^40 fields written out) are refused at once', async () => {
    const fragments = Array.from({ length: 40 }, (_, i) =>
      i === 39 ? `fragment F39 on Query { __typename }` : `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`,
    );
    const { result, rest } = await besideRest(() => gql(`{ ...F0 } ${fragments.join(' ')}`));
    expect(codes(result.body)).toEqual(['QUERY_TOO_COMPLEX']);
    expect(result.body.errors![0]!.message).toMatch(/fragments written out/);
    expect(rest).toBe(200);
    // 12 levels of two spreads (4,096 fields written out) pass
    const within = Array.from({ length: 13 }, (_, i) =>
      i === 12 ? `fragment F12 on Query { __typename }` : `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`,
    );
    const ok = await gql(`{ ...F0 } ${within.join(' ')}`);
    expect(ok.body.errors).toBeUndefined();
    // and page sizes add up as if written out: 2^11 pages of 5 nodes (4,096 fields)
    const pages = Array.from({ length: 11 }, (_, i) => `fragment P${i} on Query { ...P${i + 1} ...P${i + 1} }`);
    const paged = await gql(`{ ...P0 } ${pages.join(' ')} fragment P11 on Query { allProducts(first: 5) { totalCount } }`, {}, { session });
    expect(codes(paged.body)).toEqual(['QUERY_TOO_COMPLEX']);
    expect(paged.body.errors![0]!.message).toMatch(/10,000 nodes/);
  });

  test('a value nested as deep as the tokens allow is refused, not a stack overflow', async () => {
    const { status, body } = await gql(
      `{ allProducts(orderBy: ${'['.repeat(1_990)}NAME_ASC${']'.repeat(5)}) { totalCount } }`.slice(0, 30_000),
      {},
      { session },
    );
    expect(status).toBe(200);
    expect(codes(body).every((c) => c === 'QUERY_TOO_COMPLEX' || c === 'GRAPHQL_PARSE_FAILED')).toBe(true);
    expect(codes(body).length).toBeGreaterThan(0);
  });

  test('a subscription, which this API does not have, is a validation error', async () => {
    const { body } = await gql('subscription { __typename }');
    expect(codes(body)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
  });

  test('a body of another JSON media type is refused as REST refuses one', async () => {
    const response = await app.request('POST', '/graphql', {
      rawBody: '{"query":"{ __typename }"}',
      headers: { 'content-type': 'application/graphql-response+json' },
    });
    expect(response.status).toBe(415);
    expect(response.body.error).toBe('UnsupportedMediaType');
  });

  test('long documents are not kept by the parse cache (each holds its whole text)', () => {
    const schema = buildSchema('type Query { a: Int }');
    const parseAndValidate = makeParseAndValidate(schema);
    const short = '{ a }';
    expect(parseAndValidate(short)).toBe(parseAndValidate(short));
    const long = `# ${'x'.repeat(500_000)}\n{ a }`;
    expect(parseAndValidate(long).errors).toBeUndefined();
    expect(parseAndValidate(long)).not.toBe(parseAndValidate(long));
  });
});

describe('timestamps', () => {
  test('GraphQL writes a timestamp as REST writes it (PostgreSQL formats only the rows it returns)', async () => {
    const { body } = await gql(`{ allOrders(first: 3) { nodes { rowId createdAt updatedAt } } }`, {}, { session });
    expect(body.errors).toBeUndefined();
    for (const node of body.data.allOrders.nodes) {
      const rest = await app.get(`/v1/orders/${node.rowId}`, { session });
      expect({ createdAt: node.createdAt, updatedAt: node.updatedAt }).toEqual({
        createdAt: rest.body.created_at,
        updatedAt: rest.body.updated_at,
      });
    }
  });
});

describe('timeouts and the mode', () => {
  test('a statement past the statement timeout is a TIMEOUT error, and the server answers others', async () => {
    const pool = createPool({ connectionString: app.authenticatorUrl, max: 2, statementTimeoutMs: 1_500 });
    const graphql = await createGraphql({ pool, secret: app.secret, development: false });
    const other = createApp({ pool, secret: app.secret, routes: allRoutes(pool), mounts: [graphql.mount] });
    const server = other.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const locker = await app.owner.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table rowgate.orders in access exclusive mode');
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', cookie: `rowgate_session=${session}` },
        body: JSON.stringify({ query: '{ allOrders(first: 1) { nodes { rowId } } }' }),
      });
      const body = (await response.json()) as GraphqlBody;
      expect(codes(body)).toEqual(['TIMEOUT']);
    } finally {
      await locker.query('rollback');
      locker.release();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await graphql.release();
      await pool.end();
    }
  });

  test("PostGraphile's start-up introspection runs under the start-up timeout, not the request one", async () => {
    // a CI run failed to start at ROWGATE_STATEMENT_TIMEOUT_MS=1000: the first
    // introspection of a busy machine took longer than one request may
    const pool = createPool({ connectionString: app.authenticatorUrl, max: 1, statementTimeoutMs: 100 });
    try {
      const introspect = makeWithPgClient(pool);
      const result = await introspect(null, (client) =>
        client.query<{ timeout: string }>({ text: "select current_setting('statement_timeout') as timeout, pg_sleep(0.3)" }),
      );
      expect(result.rows[0]?.timeout).toBe(`${STARTUP_STATEMENT_TIMEOUT_MS / 60_000}min`);
      // and the connection goes back to the pool with the request timeout
      const after = await pool.query<{ timeout: string }>("select current_setting('statement_timeout') as timeout");
      expect(after.rows[0]?.timeout).toBe('100ms');
    } finally {
      await pool.end();
    }
  });

  test('production unless NODE_ENV=development: no explorer', async () => {
    expect(loadConfig({}).NODE_ENV).toBe('production');
    expect((await app.get('/graphiql')).status).toBe(404);
  });
});
