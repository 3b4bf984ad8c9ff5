// The schema as the catalogs hold it, written as SQL to read (data/schema.sql):
// what the migrations add up to, one object after another in a stable order,
// independent of OIDs, of the database's name and of the order migrations
// created things in. There is no pg_dump among the embedded binaries, and the
// project's CI has only Node: the catalogs' own deparsers (pg_get_functiondef,
// pg_get_constraintdef, pg_get_indexdef, pg_get_triggerdef, pg_get_viewdef, pg_get_expr)
// write each definition. graphile-migrate's own bookkeeping schema is left out, and
// so are partitions: their parent shows what they hold, and their names are dates.
import type pg from 'pg';

type Client = Pick<pg.ClientBase, 'query'>;

/**
 * The schemas shown: every schema but the system's, graphile-migrate's and
 * rowgate_compat, which the set-up (db/database.sql) makes for what PostgreSQL
 * 18 has built in (16 and 17 use it).
 */
const SCHEMAS = `n.nspname not like 'pg\\_%' and n.nspname not in ('information_schema', 'graphile_migrate', 'rowgate_compat')`;

/** rowgate_compat's functions stand where 18's own are: written as 18's are, the dump is the same on every major. */
const as18 = (text: string) => text.replaceAll('rowgate_compat.uuidv7()', 'uuidv7()');

/**
 * `grant … to …;` lines of an ACL (the owner's own privileges left out): one
 * line per set of privileges, naming every grantee that holds it, in a stable order.
 */
const GRANTS = (acl: string, owner: string, on: string) => `
  select string_agg(format('grant %s on %s to %s;', privileges, ${on}, grantees), e'\\n' order by privileges) as grants
  from (
    select privileges, string_agg(grantee, ', ' order by grantee) as grantees
    from (
      select case when a.grantee = 0 then 'public' else quote_ident(pg_get_userbyid(a.grantee)) end as grantee,
        string_agg(lower(a.privilege_type) || case when a.is_grantable then ' with grant option' else '' end, ', '
          order by a.privilege_type) as privileges
      from aclexplode(${acl}) a
      where a.grantee <> ${owner}
      group by a.grantee
    ) by_grantee
    group by privileges
  ) g`;

async function rows<T>(client: Client, sql: string, values: unknown[] = []): Promise<T[]> {
  return (await client.query(sql, values)).rows as T[];
}

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
const comment = (on: string, text: string | null) => (text === null ? [] : [`comment on ${on} is ${literal(text)};`]);
const lines = (text: string | null) => (text ? [text] : []);

