// The operations of the API as the database knows them (SPEC §20): one row per
// `/v1` operation of the route table, written into rowgate_hidden.operations by a
// migration (`node scripts/write-operations.ts` prints the part), so that
// `POST /v1/authorization/check`, GraphQL and analysts' `rowgate.check()` explain
// with the same SQL that enforces. test/authorization-check.test.ts fails when the
// table and the route table differ.
//
// A route that declares `authorize` says how its resource is found and which policy
// guards it; for the others (lists, creates, reads through row-level security,
// user-personal endpoints), `explained` below says it, for every operationId.
import { PERMISSIONS, type Policy, policyPermissions } from '../auth/authorize.ts';
import { access, type Access, isAnonymous, type Route } from './route-declaration.ts';

/**
 * How the database finds what an operation acts on (SPEC §5 step 3):
 * - `none`: nothing (user-personal endpoints, sign-in): allowed once the credential and scope pass;
 * - `list`: a list; an `organization_id`, when named, must be reachable;
 * - `target`: a create in the organization named (the item's `organization_id`, or an
 *   Organization subject's own), then the policy;
 * - `authorize`: `rowgate_hidden.authorize(resource, params[param], policy)`, as the pipeline asks it;
 * - `visible`: the row of `rowgate.<resource>` whose columns equal the named path parameters, as
 *   row-level security shows it to the caller, then the policy;
 * - `invitee`: the invitation named by `id`, found only when it is the caller's to answer
 *   (rowgate_hidden.invitee_invitation_found, the predicate accepting and declining use).
 */
export type Lookup = 'none' | 'list' | 'target' | 'authorize' | 'visible' | 'invitee';

export interface Explanation {
  lookup: Lookup;
  /** the resource of `authorize`, or the table of `visible` */
  resource?: string;
  /** `authorize`: the path parameter naming the resource; `visible`: path parameter → column */
  match?: Record<string, string>;
  /** what rowgate_hidden.policy_denial (or the check itself: platform_admin) is asked */
  policy?: Policy | 'platform_admin';
}

const read = (resource: string, match: Record<string, string> = { id: 'id' }): Explanation => ({
  lookup: 'visible',
  resource,
  match,
  policy: 'read',
});
const own = (resource: string): Explanation => ({ lookup: 'visible', resource, match: { id: 'id' } });
const list: Explanation = { lookup: 'list' };
const none: Explanation = { lookup: 'none' };
const target = (policy: Policy): Explanation => ({ lookup: 'target', policy });

/** The operations whose route declares no `authorize`, or whose resource is found another way than it says. */
const explained: Record<string, Explanation> = {
  'users:me': none,
  'users:update_me': none,
  'users:delete_me': none,
  'personal_access_tokens:list': none,
  'personal_access_tokens:create': none,
  'personal_access_tokens:delete': own('personal_access_tokens'),
  'organizations:list': list,
  'organizations:get': read('organizations'),
  'organizations:create': none,
  // the membership is resolved (404) before the policy (403)
  'members:update': {
    lookup: 'visible',
    resource: 'memberships',
    match: { id: 'organization_id', user_id: 'user_id' },
    policy: 'members_management',
  },
  'members:remove': {
    lookup: 'visible',
    resource: 'memberships',
    match: { id: 'organization_id', user_id: 'user_id' },
    policy: 'members_management',
  },
  'accounts:create': target('organization:manage'),
  'organization_access_tokens:list': list,
  'organization_access_tokens:create': target('access_token_management'),
  'impersonations:create': { lookup: 'none', policy: 'platform_admin' },
  'products:list': list,
  'products:get': read('products'),
  'products:create': target('products:write'),
  'customers:get_external': read('customers', { external_id: 'external_id' }),
  'customers:update_external': { ...read('customers', { external_id: 'external_id' }), policy: 'customers:write' },
  'customers:delete_external': { ...read('customers', { external_id: 'external_id' }), policy: 'customers:write' },
  'customers:list': list,
  'customers:get': read('customers'),
  'customers:create': target('customers:write'),
  'customer_members:get': read('customer_members', { id: 'customer_id', member_id: 'id' }),
  'customer_members:update': { ...read('customer_members', { id: 'customer_id', member_id: 'id' }), policy: 'customers:write' },
  'customer_members:delete': { ...read('customer_members', { id: 'customer_id', member_id: 'id' }), policy: 'customers:write' },
  'customer_members:list_all': list,
  'orders:list': list,
  'orders:get': read('orders'),
  'orders:create': target('orders:write'),
  'refunds:list': list,
  'refunds:get': read('refunds'),
  'refunds:create': target('orders:write'),
  'transactions:list': list,
  'transactions:get': read('transactions'),
  'payout_accounts:list': list,
  'payout_accounts:create': target('finance_write'),
  'events:list': list,
  'events:get': read('events'),
  'events:feed': list,
  'webhook_endpoints:list': list,
  'webhook_endpoints:create': target('organization:manage'),
  'webhook_endpoints:delete': { lookup: 'authorize', resource: 'webhook_endpoint', match: { id: 'id' }, policy: 'organization:manage' },
  'webhook_endpoints:redeliver': { lookup: 'authorize', resource: 'webhook_endpoint', match: { id: 'id' }, policy: 'organization:manage' },
  'customer_sessions:create': target('customers:write'),
  'customer_portal:me': none,
  'customer_portal:update_me': none,
  'customer_portal:list_orders': none,
  'customer_portal:get_order': own('orders'),
  'login_code:request': none,
  'login_code:authenticate': none,
  'credentials:revoke': none,
  // leaving: the organization must be in reach; the last-admin rule depends on the data (a 422, not predicted)
  'members:leave': read('organizations'),
  // an invitation is the invitee's by its address, which the SQL of accept and decline checks (a 404 otherwise)
  'invitations:mine': none,
  'invitations:accept': { lookup: 'invitee', resource: 'invitations', match: { id: 'id' } },
  'invitations:decline': { lookup: 'invitee', resource: 'invitations', match: { id: 'id' } },
  'auth:logout': none,
  'oauth2:register': none,
  'oauth2_clients:list': none,
  'oauth2_clients:get': own('oauth2_clients'),
  'oauth2_clients:delete': own('oauth2_clients'),
  'oauth2:authorize': none,
  'oauth2:consent': none,
  'oauth2:token': none,
  'oauth2:revoke': none,
  'oauth2:introspect': none,
  'oauth2:userinfo': none,
  'authorization:operations': none,
  'authorization:check': none,
  'organizations:permissions': { lookup: 'authorize', resource: 'organization', match: { id: 'id' }, policy: 'read' },
};

