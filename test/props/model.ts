// The reference model of the tenant-isolation property: a small world
// of organizations, users, memberships, resources and credentials, written down
// symbolically (indices, flags) so that fast-check can generate and shrink it,
// and a model in plain TypeScript of what each credential may see and do. The
// model follows SPEC §2–§6 and §9; it knows nothing of the SQL that implements them.
import fc from 'fast-check';

/** a built-in role, or one an organization defined (SPEC §21): `c<n>` in the model's worlds */
export type Role = string;
export const ROLES: readonly Role[] = ['admin', 'member', 'finance'];

export const PERMISSIONS: Record<Role, readonly string[]> = {
  admin: [
    'organization:manage',
    'members:manage',
    'finance:manage',
    'finance:read',
    'access_tokens:manage',
    'products:write',
    'customers:write',
    'orders:write',
  ],
  member: ['products:write', 'customers:write', 'orders:write'],
  finance: ['finance:read'],
};

/** every permission of SPEC §5 (the admin role's) */
export const ALL_PERMISSIONS: readonly string[] = PERMISSIONS.admin!;

export const USER_SCOPES = ['user:read', 'user:write', 'payouts:read', 'payouts:write'] as const;
export const ORGANIZATION_SCOPES = [
  'organizations_read',
  'organizations_write',
  'members_read',
  'members_write',
  'products_read',
  'products_write',
  'customers_read',
  'customers_write',
  'orders_read',
  'orders_write',
  'transactions_read',
  'transactions_write',
  'payouts_read',
  'payouts_write',
  'organization_access_tokens_read',
  'organization_access_tokens_write',
  'customer_sessions_write',
  'refunds_read',
  'refunds_write',
  'events_read',
  'webhooks_read',
  'webhooks_write',
] as const;
export const ALL_SCOPES: readonly string[] = [...USER_SCOPES, ...ORGANIZATION_SCOPES];
/** what an impersonation session carries: every read scope */
export const READ_SCOPES: readonly string[] = ALL_SCOPES.filter((s) => s.endsWith('read'));
export const PORTAL_SCOPES = ['customer_portal_read', 'customer_portal_write'];

/** a write scope implies its read scope (SPEC §3) */
export function expandScopes(scopes: readonly string[]): Set<string> {
  const out = new Set(scopes);
  for (const s of scopes) {
    if (s.endsWith('_write')) out.add(s.replace(/_write$/, '_read'));
    if (s.endsWith(':write')) out.add(s.replace(/:write$/, ':read'));
  }
  return out;
}

// ---------------------------------------------------------------------------
// The world, symbolically: what fast-check generates and shrinks.

export interface OrgSpec {
  deleted: boolean;
  /** the index of the user who administers its account, when it has one */
  accountAdmin: number | null;
}
export interface MembershipSpec {
  user: number;
  org: number;
  /** a built-in role, or `custom<k>`: the k-th role its organization defined (a built-in `member` when it defined none) */
  role: Role;
  removed: boolean;
}
/** a role an organization defines (SPEC §21), with a generated set of permissions */
export interface CustomRoleSpec {
  org: number;
  permissions: string[];
}
export interface ProductSpec {
  org: number;
  archived: boolean;
  deleted: boolean;
}
export interface CustomerSpec {
  org: number;
  deleted: boolean;
}
export interface SeatSpec {
  customer: number;
  deleted: boolean;
}
export interface OrderSpec {
  product: number;
  customer: number;
  status: 'pending' | 'paid' | 'refunded';
}
export interface PayoutSpec {
  org: number;
  deleted: boolean;
}
export type CredentialSpec =
  | { kind: 'web_session'; user: number; impersonation: boolean; dead: boolean }
  | { kind: 'personal_access_token'; user: number; scopes: string[]; dead: boolean }
  | { kind: 'oauth2_user_token'; user: number; scopes: string[]; dead: boolean }
  | { kind: 'organization_access_token'; org: number; scopes: string[]; dead: boolean }
  | { kind: 'oauth2_organization_token'; user: number; org: number; scopes: string[]; dead: boolean }
  | { kind: 'customer_session'; customer: number; dead: boolean }
  | { kind: 'member_session'; seat: number; dead: boolean };

export interface WorldSpec {
  users: { deleted: boolean }[];
  orgs: OrgSpec[];
  customRoles: CustomRoleSpec[];
  memberships: MembershipSpec[];
  products: ProductSpec[];
  customers: CustomerSpec[];
  seats: SeatSpec[];
  orders: OrderSpec[];
  payouts: PayoutSpec[];
  credentials: CredentialSpec[];
  /** the user the analyst login is bound to */
  analyst: number;
}

/** true `weight`% of the time (unbiased: fast-check's bias towards small integers would skew it) */
const sometimes = (weight: number) => fc.noBias(fc.integer({ min: 0, max: 99 })).map((n) => n < weight);

/** scopes biased towards useful ones: half the time a random subset, else a preset */
const scopesArb = (all: readonly string[]): fc.Arbitrary<string[]> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.subarray([...all]).map((xs) => [...xs]) },
    { weight: 1, arbitrary: fc.constant<string[]>(all.filter((s) => s.endsWith('read'))) },
    { weight: 1, arbitrary: fc.constant<string[]>([...all]) },
  );

