// Exact totals from striped counters: many sessions writing
// one organization at once, some of them rolling back, leave every unfiltered
// list's total_count equal to the rows there are; each session adds to its own
// stripe, so they do not wait on one row.
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
let A: string;
beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  A = (await app.organization(admin.id)).id;
});
afterAll(async () => app?.close());

test('concurrent inserts and deletes in one organization, some rolled back: totals stay exact, spread over stripes', async () => {
  const sessions = await Promise.all(
    Array.from({ length: 6 }, async () => {
      const client = new pg.Client({ connectionString: app.ownerUrl });
      await client.connect();
      return client;
    }),
  );
  try {
    const product = await app.product(A);
    const customer = await app.customer(A);
    await Promise.all(
      sessions.map(async (client, s) => {
        for (let i = 0; i < 10; i++) {
          await client.query('begin');
          await client.query(
            `insert into rowgate.products (organization_id, name, price_amount, price_currency) values ($1, 'S', 1, 'usd')`,
            [A],
          );
          await client.query(
            `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status) values ($1, $2, $3, 1, 'usd', 'paid')`,
            [A, customer, product],
          );
          if (i % 3 === 0)
            await client.query(
              `update rowgate.products set deleted_at = now() where id = (select id from rowgate.products where organization_id = $1 and deleted_at is null and name = 'S' limit 1)`,
              [A],
            );
          await client.query((i + s) % 4 === 0 ? 'rollback' : 'commit');
        }
      }),
    );
    const web = { session: admin.session };
    const [counts] = await app.sql<{ products: number; orders: number; transactions: number }>(
      `select (select count(*)::int from rowgate.products where organization_id = $1 and deleted_at is null) as products,
              (select count(*)::int from rowgate.orders where organization_id = $1) as orders,
              (select count(*)::int from rowgate.transactions where organization_id = $1) as transactions`,
      [A],
    );
    expect((await app.get('/v1/products/', web)).body.pagination.total_count).toBe(counts!.products);
    expect((await app.get('/v1/orders/', web)).body.pagination.total_count).toBe(counts!.orders);
    expect((await app.get('/v1/transactions/', web)).body.pagination.total_count).toBe(counts!.transactions);
    const [stripes] = await app.sql<{ n: number }>(
      `select count(distinct stripe)::int as n from rowgate_private.organization_row_counts where organization_id = $1 and resource = 'orders'`,
      [A],
    );
    expect(stripes!.n).toBeGreaterThan(1);
  } finally {
    await Promise.all(sessions.map((c) => c.end()));
  }
});
