// Resource behaviour (SPEC §6, §9, §11): products, customers and orders through
// their life cycles, creates on organization-owned resources, customer sessions
// and the portal, the current user, and the published document.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { apiRoutes } from '../src/server/route-table.ts';
import { aTimestamp, expectError, expectUnauthorized, expectValidationError } from './expect-api.ts';
import { startTestApp, type ApiResponse, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
/** admin of `org` and `other`; `foreign` belongs to `stranger` */
let user: TestUser;
let stranger: TestUser;
let org: string;
let other: string;
let foreign: string;
beforeAll(async () => {
  app = await startTestApp();
  user = await app.user({ name: 'Resources' });
  stranger = await app.user();
  org = (await app.organization(user.id)).id;
  other = (await app.organization(user.id)).id;
  foreign = (await app.organization(stranger.id)).id;
});
afterAll(async () => app?.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?\+00:00$/;
const as = (u: TestUser) => ({ session: u.session });

function expectStatus(res: ApiResponse, status: number) {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: status === 204 ? '' : expect.anything() });
}

/** a 422 with exactly one issue, at `loc` */
function expectInvalidAt(res: ApiResponse, loc: string[]) {
  const issues = expectValidationError(res);
  expect(issues.map((i) => i.loc)).toEqual([loc]);
}

async function listIds(path: string, auth: { session?: string; token?: string } = as(user)) {
  const res = await app.get(path, auth);
  expect(res.status).toBe(200);
  return (res.body.items as { id: string }[]).map((i) => i.id);
}

