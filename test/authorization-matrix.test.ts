// The authorization rules of SPEC §5 as a matrix: "one declared case, many generated
// tests". A case names an endpoint, a target (made fresh per test when the request
// writes) and the expected outcome per subject; one test is generated per case ×
// credential. The first two checks of SPEC §5 (authentication: 401; scopes: 403
// InsufficientScope) are derived from the endpoint's access as SPEC §3/§4/§9 declare it
// here (not read from src/), the rest (404 / 403 NotPermitted + reason / the rows a
// list shows) is declared per subject.
//
// Reads come first, writes after them, so that no write changes what a read expects;
// each write acts on rows made for its own test, and checks afterwards that a refused
// write changed nothing and an accepted one did what it says.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import type { ApiRoute } from '../src/http/route-declaration.ts';
import { apiRoutes } from '../src/server/route-table.ts';
import type { CredentialKind } from '../src/auth/tokens.ts';
import { expectInsufficientScope, expectUnauthorized, expectValidationError } from './expect-api.ts';
import { startTestApp, type ApiResponse, type RequestOptions, type TestApp, type TestUser } from './harness.ts';

// ---------------------------------------------------------------------------------
// Scopes (SPEC §3) and credential kinds (SPEC §2)

const USER_SCOPES = ['user:read', 'user:write', 'payouts:read', 'payouts:write'];
const ORG_SCOPES = [
  ...[
    'organizations',
    'members',
    'products',
    'customers',
    'orders',
    'transactions',
    'payouts',
    'organization_access_tokens',
    'refunds',
  ].flatMap((r) => [`${r}_read`, `${r}_write`]),
  'customer_sessions_write',
  'events_read',
  'webhooks_read',
  'webhooks_write',
];
const PORTAL_SCOPES = ['customer_portal_read', 'customer_portal_write'];
const ALL_SCOPES = [...USER_SCOPES, ...ORG_SCOPES];
/** an impersonation session's scopes: the read scopes only */
const READ_SCOPES = ALL_SCOPES.filter((s) => /read$/.test(s));
/** a write scope implies its read scope */
const expand = (scopes: readonly string[]) =>
  new Set(scopes.flatMap((s) => [s, s.replace(/_write$/, '_read').replace(/:write$/, ':read')]));

const USER_KINDS: CredentialKind[] = ['web_session', 'personal_access_token', 'oauth2_user_token'];
const ORG_KINDS: CredentialKind[] = ['organization_access_token', 'oauth2_organization_token'];
const ACCEPTS = {
  organization: [...USER_KINDS, ...ORG_KINDS],
  user: USER_KINDS,
  web: ['web_session'] as CredentialKind[],
  portal: ['customer_session', 'member_session'] as CredentialKind[],
};
const rw = (resource: string) => [`${resource}_read`, `${resource}_write`];
const w = (resource: string) => [`${resource}_write`];
const FINANCE_READ = ['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'];
const FINANCE_WRITE = ['transactions_write', 'payouts_write'];

// ---------------------------------------------------------------------------------
// Endpoints that touch organization data (SPEC §9), with their access

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
interface Endpoint {
  method: Method;
  path: string;
  accepts: readonly CredentialKind[];
  scopes: readonly string[];
}
const ep = (method: Method, path: string, accepts: readonly CredentialKind[], scopes: readonly string[]): Endpoint => ({
  method,
  path,
  accepts,
  scopes,
});

const EP = {
  listOrganizations: ep('GET', '/v1/organizations/', ACCEPTS.organization, rw('organizations')),
  getOrganization: ep('GET', '/v1/organizations/{id}', ACCEPTS.organization, rw('organizations')),
  createOrganization: ep('POST', '/v1/organizations/', ACCEPTS.user, w('organizations')),
  updateOrganization: ep('PATCH', '/v1/organizations/{id}', ACCEPTS.organization, w('organizations')),
  deleteOrganization: ep('DELETE', '/v1/organizations/{id}', ACCEPTS.user, w('organizations')),
  listMembers: ep('GET', '/v1/organizations/{id}/members', ACCEPTS.organization, rw('members')),
  addMember: ep('POST', '/v1/organizations/{id}/members', ACCEPTS.organization, w('members')),
  updateMember: ep('PATCH', '/v1/organizations/{id}/members/{user_id}', ACCEPTS.organization, w('members')),
  removeMember: ep('DELETE', '/v1/organizations/{id}/members/{user_id}', ACCEPTS.organization, w('members')),
  getOrganizationAccount: ep('GET', '/v1/organizations/{id}/account', ACCEPTS.organization, FINANCE_READ),
  createAccount: ep('POST', '/v1/accounts/', ACCEPTS.user, w('organizations')),
  getAccount: ep('GET', '/v1/accounts/{id}', ACCEPTS.organization, FINANCE_READ),
  updateAccount: ep('PATCH', '/v1/accounts/{id}', ACCEPTS.organization, FINANCE_WRITE),
  listOrganizationTokens: ep('GET', '/v1/organization-access-tokens/', ACCEPTS.user, rw('organization_access_tokens')),
  createOrganizationToken: ep('POST', '/v1/organization-access-tokens/', ACCEPTS.user, w('organization_access_tokens')),
  deleteOrganizationToken: ep('DELETE', '/v1/organization-access-tokens/{id}', ACCEPTS.user, w('organization_access_tokens')),
  listProducts: ep('GET', '/v1/products/', ACCEPTS.organization, rw('products')),
  getProduct: ep('GET', '/v1/products/{id}', ACCEPTS.organization, rw('products')),
  createProduct: ep('POST', '/v1/products/', ACCEPTS.organization, w('products')),
  updateProduct: ep('PATCH', '/v1/products/{id}', ACCEPTS.organization, w('products')),
  deleteProduct: ep('DELETE', '/v1/products/{id}', ACCEPTS.organization, w('products')),
  listCustomers: ep('GET', '/v1/customers/', ACCEPTS.organization, rw('customers')),
  getCustomer: ep('GET', '/v1/customers/{id}', ACCEPTS.organization, rw('customers')),
  createCustomer: ep('POST', '/v1/customers/', ACCEPTS.organization, w('customers')),
  updateCustomer: ep('PATCH', '/v1/customers/{id}', ACCEPTS.organization, w('customers')),
  deleteCustomer: ep('DELETE', '/v1/customers/{id}', ACCEPTS.organization, w('customers')),
  listOrders: ep('GET', '/v1/orders/', ACCEPTS.organization, rw('orders')),
  getOrder: ep('GET', '/v1/orders/{id}', ACCEPTS.organization, rw('orders')),
  createOrder: ep('POST', '/v1/orders/', ACCEPTS.organization, w('orders')),
  updateOrder: ep('PATCH', '/v1/orders/{id}', ACCEPTS.organization, w('orders')),
  listRefunds: ep('GET', '/v1/refunds/', ACCEPTS.organization, rw('refunds')),
  getRefund: ep('GET', '/v1/refunds/{id}', ACCEPTS.organization, rw('refunds')),
  createRefund: ep('POST', '/v1/refunds/', ACCEPTS.organization, w('refunds')),
  listTransactions: ep('GET', '/v1/transactions/', ACCEPTS.organization, FINANCE_READ),
  getTransaction: ep('GET', '/v1/transactions/{id}', ACCEPTS.organization, FINANCE_READ),
  listPayoutAccounts: ep('GET', '/v1/payout-accounts/', ACCEPTS.web, ['payouts:read', 'payouts:write']),
  getPayoutAccount: ep('GET', '/v1/payout-accounts/{id}', ACCEPTS.web, ['payouts:read', 'payouts:write']),
  createPayoutAccount: ep('POST', '/v1/payout-accounts/', ACCEPTS.web, ['payouts:write']),
  deletePayoutAccount: ep('DELETE', '/v1/payout-accounts/{id}', ACCEPTS.web, ['payouts:write']),
  listCustomerMembers: ep('GET', '/v1/customers/{id}/members', ACCEPTS.organization, rw('customers')),
  createCustomerMember: ep('POST', '/v1/customers/{id}/members', ACCEPTS.organization, w('customers')),
  getCustomerMember: ep('GET', '/v1/customers/{id}/members/{member_id}', ACCEPTS.organization, rw('customers')),
  updateCustomerMember: ep('PATCH', '/v1/customers/{id}/members/{member_id}', ACCEPTS.organization, w('customers')),
  deleteCustomerMember: ep('DELETE', '/v1/customers/{id}/members/{member_id}', ACCEPTS.organization, w('customers')),
  listAllCustomerMembers: ep('GET', '/v1/members/', ACCEPTS.organization, rw('customers')),
  createCustomerSession: ep('POST', '/v1/customer-sessions/', ACCEPTS.organization, ['customer_sessions_write']),
  portalMe: ep('GET', '/v1/customer-portal/customers/me', ACCEPTS.portal, PORTAL_SCOPES),
  portalUpdateMe: ep('PATCH', '/v1/customer-portal/customers/me', ACCEPTS.portal, ['customer_portal_write']),
  portalOrders: ep('GET', '/v1/customer-portal/orders/', ACCEPTS.portal, PORTAL_SCOPES),
  portalOrder: ep('GET', '/v1/customer-portal/orders/{id}', ACCEPTS.portal, PORTAL_SCOPES),
  createImpersonation: ep('POST', '/v1/impersonations/', ACCEPTS.web, ['user:write']),
  listEvents: ep('GET', '/v1/events/', ACCEPTS.organization, ['events_read']),
  getEvent: ep('GET', '/v1/events/{id}', ACCEPTS.organization, ['events_read']),
  // SPEC §21
  listRoles: ep('GET', '/v1/organizations/{id}/roles', ACCEPTS.organization, rw('members')),
  createRole: ep('POST', '/v1/organizations/{id}/roles', ACCEPTS.organization, w('members')),
  updateRole: ep('PATCH', '/v1/organizations/{id}/roles/{name}', ACCEPTS.organization, w('members')),
  deleteRole: ep('DELETE', '/v1/organizations/{id}/roles/{name}', ACCEPTS.organization, w('members')),
  leave: ep('DELETE', '/v1/organizations/{id}/members/me', ACCEPTS.web, ['user:write']),
  listInvitations: ep('GET', '/v1/organizations/{id}/invitations', ACCEPTS.organization, rw('members')),
  createInvitation: ep('POST', '/v1/organizations/{id}/invitations', ACCEPTS.organization, w('members')),
  revokeInvitation: ep('DELETE', '/v1/organizations/{id}/invitations/{invitation_id}', ACCEPTS.organization, w('members')),
  myInvitations: ep('GET', '/v1/invitations/', ACCEPTS.web, ['user:read', 'user:write']),
  acceptInvitation: ep('POST', '/v1/invitations/{id}/accept', ACCEPTS.web, ['user:write']),
  declineInvitation: ep('POST', '/v1/invitations/{id}/decline', ACCEPTS.web, ['user:write']),
} satisfies Record<string, Endpoint>;

// ---------------------------------------------------------------------------------
// Subjects and their credentials

/**
 * supportA and auditorA hold roles organization A defined (SPEC §21) with exactly the
 * permissions of `member` and `finance`: where a case does not name them, they expect
 * what memberA and financeA do, so every case checks that a custom role grants exactly
 * its permissions, everywhere.
 */
const USER_PRINCIPALS = ['adminA', 'memberA', 'financeA', 'supportA', 'auditorA', 'outsider', 'removedA', 'adminB'] as const;
/** the roles A defines, and the built-in role each equals */
const CUSTOM_ROLES = [
  { name: 'support', permissions: ['customers:write', 'orders:write', 'products:write'], holder: 'supportA', like: 'memberA' },
  { name: 'auditor', permissions: ['finance:read'], holder: 'auditorA', like: 'financeA' },
] as const;
type UserPrincipal = (typeof USER_PRINCIPALS)[number] | 'platformAdmin';
type Principal =
  | UserPrincipal
  /** a web session of memberA, created by the platform admin: read scopes only */
  | 'impersonation'
  /** adminA's PAT with `user:read` only: fails every organization endpoint's scope check */
  | 'narrowPat'
  | 'oatA'
  | 'oauthOrgA'
  | 'oatB'
  | 'oatC'
  /** an OAT of A with `products_read` only */
  | 'narrowOat'
  | 'customerA'
  | 'seatA';

