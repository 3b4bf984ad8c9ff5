// Each route's `authorize` declaration against the database's own rules: the
// resource and policy are ones the SQL authorization functions know, the row-level
// security of the table the operation touches applies the same policy, and a
// deletion's declaration is the policy rowgate.delete_resource asks. A route that
// declares one policy while the database enforces another fails here.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Authorization, Policy } from '../src/auth/authorize.ts';
import type { ApiRoute } from '../src/http/route-declaration.ts';
import { apiRoutes } from '../src/server/route-table.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
let functions: Record<string, string>;
let policies: { table: string; command: string; expression: string }[];
let permissions: Set<string>;

beforeAll(async () => {
  app = await startTestApp();
  const definition = async (signature: string) =>
    (await app.sql<{ d: string }>('select pg_get_functiondef($1::regprocedure) as d', [signature]))[0]!.d;
  functions = {
    resolve: await definition('rowgate_hidden.resource_organization_ids(text, uuid[])'),
    policy: await definition('rowgate_hidden.policy_denial(uuid, text)'),
    delete: await definition('rowgate.delete_resource(text, uuid)'),
    addMember: await definition('rowgate.add_member(uuid, text, text)'),
    createWebhookEndpoint: await definition('rowgate.create_webhook_endpoint(uuid, text, text[], text, boolean, bytea)'),
    roleChange: await definition('rowgate_private.organization_role_for_change(uuid, text, text)'),
    invite: await definition('rowgate.create_invitation(uuid, text, text)'),
    revokeInvitation: await definition('rowgate.revoke_invitation(uuid, uuid)'),
    createSqlCredential: await definition('rowgate.create_sql_credential(uuid, text, text[], timestamptz, text, text)'),
    deleteSqlCredential: await definition('rowgate.delete_sql_credential(uuid, uuid)'),
  };
  policies = await app.sql(
    `select tablename as table, cmd as command, coalesce(qual, '') || ' ' || coalesce(with_check, '') as expression
     from pg_policies where schemaname = 'rowgate'`,
  );
  permissions = new Set((await app.sql<{ name: string }>('select name from rowgate.permissions')).map((r) => r.name));
});
afterAll(() => app?.close());

/** How a policy reads in SQL: the function or permission filter that applies it. */
function sqlForms(policy: Policy): string[] {
  switch (policy) {
    case 'read':
      return ['current_organization_ids()'];
    case 'finance_read':
      return ['finance_read_denial('];
    case 'finance_write':
      return ['finance_write_denial('];
    case 'members_management':
      return ['members_management_denial(', "current_organization_ids('members:manage'"];
    case 'access_token_management':
      return ['access_token_management_denial(', "current_organization_ids('access_tokens:manage'"];
    default:
      return [
        `current_organization_ids('${policy}'`,
        `role_permission_denial(p_organization_id, '${policy}'`,
        `target_organization_id(p_organization_id, '${policy}'`,
      ];
  }
}

/** The table a resource's rows live in. */
const tables: Record<Authorization['resource'], string> = {
  organization: 'organizations',
  account: 'accounts',
  membership: 'memberships',
  organization_access_token: 'organization_access_tokens',
  product: 'products',
  customer: 'customers',
  order: 'orders',
  payout_account: 'payout_accounts',
  webhook_endpoint: 'webhook_endpoints',
};

/** Where an operation's statement applies the policy, when not on its resource's own table. */
const appliedIn: Record<string, { table: string } | { function: keyof typeof functions }> = {
  'organizations:get_account': { table: 'accounts' },
  'members:list': { table: 'memberships' },
  'members:update': { table: 'memberships' },
  'members:add': { function: 'addMember' },
  'roles:list': { table: 'organization_roles' },
  'roles:create': { function: 'roleChange' },
  'roles:update': { function: 'roleChange' },
  'roles:delete': { function: 'roleChange' },
  'invitations:create': { function: 'invite' },
  'invitations:list': { table: 'invitations' },
  'denials:list': { table: 'denials' },
  'requests:list': { table: 'request_log' },
  'requests:get': { table: 'request_log' },
  'sql_credentials:list': { table: 'sql_credentials' },
  'sql_credentials:get': { table: 'sql_credentials' },
  'sql_credentials:create': { function: 'createSqlCredential' },
  'sql_credentials:delete': { function: 'deleteSqlCredential' },
  'invitations:revoke': { function: 'revokeInvitation' },
  'webhook_deliveries:list': { table: 'webhook_attempts' },
  // a resource a body names: the policy applies to the row the operation inserts
  'orders:create': { table: 'orders' },
  'webhook_endpoints:create': { function: 'createWebhookEndpoint' },
};

const commands: Record<string, string> = { get: 'SELECT', patch: 'UPDATE', post: 'INSERT' };

/** What the database says against a declaration: problems, none when it agrees. */
function disagreements(operationId: string, method: string, authorization: Authorization): string[] {
  const { resource, policy } = authorization;
  const problems: string[] = [];
  if (!functions.resolve!.includes(`when '${resource}'`)) problems.push(`resource_organization_ids does not know ${resource}`);
  if (!functions.policy!.includes(`when '${policy}'`) && !permissions.has(policy)) problems.push(`policy_denial does not know ${policy}`);
  const forms = sqlForms(policy);
  if (authorization.checkedBy === 'rowgate.delete_resource') {
    if (!functions.delete!.includes(`when '${resource}' then '${policy}'`))
      problems.push(`delete_resource asks another policy of ${resource}`);
    return problems;
  }
  const where = appliedIn[operationId] ?? { table: tables[resource] };
  if ('function' in where) {
    if (!forms.some((f) => functions[where.function]!.includes(f))) problems.push(`${where.function} applies another policy`);
    return problems;
  }
  const command = commands[method];
  const applying = policies.filter((p) => p.table === where.table && p.command === command);
  if (!applying.length) problems.push(`no ${command} policy on ${where.table}`);
  else if (!applying.some((p) => forms.some((f) => p.expression.replaceAll('::text', '').includes(f)))) {
    problems.push(`the ${command} policies of ${where.table} apply another policy than ${policy}`);
  }
  return problems;
}

const declared = apiRoutes.filter((r): r is ApiRoute => r.access !== null && r.authorize !== undefined);

describe('each route declaration agrees with the database', () => {
  test('routes declare policies (the table is not empty)', () => {
    expect(declared.length).toBeGreaterThanOrEqual(15);
  });
  for (const route of declared) {
    test(`${route.method.toUpperCase()} ${route.path} (${route.operationId}): ${route.authorize!.policy} on ${route.authorize!.resource}`, () => {
      expect(disagreements(route.operationId, route.method, route.authorize!)).toEqual([]);
    });
  }
});

describe('a declaration the database does not enforce is found', () => {
  test.for([
    ['products:update', 'patch', { resource: 'product', policy: 'orders:write' }],
    ['accounts:update', 'patch', { resource: 'account', policy: 'finance_read' }],
    ['customers:delete', 'delete', { resource: 'customer', policy: 'products:write', checkedBy: 'rowgate.delete_resource' }],
    ['members:add', 'post', { resource: 'organization', policy: 'organization:manage' }],
    ['products:update', 'patch', { resource: 'product', policy: 'products:wirte' as Policy }],
  ] as const)('%s declaring %s', ([operationId, method, authorization]) => {
    expect(disagreements(operationId, method, authorization as Authorization)).not.toEqual([]);
  });
});
