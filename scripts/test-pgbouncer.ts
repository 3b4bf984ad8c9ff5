// `npm run test:pgbouncer`: a named part of the suite with
// Debian's PgBouncer in transaction pooling mode between the API and PostgreSQL.
//
//  1. finds pgbouncer, or installs Debian's package with apt-get (skips, with a
//     message saying why, only where it cannot be installed);
//  2. starts an embedded PostgreSQL in a temporary directory;
//  3. starts PgBouncer in front of it: pool_mode = transaction, a server pool
//     smaller than the app's client pool (so transactions of one client land on
//     different server connections), SCRAM authentication through auth_query;
//  4. runs the named test files with TEST_DATABASE_URL (the superuser, direct)
//     and TEST_PGBOUNCER_PORT (test/harness.ts routes the app's authenticator
//     pool through PgBouncer);
//  5. stops PgBouncer and PostgreSQL.
//
// Usage: node scripts/test-pgbouncer.ts [test files…]   (default: the files below)
// PGBOUNCER_STATEMENTS=named keeps the pool's named prepared statements (see the
// note printed at the end): PgBouncer 1.18 cannot carry them in transaction mode.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { embeddedUrl, freePort, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { projectRoot } from '../src/db/setup.ts';

const DEFAULT_FILES = [
  'test/pooling.test.ts',
  'test/credentials.test.ts',
  'test/authorization-matrix.test.ts',
  'test/resources.test.ts',
  'test/isolation.props.test.ts',
  'test/graphql.test.ts',
];

function log(line: string) {
  console.log(`test-pgbouncer: ${line}`);
}

function findPgbouncer(): string | null {
  for (const candidate of ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer']) {
    if (existsSync(candidate)) return candidate;
  }
  const which = spawnSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' });
  return which.status === 0 && which.stdout.trim() ? which.stdout.trim() : null;
}

function install(): string | null {
  if (!existsSync('/usr/bin/apt-get')) return null;
  const asRoot = userInfo().uid === 0;
  const sudo = !asRoot && spawnSync('sudo', ['-n', 'true']).status === 0;
  if (!asRoot && !sudo) return null;
  const run = (args: string[]) => {
    const [command, ...rest] = asRoot ? args : ['sudo', '-n', ...args];
    return spawnSync(command!, rest, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } }).status === 0;
  };
  log("pgbouncer not found: installing Debian's package (apt-get install pgbouncer)");
  if (!run(['apt-get', 'install', '-y', '--no-install-recommends', 'pgbouncer'])) {
    run(['apt-get', 'update']);
    if (!run(['apt-get', 'install', '-y', '--no-install-recommends', 'pgbouncer'])) return null;
  }
  return findPgbouncer();
}

async function waitFor(url: string, timeoutMs: number) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (Date.now() > until) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

const binary = findPgbouncer() ?? install();
if (!binary) {
  log('SKIPPED: pgbouncer is not installed and cannot be installed here (no apt-get, or neither root nor passwordless sudo).');
  log('Install it (Debian: apt-get install pgbouncer) and run `npm run test:pgbouncer` again.');
  process.exit(0);
}
const version = spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]?.trim() ?? 'unknown version';
log(`using ${binary} (${version})`);

const files = process.argv.slice(2).length ? process.argv.slice(2) : DEFAULT_FILES;
const work = await mkdtemp(path.join(tmpdir(), 'rowgate-pgbouncer-'));
await chmod(work, 0o755); // the cluster's and PgBouncer's OS user (postgres, when we are root) goes through it
const database = await openEmbeddedDatabase({ home: path.join(work, 'postgres'), exclusive: false });
const superuserUrl = embeddedUrl(database.state, 'superuser', 'postgres');
let bouncer: ReturnType<typeof spawn> | undefined;
let stopping = false;
let code = 1;
try {
  const port = await freePort();
  const asRoot = userInfo().uid === 0;
  const ini = `[databases]
; every database of the test run (each test file clones its own) goes to the embedded server
* = host=127.0.0.1 port=${database.state.port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
pool_mode = transaction
; fewer server connections than the app's pool has clients: consecutive transactions
; of one client land on different server connections
default_pool_size = 2
max_client_conn = 1000
max_db_connections = 20
; SCRAM: clients are checked against pg_shadow's verifiers (auth_query), and
; PgBouncer logs in to the server with the client's SCRAM keys
auth_type = scram-sha-256
auth_file = ${work}/userlist.txt
auth_user = postgres
auth_query = SELECT usename, passwd FROM pg_shadow WHERE usename = $1
; node-postgres sends these as startup parameters; PgBouncer 1.18 refuses unknown
; ones, so they are ignored here, and rowgate sets them per transaction (src/db/pool.ts)
ignore_startup_parameters = extra_float_digits, statement_timeout, idle_in_transaction_session_timeout
server_reset_query =
logfile = ${work}/pgbouncer.log
pidfile = ${work}/pgbouncer.pid
admin_users = postgres
`;
  await writeFile(path.join(work, 'pgbouncer.ini'), ini);
  await writeFile(path.join(work, 'userlist.txt'), `"postgres" "${database.state.superuserPassword}"\n`, { mode: 0o600 });
  if (asRoot) {
    // PgBouncer refuses to run as root: it runs as the OS user that owns the embedded cluster
    const { uid, gid } = statSync(path.join(work, 'postgres', 'pgdata', 'PG_VERSION'));
    for (const file of ['', 'pgbouncer.ini', 'userlist.txt']) await chown(path.join(work, file), uid, gid);
  }
  const args = [...(asRoot ? ['-u', 'postgres'] : []), path.join(work, 'pgbouncer.ini')];
  bouncer = spawn(binary, args, { stdio: ['ignore', 'inherit', 'inherit'] });
  bouncer.on('exit', (c) => c && !stopping && log(`pgbouncer exited with ${c}`));
  await waitFor(`postgres://postgres:${encodeURIComponent(database.state.superuserPassword)}@127.0.0.1:${port}/postgres`, 20_000);
  log(`PgBouncer listening on 127.0.0.1:${port}, transaction pooling, in front of PostgreSQL on 127.0.0.1:${database.state.port}`);
  const statements = process.env.PGBOUNCER_STATEMENTS === 'named' ? 'named' : 'unnamed';
  log(`running ${files.join(' ')} with the authenticator pool through PgBouncer (${statements} prepared statements)`);
  const vitest = spawn(path.join(projectRoot, 'node_modules', '.bin', 'vitest'), ['run', ...files], {
    cwd: projectRoot,
    stdio: 'inherit',
    env: {
      ...process.env,
      TEST_DATABASE_URL: superuserUrl,
      TEST_PGBOUNCER_PORT: String(port),
      TEST_PGBOUNCER_STATEMENTS: statements,
      // PostGraphile's own named statements (@dataplan/pg): off with rowgate's
      ...(statements === 'unnamed' ? { DATAPLAN_PG_PREPARED_STATEMENT_CACHE_SIZE: '0' } : {}),
    },
  });
  code = await new Promise<number>((resolve) => vitest.on('exit', (c) => resolve(c ?? 1)));
  log(code === 0 ? 'PASSED through PgBouncer' : `FAILED through PgBouncer (exit ${code}); PgBouncer's log: ${work}/pgbouncer.log`);
} finally {
  stopping = true;
  bouncer?.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 300));
  await database.stop().catch((error) => log(`could not stop PostgreSQL: ${error}`));
  if (code === 0) await rm(work, { recursive: true, force: true });
}
process.exit(code);
