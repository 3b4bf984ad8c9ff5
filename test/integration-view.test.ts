// An integration's own view (SPEC §25): personal access tokens kept to named
// organizations (through REST, GraphQL and the authorization check), a user's
// sessions and authorized apps, an organization's OAuth2 grants, webhook secret
// rotation and the request log. Over HTTP, against a real database.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError, expectValidationError } from './expect-api.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

/** A user with two organizations of its own (A and B, a product each) and a third it does not belong to */
async function userWithTwoOrganizations() {
  const user = await app.user();
  const a = await app.organization(user.id);
  const b = await app.organization(user.id);
  const stranger = await app.user();
  const c = await app.organization(stranger.id);
  const productA = await app.product(a.id);
  const productB = await app.product(b.id);
  return { user, a, b, c, productA, productB };
}

async function keptPat(session: string, organizationIds: string[] | null, extra: Record<string, unknown> = {}) {
  return app.post(
    '/v1/personal-access-tokens/',
    { comment: 'kept', scopes: ['products_read', 'organizations_write', 'user:write'], organization_ids: organizationIds, ...extra },
    { session },
  );
}

describe('personal access tokens kept to some organizations', () => {
  test('reach only their organizations through REST, GraphQL and the check', async () => {
    const { user, a, b, productA, productB } = await userWithTwoOrganizations();
    const created = await keptPat(user.session, [a.id]);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.organization_ids).toEqual([a.id]);
    const token = created.body.token as string;

    const list = await app.get('/v1/products/', { token });
    expect(list.status).toBe(200);
    expect(list.body.items.map((p: { id: string }) => p.id)).toEqual([productA]);
    expect((await app.get(`/v1/products/${productA}`, { token })).status).toBe(200);
    expectError(await app.get(`/v1/products/${productB}`, { token }), 404, 'ResourceNotFound');
    expectError(await app.get(`/v1/organizations/${b.id}`, { token }), 404, 'ResourceNotFound');
    const orgs = await app.get('/v1/organizations/', { token });
    expect(orgs.body.items.map((o: { id: string }) => o.id)).toEqual([a.id]);

    const graphql = await app.post('/graphql', { query: '{ allProducts { nodes { rowId } } }' }, { token });
    expect(graphql.body.data.allProducts.nodes.map((n: { rowId: string }) => n.rowId)).toEqual([productA]);

    const check = await app.post(
      '/v1/authorization/check',
      {
        checks: [
          { operation: 'products:get', params: { id: productA } },
          { operation: 'products:get', params: { id: productB } },
        ],
      },
      { token },
    );
    expect(check.status, JSON.stringify(check.body)).toBe(200);
    expect(check.body.results.map((r: { status: number }) => r.status)).toEqual([200, 404]);

    // the same user's unrestricted token reaches both
    const all = await keptPat(user.session, null);
    expect(all.body.organization_ids).toBeNull();
    expect((await app.get(`/v1/products/${productB}`, { token: all.body.token })).status).toBe(200);

    // listed with its organizations
    const listed = await app.get('/v1/personal-access-tokens/', { session: user.session });
    const row = listed.body.items.find((t: { id: string }) => t.id === created.body.id);
    expect(row.organization_ids).toEqual([a.id]);
  });

  test('each id must be an organization the user reaches: one 422 for unknown and unreachable', async () => {
    const { user, a, c } = await userWithTwoOrganizations();
    for (const wrong of [c.id, randomUUID()]) {
      const issues = expectValidationError(await keptPat(user.session, [a.id, wrong]));
      expect(issues.map((i) => i.loc)).toEqual([['body', 'organization_ids', 1]]);
    }
    const unknown = expectValidationError(await keptPat(user.session, [randomUUID()]));
    const stranger = expectValidationError(await keptPat(user.session, [c.id]));
    expect(stranger.map((i) => i.msg)).toEqual(unknown.map((i) => i.msg));
    expect(expectValidationError(await keptPat(user.session, [])).map((i) => i.loc)).toEqual([['body', 'organization_ids']]);
  });

  test('cannot create organizations or delete its user', async () => {
    const { user, a } = await userWithTwoOrganizations();
    const token = (await keptPat(user.session, [a.id])).body.token as string;
    const made = await app.post('/v1/organizations/', { name: 'x', slug: `x-${randomUUID().slice(0, 8)}` }, { token });
    expectError(made, 403, 'NotPermitted');
    expect(made.body.detail).toMatch(/kept to some organizations/);
    const deleted = await app.delete('/v1/users/me', { token });
    expectError(deleted, 403, 'NotPermitted');
    expect(deleted.body.detail).toMatch(/kept to some organizations/);
    expect((await app.get('/v1/users/me', { session: user.session })).status).toBe(200);
  });

  test('lives no longer than the shortest max_token_lifetime_days of its organizations', async () => {
    const { user, a, b } = await userWithTwoOrganizations();
    await app.sql('update rowgate.organizations set max_token_lifetime_days = 2 where id = $1', [b.id]);
    const issues = expectValidationError(await keptPat(user.session, [a.id, b.id]));
    expect(issues.map((i) => i.loc)).toEqual([['body', 'expires_in']]);
    const tooLong = expectValidationError(await keptPat(user.session, [a.id, b.id], { expires_in: 3 * 86400 }));
    expect(tooLong.map((i) => i.loc)).toEqual([['body', 'expires_in']]);
    expect((await keptPat(user.session, [a.id, b.id], { expires_in: 86400 })).status).toBe(201);
    expect((await keptPat(user.session, [a.id])).status).toBe(201);
  });
});
