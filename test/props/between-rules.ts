// The between-the-rules property (SPEC §3, §20, §21, §22): a model-based run of
// fast-check commands in which four users and two organizations go through random
// sequences of role definitions, assignments, invitations and their acceptance,
// organization token minting and use, demotions, removals, leaving, user deletion,
// organization settings and checks about another user, some pairs run at once. After
// every step the invariants below are checked against the model, which is the
// database's memberships and roles read as the owner after the step (and kept from the
// step before):
//   minted: no organization token carries a scope that opens an operation (one open to
//     organization tokens: it accepts them and its policy admits an organization) its
//     maker could not perform then, by what
//     GET /v1/organizations/{id}/permissions answered for the maker around the mint
//     (a finance read refused for "Organization has no account" is refused to the
//     token too, so it does not count);
//   admin: `rowgate db verify` finds nothing in the case's organizations (an admin per
//     organization with members, no undefined role, no orphan event);
//   no-5xx: no request of a step answers 5xx, concurrent ones included;
//   check: POST /v1/authorization/check, asked first with the same credential, answers
//     the status the request then answers (steps run alone; what depends on a body, a
//     422, a 409 or a refusal about the role a body names, is not predicted: SPEC §20);
//     a check about another user answers what that user's own requests answer, to a
//     holder of members:manage asking about a member, else 404; a `user_id` check from
//     an organization token is 404s, never a 5xx;
//   denials: every denial row the step wrote lies in an organization its caller
//     reached (a member's user before or after the step, a token's own organization),
//     and every 403 on an organization the caller reached left one;
//   audit: actor.ip and actor.user_agent of events are shown (non-null) only to users
//     whose role holds organization:manage, never to an organization token.
// Each case starts from fresh users and organizations on one shared database.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { operationRows } from '../../src/http/operations.ts';
import { verifyData } from '../../src/db/verify.ts';
import { allRoutes } from '../../src/server/route-table.ts';
import type { ApiResponse, TestApp } from '../harness.ts';

const ROWS = operationRows(allRoutes(null as never));
/** the policies that refuse every subject but a user (SPEC §5) */
const USERS_ONLY_POLICIES = new Set(['members_management', 'access_token_management']);
const BY_OPERATION = new Map(ROWS.map((r) => [r.operation, r]));
/** the scopes of organization data (SPEC §3), what an organization token may carry */
export const ORG_SCOPES = [...new Set(ROWS.filter((r) => r.access_class.startsWith('organization')).flatMap((r) => r.scopes))].sort();
const PERMISSIONS = [
  'organization:manage',
  'members:manage',
  'finance:manage',
  'access_tokens:manage',
  'products:write',
  'customers:write',
  'orders:write',
  'finance:read',
];
const ROLES = ['admin', 'member', 'finance', 'ra', 'rb'] as const;
const USERS = 4;
const ORGS = 2;

type Credential = { session?: string; token?: string };

// ---------------------------------------------------------------- commands as data
export type Cmd =
  | { kind: 'defineRole'; actor: number; org: number; name: 'ra' | 'rb'; permissions: string[] }
  | { kind: 'addMember'; actor: number; org: number; target: number; role: string }
  | { kind: 'setRole'; actor: number; org: number; target: number; role: string }
  | { kind: 'invite'; actor: number; org: number; target: number; role: string; acceptor: number }
  | { kind: 'mint'; actor: number; org: number; scopes: string[]; days: number | null }
  | { kind: 'useToken'; token: number; across: boolean }
  | { kind: 'remove'; actor: number; org: number; target: number }
  | { kind: 'leave'; actor: number; org: number }
  | { kind: 'deleteUser'; actor: number }
  | { kind: 'lifetime'; actor: number; org: number; days: number | null }
  | { kind: 'checkAbout'; actor: number; org: number; target: number };

