// Pooling: what rowgate sets on a connection is
// transaction-local, so connections can be shared between subjects (by the
// app's own pool, or by a transaction-pooling PgBouncer in front:
// scripts/test-pgbouncer.ts runs this file through one); and many concurrent
// requests of every kind over a small pool all get their answers.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createPool, inTransaction } from '../src/db/pool.ts';
import { generateToken } from '../src/auth/tokens.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
let org: { id: string };
let pat: string;
let oat: string;
let product: string;
beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  org = await app.organization(admin.id);
  pat = await app.pat(admin.id, ['products_read', 'customers_write', 'orders_read']);
  oat = await app.oat(org.id, ['products_write', 'customers_read']);
  product = await app.product(org.id);
  const customer = await app.customer(org.id);
  await app.order(product, customer, 'paid');
});
afterAll(() => app?.close());

/** What a fresh transaction on one of the pool's connections sees of the last subject. */
const LEFTOVERS = `select current_user::text as role,
  coalesce(current_setting('rowgate.subject_kind', true), '') as kind,
  coalesce(current_setting('rowgate.subject_id', true), '') as subject,
  coalesce(current_setting('rowgate.scopes', true), '') as scopes,
  coalesce(current_setting('rowgate.credential_id', true), '') as credential`;

test('after requests of every subject kind, no connection of the pool keeps a role or a setting', async () => {
  const requests = [
    () => app.get('/v1/products/', { token: pat }),
    () => app.get('/v1/products/', { token: oat }),
    () => app.get('/v1/users/me', { session: admin.session }),
    () =>
      app.post(
        '/v1/customers/',
        { organization_id: org.id, email: `c-${Math.random().toString(36).slice(2)}@example.com` },
        { token: pat },
      ),
    () => app.post('/graphql', { query: '{ allProducts { totalCount } }' }, { token: oat }),
    () => app.get('/v1/products/', {}),
  ];
  const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => requests[i % requests.length]!()));
  expect(answers.filter((a) => a.status >= 500)).toEqual([]);
  // every connection the pool (or the PgBouncer behind it) hands out, many times over
  const seen = await Promise.all(
    Array.from({ length: 40 }, async () => {
      const client = await app.pool.connect();
      try {
        await client.query('begin');
        const { rows } = await client.query(LEFTOVERS);
        await client.query('commit');
        return rows[0];
      } finally {
        client.release();
      }
    }),
  );
  for (const row of seen) expect(row).toEqual({ role: 'rowgate_authenticator', kind: '', subject: '', scopes: '', credential: '' });
});

test('400 concurrent requests of every kind over a pool of 4: every answer, none a 5xx, refusals included', async () => {
  // refused reads whose handler had already started (it runs alongside the
  // authentication) must leave nothing on the connection for the next request:
  // a members list makes two statements in turn
  const unknown = generateToken('personal_access_token');
  const kinds = [
    () => app.get('/v1/products/?limit=5', { token: pat }),
    () => app.get(`/v1/products/${product}`, { token: oat }),
    () => app.get('/v1/orders/', { token: pat }),
    () => app.get('/v1/organizations/', { session: admin.session }),
    () => app.patch(`/v1/products/${product}`, { name: 'Renamed' }, { token: oat }),
    () => app.get('/v1/customers/', { token: oat }),
    () => app.post('/graphql', { query: '{ allOrders { totalCount } }' }, { token: pat }),
    () => app.get('/v1/transactions/', { token: pat }), // 403: no finance scope
    () => app.get(`/v1/organizations/${org.id}/members`, { token: pat }), // 403: no members scope
    () => app.get(`/v1/organizations/${org.id}/members`, { token: unknown }), // 401
  ];
  const answers = await Promise.all(Array.from({ length: 400 }, (_, i) => kinds[i % kinds.length]!()));
  const statuses = answers.map((a) => a.status);
  expect(statuses.filter((s) => s >= 500).length, JSON.stringify(answers.find((a) => a.status >= 500)?.body)).toBe(0);
  expect(statuses.filter((s) => s === 200).length).toBe(280);
  expect(statuses.filter((s) => s === 403).length).toBe(80);
  expect(statuses.filter((s) => s === 401).length).toBe(40);
});

test('every transaction of the pool runs under the statement and idle-in-transaction timeouts, whatever connection it gets', async () => {
  // set per transaction, so they hold through a transaction-pooling PgBouncer too (which drops startup parameters)
  const seen = await Promise.all(
    Array.from({ length: 20 }, () =>
      inTransaction(app.pool, (tx) =>
        tx.one<{ statement: string; idle: string }>(
          `select current_setting('statement_timeout') as statement, current_setting('idle_in_transaction_session_timeout') as idle`,
        ),
      ),
    ),
  );
  for (const row of seen) expect(row).toEqual({ statement: '10s', idle: '20s' });
});

describe("a read's last statement carries its commit (Tx.lastStatementNext)", () => {
  // now() is the start of the transaction
  const state = `select now()::text as started`;

  test('its statement runs in the transaction, and the transaction ends with it', async () => {
    // one connection, so the next transaction is surely on the same one
    const single = createPool({ connectionString: app.authenticatorUrl, max: 1, statementTimeoutMs: 10_000 });
    try {
      const [first, inside] = await inTransaction(
        single,
        async (tx) => {
          const first = await tx.one<{ started: string }>(state);
          tx.lastStatementNext();
          return [first, await tx.one<{ started: string }>(state)] as const;
        },
        { deferCommit: true },
      );
      // the same transaction: the same start time as the statement before it
      expect(inside!.started).toBe(first!.started);
      // and it ended: the connection's next transaction starts afresh, not inside it
      const next = await inTransaction(single, (tx) => tx.one<{ started: string }>(state));
      expect(next!.started).not.toBe(inside!.started);
    } finally {
      await single.end();
    }
  });

  test('nothing may follow it: a later statement throws instead of running outside the transaction', async () => {
    const error = await inTransaction(
      app.pool,
      async (tx) => {
        tx.lastStatementNext();
        await tx.one('select 1');
        return tx.one('select 2').then(
          () => null,
          (e: Error) => e.message,
        );
      },
      { deferCommit: true },
    );
    expect(error).toBe('a statement after the last statement of its transaction');
  });

  test("a read's writes (a token's last use) are committed", async () => {
    const token = await app.pat(admin.id, ['products_read']);
    expect((await app.get('/v1/products/', { token })).status).toBe(200);
    // a read answers before its commit is done (deferCommit): the record follows within moments
    const lastUsed = async () =>
      (
        await app.sql(
          `select t.last_used_at from rowgate.personal_access_tokens t
           join rowgate_private.access_token_hashes h on h.personal_access_token_id = t.id where h.token_hash = $1`,
          [app.hash(token)],
        )
      )[0]!.last_used_at;
    await expect.poll(lastUsed, { timeout: 2_000, interval: 20 }).not.toBeNull();
  });

  test('in a write transaction it is a plain statement: the commit waits for the end', async () => {
    const seen = await inTransaction(app.pool, async (tx) => {
      tx.lastStatementNext();
      const last = await tx.one<{ started: string }>(state);
      const after = await tx.one<{ started: string }>(state);
      return [last, after];
    });
    expect(seen[1]!.started).toBe(seen[0]!.started);
  });
});
