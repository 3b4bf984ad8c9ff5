// Once per run: a PostgreSQL server, the roles, and a template database with
// every committed migration applied. Each test file clones the template.
import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { ensureDatabase, ensureRoles, migrateDatabase } from '../src/database-setup.ts';
import { startDatabaseServer, withDatabase } from './database-server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    superuserUrl: string;
    ownerPassword: string;
    authenticatorPassword: string;
    template: string;
  }
}

export default async function setup(project: TestProject) {
  const server = await startDatabaseServer();
  const ownerPassword = randomBytes(18).toString('base64url');
  const authenticatorPassword = randomBytes(18).toString('base64url');
  const template = `rowgate_template_${process.pid}`;
  await ensureRoles(server.superuserUrl, { owner: ownerPassword, authenticator: authenticatorPassword });
  await ensureDatabase(server.superuserUrl, template);
  await migrateDatabase(withDatabase(server.superuserUrl, template, { name: 'rowgate_owner', password: ownerPassword }));
  project.provide('superuserUrl', server.superuserUrl);
  project.provide('ownerPassword', ownerPassword);
  project.provide('authenticatorPassword', authenticatorPassword);
  project.provide('template', template);
  return async () => {
    if (server.source === 'env') {
      const pg = await import('pg');
      const client = new pg.default.Client({ connectionString: server.superuserUrl });
      await client.connect();
      await client.query(`drop database if exists ${template} with (force)`);
      await client.end();
    }
    await server.stop();
  };
}
