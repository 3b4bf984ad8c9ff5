// The check property (SPEC §20): for generated subjects, credentials,
// scopes, roles and operations, `POST /v1/authorization/check` answers exactly the
// status, error and reason that the real request (with a valid body) answers, and
// never a reason where the real request answers 404.
//
// One world (two organizations with every kind of row, users of every built-in role
// and a custom one); each case draws a credential (a web session of a user of any
// role or none, a personal access token with random scopes, an organization token
// with random scopes, a customer session) and 1 to 3 operations with their
// parameters (the caller's organization's rows, the other organization's, missing
// ids), asks the check once for all of them, then makes each real request.
// Writes never disturb later cases: deletes act on rows made for the case, updates
// write the same values again, creates add fresh rows.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { expect } from 'vitest';
import { operationRows } from '../../src/http/operations.ts';
import { allRoutes } from '../../src/server/route-table.ts';
import type { ApiResponse, TestApp } from '../harness.ts';

type Side = 'own' | 'other' | 'missing';
type OrgChoice = Side | 'none';

interface OrgRows {
  id: string;
  admin: { id: string; session: string };
  account: string;
  product: string;
  customer: string;
  externalId: string;
  customerMember: string;
  order: string;
  transaction: string;
  event: string;
  webhook: string;
  payout: string;
}

interface World {
  own: OrgRows;
  other: OrgRows;
  users: Record<string, { id: string; session: string }>;
  customerSession: string;
}

/** Who asks. */
type Subject =
  | { kind: 'web'; user: string }
  | { kind: 'pat'; user: string; scopes: string[] }
  | { kind: 'oat'; org: 'own' | 'other'; scopes: string[] }
  | { kind: 'customer' };

interface Item {
  operation: string;
  side: Side;
  org: OrgChoice;
}

export interface Counters {
  cases: number;
  comparisons: number;
  /** items the check refused with its 422 at `organization_id` (a user's create without one), as asserted */
  refused: number;
  byStatus: Record<string, number>;
}

const rows = operationRows(allRoutes(null as never));
// every scope a route asks for, but the customer portal's (a customer session's own, never a token's)
const SCOPES = [...new Set(rows.flatMap((r) => r.scopes))].filter((s) => !s.startsWith('customer_portal_')).sort();
const USERS = ['admin', 'member', 'finance', 'people', 'outsider'] as const;

/** What a path parameter names, resolved against a world for a side. */
type Param =
  | 'org'
  | 'account'
  | 'product'
  | 'customer'
  | 'external'
  | 'customerMember'
  | 'order'
  | 'transaction'
  | 'event'
  | 'webhook'
  | 'payout'
  | 'missing'
  // made for the case (deletes)
  | 'freshProduct'
  | 'freshCustomer'
  | 'freshExternal'
  | 'freshCustomerMember'
  | 'freshWebhook'
  | 'freshPayout'
  | 'freshOat'
  | 'freshRole'
  | 'freshMember';

interface OperationSpec {
  params?: Record<string, Param>;
  /** a list (organization_id in the query) or a create (in the body) */
  org?: 'list' | 'create';
  body?: (orgId: string | undefined) => unknown;
}

/**
 * The operations the property draws. Left out: operations that need a body or state
 * a check does not model (oauth2:*, login_code:*, credentials:revoke, auth:logout,
 * invitations:accept/decline/create/revoke, members:add/update, roles:create/update,
 * impersonations:create, customer_sessions:create, orders:*, refunds:create,
 * customer_members:create/update, webhook_endpoints:update/redeliver, the
 * customer portal's and the user's own writes, personal_access_tokens:create/delete,
 * organization_access_tokens:create, accounts:create, payout_accounts:create,
 * organizations:create), and the deletes that would change the world for later cases
 * (organizations:delete, members:leave, users:delete_me, oauth2_clients:delete).
 */