export function worldArb(): fc.Arbitrary<WorldSpec> {
  return fc.record({ nUsers: fc.integer({ min: 1, max: 4 }), nOrgs: fc.integer({ min: 1, max: 3 }) }).chain(({ nUsers, nOrgs }) => {
    const user = fc.nat({ max: nUsers - 1 });
    const org = fc.nat({ max: nOrgs - 1 });
    const pairs = Array.from({ length: nUsers * nOrgs }, (_, i) => ({ user: i % nUsers, org: Math.floor(i / nUsers) }));
    return fc
      .record({
        users: fc.array(fc.record({ deleted: sometimes(10) }), { minLength: nUsers, maxLength: nUsers }),
        orgs: fc.array(fc.record({ deleted: sometimes(10), accountAdmin: fc.option(user, { freq: 2 }) }), {
          minLength: nOrgs,
          maxLength: nOrgs,
        }),
        customRoles: fc.array(fc.record({ org, permissions: fc.subarray([...ALL_PERMISSIONS]) }), { maxLength: 4 }),
        // at most one membership per (user, organization): present or not, removed or live
        memberships: fc
          .tuple(
            ...pairs.map((p) =>
              fc
                .option(fc.record({ role: fc.constantFrom(...ROLES, 'custom0', 'custom1', 'custom2'), removed: sometimes(20) }), {
                  freq: 4,
                })
                .map((m) => (m ? { ...p, ...m } : null)),
            ),
          )
          .map((ms) => ms.filter((m): m is MembershipSpec => m !== null)),
        products: fc.array(fc.record({ org, archived: sometimes(30), deleted: sometimes(20) }), { maxLength: 5 }),
        customers: fc.array(fc.record({ org, deleted: sometimes(20) }), { maxLength: 4 }),
        seats: fc.array(fc.record({ customer: fc.nat({ max: 3 }), deleted: sometimes(20) }), { maxLength: 2 }),
        orders: fc.array(
          fc.record({
            product: fc.nat({ max: 4 }),
            customer: fc.nat({ max: 3 }),
            status: fc.constantFrom('pending' as const, 'paid' as const, 'refunded' as const),
          }),
          { maxLength: 5 },
        ),
        payouts: fc.array(fc.record({ org, deleted: sometimes(20) }), { maxLength: 3 }),
        credentials: fc.array(credentialArb(user, org), { minLength: 1, maxLength: 6 }),
        analyst: user,
      })
      .map((w) => w);
  });
}

function credentialArb(user: fc.Arbitrary<number>, org: fc.Arbitrary<number>): fc.Arbitrary<CredentialSpec> {
  const dead = sometimes(8);
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('web_session' as const), user, impersonation: sometimes(20), dead }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('personal_access_token' as const), user, scopes: scopesArb(ALL_SCOPES), dead }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('oauth2_user_token' as const), user, scopes: scopesArb(ALL_SCOPES), dead }) },
    {
      weight: 3,
      arbitrary: fc.record({ kind: fc.constant('organization_access_token' as const), org, scopes: scopesArb(ORGANIZATION_SCOPES), dead }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('oauth2_organization_token' as const),
        user,
        org,
        scopes: scopesArb(ORGANIZATION_SCOPES),
        dead,
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('customer_session' as const), customer: fc.nat({ max: 3 }), dead }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('member_session' as const), seat: fc.nat({ max: 1 }), dead }) },
  );
}

// ---------------------------------------------------------------------------
// Operations: what a probe does, symbolically (indices are taken modulo the
// current number of things, so a shrunk world still gives each probe a target).

export const OPERATIONS = [
  'organizations:list',
  'organizations:get',
  'organizations:update',
  'organizations:create',
  'organizations:delete',
  'members:list',
  'members:update',
  'members:remove',
  'organizations:get_account',
  'accounts:get',
  'products:list',
  'products:get',
  'products:create',
  'products:update',
  'products:delete',
  'customers:list',
  'customers:get',
  'customers:create',
  'customers:update',
  'customers:delete',
  'customer_members:list_all',
  'customer_members:list',
  'customer_members:create',
  'customer_members:delete',
  'orders:list',
  'orders:get',
  'orders:create',
  'orders:update',
  'transactions:list',
  'metadata:list',
  'refunds:list',
  'refunds:create',
  'payout_accounts:list',
  'payout_accounts:get',
  'customer_portal:me',
  'customer_portal:list_orders',
  'customer_portal:get_order',
] as const;
export type Operation = (typeof OPERATIONS)[number];

export interface Probe {
  credential: number;
  /** an operation the credential's kind is meant for (most probes), or any operation */
  fitting: boolean;
  op: number;
  /** target indices (organization, resource, user, role…), each taken modulo what exists */
  a: number;
  b: number;
  c: number;
}

export const probeArb: fc.Arbitrary<Probe> = fc.record({
  credential: fc.nat({ max: 7 }),
  fitting: sometimes(85),
  op: fc.nat({ max: OPERATIONS.length - 1 }),
  a: fc.nat({ max: 7 }),
  b: fc.nat({ max: 7 }),
  c: fc.nat({ max: 7 }),
});

// ---------------------------------------------------------------------------
// The model's state: the world with ids, mutable as writes succeed.

export interface MUser {
  id: string;
  email: string;
  deleted: boolean;
}
export interface MOrg {
  id: string;
  slug: string;
  deleted: boolean;
  account: { id: string; admin: number } | null;
}
export interface MRole {
  id: string;
  org: number;
  name: string;
  permissions: readonly string[];
}
export interface MMembership {
  id: string;
  user: number;
  org: number;
  role: Role;
  removed: boolean;
}
export interface MProduct {
  id: string;
  org: number;
  /** the world's rows carry metadata {"tag": "t<tag>"}; rows the probes create carry none */
  tag?: number;
  archived: boolean;
  deleted: boolean;
}
export interface MCustomer {
  id: string;
  org: number;
  /** the world's rows carry metadata {"tag": "t<tag>"}; rows the probes create carry none */
  tag?: number;
  deleted: boolean;
}
export interface MSeat {
  id: string;
  customer: number;
  deleted: boolean;
}
export interface MOrder {
  id: string;
  org: number;
  /** as MProduct's */
  tag?: number;
  customer: number;
  product: number;
  status: 'pending' | 'paid' | 'refunded';
  /** how many refunds it has (SPEC §18): partial ones, and the one a status change to refunded writes */
  refunds: number;
}
export interface MPayout {
  id: string;
  org: number;
  deleted: boolean;
}
export type MCredential = CredentialSpec & { token: string };

export interface Model {
  users: MUser[];
  orgs: MOrg[];
  customRoles: MRole[];
  memberships: MMembership[];
  products: MProduct[];
  customers: MCustomer[];
  seats: MSeat[];
  orders: MOrder[];
  payouts: MPayout[];
  credentials: MCredential[];
  analyst: number;
}

export type Subject =
  /** web: a web session (or an analyst, who counts as one): what payout accounts take (SPEC §4) */
  | { kind: 'user'; user: number; scopes: Set<string>; impersonation: boolean; web: boolean }
  | { kind: 'organization'; org: number; scopes: Set<string> }
  | { kind: 'customer'; customer: number; scopes: Set<string> }
  | { kind: 'member'; seat: number; customer: number; scopes: Set<string> };

