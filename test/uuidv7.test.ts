// The ids of events and webhook deliveries are UUIDv7s from the column default
// uuidv7(): PostgreSQL 18's own, or on 16 and 17 rowgate_compat.uuidv7, which the
// set-up (db/database.sql) makes. Either way an id holds the millisecond it was
// made in (events are partitioned by it) and one session's ids only increase.
// CI runs this file on 16 and 17 too (scripts/test-pg-majors.sh).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { ensureDatabase, MIGRATION_SEARCH_PATH } from '../src/db/setup.ts';
import { withDatabase } from './database-server.ts';

const database = `rowgate_uuidv7_${randomBytes(6).toString('hex')}`;
const builtIn = inject('serverVersionNum') >= 180000;
let client: pg.Client;

beforeAll(async () => {
  await ensureDatabase(inject('superuserUrl'), database, inject('template'));
  client = new pg.Client({ connectionString: withDatabase(inject('superuserUrl'), database) });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
  const admin = new pg.Client({ connectionString: inject('superuserUrl') });
  await admin.connect();
  await admin.query(`drop database if exists ${pg.escapeIdentifier(database)} with (force)`).finally(() => admin.end());
});

/** `n` ids from a column default, in the order they were made, with the clock read around them. */
async function made(n: number) {
  await client.query('begin');
  try {
    // the migrations' search_path, where the defaults they write resolve
    await client.query(`set local search_path = ${MIGRATION_SEARCH_PATH}`);
    await client.query('create temporary table made (n serial, id uuid not null default uuidv7()) on commit drop');
    const before = Date.now();
    await client.query('insert into made (n) select g from generate_series(1, $1) g', [n]);
    const after = Date.now();
    const { rows } = await client.query<{ id: string; at: Date }>(
      `select id::text, rowgate_private.uuidv7_time(id) as at from made order by n`,
    );
    return { rows, before, after };
  } finally {
    await client.query('rollback');
  }
}

describe('uuidv7()', () => {
  test(`is ${builtIn ? "PostgreSQL's own" : 'rowgate_compat.uuidv7'} in the column defaults`, async () => {
    const { rows } = await client.query<{ def: string; schema: string | null }>(
      `select pg_get_expr(d.adbin, d.adrelid) as def, to_regnamespace('rowgate_compat')::text as schema
       from pg_attrdef d join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
       where d.adrelid = 'rowgate.events'::regclass and a.attname = 'id'`,
    );
    expect(rows[0]).toEqual({ def: builtIn ? 'uuidv7()' : 'rowgate_compat.uuidv7()', schema: 'rowgate_compat' });
  });

  test('lays out 48 bits of Unix milliseconds, version 7 and the RFC 9562 variant', async () => {
    const { rows, before, after } = await made(2000);
    for (const { id, at } of rows) {
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(at.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(at.getTime()).toBeLessThanOrEqual(after + 1000);
    }
    // the bits after the variant are random: 2000 ids share no tail
    expect(new Set(rows.map(({ id }) => id.slice(19))).size).toBe(rows.length);
  });

  test('increases within a session, even many to a millisecond', async () => {
    const { rows } = await made(5000);
    const ids = rows.map(({ id }) => id);
    expect(new Set(ids.map((id) => id.slice(0, 13))).size, 'several ids to a millisecond').toBeLessThan(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('uuidv7(interval) shifts the time it holds', async () => {
    const qualified = builtIn ? 'uuidv7' : 'rowgate_compat.uuidv7';
    const before = Date.now();
    const { rows } = await client.query<{ id: string; at: Date }>(
      `select id::text, rowgate_private.uuidv7_time(id) as at from ${qualified}(interval '-35 days') id`,
    );
    const shifted = rows[0]!.at.getTime() + 35 * 86_400_000;
    expect(rows[0]!.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab]/);
    expect(shifted).toBeGreaterThanOrEqual(before - 1000);
    expect(shifted).toBeLessThanOrEqual(Date.now() + 1000);
  });

  // rowgate_compat.uuidv7 itself, on every major (on 18 no default names it)
  test('rowgate_compat.uuidv7 increases past a clock that went back', async () => {
    // an hour ahead of the clock, in 4096ths of a millisecond
    const ahead = BigInt(Date.now() + 3_600_000) * 4096n;
    await client.query(`select set_config('rowgate.uuidv7_last', $1, false)`, [ahead.toString()]);
    const { rows } = await client.query<{ id: string; at: Date }>(
      `select id::text, rowgate_private.uuidv7_time(id) as at from rowgate_compat.uuidv7() id`,
    );
    expect(rows[0]!.at.getTime()).toBe(Number(ahead / 4096n));
    expect(BigInt(`0x${rows[0]!.id.replaceAll('-', '').slice(0, 12)}${rows[0]!.id.slice(15, 18)}`)).toBe(ahead + 1n);
  });
});
