// Explaining decisions (SPEC §20): the operations, a check of any of them, and an
// organization's effective permissions. Every answer comes from the database
// (rowgate_hidden.operations, rowgate_hidden.check_operation()), the same SQL that
// enforces the operations, so an explanation cannot drift from the enforcement.
import { z } from 'zod';
import { operationRows } from '../http/operations.ts';
import { notFound, validationError, type ValidationIssue } from '../core/errors.ts';
import { access, type Access, route, type Route } from '../http/route-declaration.ts';
import { doc, uuid } from '../core/fields.ts';
import type { SubjectKind } from '../auth/authenticate.ts';
import { explain } from '../http/explanation.ts';

/** Any valid credential, no scope: what a credential may do is never a secret from it. */
const anyCredential: Access = {
  credentials: [
    'web_session',
    'personal_access_token',
    'oauth2_user_token',
    'organization_access_token',
    'oauth2_organization_token',
    'customer_session',
    'member_session',
  ],
  scopes: [],
};

const nullableText = (description: string, example: unknown) => doc(z.string().nullable(), description, example);

const Operation = z
  .object({
    operation: doc(z.string(), "The operation's `operationId` in the OpenAPI document.", 'products:update'),
    method: doc(z.string(), 'Its HTTP method.', 'PATCH'),
    path: doc(z.string(), 'Its path template.', '/v1/products/{id}'),
    scopes: doc(z.array(z.string()), 'The scopes it accepts (any of); empty when it needs none.', ['products_write']),
    access_class: doc(
      z.string(),
      'Who may call it: a class of SPEC §4 (`web_user_read`, `user_write`, …), `organization` (User and Organization subjects), `organization_user` (User subjects only), `customer_portal`, `any_credential` or `anonymous`.',
      'organization',
    ),
    policy: nullableText(
      'The policy that decides (`read`, `role_permission`, `finance_read`, `finance_write`, `members_management`, `access_token_management`, `platform_admin`); null where none applies.',
      'role_permission',
    ),
    permission: nullableText('The role permission the policy asks for; null where none applies.', 'products:write'),
  })
  .meta({ id: 'AuthorizationOperation', description: 'An operation of the API and what authorizes it.' });

const Basis = z
  .object({
    credential_kind: nullableText('The kind of credential the answer is for.', 'personal_access_token'),
    scopes: doc(z.array(z.string()), 'The scopes the operation accepts that the credential holds.', ['products_write']),
    role: nullableText("The user's role in the organization; null for other subjects, or when out of reach.", 'member'),
    permission: nullableText('The permission that decided; null where none applies.', 'products:write'),
    policy: nullableText('The policy that decided; null where none applies.', 'role_permission'),
  })
  .meta({ id: 'AuthorizationBasis', description: 'What a check was decided on.' });

const CheckResult = z
  .object({
    allowed: doc(z.boolean(), 'Whether the request would pass every check of SPEC §5.', false),
    status: doc(z.number().int(), 'The status the request would answer now (a body-dependent 422 aside).', 403),
    error: nullableText('The error it would answer; null when allowed.', 'NotPermitted'),
    step: doc(
      z.enum(['authentication', 'scope', 'resource', 'organization', 'policy']).nullable(),
      'The first check that fails; null when allowed. Every 404 is `resource`.',
      'policy',
    ),
    reason: nullableText('The denial sentence; null when allowed or out of reach.', "You don't have permission to update products"),
    basis: Basis,
  })
  .meta({ id: 'AuthorizationCheckResult', description: 'What one request would answer, and why.' });

/** the most requests one check asks */
export const MAX_CHECKS = 100;

export const CheckItem = z.strictObject({
  operation: doc(z.string().min(1).max(100), 'An `operationId` (GET /v1/authorization/operations lists them).', 'products:update'),
  params: doc(z.record(z.string(), z.string()).optional(), "The operation's path parameters.", {
    id: '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b',
  }).optional(),
  organization_id: uuid('The organization of a create or a list.').optional(),
});

const CheckRequest = z
  .strictObject({
    checks: doc(z.array(CheckItem).min(1).max(MAX_CHECKS), `The requests to check, 1 to ${MAX_CHECKS}.`, [
      { operation: 'products:update', params: { id: '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b' } },
    ]),
    user_id: uuid(
      'Ask about another user (a member of the organization of each check), as if it used a web session: for users whose role holds `members:manage` there, with a credential holding `members_read`.',
    ).optional(),
  })
  .meta({ id: 'AuthorizationCheckRequest', description: 'Requests to check.' });