const actor = fc.nat(USERS - 1);
const org = fc.nat(ORGS - 1);
const role = fc.constantFrom(...ROLES);
const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  {
    arbitrary: fc.record({
      kind: fc.constant('defineRole' as const),
      actor,
      org,
      name: fc.constantFrom('ra' as const, 'rb' as const),
      permissions: fc.subarray(PERMISSIONS, { minLength: 1, maxLength: 3 }),
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('addMember' as const), actor, org, target: actor, role }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('setRole' as const), actor, org, target: actor, role }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('invite' as const), actor, org, target: actor, role, acceptor: actor }), weight: 2 },
  {
    arbitrary: fc.record({
      kind: fc.constant('mint' as const),
      actor,
      org,
      scopes: fc.subarray(ORG_SCOPES, { minLength: 1, maxLength: 5 }),
      days: fc.option(fc.constantFrom(1, 30, 4000), { nil: null }),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({ kind: fc.constant('useToken' as const), token: fc.nat(3), across: fc.constantFrom(false, false, false, true) }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('remove' as const), actor, org, target: actor }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('leave' as const), actor, org }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('deleteUser' as const), actor }), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('lifetime' as const),
      actor,
      org,
      days: fc.option(fc.constantFrom(1, 30, 3650), { nil: null }),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('checkAbout' as const), actor, org, target: actor }), weight: 2 },
);

// ---------------------------------------------------------------- the model
interface Snapshot {
  /** per organization: user index → role */
  members: Map<number, string>[];
  /** per organization: custom role name → permissions */
  roles: Map<string, string[]>[];
}

interface MintedToken {
  id: string;
  token: string;
  org: number;
  scopes: string[];
}

/** One request made in a step, as the invariants need it. */
interface Made {
  caller: { user?: number; token?: MintedToken };
  operation: string;
  /** the organization the request names or resolves to (case index) */
  org?: number;
  status: number;
  body: any;
}

interface World {
  users: { id: string; email: string; session: string; deleted: boolean }[];
  orgs: string[];
  tokens: MintedToken[];
  snapshot: Snapshot;
}

export interface Counters {
  cases: number;
  steps: number;
  concurrentPairs: number;
  commands: Record<string, number>;
  statuses: Record<string, number>;
  invariants: Record<string, number>;
}

const newCounters = (): Counters => ({ cases: 0, steps: 0, concurrentPairs: 0, commands: {}, statuses: {}, invariants: {} });
const bump = (r: Record<string, number>, k: string, n = 1) => {
  r[k] = (r[k] ?? 0) + n;
};

/**
 * BETWEEN_RULES_SKIP=a,b (a diagnosis, never in npm test): those invariants are counted
 * as `<name> violated` instead of failing the case, so a run can look past a known bug.
 */
const SKIPPED = new Set((process.env.BETWEEN_RULES_SKIP ?? '').split(',').filter(Boolean));
function invariant(c: Counters, name: string, ok: boolean, message: () => string) {
  bump(c.invariants, name);
  if (ok) return;
  if (SKIPPED.has(name)) bump(c.invariants, `${name} violated`);
  else throw new Error(`invariant ${name}: ${message()}`);
}

/** A role's permissions in an organization, by the model. */
function permissionsOf(s: Snapshot, o: number, role: string | undefined): string[] {
  if (!role) return [];
  if (role === 'admin') return PERMISSIONS;
  if (role === 'member') return ['products:write', 'customers:write', 'orders:write'];
  if (role === 'finance') return ['finance:read'];
  return s.roles[o]!.get(role) ?? [];
}

async function snapshot(app: TestApp, w: World): Promise<Snapshot> {
  const members = await app.sql<{ organization_id: string; user_id: string; role: string }>(
    `select m.organization_id, m.user_id, m.role from rowgate.memberships m join rowgate.users u on u.id = m.user_id
     where m.organization_id = any($1) and m.deleted_at is null and u.deleted_at is null`,
    [w.orgs],
  );
  const roles = await app.sql<{ organization_id: string; name: string; permissions: string[] }>(
    'select organization_id, name, permissions from rowgate.organization_roles where organization_id = any($1) and deleted_at is null',
    [w.orgs],
  );
  const s: Snapshot = { members: w.orgs.map(() => new Map()), roles: w.orgs.map(() => new Map()) };
  for (const m of members)
    s.members[w.orgs.indexOf(m.organization_id)]!.set(
      w.users.findIndex((u) => u.id === m.user_id),
      m.role,
    );
  for (const r of roles) s.roles[w.orgs.indexOf(r.organization_id)]!.set(r.name, r.permissions);
  return s;
}

