// SPEC §20: the operations the database holds are the route table's, and a check
// answers exactly what the real request (with a valid body) answers, for subjects,
// credentials, scopes and roles of every kind.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { operationRows } from '../src/http/operations.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { type ApiResponse, startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
let org: string;
let other: string;
let users: Record<'admin' | 'member' | 'finance' | 'outsider', { id: string; session: string }>;
let ids: Record<string, string>;

beforeAll(async () => {
  app = await startTestApp();
  const admin = await app.user();
  const member = await app.user();
  const finance = await app.user();
  const outsider = await app.user();
  users = { admin, member, finance, outsider };
  org = (await app.organization(admin.id)).id;
  other = (await app.organization(outsider.id)).id;
  await app.membership(org, member.id, 'member');
  await app.membership(org, finance.id, 'finance');
  const account = await app.account(org, admin.id);
  const product = await app.product(org);
  const customer = await app.customer(org);
  const order = await app.order(product, customer, 'paid');
  const [transaction] = await app.sql<{ id: string }>('select id from rowgate.transactions where order_id = $1', [order]);
  const [event] = await app.sql<{ id: string }>('select id from rowgate.events where organization_id = $1 limit 1', [org]);
  const otherProduct = await app.product(other);
  ids = { account, product, customer, order, transaction: transaction!.id, event: event!.id, otherProduct };
});
afterAll(() => app?.close());

/** The credentials a case may use. */
async function credentials(): Promise<Record<string, { token?: string; session?: string }>> {
  return {
    admin: { session: users.admin.session },
    member: { session: users.member.session },
    finance: { session: users.finance.session },
    outsider: { session: users.outsider.session },
    memberReadPat: { token: await app.pat(users.member.id, ['products_read', 'customers_read', 'orders_read']) },
    adminWritePat: { token: await app.pat(users.admin.id, ['products_write', 'organizations_write', 'transactions_read']) },
    oatWrite: {
      token: await app.oat(org, ['products_write', 'customers_write', 'transactions_read', 'organizations_write', 'members_write']),
    },
    oatRead: { token: await app.oat(org, ['products_read', 'events_read']) },
    customer: { token: await app.customerSession(ids.customer!) },
  };
}

/** Whether the credential of that name authenticates a User. */
const userCredential = (name: string) => !['oatWrite', 'oatRead', 'customer'].includes(name);

interface Case {
  operation: string;
  method: string;
  path: string;
  params?: Record<string, string>;
  organization_id?: string;
  body?: () => unknown;
}

