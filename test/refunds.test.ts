// Refunds (SPEC §18): the arithmetic at its edges (the last cent, one cent too
// many, an order not paid), the order's refunded_amount and status, PATCH
// status refunded refunding the rest through the same path, two refunds of one
// order racing (real parallel requests: exactly one wins), the transactions and
// events each refund writes, GraphQL creating and reading refunds under the
// same rules, and 404 across organizations.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { aTimestamp, expectValidationError } from './expect-api.ts';
import { type ApiResponse, startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
let member: TestUser;
let finance: TestUser;
let outsider: TestUser;
let org: string;
let other: string;
let product: string;
let customer: string;
let otherProduct: string;
let otherCustomer: string;

beforeAll(async () => {
  app = await startTestApp();
  [admin, member, finance, outsider] = [await app.user(), await app.user(), await app.user(), await app.user()];
  org = (await app.organization(admin.id)).id;
  other = (await app.organization(outsider.id)).id;
  await app.membership(org, member.id, 'member');
  await app.membership(org, finance.id, 'finance');
  product = await app.product(org, { price_amount: 1000 });
  customer = await app.customer(org);
  otherProduct = await app.product(other, { price_amount: 1000 });
  otherCustomer = await app.customer(other);
});
afterAll(async () => app?.close());

const as = (user: TestUser = admin) => ({ session: user.session });
const paidOrder = async (amount = 1000) =>
  (
    await app.sql<{ id: string }>(
      `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status)
       values ($1, $2, $3, $4, 'usd', 'paid') returning id`,
      [org, customer, product, amount],
    )
  )[0]!.id;
const refund = (orderId: string, amount: number, user: TestUser = admin, extra: Record<string, unknown> = {}) =>
  app.post('/v1/refunds/', { order_id: orderId, amount, reason: 'customer_request', ...extra }, as(user));
const locs = (res: ApiResponse) => expectValidationError(res).map((i) => i.loc);
const orderOf = async (id: string) => (await app.get(`/v1/orders/${id}`, as())).body;
const transactionsOf = (orderId: string) =>
  app.sql<{ type: string; amount: number }>(
    `select type, amount::int as amount from rowgate.transactions where order_id = $1 order by created_at, amount desc`,
    [orderId],
  );

describe('arithmetic at the edges', () => {
  test('partial refunds up to the last cent: refunded_amount follows, the last one sets the status refunded', async () => {
    const id = await paidOrder(1000);
    const first = await refund(id, 999, admin, { comment: 'Most of it', metadata: { ticket: 'T-1' } });
    expect(first.status).toBe(201);
    expect(first.body).toEqual({
      id: expect.any(String),
      organization_id: org,
      order_id: id,
      amount: 999,
      currency: 'usd',
      reason: 'customer_request',
      comment: 'Most of it',
      metadata: { ticket: 'T-1' },
      created_at: aTimestamp,
      updated_at: aTimestamp,
    });
    expect(await orderOf(id)).toMatchObject({ status: 'paid', amount: 1000, refunded_amount: 999 });
    // the last cent
    const last = await refund(id, 1);
    expect(last.status).toBe(201);
    expect(last.body).toMatchObject({ amount: 1, comment: null, metadata: {} });
    expect(await orderOf(id)).toMatchObject({ status: 'refunded', refunded_amount: 1000 });
    // GET answers what POST answered
    expect((await app.get(`/v1/refunds/${first.body.id}`, as())).body).toEqual(first.body);
    // one refund transaction of −amount per refund
    expect(await transactionsOf(id)).toEqual([
      { type: 'payment', amount: 1000 },
      { type: 'refund', amount: -999 },
      { type: 'refund', amount: -1 },
    ]);
  });

  test('one cent more than remains → 422 at body.amount, and nothing is written', async () => {
    const id = await paidOrder(1000);
    expect((await refund(id, 400)).status).toBe(201);
    const refused = await refund(id, 601);
    expect(locs(refused)).toEqual([['body', 'amount']]);
    expect(expectValidationError(refused)[0]!.msg).toMatch(/600 of 1000 usd/);
    expect(await orderOf(id)).toMatchObject({ status: 'paid', refunded_amount: 400 });
    expect((await app.get(`/v1/refunds/?order_id=${id}`, as())).body.pagination.total_count).toBe(1);
    // exactly what remains is fine
    expect((await refund(id, 600)).status).toBe(201);
    expect(await orderOf(id)).toMatchObject({ status: 'refunded', refunded_amount: 1000 });
  });

  test('a whole refund at once sets status refunded and refunded_amount = amount; nothing more can be refunded', async () => {
    const id = await paidOrder(2500);
    expect((await refund(id, 2500)).status).toBe(201);
    expect(await orderOf(id)).toMatchObject({ status: 'refunded', amount: 2500, refunded_amount: 2500 });
    expect(locs(await refund(id, 1))).toEqual([['body', 'order_id']]);
  });

  test('a pending order → 422 at body.order_id; amount below 1 or not an integer, an unknown reason → 422 at their field', async () => {
    const pending = await app.order(product, customer, 'pending');
    const refused = await refund(pending, 100);
    expect(locs(refused)).toEqual([['body', 'order_id']]);
    expect(expectValidationError(refused)[0]!.msg).toMatch(/paid/);
    const id = await paidOrder(1000);
    expect(locs(await refund(id, 0))).toEqual([['body', 'amount']]);
    expect(locs(await refund(id, -5))).toEqual([['body', 'amount']]);
    expect(locs(await refund(id, 1.5))).toEqual([['body', 'amount']]);
    expect(locs(await refund(id, 100, admin, { reason: 'changed_mind' }))).toEqual([['body', 'reason']]);
    expect(locs(await app.post('/v1/refunds/', { order_id: id, reason: 'other' }, as()))).toEqual([['body', 'amount']]);
    expect(locs(await refund(id, 100, admin, { comment: 'x'.repeat(1001) }))).toEqual([['body', 'comment']]);
    expect(locs(await refund(id, 100, admin, { metadata: { 'bad key': 1 } }))).toEqual([['body', 'metadata', 'bad key']]);
    expect(await transactionsOf(id)).toEqual([{ type: 'payment', amount: 1000 }]);
  });

  test('PATCH status refunded refunds the remainder: one refund of reason other, through the same path', async () => {
    const id = await paidOrder(1000);
    expect((await refund(id, 300)).status).toBe(201);
    const patched = await app.patch(`/v1/orders/${id}`, { status: 'refunded' }, as(member));
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ status: 'refunded', refunded_amount: 1000 });
    const refunds = (await app.get(`/v1/refunds/?order_id=${id}&sorting=amount`, as())).body.items;
    expect(refunds.map((r: { amount: number; reason: string }) => [r.amount, r.reason])).toEqual([
      [300, 'customer_request'],
      [700, 'other'],
    ]);
    expect(refunds[1].comment).toMatch(/status/);
    expect(await transactionsOf(id)).toEqual([
      { type: 'payment', amount: 1000 },
      { type: 'refund', amount: -300 },
      { type: 'refund', amount: -700 },
    ]);
    // the same status again refunds nothing more
    expect((await app.patch(`/v1/orders/${id}`, { status: 'refunded' }, as())).status).toBe(200);
    expect((await app.get(`/v1/refunds/?order_id=${id}`, as())).body.pagination.total_count).toBe(2);
  });

  test('PATCH status refunded on an order never refunded refunds it whole', async () => {
    const id = await paidOrder(1500);
    expect((await app.patch(`/v1/orders/${id}`, { status: 'refunded' }, as())).body).toMatchObject({ refunded_amount: 1500 });
    const [only] = (await app.get(`/v1/refunds/?order_id=${id}`, as())).body.items;
    expect(only).toMatchObject({ amount: 1500, reason: 'other', order_id: id, organization_id: org });
  });
});

