// SPEC §20 in GraphQL: `checkAuthorization` and `organizationPermissions` answer
// exactly what POST /v1/authorization/check and GET /v1/organizations/{id}/permissions
// answer, for the same credentials, and a request without a credential is refused.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type RequestOptions, startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
let org: string;
let other: string;
let ids: Record<string, string>;
let users: Record<'admin' | 'member' | 'outsider', { id: string; session: string }>;
let creds: Record<string, Pick<RequestOptions, 'token' | 'session'>>;

beforeAll(async () => {
  app = await startTestApp();
  const admin = await app.user();
  const member = await app.user();
  const outsider = await app.user();
  users = { admin, member, outsider };
  org = (await app.organization(admin.id)).id;
  other = (await app.organization(outsider.id)).id;
  await app.membership(org, member.id, 'member');
  const product = await app.product(org);
  const customer = await app.customer(org);
  const otherProduct = await app.product(other);
  ids = { product, customer, otherProduct };
  creds = {
    admin: { session: admin.session },
    member: { session: member.session },
    outsider: { session: outsider.session },
    memberReadPat: { token: await app.pat(member.id, ['products_read', 'customers_read']) },
    adminPat: { token: await app.pat(admin.id, ['products_write', 'organizations_read', 'members_read']) },
    oat: { token: await app.oat(org, ['products_write', 'organizations_read']) },
    customer: { token: await app.customerSession(customer) },
  };
});
afterAll(() => app?.close());

const CHECK = `query ($checks: [AuthorizationCheckInput!]!, $userId: UUID) {
  checkAuthorization(checks: $checks, userId: $userId) {
    allowed status error step reason basis { credentialKind scopes role permission policy }
  }
}`;
const PERMISSIONS = `query ($org: UUID!, $userId: UUID) {
  organizationPermissions(organizationId: $org, userId: $userId) {
    organizationId userId role permissions operations { operation allowed status reason }
  }
}`;

async function gql(query: string, variables: Record<string, unknown>, auth: Pick<RequestOptions, 'token' | 'session'> = {}) {
  return (await app.request('POST', '/graphql', { ...auth, headers: { accept: 'application/json' }, body: { query, variables } })) as {
    status: number;
    body: { data?: any; errors?: { message: string; extensions?: Record<string, unknown> }[] };
  };
}

/** GraphQL's answer in REST's field names */
const asRest = (r: any) => ({
  allowed: r.allowed,
  status: r.status,
  error: r.error,
  step: r.step,
  reason: r.reason,
  basis: {
    credential_kind: r.basis.credentialKind,
    scopes: r.basis.scopes,
    role: r.basis.role,
    permission: r.basis.permission,
    policy: r.basis.policy,
  },
});

const checks = () => [
  { operation: 'products:get', params: { id: ids.product } },
  { operation: 'products:get', params: { id: ids.otherProduct } },
  { operation: 'products:get', params: { id: randomUUID() } },
  { operation: 'products:update', params: { id: ids.product } },
  { operation: 'products:create', organization_id: org },
  { operation: 'products:list', organization_id: org },
  { operation: 'customers:get', params: { id: ids.customer } },
  { operation: 'organizations:update', params: { id: org } },
  { operation: 'members:list', params: { id: org } },
];
const asGraphql = (c: { operation: string; params?: object; organization_id?: string }) => ({
  operation: c.operation,
  params: c.params ?? null,
  organizationId: c.organization_id ?? null,
});

