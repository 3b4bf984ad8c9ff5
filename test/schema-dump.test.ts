// data/schema.sql shows the schema the committed migrations make: it is the dump
// (scripts/schema-dump.ts) of a database cloned from the suite's template, which
// global-setup migrated the way a deploy does. A migration that lands without
// `npm run db:schema` fails here.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { dumpSchema } from '../scripts/schema-dump.ts';
import { ensureDatabase, projectRoot } from '../src/db/setup.ts';
import { withDatabase } from './database-server.ts';

const FILE = path.join(projectRoot, 'data', 'schema.sql');
const STALE = 'data/schema.sql is not the schema the committed migrations make: run `npm run db:schema` and commit the file';

const database = `rowgate_schema_${randomBytes(6).toString('hex')}`;
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

/** The dump but its first line, which names the major version it was written on. */
const body = (dump: string) => dump.slice(dump.indexOf('\n') + 1);
/** The object headings (`-- Table rowgate.users`, …). */
const headings = (dump: string) =>
  dump.split('\n').filter((line) => /^-- (Schema|Type|Table|Sequence|View|Materialized view|Function|Procedure) /.test(line));

describe('data/schema.sql', () => {
  test('is the schema the committed migrations make', async () => {
    const file = existsSync(FILE) ? await readFile(FILE, 'utf8') : '';
    const dump = await dumpSchema(client);
    expect(headings(dump).length, 'the dump lists the schema').toBeGreaterThan(100);
    // the same text on every supported major (16 and 17 in CI: scripts/test-pg-majors.sh),
    // though 18 wrote the file
    expect(body(dump), STALE).toBe(body(file));
  });

  test('is written the same way twice', async () => {
    expect(await dumpSchema(client)).toBe(await dumpSchema(client));
  });

  test('shows a change to a column grant, a volatility, a policy, a function body, a comment, a trigger or an index', async () => {
    const before = await dumpSchema(client);
    for (const change of [
      'grant select (email) on rowgate.users to rowgate_customer',
      'alter function rowgate_hidden.has_scope(text) volatile',
      "alter policy select_member on rowgate.products using (organization_id = any ((select rowgate_hidden.current_organization_ids('products:write'))::uuid[]))",
      `create or replace function rowgate_hidden.has_scope(p_scope text) returns boolean language sql stable as $$ select true $$`,
      `comment on table rowgate.products is 'changed'`,
      'alter table rowgate.products disable trigger _100_timestamps',
      'create index products_changed on rowgate.products (name)',
      'alter table rowgate.products force row level security',
    ]) {
      await client.query('begin');
      try {
        await client.query(change);
        expect(await dumpSchema(client), change).not.toBe(before);
      } finally {
        await client.query('rollback');
      }
    }
    expect(await dumpSchema(client), 'rolled back').toBe(before);
  });
});