const live = <T extends { deleted: boolean }>(x: T | undefined): x is T => !!x && !x.deleted;

/** rowgate_private.authenticate, in the model: the subject a credential names, or null */
export function authenticate(m: Model, c: MCredential): Subject | null {
  if (c.dead) return null;
  switch (c.kind) {
    case 'web_session':
      return live(m.users[c.user])
        ? {
            kind: 'user',
            user: c.user,
            scopes: new Set(c.impersonation ? READ_SCOPES : ALL_SCOPES),
            impersonation: c.impersonation,
            web: true,
          }
        : null;
    case 'personal_access_token':
    case 'oauth2_user_token':
      return live(m.users[c.user])
        ? { kind: 'user', user: c.user, scopes: expandScopes(c.scopes), impersonation: false, web: false }
        : null;
    case 'organization_access_token':
      return live(m.orgs[c.org]) ? { kind: 'organization', org: c.org, scopes: expandScopes(c.scopes) } : null;
    case 'oauth2_organization_token':
      // acts for the organization while the user who granted it still manages its access tokens
      return live(m.users[c.user]) && live(m.orgs[c.org]) && hasPermission(m, c.user, c.org, 'access_tokens:manage')
        ? { kind: 'organization', org: c.org, scopes: expandScopes(c.scopes) }
        : null;
    case 'customer_session': {
      const customer = m.customers[c.customer];
      return live(customer) && live(m.orgs[customer.org])
        ? { kind: 'customer', customer: c.customer, scopes: new Set(PORTAL_SCOPES) }
        : null;
    }
    case 'member_session': {
      const seat = m.seats[c.seat];
      const customer = seat && m.customers[seat.customer];
      return live(seat) && live(customer) && live(m.orgs[customer.org])
        ? { kind: 'member', seat: c.seat, customer: seat.customer, scopes: new Set(PORTAL_SCOPES) }
        : null;
    }
  }
}

export function liveMembership(m: Model, user: number, org: number): MMembership | undefined {
  return m.memberships.find((x) => x.user === user && x.org === org && !x.removed);
}

/** what a role grants in an organization: a built-in role's permissions, or the organization's own role's (SPEC §21) */
export function rolePermissions(m: Model, org: number, role: Role): readonly string[] {
  return PERMISSIONS[role] ?? m.customRoles.find((r) => r.org === org && r.name === role)?.permissions ?? [];
}

function hasPermission(m: Model, user: number, org: number, permission: string): boolean {
  const membership = liveMembership(m, user, org);
  return !!membership && live(m.orgs[org]) && rolePermissions(m, org, membership.role).includes(permission);
}

/** every permission of `role` is one the user holds in the organization (SPEC §21: no escalation) */
function holdsAll(m: Model, user: number, org: number, role: Role): boolean {
  return rolePermissions(m, org, role).every((p) => hasPermission(m, user, org, p));
}

/** the organizations a subject reaches; with a permission, a User's only where its role grants it */
export function reach(m: Model, s: Subject | null, permission?: string): Set<number> {
  const out = new Set<number>();
  if (s?.kind === 'user') {
    for (const x of m.memberships) {
      if (x.user === s.user && !x.removed && live(m.orgs[x.org]) && (!permission || rolePermissions(m, x.org, x.role).includes(permission)))
        out.add(x.org);
    }
  } else if (s?.kind === 'organization' && live(m.orgs[s.org])) {
    out.add(s.org);
  }
  return out;
}

/** finance-read / finance-write policy (SPEC §5); the organization is reachable */
export function financeDenial(m: Model, s: Subject, org: number, write: boolean): string | null {
  if (s.kind === 'organization' && !write) return null;
  if (s.kind !== 'user') return 'Not permitted';
  const account = m.orgs[org]!.account;
  if (!account) return 'Organization has no account';
  if (account.admin !== s.user) {
    return write ? 'Only the account admin can manage financial information' : 'Only the account admin can access financial information';
  }
  return null;
}

const PERMISSION_WORDS: Record<string, string> = {
  'organization:manage': 'manage the organization',
  'members:manage': 'manage members',
  'products:write': 'write products',
  'customers:write': 'write customers',
  'orders:write': 'write orders',
};

/** role-permission policy: Organization subjects pass, Users need the permission */
export function roleDenial(m: Model, s: Subject, org: number, permission: string): string | null {
  if (s.kind === 'organization') return null;
  if (s.kind !== 'user') return 'Not permitted';
  return hasPermission(m, s.user, org, permission) ? null : `You don't have permission to ${PERMISSION_WORDS[permission]}`;
}

// ---------------------------------------------------------------------------
// What a subject sees of each collection (the RLS select policies, in the model).

export interface Visible {
  organizations: string[];
  memberships: string[]; // `${user_id}/${organization_id}`
  /** the subject's own user row (rowgate.users) */
  users: string[];
  /** the users who share an organization with the subject (rowgate.colleagues: id, name, e-mail) */
  colleagues: string[];
  products: string[];
  customers: string[];
  /** member seats (SPEC §18) */
  customer_members: string[];
  orders: string[];
  transactions: string[]; // `${order_id}/${type}`
  /** refunds (SPEC §18): one `${order_id}` per refund */
  refunds: string[];
  accounts: string[];
  payout_accounts: string[];
  /** the roles organizations defined (SPEC §21): their members see them */
  organization_roles: string[];
}

/** a payment once paid, and one refund transaction per refund */
export function transactionsOf(o: MOrder): ('payment' | 'refund')[] {
  return o.status === 'pending' ? [] : ['payment', ...Array.from({ length: o.refunds }, () => 'refund' as const)];
}

/**
 * The scopes that let a credential read each collection: any of them (SPEC §3;
 * the credential's scopes are expanded, a write scope implying its read scope).
 * Where the contract leaves it open (users, payout accounts), the choice of
 * the select policies is modelled: a user's whole row is read with `user:read`
 * by the user itself only, a colleague's name and e-mail (rowgate.colleagues)
 * with `members_read`; payout accounts with `payouts:read`, and a web
 * session only (SPEC §4; the policy checks the credential's kind).
 */
