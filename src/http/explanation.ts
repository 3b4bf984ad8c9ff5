// How the database explains an operation (SPEC §20): what it acts on and which
// policy it asks, declared by the operation's route entry (`explanation`, or its
// `authorize`) and written into rowgate_hidden.operations (src/http/operations.ts).
import type { Policy } from '../auth/authorize.ts';

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

/** The explanations route entries declare most often. */
export const explain = {
  /** nothing to find: the credential and scope decide */
  none: { lookup: 'none' } as Explanation,
  /** a list, in the organizations the caller reaches */
  list: { lookup: 'list' } as Explanation,
  /** a create in the organization named, under `policy` */
  target: (policy: Policy): Explanation => ({ lookup: 'target', policy }),
  /** the row of `rowgate.<table>` the path names (parameter → column), as row-level security shows it, under `policy` */
  visible: (table: string, match: Record<string, string> = { id: 'id' }, policy: Policy = 'read'): Explanation => ({
    lookup: 'visible',
    resource: table,
    match,
    policy,
  }),
  /** what rowgate_hidden.authorize finds of `resource` by the path's `id`, under `policy` (where the operation's own SQL asks it) */
  authorized: (resource: string, policy: Policy): Explanation => ({ lookup: 'authorize', resource, match: { id: 'id' }, policy }),
  /** the caller's own row of `rowgate.<table>` by `id`: row-level security alone decides */
  own: (table: string): Explanation => ({ lookup: 'visible', resource: table, match: { id: 'id' } }),
};