const SPECS: Record<string, OperationSpec> = {
  // reads
  'accounts:get': { params: { id: 'account' } },
  'authorization:operations': {},
  'customer_members:get': { params: { id: 'customer', member_id: 'customerMember' } },
  'customer_members:list': { params: { id: 'customer' } },
  'customer_members:list_all': { org: 'list' },
  'customer_portal:get_order': { params: { id: 'order' } },
  'customer_portal:list_orders': {},
  'customer_portal:me': {},
  'customers:get': { params: { id: 'customer' } },
  'customers:get_external': { params: { external_id: 'external' } },
  'customers:list': { org: 'list' },
  'denials:list': { params: { id: 'org' } },
  'events:get': { params: { id: 'event' } },
  'events:list': { org: 'list' },
  'invitations:list': { params: { id: 'org' } },
  'invitations:mine': {},
  'members:list': { params: { id: 'org' } },
  'oauth2:userinfo': {},
  'oauth2_clients:get': { params: { id: 'missing' } },
  'oauth2_clients:list': {},
  'orders:get': { params: { id: 'order' } },
  'orders:list': { org: 'list' },
  'organization_access_tokens:list': { org: 'list' },
  'organizations:get': { params: { id: 'org' } },
  'organizations:get_account': { params: { id: 'org' } },
  'organizations:list': {},
  'organizations:permissions': { params: { id: 'org' } },
  'payout_accounts:get': { params: { id: 'payout' } },
  'payout_accounts:list': { org: 'list' },
  'personal_access_tokens:list': {},
  'personal_access_tokens:get': { params: { id: 'missing' } },
  'products:get': { params: { id: 'product' } },
  'products:list': { org: 'list' },
  'refunds:get': { params: { id: 'missing' } },
  'refunds:list': { org: 'list' },
  'roles:list': { params: { id: 'org' } },
  'transactions:get': { params: { id: 'transaction' } },
  'transactions:list': { org: 'list' },
  'users:me': {},
  'webhook_deliveries:list': { params: { id: 'webhook' } },
  'webhook_endpoints:get': { params: { id: 'webhook' } },
  'webhook_endpoints:list': { org: 'list' },
  // deletes, of rows made for the case
  'products:delete': { params: { id: 'freshProduct' } },
  'customers:delete': { params: { id: 'freshCustomer' } },
  'customers:delete_external': { params: { external_id: 'freshExternal' } },
  'customer_members:delete': { params: { id: 'customer', member_id: 'freshCustomerMember' } },
  'webhook_endpoints:delete': { params: { id: 'freshWebhook' } },
  'payout_accounts:delete': { params: { id: 'freshPayout' } },
  'organization_access_tokens:delete': { params: { id: 'freshOat' } },
  'roles:delete': { params: { id: 'org', name: 'freshRole' } },
  'members:remove': { params: { id: 'org', user_id: 'freshMember' } },
  // writes that leave the world as it was (the same values again) or add fresh rows
  'products:update': { params: { id: 'product' }, body: () => ({ name: 'Renamed' }) },
  'customers:update': { params: { id: 'customer' }, body: () => ({ first_name: 'Ada' }) },
  'organizations:update': { params: { id: 'org' }, body: () => ({ name: 'Org' }) },
  'accounts:update': { params: { id: 'account' }, body: () => ({ country: 'US' }) },
  'products:create': {
    org: 'create',
    body: (o) => ({ ...(o ? { organization_id: o } : {}), name: 'New', price_amount: 100, price_currency: 'usd' }),
  },
  'customers:create': {
    org: 'create',
    body: (o) => ({ ...(o ? { organization_id: o } : {}), email: `c-${randomUUID()}@example.com` }),
  },
};

export const OPERATIONS = Object.keys(SPECS).sort();
export const LEFT_OUT = rows.map((r) => r.operation).filter((o) => !SPECS[o]);

const byOperation = new Map(rows.map((r) => [r.operation, r]));

async function ok(r: Promise<ApiResponse>, status = 201): Promise<any> {
  const x = await r;
  if (x.status !== status) throw new Error(`fixture: ${x.status} ${JSON.stringify(x.body)}`);
  return x.body;
}

