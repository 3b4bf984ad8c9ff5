// Explaining decisions in GraphQL (SPEC §20): `checkAuthorization` and
// `organizationPermissions` answer what POST /v1/authorization/check and
// GET /v1/organizations/{id}/permissions answer (src/resources/authorization.ts),
// from the same SQL (rowgate_hidden.check_operations, check_operation and
// organization_permissions), in the request's own transactions with its role
// and settings (src/graphql/transport/pg-client.ts). The REST route's credential rules
// hold: a check takes any valid credential (none: Unauthorized), and the
// permissions are decided by check_operation for `organizations:permissions`,
// the step REST's pipeline takes, so a refusal carries REST's error and reason.
import type { ExecutableStep, Step } from 'postgraphile/grafast';
import type { z } from 'zod';
import type { SubjectKind } from '../auth/authenticate.ts';
import { ApiError, insufficientScope, notFound, validationError } from '../core/errors.ts';
import type { Route } from '../http/route-declaration.ts';
import { type CheckItem, checkItems, MAX_CHECKS } from '../resources/authorization.ts';
import type { RowgateContext } from './requests.ts';

const TYPE_DEFS = /* GraphQL */ `
  """One request to check: an operation, its path parameters, the organization of a create or a list."""
  input AuthorizationCheckInput {
    "An operationId of the OpenAPI document (GET /v1/authorization/operations lists them)."
    operation: String!
    "The operation's path parameters, as an object of strings (\`{\\"id\\": …}\`)."
    params: JSON
    "The organization of a create or a list."
    organizationId: UUID
  }
  """What a check was decided on."""
  type AuthorizationBasis {
    credentialKind: String
    scopes: [String!]!
    role: String
    permission: String
    policy: String
  }
  """What one request would answer, and why (SPEC §20)."""
  type AuthorizationCheckResult {
    allowed: Boolean!
    status: Int!
    error: String
    step: String
    reason: String
    basis: AuthorizationBasis!
  }
  """One operation that takes an organization, checked in it."""
  type OrganizationOperationPermission {
    operation: String!
    allowed: Boolean!
    status: Int!
    reason: String
  }
  """What a user (or the organization token) may do in an organization."""
  type OrganizationPermissions {
    organizationId: UUID!
    userId: UUID
    role: String
    permissions: [String!]!
    operations: [OrganizationOperationPermission!]!
  }
  extend type Query {
    """What each request would answer now with this credential, and why, in the order asked (1 to 100); as POST /v1/authorization/check."""
    checkAuthorization(checks: [AuthorizationCheckInput!]!, userId: UUID): [AuthorizationCheckResult!]!
    """The effective permissions in an organization; as GET /v1/organizations/{id}/permissions."""
    organizationPermissions(organizationId: UUID!, userId: UUID): OrganizationPermissions!
  }
`;

interface Answer {
  allowed: boolean;
  status: number;
  error: string | null;
  step: string | null;
  reason: string | null;
  basis: { credential_kind: string | null; scopes: string[]; role: string | null; permission: string | null; policy: string | null };
}
interface PermissionsAnswer {
  organization_id: string;
  user_id: string | null;
  role: string | null;
  permissions: string[];
  operations: { operation: string; allowed: boolean; status: number; reason: string | null }[];
}
interface CheckInput {
  operation: string;
  params?: unknown;
  organizationId?: string | null;
}
interface Client {
  query<T>(query: { text: string; values?: readonly unknown[] }): Promise<{ rows: readonly T[] }>;
}

type SafeErrorClass = new (message: string, extensions?: Record<string, unknown>) => Error;

/** A refusal the client reads, with REST's error as its code (src/graphql/errors.ts keeps a SafeError's extensions). */
const refusal = (SafeError: SafeErrorClass, status: number, error: string, message: string, detail?: unknown) =>
  new SafeError(message, { code: error, status, ...(detail === undefined ? {} : { detail }) });

const unauthorized = (SafeError: SafeErrorClass) => refusal(SafeError, 401, 'Unauthorized', 'A valid credential is required (SPEC §7)');

type Subject = RowgateContext['rowgateSubject'];

const CHECK = 'select rowgate_hidden.check_operations($1::jsonb, $2::uuid)::text as results';
// the route's own step first (its access class and scopes, the organization in reach), as REST's pipeline takes it
const GATE = `select c.answer::text as refusal,
    case when not (c.answer ->> 'allowed')::boolean then (select array_to_string(o.scopes, ' ') from rowgate_hidden.operations o
      where o.operation = 'organizations:permissions') end as scopes
  from (select rowgate_hidden.check_operation('organizations:permissions', jsonb_build_object('id', $1::uuid), null) as answer) c`;
