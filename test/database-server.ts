// Which PostgreSQL the suite runs on: TEST_DATABASE_URL (a superuser URL) when
// set, otherwise an embedded cluster in a temporary directory.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { embeddedUrl, openEmbeddedDatabase } from '../src/embedded-database.ts';

export interface DatabaseServer {
  /** superuser URL of the maintenance database; swap the path for others */
  superuserUrl: string;
  source: 'env' | 'embedded';
  stop(): Promise<void>;
}

export function chooseSource(env: NodeJS.ProcessEnv): 'env' | 'embedded' {
  return env.TEST_DATABASE_URL ? 'env' : 'embedded';
}

export async function startDatabaseServer(env: NodeJS.ProcessEnv = process.env): Promise<DatabaseServer> {
  if (chooseSource(env) === 'env') {
    return { superuserUrl: env.TEST_DATABASE_URL!, source: 'env', stop: async () => {} };
  }
  const home = await mkdtemp(path.join(tmpdir(), 'rowgate-test-'));
  const db = await openEmbeddedDatabase({ home, exclusive: false });
  return {
    superuserUrl: embeddedUrl(db.state, 'superuser', 'postgres'),
    source: 'embedded',
    stop: async () => {
      await db.stop();
      await rm(home, { recursive: true, force: true });
    },
  };
}

export function withDatabase(url: string, database: string, user?: { name: string; password: string }) {
  const u = new URL(url);
  u.pathname = `/${database}`;
  if (user) {
    u.username = user.name;
    u.password = encodeURIComponent(user.password);
  }
  return u.toString();
}
