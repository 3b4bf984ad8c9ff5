// `rowgate db lint` (SPEC §20): the schema read the way a reviewer reads a migration,
// from the catalogs, one finding a line. Five rules:
// - rls-disabled: a table of the project's schemas that an API or analyst role may read
//   (usage on its schema and a select privilege) without row-level security enabled;
// - policy-always-true: a permissive policy whose `using` or `with check` is `true`, for
//   an API or analyst role (or public), on a table holding organization data (one with an
//   `organization_id` column);
// - security-definer: a `security definer` function without a pinned `search_path`, or
//   executable by public;
// - per-row-helper: a function of the project called in a policy with arguments that name
//   no column of the row, not wrapped in a `select` (so evaluated for every row, not once
//   per statement: docs/performance.md, LESSONS.md);
// - public-grant: a privilege on a table, column, sequence or function of the project
//   granted to public;
// - sql-login-function: a function of the project that organizations' SQL logins
//   (rowgate_sql_login, SPEC §24) are granted EXECUTE on and that is not on the allowlist
//   below of STABLE functions that reach only the login's organization whatever ids they
//   are given (src/db/lint-sql-logins.ts; test/sql-credentials.test.ts calls each with other organizations' ids), or
//   one on it that is not STABLE or IMMUTABLE.
// A finding is waived only by the object's own comment: a line `@lint-allow <rule>:
// <reason>` (a reason is required). The object is the table (rls-disabled, public-grant on
// a table), the policy (policy-always-true, per-row-helper) or the function.
import type pg from 'pg';
import { sqlLoginExecutes } from './lint-sql-logins.ts';

type Client = Pick<pg.ClientBase, 'query'>;

export const lintRules = [
  'rls-disabled',
  'policy-always-true',
  'security-definer',
  'per-row-helper',
  'public-grant',
  'sql-login-function',
] as const;
export type LintRule = (typeof lintRules)[number];

export interface LintFinding {
  rule: LintRule;
  /** `table rowgate.x`, `policy p on rowgate.x`, `function rowgate.f(uuid)` */
  object: string;
  message: string;
}

/** The project's schemas (SPEC §8, docs/sql-conventions.md). */
export const projectSchemas = ['rowgate', 'rowgate_hidden', 'rowgate_private'];

/** The roles requests and analysts act as (SPEC §8). */
const apiRoles = [
  'rowgate_user',
  'rowgate_organization',
  'rowgate_customer',
  'rowgate_member',
  'rowgate_anonymous',
  'rowgate_analyst',
  'rowgate_sql_login',
];

/** `@lint-allow <rule>: <reason>` lines of a comment. */
function waived(comment: string | null, rule: LintRule): boolean {
  if (!comment) return false;
  const pattern = new RegExp(`@lint-allow\\s+${rule}\\s*:\\s*\\S`);
  return comment.split('\n').some((line) => pattern.test(line));
}

/** Every finding in `schemas` (default the project's), unwaived ones only, in a stable order. */
export async function lintSchema(client: Client, schemas: readonly string[] = projectSchemas): Promise<LintFinding[]> {
  const all = [
    ...(await rlsDisabled(client, schemas)),
    ...(await alwaysTrue(client, schemas)),
    ...(await securityDefiner(client, schemas)),
    ...(await perRowHelpers(client, schemas)),
    ...(await publicGrants(client, schemas)),
    ...((await sqlLoginExecutes(client, schemas)) as Raw[]),
  ];
  return all
    .filter((f) => !waived(f.comment, f.rule))
    .map(({ rule, object, message }) => ({ rule, object, message }))
    .sort((a, b) => a.rule.localeCompare(b.rule) || a.object.localeCompare(b.object) || a.message.localeCompare(b.message));
}

/** One line of a finding, as `db lint` prints it. */
export const findingLine = (f: LintFinding) => `${f.rule}: ${f.object}: ${f.message}`;

type Raw = LintFinding & { comment: string | null };

async function rlsDisabled(client: Client, schemas: readonly string[]): Promise<Raw[]> {
  const { rows } = await client.query<{ object: string; roles: string[]; comment: string | null }>(
    `select format('table %I.%I', n.nspname, c.relname) as object, obj_description(c.oid, 'pg_class') as comment,
       array(select r.rolname::text from pg_roles r
             where r.rolname = any ($2::text[])
               and has_schema_privilege(r.oid, n.oid, 'USAGE') and has_any_column_privilege(r.oid, c.oid, 'SELECT')
             order by 1) as roles
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = any ($1::text[]) and c.relkind in ('r', 'p', 'm', 'f') and not c.relrowsecurity`,
    [schemas, apiRoles],
  );
  return rows
    .filter((r) => r.roles.length)
    .map((r) => ({
      rule: 'rls-disabled',
      object: r.object,
      message: `readable by ${r.roles.join(', ')} without row-level security enabled`,
      comment: r.comment,
    }));
}