export const COLLECTION_SCOPES: Record<keyof Visible, readonly string[]> = {
  organizations: ['organizations_read'],
  memberships: ['members_read'],
  users: ['user:read'],
  colleagues: ['members_read'],
  products: ['products_read'],
  customers: ['customers_read', 'customer_portal_read'],
  customer_members: ['customers_read', 'customer_portal_read'],
  orders: ['orders_read', 'customer_portal_read'],
  transactions: ['transactions_read', 'payouts_read'],
  refunds: ['refunds_read'],
  accounts: ['transactions_read', 'payouts_read'],
  payout_accounts: ['payouts:read'],
  organization_roles: ['members_read'],
};

/**
 * What the subject reads of each collection through RLS: its reach, its role's
 * permissions, the policies, and the read scopes of its credential (`scoped`
 * false: what the reach alone allows, the bound no interface may exceed).
 */
export function visible(m: Model, s: Subject | null, scoped = true): Visible {
  const orgs = reach(m, s);
  const financeOrgs = reach(m, s, 'finance:read');
  const has = (scope: string) => !scoped || (s?.scopes.has(scope) ?? false);
  const inReach = (o: number) => orgs.has(o);
  const financeVisible = (o: number) => s !== null && inReach(o) && financeDenial(m, s, o, false) === null;
  const colleagues = new Set<number>();
  if (has('members_read')) {
    for (const x of m.memberships) if (!x.removed && inReach(x.org) && live(m.users[x.user])) colleagues.add(x.user);
  }
  const self = s?.kind === 'user' && has('user:read') ? [s.user] : [];
  const ownCustomer = s?.kind === 'customer' || s?.kind === 'member' ? s.customer : null;
  const own = has('customer_portal_read') ? ownCustomer : null;
  const organizationData = (scope: string) => (o: number) => has(scope) && inReach(o);
  const finance = has('transactions_read') || has('payouts_read');
  return {
    organizations: has('organizations_read') ? [...orgs].map((o) => m.orgs[o]!.id) : [],
    memberships: m.memberships
      .filter((x) => !x.removed && organizationData('members_read')(x.org))
      .map((x) => `${m.users[x.user]!.id}/${m.orgs[x.org]!.id}`),
    users: self.map((u) => m.users[u]!.id),
    colleagues: [...colleagues].map((u) => m.users[u]!.id),
    products: m.products.filter((p) => !p.deleted && organizationData('products_read')(p.org)).map((p) => p.id),
    customers: m.customers.filter((c, i) => !c.deleted && (organizationData('customers_read')(c.org) || i === own)).map((c) => c.id),
    // a seat goes with its customer; a member session reads its own seat
    customer_members: m.seats
      .filter(
        (x, i) =>
          !x.deleted &&
          live(m.customers[x.customer]) &&
          (organizationData('customers_read')(m.customers[x.customer]!.org) ||
            (s?.kind === 'member' && s.seat === i && has('customer_portal_read'))),
      )
      .map((x) => x.id),
    orders: m.orders.filter((o) => organizationData('orders_read')(o.org) || o.customer === own).map((o) => o.id),
    transactions: finance
      ? m.orders.filter((o) => financeOrgs.has(o.org)).flatMap((o) => transactionsOf(o).map((t) => `${o.id}/${t}`))
      : [],
    // whoever reads the order reads its refunds, with refunds_read
    refunds: m.orders.filter((o) => organizationData('refunds_read')(o.org)).flatMap((o) => Array.from({ length: o.refunds }, () => o.id)),
    accounts: finance ? m.orgs.flatMap((o, i) => (o.account && financeVisible(i) ? [o.account.id] : [])) : [],
    payout_accounts:
      has('payouts:read') && (!scoped || (s?.kind === 'user' && s.web))
        ? m.payouts.filter((p) => !p.deleted && financeVisible(p.org)).map((p) => p.id)
        : [],
    organization_roles: m.customRoles.filter((r) => organizationData('members_read')(r.org)).map((r) => r.id),
  };
}

// ---------------------------------------------------------------------------
// REST, in the model: the answer each probe must get.

export type Expected =
  | { status: 200; ids: string[]; total: number }
  | { status: 200 | 201; id: string | 'new'; apply?: (m: Model, id: string) => void }
  | { status: 204; apply: (m: Model) => void }
  | { status: 401 }
  | { status: 403; error: 'InsufficientScope' }
  | { status: 403; error: 'NotPermitted'; detail: string }
  | { status: 404 }
  | { status: 422; loc: string };

export interface Request {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
}

type CredentialKind = CredentialSpec['kind'];
const ORG_DATA: readonly CredentialKind[] = [
  'web_session',
  'personal_access_token',
  'oauth2_user_token',
  'organization_access_token',
  'oauth2_organization_token',
];
const USER_ONLY: readonly CredentialKind[] = ['web_session', 'personal_access_token', 'oauth2_user_token'];
const WEB_ONLY: readonly CredentialKind[] = ['web_session'];
const PORTAL: readonly CredentialKind[] = ['customer_session', 'member_session'];

const FINANCE_READ = ['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'];

const pick = <T>(xs: readonly T[], i: number): [T, number] | [undefined, -1] =>
  xs.length ? [xs[i % xs.length]!, i % xs.length] : [undefined, -1];

const NIL = '00000000-0000-4000-8000-000000000000';

const PORTAL_OPERATIONS = OPERATIONS.filter((o) => o.startsWith('customer_portal:'));
const ORGANIZATION_OPERATIONS = OPERATIONS.filter((o) => !o.startsWith('customer_portal:'));

/** The operation a probe runs: one meant for the credential's kind, or (rarely) any. */
export function operationOf(kind: CredentialKind, probe: Probe): Operation {
  const ops = !probe.fitting ? OPERATIONS : PORTAL.includes(kind) ? PORTAL_OPERATIONS : ORGANIZATION_OPERATIONS;
  return ops[probe.op % ops.length]!;
}

/**
 * The request a probe makes and the answer the model expects, or null when the
 * probe has no target in this world (nothing to create an order of…).
 */