describe('products', () => {
  const body = { name: 'Pro plan', price_amount: 2500, price_currency: 'usd' };

  test('create → 201 with the read schema; GET returns the same', async () => {
    const res = await app.post('/v1/products/', { ...body, organization_id: org }, as(user));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      organization_id: org,
      name: 'Pro plan',
      description: null,
      price_amount: 2500,
      price_currency: 'usd',
      is_archived: false,
      metadata: {},
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    const got = await app.get(`/v1/products/${res.body.id}`, as(user));
    expect({ status: got.status, body: got.body }).toEqual({ status: 200, body: res.body });
  });

  test.each([
    [{ price_amount: 1, price_currency: 'usd' }, 'name'],
    [{ name: '', price_amount: 1, price_currency: 'usd' }, 'name'],
    [{ name: 'x', price_amount: -1, price_currency: 'usd' }, 'price_amount'],
    [{ name: 'x', price_amount: 1.5, price_currency: 'usd' }, 'price_amount'],
    [{ name: 'x', price_amount: 1, price_currency: 'USD' }, 'price_currency'],
    [{ name: 'x', price_amount: 1, price_currency: 'usd', is_archived: 'yes' }, 'is_archived'],
    [{ name: 'x', price_amount: 1, price_currency: 'usd', colour: 'red' }, 'colour'],
  ])('create %j → 422 at body.%s', async (fields, field) => {
    expectInvalidAt(await app.post('/v1/products/', { organization_id: org, ...fields }, as(user)), ['body', field]);
  });

  test('an archived product is visible and listed, unless is_archived=false', async () => {
    const res = await app.post('/v1/products/', { ...body, organization_id: org, is_archived: true }, as(user));
    expect({ status: res.status, archived: res.body.is_archived }).toEqual({ status: 201, archived: true });
    const id = res.body.id;
    expect((await app.get(`/v1/products/${id}`, as(user))).body.is_archived).toBe(true);
    expect(await listIds(`/v1/products/?organization_id=${org}&limit=100`)).toContain(id);
    expect(await listIds(`/v1/products/?organization_id=${org}&is_archived=true&limit=100`)).toContain(id);
    expect(await listIds(`/v1/products/?organization_id=${org}&is_archived=false&limit=100`)).not.toContain(id);
    // archiving and unarchiving is an update
    const unarchived = await app.patch(`/v1/products/${id}`, { is_archived: false }, as(user));
    expect({ status: unarchived.status, archived: unarchived.body.is_archived }).toEqual({ status: 200, archived: false });
    expect(await listIds(`/v1/products/?organization_id=${org}&is_archived=false&limit=100`)).toContain(id);
  });

  test('PATCH changes only the fields sent; an explicit null clears the description', async () => {
    const created = (await app.post('/v1/products/', { ...body, organization_id: org, description: 'Long text' }, as(user))).body;
    expect(created.description).toBe('Long text');

    const renamed = await app.patch(`/v1/products/${created.id}`, { name: 'Team plan' }, as(user));
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...created, name: 'Team plan', updated_at: expect.stringMatching(TIMESTAMP) });
    // updated_at moves forward (the API shows milliseconds; the row keeps microseconds)
    expect(Date.parse(renamed.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    const [stamps] = await app.sql('select updated_at > created_at as moved from rowgate.products where id = $1', [created.id]);
    expect(stamps).toEqual({ moved: true });

    const repriced = await app.patch(`/v1/products/${created.id}`, { price_amount: 0, price_currency: 'eur' }, as(user));
    expect(repriced.body).toEqual({ ...renamed.body, price_amount: 0, price_currency: 'eur', updated_at: expect.any(String) });

    // an empty update changes nothing that is visible
    const untouched = await app.patch(`/v1/products/${created.id}`, {}, as(user));
    expect(untouched.status).toBe(200);
    expect({ ...untouched.body, updated_at: null }).toEqual({ ...repriced.body, updated_at: null });

    const cleared = await app.patch(`/v1/products/${created.id}`, { description: null }, as(user));
    expect(cleared.body).toEqual({ ...repriced.body, description: null, updated_at: expect.any(String) });
    const got = await app.get(`/v1/products/${created.id}`, as(user));
    expect(got.body).toEqual(cleared.body);
  });

  test.each([
    [{ name: null }, 'name'],
    [{ price_amount: null }, 'price_amount'],
    [{ is_archived: null }, 'is_archived'],
    [{ organization_id: randomUUID() }, 'organization_id'],
    [{ id: randomUUID() }, 'id'],
  ])('PATCH %j → 422 at body.%s, and nothing changes', async (fields, field) => {
    const id = await app.product(org, { name: 'Fixed' });
    expectInvalidAt(await app.patch(`/v1/products/${id}`, fields, as(user)), ['body', field]);
    const [row] = await app.sql('select name, price_amount, is_archived, organization_id from rowgate.products where id = $1', [id]);
    expect(row).toEqual({ name: 'Fixed', price_amount: 1000, is_archived: false, organization_id: org });
  });

  test('DELETE is a soft delete: 204, then 404 everywhere and gone from lists; the row keeps its data', async () => {
    const created = (await app.post('/v1/products/', { ...body, organization_id: org, name: 'Doomed' }, as(user))).body;
    const res = await app.delete(`/v1/products/${created.id}`, as(user));
    expectStatus(res, 204);
    expectError(await app.get(`/v1/products/${created.id}`, as(user)), 404, 'ResourceNotFound');
    expectError(await app.patch(`/v1/products/${created.id}`, { name: 'Back' }, as(user)), 404, 'ResourceNotFound');
    expectError(await app.delete(`/v1/products/${created.id}`, as(user)), 404, 'ResourceNotFound');
    expect(await listIds(`/v1/products/?organization_id=${org}&limit=100`)).not.toContain(created.id);
    expect(await listIds(`/v1/products/?query=Doomed&limit=100`)).toEqual([]);
    const rows = await app.sql('select name, price_amount, deleted_at from rowgate.products where id = $1', [created.id]);
    expect(rows).toEqual([{ name: 'Doomed', price_amount: 2500, deleted_at: aTimestamp }]);
  });

  test('a product of an organization out of reach is a 404 on every verb', async () => {
    const id = await app.product(foreign);
    expectError(await app.get(`/v1/products/${id}`, as(user)), 404, 'ResourceNotFound');
    expectError(await app.patch(`/v1/products/${id}`, { name: 'Mine' }, as(user)), 404, 'ResourceNotFound');
    expectError(await app.delete(`/v1/products/${id}`, as(user)), 404, 'ResourceNotFound');
    const [row] = await app.sql('select name, deleted_at from rowgate.products where id = $1', [id]);
    expect(row).toEqual({ name: 'Product', deleted_at: null });
  });

  test('a malformed id is a 422 at path.id', async () => {
    expectInvalidAt(await app.get('/v1/products/not-a-uuid', as(user)), ['path', 'id']);
  });
});