test("an order inserted refunded (an operator's, a fixture's) was paid first: its transactions net to 0, as the API's do", async () => {
  const [row] = await app.sql<{ id: string }>(
    `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status)
     values ($1, $2, $3, 700, 'usd', 'refunded') returning id`,
    [org, customer, product],
  );
  expect(await transactionsOf(row!.id)).toEqual([
    { type: 'payment', amount: 700 },
    { type: 'refund', amount: -700 },
  ]);
  expect(await orderOf(row!.id)).toMatchObject({ status: 'refunded', refunded_amount: 700 });
});

describe('who may refund, and who sees refunds', () => {
  test("orders:write: a member and the organization's token may; a finance user may not (403 with the reason)", async () => {
    const id = await paidOrder(1000);
    expect((await refund(id, 100, member)).status).toBe(201);
    const oat = await app.oat(org, ['refunds_write']);
    expect((await app.post('/v1/refunds/', { order_id: id, amount: 100, reason: 'duplicate' }, { token: oat })).status).toBe(201);
    const denied = await refund(id, 100, finance);
    expect({ status: denied.status, body: denied.body }).toEqual({
      status: 403,
      body: { error: 'NotPermitted', detail: "You don't have permission to write orders" },
    });
    // scopes: refunds_write to create (orders_write is not enough), refunds_read to read
    const ordersOnly = await app.oat(org, ['orders_write']);
    const noScope = await app.post('/v1/refunds/', { order_id: id, amount: 100, reason: 'other' }, { token: ordersOnly });
    expect({ status: noScope.status, error: noScope.body.error }).toEqual({ status: 403, error: 'InsufficientScope' });
    const reader = await app.oat(org, ['refunds_read']);
    expect((await app.get(`/v1/refunds/?order_id=${id}`, { token: reader })).body.pagination.total_count).toBe(2);
    expect((await app.post('/v1/refunds/', { order_id: id, amount: 1, reason: 'other' }, { token: reader })).status).toBe(403);
    expect(await orderOf(id)).toMatchObject({ refunded_amount: 200 });
  });

  test('every member reads them (the finance role too); across organizations a refund is 404 and an order 422', async () => {
    const id = await paidOrder(1000);
    const made = (await refund(id, 250)).body;
    for (const user of [admin, member, finance]) expect((await app.get(`/v1/refunds/${made.id}`, as(user))).body).toEqual(made);
    const hidden = await app.get(`/v1/refunds/${made.id}`, as(outsider));
    expect({ status: hidden.status, error: hidden.body.error }).toEqual({ status: 404, error: 'ResourceNotFound' });
    const oatOther = await app.oat(other, ['refunds_write']);
    expect((await app.get(`/v1/refunds/${made.id}`, { token: oatOther })).status).toBe(404);
    expect((await app.get(`/v1/refunds/?order_id=${id}`, { token: oatOther })).body).toEqual({
      items: [],
      pagination: { total_count: 0, max_page: 0 },
    });
    // refunding another organization's order: as if it did not exist
    expect(locs(await refund(id, 1, outsider))).toEqual([['body', 'order_id']]);
    const theirs = await app.order(otherProduct, otherCustomer, 'paid');
    expect(locs(await refund(theirs, 1))).toEqual([['body', 'order_id']]);
    expect(
      locs(
        await app.post('/v1/refunds/', { order_id: theirs, amount: 1, reason: 'other' }, { token: await app.oat(org, ['refunds_write']) }),
      ),
    ).toEqual([['body', 'order_id']]);
    expect((await app.sql('select refunded_amount::int as r from rowgate.orders where id = $1', [theirs]))[0]).toEqual({ r: 0 });
  });
});

