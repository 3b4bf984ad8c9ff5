// Asking the database whether a subject may act on a resource (SPEC §5, steps 3–5).
// The rules live in SQL (rowgate_hidden.authorize and the policy functions);
// this only maps the answer to a status.
import type { Tx } from '../db/pool.ts';
import { notFound, notPermitted } from '../http/errors.ts';

export type Resource = 'organization' | 'account' | 'organization_access_token' | 'product' | 'customer' | 'order' | 'payout_account';

/**
 * `policy` is 'read' (organization access only), a named policy
 * ('finance_read', 'finance_write', 'members_management', 'access_token_management'),
 * or a role permission ('products:write', 'organization:manage', …).
 * Returns the owning organization's id; throws 404 or 403 with the reason.
 */
export async function authorize(tx: Tx, resource: Resource, id: string, policy: string): Promise<string> {
  const row = await tx.one<{ organization_id: string | null; denial: string | null }>(
    'select organization_id, denial from rowgate_hidden.authorize($1, $2, $3)',
    [resource, id, policy],
  );
  if (!row?.organization_id) throw notFound();
  if (row.denial) throw notPermitted(row.denial);
  return row.organization_id;
}
