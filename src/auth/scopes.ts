// The scopes (SPEC §3), as the database lists them in rowgate_private.scopes
// (test/scopes.test.ts keeps the two the same). A route names the scopes it
// accepts with these; what a token holds is the database's answer.
export const scopes = [
  'user:read',
  'user:write',
  'payouts:read',
  'payouts:write',
  'organizations_read',
  'organizations_write',
  'members_read',
  'members_write',
  'products_read',
  'products_write',
  'customers_read',
  'customers_write',
  'orders_read',
  'orders_write',
  'transactions_read',
  'transactions_write',
  'payouts_read',
  'payouts_write',
  'organization_access_tokens_read',
  'organization_access_tokens_write',
  'customer_sessions_write',
  'refunds_read',
  'refunds_write',
  'events_read',
  'webhooks_read',
  'webhooks_write',
  'customer_portal_read',
  'customer_portal_write',
] as const;

export type Scope = (typeof scopes)[number];

/** The data whose scopes are `<data>_read` and `<data>_write`. */
type ReadWrite = { [S in Scope]: S extends `${infer D}_read` ? (`${D}_write` extends Scope ? D : never) : never }[Scope];
/** The data that has a `<data>_write` scope. */
type Writable = { [S in Scope]: S extends `${infer D}_write` ? D : never }[Scope];

/** A read endpoint accepts the read scope or its write scope (SPEC §3). */
export const readScopes = (data: ReadWrite): Scope[] => [`${data}_read`, `${data}_write`];
export const writeScopes = (data: Writable): Scope[] => [`${data}_write`];

/** Finance-read endpoints accept any of these (SPEC §3). */
export const financeReadScopes: Scope[] = ['transactions_read', 'transactions_write', 'payouts_read', 'payouts_write'];
