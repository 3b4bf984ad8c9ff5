// graphile-migrate's `migrate` and `status`, each run in a process of its own
// through the library's public API. Its connection pools live in the module
// and outlast the call; a process that exits takes them along, so no database
// keeps a session of it afterwards (a template being cloned, a database being
// dropped) and an error on one of its idle connections ends only that process.
//
//   node src/db/migrations-process.ts <migrate | status> (URL and folder in the environment)
//
// The parent side is runMigrations(): the child prints its answer as one JSON
// line on stdout, graphile-migrate's warnings and errors on stderr.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Logger, migrate, status } from 'graphile-migrate';

export type MigrationsCommand = 'migrate' | 'status';

/**
 * The search_path migrations run with: pg_catalog first, so PostgreSQL's own
 * functions win, then rowgate_compat, where db/database.sql puts what 16 and 17
 * lack (uuidv7). .gmrc says the same for the graphile-migrate command line.
 */
export const MIGRATION_SEARCH_PATH = 'pg_catalog, rowgate_compat';

const SELF = fileURLToPath(import.meta.url);

/** Runs `command` against the database at `ownerUrl`, migrations read from `migrationsFolder`; rejects with graphile-migrate's message */
export function runMigrations(command: MigrationsCommand, ownerUrl: string, migrationsFolder: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', SELF, command], {
      env: { ...process.env, ROWGATE_MIGRATIONS_URL: ownerUrl, ROWGATE_MIGRATIONS_FOLDER: migrationsFolder },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const warnings = stderr.trim();
      if (code === 0) {
        if (warnings) console.error(warnings);
        const answer = stdout.trim().split('\n').at(-1);
        resolve(answer ? JSON.parse(answer) : undefined);
      } else {
        reject(new Error(warnings.split('\n').at(-1) || `graphile-migrate ${command} exited with ${code}`));
      }
    });
  });
}

async function main(command: string | undefined) {
  const connectionString = process.env.ROWGATE_MIGRATIONS_URL;
  const migrationsFolder = process.env.ROWGATE_MIGRATIONS_FOLDER;
  if ((command !== 'migrate' && command !== 'status') || !connectionString || !migrationsFolder) {
    console.error('usage: ROWGATE_MIGRATIONS_URL=… ROWGATE_MIGRATIONS_FOLDER=… node src/db/migrations-process.ts <migrate | status>');
    process.exit(2);
  }
  const settings = {
    connectionString,
    migrationsFolder,
    pgSettings: { search_path: MIGRATION_SEARCH_PATH },
    // only warnings and errors: the server's start-up is not the place for a migration log
    logger: new Logger(() => (level, message) => {
      if (level === 'error' || level === 'warning') console.error(`graphile-migrate: ${message}`);
    }),
  };
  try {
    const answer = command === 'migrate' ? await migrate(settings) : await status(settings);
    process.stdout.write(`${JSON.stringify(answer ?? null)}\n`);
    process.exit(0);
  } catch (error) {
    console.error((error as Error)?.message ?? String(error));
    process.exit(1);
  }
}

if (process.argv[1] === SELF) await main(process.argv[2]);