describe('customers', () => {
  const email = () => `Jo.${randomUUID().slice(0, 8)}@Example.com`;

  test('create → 201: status defaults to pending, the e-mail is stored lower-case; GET returns the same', async () => {
    const address = email();
    const res = await app.post('/v1/customers/', { organization_id: org, email: address, first_name: 'Jo' }, as(user));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      organization_id: org,
      email: address.toLowerCase(),
      first_name: 'Jo',
      last_name: null,
      status: 'pending',
      external_id: null,
      metadata: {},
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    const got = await app.get(`/v1/customers/${res.body.id}`, as(user));
    expect({ status: got.status, body: got.body }).toEqual({ status: 200, body: res.body });
    const active = await app.post('/v1/customers/', { organization_id: org, email: email(), status: 'active' }, as(user));
    expect({ status: active.status, value: active.body.status }).toEqual({ status: 201, value: 'active' });
  });

  test.each([
    [{ email: 'not-an-email' }, 'email'],
    [{}, 'email'],
    [{ email: 'a@example.com', status: 'gone' }, 'status'],
    [{ email: 'a@example.com', first_name: 7 }, 'first_name'],
  ])('create %j → 422 at body.%s', async (fields, field) => {
    expectInvalidAt(await app.post('/v1/customers/', { organization_id: org, ...fields }, as(user)), ['body', field]);
  });

  test("the e-mail is unique among the organization's live customers (422 at body.email), not across organizations", async () => {
    const address = email();
    const first = await app.post('/v1/customers/', { organization_id: org, email: address }, as(user));
    expect(first.status).toBe(201);
    expectInvalidAt(await app.post('/v1/customers/', { organization_id: org, email: address }, as(user)), ['body', 'email']);
    expectInvalidAt(await app.post('/v1/customers/', { organization_id: org, email: address.toUpperCase() }, as(user)), ['body', 'email']);
    // the same e-mail in another organization is another customer
    const elsewhere = await app.post('/v1/customers/', { organization_id: other, email: address }, as(user));
    expect({ status: elsewhere.status, org: elsewhere.body.organization_id }).toEqual({ status: 201, org: other });
    // changing another customer's e-mail to a taken one is refused too
    const second = (await app.post('/v1/customers/', { organization_id: org, email: email() }, as(user))).body;
    expectInvalidAt(await app.patch(`/v1/customers/${second.id}`, { email: address }, as(user)), ['body', 'email']);
    // after a soft delete the address is free again
    expectStatus(await app.delete(`/v1/customers/${first.body.id}`, as(user)), 204);
    const again = await app.post('/v1/customers/', { organization_id: org, email: address }, as(user));
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(first.body.id);
    expect(
      await app.sql('select count(*)::int as n from rowgate.customers where organization_id = $1 and email = $2', [
        org,
        address.toLowerCase(),
      ]),
    ).toEqual([{ n: 2 }]);
  });

  test('PATCH changes only the fields sent; null clears a name', async () => {
    const created = (
      await app.post('/v1/customers/', { organization_id: org, email: email(), first_name: 'Jo', last_name: 'Doe' }, as(user))
    ).body;
    const activated = await app.patch(`/v1/customers/${created.id}`, { status: 'active' }, as(user));
    expect(activated.body).toEqual({ ...created, status: 'active', updated_at: expect.stringMatching(TIMESTAMP) });
    const cleared = await app.patch(`/v1/customers/${created.id}`, { last_name: null }, as(user));
    expect(cleared.body).toEqual({ ...activated.body, last_name: null, updated_at: expect.any(String) });
    const readdressed = await app.patch(`/v1/customers/${created.id}`, { email: `NEW.${created.email}` }, as(user));
    expect(readdressed.body).toEqual({ ...cleared.body, email: `new.${created.email}`, updated_at: expect.any(String) });
    expectInvalidAt(await app.patch(`/v1/customers/${created.id}`, { email: null }, as(user)), ['body', 'email']);
    expectInvalidAt(await app.patch(`/v1/customers/${created.id}`, { organization_id: other }, as(user)), ['body', 'organization_id']);
  });

  test('the status filter takes several values', async () => {
    const scope = (await app.organization(user.id)).id;
    const pending = await app.customer(scope, { status: 'pending' });
    const active = await app.customer(scope, { status: 'active' });
    const base = `/v1/customers/?organization_id=${scope}`;
    expect(await listIds(`${base}&status=active`)).toEqual([active]);
    expect(await listIds(`${base}&status=pending`)).toEqual([pending]);
    expect((await listIds(`${base}&status=active&status=pending`)).sort()).toEqual([active, pending].sort());
  });

  test('DELETE is a soft delete: 404 after, gone from lists, deleted_at set', async () => {
    const created = (await app.post('/v1/customers/', { organization_id: org, email: email() }, as(user))).body;
    expectStatus(await app.delete(`/v1/customers/${created.id}`, as(user)), 204);
    expectError(await app.get(`/v1/customers/${created.id}`, as(user)), 404, 'ResourceNotFound');
    expectError(await app.patch(`/v1/customers/${created.id}`, { status: 'active' }, as(user)), 404, 'ResourceNotFound');
    expect(await listIds(`/v1/customers/?email=${encodeURIComponent(created.email)}`)).toEqual([]);
    const rows = await app.sql('select email, deleted_at from rowgate.customers where id = $1', [created.id]);
    expect(rows).toEqual([{ email: created.email, deleted_at: aTimestamp }]);
  });
});