async function database(client: Client): Promise<string[]> {
  const [db] = await rows<{ grants: string | null; settings: string[] | null }>(
    client,
    `select (${GRANTS("coalesce(d.datacl, acldefault('d', d.datdba))", 'd.datdba', "'database :database'")}) as grants,
       (select array_agg(s order by s) from pg_db_role_setting rs, unnest(rs.setconfig) s
        where rs.setdatabase = d.oid and rs.setrole = 0) as settings
     from pg_database d where d.datname = current_database()`,
  );
  const extensions = await rows<{ line: string }>(
    client,
    `select format('create extension %I with schema %I;', extname, extnamespace::regnamespace::text) as line
     from pg_extension where extname <> 'plpgsql' order by extname`,
  );
  const defaults = await rows<{ line: string }>(
    client,
    // a role's default privileges: what they add to, or take from, the built-in defaults
    `with d as (
       select d.defaclrole, d.defaclnamespace, d.defaclobjtype, d.defaclacl,
         case d.defaclobjtype when 'r' then 'tables' when 'S' then 'sequences' when 'f' then 'functions'
           when 'T' then 'types' when 'n' then 'schemas' end as kind,
         case d.defaclobjtype when 'r' then 'r' when 'S' then 's' when 'f' then 'f' when 'T' then 'T' when 'n' then 'n' end as acltype
       from pg_default_acl d
     ), granted as (
       select d.*, a.grantee, a.privilege_type, 'grant' as verb from d, aclexplode(d.defaclacl) a
       where d.defaclnamespace <> 0 or (a.grantee, a.privilege_type) not in
         (select b.grantee, b.privilege_type from aclexplode(acldefault(d.acltype::"char", d.defaclrole)) b)
       union all
       select d.*, b.grantee, b.privilege_type, 'revoke' from d, aclexplode(acldefault(d.acltype::"char", d.defaclrole)) b
       where d.defaclnamespace = 0 and (b.grantee, b.privilege_type) not in
         (select a.grantee, a.privilege_type from aclexplode(d.defaclacl) a)
     )
     select format('alter default privileges for role %I%s %s %s on %s %s %s;', pg_get_userbyid(defaclrole),
       case when defaclnamespace <> 0 then ' in schema ' || defaclnamespace::regnamespace::text else '' end,
       verb, lower(privilege_type), kind, case verb when 'grant' then 'to' else 'from' end,
       case when grantee = 0 then 'public' else quote_ident(pg_get_userbyid(grantee)) end) as line
     from granted order by 1`,
  );
  return [
    '-- The database (whichever its name: :database), its extensions and default privileges',
    ...lines(db?.grants ?? null),
    ...(db?.settings ?? []).map((s) => `alter database :database set ${s.replace('=', ' = ')};`),
    ...extensions.map((e) => e.line),
    ...defaults.map((d) => d.line),
  ];
}

async function schemas(client: Client): Promise<string[]> {
  const found = await rows<{ name: string; grants: string | null; comment: string | null }>(
    client,
    `select n.nspname as name, obj_description(n.oid, 'pg_namespace') as comment,
       (${GRANTS("coalesce(n.nspacl, acldefault('n', n.nspowner))", 'n.nspowner', "'schema ' || quote_ident(n.nspname)")}) as grants
     from pg_namespace n where ${SCHEMAS} order by n.nspname`,
  );
  return found.flatMap((s) => [
    '',
    `-- Schema ${s.name}`,
    ...(s.name === 'public' ? [] : [`create schema ${s.name};`]),
    ...comment(`schema ${s.name}`, s.comment),
    ...lines(s.grants),
  ]);
}

async function types(client: Client): Promise<string[]> {
  const found = await rows<{ name: string; definition: string; comment: string | null }>(
    client,
    `select t.oid::regtype::text as name, obj_description(t.oid, 'pg_type') as comment,
       case t.typtype
         when 'e' then format('create type %s as enum (%s);', t.oid::regtype,
           (select string_agg(quote_literal(e.enumlabel), ', ' order by e.enumsortorder) from pg_enum e where e.enumtypid = t.oid))
         when 'd' then format('create domain %s as %s%s%s%s;', t.oid::regtype, format_type(t.typbasetype, t.typtypmod),
           case when t.typnotnull then ' not null' else '' end,
           coalesce(' default ' || t.typdefault, ''),
           coalesce((select string_agg(format(' constraint %I %s', c.conname, pg_get_constraintdef(c.oid)), '' order by c.conname)
                     from pg_constraint c where c.contypid = t.oid and c.contype = 'c'), ''))
         when 'c' then format('create type %s as (%s);', t.oid::regtype,
           (select string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' order by a.attnum)
            from pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0 and not a.attisdropped))
         else format('-- type %s of typtype %s', t.oid::regtype, t.typtype)
       end as definition
     from pg_type t join pg_namespace n on n.oid = t.typnamespace
     where ${SCHEMAS} and t.typtype in ('e', 'd', 'c', 'r', 'm')
       and not exists (select 1 from pg_class c where c.oid = t.typrelid and c.relkind <> 'c')
     order by n.nspname, t.typname`,
  );
  return found.flatMap((t) => ['', `-- Type ${t.name}`, t.definition, ...comment(`type ${t.name}`, t.comment)]);
}

