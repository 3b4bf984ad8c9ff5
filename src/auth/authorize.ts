// Asking the database whether a subject may act on a resource (SPEC §5, steps 3–5).
// The rules live in SQL (rowgate_hidden.authorize and the policy functions); a route
// declares which policy guards it (`authorize` in the route table), the pipeline asks,
// and this maps the answer to a status.
import type { Tx } from '../db/pool.ts';
import { notFound, notPermitted } from '../core/errors.ts';

/** What rowgate_hidden.resource_organization_id resolves to its organization. */
type Resource =
  | 'organization'
  | 'account'
  | 'membership'
  | 'organization_access_token'
  | 'product'
  | 'customer'
  | 'order'
  | 'payout_account'
  | 'webhook_endpoint';

/** The role permissions (rowgate.permissions: SPEC §5's fixed set) */
export const PERMISSIONS = [
  'products:write',
  'customers:write',
  'orders:write',
  'finance:read',
  'organization:manage',
  'members:manage',
  'finance:manage',
  'access_tokens:manage',
] as const;

/** A role permission */
export type Permission = (typeof PERMISSIONS)[number];

/**
 * What rowgate_hidden.policy_denial decides: 'read' (organization access only), a
 * named policy of SPEC §5, or a role permission.
 */
export type Policy = 'read' | 'finance_read' | 'finance_write' | 'members_management' | 'access_token_management' | Permission;

/** The declaration of a route entry: which policy guards its operation on which resource. */
export interface Authorization<P = Record<string, unknown>> {
  resource: Resource;
  policy: Policy;
  /** the path parameter that names the resource (default `id`) */
  param?: string;
  /**
   * What must exist before the policy is asked (SPEC §5 step 3, a 404 before a
   * 403), when the resource is found through another: a membership by its user.
   */
  resolve?: (tx: Tx, params: P) => Promise<unknown>;
  /**
   * The SQL function that asks the policy itself, in the operation's own
   * statement (rowgate.delete_resource): the pipeline does not ask again.
   */
  checkedBy?: 'rowgate.delete_resource';
  /**
   * The body field that names the resource (a refund's `order_id`): the
   * operation's own statement asks the policy, and a resource out of reach is
   * a 422 at that field, as any id a body names.
   */
  field?: string;
}

/** Whether the pipeline asks the policy before the handler (not when the operation's own SQL does). */
export const askedBeforeHandler = (authorization: Authorization<never>) => !authorization.checkedBy && !authorization.field;

/**
 * The role permission a named policy requires besides its subject kind (SPEC §5), as
 * rowgate_hidden.members_management_denial and access_token_management_denial ask it;
 * the finance policies ask for the account's admin, and `read` for nothing.
 */
export const policyPermissions: Partial<Record<Exclude<Policy, Permission>, Permission>> = {
  members_management: 'members:manage',
  access_token_management: 'access_tokens:manage',
};

/** What the policy means, as the API reference says it. */
const policySentences: Record<Exclude<Policy, Permission>, string> = {
  read: 'any subject that reaches the organization',
  finance_read: "the finance-read policy: an organization token, or the organization account's admin",
  finance_write: "the finance-write policy: the organization account's admin",
  members_management: 'the members-management policy: users whose role grants `members:manage`',
  access_token_management: 'the access-token-management policy: users whose role grants `access_tokens:manage`',
};

/** The reference's sentence on a route's authorization. */
export function authorizationSentence(authorization: Authorization<never>): string {
  const who =
    authorization.policy in policySentences
      ? policySentences[authorization.policy as keyof typeof policySentences]
      : `the \`${authorization.policy}\` permission in the organization (organization tokens hold every permission)`;
  const resource = authorization.resource.replaceAll('_', ' ');
  const a = /^[aeiou]/.test(resource) ? 'An' : 'A';
  const outOfReach = authorization.field
    ? `The ${resource} is the one \`body.${authorization.field}\` names; one out of reach is a 422 at that field`
    : `${a} ${resource} out of reach is a 404`;
  return `**Authorization:** ${who}. ${outOfReach}; a denial is a 403 with its reason.`;
}

/** The organization of a policy's denial, for the record of it (SPEC §20). */
const deniedIn = new WeakMap<Error, string>();

/** The organization whose policy refused with this error, when authorize() did. */
export const organizationOfDenial = (error: unknown): string | undefined => (error instanceof Error ? deniedIn.get(error) : undefined);

/**
 * Asks the policy about the resource a request names. Returns the owning
 * organization's id; throws 404 or 403 with the reason.
 */
async function authorize(tx: Tx, resource: Resource, id: string, policy: Policy): Promise<string> {
  const row = await tx.one<{ organization_id: string | null; denial: string | null }>(
    'select organization_id, denial from rowgate_hidden.authorize($1, $2, $3)',
    [resource, id, policy],
  );
  if (!row?.organization_id) throw notFound();
  if (row.denial) {
    const denial = notPermitted(row.denial);
    deniedIn.set(denial, row.organization_id);
    throw denial;
  }
  return row.organization_id;
}

/**
 * A route's declared authorization, asked for a request's parameters; nothing
 * when the SQL asks it itself. Without `resolve` its statement is sent at once
 * (a JSON read sends it with the authentication's).
 */
export function authorizeRequest(tx: Tx, authorization: Authorization, params: Record<string, unknown>): Promise<unknown> {
  if (!askedBeforeHandler(authorization)) return Promise.resolve();
  const ask = () => authorize(tx, authorization.resource, String(params[authorization.param ?? 'id']), authorization.policy);
  return authorization.resolve ? authorization.resolve(tx, params).then(ask) : ask();
}
