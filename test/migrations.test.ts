// The committed migrations, applied to an empty database the way a deploy does
// (graphile-migrate migrate as rowgate_owner, through src/db/setup.ts),
// make exactly the schema the suite runs on; and migrations/current/ is empty
// (the check that fails when an uncommitted migration reaches main).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { ensureDatabase, hardenDatabase, migrateDatabase, projectRoot } from '../src/db/setup.ts';
import { withDatabase } from './database-server.ts';

/**
 * What the database contains, independent of OIDs and of the database's name:
 * one sorted list of plain rows per kind of object, so that a difference shows
 * up as a readable diff.
 */
const FINGERPRINT: Record<string, string> = {
  schemas: `
    select n.nspname, pg_get_userbyid(n.nspowner) as owner, n.nspacl::text as acl, obj_description(n.oid, 'pg_namespace') as comment
    from pg_namespace n where n.nspname not like 'pg\\_%' and n.nspname <> 'information_schema'`,
  relations: `
    select c.oid::regclass::text as name, c.relkind, pg_get_userbyid(c.relowner) as owner, c.relacl::text as acl,
      c.reloptions::text as options, c.relrowsecurity as rls, c.relforcerowsecurity as force_rls, c.relpersistence,
      c.relreplident, obj_description(c.oid, 'pg_class') as comment
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname not like 'pg\\_%' and n.nspname <> 'information_schema'`,
  columns: `
    select a.attrelid::regclass::text as relation, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) as type,
      a.attnotnull, pg_get_expr(d.adbin, d.adrelid) as default, a.attidentity, a.attgenerated,
      case when a.attcollation <> 0 then a.attcollation::regcollation::text end as collation,
      a.attacl::text as acl, col_description(a.attrelid, a.attnum) as comment
    from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
      left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where a.attnum > 0 and not a.attisdropped and n.nspname not like 'pg\\_%' and n.nspname <> 'information_schema'`,
  constraints: `
    select coalesce(co.conrelid::regclass::text, co.contypid::regtype::text) as on, co.conname, co.contype,
      pg_get_constraintdef(co.oid) as definition, co.condeferrable, co.condeferred, co.convalidated
    from pg_constraint co join pg_namespace n on n.oid = co.connamespace
    where n.nspname not like 'pg\\_%' and n.nspname <> 'information_schema'`,
  indexes: `
    select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition
    from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace
    where n.nspname not like 'pg\\_%' and n.nspname <> 'information_schema'`,
  policies: `
    select schemaname, tablename, policyname, permissive, roles::text, cmd, qual, with_check from pg_policies`,
  functions: `
    select p.oid::regprocedure::text as signature, p.prokind, pg_get_userbyid(p.proowner) as owner,
      p.provolatile, p.prosecdef, p.proleakproof, p.proisstrict, p.proparallel, p.proconfig::text as config,
      p.proacl::text as acl, obj_description(p.oid, 'pg_proc') as comment,
      case when p.prokind in ('f', 'p') then pg_get_functiondef(p.oid) end as definition
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname not like 'pg\\_%' and n.nspname <> 'information_schema'`,
  views: `
    select c.oid::regclass::text as name, pg_get_viewdef(c.oid) as definition
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where c.relkind in ('v', 'm') and n.nspname not like 'pg\\_%' and n.nspname <> 'information_schema'`,
  triggers: `
    select t.tgrelid::regclass::text as relation, t.tgname, pg_get_triggerdef(t.oid) as definition, t.tgenabled
    from pg_trigger t where not t.tgisinternal`,
  types: `
    select t.oid::regtype::text as name, t.typtype, pg_get_userbyid(t.typowner) as owner, t.typacl::text as acl,
      case when t.typtype = 'e' then (select array_agg(e.enumlabel order by e.enumsortorder) from pg_enum e where e.enumtypid = t.oid)::text end as labels,
      case when t.typtype = 'd' then format_type(t.typbasetype, t.typtypmod) end as base
    from pg_type t join pg_namespace n on n.oid = t.typnamespace
    where t.typtype in ('e', 'd', 'c', 'r') and n.nspname not like 'pg\\_%' and n.nspname <> 'information_schema'
      and not exists (select 1 from pg_class c where c.oid = t.typrelid and c.relkind <> 'c')`,
  sequences: `
    select s.seqrelid::regclass::text as name, format_type(s.seqtypid, null) as type, s.seqstart, s.seqincrement,
      s.seqmax, s.seqmin, s.seqcache, s.seqcycle
    from pg_sequence s`,
  extensions: `select extname, extversion, extnamespace::regnamespace::text as schema from pg_extension`,
  default_privileges: `
    select pg_get_userbyid(d.defaclrole) as role, d.defaclnamespace::regnamespace::text as schema, d.defaclobjtype,
      d.defaclacl::text as acl
    from pg_default_acl d`,
  event_triggers: `select evtname, evtevent, evtfoid::regproc::text, evtenabled, evttags::text from pg_event_trigger`,
  database: `
    select pg_get_userbyid(d.datdba) as owner, d.encoding, d.datcollate, d.datctype,
      (select array_agg(g order by g) from (
         select a.grantee::regrole::text || ':' || a.privilege_type || ':' || a.is_grantable as g
         from aclexplode(d.datacl) a where a.grantee <> 0) grants)::text as grants,
      (select array_agg(a.privilege_type order by a.privilege_type) from aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a
       where a.grantee = 0)::text as public_privileges,
      (select array_agg(s order by s) from pg_db_role_setting rs, unnest(rs.setconfig) s where rs.setdatabase = d.oid)::text as settings
    from pg_database d where d.datname = current_database()`,
  public_schema_privileges: `
    select a.privilege_type from pg_namespace n, aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
    where n.nspname = 'public' and a.grantee = 0`,
  migrations: `select filename, hash, previous_hash from graphile_migrate.migrations`,
};