// ---------------------------------------------------------------- one step
interface Step {
  made: Made[];
  /** whether the step's requests were asked of the check first (a step run alone) */
  alone: boolean;
}

/**
 * SPEC §21's refusals that depend on the role a body names (the same role again passes),
 * which a check, blind to bodies, does not predict (SPEC §20).
 */
const BODY_DEPENDENT = ["You can't change your own role", "You can't give a member a role with permissions you don't have"];

/** Asks the check for an item with the caller's credential, then makes the request, and compares. */
async function checked(
  app: TestApp,
  c: Counters,
  step: Step,
  cred: Credential,
  item: { operation: string; params?: Record<string, string>; organization_id?: string },
  request: () => Promise<ApiResponse>,
  reaches: boolean,
): Promise<ApiResponse> {
  let predicted: any;
  if (step.alone) {
    const check = await app.post('/v1/authorization/check', { checks: [item] }, cred);
    invariant(
      c,
      'check',
      check.status === 200 || check.status === 401,
      () => `check of ${JSON.stringify(item)} answered ${check.status} ${JSON.stringify(check.body)}`,
    );
    // a credential that authenticates nobody (its user deleted) is the check's own 401, as it is the request's
    predicted = check.status === 401 ? { status: 401 } : check.body.results[0];
  }
  const real = await request();
  const where = real.status === 422 ? ` at ${real.body?.detail?.[0]?.loc?.join?.('.') ?? real.body?.detail}` : '';
  bump(c.statuses, `${item.operation} ${real.status}${where}`);
  invariant(c, 'no-5xx', real.status < 500, () => `${item.operation} answered ${real.status} ${JSON.stringify(real.body)}`);
  const bodyDependent = [409, 422, 429].includes(real.status) || (real.status === 403 && BODY_DEPENDENT.includes(real.body?.detail));
  if (predicted && !bodyDependent) {
    const row = BY_OPERATION.get(item.operation)!;
    const listOutOfReach = row.method === 'GET' && !row.path.includes('{') && real.status === 200 && !reaches;
    const expected = listOutOfReach ? 404 : real.status;
    invariant(
      c,
      'check',
      predicted.status === expected,
      () =>
        `check predicted ${predicted.status} for ${JSON.stringify(item)} where the request answered ${real.status} ${JSON.stringify(real.body)}`,
    );
  }
  return real;
}

