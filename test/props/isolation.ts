// The tenant-isolation property (OWASP API1): in a generated world,
// every probe through REST (lists, gets and writes, in sequence, the model
// following the writes), the same reads through GraphQL and through an
// analyst's SQL session agree with the reference model of test/props/model.ts.
//
// One fast-check case = one world (built in one round trip) + a few REST probes
// + one GraphQL read of every collection + one analyst read of every table.
// A failure throws with the world, the probes run so far and the difference:
// fast-check then shrinks the world and the probes to a minimal reproduction.
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import { inject } from 'vitest';
import { grantAnalyst, revokeAnalyst } from '../../src/db/analysts.ts';
import { newLoginName } from '../../src/db/sql-logins.ts';
import { withDatabase } from '../database-server.ts';
import type { ApiResponse, TestApp } from '../harness.ts';
import {
  authenticate,
  COLLECTION_SCOPES,
  describeCredential,
  describeModel,
  expect as expectOf,
  probeArb,
  expandScopes,
  READ_SCOPES,
  visible,
  worldArb,
  type Expected,
  type MCredential,
  type Model,
  type Probe,
  type Request,
  type Subject,
  type Visible,
  type WorldSpec,
} from './model.ts';
import { buildWorld, tag } from './world.ts';

export interface Counters {
  cases: number;
  probes: number;
  restRequests: number;
  graphqlRequests: number;
  analystQueries: number;
  sqlLoginQueries: number;
  byStatus: Record<number, number>;
}

export const newCounters = (): Counters => ({
  cases: 0,
  probes: 0,
  restRequests: 0,
  graphqlRequests: 0,
  analystQueries: 0,
  sqlLoginQueries: 0,
  byStatus: {},
});

export class Mismatch extends Error {}

function auth(c: MCredential) {
  return c.kind === 'web_session' ? { session: c.token } : { token: c.token };
}

const sorted = (xs: string[]) => [...xs].sort();
const show = (x: unknown) => JSON.stringify(x);

function keyOf(request: Request, item: Record<string, unknown>): string {
  if (request.path.startsWith('/v1/transactions/')) return `${item.order_id}/${item.type}`;
  if (request.path.startsWith('/v1/refunds/')) return String(item.order_id);
  if (/^\/v1\/organizations\/[^/]+\/members\b/.test(request.path)) return String(item.user_id);
  return String(item.id);
}

/** The difference between the answer and the model's, or null when they agree. */
function compare(request: Request, expected: Expected, res: ApiResponse): string | null {
  const got = { status: res.status, body: res.body };
  const wrong = (what: string) => `${what}: expected ${describeExpected(expected)}, got ${res.status} ${show(res.body).slice(0, 600)}`;
  if (res.status !== expected.status) return wrong('status');
  switch (expected.status) {
    case 200:
    case 201:
      if ('ids' in expected) {
        const items: Record<string, unknown>[] = res.body?.items ?? [];
        const ids = sorted(items.map((i) => keyOf(request, i)));
        if (show(ids) !== show(expected.ids)) return wrong('items');
        if (res.body.pagination?.total_count !== expected.total) return wrong('pagination.total_count');
        return null;
      }
      if (expected.id !== 'new' && (res.body?.id ?? res.body?.user_id) !== expected.id) return wrong('id');
      return null;
    case 204:
      return res.body === '' ? null : wrong('body');
    case 401:
      return res.body?.error === 'Unauthorized' ? null : wrong('error');
    case 403:
      if (res.body?.error !== expected.error) return wrong('error');
      if (expected.error === 'NotPermitted' && res.body.detail !== expected.detail) return wrong('detail');
      return null;
    case 404:
      return res.body?.error === 'ResourceNotFound' ? null : wrong('error');
    case 422: {
      if (res.body?.error !== 'RequestValidationError') return wrong('error');
      const locs = (res.body.detail as { loc: string[] }[]).map((i) => i.loc.join('.'));
      return locs.includes(expected.loc) ? null : wrong('detail.loc');
    }
  }
  void got;
  return null;
}

