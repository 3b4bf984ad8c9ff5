// The operations of the API as the database knows them (SPEC §20): one row per
// `/v1` operation of the route table, written into rowgate_hidden.operations by a
// migration (`node scripts/write-operations.ts` prints the part), so that
// `POST /v1/authorization/check`, GraphQL and analysts' `rowgate.check()` explain
// with the same SQL that enforces. test/authorization-check.test.ts fails when the
// table and the route table differ.
//
// Every row derives from a route entry: its access, and its `explanation` (how its
// resource is found and which policy it asks) or else its `authorize`; an anonymous
// endpoint finds nothing. This module names no resource and no operation.
import { PERMISSIONS, policyPermissions } from '../auth/authorize.ts';
import { explain, type Explanation, type Lookup } from './explanation.ts';
import { access, type Access, isAnonymous, type Route } from './route-declaration.ts';

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

/** The explanation a route declares: its own, else its `authorize`'s; an anonymous endpoint finds nothing. */
export function explanation(route: Exclude<Route, { access: null }>): Explanation {
  if (route.explanation) return route.explanation;
  const a = route.authorize;
  if (a) return { lookup: 'authorize', resource: a.resource, match: { [a.param ?? 'id']: 'id' }, policy: a.policy };
  if (isAnonymous(route.access)) return explain.none;
  throw new Error(`${route.operationId}: its route declares neither an explanation nor authorize (src/http/route-declaration.ts)`);
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
