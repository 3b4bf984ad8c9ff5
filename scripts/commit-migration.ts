// Commits a migration the way `graphile-migrate commit` does (the next number,
// the message as its name, the hash chained to the last committed migration),
// without the shadow database `commit` needs: `node scripts/commit-migration.ts
// <file.sql | folder> "<message>"`. A folder holds numbered parts (001-why.sql,
// 002-…), joined with graphile-migrate's `--! split:` lines as `commit` joins
// migrations/current/; committing migrations/current/ itself empties it. Work
// kept on a branch while main moves on is committed again on top of main's last
// migration with the same command. Then `npm run db:schema` rewrites data/schema.sql.
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/db/setup.ts';
import { hashOf, joinParts, parseMigration, slugOf } from './migration-files.ts';

const [file, message] = process.argv.slice(2);
if (!file || !message) {
  console.error('usage: node scripts/commit-migration.ts <file.sql | folder of numbered parts> "<message>"');
  process.exit(2);
}
const folder = path.join(projectRoot, 'migrations', 'committed');
const committed = readdirSync(folder)
  .filter((name) => /^\d{6}.*\.sql$/.test(name))
  .sort();
const last = committed.at(-1);
const previous = last ? (parseMigration(readFileSync(path.join(folder, last), 'utf8')).headers.Hash ?? null) : null;
const isFolder = statSync(file).isDirectory();
const body = isFolder ? joinParts(file) : readFileSync(file, 'utf8');
if (!body.trim()) {
  console.error(`${file}: nothing to commit`);
  process.exit(2);
}
const number = last ? Number(last.slice(0, 6)) + 1 : 1;
const name = `${String(number).padStart(6, '0')}-${slugOf(message)}.sql`;
const headers = `--! Previous: ${previous ?? '-'}\n--! Hash: ${hashOf(body, previous)}\n--! Message: ${message}\n`;
writeFileSync(path.join(folder, name), `${headers}\n${body.trim()}\n`);
console.log(`migrations/committed/${name}`);
if (isFolder && path.resolve(file) === path.join(projectRoot, 'migrations', 'current')) {
  for (const part of readdirSync(file).filter((f) => f.endsWith('.sql'))) rmSync(path.join(file, part));
}
console.log('now: npm run db:schema (rewrites data/schema.sql)');