interface Relation {
  oid: number;
  name: string;
  relkind: string;
  header: string;
  comment: string | null;
  rls: boolean;
  force_rls: boolean;
  grants: string | null;
}

async function relations(client: Client): Promise<string[]> {
  const found = await rows<Relation>(
    client,
    `select c.oid, c.oid::regclass::text as name, c.relkind, obj_description(c.oid, 'pg_class') as comment,
       c.relrowsecurity as rls, c.relforcerowsecurity as force_rls,
       format('create %s%s %s', case c.relpersistence when 'u' then 'unlogged ' else '' end,
         case c.relkind when 'v' then 'view' when 'm' then 'materialized view' when 'S' then 'sequence' else 'table' end,
         c.oid::regclass) || coalesce(' partition by ' || lower(pg_get_partkeydef(c.oid)), '')
         || coalesce(' with (' || array_to_string(c.reloptions, ', ') || ')', '') as header,
       (${GRANTS("coalesce(c.relacl, acldefault(case c.relkind when 'S' then 's' else 'r' end::\"char\", c.relowner))", 'c.relowner', "case c.relkind when 'S' then 'sequence ' else 'table ' end || c.oid::regclass::text")}) as grants
     from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where ${SCHEMAS} and c.relkind in ('r', 'p', 'v', 'm', 'S') and not c.relispartition
       and not exists (select 1 from pg_depend d where d.classid = 'pg_class'::regclass and d.objid = c.oid and d.deptype = 'i'
         and d.refobjid <> c.oid) -- a partitioned table depends on its own key's columns
     order by case when c.relkind in ('r', 'p') then 0 when c.relkind = 'S' then 1 else 2 end, n.nspname, c.relname`,
  );
  // one query per kind of detail for every relation at once, each ordered within its relation
  const oids = found.map((r) => r.oid);
  const details: Map<string, string[]>[] = [];
  for (const sql of RELATION_DETAILS) details.push(await byRelation(client, sql, oids));
  const [columns, constraints, sequences, views, columnComments, columnGrants, indexes, policies, triggers] = details;
  const out: string[] = [];
  for (const r of found) {
    const of = (detail: Map<string, string[]> | undefined) => detail?.get(String(r.oid)) ?? [];
    const kind = r.relkind === 'v' ? 'View' : r.relkind === 'm' ? 'Materialized view' : r.relkind === 'S' ? 'Sequence' : 'Table';
    out.push('', `-- ${kind} ${r.name}`);
    if (r.relkind === 'r' || r.relkind === 'p') {
      const options = / (partition by|with \().*$/.exec(r.header)?.[0] ?? '';
      out.push(`${r.header.slice(0, r.header.length - options.length)} (`);
      out.push([...of(columns), ...of(constraints)].map((line) => `  ${line}`).join(',\n'), `)${options};`);
    } else if (r.relkind === 'S') out.push(`${r.header} ${of(sequences).join('')}`);
    else out.push(`${r.header} as`, `${of(views).join('').trimEnd().replace(/;$/, '')};`);
    out.push(...comment(`${kind.toLowerCase()} ${r.name}`, r.comment), ...of(columnComments));
    if (r.rls) out.push(`alter table ${r.name} enable row level security;`);
    if (r.force_rls) out.push(`alter table ${r.name} force row level security;`);
    out.push(...lines(r.grants), ...of(columnGrants), ...of(indexes), ...of(policies), ...of(triggers));
  }
  return out;
}

/** `relid, line` rows for the relations `$1`, in order: the lines of each relation. */
async function byRelation(client: Client, sql: string, oids: number[]): Promise<Map<string, string[]>> {
  const result = new Map<string, string[]>();
  for (const { relid, line } of await rows<{ relid: number; line: string }>(client, sql, [oids])) {
    const key = String(relid);
    result.set(key, [...(result.get(key) ?? []), line]);
  }
  return result;
}

const RELATION_DETAILS = [
  // columns
  `select a.attrelid as relid, format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod))
       || case when a.attcollation <> t.typcollation then ' collate ' || a.attcollation::regcollation::text else '' end
       || case a.attgenerated when 's' then ' generated always as (' || pg_get_expr(d.adbin, d.adrelid) || ') stored'
            when 'v' then ' generated always as (' || pg_get_expr(d.adbin, d.adrelid) || ') virtual'
            else coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') end
       || case a.attidentity when 'a' then ' generated always as identity' when 'd' then ' generated by default as identity' else '' end
       || case when a.attnotnull then ' not null' else '' end as line
   from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_type t on t.oid = a.atttypid
     left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
   where a.attrelid = any ($1::oid[]) and c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped
   order by a.attrelid, a.attnum`,
  // constraints; not-null ones (contype 'n', PostgreSQL 18) are the columns' "not null"
  `select conrelid as relid, format('constraint %I %s', conname, pg_get_constraintdef(oid)) as line from pg_constraint
   where conrelid = any ($1::oid[]) and contype in ('p', 'u', 'f', 'c', 'x')
   order by conrelid, array_position(array['p', 'u', 'x', 'f', 'c']::"char"[], contype), conname`,
  // sequences
  `select s.seqrelid as relid, format('as %s increment %s minvalue %s maxvalue %s start %s cache %s%s%s;',
     format_type(s.seqtypid, null), s.seqincrement, s.seqmin, s.seqmax, s.seqstart, s.seqcache,
     case when s.seqcycle then ' cycle' else '' end,
     coalesce((select format(' owned by %s.%I', d.refobjid::regclass, a.attname) from pg_depend d
               join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
               where d.classid = 'pg_class'::regclass and d.objid = s.seqrelid and d.deptype = 'a'), '')) as line
   from pg_sequence s where s.seqrelid = any ($1::oid[])`,
  // views
  `select c.oid as relid, pg_get_viewdef(c.oid, true) as line from pg_class c
   where c.oid = any ($1::oid[]) and c.relkind in ('v', 'm')`,
  // column comments
  `select a.attrelid as relid, format('comment on column %s.%I is %L;', a.attrelid::regclass, a.attname, d.description) as line
   from pg_attribute a join pg_description d on d.objoid = a.attrelid and d.classoid = 'pg_class'::regclass and d.objsubid = a.attnum
   where a.attrelid = any ($1::oid[]) and a.attnum > 0 and not a.attisdropped order by a.attrelid, a.attnum`,
  // grants on columns: one line per privilege and set of columns (in table order), naming its grantees
  `select relid, format('grant %s (%s) on %s to %s;', lower(privilege), columns, relid::regclass,
     string_agg(grantee, ', ' order by grantee)) as line
   from (select a.attrelid as relid, x.privilege_type as privilege,
           case when x.grantee = 0 then 'public' else quote_ident(pg_get_userbyid(x.grantee)) end as grantee,
           string_agg(quote_ident(a.attname), ', ' order by a.attnum) as columns
         from pg_attribute a, aclexplode(a.attacl) x
         where a.attrelid = any ($1::oid[]) and a.attnum > 0 and not a.attisdropped and a.attacl is not null
         group by a.attrelid, x.privilege_type, x.grantee) g
   group by relid, privilege, columns order by relid, lower(privilege), columns`,
  // indexes that back no constraint
  `select i.indrelid as relid, pg_get_indexdef(i.indexrelid) || ';' as line from pg_index i join pg_class c on c.oid = i.indexrelid
   where i.indrelid = any ($1::oid[])
     and not exists (select 1 from pg_constraint co where co.conindid = i.indexrelid and co.conrelid = i.indrelid)
   order by i.indrelid, c.relname`,
  // row-level security policies
  `select p.polrelid as relid, format('create policy %I on %s as %s for %s to %s%s%s;', p.polname, p.polrelid::regclass,
     case when p.polpermissive then 'permissive' else 'restrictive' end,
     case p.polcmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update' when 'd' then 'delete' else 'all' end,
     (select string_agg(case when role = 0 then 'public' else quote_ident(pg_get_userbyid(role)) end, ', ' order by 1)
      from unnest(p.polroles) role),
     coalesce(e'\\n  using (' || pg_get_expr(p.polqual, p.polrelid) || ')', ''),
     coalesce(e'\\n  with check (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')', '')) as line
   from pg_policy p where p.polrelid = any ($1::oid[]) order by p.polrelid, p.polname`,
  // triggers, then rules (views' own rules are their definitions)
  `select relid, line from (
     select t.tgrelid as relid, 0 as kind, t.tgname as name, pg_get_triggerdef(t.oid) || ';'
       || case t.tgenabled when 'D' then format(e'\\nalter table %s disable trigger %I;', t.tgrelid::regclass, t.tgname) else '' end as line
     from pg_trigger t where t.tgrelid = any ($1::oid[]) and not t.tgisinternal
     union all
     select r.ev_class, 1, r.rulename, pg_get_ruledef(r.oid) from pg_rewrite r
     where r.ev_class = any ($1::oid[]) and r.rulename <> '_RETURN'
   ) t order by relid, kind, name`,
];

async function functions(client: Client): Promise<string[]> {
  const found = await rows<{ signature: string; kind: string; definition: string; comment: string | null; grants: string | null }>(
    client,
    `select p.oid::regprocedure::text as signature, case p.prokind when 'p' then 'procedure' else 'function' end as kind,
       pg_get_functiondef(p.oid) as definition, obj_description(p.oid, 'pg_proc') as comment,
       (${GRANTS("coalesce(p.proacl, acldefault('f', p.proowner))", 'p.proowner', "case p.prokind when 'p' then 'procedure ' else 'function ' end || p.oid::regprocedure::text")}) as grants
     from pg_proc p join pg_namespace n on n.oid = p.pronamespace
     where ${SCHEMAS} and p.prokind in ('f', 'p')
       and not exists (select 1 from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
     order by n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)`,
  );
  return found.flatMap((f) => [
    '',
    `-- ${f.kind === 'procedure' ? 'Procedure' : 'Function'} ${f.signature}`,
    `${f.definition.trimEnd()};`,
    ...comment(`${f.kind} ${f.signature}`, f.comment),
    ...lines(f.grants),
  ]);
}

async function eventTriggers(client: Client): Promise<string[]> {
  const found = await rows<{ line: string }>(
    client,
    `select format('create event trigger %I on %s%s execute function %s();', evtname, evtevent,
       coalesce(' when tag in (' || (select string_agg(quote_literal(t), ', ') from unnest(evttags) t) || ')', ''),
       evtfoid::regproc) as line
     from pg_event_trigger order by evtname`,
  );
  return found.length ? ['', '-- Event triggers', ...found.map((e) => e.line)] : [];
}

/**
 * The schema of the database `client` is connected to, as SQL to read. The
 * first line names the PostgreSQL major version: the deparsers' spelling can
 * change between versions.
 */
export async function dumpSchema(client: Client): Promise<string> {
  const [{ major }] = (await rows<{ major: number }>(client, `select current_setting('server_version_num')::int / 10000 as major`)) as [
    { major: number },
  ];
  const parts = [
    `-- rowgate's schema as the committed migrations make it, on PostgreSQL ${major}.`,
    '-- Written by `npm run db:schema`: do not edit (the migrations make the schema; this file shows it).',
    '-- Order: the database, schemas, types, tables (each with its comments, row-level security, grants,',
    '-- indexes, policies and triggers), sequences, views, functions. Grants are all there is: anything',
    '-- not granted here is not allowed (functions are not executable by PUBLIC unless a line says so).',
    '',
    ...(await database(client)),
    ...(await schemas(client)),
    ...(await types(client)),
    ...(await relations(client)),
    ...(await functions(client)),
    ...(await eventTriggers(client)),
  ];
  return as18(`${parts.join('\n')}\n`);
}
