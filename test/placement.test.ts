// Where a request runs (src/db/placement.ts): a route's declared effect, not its
// method, decides it, for REST and GraphQL alike. A read goes where reads go (a
// standby that will do, else the primary, counted as a read the primary served),
// carries no Rowgate-Consistency and claims no Idempotency-Key; a write runs on the
// primary and carries the token. The instance's one "standby" is the primary
// itself, which never qualifies: every read is counted in `primaryReads`.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Consistency } from '../src/db/consistency.ts';
import { createPool } from '../src/db/pool.ts';
import { ReadReplicas } from '../src/db/read-replicas.ts';
import { createGraphql, type Graphql } from '../src/graphql/server.ts';
import { createApp } from '../src/server/app.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
let pool: pg.Pool;
let reads: ReadReplicas;
let graphql: Graphql;
let server: Server;
let base: string;
let pat: string;
let organizationId: string;

beforeAll(async () => {
  app = await startTestApp();
  const ann = await app.user();
  organizationId = (await app.organization(ann.id)).id;
  pat = await app.pat(ann.id, ['products_read', 'products_write']);
  pool = createPool({ connectionString: app.authenticatorUrl, max: 2, statementTimeoutMs: 10_000 });
  const consistency = new Consistency({ primary: pool });
  reads = new ReadReplicas({ primary: pool, urls: [app.authenticatorUrl], maxLagMs: 1_000, pool: { max: 1, statementTimeoutMs: 10_000 } });
  graphql = await createGraphql({ pool, secret: app.secret, development: false, consistency, reads });
  server = createApp({
    pool,
    secret: app.secret,
    routes: allRoutes(pool, reads),
    mailer: outboxMailer(() => {}),
    mounts: [graphql.mount],
    consistency,
    reads,
  }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await graphql?.release();
  await reads?.stop();
  await pool?.end();
  await app?.close();
});

async function post(path: string, body: unknown, key?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${pat}`, 'content-type': 'application/json' };
  if (key !== undefined) headers['idempotency-key'] = key;
  const response = await fetch(base + path, { method: 'POST', headers, body: JSON.stringify(body) });
  return {
    status: response.status,
    token: response.headers.get('rowgate-consistency'),
    replayed: response.headers.get('idempotent-replayed'),
    body: (await response.json()) as any,
  };
}

const keysKept = async (key: string) =>
  Number((await app.sql<{ n: string }>('select count(*) as n from rowgate_private.idempotency_keys where key = $1', [key]))[0]!.n);

/** what the request did to the count of reads the primary served because no standby would do */
async function readsServed<T>(request: () => Promise<T>): Promise<{ answer: T; reads: number }> {
  const before = reads.primaryReads;
  const answer = await request();
  return { answer, reads: reads.primaryReads - before };
}

describe('REST: the effect a route declares', () => {
  test('the check, a POST that reads: placed as a read, no token, and an Idempotency-Key is not claimed', async () => {
    const key = randomUUID();
    const check = { checks: [{ operation: 'products:list' }] };
    const first = await readsServed(() => post('/v1/authorization/check', check, key));
    expect(first.answer).toMatchObject({ status: 200, token: null, replayed: null });
    expect(first.reads).toBe(1);
    // the same key again: answered afresh, not replayed; nothing kept for it
    const again = await readsServed(() => post('/v1/authorization/check', check, key));
    expect(again.answer).toMatchObject({ status: 200, token: null, replayed: null });
    expect(again.reads).toBe(1);
    expect(await keysKept(key)).toBe(0);
    // a key a write would refuse as malformed is not read at all
    expect((await post('/v1/authorization/check', check, 'x'.repeat(256))).status).toBe(200);
  });

  test('a POST that writes: on the primary with its token, and its key claimed', async () => {
    const key = randomUUID();
    const product = { organization_id: organizationId, name: `placed ${key}`, price_amount: 100, price_currency: 'usd' };
    const first = await readsServed(() => post('/v1/products/', product, key));
    expect(first.answer).toMatchObject({ status: 201, replayed: null });
    expect(first.answer.token).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    expect(first.reads).toBe(0);
    expect(await keysKept(key)).toBe(1);
    expect((await post('/v1/products/', product, key)).replayed).toBe('true');
  });
});

describe('GraphQL: a query reads, a mutation writes, placed by the same rule', () => {
  test('a query: a read, no token', async () => {
    const { answer, reads: served } = await readsServed(() => post('/graphql', { query: '{ allProducts { nodes { rowId } } }' }));
    expect(answer).toMatchObject({ status: 200, token: null });
    expect(answer.body.errors).toBeUndefined();
    expect(served).toBe(1);
  });

  test('a mutation: on the primary, with its token', async () => {
    const query = `mutation ($organizationId: UUID!) {
      createProduct(input: { product: { organizationId: $organizationId, name: "placed", priceAmount: "1200", priceCurrency: "usd" } }) { product { rowId } }
    }`;
    const { answer, reads: served } = await readsServed(() => post('/graphql', { query, variables: { organizationId } }));
    expect(answer.status).toBe(200);
    expect(answer.body.errors).toBeUndefined();
    expect(answer.token).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
    expect(served).toBe(0);
  });
});
