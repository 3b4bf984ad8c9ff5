// What can still hold back vacuum's horizon is bounded and seen (SPEC §14): the
// API's and analysts' roles carry a transaction_timeout where PostgreSQL has it
// (17+), and the servers read the age of the oldest transaction holding an xid,
// in any database of the server, as a metric and a warning.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { grantAnalyst, revokeAnalyst } from '../src/db/analysts.ts';
import { oldestTransaction, watchOldestTransaction } from '../src/upkeep/oldest-transaction.ts';
import { Metrics } from '../src/operating/metrics.ts';
import { withDatabase } from './database-server.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
const settingsOf = async (role: string) =>
  (
    await app.sql<{ setconfig: string[] | null }>(
      `select s.setconfig from pg_db_role_setting s join pg_roles r on r.oid = s.setrole where r.rolname = $1 and s.setdatabase = 0`,
      [role],
    )
  )[0]?.setconfig ?? [];

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

test('the API role and an analyst login carry a transaction_timeout on PostgreSQL 17 and later', async () => {
  const [{ version }] = (await app.sql<{ version: number }>(`select current_setting('server_version_num')::int as version`)) as [
    { version: number },
  ];
  const user = await app.user();
  const login = `${inject('runId')}_tt_${randomBytes(3).toString('hex')}`;
  await grantAnalyst({ ownerUrl: app.ownerUrl, userId: user.id, login });
  try {
    const api = await settingsOf('rowgate_authenticator');
    const analyst = await settingsOf(login);
    if (version >= 170000) {
      expect(api).toContain('transaction_timeout=120s');
      expect(analyst).toContain('transaction_timeout=15min');
    } else {
      expect(api.some((s) => s.startsWith('transaction_timeout='))).toBe(false);
    }
  } finally {
    await revokeAnalyst({ ownerUrl: app.ownerUrl, login });
  }
});

test('a transaction holding an xid in another database is the oldest one: read, exported and warned about', async () => {
  const scratch = `rowgate_scratch_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: inject('superuserUrl') });
  await admin.connect();
  await admin.query(`create database ${scratch}`);
  const foreign = new pg.Client({ connectionString: withDatabase(inject('superuserUrl'), scratch), application_name: 'held open' });
  await foreign.connect();
  const lines: string[] = [];
  const metrics = new Metrics({ processMetrics: false });
  let watch: { stop(): void } | undefined;
  try {
    await foreign.query('begin');
    const pid = Number((await foreign.query<{ pid: number }>('select pg_current_xact_id(), pg_backend_pid() as pid')).rows[0]!.pid);
    await new Promise((r) => setTimeout(r, 300));
    // other test files share the server and may hold older transactions: ours is the oldest or younger than it
    const ourAge = async () =>
      Number(
        (
          await admin.query<{ age: number }>(
            'select extract(epoch from clock_timestamp() - xact_start)::float8 as age from pg_stat_activity where pid = $1',
            [pid],
          )
        ).rows[0]!.age,
      );
    const before = await ourAge();
    const oldest = await oldestTransaction(app.pool);
    expect(oldest!.age_seconds).toBeGreaterThanOrEqual(before);
    if (oldest!.pid === pid) expect(oldest).toMatchObject({ database: scratch, application_name: 'held open' });
    watch = watchOldestTransaction(app.pool, {
      everyMs: 50,
      warnSeconds: 0.1,
      log: (line) => lines.push(line),
      report: (seconds) => metrics.oldestTransaction.set(seconds),
    });
    for (let i = 0; i < 100 && lines.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    // a warning naming where the transaction is, and one per transaction however many reads found it
    expect(lines.length).toBeGreaterThan(0);
    const warnings = lines.map((l) => JSON.parse(l) as { level: string; pid: number | null; database: string });
    for (const w of warnings) expect(w).toMatchObject({ level: 'warn', database: expect.any(String) });
    const pids = warnings.map((w) => w.pid);
    expect(new Set(pids).size).toBe(pids.length);
    const exported = await metrics.registry.getSingleMetricAsString('rowgate_oldest_transaction_seconds');
    expect(Number(/rowgate_oldest_transaction_seconds ([0-9.e+-]+)/.exec(exported)?.[1])).toBeGreaterThanOrEqual(before);
  } finally {
    watch?.stop();
    await foreign.query('rollback').catch(() => {});
    await foreign.end();
    await admin.query(`drop database if exists ${scratch} with (force)`);
    await admin.end();
  }
});