async function run(app: TestApp, w: World, c: Counters, cmd: Cmd, step: Step): Promise<void> {
  bump(c.commands, cmd.kind);
  const s = w.snapshot;
  const web = (u: number): Credential => ({ session: w.users[u]!.session });
  const record = (caller: Made['caller'], operation: string, o: number | undefined, r: ApiResponse) =>
    step.made.push({ caller, operation, org: o, status: r.status, body: r.body });
  const member = (u: number, o: number) => s.members[o]!.has(u);
  switch (cmd.kind) {
    case 'defineRole': {
      const id = w.orgs[cmd.org]!;
      const r = await checked(
        app,
        c,
        step,
        web(cmd.actor),
        { operation: 'roles:create', params: { id } },
        () => app.post(`/v1/organizations/${id}/roles`, { name: cmd.name, permissions: cmd.permissions }, web(cmd.actor)),
        member(cmd.actor, cmd.org),
      );
      record({ user: cmd.actor }, 'roles:create', cmd.org, r);
      return;
    }
    case 'addMember': {
      const id = w.orgs[cmd.org]!;
      const r = await checked(
        app,
        c,
        step,
        web(cmd.actor),
        { operation: 'members:add', params: { id } },
        () => app.post(`/v1/organizations/${id}/members`, { email: w.users[cmd.target]!.email, role: cmd.role }, web(cmd.actor)),
        member(cmd.actor, cmd.org),
      );
      record({ user: cmd.actor }, 'members:add', cmd.org, r);
      return;
    }
    case 'setRole': {
      const id = w.orgs[cmd.org]!;
      const user_id = w.users[cmd.target]!.id;
      const r = await checked(
        app,
        c,
        step,
        web(cmd.actor),
        { operation: 'members:update', params: { id, user_id } },
        () => app.patch(`/v1/organizations/${id}/members/${user_id}`, { role: cmd.role }, web(cmd.actor)),
        member(cmd.actor, cmd.org),
      );
      record({ user: cmd.actor }, 'members:update', cmd.org, r);
      return;
    }
    case 'remove': {
      const id = w.orgs[cmd.org]!;
      const user_id = w.users[cmd.target]!.id;
      const r = await checked(
        app,
        c,
        step,
        web(cmd.actor),
        { operation: 'members:remove', params: { id, user_id } },
        () => app.delete(`/v1/organizations/${id}/members/${user_id}`, web(cmd.actor)),
        member(cmd.actor, cmd.org),
      );
      record({ user: cmd.actor }, 'members:remove', cmd.org, r);
      return;
    }
    case 'leave': {
      const id = w.orgs[cmd.org]!;
      const r = await checked(
        app,
        c,
        step,
        web(cmd.actor),
        { operation: 'members:leave', params: { id } },
        () => app.delete(`/v1/organizations/${id}/members/me`, web(cmd.actor)),
        member(cmd.actor, cmd.org),
      );
      record({ user: cmd.actor }, 'members:leave', cmd.org, r);
      return;
    }
    case 'deleteUser': {
      const r = await checked(
        app,
        c,
        step,
        web(cmd.actor),
        { operation: 'users:delete_me' },
        () => app.delete('/v1/users/me', web(cmd.actor)),
        true,
      );
      record({ user: cmd.actor }, 'users:delete_me', undefined, r);
      if (r.status === 204) w.users[cmd.actor]!.deleted = true;
      return;
    }
    case 'lifetime': {
      const id = w.orgs[cmd.org]!;
      const r = await checked(
        app,
        c,
        step,
        web(cmd.actor),
        { operation: 'organizations:update', params: { id } },
        () => app.patch(`/v1/organizations/${id}`, { max_token_lifetime_days: cmd.days }, web(cmd.actor)),
        member(cmd.actor, cmd.org),
      );
      record({ user: cmd.actor }, 'organizations:update', cmd.org, r);
      return;
    }
    case 'invite': {
      const id = w.orgs[cmd.org]!;
      const r = await checked(
        app,
        c,
        step,
        web(cmd.actor),
        { operation: 'invitations:create', params: { id } },
        () => app.post(`/v1/organizations/${id}/invitations`, { email: w.users[cmd.target]!.email, role: cmd.role }, web(cmd.actor)),
        member(cmd.actor, cmd.org),
      );
      record({ user: cmd.actor }, 'invitations:create', cmd.org, r);
      if (r.status !== 201) return;
      const invitation = r.body.id as string;
      const a = await checked(
        app,
        c,
        step,
        web(cmd.acceptor),
        { operation: 'invitations:accept', params: { id: invitation } },
        () => app.post(`/v1/invitations/${invitation}/accept`, undefined, web(cmd.acceptor)),
        true,
      );
      record({ user: cmd.acceptor }, 'invitations:accept', undefined, a);
      return;
    }
    case 'mint': {
      const id = w.orgs[cmd.org]!;
      const permissionsOfMaker = () => app.get(`/v1/organizations/${id}/permissions`, web(cmd.actor));
      const before = await permissionsOfMaker();
      const body = {
        organization_id: id,
        comment: 'between the rules',
        scopes: cmd.scopes,
        ...(cmd.days ? { expires_in: cmd.days * 86_400 } : {}),
      };
      const r = await checked(
        app,
        c,
        step,
        web(cmd.actor),
        { operation: 'organization_access_tokens:create', organization_id: id },
        () => app.post('/v1/organization-access-tokens/', body, web(cmd.actor)),
        member(cmd.actor, cmd.org),
      );
      record({ user: cmd.actor }, 'organization_access_tokens:create', cmd.org, r);
      if (r.status !== 201) return;
      const after = step.alone ? undefined : await permissionsOfMaker();
      // an organization without an account refuses finance reads to every subject, its tokens included
      // (they pass the policy and find no account, SPEC §5): no one can do more there than its maker
      const allowed = (answer: ApiResponse | undefined, operation: string) =>
        answer?.status === 200 &&
        answer.body.operations.some(
          (o: { operation: string; allowed: boolean; reason: string | null }) =>
            o.operation === operation && (o.allowed || o.reason === 'Organization has no account'),
        );
      for (const scope of cmd.scopes) {
        for (const row of ROWS) {
          if (row.access_class !== 'organization' || !row.scopes.includes(scope)) continue;
          // members management and access-token management admit users only (SPEC §5): such an operation is
          // not open to an organization token, whatever scope it carries
          if (row.policy !== null && USERS_ONLY_POLICIES.has(row.policy)) continue;
          if (before.status === 200 && !before.body.operations.some((o: { operation: string }) => o.operation === row.operation)) continue;
          invariant(
            c,
            'minted',
            allowed(before, row.operation) || allowed(after, row.operation),
            () =>
              `user ${cmd.actor} (role ${s.members[cmd.org]!.get(cmd.actor)}, permissions ${JSON.stringify(permissionsOf(s, cmd.org, s.members[cmd.org]!.get(cmd.actor)))}) ` +
              `minted ${scope}, which opens ${row.operation}, refused to it: ${JSON.stringify(
                before.body.operations?.find((o: { operation: string }) => o.operation === row.operation) ?? before.body,
              )}`,
          );
        }
      }
      w.tokens.push({ id: r.body.id, token: r.body.token, org: cmd.org, scopes: cmd.scopes });
      return;
    }
    case 'checkAbout': {
      // a check about another user answers what that user's own request (a web session) answers, to a
      // holder of members:manage asking about a member; every item is 404 to anyone else (SPEC §20)
      const id = w.orgs[cmd.org]!;
      const asks = [
        { item: { operation: 'organizations:get', params: { id } }, path: `/v1/organizations/${id}` },
        { item: { operation: 'members:list', params: { id } }, path: `/v1/organizations/${id}/members` },
        { item: { operation: 'organizations:permissions', params: { id } }, path: `/v1/organizations/${id}/permissions` },
        { item: { operation: 'products:list', organization_id: id }, path: `/v1/products/?organization_id=${id}` },
        { item: { operation: 'denials:list', params: { id } }, path: `/v1/organizations/${id}/denials` },
      ];
      const check = await app.post(
        '/v1/authorization/check',
        { user_id: w.users[cmd.target]!.id, checks: asks.map((a) => a.item) },
        web(cmd.actor),
      );
      bump(c.statuses, `authorization:check about a user ${check.status}`);
      if (!step.alone || check.status === 401) return;
      invariant(
        c,
        'check',
        check.status === 200,
        () => `a check about user ${cmd.target} answered ${check.status} ${JSON.stringify(check.body)}`,
      );
      const asker = s.members[cmd.org]!.get(cmd.actor);
      const entitled =
        permissionsOf(s, cmd.org, asker).includes('members:manage') && member(cmd.target, cmd.org) && !w.users[cmd.target]!.deleted;
      for (const [i, a] of asks.entries()) {
        const predicted = check.body.results[i];
        const expected = entitled ? (await app.get(a.path, web(cmd.target))).status : 404;
        invariant(
          c,
          'check',
          predicted.status === expected,
          () =>
            `user ${cmd.actor} (${asker}) asked about user ${cmd.target} (${s.members[cmd.org]!.get(cmd.target)}): ${a.item.operation} predicted ${predicted.status}, the user's request answers ${expected}`,
        );
      }
      return;
    }
    case 'useToken': {
      const t = w.tokens[cmd.token % Math.max(1, w.tokens.length)];
      if (!t) return;
      const cred = { token: t.token };
      // across: the same requests aimed at the other organization, which the token never reaches
      const target = cmd.across ? 1 - t.org : t.org;
      const id = w.orgs[target]!;
      const families = [...new Set(t.scopes.map((x) => x.replace(/_(read|write)$/, '')))];
      for (const family of families) {
        const use = TOKEN_USES[family];
        if (!use) continue;
        const r = await checked(app, c, step, cred, use.item(id), () => use.request(app, id, cred), !cmd.across);
        record({ token: t }, use.item(id).operation, target, r);
        if (family === 'events' && r.status === 200) {
          for (const e of r.body.items)
            invariant(
              c,
              'audit',
              e.actor?.ip == null && e.actor?.user_agent == null,
              () => `an organization token reads actor ${JSON.stringify(e.actor)}`,
            );
        }
      }
      // a check about a user from an organization token: 404 an item, never a 5xx (SPEC §20); a token that
      // authenticates nobody any more (its organization deleted with its last member) is a 401, as its requests are
      if (step.alone) {
        const about = await app.post(
          '/v1/authorization/check',
          { user_id: w.users[0]!.id, checks: [{ operation: 'organizations:get', params: { id } }] },
          cred,
        );
        const refused = about.status === 401 && (await app.get(`/v1/organizations/${id}`, cred)).status === 401;
        invariant(
          c,
          'check',
          refused || (about.status === 200 && about.body.results[0].status === 404),
          () => `a check with user_id from an organization token answered ${about.status} ${JSON.stringify(about.body)}`,
        );
      }
      return;
    }
  }
}