interface CredentialPlan {
  principal: Principal;
  kind: CredentialKind;
  scopes: ReadonlySet<string>;
}
const plan = (principal: Principal, kind: CredentialKind, scopes: readonly string[]): CredentialPlan => ({
  principal,
  kind,
  scopes: expand(scopes),
});
const CREDENTIALS: CredentialPlan[] = [
  ...USER_PRINCIPALS.flatMap((p) => USER_KINDS.map((kind) => plan(p, kind, ALL_SCOPES))),
  plan('platformAdmin', 'web_session', ALL_SCOPES),
  plan('impersonation', 'web_session', READ_SCOPES),
  plan('narrowPat', 'personal_access_token', ['user:read']),
  plan('oatA', 'organization_access_token', ORG_SCOPES),
  plan('oauthOrgA', 'oauth2_organization_token', ORG_SCOPES),
  plan('oatB', 'organization_access_token', ORG_SCOPES),
  plan('oatC', 'organization_access_token', ORG_SCOPES),
  plan('narrowOat', 'organization_access_token', ['products_read']),
  plan('customerA', 'customer_session', PORTAL_SCOPES),
  plan('seatA', 'member_session', PORTAL_SCOPES),
];
/** Subjects whose expectation, when not declared, is that of another (same reach, same role). */
const FALLBACK: Partial<Record<Principal, Principal>> = {
  impersonation: 'memberA',
  narrowPat: 'adminA',
  oauthOrgA: 'oatA',
  narrowOat: 'oatA',
  supportA: 'memberA',
  auditorA: 'financeA',
};

// ---------------------------------------------------------------------------------
// The fixture world

interface World {
  u: Record<UserPrincipal, TestUser>;
  A: string;
  B: string;
  C: string;
  accountA: string;
  accountB: string;
  productsA: string[];
  productsB: string[];
  productsC: string[];
  prodA: string;
  prodB: string;
  deletedProdA: string;
  customersA: string[];
  customersB: string[];
  custA: string;
  custA2: string;
  custB: string;
  seatA: string;
  seatB: string;
  ordersA: string[];
  ordersB: string[];
  /** orders of custA (the portal's customer): one paid, one pending */
  ordersOfCustA: string[];
  orderA2: string;
  orderB: string;
  /** partial refunds (SPEC §18) of orderA1 and of orderB */
  refundA: string;
  refundB: string;
  transactionsA: string[];
  transactionsB: string[];
  payoutA: string;
  payoutB: string;
  tokensA: string[];
  tokensB: string[];
  tokensC: string[];
  /** A's pending invitation to the outsider (SPEC §21) */
  invitationA: string;
  /** every event the fixtures wrote (SPEC §17) */
  events: { id: string; organization_id: string; type: string }[];
  credentials: Map<string, RequestOptions>;
  /** the user a User subject is */
  userOf: Partial<Record<Principal, string>>;
}

let app: TestApp;
let world: World;
const credentialKey = (c: CredentialPlan) => `${c.principal}/${c.kind}`;

async function buildWorld(): Promise<World> {
  const users = {} as Record<UserPrincipal, TestUser>;
  for (const p of [...USER_PRINCIPALS, 'platformAdmin'] as const) {
    users[p] = await app.user({ name: p, admin: p === 'platformAdmin' });
  }
  const A = (await app.organization(users.adminA.id, { name: 'Organization A' })).id;
  const B = (await app.organization(users.adminB.id, { name: 'Organization B' })).id;
  const C = (await app.organization(users.adminA.id, { name: 'Organization C' })).id;
  await app.membership(A, users.memberA.id, 'member');
  await app.membership(A, users.financeA.id, 'finance');
  await app.membership(A, users.removedA.id, 'member');
  for (const role of CUSTOM_ROLES) {
    await app.sql('insert into rowgate.organization_roles (organization_id, name, permissions) values ($1, $2, $3)', [
      A,
      role.name,
      role.permissions,
    ]);
    await app.membership(A, users[role.holder].id, role.name);
  }
  // an invitation of A to the outsider's address (seen by A's member managers and by the outsider)
  const [invitation] = await app.sql<{ id: string }>(
    `insert into rowgate.invitations (organization_id, email, role, invited_by) values ($1, $2, 'member', $3) returning id`,
    [A, users.outsider.email, users.adminA.id],
  );
  await app.sql('update rowgate.memberships set deleted_at = now() where organization_id = $1 and user_id = $2', [A, users.removedA.id]);
  const accountA = await app.account(A, users.adminA.id);
  const accountB = await app.account(B, users.adminB.id);

  const prodA = await app.product(A, { name: 'A basic' });
  const prodA2 = await app.product(A, { name: 'A archived', is_archived: true });
  const deletedProdA = await app.product(A, { name: 'A deleted' });
  await app.sql('update rowgate.products set deleted_at = now() where id = $1', [deletedProdA]);
  const prodB = await app.product(B, { name: 'B basic' });
  const prodC = await app.product(C, { name: 'C basic' });

  const custA = await app.customer(A, { status: 'active' });
  const custA2 = await app.customer(A);
  const custB = await app.customer(B);
  const seatA = await app.customerMember(custA);
  const seatB = await app.customerMember(custB);

  const orderA1 = await app.order(prodA, custA, 'paid');
  const orderA2 = await app.order(prodA, custA2, 'paid');
  const orderA3 = await app.order(prodA2, custA, 'pending');
  const orderB = await app.order(prodB, custB, 'paid');
  const refund = async (orderId: string, user: TestUser, amount: number) => {
    const res = await app.post('/v1/refunds/', { order_id: orderId, amount, reason: 'customer_request' }, { session: user.session });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };
  const refundA = await refund(orderA1, users.adminA, 100);
  const refundB = await refund(orderB, users.adminB, 200);
  const transactionsOf = async (org: string) =>
    (await app.sql<{ id: string }>('select id from rowgate.transactions where organization_id = $1', [org])).map((r) => r.id);

  const payout = async (org: string) =>
    (
      await app.sql<{ id: string }>(
        `insert into rowgate.payout_accounts (organization_id, type, country, currency) values ($1, 'bank_account', 'US', 'usd') returning id`,
        [org],
      )
    )[0]!.id;
  const payoutA = await payout(A);
  const payoutB = await payout(B);

  const credentials = new Map<string, RequestOptions>();
  const set = (principal: Principal, kind: CredentialKind, token: string) =>
    credentials.set(`${principal}/${kind}`, kind === 'web_session' ? { session: token } : { token });
  for (const p of USER_PRINCIPALS) {
    set(p, 'web_session', users[p].session);
    set(p, 'personal_access_token', await app.pat(users[p].id, ALL_SCOPES));
    set(p, 'oauth2_user_token', await app.oauthUserToken(users[p].id, ALL_SCOPES));
  }
  set('platformAdmin', 'web_session', users.platformAdmin.session);
  set('impersonation', 'web_session', await app.session(users.memberA.id, { impersonatorId: users.platformAdmin.id, lifetime: '1 hour' }));
  set('narrowPat', 'personal_access_token', await app.pat(users.adminA.id, ['user:read']));
  set('oatA', 'organization_access_token', await app.oat(A, ORG_SCOPES));
  set('oauthOrgA', 'oauth2_organization_token', await app.oauthOrganizationToken(users.adminA.id, A, ORG_SCOPES));
  set('oatB', 'organization_access_token', await app.oat(B, ORG_SCOPES));
  set('oatC', 'organization_access_token', await app.oat(C, ORG_SCOPES));
  set('narrowOat', 'organization_access_token', await app.oat(A, ['products_read']));
  set('customerA', 'customer_session', await app.customerSession(custA));
  set('seatA', 'member_session', await app.memberSession(seatA));
  const tokensOf = async (org: string) =>
    (await app.sql<{ id: string }>('select id from rowgate.organization_access_tokens where organization_id = $1', [org])).map((r) => r.id);

  return {
    u: users,
    A,
    B,
    C,
    accountA,
    accountB,
    productsA: [prodA, prodA2],
    productsB: [prodB],
    productsC: [prodC],
    prodA,
    prodB,
    deletedProdA,
    customersA: [custA, custA2],
    customersB: [custB],
    custA,
    custA2,
    custB,
    seatA,
    seatB,
    ordersA: [orderA1, orderA2, orderA3],
    ordersB: [orderB],
    ordersOfCustA: [orderA1, orderA3],
    orderA2,
    orderB,
    refundA,
    refundB,
    transactionsA: await transactionsOf(A),
    transactionsB: await transactionsOf(B),
    payoutA,
    payoutB,
    tokensA: await tokensOf(A),
    tokensB: await tokensOf(B),
    tokensC: await tokensOf(C),
    invitationA: invitation!.id,
    events: await app.sql('select id, organization_id, type from rowgate.events'),
    credentials,
    userOf: {
      ...Object.fromEntries(USER_PRINCIPALS.map((p) => [p, users[p].id])),
      platformAdmin: users.platformAdmin.id,
      impersonation: users.memberA.id,
      narrowPat: users.adminA.id,
    },
  };
}

// Fresh rows for writes: each write test acts on its own.
const fresh = {
  /** an organization where the users of A have the same memberships as in A (no account); one statement */
  async organizationLikeA(w: World) {
    const [row] = await app.sql<{ id: string }>(
      `with o as (insert into rowgate.organizations (name, slug) values ('Like A', $1) returning id),
            m as (insert into rowgate.memberships (organization_id, user_id, role, deleted_at)
                  select o.id, x.user_id, x.role, x.deleted_at from o,
                    (values ($2::uuid, 'admin', null::timestamptz), ($3, 'member', null), ($4, 'finance', null), ($5, 'member', now()))
                      as x (user_id, role, deleted_at))
       select id from o`,
      [slug(), w.u.adminA.id, w.u.memberA.id, w.u.financeA.id, w.u.removedA.id],
    );
    for (const role of CUSTOM_ROLES) {
      await app.sql('insert into rowgate.organization_roles (organization_id, name, permissions) values ($1, $2, $3)', [
        row!.id,
        role.name,
        role.permissions,
      ]);
      await app.membership(row!.id, w.u[role.holder].id, role.name);
    }
    return row!.id;
  },
  /** a user (no credential); with an organization, a `member` of it */
  async user(organizationId?: string) {
    const email = `fresh-${randomUUID()}@example.com`;
    const [row] = await app.sql<{ id: string }>(
      `with u as (insert into rowgate.users (email) values ($1) returning id),
            m as (insert into rowgate.memberships (organization_id, user_id, role) select $2, id, 'member' from u where $2::uuid is not null)
       select id from u`,
      [email, organizationId ?? null],
    );
    return { id: row!.id, email };
  },
  async organizationToken(organizationId: string) {
    const [row] = await app.sql<{ id: string }>(
      `insert into rowgate.organization_access_tokens (organization_id, comment, scopes) values ($1, 'fresh', '{products_read}') returning id`,
      [organizationId],
    );
    return row!.id;
  },
  async order(w: World, organizationId: string) {
    return organizationId === w.A ? app.order(w.prodA, w.custA) : app.order(w.prodB, w.custB);
  },
  async payoutAccount(organizationId: string) {
    const [row] = await app.sql<{ id: string }>(
      `insert into rowgate.payout_accounts (organization_id, type, country, currency) values ($1, 'stripe', 'US', 'usd') returning id`,
      [organizationId],
    );
    return row!.id;
  },
};

const isDeleted = async (table: string, id: string) =>
  (await app.sql<{ deleted: boolean }>(`select deleted_at is not null as deleted from rowgate.${table} where id = $1`, [id]))[0]!.deleted;

// ---------------------------------------------------------------------------------
// Outcomes

interface Target {
  path: string;
  body?: unknown;
  /** the resource the request is about, for checks of a 2xx answer */
  id?: string;
  /** after the status check: did the write happen exactly when it was accepted? */
  verify?: (res: ApiResponse, accepted: boolean, principal: Principal) => Promise<void>;
}

