// Commits a migration with graphile-migrate's own `commit`, through its public
// API: `node scripts/commit-migration.ts <file.sql | folder> "<message>"`. A folder
// holds numbered parts (001-why.sql, 002-…), which `commit` joins with its
// `--! split:` lines; a file is one migration (a `--! no-transaction` index build).
// `commit` numbers it after the last committed migration, chains its hash to that
// one's, and runs every committed migration and the new one on a shadow database
// before it keeps the file: here a throwaway embedded PostgreSQL gives it the
// shadow and root databases it needs, and a folder of its own whose `committed/`
// is the project's, so nothing but the new file lands in the project. `commit` runs
// in a child process: graphile-migrate's pools outlast the call, and the process
// that ends takes them along before the cluster stops. Committing
// migrations/current/ itself empties it. Work kept on a branch while main moves on
// is committed again on top of main's last migration with the same command. Then
// `npm run db:schema` rewrites data/schema.sql.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commit, Logger } from 'graphile-migrate';
import { DATABASE_NAME, embeddedUrl, openEmbeddedDatabase } from '../src/db/embedded.ts';
import { MIGRATION_SEARCH_PATH } from '../src/db/migrations-process.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, projectRoot } from '../src/db/setup.ts';

const [source, message] = process.argv.slice(2);
const CHILD = 'ROWGATE_COMMIT_URLS';

if (process.env[CHILD]) {
  // the child: graphile-migrate's commit, on the folder and databases its parent made
  const urls = JSON.parse(process.env[CHILD]) as { owner: string; shadow: string; root: string; migrationsFolder: string };
  try {
    await commit(
      {
        connectionString: urls.owner,
        shadowConnectionString: urls.shadow,
        rootConnectionString: urls.root,
        migrationsFolder: urls.migrationsFolder,
        pgSettings: { search_path: MIGRATION_SEARCH_PATH },
        // as .gmrc: a reset shadow database gets the roles and the per-database set-up first
        afterReset: ['!../db/roles.sql', '!../db/database.sql'],
        logger: new Logger(() => (level, text) => {
          if (level === 'error' || level === 'warning') console.error(text);
        }),
      },
      message,
    );
    process.exit(0);
  } catch (error) {
    console.error((error as Error)?.message ?? String(error));
    process.exit(1);
  }
}
if (!source || !message) {
  console.error('usage: node scripts/commit-migration.ts <file.sql | folder of numbered parts> "<message>"');
  process.exit(2);
}
const isFolder = statSync(source).isDirectory();
const SHADOW = 'rowgate_shadow';

const committedFolder = path.join(projectRoot, 'migrations', 'committed');
const before = new Set(readdirSync(committedFolder));
const work = mkdtempSync(path.join(tmpdir(), 'rowgate-commit-'));
const home = mkdtempSync(path.join(tmpdir(), 'rowgate-commit-db-'));
let db: Awaited<ReturnType<typeof openEmbeddedDatabase>> | undefined;
// an interrupted commit (Ctrl-C) waits for its child, then cleans up below like a failed one
const interrupted = () => {};
process.on('SIGINT', interrupted).on('SIGTERM', interrupted);
let committed = false;
try {
  // graphile-migrate's layout, as .gmrc describes it: migrations/{committed,current}, db/ beside it
  const migrationsFolder = path.join(work, 'migrations');
  mkdirSync(migrationsFolder);
  symlinkSync(committedFolder, path.join(migrationsFolder, 'committed'));
  symlinkSync(path.join(projectRoot, 'db'), path.join(work, 'db'));
  if (isFolder) cpSync(source, path.join(migrationsFolder, 'current'), { recursive: true });
  else cpSync(source, path.join(migrationsFolder, 'current.sql'));
  db = await openEmbeddedDatabase({ home, exclusive: false, log: () => {} });
  const root = embeddedUrl(db.state, 'superuser', 'postgres');
  await ensureRoles(root, { owner: db.state.ownerPassword, authenticator: db.state.authenticatorPassword });
  await ensureDatabase(root, DATABASE_NAME);
  await hardenDatabase(root, DATABASE_NAME);
  const urls = { owner: embeddedUrl(db.state, 'owner'), shadow: embeddedUrl(db.state, 'owner', SHADOW), root, migrationsFolder };
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', fileURLToPath(import.meta.url), source, message], {
    env: { ...process.env, [CHILD]: JSON.stringify(urls) },
    stdio: 'inherit',
  });
  committed = await new Promise<boolean>((resolve) => {
    child.on('error', () => resolve(false));
    child.on('exit', (code) => resolve(code === 0));
  });
} finally {
  // a commit that did not finish keeps no file of its own
  if (!committed)
    for (const file of readdirSync(committedFolder)) if (!before.has(file)) rmSync(path.join(committedFolder, file), { force: true });
  await db?.stop();
  rmSync(home, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
}
if (!committed) process.exit(1);
const added = readdirSync(committedFolder).filter((file) => !before.has(file));
console.log(added.map((file) => `migrations/committed/${file}`).join('\n'));
if (isFolder && path.resolve(source) === path.join(projectRoot, 'migrations', 'current')) {
  for (const part of readdirSync(source).filter((f) => f.endsWith('.sql'))) rmSync(path.join(source, part));
}
console.log('now: npm run db:schema (rewrites data/schema.sql)');