describe('orders', () => {
  let productA: string;
  let customerA: string;
  beforeAll(async () => {
    productA = await app.product(org, { price_amount: 4200 });
    customerA = await app.customer(org);
  });

  const transactionsOf = (orderId: string) =>
    app.sql<{ organization_id: string; type: string; amount: number; currency: string }>(
      `select organization_id, type, amount::int as amount, currency from rowgate.transactions where order_id = $1 order by created_at, type`,
      [orderId],
    );

  test('create: the organization, amount and currency come from the product; status pending; no transaction', async () => {
    const res = await app.post('/v1/orders/', { customer_id: customerA, product_id: productA }, as(user));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      organization_id: org,
      customer_id: customerA,
      product_id: productA,
      amount: 4200,
      currency: 'usd',
      status: 'pending',
      // SPEC §18: nothing refunded yet
      refunded_amount: 0,
      metadata: {},
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    const got = await app.get(`/v1/orders/${res.body.id}`, as(user));
    expect({ status: got.status, body: got.body }).toEqual({ status: 200, body: res.body });
    expect(await transactionsOf(res.body.id)).toEqual([]);
  });

  test('create with an explicit amount and currency', async () => {
    const res = await app.post('/v1/orders/', { customer_id: customerA, product_id: productA, amount: 99, currency: 'eur' }, as(user));
    expect({ status: res.status, amount: res.body.amount, currency: res.body.currency }).toEqual({
      status: 201,
      amount: 99,
      currency: 'eur',
    });
  });

  test('a customer of another organization → 422 at body.customer_id', async () => {
    const otherCustomer = await app.customer(other);
    expectInvalidAt(await app.post('/v1/orders/', { customer_id: otherCustomer, product_id: productA }, as(user)), ['body', 'customer_id']);
    expectInvalidAt(await app.post('/v1/orders/', { customer_id: randomUUID(), product_id: productA }, as(user)), ['body', 'customer_id']);
    const gone = await app.customer(org);
    await app.sql('update rowgate.customers set deleted_at = now() where id = $1', [gone]);
    expectInvalidAt(await app.post('/v1/orders/', { customer_id: gone, product_id: productA }, as(user)), ['body', 'customer_id']);
    expect(await app.sql('select id from rowgate.orders where customer_id = any($1::uuid[])', [[otherCustomer, gone]])).toEqual([]);
  });

  test('a product out of reach → 422 at body.product_id', async () => {
    const foreignProduct = await app.product(foreign);
    const foreignCustomer = await app.customer(foreign);
    expectInvalidAt(await app.post('/v1/orders/', { customer_id: foreignCustomer, product_id: foreignProduct }, as(user)), [
      'body',
      'product_id',
    ]);
    expectInvalidAt(await app.post('/v1/orders/', { customer_id: customerA, product_id: randomUUID() }, as(user)), ['body', 'product_id']);
    const deleted = await app.product(org);
    await app.sql('update rowgate.products set deleted_at = now() where id = $1', [deleted]);
    expectInvalidAt(await app.post('/v1/orders/', { customer_id: customerA, product_id: deleted }, as(user)), ['body', 'product_id']);
    expect(await app.sql('select id from rowgate.orders where product_id = any($1::uuid[])', [[foreignProduct, deleted]])).toEqual([]);
  });

  test('an order created paid records exactly one payment transaction', async () => {
    const res = await app.post('/v1/orders/', { customer_id: customerA, product_id: productA, status: 'paid' }, as(user));
    expect({ status: res.status, value: res.body.status }).toEqual({ status: 201, value: 'paid' });
    expect(await transactionsOf(res.body.id)).toEqual([{ organization_id: org, type: 'payment', amount: 4200, currency: 'usd' }]);
    const listed = await app.get(`/v1/transactions/?order_id=${res.body.id}`, as(user));
    expect(listed.body.items.map((t: any) => [t.type, t.amount, t.currency, t.organization_id])).toEqual([['payment', 4200, 'usd', org]]);
  });

  test('pending → paid records one payment; paid → refunded one refund (negative); nothing twice', async () => {
    const order = (await app.post('/v1/orders/', { customer_id: customerA, product_id: productA, amount: 1500 }, as(user))).body;
    const paid = await app.patch(`/v1/orders/${order.id}`, { status: 'paid' }, as(user));
    expect(paid.body).toEqual({ ...order, status: 'paid', updated_at: expect.stringMatching(TIMESTAMP) });
    // the same status again, or an empty update, records nothing more
    expect((await app.patch(`/v1/orders/${order.id}`, { status: 'paid' }, as(user))).status).toBe(200);
    expect((await app.patch(`/v1/orders/${order.id}`, {}, as(user))).status).toBe(200);
    expect(await transactionsOf(order.id)).toEqual([{ organization_id: org, type: 'payment', amount: 1500, currency: 'usd' }]);

    const refunded = await app.patch(`/v1/orders/${order.id}`, { status: 'refunded' }, as(user));
    expect({ status: refunded.status, value: refunded.body.status }).toEqual({ status: 200, value: 'refunded' });
    // SPEC §18: the rest of the order is refunded, as a refund of its own
    expect(refunded.body.refunded_amount).toBe(1500);
    expect((await app.patch(`/v1/orders/${order.id}`, { status: 'refunded' }, as(user))).status).toBe(200);
    expect(await transactionsOf(order.id)).toEqual([
      { organization_id: org, type: 'payment', amount: 1500, currency: 'usd' },
      { organization_id: org, type: 'refund', amount: -1500, currency: 'usd' },
    ]);
  });

  test.each([
    ['paid', 'pending'],
    ['refunded', 'paid'],
    ['refunded', 'pending'],
  ])('a backward status (%s → %s) → 422 at body.status, and nothing changes', async (from, to) => {
    const id = await app.order(productA, customerA, from);
    const before = await transactionsOf(id);
    expectInvalidAt(await app.patch(`/v1/orders/${id}`, { status: to }, as(user)), ['body', 'status']);
    expect((await app.get(`/v1/orders/${id}`, as(user))).body.status).toBe(from);
    expect(await transactionsOf(id)).toEqual(before);
  });

  test('an unknown status → 422 at body.status; orders are not deleted (405)', async () => {
    const id = await app.order(productA, customerA);
    expectInvalidAt(await app.patch(`/v1/orders/${id}`, { status: 'cancelled' }, as(user)), ['body', 'status']);
    expectInvalidAt(await app.patch(`/v1/orders/${id}`, { amount: 1 }, as(user)), ['body', 'amount']);
    expectError(await app.delete(`/v1/orders/${id}`, as(user)), 405, 'MethodNotAllowed');
  });
});