type Check = (res: ApiResponse, w: World, t: Target, principal: Principal) => void;
type Outcome =
  | { kind: 'ok'; status: 200 | 201 | 204; check?: Check }
  | { kind: 'rows'; ids: (w: World) => string[]; key: string }
  | { kind: 'notFound' }
  | { kind: 'denied'; reason: string }
  | { kind: 'invalid'; loc: string[] }
  | { kind: 'unauthorized' }
  | { kind: 'scope' };

const ok = (check?: Check): Outcome => ({ kind: 'ok', status: 200, check });
const created = (check?: Check): Outcome => ({ kind: 'ok', status: 201, check });
const noContent: Outcome = { kind: 'ok', status: 204 };
const rows = (ids: (w: World) => string[], key = 'id'): Outcome => ({ kind: 'rows', ids, key });
const none = rows(() => []);
const notFound: Outcome = { kind: 'notFound' };
const denied = (reason: string): Outcome => ({ kind: 'denied', reason });
const invalid = (...loc: string[]): Outcome => ({ kind: 'invalid', loc });
/** a 200/201 whose body is the target resource */
const sameId: Check = (res, _w, t) => expect(res.body.id).toBe(t.id);

const describeOutcome = (o: Outcome) =>
  ({
    ok: () => `${(o as { status: number }).status}`,
    rows: () => '200 rows',
    notFound: () => '404',
    denied: () => `403 "${(o as { reason: string }).reason}"`,
    invalid: () => `422 at ${(o as { loc: string[] }).loc.join('.')}`,
    unauthorized: () => '401',
    scope: () => '403 InsufficientScope',
  })[o.kind]();

// SPEC §5 denial reasons; "<verb> <things>" from the permissions table (rowgate.permissions)
const R = {
  noAccount: 'Organization has no account',
  financeRead: 'Only the account admin can access financial information',
  financeWrite: 'Only the account admin can manage financial information',
  notPermitted: 'Not permitted',
  onlyUsersMembers: 'Only users can manage members',
  manageMembers: "You don't have permission to manage members",
  manageOrganization: "You don't have permission to manage the organization",
  manageTokens: "You don't have permission to manage access tokens",
  writeProducts: "You don't have permission to write products",
  writeCustomers: "You don't have permission to write customers",
  writeOrders: "You don't have permission to write orders",
  // not worded by SPEC; the migrations' wording
  seatReadOnly: 'Members have read-only access to the customer portal',
  platformAdminsOnly: 'Only platform admins can impersonate users',
};

// ---------------------------------------------------------------------------------
// Cases

type Expectations = Partial<Record<Principal | 'others', Outcome>>;
interface Case {
  endpoint: Endpoint;
  label: string;
  writes: boolean;
  /** its tests share a row they count, so they run one after another */
  serial?: boolean;
  target: (w: World) => Target | Promise<Target>;
  expect: Expectations;
}
const cases: Case[] = [];
const read = (endpoint: Endpoint, label: string, target: Case['target'], e: Expectations) =>
  cases.push({ endpoint, label, writes: false, target, expect: e });
const write = (endpoint: Endpoint, label: string, target: Case['target'], e: Expectations, serial = false) =>
  cases.push({ endpoint, label, writes: true, serial, target, expect: e });
/** the same outcome for several subjects */
const each = (principals: Principal[], outcome: Outcome): Expectations => Object.fromEntries(principals.map((p) => [p, outcome]));
const unknownId = () => randomUUID();
const slug = () => `m-${randomUUID().slice(0, 12)}`;

// ---- reads --------------------------------------------------------------------

// organizations: a user reaches its live memberships' organizations, a token its own
read(EP.listOrganizations, 'every reachable organization', () => ({ path: '/v1/organizations/?limit=100' }), {
  adminA: rows((w) => [w.A, w.C]),
  ...each(
    ['memberA', 'financeA', 'oatA'],
    rows((w) => [w.A]),
  ),
  ...each(
    ['adminB', 'oatB'],
    rows((w) => [w.B]),
  ),
  oatC: rows((w) => [w.C]),
  others: none,
});
read(EP.getOrganization, 'A', (w) => ({ path: `/v1/organizations/${w.A}`, id: w.A }), {
  ...each(['adminA', 'memberA', 'financeA', 'oatA'], ok(sameId)),
  others: notFound,
});
read(EP.getOrganization, 'B', (w) => ({ path: `/v1/organizations/${w.B}`, id: w.B }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  others: notFound,
});
read(EP.getOrganization, 'C (adminA only)', (w) => ({ path: `/v1/organizations/${w.C}`, id: w.C }), {
  ...each(['adminA', 'oatC'], ok(sameId)),
  others: notFound,
});
read(EP.getOrganization, 'an unknown id', () => ({ path: `/v1/organizations/${unknownId()}` }), { others: notFound });

// members
read(EP.listMembers, 'of A (the removed member is not listed)', (w) => ({ path: `/v1/organizations/${w.A}/members?limit=100` }), {
  ...each(
    ['adminA', 'memberA', 'financeA', 'oatA'],
    rows((w) => [w.u.adminA.id, w.u.memberA.id, w.u.financeA.id, w.u.supportA.id, w.u.auditorA.id], 'user_id'),
  ),
  others: notFound,
});
read(EP.listMembers, 'of B', (w) => ({ path: `/v1/organizations/${w.B}/members?limit=100` }), {
  ...each(
    ['adminB', 'oatB'],
    rows((w) => [w.u.adminB.id], 'user_id'),
  ),
  others: notFound,
});
read(EP.listMembers, 'of an unknown organization', () => ({ path: `/v1/organizations/${unknownId()}/members` }), { others: notFound });

// the organization's account: finance-read policy
read(EP.getOrganizationAccount, 'of A', (w) => ({ path: `/v1/organizations/${w.A}/account`, id: w.accountA }), {
  adminA: ok(sameId),
  oatA: ok(sameId),
  ...each(['memberA', 'financeA'], denied(R.financeRead)),
  others: notFound,
});
read(EP.getOrganizationAccount, 'of C, which has none', (w) => ({ path: `/v1/organizations/${w.C}/account` }), {
  // a User gets the reason; an Organization subject passes the policy, then finds nothing
  adminA: denied(R.noAccount),
  oatC: notFound,
  others: notFound,
});
read(EP.getOrganizationAccount, 'of B', (w) => ({ path: `/v1/organizations/${w.B}/account`, id: w.accountB }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  others: notFound,
});
read(EP.getOrganizationAccount, 'of an unknown organization', () => ({ path: `/v1/organizations/${unknownId()}/account` }), {
  others: notFound,
});
read(EP.getAccount, 'of A', (w) => ({ path: `/v1/accounts/${w.accountA}`, id: w.accountA }), {
  ...each(['adminA', 'oatA'], ok(sameId)),
  ...each(['memberA', 'financeA'], denied(R.financeRead)),
  others: notFound,
});
read(EP.getAccount, 'of B', (w) => ({ path: `/v1/accounts/${w.accountB}`, id: w.accountB }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  others: notFound,
});
read(EP.getAccount, 'an unknown id', () => ({ path: `/v1/accounts/${unknownId()}` }), { others: notFound });

// organization access tokens: users with access_tokens:manage only
read(EP.listOrganizationTokens, 'all', () => ({ path: '/v1/organization-access-tokens/?limit=100' }), {
  adminA: rows((w) => [...w.tokensA, ...w.tokensC]),
  adminB: rows((w) => w.tokensB),
  others: none,
});
read(EP.listOrganizationTokens, 'narrowed to A', (w) => ({ path: `/v1/organization-access-tokens/?limit=100&organization_id=${w.A}` }), {
  adminA: rows((w) => w.tokensA),
  others: none,
});
read(EP.listOrganizationTokens, 'narrowed to B', (w) => ({ path: `/v1/organization-access-tokens/?limit=100&organization_id=${w.B}` }), {
  adminB: rows((w) => w.tokensB),
  others: none,
});

// products, customers, orders: every member reads; lists show reachable organizations only
read(EP.listProducts, 'all (deleted ones hidden)', () => ({ path: '/v1/products/?limit=100' }), {
  adminA: rows((w) => [...w.productsA, ...w.productsC]),
  ...each(
    ['memberA', 'financeA', 'oatA'],
    rows((w) => w.productsA),
  ),
  ...each(
    ['adminB', 'oatB'],
    rows((w) => w.productsB),
  ),
  oatC: rows((w) => w.productsC),
  others: none,
});
read(EP.listProducts, 'narrowed to B', (w) => ({ path: `/v1/products/?limit=100&organization_id=${w.B}` }), {
  ...each(
    ['adminB', 'oatB'],
    rows((w) => w.productsB),
  ),
  others: none,
});
read(EP.listProducts, 'narrowed to A and B', (w) => ({ path: `/v1/products/?limit=100&organization_id=${w.A}&organization_id=${w.B}` }), {
  ...each(
    ['adminA', 'memberA', 'financeA', 'oatA'],
    rows((w) => w.productsA),
  ),
  ...each(
    ['adminB', 'oatB'],
    rows((w) => w.productsB),
  ),
  others: none,
});
read(EP.getProduct, 'of A', (w) => ({ path: `/v1/products/${w.prodA}`, id: w.prodA }), {
  ...each(['adminA', 'memberA', 'financeA', 'oatA'], ok(sameId)),
  others: notFound,
});
read(EP.getProduct, 'of B', (w) => ({ path: `/v1/products/${w.prodB}`, id: w.prodB }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  others: notFound,
});
read(EP.getProduct, 'a deleted one of A', (w) => ({ path: `/v1/products/${w.deletedProdA}` }), { others: notFound });
read(EP.getProduct, 'an unknown id', () => ({ path: `/v1/products/${unknownId()}` }), { others: notFound });

read(EP.listCustomers, 'all', () => ({ path: '/v1/customers/?limit=100' }), {
  ...each(
    ['adminA', 'memberA', 'financeA', 'oatA'],
    rows((w) => w.customersA),
  ),
  ...each(
    ['adminB', 'oatB'],
    rows((w) => w.customersB),
  ),
  others: none,
});
read(EP.listCustomers, 'narrowed to B', (w) => ({ path: `/v1/customers/?limit=100&organization_id=${w.B}` }), {
  ...each(
    ['adminB', 'oatB'],
    rows((w) => w.customersB),
  ),
  others: none,
});
read(EP.getCustomer, 'of A', (w) => ({ path: `/v1/customers/${w.custA}`, id: w.custA }), {
  ...each(['adminA', 'memberA', 'financeA', 'oatA'], ok(sameId)),
  others: notFound,
});
read(EP.getCustomer, 'of B', (w) => ({ path: `/v1/customers/${w.custB}`, id: w.custB }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  others: notFound,
});
read(EP.getCustomer, 'an unknown id', () => ({ path: `/v1/customers/${unknownId()}` }), { others: notFound });

read(EP.listOrders, 'all', () => ({ path: '/v1/orders/?limit=100' }), {
  ...each(
    ['adminA', 'memberA', 'financeA', 'oatA'],
    rows((w) => w.ordersA),
  ),
  ...each(
    ['adminB', 'oatB'],
    rows((w) => w.ordersB),
  ),
  others: none,
});
read(EP.listOrders, 'narrowed to B', (w) => ({ path: `/v1/orders/?limit=100&organization_id=${w.B}` }), {
  ...each(
    ['adminB', 'oatB'],
    rows((w) => w.ordersB),
  ),
  others: none,
});
read(EP.getOrder, 'of A', (w) => ({ path: `/v1/orders/${w.orderA2}`, id: w.orderA2 }), {
  ...each(['adminA', 'memberA', 'financeA', 'oatA'], ok(sameId)),
  others: notFound,
});
read(EP.getOrder, 'of B', (w) => ({ path: `/v1/orders/${w.orderB}`, id: w.orderB }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  others: notFound,
});
read(EP.getOrder, 'an unknown id', () => ({ path: `/v1/orders/${unknownId()}` }), { others: notFound });