async function orgRows(app: TestApp, admin: { id: string; session: string }): Promise<OrgRows> {
  const id = (await app.organization(admin.id)).id;
  const account = await app.account(id, admin.id);
  const product = await app.product(id);
  const customer = await app.customer(id);
  const externalId = `ext-${randomUUID()}`;
  await app.sql('update rowgate.customers set external_id = $1 where id = $2', [externalId, customer]);
  const customerMember = await app.customerMember(customer);
  const order = await app.order(product, customer, 'paid');
  const [transaction] = await app.sql<{ id: string }>('select id from rowgate.transactions where order_id = $1', [order]);
  const [event] = await app.sql<{ id: string }>('select id from rowgate.events where organization_id = $1 limit 1', [id]);
  const web = { session: admin.session };
  await ok(app.post(`/v1/organizations/${id}/roles`, { name: 'people', permissions: ['members:manage', 'products:write'] }, web));
  const webhook = (await ok(app.post('/v1/webhook-endpoints/', webhookBody(id), web))).id;
  const payout = (await ok(app.post('/v1/payout-accounts/', payoutBody(id), web))).id;
  return {
    id,
    admin,
    account,
    product,
    customer,
    externalId,
    customerMember,
    order,
    transaction: transaction!.id,
    event: event!.id,
    webhook,
    payout,
  };
}

const webhookBody = (organization_id: string) => ({
  organization_id,
  url: `https://hooks.example.com/${randomUUID()}`,
  event_types: ['order.paid'],
});
const payoutBody = (organization_id: string) => ({ organization_id, type: 'stripe', country: 'US', currency: 'usd' });

export async function buildCheckWorld(app: TestApp): Promise<World> {
  const [admin, member, finance, people, outsider] = await Promise.all(USERS.map(() => app.user()));
  const own = await orgRows(app, admin!);
  const other = await orgRows(app, outsider!);
  await app.membership(own.id, member!.id, 'member');
  await app.membership(own.id, finance!.id, 'finance');
  await app.membership(own.id, people!.id, 'people');
  const customerSession = await app.customerSession(own.customer);
  return {
    own,
    other,
    users: { admin: admin!, member: member!, finance: finance!, people: people!, outsider: outsider! },
    customerSession,
  };
}

const scopes = fc.subarray(SCOPES, { minLength: 1, maxLength: 8 });
const subjectArb: fc.Arbitrary<Subject> = fc.oneof(
  fc.record({ kind: fc.constant('web' as const), user: fc.constantFrom(...USERS) }),
  fc.record({ kind: fc.constant('pat' as const), user: fc.constantFrom(...USERS), scopes }),
  fc.record({ kind: fc.constant('oat' as const), org: fc.constantFrom('own' as const, 'own' as const, 'other' as const), scopes }),
  fc.constant({ kind: 'customer' as const }),
);
const itemArb: fc.Arbitrary<Item> = fc.record({
  operation: fc.constantFrom(...OPERATIONS),
  side: fc.constantFrom<Side>('own', 'own', 'other', 'missing'),
  org: fc.constantFrom<OrgChoice>('own', 'own', 'other', 'missing', 'none'),
});
export const caseArb = fc.record({ subject: subjectArb, items: fc.array(itemArb, { minLength: 1, maxLength: 3 }) });

/** The credential a subject uses, made for the case where it is a token. */
async function credential(app: TestApp, w: World, s: Subject): Promise<{ token?: string; session?: string }> {
  switch (s.kind) {
    case 'web':
      return { session: w.users[s.user]!.session };
    case 'pat':
      return { token: await app.pat(w.users[s.user]!.id, s.scopes) };
    case 'oat':
      return { token: await app.oat(w[s.org].id, s.scopes) };
    case 'customer':
      return { token: w.customerSession };
  }
}