describe('concurrency', () => {
  /** Holds the order's row lock while `requests` start, so they all wait on it at once; then lets them go. */
  async function race(orderId: string, requests: (() => Promise<ApiResponse>)[]) {
    const blocker = new pg.Client({ connectionString: app.ownerUrl });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query('select 1 from rowgate.orders where id = $1 for update', [orderId]);
      const answers = Promise.all(requests.map((r) => r()));
      // wait until every request is blocked on the lock
      for (let i = 0; i < 200; i++) {
        const { rows } = await blocker.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
        );
        if (rows[0]!.n >= requests.length) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await blocker.query('commit');
      return await answers;
    } finally {
      await blocker.end();
    }
  }

  test('two refunds that together exceed the order, sent at once: exactly one succeeds, the other is 422 at body.amount', async () => {
    for (let round = 0; round < 3; round++) {
      const id = await paidOrder(1000);
      const answers = await race(id, [() => refund(id, 600, admin), () => refund(id, 600, member)]);
      expect(answers.map((a) => a.status).sort()).toEqual([201, 422]);
      expect(locs(answers.find((a) => a.status === 422)!)).toEqual([['body', 'amount']]);
      expect(await orderOf(id)).toMatchObject({ status: 'paid', refunded_amount: 600 });
      expect((await transactionsOf(id)).filter((t) => t.type === 'refund')).toEqual([{ type: 'refund', amount: -600 }]);
    }
  });

  test('two whole refunds at once: one refunds the order, the other finds it refunded', async () => {
    const id = await paidOrder(1000);
    const answers = await race(id, [() => refund(id, 1000), () => refund(id, 1000, member)]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 422]);
    expect(await orderOf(id)).toMatchObject({ status: 'refunded', refunded_amount: 1000 });
    expect((await transactionsOf(id)).filter((t) => t.type === 'refund')).toEqual([{ type: 'refund', amount: -1000 }]);
  });

  test('a refund and PATCH status refunded at once: never more than the order in total', async () => {
    const id = await paidOrder(1000);
    const answers = await race(id, [() => refund(id, 400), () => app.patch(`/v1/orders/${id}`, { status: 'refunded' }, as(member))]);
    const [post, patch] = answers;
    expect(patch!.status).toBe(200);
    expect([201, 422]).toContain(post!.status);
    expect(await orderOf(id)).toMatchObject({ status: 'refunded', refunded_amount: 1000 });
    const refunds = (await app.get(`/v1/refunds/?order_id=${id}`, as())).body.items as { amount: number }[];
    expect(refunds.reduce((sum, r) => sum + r.amount, 0)).toBe(1000);
    expect((await transactionsOf(id)).filter((t) => t.type === 'refund').reduce((sum, t) => sum + t.amount, 0)).toBe(-1000);
  });
});