/** One request a token family makes with an organization token, and the check item naming it. */
const TOKEN_USES: Record<
  string,
  {
    item: (org: string) => { operation: string; params?: Record<string, string>; organization_id?: string };
    request: (app: TestApp, org: string, cred: Credential) => Promise<ApiResponse>;
  }
> = {
  organizations: {
    item: (id) => ({ operation: 'organizations:update', params: { id } }),
    request: (app, id, cred) => app.patch(`/v1/organizations/${id}`, { max_token_lifetime_days: 3650 }, cred),
  },
  members: {
    item: (id) => ({ operation: 'members:list', params: { id } }),
    request: (app, id, cred) => app.get(`/v1/organizations/${id}/members`, cred),
  },
  products: {
    item: (organization_id) => ({ operation: 'products:create', organization_id }),
    request: (app, organization_id, cred) =>
      app.post('/v1/products/', { organization_id, name: 'P', price_amount: 100, price_currency: 'usd' }, cred),
  },
  customers: {
    item: (organization_id) => ({ operation: 'customers:create', organization_id }),
    request: (app, organization_id, cred) => app.post('/v1/customers/', { organization_id, email: `c-${randomUUID()}@example.com` }, cred),
  },
  orders: {
    item: (o) => ({ operation: 'orders:list', organization_id: o }),
    request: (app, o, cred) => app.get(`/v1/orders/?organization_id=${o}`, cred),
  },
  transactions: {
    item: (o) => ({ operation: 'transactions:list', organization_id: o }),
    request: (app, o, cred) => app.get(`/v1/transactions/?organization_id=${o}`, cred),
  },
  payouts: {
    item: (id) => ({ operation: 'organizations:get_account', params: { id } }),
    request: (app, id, cred) => app.get(`/v1/organizations/${id}/account`, cred),
  },
  refunds: {
    item: (o) => ({ operation: 'refunds:list', organization_id: o }),
    request: (app, o, cred) => app.get(`/v1/refunds/?organization_id=${o}`, cred),
  },
  events: {
    item: (o) => ({ operation: 'events:list', organization_id: o }),
    request: (app, o, cred) => app.get(`/v1/events/?organization_id=${o}&limit=100`, cred),
  },
  webhooks: {
    item: (organization_id) => ({ operation: 'webhook_endpoints:create', organization_id }),
    request: (app, organization_id, cred) =>
      app.post(
        '/v1/webhook-endpoints/',
        { organization_id, url: `https://hooks.example.com/${randomUUID()}`, event_types: ['order.paid'] },
        cred,
      ),
  },
  customer_sessions: {
    item: (organization_id) => ({ operation: 'customers:list', organization_id }),
    request: (app, o, cred) => app.get(`/v1/customers/?organization_id=${o}`, cred),
  },
};

