// `node src/cli/main.ts …` as a child process against a test app's database, with
// none of the caller's database settings (never the repository's own .rowgate).
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { projectRoot } from '../src/db/setup.ts';
import type { TestApp } from './harness.ts';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `env` adds or (with undefined) removes variables after the test app's URLs and secret. */
export function runCli(app: TestApp, args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const childEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(DATABASE_URL|AUTH_DATABASE_URL|ROOT_DATABASE_URL|SHADOW_DATABASE_URL|ROWGATE_.*)$/.test(key)) {
      childEnv[key] = value;
    }
  }
  Object.assign(childEnv, {
    DATABASE_URL: app.ownerUrl,
    AUTH_DATABASE_URL: app.authenticatorUrl,
    ROWGATE_SECRET: app.secret,
    ROWGATE_HOME: path.join(tmpdir(), `rowgate-cli-test-${process.pid}`),
  });
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) delete childEnv[key];
    else childEnv[key] = value;
  }
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(projectRoot, 'src', 'cli', 'main.ts'), ...args],
      { cwd: projectRoot, env: childEnv, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}