describe('create on organization-owned resources', () => {
  const creates = {
    products: { name: 'Widget', price_amount: 100, price_currency: 'usd' },
    customers: () => ({ email: `o-${randomUUID().slice(0, 8)}@example.com` }),
  };
  const bodyOf = (what: keyof typeof creates) => {
    const b = creates[what];
    return typeof b === 'function' ? b() : b;
  };
  const tables = { products: 'rowgate.products', customers: 'rowgate.customers' };

  test.each(['products', 'customers'] as const)('%s: a User omitting organization_id → 422 at body.organization_id', async (what) => {
    expectInvalidAt(await app.post(`/v1/${what}/`, bodyOf(what), as(user)), ['body', 'organization_id']);
  });

  test.each(['products', 'customers'] as const)(
    '%s: an unreachable organization_id → 422 at body.organization_id, nothing created',
    async (what) => {
      const count = async () =>
        (await app.sql(`select count(*)::int as n from ${tables[what]} where organization_id = $1`, [foreign]))[0].n;
      const before = await count();
      for (const organizationId of [foreign, randomUUID()]) {
        expectInvalidAt(await app.post(`/v1/${what}/`, { ...bodyOf(what), organization_id: organizationId }, as(user)), [
          'body',
          'organization_id',
        ]);
      }
      expect(await count()).toBe(before);
    },
  );

  test.each(['products', 'customers'] as const)('%s: a deleted organization is unreachable too', async (what) => {
    const gone = (await app.organization(user.id)).id;
    await app.sql('update rowgate.organizations set deleted_at = now() where id = $1', [gone]);
    expectInvalidAt(await app.post(`/v1/${what}/`, { ...bodyOf(what), organization_id: gone }, as(user)), ['body', 'organization_id']);
  });

  test.each(['products', 'customers'] as const)('%s: a malformed organization_id → 422 at body.organization_id', async (what) => {
    expectInvalidAt(await app.post(`/v1/${what}/`, { ...bodyOf(what), organization_id: 'acme' }, as(user)), ['body', 'organization_id']);
  });

  test.each(['products', 'customers'] as const)(
    '%s: an organization token may omit it (its own), and may not name another',
    async (what) => {
      const token = await app.oat(other, [`${what}_write`]);
      const res = await app.post(`/v1/${what}/`, bodyOf(what), { token });
      expect({ status: res.status, org: res.body.organization_id }).toEqual({ status: 201, org: other });
      const named = await app.post(`/v1/${what}/`, { ...bodyOf(what), organization_id: other }, { token });
      expect({ status: named.status, org: named.body.organization_id }).toEqual({ status: 201, org: other });
      expectInvalidAt(await app.post(`/v1/${what}/`, { ...bodyOf(what), organization_id: org }, { token }), ['body', 'organization_id']);
    },
  );

  test.each(['products', 'customers'] as const)('%s: a member whose role lacks the write permission → 403 NotPermitted', async (what) => {
    const accountant = await app.user();
    await app.membership(org, accountant.id, 'finance');
    const res = await app.post(`/v1/${what}/`, { ...bodyOf(what), organization_id: org }, as(accountant));
    expectError(res, 403, 'NotPermitted');
    expect(res.body.detail).toBe(`You don't have permission to write ${what}`);
  });

  test('orders: an organization token orders from its own products only', async () => {
    const token = await app.oat(other, ['orders_write']);
    const ownProduct = await app.product(other);
    const ownCustomer = await app.customer(other);
    const res = await app.post('/v1/orders/', { customer_id: ownCustomer, product_id: ownProduct }, { token });
    expect({ status: res.status, org: res.body.organization_id }).toEqual({ status: 201, org: other });
    const elsewhere = await app.product(org);
    expectInvalidAt(await app.post('/v1/orders/', { customer_id: ownCustomer, product_id: elsewhere }, { token }), ['body', 'product_id']);
  });
});