const Permissions = z
  .object({
    organization_id: uuid('The organization.'),
    user_id: doc(z.uuid().nullable(), 'The user asked about; null for an Organization subject.', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    role: nullableText("The user's role; null for an Organization subject.", 'member'),
    permissions: doc(z.array(z.string()), 'The role permissions held there.', ['products:write']),
    operations: doc(
      z.array(
        z.object({
          operation: doc(z.string(), 'The operation.', 'products:create'),
          allowed: doc(z.boolean(), 'Whether it would pass every check.', true),
          status: doc(z.number().int(), 'What it would answer (a body-dependent 422 aside).', 201),
          reason: nullableText('The denial sentence; null when allowed.', null),
        }),
      ),
      'Every operation that takes an organization, checked in this one.',
      [{ operation: 'products:create', allowed: true, status: 201, reason: null }],
    ),
  })
  .meta({ id: 'OrganizationPermissions', description: 'What a user (or the organization token) may do in an organization.' });

/** Items a check cannot ask (unknown operation, a malformed path parameter): a 422 at their place. */
export function checkItems(table: readonly Route[], checks: z.infer<typeof CheckItem>[], subjectKind: SubjectKind): ValidationIssue[] {
  const routes = new Map(table.map((r) => [r.operationId, r]));
  const rows = new Map(operationRows(table).map((r) => [r.operation, r]));
  const issues: ValidationIssue[] = [];
  checks.forEach((item, i) => {
    const r = routes.get(item.operation);
    const row = rows.get(item.operation);
    if (!r || !row) {
      issues.push({ type: 'unknown_operation', loc: ['body', 'checks', i, 'operation'], msg: 'Unknown operation', input: item.operation });
      return;
    }
    const schema = 'params' in r ? (r.params as z.ZodObject | undefined) : undefined;
    if (schema) {
      const parsed = schema.safeParse(item.params ?? {});
      if (!parsed.success) {
        for (const issue of parsed.error.issues)
          issues.push({ type: issue.code, loc: ['body', 'checks', i, 'params', ...issue.path.map(String)], msg: issue.message });
      }
    }
    // a User's create names its organization (an Organization subject's is its own)
    if (row.lookup === 'target' && !item.organization_id && subjectKind === 'user') {
      issues.push({ type: 'missing', loc: ['body', 'checks', i, 'organization_id'], msg: 'A create names its organization_id' });
    }
  });
  return issues;
}

/** The explanations' routes; `routeTable` is the whole route table, read when a check runs (it holds these routes too). */
export const authorizationRoutes = (routeTable: () => readonly Route[]) => [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/authorization/operations',
    operationId: 'authorization:operations',
    explanation: explain.none,
    summary: 'List the operations and what authorizes them',
    description:
      'Every `/v1` operation with the scopes, access class, policy and permission that authorize it, as the database holds them.',
    tag: 'authorization',
    access: anyCredential,
    status: 200,
    response: z
      .object({ items: doc(z.array(Operation), 'Every /v1 operation, by operation id.', []) })
      .meta({ id: 'AuthorizationOperationList', description: 'The operations.' }),
    handler: ({ tx }) =>
      tx.one(
        `select coalesce(jsonb_agg(jsonb_build_object('operation', operation, 'method', method, 'path', path, 'scopes', scopes,
           'access_class', access_class, 'policy', policy, 'permission', permission) order by operation), '[]') as items
         from rowgate_hidden.operations`,
      ),
  }),
  route({
    method: 'post',
    path: '/v1/authorization/check',
    // a POST for its body's size: it only reads, and runs where reads run
    effect: 'reads',
    operationId: 'authorization:check',
    explanation: explain.none,
    summary: 'Check what requests would answer, and why',
    description:
      "Each check is SPEC §5's order of checks for the operation, computed by the SQL that enforces it: `status` and `error` are what the request (with a valid body) would answer now with this credential; `step` the first check that fails; `reason` the denial sentence. A resource out of reach is a 404 with no reason, like the request.",
    tag: 'authorization',
    access: anyCredential,
    body: CheckRequest,
    status: 200,
    response: z
      .object({ results: doc(z.array(CheckResult), 'One answer per check, in the order asked.', []) })
      .meta({ id: 'AuthorizationCheckAnswer', description: 'The answers, in order.' }),
    handler: async ({ tx, body, subject }) => {
      const issues = checkItems(routeTable(), body.checks, subject.kind);
      if (issues.length) throw validationError(issues);
      const row = await tx.one<{ results: unknown[] }>('select rowgate_hidden.check_operations($1::jsonb, $2::uuid) as results', [
        JSON.stringify(body.checks),
        body.user_id ?? null,
      ]);
      return { results: row!.results };
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/permissions',
    operationId: 'organizations:permissions',
    explanation: explain.authorized('organization', 'read'),
    summary: "An organization's effective permissions",
    description:
      "The caller's role, permissions and every operation that takes an organization, checked there. `user_id` asks about a member, for holders of `members:manage` whose credential holds `members_read` (otherwise 404).",
    tag: 'authorization',
    access: access.organization('organizations_read', 'organizations_write'),
    params: z.object({ id: uuid('The organization id.') }),
    query: z.strictObject({ user_id: uuid('A member to ask about.').optional() }),
    status: 200,
    response: Permissions,
    handler: async ({ tx, params, query }) => {
      const row = await tx.one<{ answer: unknown }>('select rowgate_hidden.organization_permissions($1, $2) as answer', [
        params.id,
        query.user_id ?? null,
      ]);
      if (!row?.answer) throw notFound();
      return row.answer;
    },
  }),
];
