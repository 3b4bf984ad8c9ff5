// What CI checks on PostgreSQL 16 and 17 besides the tests (scripts/test-pg-majors.sh):
// the set-up and every committed migration on an empty database, `rowgate db lint`
// on the result, and its schema dump equal to data/schema.sql, which 18 writes.
//
//   TEST_DATABASE_URL=<superuser URL of the cluster> node scripts/check-major.ts
//
// Exits 1 with the first lines that differ, or with db lint's findings.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { dumpSchema } from './schema-dump.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase, projectRoot } from '../src/db/setup.ts';

const SCHEMA_FILE = path.join(projectRoot, 'data', 'schema.sql');

const superuserUrl = process.env.TEST_DATABASE_URL;
if (!superuserUrl) {
  console.error('check-major: set TEST_DATABASE_URL to a superuser URL of the cluster to check');
  process.exit(2);
}

function withDatabase(url: string, name: string, user?: { name: string; password: string }) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  if (user) [u.username, u.password] = [user.name, encodeURIComponent(user.password)];
  return u.toString();
}

/** The dump without its first line, which names the major version it was written on. */
const body = (dump: string) => dump.slice(dump.indexOf('\n') + 1);

const database = `rowgate_major_${randomBytes(4).toString('hex')}`;
const ownerPassword = randomBytes(18).toString('base64url');
const admin = new pg.Client({ connectionString: superuserUrl });
await admin.connect();
let failed = false;
try {
  const { rows } = await admin.query<{ version: string }>(`select current_setting('server_version') as version`);
  const started = performance.now();
  await ensureRoles(superuserUrl, { owner: ownerPassword, authenticator: randomBytes(18).toString('base64url') });
  await ensureDatabase(superuserUrl, database);
  await hardenDatabase(superuserUrl, database);
  const ownerUrl = withDatabase(superuserUrl, database, { name: 'rowgate_owner', password: ownerPassword });
  await migrateDatabase(ownerUrl);
  console.log(`check-major: PostgreSQL ${rows[0]!.version}: set-up and migrations in ${Math.round(performance.now() - started)} ms`);

  const lint = await promisify(execFile)(process.execPath, [path.join(projectRoot, 'src', 'cli', 'main.ts'), 'db', 'lint'], {
    env: { ...process.env, DATABASE_URL: ownerUrl },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
  );
  if (lint.code !== 0) {
    failed = true;
    console.error(`check-major: db lint exits ${lint.code}:\n${lint.stdout}${lint.stderr}`);
  } else console.log('check-major: db lint finds nothing');

  const client = new pg.Client({ connectionString: withDatabase(superuserUrl, database) });
  await client.connect();
  const dump = await dumpSchema(client).finally(() => client.end());
  const file = await readFile(SCHEMA_FILE, 'utf8');
  if (body(dump) !== body(file)) {
    failed = true;
    const [a, b] = [body(file).split('\n'), body(dump).split('\n')];
    const at = a.findIndex((line, i) => line !== b[i]);
    console.error(
      `check-major: the schema dump differs from ${path.relative(process.cwd(), SCHEMA_FILE)} at line ${at + 2}:\n` +
        `  ${path.basename(SCHEMA_FILE)}: ${a.slice(at, at + 5).join('\n    ')}\n  this server: ${b.slice(at, at + 5).join('\n    ')}`,
    );
  } else console.log(`check-major: the schema dump equals ${path.relative(process.cwd(), SCHEMA_FILE)}`);
} finally {
  await admin.query(`drop database if exists ${pg.escapeIdentifier(database)} with (force)`);
  await admin.end();
}
process.exit(failed ? 1 : 0);
