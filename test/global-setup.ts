// Once per run: a PostgreSQL server (test/database-server.ts chooses which), the
// roles, and a template database with every committed migration applied. Each
// test file clones the template.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase } from '../src/db/setup.ts';
import { UnreachableFolderError } from '../src/db/postgres-folder-access.ts';
import { startDatabaseServer, withDatabase } from './database-server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    superuserUrl: string;
    ownerPassword: string;
    authenticatorPassword: string;
    template: string;
    /** where the server came from, and its server_version_num */
    databaseSource: string;
    serverVersionNum: number;
    /**
     * Prefix of the cluster-wide objects a test file creates beyond its own
     * database (analysts' LOGIN roles): unique per run, dropped at teardown.
     */
    runId: string;
  }
}

export default async function setup(project: TestProject) {
  const server = await startDatabaseServer().catch((error: unknown) => {
    // run as root in a folder the postgres OS user cannot reach: the one sentence, not a stack trace
    if (error instanceof UnreachableFolderError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  });
  const runId = `rgt${randomBytes(4).toString('hex')}`;
  const template = `rowgate_template_${process.pid}_${runId}`;
  let created = false;
  const cleanUp = async () => {
    // the cluster outlives the run only when it is not ours (TEST_DATABASE_URL):
    // leave nothing behind in it; roles are cluster-wide, so drop this run's ones
    if (server.source === 'env') {
      const client = new pg.Client({ connectionString: server.superuserUrl });
      await client.connect();
      try {
        if (created) await client.query(`drop database if exists ${pg.escapeIdentifier(template)} with (force)`);
        const { rows } = await client.query<{ rolname: string }>(`select rolname from pg_roles where starts_with(rolname, $1) order by 1`, [
          `${runId}_`,
        ]);
        for (const { rolname } of rows) await client.query(`drop role if exists ${pg.escapeIdentifier(rolname)}`);
      } finally {
        await client.end();
      }
    }
    await server.stop();
  };
  try {
    const ownerPassword = randomBytes(18).toString('base64url');
    const authenticatorPassword = randomBytes(18).toString('base64url');
    const admin = new pg.Client({ connectionString: server.superuserUrl });
    await admin.connect();
    const { rows } = await admin.query<{ n: number }>(`select current_setting('server_version_num')::int as n`).finally(() => admin.end());
    const serverVersionNum = rows[0]!.n;
    console.error(
      `rowgate tests: PostgreSQL ${Math.floor(serverVersionNum / 10_000)} (${server.source}, server_version_num ${serverVersionNum})`,
    );
    await ensureRoles(server.superuserUrl, { owner: ownerPassword, authenticator: authenticatorPassword });
    created = true;
    await ensureDatabase(server.superuserUrl, template);
    await hardenDatabase(server.superuserUrl, template);
    await migrateDatabase(withDatabase(server.superuserUrl, template, { name: 'rowgate_owner', password: ownerPassword }));
    project.provide('superuserUrl', server.superuserUrl);
    project.provide('ownerPassword', ownerPassword);
    project.provide('authenticatorPassword', authenticatorPassword);
    project.provide('template', template);
    project.provide('databaseSource', server.source);
    project.provide('serverVersionNum', serverVersionNum);
    project.provide('runId', runId);
  } catch (error) {
    await cleanUp().catch(() => {});
    throw error;
  }
  return cleanUp;
}