// ---------------------------------------------------------------- invariants after a step
async function afterStep(app: TestApp, w: World, c: Counters, step: Step, mark: Date, before: Snapshot): Promise<void> {
  const after = await snapshot(app, w);
  // admin (and the data's other invariants): what `rowgate db verify` finds, in the case's organizations
  const found = await verifyData(app.owner, w.orgs);
  invariant(c, 'admin', found.length === 0, () => `db verify: ${found.map((f) => `${f.table} ${f.id}: ${f.problem}`).join('; ')}`);
  // denials: every row the step wrote lies within its caller's reach
  const denials = await app.sql<{
    organization_id: string;
    user_id: string | null;
    credential_id: string | null;
    credential_kind: string;
    operation: string;
  }>(
    `select organization_id, user_id, credential_id, credential_kind, operation from rowgate.denials
     where created_at >= $1 and (user_id = any($2) or credential_id = any($3))`,
    [mark, w.users.map((u) => u.id), w.tokens.map((t) => t.id)],
  );
  for (const d of denials) {
    const o = w.orgs.indexOf(d.organization_id);
    const u = w.users.findIndex((x) => x.id === d.user_id);
    const token = w.tokens.find((t) => t.id === d.credential_id);
    const within = token ? token.org === o : u >= 0 && o >= 0 && (before.members[o]!.has(u) || after.members[o]!.has(u));
    invariant(c, 'denials', within, () => `a denial of ${d.operation} by ${JSON.stringify(d)} lies outside the caller's reach`);
  }
  // denials: every 403 on an organization the caller reached left a row there
  for (const m of step.made) {
    if (m.status !== 403 || m.org === undefined) continue;
    const reached = m.caller.token
      ? m.caller.token.org === m.org
      : before.members[m.org]!.has(m.caller.user!) && after.members[m.org]!.has(m.caller.user!);
    if (!reached) continue;
    const kept = denials.some(
      (d) =>
        d.organization_id === w.orgs[m.org!] &&
        d.operation === m.operation &&
        (m.caller.token ? d.credential_id === m.caller.token.id : d.user_id === w.users[m.caller.user!]!.id),
    );
    invariant(
      c,
      'denials',
      kept,
      () =>
        `a 403 of ${m.operation} (${m.body?.error}) by ${m.caller.token ? 'a token' : `user ${m.caller.user}`} was not recorded in its organization`,
    );
  }
  w.snapshot = after;
}