/** A path parameter's value; fresh rows are made in the side's organization. */
async function resolve(app: TestApp, w: World, p: Param, side: Side): Promise<string> {
  if (p === 'missing' || side === 'missing') {
    if (p === 'external' || p === 'freshExternal') return `ext-${randomUUID()}`;
    if (p === 'freshRole') return `r${randomUUID().slice(0, 8)}`;
    return randomUUID();
  }
  const o = w[side];
  switch (p) {
    case 'org':
      return o.id;
    case 'external':
      return o.externalId;
    case 'freshProduct':
      return app.product(o.id);
    case 'freshCustomer':
      return app.customer(o.id);
    case 'freshExternal': {
      const id = await app.customer(o.id);
      const external = `ext-${randomUUID()}`;
      await app.sql('update rowgate.customers set external_id = $1 where id = $2', [external, id]);
      return external;
    }
    case 'freshCustomerMember':
      return app.customerMember(o.customer);
    case 'freshWebhook':
      return (await ok(app.post('/v1/webhook-endpoints/', webhookBody(o.id), { session: o.admin.session }))).id;
    case 'freshPayout':
      return (await ok(app.post('/v1/payout-accounts/', payoutBody(o.id), { session: o.admin.session }))).id;
    case 'freshOat': {
      const token = await app.oat(o.id, []);
      const [row] = await app.sql<{ id: string }>(
        'select organization_access_token_id as id from rowgate_private.access_token_hashes where token_hash = $1',
        [app.hash(token)],
      );
      return row!.id;
    }
    case 'freshRole': {
      const name = `r${randomUUID().slice(0, 8)}`;
      await ok(app.post(`/v1/organizations/${o.id}/roles`, { name, permissions: ['products:write'] }, { session: o.admin.session }));
      return name;
    }
    case 'freshMember': {
      const u = await app.user();
      await app.membership(o.id, u.id, 'member');
      return u.id;
    }
    default:
      return o[p];
  }
}

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

/** Whether the subject reaches an organization: a member's user, or the organization's own token. */
function reaches(w: World, s: Subject, orgId: string): boolean {
  if (s.kind === 'oat') return w[s.org].id === orgId;
  if (s.kind === 'customer') return false;
  if (orgId === w.own.id) return s.user !== 'outsider';
  return orgId === w.other.id && s.user === 'outsider';
}