type Fingerprint = Record<string, unknown[]>;

async function fingerprint(url: string): Promise<Fingerprint> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result: Fingerprint = {};
    for (const [name, sql] of Object.entries(FINGERPRINT)) {
      const { rows } = await client.query(sql);
      result[name] = rows.map((r) => JSON.stringify(r)).sort();
    }
    return result;
  } finally {
    await client.end();
  }
}

const superuserUrl = () => inject('superuserUrl');
const asSuperuser = (database: string) => withDatabase(superuserUrl(), database);
const asOwner = (database: string) => withDatabase(superuserUrl(), database, { name: 'rowgate_owner', password: inject('ownerPassword') });

async function dropDatabase(database: string) {
  const client = new pg.Client({ connectionString: superuserUrl() });
  await client.connect();
  try {
    await client.query(`drop database if exists ${pg.escapeIdentifier(database)} with (force)`);
  } finally {
    await client.end();
  }
}

describe('every committed migration, applied to an empty database', () => {
  const fresh = `rowgate_migrations_${randomBytes(6).toString('hex')}`;
  const clone = `rowgate_clone_${randomBytes(6).toString('hex')}`;
  let freshPrint: Fingerprint;
  let templatePrint: Fingerprint;

  beforeAll(async () => {
    // what a DBA does: an empty database owned by rowgate_owner, then `graphile-migrate migrate`
    await ensureDatabase(superuserUrl(), fresh);
    await hardenDatabase(superuserUrl(), fresh);
    await migrateDatabase(asOwner(fresh));
    freshPrint = await fingerprint(asSuperuser(fresh));
    templatePrint = await fingerprint(asSuperuser(inject('template')));
  });
  afterAll(async () => {
    await dropDatabase(fresh);
    await dropDatabase(clone);
  });

  test('records every committed migration, in order, as graphile-migrate migrate does', async () => {
    const files = (await readdir(path.join(projectRoot, 'migrations', 'committed'))).filter((f) => f.endsWith('.sql')).sort();
    expect(files.length).toBeGreaterThanOrEqual(1);
    const client = new pg.Client({ connectionString: asSuperuser(fresh) });
    await client.connect();
    const { rows } = await client
      .query('select filename, hash from graphile_migrate.migrations order by filename')
      .finally(() => client.end());
    // graphile-migrate records `000001.sql` for `000001-message.sql`, with the hash of its header
    const expected = await Promise.all(
      files.map(async (file) => {
        const text = await readFile(path.join(projectRoot, 'migrations', 'committed', file), 'utf8');
        return { filename: file.replace(/^(\d+)(-.*)?\.sql$/, '$1.sql'), hash: /^--! Hash: (\S+)$/m.exec(text)?.[1] };
      }),
    );
    expect(rows).toEqual(expected);
  });

  test('the fingerprint sees the schema (not two empty lists that would match anything)', () => {
    expect(freshPrint.relations!.length).toBeGreaterThan(20);
    expect(freshPrint.columns!.length).toBeGreaterThan(100);
    expect(freshPrint.policies!.length).toBeGreaterThan(20);
    expect(freshPrint.functions!.length).toBeGreaterThan(40);
    expect(freshPrint.triggers!.length).toBeGreaterThan(5);
    expect(freshPrint.views!.join()).toContain('rowgate.revenue_by_day');
    expect(freshPrint.database!.join()).toContain('rowgate_analyst:CONNECT');
    // the migrations revoke TEMPORARY and CONNECT from PUBLIC on their database (SPEC §24)
    expect(freshPrint.database!.join()).toMatch(/"public_privileges":null/);
    expect(freshPrint.database!.join()).toContain('rowgate_sql_login:CONNECT');
  });

  test('is identical to the template database the suite runs on', () => {
    for (const kind of Object.keys(FINGERPRINT)) expect(freshPrint[kind], kind).toEqual(templatePrint[kind]);
  });

  test("and to a test file's database cloned from the template (database-level grants included)", async () => {
    await ensureDatabase(superuserUrl(), clone, inject('template'));
    const clonePrint = await fingerprint(asSuperuser(clone));
    for (const kind of Object.keys(FINGERPRINT)) expect(clonePrint[kind], kind).toEqual(freshPrint[kind]);
  });

  test('the comparison catches a difference: one changed grant, volatility or policy expression', async () => {
    const client = new pg.Client({ connectionString: asSuperuser(fresh) });
    await client.connect();
    try {
      for (const [change, kind] of [
        ['grant select (email) on rowgate.users to rowgate_customer', 'columns'],
        ['alter function rowgate_hidden.has_scope(text) volatile', 'functions'],
        [
          "alter policy select_member on rowgate.products using (organization_id = any ((select rowgate_hidden.current_organization_ids('products:write'))::uuid[]))",
          'policies',
        ],
        ['grant temporary on database current_database_placeholder to public', 'database'],
      ] as const) {
        const before = await fingerprint(asSuperuser(fresh));
        await client.query('begin');
        await client.query(change.replace('current_database_placeholder', pg.escapeIdentifier(fresh)));
        const { rows } = await client.query<Record<string, unknown>>(FINGERPRINT[kind]!);
        await client.query('rollback');
        expect(rows.map((r) => JSON.stringify(r)).sort(), change).not.toEqual(before[kind]);
        expect(await fingerprint(asSuperuser(fresh)), 'rolled back').toEqual(before);
      }
    } finally {
      await client.end();
    }
  });
});

