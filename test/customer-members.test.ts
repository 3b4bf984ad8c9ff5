// Member seats (SPEC §18) through their life cycle: what a create and an update
// accept, e-mail uniqueness per customer (not per organization), and how a seat
// ends: removing it or its customer ends its member sessions at once.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { expectValidationError } from './expect-api.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
let org: string;
beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  org = (await app.organization(admin.id)).id;
});
afterAll(async () => app?.close());

const as = () => ({ session: admin.session });
const locs = (res: Awaited<ReturnType<TestApp['get']>>) => expectValidationError(res).map((i) => i.loc);

test('a seat: created with defaults, changed field by field, null clears its name', async () => {
  const customer = await app.customer(org);
  const created = await app.post(`/v1/customers/${customer}/members`, { email: 'Ada@Example.com', name: 'Ada' }, as());
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    organization_id: org,
    customer_id: customer,
    email: 'ada@example.com',
    name: 'Ada',
    role: 'member',
  });
  const path = `/v1/customers/${customer}/members/${created.body.id}`;
  const renamed = await app.patch(path, { role: 'owner' }, as());
  expect(renamed.body).toMatchObject({ email: 'ada@example.com', name: 'Ada', role: 'owner' });
  const cleared = await app.patch(path, { name: null }, as());
  expect(cleared.body).toMatchObject({ name: null, role: 'owner' });
  expect((await app.get(path, as())).body).toEqual(cleared.body);
});

test('bad bodies are 422 at their field; an e-mail is unique per customer, not per organization', async () => {
  const [customer, neighbour] = [await app.customer(org), await app.customer(org)];
  const path = `/v1/customers/${customer}/members`;
  expect(locs(await app.post(path, { email: 'x@example.com', role: 'admin' }, as()))).toEqual([['body', 'role']]);
  expect(locs(await app.post(path, { email: 'not-an-address' }, as()))).toEqual([['body', 'email']]);
  expect(locs(await app.post(path, { email: 'x@example.com', organization_id: org }, as()))).toEqual([['body', 'organization_id']]);
  expect((await app.post(path, { email: 'same@example.com' }, as())).status).toBe(201);
  expect(locs(await app.post(path, { email: 'SAME@example.com' }, as()))).toEqual([['body', 'email']]);
  expect((await app.post(`/v1/customers/${neighbour}/members`, { email: 'same@example.com' }, as())).status).toBe(201);
  // a removed seat's e-mail is free again
  const taken = await app.get(`${path}?email=same@example.com`, as());
  expect((await app.delete(`${path}/${taken.body.items[0].id}`, as())).status).toBe(204);
  expect((await app.post(path, { email: 'same@example.com' }, as())).status).toBe(201);
});

test('removing a seat ends its member sessions at once; removing a customer removes its seats', async () => {
  const customer = await app.customer(org);
  const [kept, removed] = [await app.customerMember(customer), await app.customerMember(customer)];
  const [keptToken, removedToken] = [await app.memberSession(kept), await app.memberSession(removed)];
  const me = (token: string) => app.get('/v1/customer-portal/customers/me', { token });
  expect((await me(removedToken)).status).toBe(200);
  expect((await app.delete(`/v1/customers/${customer}/members/${removed}`, as())).status).toBe(204);
  expect((await me(removedToken)).status).toBe(401);
  expect((await me(keptToken)).status).toBe(200);
  const [session] = await app.sql('select revoked_at is not null as revoked from rowgate_private.sessions where member_id = $1', [removed]);
  expect(session).toEqual({ revoked: true });
  expect((await app.get(`/v1/customers/${customer}/members/${removed}`, as())).status).toBe(404);
  expect((await app.delete(`/v1/customers/${customer}/members/${removed}`, as())).status).toBe(404);

  expect((await app.delete(`/v1/customers/${customer}`, as())).status).toBe(204);
  expect((await me(keptToken)).status).toBe(401);
  const listed = await app.get(`/v1/members/?customer_id=${customer}`, as());
  expect(listed.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
  const [seat] = await app.sql('select deleted_at is not null as deleted from rowgate.customer_members where id = $1', [kept]);
  expect(seat).toEqual({ deleted: true });
});

test('the total of an unfiltered GET /v1/members/ follows creates and removals (the per-organization counts)', async () => {
  const user = await app.user();
  const own = (await app.organization(user.id)).id;
  const customer = await app.customer(own);
  const total = async () => (await app.get('/v1/members/', { session: user.session })).body.pagination.total_count;
  expect(await total()).toBe(0);
  const a = await app.post(`/v1/customers/${customer}/members`, { email: 'a@example.com' }, { session: user.session });
  await app.post(`/v1/customers/${customer}/members`, { email: 'b@example.com' }, { session: user.session });
  expect(await total()).toBe(2);
  await app.delete(`/v1/customers/${customer}/members/${a.body.id}`, { session: user.session });
  expect(await total()).toBe(1);
  await app.delete(`/v1/customers/${customer}`, { session: user.session });
  expect(await total()).toBe(0);
});