describe('checkAuthorization', () => {
  test('answers what POST /v1/authorization/check answers, for every credential', async () => {
    for (const [name, auth] of Object.entries(creds)) {
      // a Customer or Organization subject's create and list name no organization
      const asked = checks().map((c) =>
        name === 'oat' || name === 'customer' ? { ...c, organization_id: c.organization_id ? undefined : c.organization_id } : c,
      );
      const rest = await app.request('POST', '/v1/authorization/check', { ...auth, body: { checks: asked } });
      const graphql = await gql(CHECK, { checks: asked.map(asGraphql) }, auth);
      if (rest.status !== 200) {
        // the same refusal of the items (a 422)
        expect(graphql.body.errors?.[0]?.extensions?.code, name).toBe(rest.body.error);
        continue;
      }
      expect(graphql.body.errors, `${name}: ${JSON.stringify(graphql.body.errors)}`).toBeUndefined();
      expect(graphql.body.data.checkAuthorization.map(asRest), name).toEqual(rest.body.results);
    }
  });

  test('user_id: as REST answers it, for a member manager and for others', async () => {
    for (const name of ['admin', 'adminPat', 'member', 'outsider']) {
      const auth = creds[name]!;
      const rest = await app.request('POST', '/v1/authorization/check', { ...auth, body: { checks: checks(), user_id: users.member.id } });
      expect(rest.status).toBe(200);
      const graphql = await gql(CHECK, { checks: checks().map(asGraphql), userId: users.member.id }, auth);
      expect(graphql.body.errors, JSON.stringify(graphql.body.errors)).toBeUndefined();
      expect(graphql.body.data.checkAuthorization.map(asRest), name).toEqual(rest.body.results);
    }
  });

  test('an unknown operation is refused as REST refuses it (422)', async () => {
    const asked = [{ operation: 'products:fly' }];
    const rest = await app.request('POST', '/v1/authorization/check', { ...creds.admin, body: { checks: asked } });
    expect(rest.status).toBe(422);
    const graphql = await gql(CHECK, { checks: asked.map(asGraphql) }, creds.admin);
    expect(graphql.body.data?.checkAuthorization ?? null).toBeNull();
    expect(graphql.body.errors?.[0]?.extensions?.code).toBe(rest.body.error);
  });

  test('without a credential: refused, no answer', async () => {
    const rest = await app.request('POST', '/v1/authorization/check', { body: { checks: checks() } });
    expect(rest.status).toBe(401);
    const graphql = await gql(CHECK, { checks: checks().map(asGraphql) });
    expect(graphql.body.data ?? null).toBeNull();
    expect(graphql.body.errors?.[0]?.extensions?.code).toBe('Unauthorized');
  });

  test('an unknown credential gets REST 401', async () => {
    const graphql = await gql(CHECK, { checks: checks().map(asGraphql) }, { token: 'rg_pat_unknown0000000000000000000000000000' });
    expect(graphql.status).toBe(401);
  });
});

describe('organizationPermissions', () => {
  test('answers what GET /v1/organizations/{id}/permissions answers', async () => {
    const asks: [string, string, string | undefined][] = [];
    for (const name of Object.keys(creds)) for (const o of [org, other]) asks.push([name, o, undefined]);
    for (const name of ['admin', 'adminPat', 'member']) asks.push([name, org, users.member.id]);
    for (const [name, o, userId] of asks) {
      const auth = creds[name]!;
      const rest = await app.request('GET', `/v1/organizations/${o}/permissions${userId ? `?user_id=${userId}` : ''}`, auth);
      const graphql = await gql(PERMISSIONS, { org: o, userId: userId ?? null }, auth);
      const label = `${name} ${o === org ? 'own' : 'other'} ${userId ?? ''}`;
      if (rest.status === 200) {
        expect(graphql.body.errors, `${label}: ${JSON.stringify(graphql.body.errors)}`).toBeUndefined();
        const a = graphql.body.data.organizationPermissions;
        expect(
          { organization_id: a.organizationId, user_id: a.userId, role: a.role, permissions: a.permissions, operations: a.operations },
          label,
        ).toEqual(rest.body);
      } else {
        expect(graphql.body.data ?? null, label).toBeNull();
        expect(graphql.body.errors?.[0]?.extensions, label).toMatchObject({ code: rest.body.error, status: rest.status });
        if (typeof rest.body.detail === 'string' && rest.status === 403)
          expect(graphql.body.errors?.[0]?.message, label).toBe(rest.body.detail);
      }
    }
  });

  test('without a credential: refused, no answer', async () => {
    const graphql = await gql(PERMISSIONS, { org });
    expect(graphql.body.data ?? null).toBeNull();
    expect(graphql.body.errors?.[0]?.extensions?.code).toBe('Unauthorized');
  });
});