export function expect(
  m: Model,
  probe: Probe,
  fresh: () => { id: string; slug: string; email: string },
): { credential: MCredential; request: Request; expected: Expected } | null {
  const [credential] = pick(m.credentials, probe.credential);
  if (!credential) return null;
  const op = operationOf(credential.kind, probe);
  const s = authenticate(m, credential);
  const orgs = reach(m, s);
  const { a, b, c } = probe;

  const gate = (kinds: readonly CredentialKind[], scopes: readonly string[]): Expected | null => {
    if (!kinds.includes(credential.kind) || !s) return { status: 401 };
    if (!scopes.some((x) => s.scopes.has(x))) return { status: 403, error: 'InsufficientScope' };
    return null;
  };
  const list = (ids: string[]): Expected => ({ status: 200, ids: [...ids].sort(), total: ids.length });
  const orgFilter = (o: number) => (a % 3 === 0 || !m.orgs.length ? null : pick(m.orgs, o)[1]);
  const withFilter = (path: string, filter: number | null) => (filter === null ? path : `${path}&organization_id=${m.orgs[filter]!.id}`);
  const read = (kind: keyof Visible) => visible(m, s)[kind];

  switch (op) {
    case 'organizations:list': {
      const request: Request = { method: 'GET', path: '/v1/organizations/?limit=100' };
      return {
        credential,
        request,
        expected: gate(ORG_DATA, ['organizations_read', 'organizations_write']) ?? list(read('organizations')),
      };
    }
    case 'organizations:get': {
      const [org, o] = pick(m.orgs, a);
      if (!org) return null;
      const request: Request = { method: 'GET', path: `/v1/organizations/${org.id}` };
      return {
        credential,
        request,
        expected:
          gate(ORG_DATA, ['organizations_read', 'organizations_write']) ?? (orgs.has(o) ? { status: 200, id: org.id } : { status: 404 }),
      };
    }
    case 'organizations:update': {
      const [org, o] = pick(m.orgs, a);
      if (!org) return null;
      const request: Request = { method: 'PATCH', path: `/v1/organizations/${org.id}`, body: { name: `renamed ${b}` } };
      const denied = gate(ORG_DATA, ['organizations_write']);
      if (denied) return { credential, request, expected: denied };
      if (!orgs.has(o)) return { credential, request, expected: { status: 404 } };
      const denial = roleDenial(m, s!, o, 'organization:manage');
      return {
        credential,
        request,
        expected: denial ? { status: 403, error: 'NotPermitted', detail: denial } : { status: 200, id: org.id },
      };
    }
    case 'organizations:create': {
      const { id, slug } = fresh();
      const request: Request = { method: 'POST', path: '/v1/organizations/', body: { name: `Org ${slug}`, slug } };
      const denied = gate(USER_ONLY, ['organizations_write']);
      if (denied) return { credential, request, expected: denied };
      const user = (s as Extract<Subject, { kind: 'user' }>).user;
      return {
        credential,
        request,
        expected: {
          status: 201,
          id: 'new',
          apply: (model, newId) => {
            model.orgs.push({ id: newId, slug, deleted: false, account: null });
            model.memberships.push({ id, user, org: model.orgs.length - 1, role: 'admin', removed: false });
          },
        },
      };
    }
    case 'organizations:delete': {
      const [org, o] = pick(m.orgs, a);
      if (!org) return null;
      const request: Request = { method: 'DELETE', path: `/v1/organizations/${org.id}` };
      const denied = gate(USER_ONLY, ['organizations_write']);
      if (denied) return { credential, request, expected: denied };
      if (!orgs.has(o)) return { credential, request, expected: { status: 404 } };
      const denial = roleDenial(m, s!, o, 'organization:manage');
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      return { credential, request, expected: { status: 204, apply: (model) => void (model.orgs[o]!.deleted = true) } };
    }
    case 'members:list': {
      const [org, o] = pick(m.orgs, a);
      if (!org) return null;
      const request: Request = { method: 'GET', path: `/v1/organizations/${org.id}/members?limit=100` };
      const denied = gate(ORG_DATA, ['members_read', 'members_write']);
      if (denied) return { credential, request, expected: denied };
      if (!orgs.has(o)) return { credential, request, expected: { status: 404 } };
      // the members list joins the colleagues the subject sees: a deleted user's membership is not listed
      const ids = m.memberships.filter((x) => x.org === o && !x.removed && !m.users[x.user]!.deleted).map((x) => m.users[x.user]!.id);
      return { credential, request, expected: list(ids) };
    }
    case 'members:update':
    case 'members:remove': {
      const [org, o] = pick(m.orgs, a);
      const [user, u] = pick(m.users, b);
      if (!org || !user) return null;
      const roles = [...ROLES, ...m.customRoles.filter((r) => r.org === o).map((r) => r.name)];
      const role = roles[c % roles.length]!;
      const path = `/v1/organizations/${org.id}/members/${user.id}`;
      const request: Request = op === 'members:update' ? { method: 'PATCH', path, body: { role } } : { method: 'DELETE', path };
      const denied = gate(ORG_DATA, ['members_write']);
      if (denied) return { credential, request, expected: denied };
      if (!orgs.has(o)) return { credential, request, expected: { status: 404 } };
      const membership = liveMembership(m, u, o);
      const managementDenial = () => (s!.kind !== 'user' ? 'Only users can manage members' : roleDenial(m, s!, o, 'members:manage'));
      // the membership is resolved first (404), then the policy (403), SPEC §5; a change reads the
      // membership with its user, so the membership of a deleted user is not found there
      if (!membership || (op === 'members:update' && user.deleted)) return { credential, request, expected: { status: 404 } };
      const denial = managementDenial();
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      // (a deleted user's membership may go: rowgate_private.tg_memberships__keep_an_admin)
      const leavesNoAdmin =
        !user.deleted &&
        membership.role === 'admin' &&
        (op === 'members:remove' || role !== 'admin') &&
        !m.memberships.some((x) => x !== membership && x.org === o && x.role === 'admin' && !x.removed);
      if (leavesNoAdmin) return { credential, request, expected: { status: 422, loc: 'path.user_id' } };
      // no escalation (SPEC §21): one's own role stays, and a manager changes or removes only
      // members whose role it holds entirely, to roles it holds entirely
      const self = (s as Extract<Subject, { kind: 'user' }>).user;
      const changes = op === 'members:remove' || role !== membership.role;
      const refuse = (detail: string) => ({
        credential,
        request,
        expected: { status: 403 as const, error: 'NotPermitted' as const, detail },
      });
      if (changes && u === self && op === 'members:update') return refuse("You can't change your own role");
      if (changes && u !== self) {
        if (!holdsAll(m, self, o, membership.role))
          return refuse("You can't change or remove a member whose role has permissions you don't have");
        if (op === 'members:update' && !holdsAll(m, self, o, role))
          return refuse("You can't give a member a role with permissions you don't have");
      }
      const index = m.memberships.indexOf(membership);
      return op === 'members:update'
        ? { credential, request, expected: { status: 200, id: user.id, apply: (model) => void (model.memberships[index]!.role = role) } }
        : { credential, request, expected: { status: 204, apply: (model) => void (model.memberships[index]!.removed = true) } };
    }
    case 'organizations:get_account':
    case 'accounts:get': {
      const [org, o] = pick(m.orgs, a);
      if (!org) return null;
      if (op === 'accounts:get' && !org.account) return null;
      const path = op === 'accounts:get' ? `/v1/accounts/${org.account!.id}` : `/v1/organizations/${org.id}/account`;
      const request: Request = { method: 'GET', path };
      const denied = gate(ORG_DATA, FINANCE_READ);
      if (denied) return { credential, request, expected: denied };
      if (!orgs.has(o)) return { credential, request, expected: { status: 404 } };
      const denial = financeDenial(m, s!, o, false);
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      return { credential, request, expected: org.account ? { status: 200, id: org.account.id } : { status: 404 } };
    }
    case 'products:list':
    case 'customers:list':
    case 'orders:list': {
      const resource = op.split(':')[0] as 'products' | 'customers' | 'orders';
      const filter = orgFilter(b);
      const request: Request = { method: 'GET', path: withFilter(`/v1/${resource}/?limit=100`, filter) };
      const denied = gate(ORG_DATA, [`${resource}_read`, `${resource}_write`]);
      if (denied) return { credential, request, expected: denied };
      const rows: { id: string; org: number; deleted?: boolean }[] = m[resource];
      return {
        credential,
        request,
        expected: list(rows.filter((r) => !r.deleted && orgs.has(r.org) && (filter === null || r.org === filter)).map((r) => r.id)),
      };
    }
    case 'products:get':
    case 'customers:get':
    case 'orders:get': {
      const resource = op.split(':')[0] as 'products' | 'customers' | 'orders';
      const rows: { id: string; org: number; deleted?: boolean }[] = m[resource];
      const [row] = pick(rows, a);
      const id = row?.id ?? NIL;
      const request: Request = { method: 'GET', path: `/v1/${resource}/${id}` };
      const denied = gate(ORG_DATA, [`${resource}_read`, `${resource}_write`]);
      if (denied) return { credential, request, expected: denied };
      return { credential, request, expected: row && !row.deleted && orgs.has(row.org) ? { status: 200, id } : { status: 404 } };
    }
    case 'products:create':
    case 'customers:create': {
      const resource = op.split(':')[0] as 'products' | 'customers';
      const [org, o] = a % 4 === 3 ? [undefined, -1] : pick(m.orgs, a);
      const { email } = fresh();
      const body: Record<string, unknown> =
        resource === 'products'
          ? { name: `Product ${b}`, price_amount: 100 * b, price_currency: 'usd', is_archived: c % 2 === 0 }
          : { email };
      if (org) body.organization_id = org.id;
      const request: Request = { method: 'POST', path: `/v1/${resource}/`, body };
      const denied = gate(ORG_DATA, [`${resource}_write`]);
      if (denied) return { credential, request, expected: denied };
      const target = org ? o : s!.kind === 'organization' ? s!.org : -1;
      if (target < 0 || !orgs.has(target)) return { credential, request, expected: { status: 422, loc: 'body.organization_id' } };
      const denial = roleDenial(m, s!, target, `${resource}:write`);
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      const apply =
        resource === 'products'
          ? (model: Model, id: string) => void model.products.push({ id, org: target, archived: c % 2 === 0, deleted: false })
          : (model: Model, id: string) => void model.customers.push({ id, org: target, deleted: false });
      return { credential, request, expected: { status: 201, id: 'new', apply } };
    }
    case 'products:update':
    case 'products:delete':
    case 'customers:update':
    case 'customers:delete': {
      const [resource, action] = op.split(':') as ['products' | 'customers', 'update' | 'delete'];
      const rows: (MProduct | MCustomer)[] = m[resource];
      const [row, r] = pick(rows, a);
      const id = row?.id ?? NIL;
      const request: Request =
        action === 'update'
          ? {
              method: 'PATCH',
              path: `/v1/${resource}/${id}`,
              body: resource === 'products' ? { name: `Renamed ${b}` } : { first_name: `Jo ${b}` },
            }
          : { method: 'DELETE', path: `/v1/${resource}/${id}` };
      const denied = gate(ORG_DATA, [`${resource}_write`]);
      if (denied) return { credential, request, expected: denied };
      if (!row || row.deleted || !orgs.has(row.org)) return { credential, request, expected: { status: 404 } };
      const denial = roleDenial(m, s!, row.org, `${resource}:write`);
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      return action === 'update'
        ? { credential, request, expected: { status: 200, id } }
        : { credential, request, expected: { status: 204, apply: (model) => void (model[resource][r]!.deleted = true) } };
    }
    case 'customer_members:list_all': {
      const filter = orgFilter(b);
      const request: Request = { method: 'GET', path: withFilter('/v1/members/?limit=100', filter) };
      const denied = gate(ORG_DATA, ['customers_read', 'customers_write']);
      if (denied) return { credential, request, expected: denied };
      const ids = m.seats
        .filter((x) => {
          const customer = m.customers[x.customer]!;
          return !x.deleted && !customer.deleted && orgs.has(customer.org) && (filter === null || customer.org === filter);
        })
        .map((x) => x.id);
      return { credential, request, expected: list(ids) };
    }
    case 'customer_members:list':
    case 'customer_members:create': {
      const [customer, cu] = pick(m.customers, a);
      const id = customer?.id ?? NIL;
      const { email } = fresh();
      const request: Request =
        op === 'customer_members:list'
          ? { method: 'GET', path: `/v1/customers/${id}/members?limit=100` }
          : { method: 'POST', path: `/v1/customers/${id}/members`, body: { email } };
      const denied = gate(ORG_DATA, op === 'customer_members:list' ? ['customers_read', 'customers_write'] : ['customers_write']);
      if (denied) return { credential, request, expected: denied };
      if (!customer || customer.deleted || !orgs.has(customer.org)) return { credential, request, expected: { status: 404 } };
      if (op === 'customer_members:list')
        return { credential, request, expected: list(m.seats.filter((x) => x.customer === cu && !x.deleted).map((x) => x.id)) };
      const denial = roleDenial(m, s!, customer.org, 'customers:write');
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      return {
        credential,
        request,
        expected: { status: 201, id: 'new', apply: (model, newId) => void model.seats.push({ id: newId, customer: cu, deleted: false }) },
      };
    }
    case 'customer_members:delete': {
      const [seat, x] = pick(m.seats, a);
      if (!seat) return null;
      // the seat under its own customer, or (b odd) under another one: 404 there
      const [other] = pick(m.customers, b);
      const customer = b % 2 && other ? other : m.customers[seat.customer]!;
      const request: Request = { method: 'DELETE', path: `/v1/customers/${customer.id}/members/${seat.id}` };
      const denied = gate(ORG_DATA, ['customers_write']);
      if (denied) return { credential, request, expected: denied };
      if (customer.deleted || !orgs.has(customer.org)) return { credential, request, expected: { status: 404 } };
      if (seat.deleted || customer !== m.customers[seat.customer]) return { credential, request, expected: { status: 404 } };
      const denial = roleDenial(m, s!, customer.org, 'customers:write');
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      return { credential, request, expected: { status: 204, apply: (model) => void (model.seats[x]!.deleted = true) } };
    }
    case 'orders:create': {
      const [product, p] = pick(m.products, a);
      const [customer, cu] = pick(m.customers, b);
      if (!product || !customer) return null;
      const request: Request = { method: 'POST', path: '/v1/orders/', body: { product_id: product.id, customer_id: customer.id } };
      const denied = gate(ORG_DATA, ['orders_write']);
      if (denied) return { credential, request, expected: denied };
      // the product is looked up as the subject sees it
      if (product.deleted || !orgs.has(product.org)) return { credential, request, expected: { status: 422, loc: 'body.product_id' } };
      const denial = roleDenial(m, s!, product.org, 'orders:write');
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      if (customer.deleted || customer.org !== product.org)
        return { credential, request, expected: { status: 422, loc: 'body.customer_id' } };
      return {
        credential,
        request,
        expected: {
          status: 201,
          id: 'new',
          apply: (model, id) => void model.orders.push({ id, org: product.org, customer: cu, product: p, status: 'pending', refunds: 0 }),
        },
      };
    }
    case 'orders:update': {
      const [order, r] = pick(m.orders, a);
      const status = (['pending', 'paid', 'refunded'] as const)[b % 3]!;
      const id = order?.id ?? NIL;
      const request: Request = { method: 'PATCH', path: `/v1/orders/${id}`, body: { status } };
      const denied = gate(ORG_DATA, ['orders_write']);
      if (denied) return { credential, request, expected: denied };
      if (!order || !orgs.has(order.org)) return { credential, request, expected: { status: 404 } };
      const denial = roleDenial(m, s!, order.org, 'orders:write');
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      const forward = (order.status === 'pending' && status === 'paid') || (order.status === 'paid' && status === 'refunded');
      if (status !== order.status && !forward) return { credential, request, expected: { status: 422, loc: 'body.status' } };
      const apply = (model: Model) => {
        // paid → refunded refunds the rest of the order: one more refund (SPEC §18)
        if (model.orders[r]!.status === 'paid' && status === 'refunded') model.orders[r]!.refunds += 1;
        model.orders[r]!.status = status;
      };
      return { credential, request, expected: { status: 200, id, apply } };
    }
    case 'transactions:list': {
      const filter = orgFilter(b);
      const request: Request = { method: 'GET', path: withFilter('/v1/transactions/?limit=100', filter) };
      const denied = gate(ORG_DATA, FINANCE_READ);
      if (denied) return { credential, request, expected: denied };
      const financeOrgs = reach(m, s, 'finance:read');
      const keys = m.orders
        .filter((o) => financeOrgs.has(o.org) && (filter === null || o.org === filter))
        .flatMap((o) => transactionsOf(o).map((t) => `${o.id}/${t}`));
      return { credential, request, expected: list(keys) };
    }
    case 'metadata:list': {
      // a metadata filter (SPEC §18) narrows what the subject sees, never widens it: tag 3 is nobody's
      const resource = (['products', 'customers', 'orders'] as const)[a % 3]!;
      const wanted = b % 4;
      const filter = orgFilter(c);
      const request: Request = { method: 'GET', path: withFilter(`/v1/${resource}/?limit=100&metadata[tag]=t${wanted}`, filter) };
      const denied = gate(ORG_DATA, [`${resource}_read`, `${resource}_write`]);
      if (denied) return { credential, request, expected: denied };
      const rows: { id: string; org: number; deleted?: boolean; tag?: number }[] = m[resource];
      const ids = rows.filter((r) => !r.deleted && r.tag === wanted && orgs.has(r.org) && (filter === null || r.org === filter));
      return { credential, request, expected: list(ids.map((r) => r.id)) };
    }
    case 'refunds:list': {
      const filter = orgFilter(b);
      const request: Request = { method: 'GET', path: withFilter('/v1/refunds/?limit=100', filter) };
      const denied = gate(ORG_DATA, ['refunds_read', 'refunds_write']);
      if (denied) return { credential, request, expected: denied };
      const keys = m.orders
        .filter((o) => orgs.has(o.org) && (filter === null || o.org === filter))
        .flatMap((o) => Array.from({ length: o.refunds }, () => o.id));
      return { credential, request, expected: list(keys) };
    }
    case 'refunds:create': {
      // one cent: an order is never refunded past its amount here (the arithmetic is test/refunds.test.ts's)
      const [order, r] = pick(m.orders, a);
      if (!order) return null;
      const request: Request = { method: 'POST', path: '/v1/refunds/', body: { order_id: order.id, amount: 1, reason: 'other' } };
      const denied = gate(ORG_DATA, ['refunds_write']);
      if (denied) return { credential, request, expected: denied };
      // the order is looked up as the subject reaches it, like an order's product
      if (!orgs.has(order.org)) return { credential, request, expected: { status: 422, loc: 'body.order_id' } };
      const denial = roleDenial(m, s!, order.org, 'orders:write');
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      if (order.status !== 'paid') return { credential, request, expected: { status: 422, loc: 'body.order_id' } };
      return { credential, request, expected: { status: 201, id: 'new', apply: (model) => void (model.orders[r]!.refunds += 1) } };
    }
    case 'payout_accounts:list': {
      const filter = orgFilter(b);
      const request: Request = { method: 'GET', path: withFilter('/v1/payout-accounts/?limit=100', filter) };
      const denied = gate(WEB_ONLY, ['payouts:read', 'payouts:write']);
      if (denied) return { credential, request, expected: denied };
      const ids = read('payout_accounts').filter((id) => filter === null || m.payouts.find((p) => p.id === id)!.org === filter);
      return { credential, request, expected: list(ids) };
    }
    case 'payout_accounts:get': {
      const [payout] = pick(m.payouts, a);
      const id = payout?.id ?? NIL;
      const request: Request = { method: 'GET', path: `/v1/payout-accounts/${id}` };
      const denied = gate(WEB_ONLY, ['payouts:read', 'payouts:write']);
      if (denied) return { credential, request, expected: denied };
      if (!payout || payout.deleted || !orgs.has(payout.org)) return { credential, request, expected: { status: 404 } };
      const denial = financeDenial(m, s!, payout.org, false);
      if (denial) return { credential, request, expected: { status: 403, error: 'NotPermitted', detail: denial } };
      return { credential, request, expected: { status: 200, id } };
    }
    case 'customer_portal:me': {
      const request: Request = { method: 'GET', path: '/v1/customer-portal/customers/me' };
      const denied = gate(PORTAL, ['customer_portal_read', 'customer_portal_write']);
      if (denied) return { credential, request, expected: denied };
      const own = s!.kind === 'customer' ? s!.customer : (s as Extract<Subject, { kind: 'member' }>).customer;
      return { credential, request, expected: { status: 200, id: m.customers[own]!.id } };
    }
    case 'customer_portal:list_orders':
    case 'customer_portal:get_order': {
      const own = s?.kind === 'customer' ? s.customer : s?.kind === 'member' ? s.customer : -1;
      if (op === 'customer_portal:list_orders') {
        const request: Request = { method: 'GET', path: '/v1/customer-portal/orders/?limit=100' };
        const denied = gate(PORTAL, ['customer_portal_read', 'customer_portal_write']);
        return { credential, request, expected: denied ?? list(m.orders.filter((o) => o.customer === own).map((o) => o.id)) };
      }
      const [order] = pick(m.orders, a);
      const id = order?.id ?? NIL;
      const request: Request = { method: 'GET', path: `/v1/customer-portal/orders/${id}` };
      const denied = gate(PORTAL, ['customer_portal_read', 'customer_portal_write']);
      return { credential, request, expected: denied ?? (order && order.customer === own ? { status: 200, id } : { status: 404 }) };
    }
  }
}