function describeExpected(e: Expected): string {
  switch (e.status) {
    case 200:
    case 201:
      return 'ids' in e ? `${e.status} with ${e.ids.length} item(s) ${show(e.ids)}` : `${e.status} ${e.id === 'new' ? '(created)' : e.id}`;
    case 403:
      return e.error === 'NotPermitted' ? `403 NotPermitted "${e.detail}"` : '403 InsufficientScope';
    case 422:
      return `422 at ${e.loc}`;
    default:
      return String(e.status);
  }
}

// ---------------------------------------------------------------------------
// GraphQL: one query reads every collection.

const GRAPHQL_FIELDS: Record<keyof Visible, string> = {
  organizations: 'allOrganizations { nodes { rowId } }',
  memberships: 'allMemberships { nodes { userId organizationId } }',
  users: 'allUsers { nodes { rowId } }',
  colleagues: 'allColleagues { nodes { rowId } }',
  products: 'allProducts(includeArchived: YES) { nodes { rowId } }',
  customers: 'allCustomers { nodes { rowId } }',
  customer_members: 'allCustomerMembers { nodes { rowId } }',
  // no inner aliases: every key of this map is one, and SPEC §13 allows 20;
  // the orders' field takes each of ORDERS_FIELDS in turn
  orders: 'allOrders { nodes { rowId } }',
  transactions: 'allTransactions { nodes { orderId type } }',
  refunds: 'allRefunds { nodes { orderId } }',
  accounts: 'allAccounts { nodes { rowId } }',
  payout_accounts: 'allPayoutAccounts { nodes { rowId } }',
  organization_roles: 'allOrganizationRoles { nodes { rowId } }',
};
/**
 * allOrders as PostGraphile reads it (the primary key's order) and in REST's
 * per-organization shape (src/graphql/organization-pages.ts: an indexed order,
 * forwards and backwards): every shape must return exactly the visible orders.
 */
const ORDERS_FIELDS = [
  'allOrders { nodes { rowId } }',
  'allOrders(orderBy: [CREATED_AT_DESC]) { nodes { rowId } }',
  'allOrders(orderBy: [AMOUNT_ASC, PRIMARY_KEY_ASC], last: 100) { nodes { rowId } }',
  'allOrders(orderBy: [CREATED_AT_ASC], first: 100, offset: 0) { nodes { rowId } }',
];
const graphqlQuery = (orders: string) => `{
  ${Object.entries({ ...GRAPHQL_FIELDS, orders })
    .map(([key, field]) => `${key}: ${field}`)
    .join('\n  ')}
  liveProducts: allProducts { nodes { rowId } }
}`;
const GRAPHQL_QUERIES = ORDERS_FIELDS.map(graphqlQuery);
let graphqlQueries = 0;

type Node = { rowId?: string; userId?: string; organizationId?: string; orderId?: string; type?: string };
const nodeKey = (n: Node) =>
  n.rowId ?? (n.userId ? `${n.userId}/${n.organizationId}` : n.type === undefined ? String(n.orderId) : `${n.orderId}/${n.type}`);

export interface GraphqlCheck {
  /** rows beyond the subject's RLS visibility (the isolation property) */
  isolation: string[];
  /** a credential holding the read scope must see exactly its rows (and archived products only when asked) */
  exact: string[];
  /** a credential lacking the read scope must see nothing (SPEC §3: scopes are a first-pass filter) */
  scopes: string[];
}