describe('events', () => {
  const eventsOf = (resourceId: string) =>
    app.sql<{ type: string; data: Record<string, unknown>; actor: { kind: string; id: string } }>(
      'select type, data, actor from rowgate.events where resource_id = $1 order by created_at, id',
      [resourceId],
    );

  test('refund.created with the REST answer; the completing refund adds order.updated and order.refunded; transaction.created', async () => {
    const id = await paidOrder(1000);
    const partial = (await refund(id, 300)).body;
    const [created] = await eventsOf(partial.id);
    expect(created).toMatchObject({ type: 'refund.created', data: partial, actor: { kind: 'user', id: admin.id } });
    const orderEvents = async () => (await eventsOf(id)).map((e) => e.type);
    expect(await orderEvents()).toEqual(['order.created', 'order.paid', 'order.updated']);
    const rest = (await refund(id, 700)).body;
    expect((await eventsOf(rest.id)).map((e) => e.type)).toEqual(['refund.created']);
    expect(await orderEvents()).toEqual(['order.created', 'order.paid', 'order.updated', 'order.updated', 'order.refunded']);
    const events = await eventsOf(id);
    expect(events.at(-1)!.data).toEqual(await orderOf(id));
    // the refund transactions have their events, readable as the transactions list shows them
    const transactions = (await app.get(`/v1/transactions/?order_id=${id}&type=refund`, as())).body.items;
    expect(transactions).toHaveLength(2);
    for (const t of transactions) expect((await eventsOf(t.id)).map((e) => [e.type, e.data])).toEqual([['transaction.created', t]]);
    // the events list shows refund events to members with events_read
    const listed = await app.get(`/v1/events/?type=refund.created&resource_id=${partial.id}`, as(member));
    expect(listed.body.items.map((e: { type: string }) => e.type)).toEqual(['refund.created']);
  });

  test('a refused refund leaves no event and no row', async () => {
    const id = await paidOrder(1000);
    const before = (await app.sql('select count(*)::int as n from rowgate.events'))[0].n;
    expect((await refund(id, 1001)).status).toBe(422);
    expect((await refund(id, 10, finance)).status).toBe(403);
    expect((await app.sql('select count(*)::int as n from rowgate.events'))[0].n).toBe(before);
    expect((await app.sql('select count(*)::int as n from rowgate.refunds where order_id = $1', [id]))[0].n).toBe(0);
  });
});

