// Bringing a database to the committed schema: the cluster-wide roles (db/roles.sql,
// as a superuser), the database itself, then graphile-migrate's `migrate` as the owner.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runMigrations } from './migrations-process.ts';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface RolePasswords {
  owner?: string;
  authenticator?: string;
}

/** Runs the idempotent roles script; passwords travel as parameters, never in SQL text. */
export async function ensureRoles(superuserUrl: string, passwords: RolePasswords) {
  const sql = await readFile(path.join(projectRoot, 'db', 'roles.sql'), 'utf8');
  const client = new pg.Client({ connectionString: superuserUrl });
  await client.connect();
  try {
    await client.query('begin');
    await client.query(`select set_config('rowgate.owner_password', $1, true), set_config('rowgate.authenticator_password', $2, true)`, [
      passwords.owner ?? '',
      passwords.authenticator ?? '',
    ]);
    await client.query(sql);
    await client.query('commit');
  } finally {
    await client.end();
  }
}

/** Runs db/database.sql (per-database hardening a superuser must do) in `database`. */
export async function hardenDatabase(superuserUrl: string, database: string) {
  const sql = await readFile(path.join(projectRoot, 'db', 'database.sql'), 'utf8');
  const url = new URL(superuserUrl);
  url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Creates `database` owned by rowgate_owner unless it exists. From a template,
 * the copy gets the template's database-level grants too: CREATE DATABASE
 * copies the schema but not the database's own ACL, and the migrations put
 * grants there (TEMPORARY revoked from PUBLIC, CONNECT for the login roles).
 */
export async function ensureDatabase(superuserUrl: string, database: string, template?: string) {
  const client = new pg.Client({ connectionString: superuserUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (!rowCount) {
      const from = template ? ` template ${pg.escapeIdentifier(template)}` : '';
      await client.query(`create database ${pg.escapeIdentifier(database)} owner rowgate_owner${from}`);
      if (template) await copyDatabaseGrants(client, template, database);
    }
  } finally {
    await client.end();
  }
}

async function copyDatabaseGrants(client: pg.Client, from: string, to: string) {
  const { rows } = await client.query<{ grantee: string | null; privilege_type: string; is_grantable: boolean }>(
    `select case when a.grantee = 0 then null else a.grantee::regrole::text end as grantee, a.privilege_type, a.is_grantable
     from pg_database d, aclexplode(d.datacl) a
     where d.datname = $1 and a.grantee <> d.datdba`,
    [from],
  );
  if (!rows.length) return; // the template has the default ACL, as the copy has
  const db = pg.escapeIdentifier(to);
  await client.query(`revoke all on database ${db} from public`);
  for (const { grantee, privilege_type, is_grantable } of rows) {
    // grantee::regrole::text is already quoted as needed
    await client.query(`grant ${privilege_type} on database ${db} to ${grantee ?? 'public'}${is_grantable ? ' with grant option' : ''}`);
  }
}

/** Where the committed migrations are */
export const MIGRATIONS_FOLDER = path.join(projectRoot, 'migrations');

export { MIGRATION_SEARCH_PATH } from './migrations-process.ts';

/**
 * Applies the committed migrations (graphile-migrate migrate). graphile-migrate
 * tries its advisory lock once and fails with "Failed to get exclusive lock"
 * when another process migrates at that moment (two replicas starting together,
 * a CLI command while the server starts): wait for it and try again, for up to
 * about half a minute.
 */
export async function migrateDatabase(ownerUrl: string, migrationsFolder = MIGRATIONS_FOLDER) {
  for (let attempt = 1; ; attempt++) {
    try {
      await runMigrations('migrate', ownerUrl, migrationsFolder);
      return;
    } catch (error) {
      if (/function uuidv7\(\) does not exist/.test((error as Error)?.message ?? '')) throw withoutCompat(error as Error);
      if (attempt >= 100 || !/Failed to get exclusive lock/.test((error as Error)?.message ?? '')) throw error;
      // an analyst holding the lock loses its session (analysts take no advisory locks)
      if (attempt === 1) await endAnalystsHoldingLocks(ownerUrl);
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
    }
  }
}

/** Before 18, the migrations need what db/database.sql makes: say so rather than only which function is missing. */
function withoutCompat(error: Error) {
  return new Error(
    `${error.message}: on PostgreSQL 16 and 17, run db/database.sql as a superuser in this database before migrating ` +
      '(start-up does when ROOT_DATABASE_URL is set; docs/operations.md)',
    { cause: error },
  );
}

/** Analysts' limits enforced once (src/upkeep/analyst-limits.ts), in a database that may not have the function yet. */
const ENFORCE_ANALYST_LIMITS_IF_MIGRATED = `
  select rowgate_private.enforce_analyst_limits()
  where to_regprocedure('rowgate_private.enforce_analyst_limits()') is not null`;

async function endAnalystsHoldingLocks(ownerUrl: string) {
  const client = new pg.Client({ connectionString: ownerUrl });
  try {
    await client.connect();
    await client.query(ENFORCE_ANALYST_LIMITS_IF_MIGRATED);
  } catch {
    // best effort: without pg_signal_backend the lock is waited for, as before
  } finally {
    await client.end().catch(() => {});
  }
}

/** graphile-migrate's status: what is committed and not yet applied */
export async function migrationStatus(ownerUrl: string) {
  return (await runMigrations('status', ownerUrl, MIGRATIONS_FOLDER)) as { remainingMigrations?: string[]; hasCurrentMigration: boolean };
}