describe('customer sessions and the customer portal', () => {
  let customerId: string;
  let neighbourId: string;
  let mine: string[];
  let theirs: string;
  beforeAll(async () => {
    customerId = await app.customer(org, { status: 'active' });
    neighbourId = await app.customer(org);
    const productId = await app.product(org, { price_amount: 300 });
    mine = [await app.order(productId, customerId), await app.order(productId, customerId, 'paid')];
    theirs = await app.order(productId, neighbourId, 'paid');
  });

  async function customerSession(body: Record<string, unknown>) {
    const res = await app.post('/v1/customer-sessions/', body, as(user));
    expect(res.status).toBe(201);
    return res;
  }

  test('POST /v1/customer-sessions/ → 201 {token, customer_id, member_id, expires_at} for one hour', async () => {
    const before = Date.now();
    const res = await customerSession({ customer_id: customerId });
    expect(res.body).toEqual({
      token: expect.stringMatching(/^rg_cst_[0-9A-Za-z]{32,}$/),
      customer_id: customerId,
      member_id: null,
      expires_at: expect.stringMatching(TIMESTAMP),
    });
    const lifetime = Date.parse(res.body.expires_at) - before;
    expect(lifetime).toBeGreaterThan(3600_000 - 60_000);
    expect(lifetime).toBeLessThanOrEqual(3600_000 + 5_000);
  });

  test('a new portal session prunes ten that expired more than a day ago, and nothing younger or live', async () => {
    const stale = await app.sql<{ id: string }>(
      `insert into rowgate_private.sessions (token_hash, kind, customer_id, expires_at)
       select uuid_send(gen_random_uuid()), 'customer', $1, now() - interval '2 days' - g * interval '1 second' from generate_series(1, 12) g
       returning id`,
      [customerId],
    );
    const [recent] = await app.sql<{ id: string }>(
      `insert into rowgate_private.sessions (token_hash, kind, customer_id, expires_at)
       values (uuid_send(gen_random_uuid()), 'customer', $1, now() - interval '1 hour') returning id`,
      [customerId],
    );
    const live = (await customerSession({ customer_id: customerId })).body.token as string;
    const left = await app.sql<{ id: string }>('select id from rowgate_private.sessions where id = any ($1)', [
      [...stale.map((s) => s.id), recent!.id],
    ]);
    // the ten oldest went; the two youngest of them, and the one expired an hour ago, stay
    expect(left.map((r) => r.id).sort()).toEqual([stale[0]!.id, stale[1]!.id, recent!.id].sort());
    await customerSession({ customer_id: customerId });
    expect((await app.sql('select 1 from rowgate_private.sessions where id = any ($1)', [stale.map((s) => s.id)])).length).toBe(0);
    expect((await app.get('/v1/customer-portal/orders/', { token: live })).status).toBe(200);
  });

  test('a customer out of reach → 422 at body.customer_id', async () => {
    const foreignCustomer = await app.customer(foreign);
    expectInvalidAt(await app.post('/v1/customer-sessions/', { customer_id: foreignCustomer }, as(user)), ['body', 'customer_id']);
    expectInvalidAt(await app.post('/v1/customer-sessions/', { customer_id: randomUUID() }, as(user)), ['body', 'customer_id']);
  });

  test("the customer sees itself as the organization sees it, but for the merchant's own external id and metadata", async () => {
    const { token } = (await customerSession({ customer_id: customerId })).body;
    const me = await app.get('/v1/customer-portal/customers/me', { token });
    const { external_id: _external, metadata: _metadata, ...shown } = (await app.get(`/v1/customers/${customerId}`, as(user))).body;
    expect({ status: me.status, body: me.body }).toEqual({ status: 200, body: shown });
  });

  test('the customer sees its own orders only', async () => {
    const { token } = (await customerSession({ customer_id: customerId })).body;
    const list = await app.get('/v1/customer-portal/orders/', { token });
    expect(list.status).toBe(200);
    expect(list.body.items.map((o: any) => o.id).sort()).toEqual([...mine].sort());
    expect(list.body.pagination).toEqual({ total_count: 2, max_page: 1 });
    const own = await app.get(`/v1/customer-portal/orders/${mine[1]}`, { token });
    const { metadata: _metadata, ...order } = (await app.get(`/v1/orders/${mine[1]}`, as(user))).body;
    expect({ status: own.status, body: own.body }).toEqual({ status: 200, body: order });
    expectError(await app.get(`/v1/customer-portal/orders/${theirs}`, { token }), 404, 'ResourceNotFound');
  });

  test('a customer changes its own names (null clears), nothing else', async () => {
    const { token } = (await customerSession({ customer_id: customerId })).body;
    const named = await app.patch('/v1/customer-portal/customers/me', { first_name: 'Kim', last_name: 'Lee' }, { token });
    expect(named.status).toBe(200);
    expect({ first: named.body.first_name, last: named.body.last_name, id: named.body.id }).toEqual({
      first: 'Kim',
      last: 'Lee',
      id: customerId,
    });
    const cleared = await app.patch('/v1/customer-portal/customers/me', { last_name: null }, { token });
    expect(cleared.body).toEqual({ ...named.body, last_name: null, updated_at: expect.any(String) });
    const { external_id: _external, metadata: _metadata, ...staffView } = (await app.get(`/v1/customers/${customerId}`, as(user))).body;
    expect(staffView).toEqual(cleared.body);
    for (const field of ['email', 'status', 'organization_id']) {
      expectInvalidAt(await app.patch('/v1/customer-portal/customers/me', { [field]: 'x@example.com' }, { token }), ['body', field]);
    }
    const [row] = await app.sql('select status, first_name from rowgate.customers where id = $1', [neighbourId]);
    expect(row).toEqual({ status: 'pending', first_name: null });
  });

  test('a customer session reaches only the portal (401 elsewhere)', async () => {
    const { token } = (await customerSession({ customer_id: customerId })).body;
    expectUnauthorized(await app.get(`/v1/customers/${customerId}`, { token }), false);
    expectUnauthorized(await app.get('/v1/orders/', { token }), false);
  });

  test('a member session: the same reads, but read-only (403)', async () => {
    const memberId = await app.customerMember(customerId);
    const res = await customerSession({ customer_id: customerId, member_id: memberId });
    expect(res.body).toEqual({
      token: expect.stringMatching(/^rg_mst_[0-9A-Za-z]{32,}$/),
      customer_id: customerId,
      member_id: memberId,
      expires_at: expect.stringMatching(TIMESTAMP),
    });
    const token = res.body.token;
    const me = await app.get('/v1/customer-portal/customers/me', { token });
    expect({ status: me.status, id: me.body.id }).toEqual({ status: 200, id: customerId });
    expect((await app.get('/v1/customer-portal/orders/', { token })).body.items.map((o: any) => o.id).sort()).toEqual([...mine].sort());
    const before = (await app.get(`/v1/customers/${customerId}`, as(user))).body;
    const denied = await app.patch('/v1/customer-portal/customers/me', { first_name: 'Seat' }, { token });
    expectError(denied, 403, 'NotPermitted');
    expect((await app.get(`/v1/customers/${customerId}`, as(user))).body).toEqual(before);
    // the fixture's member session behaves the same
    expectError(
      await app.patch('/v1/customer-portal/customers/me', { first_name: 'Seat' }, { token: await app.memberSession(memberId) }),
      403,
      'NotPermitted',
    );
  });

  test('a member of another customer → 422 at body.member_id', async () => {
    const otherSeat = await app.customerMember(neighbourId);
    expectInvalidAt(await app.post('/v1/customer-sessions/', { customer_id: customerId, member_id: otherSeat }, as(user)), [
      'body',
      'member_id',
    ]);
  });

  test("a deleted customer's session authenticates nobody", async () => {
    const leaving = await app.customer(org);
    const { token } = (await customerSession({ customer_id: leaving })).body;
    expect((await app.get('/v1/customer-portal/customers/me', { token })).status).toBe(200);
    expectStatus(await app.delete(`/v1/customers/${leaving}`, as(user)), 204);
    expectUnauthorized(await app.get('/v1/customer-portal/customers/me', { token }), true);
  });
});