/** audit: actor.ip and actor.user_agent reach only users whose role holds organization:manage. */
async function auditReach(app: TestApp, w: World, c: Counters): Promise<void> {
  for (const [o, members] of w.snapshot.members.entries()) {
    for (const [u, role] of members) {
      if (w.users[u]!.deleted) continue;
      const r = await app.get(`/v1/events/?organization_id=${w.orgs[o]}&limit=100`, { session: w.users[u]!.session });
      if (r.status !== 200) continue;
      const manager = permissionsOf(w.snapshot, o, role).includes('organization:manage');
      for (const e of r.body.items) {
        const shown = e.actor?.ip != null || e.actor?.user_agent != null;
        if (shown) bump(c.invariants, 'audit shown to a manager');
        invariant(c, 'audit', manager || !shown, () => `user ${u} (role ${role}) reads actor ${JSON.stringify(e.actor)} of ${e.type}`);
      }
    }
  }
}

// ---------------------------------------------------------------- fast-check's commands
interface Real {
  app: TestApp;
  w: World;
  c: Counters;
}

const label = (cmd: Cmd) =>
  `${cmd.kind}(${Object.entries(cmd)
    .filter(([k]) => k !== 'kind')
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(' ')})`;

class StepCommand implements fc.AsyncCommand<object, Real> {
  readonly cmds: Cmd[];
  constructor(cmds: Cmd[]) {
    this.cmds = cmds;
  }
  check = () => true;
  async run(_m: object, r: Real): Promise<void> {
    const step: Step = { made: [], alone: this.cmds.length === 1 };
    const before = r.w.snapshot;
    const mark = (await r.app.sql<{ now: Date }>('select clock_timestamp() as now'))[0]!.now;
    if (this.cmds.length > 1) r.c.concurrentPairs++;
    await Promise.all(this.cmds.map((cmd) => run(r.app, r.w, r.c, cmd, step)));
    r.c.steps++;
    await afterStep(r.app, r.w, r.c, step, mark, before);
  }
  toString = () => (this.cmds.length === 1 ? label(this.cmds[0]!) : `together[${this.cmds.map(label).join(', ')}]`);
}