const cases = (): Case[] => [
  { operation: 'products:get', method: 'GET', path: `/v1/products/${ids.product}`, params: { id: ids.product! } },
  { operation: 'products:get', method: 'GET', path: `/v1/products/${ids.otherProduct}`, params: { id: ids.otherProduct! } },
  { operation: 'products:get', method: 'GET', path: `/v1/products/${randomUUID()}`, params: { id: randomUUID() } },
  {
    operation: 'products:update',
    method: 'PATCH',
    path: `/v1/products/${ids.product}`,
    params: { id: ids.product! },
    body: () => ({ name: 'Renamed' }),
  },
  {
    operation: 'products:update',
    method: 'PATCH',
    path: `/v1/products/${ids.otherProduct}`,
    params: { id: ids.otherProduct! },
    body: () => ({ name: 'Renamed' }),
  },
  {
    operation: 'products:create',
    method: 'POST',
    path: '/v1/products/',
    organization_id: 'ORG',
    body: () => ({ organization_id: org, name: 'New', price_amount: 100, price_currency: 'usd' }),
  },
  {
    operation: 'products:create',
    method: 'POST',
    path: '/v1/products/',
    body: () => ({ name: 'New', price_amount: 100, price_currency: 'usd' }),
  },
  { operation: 'products:list', method: 'GET', path: '/v1/products/' },
  { operation: 'customers:get', method: 'GET', path: `/v1/customers/${ids.customer}`, params: { id: ids.customer! } },
  {
    operation: 'customers:update',
    method: 'PATCH',
    path: `/v1/customers/${ids.customer}`,
    params: { id: ids.customer! },
    body: () => ({ first_name: 'Ada' }),
  },
  { operation: 'orders:get', method: 'GET', path: `/v1/orders/${ids.order}`, params: { id: ids.order! } },
  { operation: 'transactions:get', method: 'GET', path: `/v1/transactions/${ids.transaction}`, params: { id: ids.transaction! } },
  { operation: 'events:get', method: 'GET', path: `/v1/events/${ids.event}`, params: { id: ids.event! } },
  { operation: 'organizations:get', method: 'GET', path: '/v1/organizations/ORG', params: { id: 'ORG' } },
  {
    operation: 'organizations:update',
    method: 'PATCH',
    path: '/v1/organizations/ORG',
    params: { id: 'ORG' },
    body: () => ({ name: 'Org' }),
  },
  { operation: 'members:list', method: 'GET', path: '/v1/organizations/ORG/members', params: { id: 'ORG' } },
  { operation: 'accounts:get', method: 'GET', path: `/v1/accounts/${ids.account}`, params: { id: ids.account! } },
  {
    operation: 'accounts:update',
    method: 'PATCH',
    path: `/v1/accounts/${ids.account}`,
    params: { id: ids.account! },
    body: () => ({ country: 'US' }),
  },
  { operation: 'organizations:get_account', method: 'GET', path: '/v1/organizations/ORG/account', params: { id: 'ORG' } },
  { operation: 'users:me', method: 'GET', path: '/v1/users/me' },
  { operation: 'customer_portal:me', method: 'GET', path: '/v1/customer-portal/customers/me' },
  { operation: 'organization_access_tokens:list', method: 'GET', path: '/v1/organization-access-tokens/' },
];

/**
 * What the check answers must equal: the real answer's status, error and reason; a
 * create whose organization_id is out of reach is a 404 to a check (SPEC §20), where
 * the request answers 422 at body.organization_id.
 */
const outcome = (r: ApiResponse) => {
  const outOfReach = r.status === 422 && r.body.detail?.some?.((d: { loc: string[] }) => d.loc.join('.') === 'body.organization_id');
  return outOfReach ? { status: 404, error: 'ResourceNotFound', reason: null } : answered(r);
};
const answered = (r: ApiResponse) => ({
  status: r.status,
  error: r.status < 300 ? null : r.body.error,
  reason: r.body?.error === 'NotPermitted' ? r.body.detail : null,
});

describe('operations', () => {
  test('the database holds the route table operations (run scripts/write-operations.ts into a migration when this fails)', async () => {
    const rows = await app.sql('select * from rowgate_hidden.operations order by operation collate "C"');
    expect(rows).toEqual(operationRows(allRoutes(null as never)));
  });

  test('GET /v1/authorization/operations lists them to any credential, and to no one without', async () => {
    const customer = await app.customerSession(ids.customer!);
    const r = await app.get('/v1/authorization/operations', { token: customer });
    expect(r.status).toBe(200);
    const update = r.body.items.find((o: { operation: string }) => o.operation === 'products:update');
    expect(update).toEqual({
      operation: 'products:update',
      method: 'PATCH',
      path: '/v1/products/{id}',
      scopes: ['products_write'],
      access_class: 'organization',
      policy: 'role_permission',
      permission: 'products:write',
    });
    expect(r.body.items.map((o: { operation: string }) => o.operation)).toContain('authorization:check');
    expect((await app.get('/v1/authorization/operations')).status).toBe(401);
  });
});