/** One row of rowgate_hidden.operations. */
export interface OperationRow {
  operation: string;
  method: string;
  path: string;
  credentials: string[];
  scopes: string[];
  access_class: string;
  /** published: the policy that decides (`role_permission` for a permission), null where none */
  policy: string | null;
  permission: string | null;
  status: number;
  lookup: Lookup;
  resource: string | null;
  match: Record<string, string> | null;
  /** what rowgate_hidden.policy_denial is asked */
  policy_key: string | null;
}

const permissions = new Set<string>(PERMISSIONS);

const same = (a: Access, b: Access) =>
  a.credentials.join() === b.credentials.join() && [...a.scopes].sort().join() === [...b.scopes].sort().join();

function accessClass(a: Access): string {
  if (isAnonymous(a)) return 'anonymous';
  const named = Object.entries(access).find(([, v]) => typeof v !== 'function' && same(v as Access, a));
  if (named) return named[0].replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  if (same(access.organization(...a.scopes), a)) return 'organization';
  if (same(access.organizationUser(...a.scopes), a)) return 'organization_user';
  if (same(access.customerPortal(...a.scopes), a)) return 'customer_portal';
  if (a.scopes.length === 0) return 'any_credential';
  throw new Error(`no access class for ${JSON.stringify(a)}`);
}

/** The explanation of a route: its own `authorize`, unless `explained` says otherwise. */
export function explanation(route: Route): Explanation {
  const given = explained[route.operationId];
  if (given) return given;
  const a = 'authorize' in route ? route.authorize : undefined;
  if (a) return { lookup: 'authorize', resource: a.resource, match: { [a.param ?? 'id']: 'id' }, policy: a.policy };
  throw new Error(`${route.operationId}: no explanation (src/http/operations.ts)`);
}

/**
 * The rows of rowgate_hidden.operations for these routes: the `/v1` operations of the
 * published OpenAPI document (the API's routes: not the document itself, a public route
 * outside the API it describes), in operation order.
 */
export function operationRows(routes: readonly Route[]): OperationRow[] {
  return routes
    .filter((r): r is Exclude<Route, { access: null }> => r.path.startsWith('/v1/') && r.access !== null)
    .map((r) => {
      const e = explanation(r);
      const key = e.policy ?? null;
      const isPermission = key !== null && permissions.has(key);
      return {
        operation: r.operationId,
        method: r.method.toUpperCase(),
        path: r.path,
        credentials: [...r.access.credentials],
        scopes: [...r.access.scopes],
        access_class: accessClass(r.access),
        policy: key === null ? null : isPermission ? 'role_permission' : key,
        // a policy that requires a permission names it (SPEC §20)
        permission: isPermission ? key : key === null ? null : (policyPermissions[key as keyof typeof policyPermissions] ?? null),
        status: r.status,
        lookup: e.lookup,
        resource: e.resource ?? null,
        match: e.match ?? null,
        policy_key: key,
      };
    })
    .sort((a, b) => (a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0));
}

const literal = (value: unknown): string => {
  if (value === null) return 'null';
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return value.length ? `array[${value.map(literal).join(', ')}]` : `'{}'::text[]`;
  if (typeof value === 'object') return `${literal(JSON.stringify(value))}::jsonb`;
  return `'${String(value).replaceAll("'", "''")}'`;
};

/** The migration part that makes rowgate_hidden.operations what the route table says. */
export function operationsSql(routes: readonly Route[]): string {
  const rows = operationRows(routes);
  const columns = Object.keys(rows[0]!) as (keyof OperationRow)[];
  const values = rows.map((r) => `  (${columns.map((c) => literal(r[c])).join(', ')})`).join(',\n');
  return `-- The operations of the API (SPEC §20), as the route table declares them: written by
-- \`node scripts/write-operations.ts\` from src/server/route-table.ts and src/http/operations.ts, so
-- that a check is answered by the database that enforces it. test/authorization-check.test.ts
-- fails when this table and the route table differ; a migration that adds a route adds its row.
delete from rowgate_hidden.operations where operation not in (${rows.map((r) => literal(r.operation)).join(', ')});
insert into rowgate_hidden.operations (${columns.join(', ')}) values
${values}
on conflict (operation) do update set ${columns
    .filter((c) => c !== 'operation')
    .map((c) => `${c} = excluded.${c}`)
    .join(', ')};
`;
}
