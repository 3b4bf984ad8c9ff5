// A write's Rowgate-Consistency token (SPEC §19): REST writes and GraphQL
// mutations alike carry it, at or past the write's commit, and the position
// comes back with the commit itself (src/db/pool.ts), not from a round trip of
// its own after it.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { credentialKey } from '../src/auth/credentials.ts';
import { Consistency, formatPosition, parsePosition } from '../src/db/consistency.ts';
import { createPool, inTransaction } from '../src/db/pool.ts';
import { createGraphql, type Graphql } from '../src/graphql/server.ts';
import { createApp } from '../src/server/app.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
let pool: pg.Pool;
let consistency: Consistency;
let graphql: Graphql;
let server: Server;
let base: string;
let pat: string;
let organizationId: string;
/** the statements the pool ran outside a transaction of its own (pool.query) */
const poolQueries: string[] = [];

beforeAll(async () => {
  app = await startTestApp();
  const ann = await app.user();
  organizationId = (await app.organization(ann.id)).id;
  pat = await app.pat(ann.id, ['products_read', 'products_write']);
  // an instance of its own: its GraphQL knows the consistency memory (the harness's does not)
  pool = createPool({ connectionString: app.authenticatorUrl, max: 2, statementTimeoutMs: 10_000 });
  consistency = new Consistency({ primary: pool });
  graphql = await createGraphql({ pool, secret: app.secret, development: false, consistency });
  server = createApp({
    pool,
    secret: app.secret,
    routes: allRoutes(pool),
    mailer: outboxMailer(() => {}),
    mounts: [graphql.mount],
    consistency,
  }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const query = pool.query.bind(pool);
  vi.spyOn(pool, 'query').mockImplementation(((config: string | { text: string }, ...rest: unknown[]) => {
    poolQueries.push(typeof config === 'string' ? config : config.text);
    return (query as (...args: unknown[]) => unknown)(config, ...rest);
  }) as typeof pool.query);
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await graphql?.release();
  await pool?.end();
  await app?.close();
});

/** the primary's WAL position now, asked as the owner */
async function positionNow(): Promise<bigint> {
  const [row] = await app.sql<{ position: string }>('select pg_current_wal_insert_lsn()::text as position');
  return parsePosition(row!.position)!;
}

async function post(path: string, body: unknown) {
  const response = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${pat}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, token: response.headers.get('rowgate-consistency'), body: (await response.json()) as any };
}

const CREATE = `mutation ($organizationId: UUID!, $name: String!) {
  createProduct(input: { product: { organizationId: $organizationId, name: $name, priceAmount: "1200", priceCurrency: "usd" } }) {
    product { rowId }
  }
}`;

/** A write's token: past the position before it, at most the position after its answer, and no query of its own. */
async function expectWrittenAt<A extends { status: number; token: string | null; body: unknown }>(write: () => Promise<A>): Promise<A> {
  const before = await positionNow();
  poolQueries.length = 0;
  const answer = await write();
  const asked = poolQueries.splice(0);
  const after = await positionNow();
  expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(300);
  const position = parsePosition(answer.token);
  expect(position, `token ${answer.token}`).not.toBeNull();
  expect(position!).toBeGreaterThan(before);
  expect(position!).toBeLessThanOrEqual(after);
  expect(asked.filter((text) => /wal/i.test(text))).toEqual([]);
  // the credential's next reads through this instance must see it too
  expect(consistency.required(credentialKey({ kind: 'personal_access_token', token: pat }), undefined)).toBe(position);
  return answer;
}

describe("a write's Rowgate-Consistency token", () => {
  test('a REST write', async () => {
    await expectWrittenAt(() =>
      post('/v1/products/', { organization_id: organizationId, name: 'rest', price_amount: 1, price_currency: 'usd' }),
    );
  });

  test('a GraphQL mutation', async () => {
    const answer = await expectWrittenAt(() => post('/graphql', { query: CREATE, variables: { organizationId, name: 'graphql' } }));
    expect(answer.body.errors).toBeUndefined();
  });

  test("a GraphQL document of two mutations: the later one's", async () => {
    const two = `mutation ($organizationId: UUID!) {
      a: createProduct(input: { product: { organizationId: $organizationId, name: "a", priceAmount: "1", priceCurrency: "usd" } }) { product { rowId } }
      b: createProduct(input: { product: { organizationId: $organizationId, name: "b", priceAmount: "1", priceCurrency: "usd" } }) { product { rowId } }
    }`;
    const answer = await expectWrittenAt(() => post('/graphql', { query: two, variables: { organizationId } }));
    expect(Object.keys(answer.body.data)).toEqual(['a', 'b']);
  });

  test('a GraphQL query carries none; nor does a refused mutation', async () => {
    const read = await post('/graphql', { query: '{ allProducts(first: 1) { totalCount } }' });
    expect(read.status).toBe(200);
    expect(read.token).toBeNull();
    const refused = await post('/graphql', { query: CREATE, variables: { organizationId: crypto.randomUUID(), name: 'nowhere' } });
    expect(refused.body.errors?.length).toBeGreaterThan(0);
    expect(refused.token).toBeNull();
  });
});

test("a transaction asked for its position gets it from its commit's own answer", async () => {
  const before = await positionNow();
  let seen: string | null | undefined;
  await inTransaction(
    pool,
    async (tx) => {
      await tx.rows('select 1');
      seen = tx.position;
      return tx;
    },
    { position: true },
  ).then((tx) => {
    expect(seen).toBeUndefined(); // not before the commit
    expect(formatPosition(parsePosition(tx.position)!)).toBe(tx.position);
    expect(parsePosition(tx.position)!).toBeGreaterThanOrEqual(before);
  });
  // without it, the commit is a plain one
  const plain = await inTransaction(pool, async (tx) => tx);
  expect(plain.position).toBeUndefined();
});