describe('GraphQL: the same function, the same visibility', () => {
  const gql = async (query: string, variables: Record<string, unknown>, auth: { session?: string; token?: string }) =>
    (await app.request('POST', '/graphql', { ...auth, headers: { accept: 'application/json' }, body: { query, variables } })).body as {
      data?: any;
      errors?: { message: string; extensions?: { code?: string } }[];
    };
  const CREATE = `mutation ($order: UUID!, $amount: BigInt!, $reason: String!) {
    createRefund(input: { pOrderId: $order, pAmount: $amount, pReason: $reason }) { result { rowId orderId amount reason organizationId } }
  }`;

  test('createRefund is rowgate.create_refund: same arithmetic, same errors, same permission', async () => {
    const id = await paidOrder(1000);
    const made = await gql(CREATE, { order: id, amount: '400', reason: 'fraudulent' }, as(member));
    expect(made.errors).toBeUndefined();
    expect(made.data.createRefund.result).toMatchObject({ orderId: id, amount: '400', reason: 'fraudulent', organizationId: org });
    expect((await app.get(`/v1/refunds/${made.data.createRefund.result.rowId}`, as())).body).toMatchObject({ amount: 400 });
    const tooMuch = await gql(CREATE, { order: id, amount: '601', reason: 'other' }, as(member));
    expect(tooMuch.errors?.[0]?.message).toMatch(/exceeds/);
    const denied = await gql(CREATE, { order: id, amount: '1', reason: 'other' }, as(finance));
    expect(denied.errors?.[0]).toMatchObject({ message: "You don't have permission to write orders" });
    const outside = await gql(CREATE, { order: id, amount: '1', reason: 'other' }, as(outsider));
    expect(outside.errors?.[0]?.message).toMatch(/Order not found/);
    // the table itself takes no writes through GraphQL
    const schema = await gql('{ __schema { mutationType { fields { name } } } }', {}, as());
    const mutations = schema.data.__schema.mutationType.fields.map((f: { name: string }) => f.name);
    expect(mutations).toContain('createRefund');
    expect(mutations.filter((n: string) => /refund/i.test(n) && n !== 'createRefund')).toEqual([]);
    // updateOrder with status REFUNDED takes the refund path too
    const update = await gql(
      `mutation ($id: UUID!) { updateOrderByRowId(input: { rowId: $id, orderPatch: { status: "refunded" } }) { order { status refundedAmount } } }`,
      { id },
      as(member),
    );
    expect(update.data.updateOrderByRowId.order).toEqual({ status: 'refunded', refundedAmount: '1000' });
    expect((await app.get(`/v1/refunds/?order_id=${id}&sorting=amount`, as())).body.items.map((r: { amount: number }) => r.amount)).toEqual(
      [400, 600],
    );
  });

  test('createRefund names its amount, as POST /v1/refunds/ does: without it nothing is refunded (the rest is a status change)', async () => {
    const id = await paidOrder(1000);
    const withoutAmount = `mutation ($order: UUID!, $amount: BigInt) {
      createRefund(input: { pOrderId: $order, pAmount: $amount, pReason: "duplicate" }) { result { rowId amount } }
    }`;
    for (const variables of [{ order: id }, { order: id, amount: null }]) {
      const answer = await gql(withoutAmount, variables, as(member));
      expect(answer.errors?.[0]).toMatchObject({
        message: expect.stringMatching(/names its amount/),
        extensions: { code: 'RequestValidationError' },
      });
    }
    expect(await orderOf(id)).toMatchObject({ status: 'paid', refunded_amount: 0 });
    expect(await transactionsOf(id)).toEqual([{ type: 'payment', amount: 1000 }]);
  });

  test('allRefunds shows what GET /v1/refunds/ shows, for each subject', async () => {
    const id = await paidOrder(1000);
    await refund(id, 100);
    const theirs = await app.order(otherProduct, otherCustomer, 'paid');
    await app.patch(`/v1/orders/${theirs}`, { status: 'refunded' }, as(outsider));
    const credentials = [
      as(admin),
      as(finance),
      as(outsider),
      { token: await app.oat(org, ['refunds_read']) },
      { token: await app.oat(org, ['orders_read']) },
      { token: await app.pat(member.id, ['refunds_read']) },
    ];
    for (const auth of credentials) {
      const rest = await app.get('/v1/refunds/?limit=100', auth);
      const graph = await gql('{ allRefunds(first: 100) { totalCount nodes { rowId } } }', {}, auth);
      const restIds = rest.status === 200 ? rest.body.items.map((r: { id: string }) => r.id).sort() : [];
      expect(graph.data?.allRefunds?.nodes.map((n: { rowId: string }) => n.rowId).sort() ?? [], JSON.stringify(auth)).toEqual(restIds);
    }
  });
});
