// What can still hold back vacuum's horizon is bounded and seen (SPEC §14): the
// API's and analysts' roles carry a transaction_timeout where PostgreSQL has it
// (17+), and the servers read the age of the oldest transaction holding an xid,
// in any database of the server, as a metric and a warning.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { grantAnalyst, revokeAnalyst } from '../src/db/analysts.ts';
import { oldestTransaction, watchOldestTransaction } from '../src/db/oldest-transaction.ts';
import { Metrics } from '../src/operating/metrics.ts';
import { withDatabase } from './database-server.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
const rootUrl = () => withDatabase(inject('superuserUrl'), app.database);
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
  await grantAnalyst({ ownerUrl: app.ownerUrl, rootUrl: rootUrl(), userId: user.id, login });
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
    await revokeAnalyst({ ownerUrl: app.ownerUrl, rootUrl: rootUrl(), login });
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
    await foreign.query('select pg_current_xact_id()');
    await new Promise((r) => setTimeout(r, 200));
    const oldest = await oldestTransaction(app.pool);
    expect(oldest?.database).toBe(scratch);
    expect(oldest?.application_name).toBe('held open');
    expect(oldest!.age_seconds).toBeGreaterThan(0.1);
    watch = watchOldestTransaction(app.pool, {
      everyMs: 50,
      warnSeconds: 0.1,
      log: (line) => lines.push(line),
      report: (seconds) => metrics.oldestTransaction.set(seconds),
    });
    for (let i = 0; i < 100 && lines.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 200));
    // one warning for the one transaction, however many reads found it
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'warn', database: scratch, application_name: 'held open' });
    const exported = await metrics.registry.getSingleMetricAsString('rowgate_oldest_transaction_seconds');
    expect(Number(/rowgate_oldest_transaction_seconds ([0-9.e+-]+)/.exec(exported)?.[1])).toBeGreaterThan(0.1);
  } finally {
    watch?.stop();
    await foreign.query('rollback').catch(() => {});
    await foreign.end();
    await admin.query(`drop database if exists ${scratch} with (force)`);
    await admin.end();
  }
});