// a statement of its own: PostgreSQL checks EXECUTE on every function of a statement, taken or not
const PERMISSIONS = 'select rowgate_hidden.organization_permissions($1::uuid, $2::uuid)::text as answer';

/** The plugin; `routes`: the route table whose operations a check may name (REST's 422 for the others). */
export async function explainingPlugin(routes?: () => readonly Route[]): Promise<GraphileConfig.Plugin> {
  const [{ extendSchema, gql }, { context, object, SafeError }, { withPgClient }] = await Promise.all([
    import('postgraphile/utils'),
    import('postgraphile/grafast'),
    import('postgraphile/@dataplan/pg'),
  ]);
  const Safe = SafeError as unknown as SafeErrorClass;

  const check = async (client: Client, data: { subject: Subject; checks: CheckInput[]; userId: string | null }) => {
    if (data.subject.anonymous) throw unauthorized(Safe);
    const checks: z.infer<typeof CheckItem>[] = data.checks.map((c) => ({
      operation: c.operation,
      ...(c.params == null ? {} : { params: c.params as Record<string, string> }),
      ...(c.organizationId == null ? {} : { organization_id: c.organizationId }),
    }));
    if (checks.length < 1 || checks.length > MAX_CHECKS) {
      const msg = `Between 1 and ${MAX_CHECKS} checks`;
      const error = validationError([{ type: 'too_many', loc: ['body', 'checks'], msg, input: checks.length }]);
      throw refusal(Safe, error.status, error.error, msg, error.detail);
    }
    if (routes) {
      const settings = await data.subject.settings();
      const issues = checkItems(routes(), checks, settings['rowgate.subject_kind'] as SubjectKind);
      if (issues.length) {
        const error = validationError(issues);
        const message = issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; ');
        throw refusal(Safe, error.status, error.error, message, error.detail);
      }
    }
    const { rows } = await client.query<{ results: string }>({ text: CHECK, values: [JSON.stringify(checks), data.userId ?? null] });
    return (JSON.parse(rows[0]!.results) as Answer[]).map((a) => ({
      allowed: a.allowed,
      status: a.status,
      error: a.error,
      step: a.step,
      reason: a.reason,
      basis: {
        credentialKind: a.basis.credential_kind,
        scopes: a.basis.scopes,
        role: a.basis.role,
        permission: a.basis.permission,
        policy: a.basis.policy,
      },
    }));
  };

  const permissions = async (client: Client, data: { subject: Subject; organizationId: string; userId: string | null }) => {
    if (data.subject.anonymous) throw unauthorized(Safe);
    const { rows } = await client.query<{ refusal: string; scopes: string | null }>({ text: GATE, values: [data.organizationId] });
    const gate = JSON.parse(rows[0]!.refusal) as Answer;
    if (!gate.allowed) {
      // REST's words for the step that refused: its scope sentence, the policy's reason, or its 404
      const rest =
        gate.error === 'InsufficientScope'
          ? insufficientScope((rows[0]!.scopes ?? '').split(' ').filter(Boolean))
          : gate.reason
            ? new ApiError(gate.status, gate.error ?? 'NotPermitted', gate.reason)
            : notFound();
      throw refusal(Safe, gate.status, gate.error ?? rest.error, String(rest.detail));
    }
    const answer = (
      await client.query<{ answer: string | null }>({ text: PERMISSIONS, values: [data.organizationId, data.userId ?? null] })
    ).rows[0]!.answer;
    if (answer === null) throw refusal(Safe, 404, 'ResourceNotFound', String(notFound().detail));
    const a = JSON.parse(answer) as PermissionsAnswer;
    return { organizationId: a.organization_id, userId: a.user_id, role: a.role, permissions: a.permissions, operations: a.operations };
  };

  return extendSchema((build) => {
    const executor = build.input.pgRegistry.pgExecutors.main!;
    const subject = () => context().get('rowgateSubject' as never);
    return {
      typeDefs: gql([TYPE_DEFS] as unknown as TemplateStringsArray),
      objects: {
        Query: {
          plans: {
            checkAuthorization(_: Step, fieldArgs: { getRaw(name: string): ExecutableStep }) {
              const $data = object({ subject: subject(), checks: fieldArgs.getRaw('checks'), userId: fieldArgs.getRaw('userId') });
              return withPgClient(executor, $data, (client, data) => check(client as unknown as Client, data as never));
            },
            organizationPermissions(_: Step, fieldArgs: { getRaw(name: string): ExecutableStep }) {
              const $data = object({
                subject: subject(),
                organizationId: fieldArgs.getRaw('organizationId'),
                userId: fieldArgs.getRaw('userId'),
              });
              return withPgClient(executor, $data, (client, data) => permissions(client as unknown as Client, data as never));
            },
          },
        },
      },
    } as never;
  });
}