// refunds (SPEC §18): whoever reads the order reads its refunds (every member), with refunds_read
read(EP.listRefunds, 'all', () => ({ path: '/v1/refunds/?limit=100' }), {
  ...each(
    ['adminA', 'memberA', 'financeA', 'oatA'],
    rows((w) => [w.refundA]),
  ),
  ...each(
    ['adminB', 'oatB'],
    rows((w) => [w.refundB]),
  ),
  others: none,
});
read(EP.listRefunds, 'narrowed to B', (w) => ({ path: `/v1/refunds/?limit=100&organization_id=${w.B}` }), {
  ...each(
    ['adminB', 'oatB'],
    rows((w) => [w.refundB]),
  ),
  others: none,
});
read(EP.getRefund, 'of A', (w) => ({ path: `/v1/refunds/${w.refundA}`, id: w.refundA }), {
  ...each(['adminA', 'memberA', 'financeA', 'oatA'], ok(sameId)),
  others: notFound,
});
read(EP.getRefund, 'of B', (w) => ({ path: `/v1/refunds/${w.refundB}`, id: w.refundB }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  others: notFound,
});
read(EP.getRefund, 'an unknown id', () => ({ path: `/v1/refunds/${unknownId()}` }), { others: notFound });

// transactions: permission filter finance:read (the member role lacks it; tokens bypass it)
read(EP.listTransactions, 'all', () => ({ path: '/v1/transactions/?limit=100' }), {
  ...each(
    ['adminA', 'financeA', 'oatA'],
    rows((w) => w.transactionsA),
  ),
  ...each(
    ['adminB', 'oatB'],
    rows((w) => w.transactionsB),
  ),
  memberA: none,
  others: none,
});
read(EP.listTransactions, 'narrowed to A', (w) => ({ path: `/v1/transactions/?limit=100&organization_id=${w.A}` }), {
  ...each(
    ['adminA', 'financeA', 'oatA'],
    rows((w) => w.transactionsA),
  ),
  memberA: none,
  others: none,
});
read(EP.listTransactions, 'narrowed to B', (w) => ({ path: `/v1/transactions/?limit=100&organization_id=${w.B}` }), {
  ...each(
    ['adminB', 'oatB'],
    rows((w) => w.transactionsB),
  ),
  others: none,
});

// events: the reading rules of the resource each describes (SPEC §17). Payout-account
// events follow the access class of payout accounts (web sessions), which depends on the
// credential rather than the subject: test/events.test.ts covers them; here they are filtered out.
const eventsOf =
  (organization: 'A' | 'B' | 'C', visible: (type: string) => boolean = () => true) =>
  (w: World) =>
    w.events.filter((e) => e.organization_id === w[organization] && visible(e.type)).map((e) => e.id);
const memberVisible = (type: string) => !/^(transaction|account|payout_account|organization_access_token|invitation)\./.test(type);
/** organization tokens: not token events, nor invitation events (member managers are users) */
const notTokens = (type: string) => !type.startsWith('organization_access_token.') && !type.startsWith('invitation.');
const eventsPath = (w: World) =>
  `/v1/events/?limit=100&${[...new Set(w.events.map((e) => e.type).filter((t) => !t.startsWith('payout_account.')))]
    .map((t) => `type=${t}`)
    .join('&')}`;
read(EP.listEvents, 'every type but payout accounts', (w) => ({ path: eventsPath(w) }), {
  adminA: rows((w) => [...eventsOf('A', (t) => !t.startsWith('payout_account.'))(w), ...eventsOf('C')(w)]),
  memberA: rows(eventsOf('A', memberVisible)),
  financeA: rows(eventsOf('A', (t) => memberVisible(t) || t.startsWith('transaction.'))),
  oatA: rows(eventsOf('A', (t) => notTokens(t) && !t.startsWith('payout_account.'))),
  adminB: rows(eventsOf('B', (t) => !t.startsWith('payout_account.'))),
  oatB: rows(eventsOf('B', (t) => notTokens(t) && !t.startsWith('payout_account.'))),
  oatC: rows(eventsOf('C', notTokens)),
  others: none,
});
const eventOf = (w: World, organization: 'A' | 'B', type: string) =>
  w.events.find((e) => e.organization_id === w[organization] && e.type === type)!.id;
read(
  EP.getEvent,
  'a transaction of A (finance:read)',
  (w) => ({ path: `/v1/events/${eventOf(w, 'A', 'transaction.created')}`, id: eventOf(w, 'A', 'transaction.created') }),
  {
    ...each(['adminA', 'financeA', 'oatA'], ok(sameId)),
    others: notFound,
  },
);
read(
  EP.getEvent,
  'the account of A (finance-read policy)',
  (w) => ({ path: `/v1/events/${eventOf(w, 'A', 'account.created')}`, id: eventOf(w, 'A', 'account.created') }),
  {
    ...each(['adminA', 'oatA'], ok(sameId)),
    others: notFound,
  },
);
read(
  EP.getEvent,
  'a product of B',
  (w) => ({ path: `/v1/events/${eventOf(w, 'B', 'product.created')}`, id: eventOf(w, 'B', 'product.created') }),
  {
    ...each(['adminB', 'oatB'], ok(sameId)),
    others: notFound,
  },
);
read(EP.getEvent, 'an unknown id', () => ({ path: `/v1/events/${unknownId()}` }), { others: notFound });
// one transaction: the list's permission filter, so 404 where the list would not show it
read(EP.getTransaction, 'of A', (w) => ({ path: `/v1/transactions/${w.transactionsA[0]}`, id: w.transactionsA[0] }), {
  ...each(['adminA', 'financeA', 'oatA'], ok(sameId)),
  memberA: notFound,
  others: notFound,
});
read(EP.getTransaction, 'of B', (w) => ({ path: `/v1/transactions/${w.transactionsB[0]}`, id: w.transactionsB[0] }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  others: notFound,
});
read(EP.getTransaction, 'an unknown id', () => ({ path: `/v1/transactions/${unknownId()}` }), { others: notFound });

// payout accounts: web sessions, finance-read policy
read(EP.listPayoutAccounts, 'all', () => ({ path: '/v1/payout-accounts/?limit=100' }), {
  adminA: rows((w) => [w.payoutA]),
  adminB: rows((w) => [w.payoutB]),
  others: none,
});
read(EP.listPayoutAccounts, 'narrowed to B', (w) => ({ path: `/v1/payout-accounts/?limit=100&organization_id=${w.B}` }), {
  adminB: rows((w) => [w.payoutB]),
  others: none,
});
read(EP.getPayoutAccount, 'of A', (w) => ({ path: `/v1/payout-accounts/${w.payoutA}`, id: w.payoutA }), {
  adminA: ok(sameId),
  ...each(['memberA', 'financeA'], denied(R.financeRead)),
  others: notFound,
});
read(EP.getPayoutAccount, 'of B', (w) => ({ path: `/v1/payout-accounts/${w.payoutB}`, id: w.payoutB }), {
  adminB: ok(sameId),
  others: notFound,
});
read(EP.getPayoutAccount, 'an unknown id', () => ({ path: `/v1/payout-accounts/${unknownId()}` }), { others: notFound });

// the customer portal: a customer (or its seat) sees itself and its own orders only
read(EP.portalMe, 'the current customer', (w) => ({ path: '/v1/customer-portal/customers/me', id: w.custA }), {
  ...each(['customerA', 'seatA'], ok(sameId)),
});
read(EP.portalOrders, "the current customer's", () => ({ path: '/v1/customer-portal/orders/?limit=100' }), {
  ...each(
    ['customerA', 'seatA'],
    rows((w) => w.ordersOfCustA),
  ),
});
read(EP.portalOrder, 'its own', (w) => ({ path: `/v1/customer-portal/orders/${w.ordersOfCustA[0]}`, id: w.ordersOfCustA[0] }), {
  ...each(['customerA', 'seatA'], ok(sameId)),
});
read(EP.portalOrder, "another customer's of A", (w) => ({ path: `/v1/customer-portal/orders/${w.orderA2}` }), {
  ...each(['customerA', 'seatA'], notFound),
});
read(EP.portalOrder, 'one of B', (w) => ({ path: `/v1/customer-portal/orders/${w.orderB}` }), {
  ...each(['customerA', 'seatA'], notFound),
});
read(EP.portalOrder, 'an unknown id', () => ({ path: `/v1/customer-portal/orders/${unknownId()}` }), {
  ...each(['customerA', 'seatA'], notFound),
});

// member seats (SPEC §18): customers_read|write; every member of the organization reads them
read(EP.listCustomerMembers, 'of custA', (w) => ({ path: `/v1/customers/${w.custA}/members?limit=100` }), {
  ...each(
    ['adminA', 'memberA', 'financeA', 'oatA'],
    rows((w) => [w.seatA]),
  ),
  others: notFound,
});
read(EP.listCustomerMembers, 'of custB', (w) => ({ path: `/v1/customers/${w.custB}/members?limit=100` }), {
  ...each(
    ['adminB', 'oatB'],
    rows((w) => [w.seatB]),
  ),
  others: notFound,
});
read(EP.listCustomerMembers, 'of an unknown customer', () => ({ path: `/v1/customers/${unknownId()}/members` }), { others: notFound });
read(EP.getCustomerMember, 'seatA of custA', (w) => ({ path: `/v1/customers/${w.custA}/members/${w.seatA}`, id: w.seatA }), {
  ...each(['adminA', 'memberA', 'financeA', 'oatA'], ok(sameId)),
  others: notFound,
});
read(EP.getCustomerMember, 'seatA under another customer of A', (w) => ({ path: `/v1/customers/${w.custA2}/members/${w.seatA}` }), {
  others: notFound,
});
read(EP.getCustomerMember, 'seatB of custB', (w) => ({ path: `/v1/customers/${w.custB}/members/${w.seatB}`, id: w.seatB }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  others: notFound,
});
read(EP.listAllCustomerMembers, 'all', () => ({ path: '/v1/members/?limit=100' }), {
  ...each(
    ['adminA', 'memberA', 'financeA', 'oatA'],
    rows((w) => [w.seatA]),
  ),
  ...each(
    ['adminB', 'oatB'],
    rows((w) => [w.seatB]),
  ),
  others: none,
});
read(EP.listAllCustomerMembers, 'narrowed to B', (w) => ({ path: `/v1/members/?limit=100&organization_id=${w.B}` }), {
  ...each(
    ['adminB', 'oatB'],
    rows((w) => [w.seatB]),
  ),
  others: none,
});

// roles and invitations (SPEC §21): A's own roles to A's members only; invitations to
// member managers (users), and to the invited address's web session
const BUILT_IN_ROLES = ['admin', 'finance', 'member'];
read(EP.listRoles, 'of A', (w) => ({ path: `/v1/organizations/${w.A}/roles?limit=100` }), {
  ...each(
    ['adminA', 'memberA', 'financeA', 'oatA'],
    rows(() => [...BUILT_IN_ROLES, ...CUSTOM_ROLES.map((r) => r.name)], 'name'),
  ),
  others: notFound,
});
read(EP.listRoles, 'of B (built-in roles only)', (w) => ({ path: `/v1/organizations/${w.B}/roles?limit=100` }), {
  ...each(
    ['adminB', 'oatB'],
    rows(() => BUILT_IN_ROLES, 'name'),
  ),
  others: notFound,
});
read(EP.listInvitations, 'of A', (w) => ({ path: `/v1/organizations/${w.A}/invitations?limit=100` }), {
  adminA: rows((w) => [w.invitationA]),
  ...each(['memberA', 'financeA'], denied(R.manageMembers)),
  oatA: denied(R.onlyUsersMembers),
  others: notFound,
});
read(EP.listInvitations, 'of B', (w) => ({ path: `/v1/organizations/${w.B}/invitations?limit=100` }), {
  adminB: none,
  oatB: denied(R.onlyUsersMembers),
  others: notFound,
});
read(EP.myInvitations, 'the pending invitations to my address', () => ({ path: '/v1/invitations/?limit=100' }), {
  outsider: rows((w) => [w.invitationA]),
  others: none,
});

// ---- writes -------------------------------------------------------------------

