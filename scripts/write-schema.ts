// Writes data/schema.sql: the schema the committed migrations make, as SQL to
// read (scripts/schema-dump.ts). `npm run db:schema` applies the roles and every
// committed migration to a throwaway embedded PostgreSQL, the way start-up
// does, and dumps it; test/schema-dump.test.ts fails when the file is stale.
// As graphile-migrate's afterAllMigrations hook (.gmrc), it dumps the database
// graphile-migrate just migrated (GM_DBURL) instead.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { DATABASE_NAME, embeddedUrl, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { dumpSchema } from './schema-dump.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase, projectRoot } from '../src/db/setup.ts';

export const SCHEMA_FILE = path.join(projectRoot, 'data', 'schema.sql');

async function dump(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await dumpSchema(client);
  } finally {
    await client.end();
  }
}

/** The committed migrations on a cluster of their own, dumped; the cluster is removed after. */
async function dumpCommittedMigrations(): Promise<string> {
  const home = await mkdtemp(path.join(tmpdir(), 'rowgate-schema-'));
  const db = await openEmbeddedDatabase({ home, exclusive: false, log: () => {} });
  try {
    const superuser = embeddedUrl(db.state, 'superuser', 'postgres');
    await ensureRoles(superuser, { owner: db.state.ownerPassword, authenticator: db.state.authenticatorPassword });
    await ensureDatabase(superuser, DATABASE_NAME);
    await hardenDatabase(superuser, DATABASE_NAME);
    await migrateDatabase(embeddedUrl(db.state, 'owner'));
    return await dump(embeddedUrl(db.state, 'superuser', DATABASE_NAME));
  } finally {
    await db.stop();
    await rm(home, { recursive: true, force: true });
  }
}

const text = process.env.GM_DBURL ? await dump(process.env.GM_DBURL) : await dumpCommittedMigrations();
await writeFile(SCHEMA_FILE, text);
console.log(`${path.relative(process.cwd(), SCHEMA_FILE)}: ${text.split('\n').length - 1} lines`);
