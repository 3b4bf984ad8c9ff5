#!/usr/bin/env node
// `npm run test:pg -- 16 [vitest arguments…]`: the whole suite on the
// `postgres:16-alpine` image, through testcontainers. Needs a Docker engine;
// without one it says so and exits 3 (then use TEST_DATABASE_URL, as
// scripts/test-pg-majors.sh does with the embedded package's 16 and 17).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../src/db/setup.ts';
import { isDockerReachable, requestedVersion, SUPPORTED_MAJOR_VERSIONS } from './database-server.ts';

const [version, ...vitestArgs] = process.argv.slice(2);
const supported = SUPPORTED_MAJOR_VERSIONS.join(', ');

if (!version || !/^\d+$/.test(version)) {
  console.error(`usage: npm run test:pg -- <major version: ${supported}> [vitest arguments…]`);
  process.exit(2);
}
try {
  requestedVersion({ TEST_PG_VERSION: version });
} catch (error) {
  console.error(`rowgate: ${(error as Error).message}`);
  process.exit(2);
}
if (!(await isDockerReachable())) {
  console.error(
    [
      `rowgate: npm run test:pg -- ${version} runs the suite on the postgres:${version}-alpine image through testcontainers,`,
      'and no Docker engine is reachable (DOCKER_HOST, /var/run/docker.sock, ~/.testcontainers.properties).',
      `Without Docker, run a PostgreSQL ${version} yourself and point the suite at it:`,
      `  TEST_DATABASE_URL=postgres://<superuser>:<password>@<host>:<port>/postgres TEST_PG_VERSION=${version} npx vitest run`,
      "scripts/test-pg-majors.sh does that with the embedded package's 16 and 17 (npm run test:pg-majors).",
    ].join('\n'),
  );
  process.exit(3);
}

// TEST_DATABASE_URL would win over the container: this command is about the image
const env: NodeJS.ProcessEnv = { ...process.env, TEST_PG_VERSION: version };
delete env.TEST_DATABASE_URL;
const vitest = path.join(projectRoot, 'node_modules', 'vitest', 'vitest.mjs');
const child = spawn(process.execPath, [vitest, 'run', ...vitestArgs], { cwd: projectRoot, env, stdio: 'inherit' });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