// organizations
write(
  EP.createOrganization,
  'any user; the creator becomes its admin',
  () => ({ path: '/v1/organizations/', body: { name: 'New', slug: slug() } }),
  {
    others: created((res, _w, t) => expect(res.body.slug).toBe((t.body as { slug: string }).slug)),
  },
);
write(
  EP.updateOrganization,
  'A (same name)',
  (w) => ({
    path: `/v1/organizations/${w.A}`,
    body: { name: 'Organization A' },
    id: w.A,
  }),
  {
    ...each(['adminA', 'oatA'], ok(sameId)),
    ...each(['memberA', 'financeA'], denied(R.manageOrganization)),
    others: notFound,
  },
);
// the token lifetime cap (SPEC §22) is the organization's like its name: organization:manage; cleared, so the
// organization tokens created below need no expiry
write(
  EP.updateOrganization,
  'A (no token lifetime cap)',
  (w) => ({ path: `/v1/organizations/${w.A}`, body: { max_token_lifetime_days: null }, id: w.A }),
  {
    ...each(['adminA', 'oatA'], ok(sameId)),
    ...each(['memberA', 'financeA'], denied(R.manageOrganization)),
    others: notFound,
  },
);
write(EP.updateOrganization, 'B (same name)', (w) => ({ path: `/v1/organizations/${w.B}`, body: { name: 'Organization B' }, id: w.B }), {
  ...each(['adminB', 'oatB'], ok(sameId)),
  // another organization's resource: 404, never 403 (memberA lacks organization:manage everywhere)
  others: notFound,
});
write(EP.updateOrganization, 'an unknown id', () => ({ path: `/v1/organizations/${unknownId()}`, body: { name: 'X' } }), {
  others: notFound,
});
write(
  EP.deleteOrganization,
  "a fresh organization with A's memberships",
  async (w) => {
    const id = await fresh.organizationLikeA(w);
    return {
      path: `/v1/organizations/${id}`,
      verify: async (_res, accepted) => {
        expect(await isDeleted('organizations', id)).toBe(accepted);
        // a deleted organization answers 404 to its former admin; a live one 200
        const seen = await app.get(`/v1/organizations/${id}`, { session: w.u.adminA.session });
        expect(seen.status).toBe(accepted ? 404 : 200);
      },
    };
  },
  {
    adminA: noContent,
    ...each(['memberA', 'financeA'], denied(R.manageOrganization)),
    others: notFound,
  },
);
write(EP.deleteOrganization, 'an unknown id', () => ({ path: `/v1/organizations/${unknownId()}` }), { others: notFound });

// members: members-management policy
const membershipOf = async (organizationId: string, userId: string) =>
  (
    await app.sql<{ role: string }>(
      'select role from rowgate.memberships where organization_id = $1 and user_id = $2 and deleted_at is null',
      [organizationId, userId],
    )
  )[0]?.role ?? null;

const addMemberTo = (org: (w: World) => string) => async (w: World) => {
  const user = await fresh.user();
  const organizationId = org(w);
  return {
    path: `/v1/organizations/${organizationId}/members`,
    body: { email: user.email, role: 'member' },
    id: user.id,
    verify: async (_res: ApiResponse, accepted: boolean) =>
      expect(await membershipOf(organizationId, user.id)).toBe(accepted ? 'member' : null),
  };
};
const memberCheck: Check = (res, _w, t) =>
  expect({ user_id: res.body.user_id, role: res.body.role }).toEqual({ user_id: t.id, role: 'member' });
write(
  EP.addMember,
  'to A',
  addMemberTo((w) => w.A),
  {
    adminA: created(memberCheck),
    ...each(['memberA', 'financeA'], denied(R.manageMembers)),
    oatA: denied(R.onlyUsersMembers),
    others: notFound,
  },
);
write(
  EP.addMember,
  'to B',
  addMemberTo((w) => w.B),
  {
    adminB: created(memberCheck),
    oatB: denied(R.onlyUsersMembers),
    others: notFound,
  },
);
write(
  EP.addMember,
  'to an unknown organization',
  (w) => ({
    path: `/v1/organizations/${unknownId()}/members`,
    body: { email: w.u.outsider.email, role: 'member' },
  }),
  { others: notFound },
);

const changeMemberOf = (org: (w: World) => string) => async (w: World) => {
  const organizationId = org(w);
  const user = await fresh.user(organizationId);
  return {
    path: `/v1/organizations/${organizationId}/members/${user.id}`,
    body: { role: 'finance' },
    id: user.id,
    verify: async (_res: ApiResponse, accepted: boolean) =>
      expect(await membershipOf(organizationId, user.id)).toBe(accepted ? 'finance' : 'member'),
  };
};
const roleChanged: Check = (res, _w, t) =>
  expect({ user_id: res.body.user_id, role: res.body.role }).toEqual({ user_id: t.id, role: 'finance' });
write(
  EP.updateMember,
  'a fresh member of A',
  changeMemberOf((w) => w.A),
  {
    adminA: ok(roleChanged),
    ...each(['memberA', 'financeA'], denied(R.manageMembers)),
    oatA: denied(R.onlyUsersMembers),
    others: notFound,
  },
);
write(
  EP.updateMember,
  'a fresh member of B',
  changeMemberOf((w) => w.B),
  {
    adminB: ok(roleChanged),
    oatB: denied(R.onlyUsersMembers),
    others: notFound,
  },
);
// SPEC §5: the resource (the membership) is resolved (404) before the policy runs (403)
write(
  EP.updateMember,
  'the removed member of A',
  (w) => ({
    path: `/v1/organizations/${w.A}/members/${w.u.removedA.id}`,
    body: { role: 'finance' },
    verify: async () => {
      const [row] = await app.sql(
        'select role, deleted_at is not null as removed from rowgate.memberships where organization_id = $1 and user_id = $2',
        [w.A, w.u.removedA.id],
      );
      expect(row).toEqual({ role: 'member', removed: true });
    },
  }),
  { others: notFound },
);
write(
  EP.updateMember,
  'a user who is no member of A',
  (w) => ({
    path: `/v1/organizations/${w.A}/members/${w.u.outsider.id}`,
    body: { role: 'finance' },
  }),
  { others: notFound },
);
write(
  EP.updateMember,
  'in an unknown organization',
  () => ({
    path: `/v1/organizations/${unknownId()}/members/${unknownId()}`,
    body: { role: 'finance' },
  }),
  { others: notFound },
);

const removeMemberOf = (org: (w: World) => string) => async (w: World) => {
  const organizationId = org(w);
  const user = await fresh.user(organizationId);
  return {
    path: `/v1/organizations/${organizationId}/members/${user.id}`,
    verify: async (_res: ApiResponse, accepted: boolean) =>
      expect(await membershipOf(organizationId, user.id)).toBe(accepted ? null : 'member'),
  };
};
write(
  EP.removeMember,
  'a fresh member of A',
  removeMemberOf((w) => w.A),
  {
    adminA: noContent,
    ...each(['memberA', 'financeA'], denied(R.manageMembers)),
    oatA: denied(R.onlyUsersMembers),
    others: notFound,
  },
);
write(
  EP.removeMember,
  'a fresh member of B',
  removeMemberOf((w) => w.B),
  {
    adminB: noContent,
    oatB: denied(R.onlyUsersMembers),
    others: notFound,
  },
);
write(EP.removeMember, 'the removed member of A', (w) => ({ path: `/v1/organizations/${w.A}/members/${w.u.removedA.id}` }), {
  others: notFound,
});
write(EP.removeMember, 'in an unknown organization', () => ({ path: `/v1/organizations/${unknownId()}/members/${unknownId()}` }), {
  others: notFound,
});

// accounts
const accountOf = async (organizationId: string) =>
  (
    await app.sql<{ admin_id: string; account_id: string | null }>(
      `select a.admin_id, o.account_id from rowgate.organizations o left join rowgate.accounts a on a.organization_id = o.id and a.deleted_at is null
       where o.id = $1`,
      [organizationId],
    )
  )[0]!;
write(
  EP.createAccount,
  "for a fresh organization with A's memberships",
  async (w) => {
    const organizationId = await fresh.organizationLikeA(w);
    return {
      path: '/v1/accounts/',
      body: { organization_id: organizationId, country: 'FR', currency: 'eur' },
      id: organizationId,
      verify: async (res, accepted) => {
        const account = await accountOf(organizationId);
        expect(account.account_id).toBe(accepted ? res.body.id : null);
      },
    };
  },
  {
    adminA: created((res, w, t) =>
      expect({ organization_id: res.body.organization_id, admin_id: res.body.admin_id }).toEqual({
        organization_id: t.id,
        admin_id: w.u.adminA.id,
      }),
    ),
    ...each(['memberA', 'financeA'], denied(R.manageOrganization)),
    others: invalid('body', 'organization_id'),
  },
);
write(
  EP.createAccount,
  'for A, which has one',
  (w) => ({
    path: '/v1/accounts/',
    body: { organization_id: w.A, country: 'FR', currency: 'eur' },
    verify: async () => expect(await accountOf(w.A)).toEqual({ admin_id: w.u.adminA.id, account_id: w.accountA }),
  }),
  {
    ...each(['memberA', 'financeA'], denied(R.manageOrganization)),
    others: invalid('body', 'organization_id'),
  },
);
write(
  EP.updateAccount,
  'of A (same values)',
  (w) => ({ path: `/v1/accounts/${w.accountA}`, body: { country: 'US', currency: 'usd' }, id: w.accountA }),
  {
    adminA: ok(sameId),
    ...each(['memberA', 'financeA'], denied(R.financeWrite)),
    oatA: denied(R.notPermitted),
    others: notFound,
  },
);
write(
  EP.updateAccount,
  'of B (same values)',
  (w) => ({ path: `/v1/accounts/${w.accountB}`, body: { country: 'US', currency: 'usd' }, id: w.accountB }),
  {
    adminB: ok(sameId),
    oatB: denied(R.notPermitted),
    others: notFound,
  },
);
write(EP.updateAccount, 'an unknown id', () => ({ path: `/v1/accounts/${unknownId()}`, body: { country: 'US' } }), { others: notFound });

// organization access tokens
const tokenCount = async (organizationId: string, comment: string) =>
  Number(
    (
      await app.sql('select count(*) as n from rowgate.organization_access_tokens where organization_id = $1 and comment = $2', [
        organizationId,
        comment,
      ])
    )[0]!.n,
  );
write(
  EP.createOrganizationToken,
  'for A',
  (w) => {
    const comment = `matrix ${randomUUID()}`;
    return {
      path: '/v1/organization-access-tokens/',
      body: { organization_id: w.A, comment, scopes: ['products_read'] },
      id: w.A,
      verify: async (res, accepted) => {
        expect(await tokenCount(w.A, comment)).toBe(accepted ? 1 : 0);
        if (accepted) {
          // the new token acts as A
          const listed = await app.get(`/v1/products/?limit=100&organization_id=${w.A}&organization_id=${w.B}`, { token: res.body.token });
          const live = await app.sql<{ id: string }>('select id from rowgate.products where organization_id = $1 and deleted_at is null', [
            w.A,
          ]);
          expect(listed.status).toBe(200);
          expect(listed.body.items.map((p: { id: string }) => p.id).sort()).toEqual(live.map((p) => p.id).sort());
        }
      },
    };
  },
  {
    adminA: created((res, _w, t) =>
      expect({ organization_id: res.body.organization_id, scopes: res.body.scopes }).toEqual({
        organization_id: t.id,
        scopes: ['products_read'],
      }),
    ),
    ...each(['memberA', 'financeA'], denied(R.manageTokens)),
    others: invalid('body', 'organization_id'),
  },
);
const deleteTokenOf = (org: (w: World) => string) => async (w: World) => {
  const id = await fresh.organizationToken(org(w));
  return {
    path: `/v1/organization-access-tokens/${id}`,
    verify: async (_res: ApiResponse, accepted: boolean) => expect(await isDeleted('organization_access_tokens', id)).toBe(accepted),
  };
};
write(
  EP.deleteOrganizationToken,
  'a fresh token of A',
  deleteTokenOf((w) => w.A),
  {
    adminA: noContent,
    ...each(['memberA', 'financeA'], denied(R.manageTokens)),
    others: notFound,
  },
);
write(
  EP.deleteOrganizationToken,
  'a fresh token of B',
  deleteTokenOf((w) => w.B),
  {
    adminB: noContent,
    others: notFound,
  },
);
write(EP.deleteOrganizationToken, 'an unknown id', () => ({ path: `/v1/organization-access-tokens/${unknownId()}` }), { others: notFound });

// products
const countWhere = async (table: string, column: string, value: string) =>
  Number((await app.sql(`select count(*) as n from rowgate.${table} where ${column} = $1`, [value]))[0]!.n);