/** A world, for a person: what a failing case printed as its minimal reproduction. */
export function describeModel(m: Model): string {
  const lines: string[] = [];
  const u = (i: number) => `user${i}${m.users[i]?.deleted ? '(deleted)' : ''}`;
  const o = (i: number) => `org${i}${m.orgs[i]?.deleted ? '(deleted)' : ''}`;
  lines.push(`users: ${m.users.map((_, i) => u(i)).join(', ')}`);
  lines.push(`organizations: ${m.orgs.map((x, i) => `${o(i)}${x.account ? ` account admin ${u(x.account.admin)}` : ''}`).join('; ')}`);
  lines.push(`roles: ${m.customRoles.map((r) => `${r.name}@${o(r.org)}:[${r.permissions.join(' ')}]`).join(', ') || '-'}`);
  lines.push(
    `memberships: ${m.memberships.map((x) => `${u(x.user)}@${o(x.org)}:${x.role}${x.removed ? '(removed)' : ''}`).join(', ') || '-'}`,
  );
  lines.push(
    `products: ${m.products.map((x, i) => `product${i}@${o(x.org)}${x.archived ? ' archived' : ''}${x.deleted ? ' deleted' : ''}`).join(', ') || '-'}`,
  );
  lines.push(`customers: ${m.customers.map((x, i) => `customer${i}@${o(x.org)}${x.deleted ? ' deleted' : ''}`).join(', ') || '-'}`);
  lines.push(`seats: ${m.seats.map((x, i) => `seat${i} of customer${x.customer}${x.deleted ? ' deleted' : ''}`).join(', ') || '-'}`);
  lines.push(`orders: ${m.orders.map((x, i) => `order${i}(product${x.product}, customer${x.customer}, ${x.status})`).join(', ') || '-'}`);
  lines.push(`payout accounts: ${m.payouts.map((x, i) => `payout${i}@${o(x.org)}${x.deleted ? ' deleted' : ''}`).join(', ') || '-'}`);
  lines.push(`credentials: ${m.credentials.map((c, i) => `#${i} ${describeCredential(c)}`).join('; ')}`);
  return lines.join('\n');
}

export function describeCredential(c: CredentialSpec): string {
  const dead = c.dead ? ' (revoked)' : '';
  switch (c.kind) {
    case 'web_session':
      return `web session of user${c.user}${c.impersonation ? ' (impersonation)' : ''}${dead}`;
    case 'personal_access_token':
    case 'oauth2_user_token':
      return `${c.kind} of user${c.user} [${c.scopes.join(' ')}]${dead}`;
    case 'organization_access_token':
      return `${c.kind} of org${c.org} [${c.scopes.join(' ')}]${dead}`;
    case 'oauth2_organization_token':
      return `${c.kind} of org${c.org} granted by user${c.user} [${c.scopes.join(' ')}]${dead}`;
    case 'customer_session':
      return `customer session of customer${c.customer}${dead}`;
    case 'member_session':
      return `member session of seat${c.seat}${dead}`;
  }
}
