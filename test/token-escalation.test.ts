// No escalation through credentials (SPEC §3, §21): an organization access token
// never holds a scope whose operations its maker could not perform itself with a
// web session; the token names its maker (created_by, a list filter); it belongs
// to the organization and keeps working when its maker leaves; membership.deleted
// lists what the member made. The OAuth2 side is in oauth2.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError, expectInsufficientScope, expectValidationError } from './expect-api.ts';
import { startTestApp, type ApiResponse, type RequestOptions, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
let keeper: TestUser; // a custom role holding access_tokens:manage only
let A: string;

const web = (u: TestUser): RequestOptions => ({ session: u.session });

async function ok<T = any>(res: Promise<{ status: number; body: any }>, status = 200): Promise<T> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

const mint = (who: TestUser, scopes: string[], extra: Record<string, unknown> = {}, organizationId = A) =>
  app.post('/v1/organization-access-tokens/', { organization_id: organizationId, comment: 'ci', scopes, ...extra }, web(who));

/** The one issue of a 422 refusing a scope: where it is and what it says. */
async function refusedScope(res: Promise<ApiResponse>, index: number, names: RegExp) {
  const issues = expectValidationError(await res);
  expect(issues).toHaveLength(1);
  expect(issues[0]!.loc).toEqual(['body', 'scopes', index]);
  expect(issues[0]!.msg).toMatch(names);
  return issues[0]!.msg;
}

/** Every organization scope a token may carry (SPEC §3). */
async function organizationScopes(): Promise<string[]> {
  const rows = await app.sql<{ name: string }>(
    `select name from rowgate_private.scopes
     where name not like 'customer_portal_%' and name not in ('user:read', 'user:write', 'payouts:read', 'payouts:write')
     order by name`,
  );
  return rows.map((r) => r.name);
}

beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user({ name: 'Ada' });
  keeper = await app.user({ name: 'Keeper' });
  A = (await app.organization(admin.id, { name: 'Acme' })).id;
  // the admin administers the account: the finance policies let it read and manage money
  await app.account(A, admin.id);
  await ok(app.post(`/v1/organizations/${A}/roles`, { name: 'tokens', permissions: ['access_tokens:manage'] }, web(admin)), 201);
  await app.membership(A, keeper.id, 'tokens');
});
afterAll(async () => app?.close());