const inOrganization =
  (org: (w: World) => string): Check =>
  (res, w) =>
    expect(res.body.organization_id).toBe(org(w));
const TOKEN_ORGANIZATION: Partial<Record<Principal, (w: World) => string>> = {
  oatA: (w) => w.A,
  oauthOrgA: (w) => w.A,
  narrowOat: (w) => w.A,
  oatB: (w) => w.B,
  oatC: (w) => w.C,
};
/** an Organization subject omitting organization_id creates in its own organization */
const inOwnOrganization: Check = (res, w, _t, principal) => expect(res.body.organization_id).toBe(TOKEN_ORGANIZATION[principal]!(w));

write(
  EP.createProduct,
  'in A',
  (w) => {
    const name = `matrix ${randomUUID()}`;
    return {
      path: '/v1/products/',
      body: { organization_id: w.A, name, price_amount: 500, price_currency: 'usd' },
      verify: async (_res, accepted) => expect(await countWhere('products', 'name', name)).toBe(accepted ? 1 : 0),
    };
  },
  {
    ...each(['adminA', 'memberA', 'oatA'], created(inOrganization((w) => w.A))),
    financeA: denied(R.writeProducts),
    others: invalid('body', 'organization_id'),
  },
);
write(
  EP.createProduct,
  'without organization_id',
  () => {
    const name = `matrix ${randomUUID()}`;
    return {
      path: '/v1/products/',
      body: { name, price_amount: 500, price_currency: 'usd' },
      verify: async (_res, accepted) => expect(await countWhere('products', 'name', name)).toBe(accepted ? 1 : 0),
    };
  },
  {
    ...each(['oatA', 'oatB', 'oatC'], created(inOwnOrganization)),
    others: invalid('body', 'organization_id'),
  },
);
const updateProductOf = (org: (w: World) => string) => async (w: World) => {
  const id = await app.product(org(w), { name: 'before' });
  return {
    path: `/v1/products/${id}`,
    body: { name: 'after' },
    id,
    verify: async (_res: ApiResponse, accepted: boolean) =>
      expect((await app.sql('select name from rowgate.products where id = $1', [id]))[0]!.name).toBe(accepted ? 'after' : 'before'),
  };
};
write(
  EP.updateProduct,
  'a fresh product of A',
  updateProductOf((w) => w.A),
  {
    ...each(['adminA', 'memberA', 'oatA'], ok(sameId)),
    financeA: denied(R.writeProducts),
    others: notFound,
  },
);
write(
  EP.updateProduct,
  'a fresh product of B',
  updateProductOf((w) => w.B),
  {
    ...each(['adminB', 'oatB'], ok(sameId)),
    // financeA may write products nowhere, yet B's product is 404 to it, never 403
    others: notFound,
  },
);
write(EP.updateProduct, 'a deleted product of A', (w) => ({ path: `/v1/products/${w.deletedProdA}`, body: { name: 'after' } }), {
  others: notFound,
});
write(EP.updateProduct, 'an unknown id', () => ({ path: `/v1/products/${unknownId()}`, body: { name: 'after' } }), { others: notFound });
const deleteProductOf = (org: (w: World) => string) => async (w: World) => {
  const id = await app.product(org(w));
  return {
    path: `/v1/products/${id}`,
    verify: async (_res: ApiResponse, accepted: boolean) => expect(await isDeleted('products', id)).toBe(accepted),
  };
};
write(
  EP.deleteProduct,
  'a fresh product of A',
  deleteProductOf((w) => w.A),
  {
    ...each(['adminA', 'memberA', 'oatA'], noContent),
    financeA: denied(R.writeProducts),
    others: notFound,
  },
);
write(
  EP.deleteProduct,
  'a fresh product of B',
  deleteProductOf((w) => w.B),
  {
    ...each(['adminB', 'oatB'], noContent),
    others: notFound,
  },
);
write(EP.deleteProduct, 'an unknown id', () => ({ path: `/v1/products/${unknownId()}` }), { others: notFound });

// customers
write(
  EP.createCustomer,
  'in A',
  (w) => {
    const email = `matrix-${randomUUID()}@example.com`;
    return {
      path: '/v1/customers/',
      body: { organization_id: w.A, email },
      verify: async (_res, accepted) => expect(await countWhere('customers', 'email', email)).toBe(accepted ? 1 : 0),
    };
  },
  {
    ...each(['adminA', 'memberA', 'oatA'], created(inOrganization((w) => w.A))),
    financeA: denied(R.writeCustomers),
    others: invalid('body', 'organization_id'),
  },
);
write(
  EP.createCustomer,
  'without organization_id',
  () => {
    const email = `matrix-${randomUUID()}@example.com`;
    return {
      path: '/v1/customers/',
      body: { email },
      verify: async (_res, accepted) => expect(await countWhere('customers', 'email', email)).toBe(accepted ? 1 : 0),
    };
  },
  {
    ...each(['oatA', 'oatB', 'oatC'], created(inOwnOrganization)),
    others: invalid('body', 'organization_id'),
  },
);
const updateCustomerOf = (org: (w: World) => string) => async (w: World) => {
  const id = await app.customer(org(w));
  return {
    path: `/v1/customers/${id}`,
    body: { first_name: 'Changed' },
    id,
    verify: async (_res: ApiResponse, accepted: boolean) =>
      expect((await app.sql('select first_name from rowgate.customers where id = $1', [id]))[0]!.first_name).toBe(
        accepted ? 'Changed' : null,
      ),
  };
};
write(
  EP.updateCustomer,
  'a fresh customer of A',
  updateCustomerOf((w) => w.A),
  {
    ...each(['adminA', 'memberA', 'oatA'], ok(sameId)),
    financeA: denied(R.writeCustomers),
    others: notFound,
  },
);
write(
  EP.updateCustomer,
  'a fresh customer of B',
  updateCustomerOf((w) => w.B),
  {
    ...each(['adminB', 'oatB'], ok(sameId)),
    others: notFound,
  },
);
write(EP.updateCustomer, 'an unknown id', () => ({ path: `/v1/customers/${unknownId()}`, body: { first_name: 'X' } }), {
  others: notFound,
});
const deleteCustomerOf = (org: (w: World) => string) => async (w: World) => {
  const id = await app.customer(org(w));
  return {
    path: `/v1/customers/${id}`,
    verify: async (_res: ApiResponse, accepted: boolean) => expect(await isDeleted('customers', id)).toBe(accepted),
  };
};
write(
  EP.deleteCustomer,
  'a fresh customer of A',
  deleteCustomerOf((w) => w.A),
  {
    ...each(['adminA', 'memberA', 'oatA'], noContent),
    financeA: denied(R.writeCustomers),
    others: notFound,
  },
);
write(
  EP.deleteCustomer,
  'a fresh customer of B',
  deleteCustomerOf((w) => w.B),
  {
    ...each(['adminB', 'oatB'], noContent),
    others: notFound,
  },
);
write(EP.deleteCustomer, 'an unknown id', () => ({ path: `/v1/customers/${unknownId()}` }), { others: notFound });

// orders (the organization is the product's)
const ordersOfCustomer = async (customerId: string) =>
  (await app.sql<{ id: string }>('select id from rowgate.orders where customer_id = $1', [customerId])).map((r) => r.id);
write(
  EP.createOrder,
  'a product and a customer of A',
  async (w) => {
    const customerId = await app.customer(w.A);
    return {
      path: '/v1/orders/',
      body: { customer_id: customerId, product_id: w.prodA },
      verify: async (res, accepted) => expect(await ordersOfCustomer(customerId)).toEqual(accepted ? [res.body.id] : []),
    };
  },
  {
    ...each(['adminA', 'memberA', 'oatA'], created(inOrganization((w) => w.A))),
    financeA: denied(R.writeOrders),
    others: invalid('body', 'product_id'),
  },
);
write(
  EP.createOrder,
  'a product of A for a customer of B',
  (w) => ({
    path: '/v1/orders/',
    body: { customer_id: w.custB, product_id: w.prodA },
    verify: async () =>
      expect(
        Number(
          (await app.sql('select count(*) as n from rowgate.orders where customer_id = $1 and product_id = $2', [w.custB, w.prodA]))[0]!.n,
        ),
      ).toBe(0),
  }),
  {
    ...each(['adminA', 'memberA', 'oatA'], invalid('body', 'customer_id')),
    financeA: denied(R.writeOrders),
    others: invalid('body', 'product_id'),
  },
);
const payOrderOf = (org: (w: World) => string) => async (w: World) => {
  const id = await fresh.order(w, org(w));
  return {
    path: `/v1/orders/${id}`,
    body: { status: 'paid' },
    id,
    verify: async (_res: ApiResponse, accepted: boolean) => {
      const [order] = await app.sql('select status from rowgate.orders where id = $1', [id]);
      expect(order!.status).toBe(accepted ? 'paid' : 'pending');
      expect(await countWhere('transactions', 'order_id', id)).toBe(accepted ? 1 : 0);
    },
  };
};
const paid: Check = (res, _w, t) => expect({ id: res.body.id, status: res.body.status }).toEqual({ id: t.id, status: 'paid' });
write(
  EP.updateOrder,
  'a fresh pending order of A → paid',
  payOrderOf((w) => w.A),
  {
    ...each(['adminA', 'memberA', 'oatA'], ok(paid)),
    financeA: denied(R.writeOrders),
    others: notFound,
  },
);
write(
  EP.updateOrder,
  'a fresh pending order of B → paid',
  payOrderOf((w) => w.B),
  {
    ...each(['adminB', 'oatB'], ok(paid)),
    others: notFound,
  },
);
write(EP.updateOrder, 'an unknown id', () => ({ path: `/v1/orders/${unknownId()}`, body: { status: 'paid' } }), { others: notFound });

// refunds: the orders:write permission; an order out of reach is a 422 at body.order_id (as any id a body names)
const refundsOfOrder = async (orderId: string) =>
  (await app.sql<{ amount: string }>('select amount from rowgate.refunds where order_id = $1', [orderId])).map((r) => Number(r.amount));
const refundOf =
  (org: (w: World) => string, status: 'paid' | 'pending' = 'paid', amount = 100) =>
  async (w: World) => {
    const organizationId = org(w);
    const id = organizationId === w.A ? await app.order(w.prodA, w.custA, status) : await app.order(w.prodB, w.custB, status);
    return {
      path: '/v1/refunds/',
      body: { order_id: id, amount, reason: 'duplicate' },
      id,
      verify: async (_res: ApiResponse, accepted: boolean) => {
        expect(await refundsOfOrder(id)).toEqual(accepted ? [amount] : []);
        const [order] = await app.sql('select refunded_amount::int as refunded from rowgate.orders where id = $1', [id]);
        expect(order!.refunded).toBe(accepted ? amount : 0);
      },
    };
  };
const refunded: Check = (res, _w, t) =>
  expect({ order_id: res.body.order_id, amount: res.body.amount }).toEqual({ order_id: t.id, amount: 100 });
write(
  EP.createRefund,
  'a fresh paid order of A',
  refundOf((w) => w.A),
  {
    ...each(['adminA', 'memberA', 'oatA'], created(refunded)),
    financeA: denied(R.writeOrders),
    others: invalid('body', 'order_id'),
  },
);
write(
  EP.createRefund,
  'a fresh paid order of B',
  refundOf((w) => w.B),
  {
    ...each(['adminB', 'oatB'], created(refunded)),
    others: invalid('body', 'order_id'),
  },
);
write(
  EP.createRefund,
  'a fresh pending order of A (only paid orders are refunded)',
  refundOf((w) => w.A, 'pending'),
  {
    ...each(['adminA', 'memberA', 'oatA'], invalid('body', 'order_id')),
    financeA: denied(R.writeOrders),
    others: invalid('body', 'order_id'),
  },
);
write(
  EP.createRefund,
  'more than a fresh paid order of A',
  refundOf((w) => w.A, 'paid', 1001),
  {
    ...each(['adminA', 'memberA', 'oatA'], invalid('body', 'amount')),
    financeA: denied(R.writeOrders),
    others: invalid('body', 'order_id'),
  },
);
write(EP.createRefund, 'an unknown order', () => ({ path: '/v1/refunds/', body: { order_id: unknownId(), amount: 1, reason: 'other' } }), {
  others: invalid('body', 'order_id'),
});