/**
 * What the admins of organization A (users 0 and 1 at the start) may do at the same moment:
 * demote, remove, leave, delete themselves, or mint while the other changes roles. Paired
 * with each other more often than chance would, since their races are what matter.
 */
const admin = fc.constantFrom(0, 1);
const racing: fc.Arbitrary<Cmd> = fc.oneof(
  fc.record({
    kind: fc.constant('setRole' as const),
    actor: admin,
    org: fc.constant(0),
    target: admin,
    role: fc.constantFrom('member', 'finance', 'ra'),
  }),
  fc.record({ kind: fc.constant('remove' as const), actor: admin, org: fc.constant(0), target: admin }),
  fc.record({ kind: fc.constant('leave' as const), actor: admin, org: fc.constant(0) }),
  fc.record({ kind: fc.constant('deleteUser' as const), actor: admin }),
  fc.record({
    kind: fc.constant('mint' as const),
    actor,
    org: fc.constant(0),
    scopes: fc.subarray(ORG_SCOPES, { minLength: 1, maxLength: 3 }),
    days: fc.constant(null),
  }),
);
export const stepsArb = fc.commands(
  [
    fc.oneof(
      { arbitrary: cmdArb.map((c) => new StepCommand([c])), weight: 6 },
      { arbitrary: fc.tuple(cmdArb, cmdArb).map(([a, b]) => new StepCommand([a, b])), weight: 1 },
      { arbitrary: fc.tuple(racing, racing).map(([a, b]) => new StepCommand([a, b])), weight: 1 },
    ),
  ],
  { maxCommands: 8 },
);

/**
 * Fresh users and organizations: A with admins 0 and 1, user 2 in its role `ra` that holds
 * `access_tokens:manage` alone, and an account administered by 0; B with admin 3, finance 2
 * and no account. Two admins and a token manager from the start, so that their races and
 * their mints are one step away.
 */
async function newWorld(app: TestApp): Promise<World> {
  const users = await Promise.all(Array.from({ length: USERS }, () => app.user()));
  const a = (await app.organization(users[0]!.id)).id;
  const b = (await app.organization(users[3]!.id)).id;
  await app.membership(a, users[1]!.id, 'admin');
  await app.sql(`insert into rowgate.organization_roles (organization_id, name, permissions) values ($1, 'ra', '{access_tokens:manage}')`, [
    a,
  ]);
  await app.membership(a, users[2]!.id, 'ra');
  await app.membership(b, users[2]!.id, 'finance');
  await app.account(a, users[0]!.id);
  const w: World = {
    users: users.map((u) => ({ ...u, deleted: false })),
    orgs: [a, b],
    tokens: [],
    snapshot: { members: [], roles: [] },
  };
  w.snapshot = await snapshot(app, w);
  return w;
}

/** What a run covered, for its log: commands by kind, pairs at once, invariants checked, answers. */
export function coverage(c: Counters): string {
  const sorted = (r: Record<string, number>) =>
    Object.entries(r)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
  return [
    `${c.cases} cases, ${c.steps} steps, ${c.concurrentPairs} of them pairs at once`,
    `commands: ${sorted(c.commands)}`,
    `invariants checked: ${sorted(c.invariants)}`,
    `answers: ${sorted(c.statuses)}`,
  ].join('\n  ');
}

export async function runBetweenRules(
  app: TestApp,
  options: { numRuns: number; seed: number; progress?: (c: Counters) => void },
): Promise<Counters> {
  const c = newCounters();
  const property = fc.asyncProperty(stepsArb, async (steps) => {
    const w = await newWorld(app);
    await fc.asyncModelRun(() => ({ model: {}, real: { app, w, c } }), steps);
    await auditReach(app, w, c);
    c.cases++;
    if (options.progress && c.cases % 500 === 0) options.progress(c);
  });
  await fc.assert(property, { numRuns: options.numRuns, seed: options.seed, endOnFailure: false });
  return c;
}