async function graphqlCheck(app: TestApp, m: Model, c: MCredential): Promise<GraphqlCheck> {
  const out: GraphqlCheck = { isolation: [], exact: [], scopes: [] };
  const s = authenticate(m, c);
  const res = await app.request('POST', '/graphql', {
    ...auth(c),
    headers: { accept: 'application/json' },
    body: { query: GRAPHQL_QUERIES[graphqlQueries++ % GRAPHQL_QUERIES.length] },
  });
  if (!s) {
    if (res.status !== 401 || res.body?.error !== 'Unauthorized')
      out.isolation.push(`expected 401 Unauthorized, got ${res.status} ${show(res.body).slice(0, 300)}`);
    return out;
  }
  if (res.status !== 200) {
    out.isolation.push(`expected 200, got ${res.status} ${show(res.body).slice(0, 300)}`);
    return out;
  }
  const data = (res.body?.data ?? {}) as Record<string, { nodes: Node[] } | null>;
  const exact = visible(m, s);
  const reachable = visible(m, s, false);
  const errors = (res.body?.errors ?? []) as { message: string; path?: string[] }[];
  for (const key of Object.keys(GRAPHQL_FIELDS) as (keyof Visible)[]) {
    const got = sorted((data[key]?.nodes ?? []).map(nodeKey));
    const bound = new Set(reachable[key]);
    const beyond = got.filter((k) => !bound.has(k));
    if (beyond.length) out.isolation.push(`${key}: ${beyond.length} row(s) beyond the subject's reach: ${show(beyond)}`);
    if (show(got) !== show(sorted(exact[key]))) {
      const fieldErrors = errors.filter((e) => e.path?.[0] === key).map((e) => e.message);
      out.exact.push(
        `${key}: expected ${show(sorted(exact[key]))}, got ${show(got)}${fieldErrors.length ? ` (errors: ${show(fieldErrors)})` : ''}`,
      );
    }
    if (!COLLECTION_SCOPES[key].some((x) => s.scopes.has(x)) && got.length) {
      out.scopes.push(
        `${key}: the credential holds none of ${COLLECTION_SCOPES[key].join(', ')}, yet GraphQL returned ${got.length} row(s)`,
      );
    }
  }
  // archived products are omitted unless asked for (SPEC §9)
  const live = sorted(m.products.filter((p) => exact.products.includes(p.id) && !p.archived).map((p) => p.id));
  const gotLive = sorted((data.liveProducts?.nodes ?? []).map(nodeKey));
  if (show(gotLive) !== show(live)) out.exact.push(`allProducts (default: archived omitted): expected ${show(live)}, got ${show(gotLive)}`);
  return out;
}

// ---------------------------------------------------------------------------
// The analyst: a LOGIN role bound to one user of the world reads every table.

const ANALYST_QUERY = `
  select 'organizations' as k, id::text as v from rowgate.organizations
  union all select 'memberships', user_id::text || '/' || organization_id::text from rowgate.memberships
  union all select 'users', id::text from rowgate.users
  union all select 'colleagues', id::text from rowgate.colleagues
  union all select 'products', id::text from rowgate.products
  union all select 'customers', id::text from rowgate.customers
  union all select 'customer_members', id::text from rowgate.customer_members
  union all select 'orders', id::text from rowgate.orders
  union all select 'transactions', order_id::text || '/' || type from rowgate.transactions
  union all select 'refunds', order_id::text from rowgate.refunds
  union all select 'accounts', id::text from rowgate.accounts
  union all select 'payout_accounts', id::text from rowgate.payout_accounts
  union all select 'organization_roles', id::text from rowgate.organization_roles`;

export interface Analyst {
  login: string;
  client: pg.Client;
  release(): Promise<void>;
}

/** An analyst login (rowgate analysts grant), bound to a placeholder user until a world rebinds it. */
export async function openAnalyst(app: TestApp): Promise<Analyst> {
  const placeholder = await app.user();
  const login = `${inject('runId')}_props_${tag()}`;
  const granted = await grantAnalyst({ ownerUrl: app.ownerUrl, userId: placeholder.id, login });
  const client = new pg.Client({ connectionString: granted.database_url });
  client.on('error', () => {});
  await client.connect();
  return {
    login,
    client,
    release: async () => {
      await client.end().catch(() => {});
      await revokeAnalyst({ ownerUrl: app.ownerUrl, login });
    },
  };
}