// payout accounts: web sessions, finance-write policy
const payoutCount = async (organizationId: string) =>
  Number(
    (
      await app.sql('select count(*) as n from rowgate.payout_accounts where organization_id = $1 and type = $2', [
        organizationId,
        'open_collective',
      ])
    )[0]!.n,
  );
write(
  EP.createPayoutAccount,
  'for A',
  async (w) => {
    const before = await payoutCount(w.A);
    return {
      path: '/v1/payout-accounts/',
      body: { organization_id: w.A, type: 'open_collective', country: 'US', currency: 'usd' },
      verify: async (_res, accepted) => expect(await payoutCount(w.A)).toBe(before + (accepted ? 1 : 0)),
    };
  },
  {
    adminA: created(inOrganization((w) => w.A)),
    ...each(['memberA', 'financeA'], denied(R.financeWrite)),
    others: invalid('body', 'organization_id'),
  },
  true,
);
write(
  EP.createPayoutAccount,
  'for C, which has no account',
  (w) => ({
    path: '/v1/payout-accounts/',
    body: { organization_id: w.C, type: 'open_collective', country: 'US', currency: 'usd' },
    verify: async () => expect(await payoutCount(w.C)).toBe(0),
  }),
  {
    adminA: denied(R.noAccount),
    others: invalid('body', 'organization_id'),
  },
);
const deletePayoutOf = (org: (w: World) => string) => async (w: World) => {
  const id = await fresh.payoutAccount(org(w));
  return {
    path: `/v1/payout-accounts/${id}`,
    verify: async (_res: ApiResponse, accepted: boolean) => expect(await isDeleted('payout_accounts', id)).toBe(accepted),
  };
};
write(
  EP.deletePayoutAccount,
  'a fresh one of A',
  deletePayoutOf((w) => w.A),
  {
    adminA: noContent,
    ...each(['memberA', 'financeA'], denied(R.financeWrite)),
    others: notFound,
  },
);
write(
  EP.deletePayoutAccount,
  'a fresh one of B',
  deletePayoutOf((w) => w.B),
  {
    adminB: noContent,
    others: notFound,
  },
);
write(EP.deletePayoutAccount, 'an unknown id', () => ({ path: `/v1/payout-accounts/${unknownId()}` }), { others: notFound });

// customer portal sessions: customers:write in the customer's organization
const sessionWorks =
  (kind: 'customer' | 'member') =>
  async (res: ApiResponse, accepted: boolean): Promise<void> => {
    if (!accepted) return;
    expect(res.body.token).toMatch(kind === 'customer' ? /^rg_cst_/ : /^rg_mst_/);
    const me = await app.get('/v1/customer-portal/customers/me', { token: res.body.token });
    expect({ status: me.status, id: me.body.id }).toEqual({ status: 200, id: res.body.customer_id });
  };
write(
  EP.createCustomerSession,
  'for a customer of A',
  (w) => ({
    path: '/v1/customer-sessions/',
    body: { customer_id: w.custA },
    id: w.custA,
    verify: sessionWorks('customer'),
  }),
  {
    ...each(
      ['adminA', 'memberA', 'oatA'],
      created((res, _w, t) => expect(res.body.customer_id).toBe(t.id)),
    ),
    financeA: denied(R.writeCustomers),
    others: invalid('body', 'customer_id'),
  },
);
write(
  EP.createCustomerSession,
  'for a member seat of a customer of A',
  (w) => ({
    path: '/v1/customer-sessions/',
    body: { customer_id: w.custA, member_id: w.seatA },
    id: w.seatA,
    verify: sessionWorks('member'),
  }),
  {
    ...each(
      ['adminA', 'memberA', 'oatA'],
      created((res, _w, t) => expect(res.body.member_id).toBe(t.id)),
    ),
    financeA: denied(R.writeCustomers),
    others: invalid('body', 'customer_id'),
  },
);
write(
  EP.createCustomerSession,
  'for a customer of B',
  (w) => ({
    path: '/v1/customer-sessions/',
    body: { customer_id: w.custB },
    id: w.custB,
    verify: sessionWorks('customer'),
  }),
  {
    ...each(
      ['adminB', 'oatB'],
      created((res, _w, t) => expect(res.body.customer_id).toBe(t.id)),
    ),
    others: invalid('body', 'customer_id'),
  },
);

// the portal: a member seat is read-only
write(
  EP.portalUpdateMe,
  "the current customer's name",
  (w) => {
    const firstName = `Jo ${randomUUID().slice(0, 8)}`;
    return {
      path: '/v1/customer-portal/customers/me',
      body: { first_name: firstName },
      id: w.custA,
      verify: async (_res, accepted) => {
        const [row] = await app.sql('select first_name from rowgate.customers where id = $1', [w.custA]);
        if (accepted) expect(row!.first_name).toBe(firstName);
        else expect(row!.first_name).not.toBe(firstName);
      },
    };
  },
  {
    customerA: ok(sameId),
    seatA: denied(R.seatReadOnly),
  },
);

// impersonation: platform admins, with their own web session
write(
  EP.createImpersonation,
  'of memberA',
  (w) => ({
    path: '/v1/impersonations/',
    body: { user_id: w.u.memberA.id },
    id: w.u.memberA.id,
    verify: async (res, accepted) => {
      if (!accepted) return;
      // the new session reads as memberA, and writes nothing
      const products = await app.get(`/v1/products/?limit=100&organization_id=${w.B}&organization_id=${w.A}`, { session: res.body.token });
      const live = await app.sql<{ id: string }>('select id from rowgate.products where organization_id = $1 and deleted_at is null', [
        w.A,
      ]);
      expect(products.body.items.map((p: { id: string }) => p.id).sort()).toEqual(
        live
          .map((p) => p.id)
          .sort()
          .slice(0, 100),
      );
      expectInsufficientScope(
        await app.post(
          '/v1/products/',
          { organization_id: w.A, name: 'x', price_amount: 1, price_currency: 'usd' },
          { session: res.body.token },
        ),
        ['products_write'],
      );
    },
  }),
  {
    platformAdmin: created((res, _w, t) =>
      expect({ user_id: res.body.user_id, scopes: [...res.body.scopes].sort() }).toEqual({
        user_id: t.id,
        scopes: [...READ_SCOPES].sort(),
      }),
    ),
    others: denied(R.platformAdminsOnly),
  },
);

// member seats: changes need customers:write (financeA lacks it)
const seatsOf = async (customerId: string, email: string) =>
  Number(
    (
      await app.sql('select count(*) as n from rowgate.customer_members where customer_id = $1 and email = $2 and deleted_at is null', [
        customerId,
        email,
      ])
    )[0]!.n,
  );
const addSeatTo = (customer: (w: World) => string) => (w: World) => {
  const email = `seat-${randomUUID()}@example.com`;
  return {
    path: `/v1/customers/${customer(w)}/members`,
    body: { email, role: 'billing_manager' },
    verify: async (_res: ApiResponse, accepted: boolean) => expect(await seatsOf(customer(w), email)).toBe(accepted ? 1 : 0),
  };
};
const seatAdded: Check = (res, _w, t) =>
  expect({ email: res.body.email, role: res.body.role }).toEqual({ email: (t.body as { email: string }).email, role: 'billing_manager' });
write(
  EP.createCustomerMember,
  'a seat of custA',
  addSeatTo((w) => w.custA),
  {
    ...each(['adminA', 'memberA', 'oatA'], created(seatAdded)),
    financeA: denied(R.writeCustomers),
    others: notFound,
  },
);
write(
  EP.createCustomerMember,
  'a seat of custB',
  addSeatTo((w) => w.custB),
  {
    ...each(['adminB', 'oatB'], created(seatAdded)),
    others: notFound,
  },
);
write(
  EP.createCustomerMember,
  "a seat of custA with seatA's e-mail",
  async (w) => {
    const [seat] = await app.sql<{ email: string }>('select email from rowgate.customer_members where id = $1', [w.seatA]);
    return {
      path: `/v1/customers/${w.custA}/members`,
      body: { email: seat!.email.toUpperCase() },
      verify: async () => expect(await seatsOf(w.custA, seat!.email)).toBe(1),
    };
  },
  {
    ...each(['adminA', 'memberA', 'oatA'], invalid('body', 'email')),
    financeA: denied(R.writeCustomers),
    others: notFound,
  },
);
write(
  EP.createCustomerMember,
  'of an unknown customer',
  () => ({ path: `/v1/customers/${unknownId()}/members`, body: { email: 'x@example.com' } }),
  {
    others: notFound,
  },
);
const changeSeatOf = (org: (w: World) => string) => async (w: World) => {
  const customerId = await app.customer(org(w));
  const id = await app.customerMember(customerId);
  return {
    path: `/v1/customers/${customerId}/members/${id}`,
    body: { role: 'owner', name: 'Changed' },
    id,
    verify: async (_res: ApiResponse, accepted: boolean) =>
      expect((await app.sql('select role, name from rowgate.customer_members where id = $1', [id]))[0]).toEqual(
        accepted ? { role: 'owner', name: 'Changed' } : { role: 'member', name: null },
      ),
  };
};
write(
  EP.updateCustomerMember,
  'a fresh seat of A',
  changeSeatOf((w) => w.A),
  {
    ...each(['adminA', 'memberA', 'oatA'], ok(sameId)),
    financeA: denied(R.writeCustomers),
    others: notFound,
  },
);
write(
  EP.updateCustomerMember,
  'a fresh seat of B',
  changeSeatOf((w) => w.B),
  {
    ...each(['adminB', 'oatB'], ok(sameId)),
    others: notFound,
  },
);
write(
  EP.updateCustomerMember,
  'seatA under another customer of A',
  (w) => ({ path: `/v1/customers/${w.custA2}/members/${w.seatA}`, body: { name: 'X' } }),
  { others: notFound },
);
/** a fresh seat with a live member session: removing the seat ends the session at once */
const removeSeatOf = (org: (w: World) => string) => async (w: World) => {
  const customerId = await app.customer(org(w));
  const id = await app.customerMember(customerId);
  const token = await app.memberSession(id);
  return {
    path: `/v1/customers/${customerId}/members/${id}`,
    verify: async (_res: ApiResponse, accepted: boolean) => {
      expect(await isDeleted('customer_members', id)).toBe(accepted);
      const me = await app.get('/v1/customer-portal/customers/me', { token });
      expect(me.status).toBe(accepted ? 401 : 200);
    },
  };
};
write(
  EP.deleteCustomerMember,
  'a fresh seat of A',
  removeSeatOf((w) => w.A),
  {
    ...each(['adminA', 'memberA', 'oatA'], noContent),
    financeA: denied(R.writeCustomers),
    others: notFound,
  },
);
write(
  EP.deleteCustomerMember,
  'a fresh seat of B',
  removeSeatOf((w) => w.B),
  {
    ...each(['adminB', 'oatB'], noContent),
    others: notFound,
  },
);
write(EP.deleteCustomerMember, 'an unknown seat of custA', (w) => ({ path: `/v1/customers/${w.custA}/members/${unknownId()}` }), {
  others: notFound,
});

// roles (SPEC §21): defined, changed and deleted by member managers (users)
const roleOf = async (organizationId: string, name: string) =>
  (
    await app.sql<{ description: string | null }>(
      'select description from rowgate.organization_roles where organization_id = $1 and name = $2 and deleted_at is null',
      [organizationId, name],
    )
  )[0];