export async function runCheck(
  app: TestApp,
  options: { numRuns: number; seed: number; progress?: (c: Counters) => void },
): Promise<Counters> {
  const w = await buildCheckWorld(app);
  const counters: Counters = { cases: 0, comparisons: 0, refused: 0, byStatus: {} };
  const property = fc.asyncProperty(caseArb, async ({ subject, items }) => {
    // organization tokens are capped at 100 an organization: keep the newest few
    await app.sql(
      `delete from rowgate.organization_access_tokens t where t.organization_id = any($1) and t.id not in
         (select id from rowgate.organization_access_tokens u where u.organization_id = t.organization_id order by created_at desc limit 20)`,
      [[w.own.id, w.other.id]],
    );
    // organization roles at 100 an organization: only the world's own stay between cases
    await app.sql(`delete from rowgate.organization_roles where organization_id = any($1) and name <> 'people'`, [[w.own.id, w.other.id]]);
    // personal tokens at 100 a user: keep each user's newest few
    await app.sql(
      `delete from rowgate.personal_access_tokens t where t.user_id = any($1) and t.id not in
         (select id from rowgate.personal_access_tokens u where u.user_id = t.user_id order by created_at desc limit 20)`,
      [Object.values(w.users).map((u) => u.id)],
    );
    // so are webhook endpoints (16) and payout accounts: only the world's own stay between cases
    await app.sql('delete from rowgate_private.webhook_secrets where organization_id = any($1) and endpoint_id <> all($2)', [
      [w.own.id, w.other.id],
      [w.own.webhook, w.other.webhook],
    ]);
    await app.sql('delete from rowgate.webhook_endpoints where organization_id = any($1) and id <> all($2)', [
      [w.own.id, w.other.id],
      [w.own.webhook, w.other.webhook],
    ]);
    await app.sql('delete from rowgate.payout_accounts where organization_id = any($1) and id <> all($2)', [
      [w.own.id, w.other.id],
      [w.own.payout, w.other.payout],
    ]);
    const cred = await credential(app, w, subject);
    let prepared: {
      item: Record<string, unknown>;
      method: string;
      path: string;
      body?: unknown;
      listOrg?: string;
      label: string;
      /** a user's create without organization_id: the check refuses the item (422 at its organization_id) */
      refused?: true;
    }[] = [];
    for (const it of items) {
      const spec = SPECS[it.operation]!;
      const row = byOperation.get(it.operation)!;
      const params: Record<string, string> = {};
      for (const [name, kind] of Object.entries(spec.params ?? {})) params[name] = await resolve(app, w, kind, it.side);
      const orgId = spec.org && it.org !== 'none' ? (it.org === 'missing' ? randomUUID() : w[it.org].id) : undefined;
      let path = row.path.replace(/\{(\w+)\}/g, (_, n: string) => encodeURIComponent(params[n]!));
      if (spec.org === 'list' && orgId) path += `?organization_id=${orgId}`;
      const item = {
        operation: it.operation,
        ...(spec.params ? { params } : {}),
        ...(orgId ? { organization_id: orgId } : {}),
      };
      const body = spec.body?.(spec.org === 'create' ? orgId : undefined);
      prepared.push({
        item,
        method: row.method,
        path,
        body,
        listOrg: spec.org === 'list' ? orgId : undefined,
        label: `${JSON.stringify(subject)} ${row.method} ${path}`,
        // a user's create names its organization (SPEC §20); the request has no valid body without one
        ...(spec.org === 'create' && it.org === 'none' && (subject.kind === 'web' || subject.kind === 'pat') ? { refused: true } : {}),
      });
    }
    let check = await app.post('/v1/authorization/check', { checks: prepared.map((p) => p.item) }, cred);
    const refused = prepared.flatMap((p, i) => (p.refused ? [i] : []));
    if (refused.length) {
      // exactly those items are refused, each at its organization_id; the others are asked again
      expect(check.status, `${JSON.stringify(subject)}: ${JSON.stringify(check.body)}`).toBe(422);
      expect(check.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(refused.map((i) => ['body', 'checks', i, 'organization_id']));
      counters.refused += refused.length;
      prepared = prepared.filter((p) => !p.refused);
      if (prepared.length === 0) {
        counters.cases++;
        return;
      }
      check = await app.post('/v1/authorization/check', { checks: prepared.map((p) => p.item) }, cred);
    }
    expect(check.status, `${JSON.stringify(subject)}: ${JSON.stringify(check.body)}`).toBe(200);
    for (const [i, p] of prepared.entries()) {
      const real = await app.request(p.method, p.path, { ...cred, ...(p.body !== undefined ? { body: p.body } : {}) });
      const result = check.body.results[i];
      // a list whose organization_id is out of reach: the request filters it to nothing, a check answers 404 (SPEC §20)
      const expected =
        p.listOrg && real.status === 200 && !reaches(w, subject, p.listOrg)
          ? { status: 404, error: 'ResourceNotFound', reason: null }
          : outcome(real);
      expect({ status: result.status, error: result.error, reason: result.reason }, `${p.label} → ${JSON.stringify(real.body)}`).toEqual(
        expected,
      );
      expect(result.allowed).toBe(result.status < 300);
      if (expected.status === 404) expect(result).toMatchObject({ step: 'resource', reason: null, basis: { role: null } });
      counters.comparisons++;
      counters.byStatus[expected.status] = (counters.byStatus[expected.status] ?? 0) + 1;
    }
    counters.cases++;
    if (options.progress && counters.cases % 1000 === 0) options.progress(counters);
  });
  await fc.assert(property, { numRuns: options.numRuns, seed: options.seed, endOnFailure: true });
  return counters;
}