describe('SPEC §21: a token never exceeds its maker', () => {
  test.each([
    ['organizations_write', /organization:manage/],
    ['products_write', /products:write/],
    ['customers_write', /customers:write/],
    ['orders_write', /orders:write/],
    ['refunds_write', /orders:write/],
    ['webhooks_write', /organization:manage/],
    ['webhooks_read', /organization:manage/],
    ['members_write', /members:manage/],
    ['transactions_read', /finance_read/],
    ['transactions_write', /finance_(read|write)/],
    ['payouts_read', /finance_read/],
    ['payouts_write', /finance_(read|write)/],
  ])('a role holding only access_tokens:manage cannot mint %s (422 at its place, naming what is missing)', async (scope, names) => {
    const msg = await refusedScope(mint(keeper, ['products_read', 'orders_read', scope]), 2, names);
    expect(msg).toContain(scope);
    // alone, at place 0
    await refusedScope(mint(keeper, [scope]), 0, names);
  });

  test('the first offending scope is the one named, at its place in the request', async () => {
    const msg = await refusedScope(
      mint(keeper, ['members_read', 'webhooks_write', 'products_read', 'organizations_write']),
      1,
      /webhooks_write/,
    );
    expect(msg).toMatch(/organization:manage/);
    expect(msg).toMatch(/You don't have permission to manage the organization|You don't have permission/);
  });

  test('it mints read tokens of what members read, and the token names its maker', async () => {
    const scopes = ['products_read', 'orders_read', 'members_read', 'customers_read', 'refunds_read', 'events_read', 'organizations_read'];
    const token = await ok(mint(keeper, scopes), 201);
    expect(token.created_by).toBe(keeper.id);
    expect(token.scopes).toEqual([...scopes].sort());
    expect((await app.get(`/v1/products/?organization_id=${A}`, { token: token.token })).status).toBe(200);
  });

  test('an admin who administers the account mints every organization scope', async () => {
    const scopes = await organizationScopes();
    expect(scopes).toEqual(expect.arrayContaining(['organizations_write', 'webhooks_write', 'members_write', 'transactions_write']));
    const token = await ok(mint(admin, scopes), 201);
    expect(token.created_by).toBe(admin.id);
    expect(token.scopes).toEqual(scopes);
  });

  test('decided from what GET /v1/organizations/{id}/permissions answers: a permission granted lets its scope be minted', async () => {
    const support = await app.user();
    await ok(
      app.post(`/v1/organizations/${A}/roles`, { name: 'support', permissions: ['access_tokens:manage', 'products:write'] }, web(admin)),
      201,
    );
    await app.membership(A, support.id, 'support');
    const permissions = await ok(app.get(`/v1/organizations/${A}/permissions`, web(support)));
    const answer = (operation: string) => permissions.operations.find((o: any) => o.operation === operation);
    expect(answer('products:create').allowed).toBe(true);
    expect(answer('organizations:update').allowed).toBe(false);
    await ok(mint(support, ['products_write']), 201);
    await refusedScope(mint(support, ['products_write', 'organizations_write']), 1, /organization:manage/);
    // with a PAT of the same user: decided as for its web session, not by the PAT's scopes
    const pat = await ok(
      app.post(
        '/v1/personal-access-tokens/',
        { comment: 'p', scopes: ['organization_access_tokens_write', 'products_write', 'customers_write'] },
        web(support),
      ),
      201,
    );
    await ok(
      app.post('/v1/organization-access-tokens/', { organization_id: A, comment: 'p', scopes: ['products_write'] }, { token: pat.token }),
      201,
    );
    await refusedScope(
      app.post('/v1/organization-access-tokens/', { organization_id: A, comment: 'p', scopes: ['customers_write'] }, { token: pat.token }),
      0,
      /customers:write/,
    );
  });

  test("the attack chain fails: a token manager cannot rename the organization, lift the lifetime cap or watch the members' addresses", async () => {
    // the steps of the chain, each refused where it starts
    await refusedScope(mint(keeper, ['organizations_write', 'products_write', 'webhooks_write']), 0, /organization:manage/);
    await refusedScope(mint(keeper, ['products_write']), 0, /products:write/);
    await refusedScope(mint(keeper, ['webhooks_write', 'events_read']), 0, /organization:manage/);
    // what it may mint reaches none of them
    const token = (await ok(mint(keeper, ['products_read', 'organizations_read', 'events_read']), 201)).token;
    expectInsufficientScope(await app.patch(`/v1/organizations/${A}`, { name: 'Owned' }, { token }), ['organizations_write']);
    expectInsufficientScope(await app.patch(`/v1/organizations/${A}`, { max_token_lifetime_days: null }, { token }), [
      'organizations_write',
    ]);
    expectInsufficientScope(
      await app.post('/v1/products/', { organization_id: A, name: 'P', price_amount: 1, price_currency: 'usd' }, { token }),
      ['products_write'],
    );
    expectInsufficientScope(
      await app.post('/v1/webhook-endpoints/', { url: 'https://hook.example.com/x', event_types: ['membership.created'] }, { token }),
      ['webhooks_write'],
    );
    // nor its own session
    expectError(await app.patch(`/v1/organizations/${A}`, { name: 'Owned' }, web(keeper)), 403, 'NotPermitted');
    // the lifetime cap set by a manager binds the token manager
    await ok(app.patch(`/v1/organizations/${A}`, { max_token_lifetime_days: 30 }, web(admin)));
    try {
      const issues = expectValidationError(await mint(keeper, ['products_read']));
      expect(issues[0]!.loc).toEqual(['body', 'expires_in']);
      await ok(mint(keeper, ['products_read'], { expires_in: 86400 }), 201);
    } finally {
      await ok(app.patch(`/v1/organizations/${A}`, { max_token_lifetime_days: null }, web(admin)));
    }
    const name = await app.sql<{ name: string }>('select name from rowgate.organizations where id = $1', [A]);
    expect(name[0]!.name).toBe('Acme');
  });

  test('tokens minted before the rule keep their scopes and keep working', async () => {
    // a token as an earlier release made it: no created_by, scopes its maker may lack
    const old = await app.oat(A, ['products_write', 'organizations_read']);
    const created = await app.post(
      '/v1/products/',
      { organization_id: A, name: 'Old', price_amount: 1, price_currency: 'usd' },
      { token: old },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const list = await ok(app.get(`/v1/organization-access-tokens/?organization_id=${A}&limit=100`, web(admin)));
    const row = list.items.find((t: any) => t.comment === 'test');
    expect(row).toMatchObject({ created_by: null, scopes: ['products_write', 'organizations_read'] });
  });
});

describe('created_by: read and filtered', () => {
  test('the list shows each token’s maker and filters on it (repeatable)', async () => {
    const other = await app.user();
    await app.membership(A, other.id, 'tokens');
    const mine = await ok(mint(keeper, ['products_read']), 201);
    const theirs = await ok(mint(other, ['orders_read']), 201);
    const byKeeper = await ok(app.get(`/v1/organization-access-tokens/?created_by=${keeper.id}&limit=100`, web(admin)));
    expect(byKeeper.items.length).toBeGreaterThan(0);
    expect(byKeeper.items.every((t: any) => t.created_by === keeper.id)).toBe(true);
    expect(byKeeper.items.map((t: any) => t.id)).toContain(mine.id);
    expect(byKeeper.items.map((t: any) => t.id)).not.toContain(theirs.id);
    const both = await ok(app.get(`/v1/organization-access-tokens/?created_by=${keeper.id}&created_by=${other.id}&limit=100`, web(admin)));
    expect(both.items.map((t: any) => t.id)).toEqual(expect.arrayContaining([mine.id, theirs.id]));
    expect(new Set(both.items.map((t: any) => t.created_by))).toEqual(new Set([keeper.id, other.id]));
    // the token manager reads the list as well, through the same policy
    const seen = await ok(app.get(`/v1/organization-access-tokens/?created_by=${other.id}`, web(keeper)));
    expect(seen.items.map((t: any) => t.id)).toEqual([theirs.id]);
    const issues = expectValidationError(await app.get('/v1/organization-access-tokens/?created_by=nope', web(admin)));
    expect(issues[0]!.loc.slice(0, 2)).toEqual(['query', 'created_by']);
  });

  test('the OpenAPI document describes the field and the filter', async () => {
    const doc = (await app.get('/v1/openapi.json')).body;
    const field = doc.components.schemas.OrganizationAccessToken.properties.created_by;
    expect(field.description).toMatch(/minted/);
    expect(field.example).toMatch(/^[0-9a-f-]{36}$/);
    expect(doc.components.schemas.OrganizationAccessToken.required).toContain('created_by');
    const parameters = doc.paths['/v1/organization-access-tokens/'].get.parameters.map((p: any) => p.name);
    expect(parameters).toContain('created_by');
  });
});

describe("a member's tokens when it leaves", () => {
  test('membership.deleted lists its live organization tokens, and its tokens keep working', async () => {
    const leaver = await app.user();
    await app.membership(A, leaver.id, 'tokens');
    const kept = await ok(mint(leaver, ['products_read']), 201);
    const kept2 = await ok(mint(leaver, ['orders_read'], { expires_in: 3600 }), 201);
    const revoked = await ok(mint(leaver, ['members_read']), 201);
    await ok(app.delete(`/v1/organization-access-tokens/${revoked.id}`, web(admin)), 204);
    const expired = await ok(mint(leaver, ['customers_read']), 201);
    await app.sql(`update rowgate.organization_access_tokens set expires_at = now() - interval '1 second' where id = $1`, [expired.id]);
    const adminsToken = await ok(mint(admin, ['products_read']), 201);

    await ok(app.delete(`/v1/organizations/${A}/members/${leaver.id}`, web(admin)), 204);
    const [event] = await app.sql<{ data: any }>(
      `select data from rowgate.events where organization_id = $1 and type = 'membership.deleted' and resource_id = $2`,
      [A, leaver.id],
    );
    const listed = event!.data.credentials.organization_access_tokens.map((t: { id: string }) => t.id);
    expect(listed.sort()).toEqual([kept.id, kept2.id].sort());
    expect(listed).not.toContain(adminsToken.id);
    expect(event!.data.credentials.oauth2_grants).toEqual([]);
    // the manager finds them with the filter, to revoke them if it wishes
    const found = await ok(app.get(`/v1/organization-access-tokens/?created_by=${leaver.id}`, web(admin)));
    expect(found.items.map((t: any) => t.id).sort()).toEqual([kept.id, kept2.id, expired.id].sort());

    // the token belongs to the organization: it keeps working
    const products = await app.get(`/v1/products/?organization_id=${A}`, { token: kept.token });
    expect(products.status, JSON.stringify(products.body)).toBe(200);
  });

  test('a token keeps working when its maker loses the permission that let it mint', async () => {
    const demoted = await app.user();
    await app.membership(A, demoted.id, 'tokens');
    const token = await ok(mint(demoted, ['products_read']), 201);
    await ok(app.patch(`/v1/organizations/${A}/members/${demoted.id}`, { role: 'member' }, web(admin)));
    expect((await app.get(`/v1/products/?organization_id=${A}`, { token: token.token })).status).toBe(200);
  });
});