const freshRole = async (organizationId: string) => {
  const name = `r-${randomUUID().slice(0, 8)}`;
  await app.sql('insert into rowgate.organization_roles (organization_id, name, permissions) values ($1, $2, $3)', [
    organizationId,
    name,
    ['products:write'],
  ]);
  return name;
};
const manageMembersInA: Expectations = {
  ...each(['memberA', 'financeA'], denied(R.manageMembers)),
  oatA: denied(R.onlyUsersMembers),
  others: notFound,
};
write(
  EP.createRole,
  'in A',
  (w) => {
    const name = `r-${randomUUID().slice(0, 8)}`;
    return {
      path: `/v1/organizations/${w.A}/roles`,
      body: { name, permissions: ['products:write'] },
      verify: async (_res: ApiResponse, accepted: boolean) => expect(!!(await roleOf(w.A, name))).toBe(accepted),
    };
  },
  { adminA: created(), ...manageMembersInA },
);
write(
  EP.updateRole,
  'a fresh role of A',
  async (w) => {
    const name = await freshRole(w.A);
    return {
      path: `/v1/organizations/${w.A}/roles/${name}`,
      body: { description: 'changed' },
      verify: async (_res: ApiResponse, accepted: boolean) =>
        expect((await roleOf(w.A, name))!.description).toBe(accepted ? 'changed' : null),
    };
  },
  { adminA: ok(), ...manageMembersInA },
);
write(
  EP.deleteRole,
  'a fresh role of A',
  async (w) => {
    const name = await freshRole(w.A);
    return {
      path: `/v1/organizations/${w.A}/roles/${name}`,
      verify: async (_res: ApiResponse, accepted: boolean) => expect(!!(await roleOf(w.A, name))).toBe(!accepted),
    };
  },
  { adminA: noContent, ...manageMembersInA },
);
write(EP.deleteRole, 'a role of B', async (w) => ({ path: `/v1/organizations/${w.B}/roles/${await freshRole(w.B)}` }), {
  adminB: noContent,
  oatB: denied(R.onlyUsersMembers),
  others: notFound,
});

// invitations
const invitationStatus = async (id: string) =>
  (await app.sql<{ status: string }>('select status from rowgate.invitations where id = $1', [id]))[0]?.status ?? null;
const freshInvitation = async (organizationId: string, email: string, invitedBy: string) =>
  (
    await app.sql<{ id: string }>(
      `insert into rowgate.invitations (organization_id, email, role, invited_by) values ($1, $2, 'member', $3) returning id`,
      [organizationId, email, invitedBy],
    )
  )[0]!.id;
write(
  EP.createInvitation,
  'to A',
  (w) => {
    const email = `invited-${randomUUID()}@example.com`;
    return {
      path: `/v1/organizations/${w.A}/invitations`,
      body: { email, role: 'member' },
      verify: async (_res: ApiResponse, accepted: boolean) => {
        const [row] = await app.sql('select count(*)::int as n from rowgate.invitations where organization_id = $1 and email = $2', [
          w.A,
          email,
        ]);
        expect(row.n).toBe(accepted ? 1 : 0);
      },
    };
  },
  { adminA: created(), ...manageMembersInA },
);
write(
  EP.revokeInvitation,
  'a fresh invitation of A',
  async (w) => {
    const id = await freshInvitation(w.A, `invited-${randomUUID()}@example.com`, w.u.adminA.id);
    return {
      path: `/v1/organizations/${w.A}/invitations/${id}`,
      verify: async (_res: ApiResponse, accepted: boolean) => expect(await invitationStatus(id)).toBe(accepted ? 'revoked' : 'pending'),
    };
  },
  { adminA: noContent, ...manageMembersInA },
);
const invitedOutsider = (status: string) => async (w: World) => {
  const organizationId = await fresh.organizationLikeA(w);
  const id = await freshInvitation(organizationId, w.u.outsider.email, w.u.adminA.id);
  return {
    path: `/v1/invitations/${id}/${status === 'accepted' ? 'accept' : 'decline'}`,
    verify: async (_res: ApiResponse, accepted: boolean) => {
      expect(await invitationStatus(id)).toBe(accepted ? status : 'pending');
      expect(await membershipOf(organizationId, w.u.outsider.id)).toBe(accepted && status === 'accepted' ? 'member' : null);
    },
  };
};
write(EP.acceptInvitation, "a fresh invitation to the outsider's address", invitedOutsider('accepted'), {
  outsider: created((res) => expect(res.body.role).toBe('member')),
  others: notFound,
});
write(EP.declineInvitation, "a fresh invitation to the outsider's address", invitedOutsider('declined'), {
  outsider: noContent,
  others: notFound,
});

// leaving: any member of a fresh organization like A; its only admin cannot
write(
  EP.leave,
  'a fresh organization like A',
  async (w) => {
    const organizationId = await fresh.organizationLikeA(w);
    return {
      path: `/v1/organizations/${organizationId}/members/me`,
      verify: async (_res: ApiResponse, accepted: boolean, principal: Principal) => {
        const userId = w.userOf[principal];
        if (accepted) expect(await membershipOf(organizationId, userId!)).toBe(null);
        else expect(await membershipOf(organizationId, w.u.adminA.id)).toBe('admin');
      },
    };
  },
  {
    adminA: invalid('path', 'id'),
    ...each(['memberA', 'financeA'], noContent),
    others: notFound,
  },
);

// ---------------------------------------------------------------------------------
// Generation

interface Generated {
  name: string;
  c: Case;
  credential: CredentialPlan;
  outcome: Outcome;
}

/** SPEC §5 steps 1 and 2 from the declared access; the rest as declared. */
function outcomeFor(c: Case, credential: CredentialPlan): Outcome {
  if (!c.endpoint.accepts.includes(credential.kind)) return { kind: 'unauthorized' };
  if (!c.endpoint.scopes.some((s) => credential.scopes.has(s))) return { kind: 'scope' };
  const p = credential.principal;
  const declared = c.expect[p] ?? (FALLBACK[p] ? c.expect[FALLBACK[p]!] : undefined) ?? c.expect.others;
  if (!declared) throw new Error(`${c.endpoint.method} ${c.endpoint.path} [${c.label}]: no expectation for ${p}`);
  return declared;
}

const generated: Generated[] = cases.flatMap((c) =>
  CREDENTIALS.map((credential) => {
    const outcome = outcomeFor(c, credential);
    return {
      c,
      credential,
      outcome,
      name: `${c.endpoint.method} ${c.endpoint.path} [${c.label}] as ${credential.principal} (${credential.kind}) → ${describeOutcome(outcome)}`,
    };
  }),
);

function assertOutcome(res: ApiResponse, outcome: Outcome, t: Target, principal: Principal) {
  const context = JSON.stringify(res.body);
  switch (outcome.kind) {
    case 'unauthorized':
      // a valid credential of a kind the endpoint does not take: no error="invalid_token" (SPEC §16)
      expectUnauthorized(res, false);
      return;
    case 'scope':
      expect(res.body?.error, context).toBe('InsufficientScope');
      return;
    case 'notFound':
      expect({ status: res.status, body: res.body }).toEqual({
        status: 404,
        body: { error: 'ResourceNotFound', detail: expect.any(String) },
      });
      return;
    case 'denied':
      expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { error: 'NotPermitted', detail: outcome.reason } });
      return;
    case 'invalid': {
      expect(res.status, context).toBe(422);
      const issues = expectValidationError(res);
      expect(
        issues.map((i) => i.loc),
        context,
      ).toContainEqual(outcome.loc);
      return;
    }
    case 'rows': {
      expect(res.status, context).toBe(200);
      const ids = (res.body.items as Record<string, string>[]).map((item) => item[outcome.key]).sort();
      expect(ids).toEqual([...outcome.ids(world)].sort());
      expect(res.body.pagination.total_count).toBe(ids.length);
      return;
    }
    case 'ok':
      expect(res.status, context).toBe(outcome.status);
      if (outcome.status === 204) expect(res.body).toBe('');
      outcome.check?.(res, world, t, principal);
      return;
  }
}

async function run(g: Generated) {
  const t = await g.c.target(world);
  const options = world.credentials.get(credentialKey(g.credential));
  expect(options, credentialKey(g.credential)).toBeDefined();
  const res = await app.request(g.c.endpoint.method, t.path, { ...options, ...(t.body === undefined ? {} : { body: t.body }) });
  if (g.outcome.kind === 'scope') expectInsufficientScope(res, g.c.endpoint.scopes);
  else if (g.outcome.kind !== 'unauthorized') expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
  assertOutcome(res, g.outcome, t, g.credential.principal);
  await t.verify?.(res, res.status < 300, g.credential.principal);
}

// the tests of one case run side by side (their requests and fresh rows are their own)
vi.setConfig({ maxConcurrency: 8 });

beforeAll(async () => {
  app = await startTestApp();
  world = await buildWorld();
  console.log(
    `authorization matrix: ${cases.length} declared cases × ${CREDENTIALS.length} credentials = ${generated.length} generated tests`,
  );
});
afterAll(async () => app?.close());

describe('the matrix itself', () => {
  test('the scopes declared here are those of the database (SPEC §3)', async () => {
    const scopes = (await app.sql<{ name: string }>('select name from rowgate_private.scopes')).map((r) => r.name);
    expect(scopes.sort()).toEqual([...ALL_SCOPES, ...PORTAL_SCOPES].sort());
    const [{ read_scopes }] = (await app.sql('select rowgate_private.read_scopes()')) as [{ read_scopes: string[] }];
    expect([...read_scopes].sort()).toEqual([...READ_SCOPES].sort());
  });

  test('every endpoint declared here is in the route table with the access declared here', () => {
    const routes = apiRoutes.filter((r): r is ApiRoute => r.access !== null);
    for (const endpoint of Object.values(EP)) {
      const route = routes.find((r) => r.method.toUpperCase() === endpoint.method && r.path === endpoint.path);
      expect(route, `${endpoint.method} ${endpoint.path}`).toBeDefined();
      expect({ credentials: [...route!.access.credentials].sort(), scopes: [...route!.access.scopes].sort() }).toEqual({
        credentials: [...endpoint.accepts].sort(),
        scopes: [...endpoint.scopes].sort(),
      });
    }
  });

  test('every declared endpoint has cases, and every credential is minted', () => {
    for (const endpoint of Object.values(EP))
      expect(
        cases.some((c) => c.endpoint === endpoint),
        `${endpoint.method} ${endpoint.path}`,
      ).toBe(true);
    for (const credential of CREDENTIALS) expect(world.credentials.has(credentialKey(credential)), credentialKey(credential)).toBe(true);
  });

  test('the impersonation session: refused (InsufficientScope) on every write, admitted on every read of organization data', () => {
    const impersonation = generated.filter(
      (g) => g.credential.principal === 'impersonation' && !g.c.endpoint.accepts.includes('customer_session'),
    );
    const writes = impersonation.filter((g) => g.c.endpoint.method !== 'GET');
    const reads = impersonation.filter((g) => g.c.endpoint.method === 'GET');
    expect(writes.length).toBeGreaterThan(50);
    expect(writes.filter((g) => g.outcome.kind !== 'scope').map((g) => g.name)).toEqual([]);
    expect(reads.filter((g) => g.outcome.kind === 'scope' || g.outcome.kind === 'unauthorized').map((g) => g.name)).toEqual([]);
  });

  test('customers and member seats reach no organization endpoint; users and tokens reach no portal endpoint', () => {
    for (const g of generated) {
      const portalSubject = g.credential.principal === 'customerA' || g.credential.principal === 'seatA';
      const portalEndpoint = g.c.endpoint.path.startsWith('/v1/customer-portal/');
      if (portalSubject !== portalEndpoint) expect(g.outcome.kind, g.name).toBe('unauthorized');
    }
  });

  test('the generated matrix covers every outcome of SPEC §5', () => {
    const kinds = new Set(generated.map((g) => g.outcome.kind));
    expect([...kinds].sort()).toEqual(['denied', 'invalid', 'notFound', 'ok', 'rows', 'scope', 'unauthorized']);
    expect(generated.length).toBe(cases.length * CREDENTIALS.length);
    // reads first: no write may run before a read
    const firstWrite = cases.findIndex((c) => c.writes);
    expect(cases.slice(firstWrite).every((c) => c.writes)).toBe(true);
  });
});

describe('reads', () => {
  for (const c of cases.filter((c) => !c.writes)) {
    describe.concurrent(`${c.endpoint.method} ${c.endpoint.path} [${c.label}]`, () => {
      for (const g of generated.filter((g) => g.c === c)) test(g.name, () => run(g));
    });
  }
});

describe('writes', () => {
  for (const c of cases.filter((c) => c.writes)) {
    (c.serial ? describe : describe.concurrent)(`${c.endpoint.method} ${c.endpoint.path} [${c.label}]`, () => {
      for (const g of generated.filter((g) => g.c === c)) test(g.name, () => run(g));
    });
  }
});