describe('POST /v1/authorization/check', () => {
  test('answers what the real request answers', async () => {
    const creds = await credentials();
    const fill = (text: string) => text.replaceAll('ORG', org);
    for (const [name, credential] of Object.entries(creds)) {
      for (const c of cases()) {
        const params = c.params && Object.fromEntries(Object.entries(c.params).map(([k, v]) => [k, fill(v)]));
        const item = { operation: c.operation, ...(params ? { params } : {}), ...(c.organization_id ? { organization_id: org } : {}) };
        // a create by a user names its organization; an organization token's is its own
        const check = await app.post('/v1/authorization/check', { checks: [item] }, credential);
        const path = fill(c.path);
        const real = await app.request(c.method, path, { ...credential, ...(c.body ? { body: c.body() } : {}) });
        // a User's create names its organization_id: the item itself is refused; an organization token's is its own
        if (c.operation.endsWith(':create') && !c.organization_id && userCredential(name)) {
          expect(check.status, `${name} ${c.operation}: ${JSON.stringify(check.body)}`).toBe(422);
          expect(check.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([['body', 'checks', 0, 'organization_id']]);
          continue;
        }
        expect(check.status, `${name} ${c.operation}: ${JSON.stringify(check.body)}`).toBe(200);
        const [result] = check.body.results;
        expect({ status: result.status, error: result.error, reason: result.reason }, `${name} ${c.method} ${path}`).toEqual(outcome(real));
        expect(result.allowed).toBe(result.status < 300);
        if (result.status === 404) expect(result).toMatchObject({ step: 'resource', reason: null, basis: { role: null } });
      }
    }
  });

  test("an organization without an account: the check answers the request's 404 or 403", async () => {
    const credentialsOfOther = {
      token: { token: await app.oat(other, ['transactions_read']) },
      owner: { session: users.outsider.session },
    };
    for (const [name, credential] of Object.entries(credentialsOfOther)) {
      const real = await app.request('GET', `/v1/organizations/${other}/account`, credential);
      expect(real.status, name).toBe(name === 'token' ? 404 : 403);
      const check = await app.post(
        '/v1/authorization/check',
        { checks: [{ operation: 'organizations:get_account', params: { id: other } }] },
        credential,
      );
      expect(check.status, name).toBe(200);
      const [result] = check.body.results;
      expect({ status: result.status, error: result.error, reason: result.reason }, name).toEqual(outcome(real));
    }
  });

  test('the answer names the step and its basis', async () => {
    const r = await app.post(
      '/v1/authorization/check',
      {
        checks: [
          { operation: 'products:update', params: { id: ids.product } },
          { operation: 'accounts:get', params: { id: ids.account } },
          { operation: 'payout_accounts:list' },
        ],
      },
      { token: await app.pat(users.member.id, ['products_write', 'transactions_read']) },
    );
    expect(r.status).toBe(200);
    expect(r.body.results[0]).toEqual({
      allowed: true,
      status: 200,
      error: null,
      step: null,
      reason: null,
      basis: {
        credential_kind: 'personal_access_token',
        scopes: ['products_write'],
        role: 'member',
        permission: 'products:write',
        policy: 'role_permission',
      },
    });
    expect(r.body.results[1]).toMatchObject({
      allowed: false,
      status: 403,
      error: 'NotPermitted',
      step: 'policy',
      reason: 'Only the account admin can access financial information',
      basis: { role: 'member', policy: 'finance_read' },
    });
    expect(r.body.results[2]).toMatchObject({ status: 401, error: 'Unauthorized', step: 'authentication' });
  });

  test('invalid items are 422 at their place; no credential is 401', async () => {
    const r = await app.post(
      '/v1/authorization/check',
      { checks: [{ operation: 'nothing:here' }, { operation: 'products:get', params: { id: 'x' } }] },
      { session: users.admin.session },
    );
    expect(r.status).toBe(422);
    expect(r.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([
      ['body', 'checks', 0, 'operation'],
      ['body', 'checks', 1, 'params', 'id'],
    ]);
    expect((await app.post('/v1/authorization/check', { checks: [] }, { session: users.admin.session })).status).toBe(422);
    expect((await app.post('/v1/authorization/check', { checks: [{ operation: 'users:me' }] })).status).toBe(401);
  });

  test("user_id: a member manager asks about a member, as that member's web session; nobody else learns anything", async () => {
    const checks = [
      { operation: 'products:update', params: { id: ids.product } },
      { operation: 'organizations:update', params: { id: org } },
      { operation: 'products:get', params: { id: ids.otherProduct } },
    ];
    const asked = await app.post('/v1/authorization/check', { checks, user_id: users.member.id }, { session: users.admin.session });
    expect(asked.status).toBe(200);
    expect(asked.body.results.map((r: { status: number }) => r.status)).toEqual([200, 403, 404]);
    expect(asked.body.results[1]).toMatchObject({
      reason: "You don't have permission to manage the organization",
      basis: { credential_kind: 'web_session', role: 'member' },
    });
    // the caller's own identity is back afterwards: the same transaction answers for it
    const mine = await app.post('/v1/authorization/check', { checks: [checks[1]] }, { session: users.admin.session });
    expect(mine.body.results[0]).toMatchObject({ status: 200, basis: { role: 'admin' } });
    // a member without members:manage, a token without members_read, a non-member target: 404s
    for (const [credential, userId] of [
      [{ session: users.member.session }, users.admin.id],
      [{ token: await app.pat(users.admin.id, ['products_write']) }, users.member.id],
      [{ session: users.admin.session }, users.outsider.id],
    ] as const) {
      const r = await app.post('/v1/authorization/check', { checks, user_id: userId }, credential);
      expect(r.body.results.map((x: { status: number; reason: unknown }) => [x.status, x.reason])).toEqual([
        [404, null],
        [404, null],
        [404, null],
      ]);
    }
    // every 404 alike, whether the caller may not ask (another organization's event) or the member does not
    // see what the caller does (a payment's event is for finance:read)
    const [hidden] = await app.sql<{ id: string }>(
      `select id from rowgate.events where organization_id = $1 and type = 'transaction.created'`,
      [org],
    );
    const [elsewhere] = await app.sql<{ id: string }>('select id from rowgate.events where organization_id = $1 limit 1', [other]);
    const events = await app.post(
      '/v1/authorization/check',
      {
        user_id: users.member.id,
        checks: [hidden, elsewhere].map((e) => ({ operation: 'events:get', params: { id: e!.id } })),
      },
      { session: users.admin.session },
    );
    expect(events.body.results[0]).toMatchObject({ status: 404, step: 'resource' });
    expect(events.body.results[0]).toEqual(events.body.results[1]);
  });

  test('user_id: the member is asked about where the caller found the resource, never in its other organizations', async () => {
    // the member is an admin of an organization the caller does not reach, and a finance member of the caller's;
    // both have a customer with the same external id
    const member = await app.user();
    const theirs = (await app.organization(member.id)).id;
    const mine = await app.organization(users.admin.id);
    await app.membership(mine.id, member.id, 'finance');
    for (const organization of [theirs, mine.id]) {
      const customer = await app.customer(organization);
      await app.sql(`update rowgate.customers set external_id = 'shared-external-id' where id = $1`, [customer]);
    }
    const asked = await app.post(
      '/v1/authorization/check',
      {
        user_id: member.id,
        checks: [
          { operation: 'customers:update_external', params: { external_id: 'shared-external-id' } },
          { operation: 'customers:update_external', params: { external_id: 'shared-external-id' }, organization_id: mine.id },
        ],
      },
      { session: users.admin.session },
    );
    expect(asked.status).toBe(200);
    for (const result of asked.body.results) {
      expect(result).toMatchObject({
        status: 403,
        reason: "You don't have permission to write customers",
        basis: { role: 'finance' },
      });
    }
  });
});

describe('the explanation matches the enforcement (SPEC §20)', () => {
  const check = (checks: unknown[], credential: { token?: string; session?: string }, userId?: string) =>
    app.post('/v1/authorization/check', { checks, ...(userId ? { user_id: userId } : {}) }, credential);

  test('user_id sent with an organization token, a customer or a member session: every item 404, never a 5xx', async () => {
    const checks = [
      { operation: 'products:get', params: { id: ids.product } },
      { operation: 'organizations:get', params: { id: org } },
      { operation: 'products:create', organization_id: org },
      { operation: 'users:me' },
    ];
    const credentialsOf = {
      oat: { token: await app.oat(org, ['products_write', 'members_write', 'organizations_read']) },
      oauth2Organization: { token: await app.oauthOrganizationToken(users.admin.id, org, ['members_read', 'products_read']) },
      customer: { token: await app.customerSession(ids.customer!) },
      member: { token: await app.memberSession(await app.customerMember(ids.customer!)) },
    };
    for (const [name, credential] of Object.entries(credentialsOf)) {
      const r = await check(checks, credential, users.member.id);
      expect(r.status, `${name}: ${JSON.stringify(r.body)}`).toBe(200);
      for (const result of r.body.results)
        expect(result, name).toMatchObject({ allowed: false, status: 404, error: 'ResourceNotFound', step: 'resource', reason: null });
    }
  });

  test("accepting or declining an invitation: what the request answers, 404 unless it is the caller's", async () => {
    const invitee = await app.user();
    const invite = async (organizationId = org) => {
      const r = await app.post(
        `/v1/organizations/${organizationId}/invitations`,
        { email: invitee.email, role: 'member' },
        { session: users.admin.session },
      );
      expect(r.status).toBe(201);
      return r.body.id as string;
    };
    const first = await invite();
    const second = await invite((await app.organization(users.admin.id)).id);
    for (const [operation, id, method, path] of [
      ['invitations:accept', first, 'POST', `/v1/invitations/${first}/accept`],
      ['invitations:decline', second, 'POST', `/v1/invitations/${second}/decline`],
    ] as const) {
      for (const someone of [users.admin, users.outsider, users.member]) {
        const predicted = await check([{ operation, params: { id } }], { session: someone.session });
        expect(predicted.status, JSON.stringify(predicted.body)).toBe(200);
        expect(predicted.body.results[0], `${operation} by another user`).toMatchObject({ status: 404, step: 'resource', reason: null });
        const real = await app.request(method, path, { session: someone.session });
        expect(real.status).toBe(404);
      }
      const unknown = await check([{ operation, params: { id: randomUUID() } }], { session: invitee.session });
      expect(unknown.body.results[0]).toMatchObject({ status: 404, step: 'resource' });
      const mine = await check([{ operation, params: { id } }], { session: invitee.session });
      const real = await app.request(method, path, { session: invitee.session });
      expect(mine.body.results[0]).toMatchObject({ allowed: true, status: real.status, step: null });
      // answered: no longer the caller's to answer
      const again = await check([{ operation, params: { id } }], { session: invitee.session });
      expect(again.body.results[0]).toMatchObject({ status: 404, step: 'resource' });
      expect((await app.request(method, path, { session: invitee.session })).status).toBe(404);
    }
    // asked about another user, an invitation is the caller's own operation: 404
    const third = await invite((await app.organization(users.admin.id)).id);
    const about = await check([{ operation: 'invitations:accept', params: { id: third } }], { session: users.admin.session }, invitee.id);
    expect(about.body.results[0]).toMatchObject({ status: 404, step: 'resource' });
  });

  test("the organization itself: a member's check (and a check about the member) answers its request's 200, with the role", async () => {
    const own = await check([{ operation: 'organizations:get', params: { id: org } }], { session: users.member.session });
    expect((await app.get(`/v1/organizations/${org}`, { session: users.member.session })).status).toBe(200);
    expect(own.body.results[0]).toMatchObject({ allowed: true, status: 200, basis: { role: 'member', credential_kind: 'web_session' } });
    const about = await check([{ operation: 'organizations:get', params: { id: org } }], { session: users.admin.session }, users.member.id);
    expect(about.body.results[0]).toMatchObject({ allowed: true, status: 200, basis: { role: 'member' } });
    const leave = await check([{ operation: 'members:leave', params: { id: org } }], { session: users.finance.session });
    expect(leave.body.results[0]).toMatchObject({ status: 204, basis: { role: 'finance' } });
  });

  test('a policy that requires a permission names it: members-management names members:manage', async () => {
    const operations = await app.get('/v1/authorization/operations', { session: users.member.session });
    const byName = Object.fromEntries(operations.body.items.map((o: { operation: string }) => [o.operation, o]));
    for (const name of ['members:add', 'members:update', 'members:remove', 'invitations:create', 'roles:create'])
      expect(byName[name], name).toMatchObject({ policy: 'members_management', permission: 'members:manage' });
    expect(byName['organization_access_tokens:create']).toMatchObject({
      policy: 'access_token_management',
      permission: 'access_tokens:manage',
    });
    const r = await check([{ operation: 'members:add', params: { id: org } }], { session: users.member.session });
    expect(r.body.results[0]).toMatchObject({
      status: 403,
      step: 'policy',
      reason: "You don't have permission to manage members",
      basis: { role: 'member', policy: 'members_management', permission: 'members:manage' },
    });
  });

  test('the operations are the /v1 operationIds of the published OpenAPI document, no more, no fewer', async () => {
    const document = (await app.get('/v1/openapi.json')).body as {
      paths: Record<string, Record<string, { operationId: string; tags: string[] }>>;
    };
    // the documents (this one and the versions) describe the API; they are not operations of it
    const documented = Object.entries(document.paths)
      .filter(([path]) => path.startsWith('/v1/'))
      .flatMap(([, methods]) => Object.values(methods).filter((o) => !o.tags.includes('documents')))
      .map((o) => o.operationId)
      .sort();
    const listed = (await app.get('/v1/authorization/operations', { session: users.member.session })).body.items
      .map((o: { operation: string }) => o.operation)
      .sort();
    expect(listed).toEqual(documented);
    const stored = await app.sql<{ operation: string }>('select operation from rowgate_hidden.operations');
    expect(stored.map((r) => r.operation).sort()).toEqual(documented);
  });
});

describe('GET /v1/organizations/{id}/permissions', () => {
  test("the caller's role, permissions and operations; a member's for a member manager", async () => {
    const mine = await app.get(`/v1/organizations/${org}/permissions`, { session: users.member.session });
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ organization_id: org, user_id: users.member.id, role: 'member' });
    expect(mine.body.permissions).toEqual(['customers:write', 'orders:write', 'products:write']);
    const ops = Object.fromEntries(mine.body.operations.map((o: { operation: string }) => [o.operation, o]));
    expect(ops['products:create']).toEqual({ operation: 'products:create', allowed: true, status: 201, reason: null });
    expect(ops['organizations:update']).toMatchObject({
      allowed: false,
      status: 403,
      reason: "You don't have permission to manage the organization",
    });

    const theirs = await app.get(`/v1/organizations/${org}/permissions?user_id=${users.finance.id}`, { session: users.admin.session });
    expect(theirs.body).toMatchObject({ user_id: users.finance.id, role: 'finance', permissions: ['finance:read'] });
    expect(
      (await app.get(`/v1/organizations/${org}/permissions?user_id=${users.admin.id}`, { session: users.member.session })).status,
    ).toBe(404);
    expect((await app.get(`/v1/organizations/${org}/permissions`, { session: users.outsider.session })).status).toBe(404);
    const token = await app.get(`/v1/organizations/${org}/permissions`, { token: await app.oat(org, ['organizations_read']) });
    expect(token.body).toMatchObject({ user_id: null, role: null });
  });
});