async function alwaysTrue(client: Client, schemas: readonly string[]): Promise<Raw[]> {
  const { rows } = await client.query<{ object: string; comment: string | null; using: string | null; check: string | null }>(
    `select format('policy %I on %I.%I', p.polname, n.nspname, c.relname) as object,
       obj_description(p.oid, 'pg_policy') as comment,
       pg_get_expr(p.polqual, p.polrelid) as using, pg_get_expr(p.polwithcheck, p.polrelid) as check
     from pg_policy p join pg_class c on c.oid = p.polrelid join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = any ($1::text[]) and p.polpermissive
       and (0 = any (p.polroles) or exists (select from pg_roles r where r.oid = any (p.polroles) and r.rolname = any ($2::text[])))
       and exists (select from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped)`,
    [schemas, apiRoles],
  );
  const isTrue = (expr: string | null) => expr !== null && /^\(*\s*true\s*\)*$/i.test(expr);
  return rows
    .filter((r) => isTrue(r.using) || isTrue(r.check))
    .map((r) => ({
      rule: 'policy-always-true',
      object: r.object,
      message: `is true for every row of a table holding organization data (${isTrue(r.using) ? 'using' : 'with check'})`,
      comment: r.comment,
    }));
}

async function securityDefiner(client: Client, schemas: readonly string[]): Promise<Raw[]> {
  const { rows } = await client.query<{ object: string; comment: string | null; pinned: boolean; public_execute: boolean }>(
    `select format('function %s', p.oid::regprocedure) as object, obj_description(p.oid, 'pg_proc') as comment,
       exists (select from unnest(p.proconfig) s where s like 'search\\_path=%') as pinned,
       exists (select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
               where a.grantee = 0 and a.privilege_type = 'EXECUTE') as public_execute
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = any ($1::text[]) and p.prosecdef
       and not exists (select from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')`,
    [schemas],
  );
  const findings: Raw[] = [];
  for (const r of rows) {
    const base = { rule: 'security-definer' as const, object: r.object, comment: r.comment };
    if (!r.pinned) findings.push({ ...base, message: 'is security definer without a pinned search_path' });
    if (r.public_execute) findings.push({ ...base, message: 'is security definer and executable by public' });
  }
  return findings;
}

async function publicGrants(client: Client, schemas: readonly string[]): Promise<Raw[]> {
  const { rows } = await client.query<{ object: string; comment: string | null; privileges: string }>(
    `select format('%s %I.%I', case c.relkind when 'S' then 'sequence' when 'v' then 'view' else 'table' end, n.nspname, c.relname) as object,
       obj_description(c.oid, 'pg_class') as comment,
       (select string_agg(distinct lower(a.privilege_type), ', ') from aclexplode(c.relacl) a where a.grantee = 0) as privileges
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = any ($1::text[]) and c.relkind in ('r', 'p', 'v', 'm', 'f', 'S')
       and exists (select from aclexplode(c.relacl) a where a.grantee = 0)
     union all
     select format('table %I.%I', n.nspname, c.relname), obj_description(c.oid, 'pg_class'),
       string_agg(distinct lower(a.privilege_type) || ' (' || t.attname || ')', ', ')
     from pg_attribute t join pg_class c on c.oid = t.attrelid join pg_namespace n on n.oid = c.relnamespace,
       aclexplode(t.attacl) a
     where n.nspname = any ($1::text[]) and a.grantee = 0 and not t.attisdropped
     group by n.nspname, c.relname, c.oid
     union all
     select format('function %s', p.oid::regprocedure), obj_description(p.oid, 'pg_proc'), 'execute'
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname = any ($1::text[]) and not p.prosecdef
       and not exists (select from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
       and exists (select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                   where a.grantee = 0 and a.privilege_type = 'EXECUTE')`,
    [schemas],
  );
  return rows.map((r) => ({ rule: 'public-grant', object: r.object, message: `grants ${r.privileges} to public`, comment: r.comment }));
}

// ---- policies' expressions, read from their stored node trees ----------------------