/** `node src/cli/main.ts …` with nothing but DATABASE_URL: what a DBA's deploy step has. */
function dbaCli(args: string[], databaseUrl: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(DATABASE_URL|AUTH_DATABASE_URL|ROOT_DATABASE_URL|SHADOW_DATABASE_URL|ROWGATE_.*)$/.test(key))
      env[key] = value;
  }
  env.DATABASE_URL = databaseUrl;
  env.ROWGATE_HOME = path.join(tmpdir(), `rowgate-migrations-test-${process.pid}`);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(projectRoot, 'src', 'cli', 'main.ts'), ...args],
      { cwd: projectRoot, env, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

describe('the deploy path: db status → db migrate → db status, with DATABASE_URL only', () => {
  const database = `rowgate_deploy_${randomBytes(6).toString('hex')}`;
  afterAll(() => dropDatabase(database));

  test('status lists every committed migration as pending (exit 1); migrate applies them; status is clean', async () => {
    // the one-time set-up a superuser does (db/database.sql); then the owner alone
    await ensureDatabase(superuserUrl(), database);
    await hardenDatabase(superuserUrl(), database);
    const committed = (await readdir(path.join(projectRoot, 'migrations', 'committed'))).filter((f) => f.endsWith('.sql')).sort();

    const before = await dbaCli(['db', 'status'], asOwner(database));
    expect(before.code, before.stderr).toBe(1);
    const pending = JSON.parse(before.stdout);
    expect(pending.pending_migrations).toEqual(committed.map((f) => f.replace(/^(\d+)(-.*)?\.sql$/, '$1.sql')));
    // status only reports: nothing was applied
    expect(await superuser('select count(*)::int as n from pg_namespace where nspname = $1', ['rowgate'], database)).toEqual([{ n: 0 }]);

    const migrate = await dbaCli(['db', 'migrate'], asOwner(database));
    expect(migrate).toEqual({ code: 0, stdout: expect.any(String), stderr: '' });
    expect(JSON.parse(migrate.stdout)).toEqual({ migrated: true });

    const after = await dbaCli(['db', 'status'], asOwner(database));
    const status = JSON.parse(after.stdout);
    expect(status.pending_migrations).toEqual([]);
    expect(after.code).toBe(status.current_migration_not_empty ? 1 : 0);

    const print = await fingerprint(asSuperuser(database));
    const template = await fingerprint(asSuperuser(inject('template')));
    for (const kind of Object.keys(FINGERPRINT)) expect(print[kind], kind).toEqual(template[kind]);
  }, 120_000);
});

async function superuser(sql: string, values: unknown[], database: string) {
  const client = new pg.Client({ connectionString: asSuperuser(database) });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

describe('migrations/current/ on main', () => {
  test('holds no part but blank lines and comments (every migration is committed), and current.sql does not exist', async () => {
    // graphile-migrate takes either current.sql or the current/ folder, never both
    expect(existsSync(path.join(projectRoot, 'migrations', 'current.sql')), 'migrations/current.sql: use migrations/current/').toBe(false);
    const folder = path.join(projectRoot, 'migrations', 'current');
    const parts = (await readdir(folder)).filter((f) => f.endsWith('.sql'));
    for (const part of parts) {
      const text = await readFile(path.join(folder, part), 'utf8');
      const statements = text
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .split('\n')
        .map((line) => line.replace(/--.*$/, '').trim())
        .filter(Boolean);
      expect(statements, `migrations/current/${part} must be empty on main: commit it with scripts/commit-migration.ts`).toEqual([]);
    }
  });
});