async function analystCheck(analyst: Analyst, m: Model): Promise<string[]> {
  const user = m.users[m.analyst]!;
  // an analyst's login counts as a web session (docs/decisions.md)
  const s: Subject | null = user.deleted
    ? null
    : { kind: 'user', user: m.analyst, scopes: new Set(READ_SCOPES), impersonation: false, web: true };
  const { rows } = await analyst.client.query<{ k: keyof Visible; v: string }>(ANALYST_QUERY);
  const v = visible(m, s);
  const problems: string[] = [];
  for (const key of Object.keys(v) as (keyof Visible)[]) {
    const got = sorted(rows.filter((r) => r.k === key).map((r) => r.v));
    if (show(got) !== show(sorted(v[key]))) problems.push(`${key}: expected ${show(sorted(v[key]))}, got ${show(got)}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------
// An organization's SQL login (SPEC §24): bound in each world to one organization with
// some read scopes, it reads every table exactly as an organization token with those
// scopes would (rowgate.users is not granted to it at all).

const SQL_LOGIN_QUERY = ANALYST_QUERY.replace("\n  union all select 'users', id::text from rowgate.users", '');
const ORGANIZATION_READ_SCOPES = READ_SCOPES.filter((s) => !s.includes(':'));

export interface SqlLogin {
  login: string;
  client: pg.Client;
  release(): Promise<void>;
}

/** A login role in the logins' group, as rowgate.create_sql_credential makes it; each world binds it anew. */
export async function openSqlLogin(app: TestApp): Promise<SqlLogin> {
  const login = newLoginName();
  const password = randomUUID();
  const root = new pg.Client({ connectionString: withDatabase(inject('superuserUrl'), app.database) });
  await root.connect();
  await root.query(`create role ${login} login password '${password}'`);
  await root.query(`grant rowgate_sql_login to ${login} with inherit true, set false`);
  const url = new URL(app.ownerUrl);
  url.username = login;
  url.password = password;
  const client = new pg.Client({ connectionString: url.toString() });
  client.on('error', () => {});
  await client.connect();
  return {
    login,
    client,
    release: async () => {
      await client.end().catch(() => {});
      await root.query(`drop role if exists ${login}`).catch(() => {});
      await root.end();
    },
  };
}

/** Binds the login to one of the world's organizations with some read scopes, and compares what it reads with the model. */
async function sqlLoginCheck(app: TestApp, login: SqlLogin, m: Model, pick: number): Promise<{ bound: string; problems: string[] }> {
  const org = pick % m.orgs.length;
  const scopes = ORGANIZATION_READ_SCOPES.filter((_, i) => (pick + i) % 3 !== 0);
  await app.owner.query(
    `insert into rowgate.sql_credentials (organization_id, login, comment, scopes) values ($1, $2, 'props', $3)
     on conflict (login) do update set organization_id = excluded.organization_id, scopes = excluded.scopes`,
    [m.orgs[org]!.id, login.login, scopes],
  );
  const s: Subject | null = m.orgs[org]!.deleted ? null : { kind: 'organization', org, scopes: expandScopes(scopes) };
  const { rows } = await login.client.query<{ k: keyof Visible; v: string }>(SQL_LOGIN_QUERY);
  const v = visible(m, s);
  const problems: string[] = [];
  for (const key of Object.keys(v) as (keyof Visible)[]) {
    if (key === 'users') continue;
    const got = sorted(rows.filter((r) => r.k === key).map((r) => r.v));
    if (show(got) !== show(sorted(v[key]))) problems.push(`${key}: expected ${show(sorted(v[key]))}, got ${show(got)}`);
  }
  return { bound: `org${org} with ${scopes.join(' ')}`, problems };
}

// ---------------------------------------------------------------------------
// The properties.

export interface CaseInput {
  world: WorldSpec;
  probes: Probe[];
  graphql: number;
}

export const caseArb = (maxProbes: number): fc.Arbitrary<CaseInput> =>
  fc.record({ world: worldArb(), probes: fc.array(probeArb, { minLength: 1, maxLength: maxProbes }), graphql: fc.nat({ max: 7 }) });

function fresh() {
  const t = tag();
  return { id: randomUUID(), slug: `n-${t}`, email: `n-${t}@example.com` };
}

/**
 * One case of the isolation property: REST probes, GraphQL (isolation and
 * exactness for credentials holding the read scope), the analyst. Throws a
 * Mismatch describing the world, the steps and the difference.
 */
export async function isolationCase(app: TestApp, analyst: Analyst, input: CaseInput, counters: Counters, login?: SqlLogin) {
  const { model, sql } = buildWorld(input.world, app.secret, analyst.login);
  const world = describeModel(model);
  await app.owner.query(sql);
  const steps: string[] = [];
  const fail = (what: string) => {
    throw new Mismatch(`${what}\n--- world (before the probes) ---\n${world}\n--- probes run ---\n${steps.join('\n') || '(none)'}`);
  };
  for (const probe of input.probes) {
    const planned = expectOf(model, probe, fresh);
    if (!planned) continue;
    const { credential, request, expected } = planned;
    const step = `${request.method} ${request.path}${request.body ? ` ${show(request.body)}` : ''} with #${model.credentials.indexOf(credential)} ${describeCredential(credential)}`;
    steps.push(`${step} → expected ${describeExpected(expected)}`);
    const res = await app.request(request.method, request.path, { ...auth(credential), body: request.body });
    counters.restRequests++;
    counters.probes++;
    counters.byStatus[res.status] = (counters.byStatus[res.status] ?? 0) + 1;
    const problem = compare(request, expected, res);
    if (problem) fail(`REST ${step}\n${problem}`);
    if ('apply' in expected && expected.apply) {
      if (expected.status === 201) expected.apply(model, res.body.id);
      else (expected.apply as (m: Model) => void)(model);
    }
  }
  const credential = model.credentials[input.graphql % model.credentials.length]!;
  const g = await graphqlCheck(app, model, credential);
  counters.graphqlRequests++;
  const graphqlProblems = [...g.isolation, ...g.exact];
  if (graphqlProblems.length) {
    fail(`GraphQL with #${model.credentials.indexOf(credential)} ${describeCredential(credential)}:\n  ${graphqlProblems.join('\n  ')}`);
  }
  const analystProblems = await analystCheck(analyst, model);
  counters.analystQueries++;
  if (analystProblems.length) fail(`analyst bound to user${model.analyst}:\n  ${analystProblems.join('\n  ')}`);
  if (login) {
    const checked = await sqlLoginCheck(app, login, model, input.graphql + input.probes.length);
    counters.sqlLoginQueries++;
    if (checked.problems.length) fail(`SQL login bound to ${checked.bound}:\n  ${checked.problems.join('\n  ')}`);
  }
  counters.cases++;
}

/** One case of the GraphQL read-scope property: a credential lacking a read scope reads none of those rows. */
export async function graphqlScopesCase(app: TestApp, input: { world: WorldSpec; graphql: number }, counters: Counters) {
  const { model, sql } = buildWorld(input.world, app.secret, null);
  await app.owner.query(sql);
  const credential = model.credentials[input.graphql % model.credentials.length]!;
  const g = await graphqlCheck(app, model, credential);
  counters.graphqlRequests++;
  counters.cases++;
  if (g.scopes.length) {
    throw new Mismatch(
      `GraphQL with #${model.credentials.indexOf(credential)} ${describeCredential(credential)}:\n  ${g.scopes.join('\n  ')}\n--- world ---\n${describeModel(model)}`,
    );
  }
}

export interface RunOptions {
  numRuns: number;
  seed?: number;
  maxProbes?: number;
  /** progress lines (the long run) */
  progress?: (counters: Counters) => void;
}

export async function runIsolation(app: TestApp, options: RunOptions): Promise<Counters> {
  const counters = newCounters();
  const analyst = await openAnalyst(app);
  const login = await openSqlLogin(app);
  try {
    await fc.assert(
      fc.asyncProperty(caseArb(options.maxProbes ?? 6), async (input) => {
        await isolationCase(app, analyst, input, counters, login);
        if (options.progress && counters.cases % 500 === 0) options.progress(counters);
      }),
      { numRuns: options.numRuns, seed: options.seed, endOnFailure: false },
    );
  } finally {
    await analyst.release();
    await login.release();
  }
  return counters;
}

export async function runGraphqlScopes(app: TestApp, options: RunOptions): Promise<Counters> {
  const counters = newCounters();
  await fc.assert(
    fc.asyncProperty(fc.record({ world: worldArb(), graphql: fc.nat({ max: 7 }) }), (input) => graphqlScopesCase(app, input, counters)),
    { numRuns: options.numRuns, seed: options.seed },
  );
  return counters;
}