/** A node of PostgreSQL's stored expression trees (`pg_node_tree`'s text form). */
interface TreeNode {
  type: string;
  fields: Record<string, TreeValue>;
}
type TreeValue = TreeNode | TreeValue[] | string | null;

/** Reads the text form of a node tree (src/backend/nodes/read.c's tokens). */
export function parseNodeTree(text: string): TreeValue {
  const tokens: string[] = [];
  for (let i = 0; i < text.length; ) {
    const ch = text[i]!;
    if (/\s/.test(ch)) {
      i++;
    } else if ('{}()'.includes(ch)) {
      tokens.push(ch);
      i++;
    } else {
      let token = '';
      while (i < text.length && !/\s/.test(text[i]!) && !'{}()'.includes(text[i]!)) {
        if (text[i] === '\\' && i + 1 < text.length) i++;
        token += text[i++];
      }
      tokens.push(token);
    }
  }
  let at = 0;
  const value = (): TreeValue => {
    const token = tokens[at++];
    if (token === '{') {
      const node: TreeNode = { type: tokens[at++]!, fields: {} };
      while (tokens[at] !== '}' && at < tokens.length) {
        const key = tokens[at++]!;
        node.fields[key.replace(/^:/, '')] = value();
        // a Datum: `<length> [ b1 b2 … ]`
        if (tokens[at] === '[') while (at < tokens.length && tokens[at++] !== ']');
      }
      at++;
      return node;
    }
    if (token === '(') {
      const list: TreeValue[] = [];
      while (tokens[at] !== ')' && at < tokens.length) list.push(value());
      at++;
      return list;
    }
    return token === '<>' || token === undefined ? null : token;
  };
  return value();
}

function* walk(value: TreeValue, skip: (node: TreeNode) => boolean): Generator<TreeNode> {
  if (value === null || typeof value === 'string') return;
  if (Array.isArray(value)) {
    for (const item of value) yield* walk(item, skip);
    return;
  }
  yield value;
  if (skip(value)) return;
  for (const field of Object.values(value.fields)) yield* walk(field, skip);
}

/**
 * The project's functions called in `expr` outside any sub-select whose arguments
 * name no column of the policy's row (a Var of level 0).
 */
export function perRowCalls(expr: TreeValue, helpers: ReadonlyMap<string, string>): string[] {
  const found: string[] = [];
  // a sub-select runs apart: a helper in it is evaluated once (an initPlan) unless it is correlated, which the rule leaves to the reviewer
  const outside = (n: TreeNode) => n.type === 'SUBLINK';
  for (const node of walk(expr, outside)) {
    if (node.type === 'SUBLINK') {
      // its test expression (`x = any (select …)`) is evaluated per row
      for (const inner of walk(node.fields.testexpr ?? null, outside)) check(inner);
      continue;
    }
    check(node);
  }
  function check(node: TreeNode) {
    if (node.type !== 'FUNCEXPR') return;
    const name = helpers.get(String(node.fields.funcid));
    if (!name) return;
    const namesColumn = [...walk(node.fields.args ?? null, outside)].some((n) => n.type === 'VAR' && n.fields.varlevelsup === '0');
    if (!namesColumn && !found.includes(name)) found.push(name);
  }
  return found;
}

async function perRowHelpers(client: Client, schemas: readonly string[]): Promise<Raw[]> {
  const { rows: functions } = await client.query<{ oid: string; name: string }>(
    `select p.oid::text as oid, format('%I.%I', n.nspname, p.proname) as name
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where n.nspname not like 'pg\\_%' and n.nspname <> 'information_schema'`,
  );
  const helpers = new Map(functions.map((f) => [f.oid, f.name]));
  const { rows } = await client.query<{ object: string; comment: string | null; using: string | null; check: string | null }>(
    `select format('policy %I on %I.%I', p.polname, n.nspname, c.relname) as object,
       obj_description(p.oid, 'pg_policy') as comment, p.polqual::text as using, p.polwithcheck::text as check
     from pg_policy p join pg_class c on c.oid = p.polrelid join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = any ($1::text[])`,
    [schemas],
  );
  const findings: Raw[] = [];
  for (const r of rows) {
    const calls = new Set<string>();
    for (const expr of [r.using, r.check]) {
      if (expr) for (const name of perRowCalls(parseNodeTree(expr), helpers)) calls.add(name);
    }
    for (const name of calls) {
      findings.push({
        rule: 'per-row-helper',
        object: r.object,
        message: `calls ${name}() on every row: its arguments name no column, so wrap it as (select ${name}(…))`,
        comment: r.comment,
      });
    }
  }
  return findings;
}