describe('users/me', () => {
  test("GET → the user's read schema", async () => {
    const res = await app.get('/v1/users/me', as(user));
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: {
        id: user.id,
        email: user.email,
        name: 'Resources',
        avatar_url: null,
        is_admin: false,
        created_at: expect.stringMatching(TIMESTAMP),
        updated_at: expect.stringMatching(TIMESTAMP),
      },
    });
  });

  test('PATCH changes only the fields sent; null clears', async () => {
    const me = await app.user({ name: 'Before' });
    const before = (await app.get('/v1/users/me', as(me))).body;
    const avatar = await app.patch('/v1/users/me', { avatar_url: 'https://example.com/a.png' }, as(me));
    expect(avatar.body).toEqual({ ...before, avatar_url: 'https://example.com/a.png', updated_at: expect.stringMatching(TIMESTAMP) });
    const renamed = await app.patch('/v1/users/me', { name: 'After' }, as(me));
    expect(renamed.body).toEqual({ ...avatar.body, name: 'After', updated_at: expect.any(String) });
    const cleared = await app.patch('/v1/users/me', { name: null, avatar_url: null }, as(me));
    expect(cleared.body).toEqual({ ...renamed.body, name: null, avatar_url: null, updated_at: expect.any(String) });
    expect((await app.get('/v1/users/me', as(me))).body).toEqual(cleared.body);
  });

  test.each([
    [{ email: 'other@example.com' }, 'email'],
    [{ is_admin: true }, 'is_admin'],
    [{ avatar_url: 'ftp://example.com/a.png' }, 'avatar_url'],
    [{ avatar_url: 'not a url' }, 'avatar_url'],
    [{ name: '' }, 'name'],
  ])('PATCH %j → 422 at body.%s', async (fields, field) => {
    expectInvalidAt(await app.patch('/v1/users/me', fields, as(user)), ['body', field]);
    const [row] = await app.sql(
      'select email, exists (select 1 from rowgate_private.platform_admins a where a.user_id = u.id) as is_admin from rowgate.users u where id = $1',
      [user.id],
    );
    expect(row).toEqual({ email: user.email, is_admin: false });
  });

  test('GET/PATCH take a web session only (a PAT → 401)', async () => {
    const token = await app.pat(user.id, ['user:read', 'user:write']);
    expectUnauthorized(await app.get('/v1/users/me', { token }), false);
    expectUnauthorized(await app.patch('/v1/users/me', { name: 'X' }, { token }), false);
  });

  test('DELETE with a PAT: 204, the user is soft-deleted and every credential stops working', async () => {
    const leaving = await app.user();
    const token = await app.pat(leaving.id, ['user:write']);
    const readOnly = await app.pat(leaving.id, ['user:read']);
    expectError(await app.delete('/v1/users/me', { token: readOnly }), 403, 'InsufficientScope');
    expectStatus(await app.delete('/v1/users/me', { token }), 204);
    expectUnauthorized(await app.get('/v1/users/me', as(leaving)), true);
    expectUnauthorized(await app.delete('/v1/users/me', { token }), true);
    expectUnauthorized(await app.get('/v1/organizations/', { token: readOnly }), true);
    const [row] = await app.sql('select deleted_at from rowgate.users where id = $1', [leaving.id]);
    expect(row).toEqual({ deleted_at: aTimestamp });
  });

  test('DELETE with the web session works too', async () => {
    const leaving = await app.user();
    expectStatus(await app.delete('/v1/users/me', as(leaving)), 204);
    expectUnauthorized(await app.get('/v1/users/me', as(leaving)), true);
  });
});

describe('the OpenAPI document', () => {
  test('GET /v1/openapi.json lists every route of the table and the health endpoints, with their operation ids', async () => {
    const res = await app.get('/v1/openapi.json');
    expect(res.status).toBe(200);
    const documented = Object.entries<Record<string, { operationId: string }>>(res.body.paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, op]) => `${method} ${path} ${op.operationId}`),
    );
    const expected = [
      ...apiRoutes.map((r) => `${r.method} ${r.path} ${r.operationId}`),
      'get /healthz health:live',
      'get /readyz health:ready',
      'get /v1/openapi.json openapi',
      'get /v1/versions versions:list',
    ];
    expect(documented.sort()).toEqual(expected.sort());
    expect(expected.length).toBeGreaterThan(30);
  });
});
