// Which PostgreSQL the suite runs on, in this order:
//   1. TEST_DATABASE_URL (a superuser URL of a server someone else runs: CI's
//      older majors, scripts/test-pg-majors.sh, a DBA's staging cluster);
//   2. a testcontainers image `postgres:<major>-alpine` when TEST_PG_VERSION asks
//      for a major version and a Docker engine is reachable (`npm run test:pg -- 16`);
//   3. otherwise the embedded package's cluster, in a temporary directory: the
//      default, and what CI uses (no Docker engine there).
// TEST_PG_VERSION is the major version asked for, whatever the source: the suite
// checks that the server it got is that version (test/database-server.test.ts).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { embeddedUrl, openEmbeddedDatabase } from '../src/db/embedded.ts';

export type Source = 'env' | 'testcontainers' | 'embedded';

/** Major versions the migrations support: 18, and 16 and 17 with what db/database.sql adds for them (uuidv7). */
export const SUPPORTED_MAJOR_VERSIONS = [16, 17, 18] as const;

export interface DatabaseServer {
  /** superuser URL of the maintenance database; swap the path for others */
  superuserUrl: string;
  source: Source;
  stop(): Promise<void>;
}

/** The major version TEST_PG_VERSION asks for, if any; an unsupported one is an error. */
export function requestedVersion(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env.TEST_PG_VERSION?.trim();
  if (!raw) return undefined;
  const version = Number(raw);
  if (!(SUPPORTED_MAJOR_VERSIONS as readonly number[]).includes(version)) {
    throw new Error(`TEST_PG_VERSION=${raw}: supported major versions are ${SUPPORTED_MAJOR_VERSIONS.join(', ')}`);
  }
  return version;
}

export function chooseSource(env: NodeJS.ProcessEnv, dockerReachable: boolean): Source {
  if (env.TEST_DATABASE_URL) return 'env';
  if (requestedVersion(env) !== undefined && dockerReachable) return 'testcontainers';
  return 'embedded';
}

/** Can testcontainers reach a container runtime (DOCKER_HOST, the socket, ~/.testcontainers.properties)? */
export async function isDockerReachable(timeoutMs = 10_000): Promise<boolean> {
  const probe = (async () => {
    try {
      const { getContainerRuntimeClient } = await import('testcontainers');
      await getContainerRuntimeClient();
      return true;
    } catch {
      return false;
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([probe, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export async function startDatabaseServer(
  env: NodeJS.ProcessEnv = process.env,
  dockerReachable: () => Promise<boolean> = isDockerReachable,
): Promise<DatabaseServer> {
  const version = requestedVersion(env);
  const docker = !env.TEST_DATABASE_URL && version !== undefined ? await dockerReachable() : false;
  const source = chooseSource(env, docker);
  if (source === 'env') {
    return { superuserUrl: env.TEST_DATABASE_URL!, source, stop: async () => {} };
  }
  if (source === 'testcontainers') {
    const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
    const container = await new PostgreSqlContainer(`postgres:${version}-alpine`)
      .withUsername('postgres')
      .withPassword(randomBytes(18).toString('base64url'))
      .withDatabase('postgres')
      .start();
    return { superuserUrl: container.getConnectionUri(), source, stop: async () => void (await container.stop()) };
  }
  if (version !== undefined) {
    console.warn(
      `TEST_PG_VERSION=${version} asks for a testcontainers image, but no Docker engine is reachable: ` +
        'using the embedded PostgreSQL (set TEST_DATABASE_URL to test another server)',
    );
  }
  const home = await mkdtemp(path.join(tmpdir(), 'rowgate-test-'));
  const db = await openEmbeddedDatabase({ home, exclusive: false });
  return {
    superuserUrl: embeddedUrl(db.state, 'superuser', 'postgres'),
    source,
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
