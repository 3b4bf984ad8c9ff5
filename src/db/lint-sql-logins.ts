// What organizations' SQL logins may execute (SPEC §24): an allowlist of STABLE functions,
// each of which answers only for the login's organization whatever ids it is given
// (test/sql-credentials.test.ts calls each with another organization's ids and with ids
// that exist nowhere, and wants the same answer). `db lint` reports any other function
// granted to the logins' group (src/db/lint.ts, rule sql-login-function).
import type pg from 'pg';

type Client = Pick<pg.ClientBase, 'query'>;

interface Finding {
  rule: 'sql-login-function';
  object: string;
  message: string;
  comment: string | null;
}

/** The group of organizations' SQL logins (SPEC §24). */
export const SQL_LOGIN_GROUP = 'rowgate_sql_login';

/**
 * The functions SQL logins may execute (SPEC §24), as `regprocedure` prints them. Each
 * answers only for the login's organization (or says nothing of any row: a constant
 * for the login's kind of subject), whatever ids it is given.
 */
export const sqlLoginFunctions: readonly string[] = [
  // the subject helpers: the login's own organization, kind, credential and scopes
  'rowgate_hidden.current_subject_kind()',
  'rowgate_hidden.current_subject_id()',
  'rowgate_hidden.current_user_id()',
  'rowgate_hidden.current_credential_kind()',
  'rowgate_hidden.current_scopes()',
  'rowgate_hidden.has_scope(text)',
  'rowgate_hidden.analyst_user_id()',
  'rowgate_hidden.analyst_scopes()',
  'rowgate_hidden.sql_login_organization_id()',
  'rowgate_hidden.sql_login_scopes()',
  'rowgate_hidden.current_organization_ids(text)',
  'rowgate_hidden.current_colleague_ids()',
  // denials and predicates: reach checked inside, or constant for an organization subject
  'rowgate_hidden.has_permission(uuid,text)',
  'rowgate_hidden.finance_read_denial(uuid)',
  'rowgate_hidden.finance_write_denial(uuid)',
  'rowgate_hidden.finance_denial(uuid,boolean)',
  'rowgate_hidden.role_permission_denial(uuid,text)',
  'rowgate_hidden.members_management_denial(uuid)',
  'rowgate_hidden.access_token_management_denial(uuid)',
  'rowgate_hidden.policy_denial(uuid,text)',
  'rowgate_hidden.current_role_in(uuid)',
  'rowgate_hidden.reachable_resource_organization_ids(text,uuid[])',
  'rowgate_hidden.invitee_invitation_found(uuid)',
  'rowgate_hidden.member_removal_denial(uuid,uuid)',
  'rowgate_hidden.organization_account_exists(uuid)',
  // rowgate.check (SPEC §20), through the same steps the API takes
  'rowgate."check"(text,jsonb,uuid)',
  'rowgate_hidden.check_operation(text,jsonb,uuid,boolean)',
  'rowgate_hidden.check_batch(jsonb,boolean)',
  'rowgate_hidden.check_items(jsonb,text,text[])',
  'rowgate_hidden.check_answer(rowgate_hidden.operations,boolean,integer,text,text,text,text,text[],uuid,text)',
  'rowgate_hidden.web_session_scopes()',
];

/** The functions granted to rowgate_sql_login that are not on the allowlist, or volatile: `db lint`'s sql-login-function findings. */
export async function sqlLoginExecutes(client: Client, schemas: readonly string[]): Promise<Finding[]> {
  const { rows } = await client.query<{ object: string; signature: string; comment: string | null; volatility: string }>(
    `select format('function %s', p.oid::regprocedure) as object, p.oid::regprocedure::text as signature,
       obj_description(p.oid, 'pg_proc') as comment, p.provolatile::text as volatility
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = any ($1::text[])
       -- granted to the group itself (what public may execute is public-grant's finding)
       and exists (select from aclexplode(p.proacl) a join pg_roles r on r.oid = a.grantee
                   where r.rolname = $2 and a.privilege_type = 'EXECUTE')
       and not exists (select from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')`,
    [schemas, SQL_LOGIN_GROUP],
  );
  const findings: Finding[] = [];
  for (const r of rows) {
    const base = { rule: 'sql-login-function' as const, object: r.object, comment: r.comment };
    if (!sqlLoginFunctions.includes(r.signature)) {
      findings.push({ ...base, message: `is executable by ${SQL_LOGIN_GROUP} and not on the allowlist of functions that check reach` });
    } else if (r.volatility === 'v') {
      findings.push({ ...base, message: `is executable by ${SQL_LOGIN_GROUP} and volatile (only STABLE or IMMUTABLE functions are)` });
    }
  }
  return findings;
}
