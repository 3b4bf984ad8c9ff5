// Commits a migration the way `graphile-migrate commit` does (the next number,
// the message as its name, the hash chained to the last committed migration),
// without the shadow database `commit` needs: `node scripts/commit-migration.ts
// <file.sql | folder> "<message>"`. A folder holds numbered parts (001-why.sql,
// 002-…), joined with graphile-migrate's `--! split:` lines as `commit` joins
// migrations/current/; committing migrations/current/ itself empties it. Work
// kept on a branch while main moves on is committed again on top of main's last
// migration with the same command. Then `npm run db:schema` rewrites data/schema.sql.
//
// The file is written in graphile-migrate's committed form: `--! Previous`,
// `--! Hash` and `--! Message` headers, a blank line, the body. graphile-migrate
// checks the hash of every committed migration before it runs one, so a file
// this script got wrong is refused by `migrate` (and by `npm test`), never run.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../src/db/setup.ts';

/** The headers of a migration file: its first lines of the form `--! Key: value` */
function headersOf(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^--! ([A-Z][a-zA-Z0-9_]*)(?::(.*))?$/.exec(line);
    if (!match) break;
    headers[match[1]!] = (match[2] ?? '').trim();
  }
  return headers;
}

/** The numbered parts of a folder in order, each after a `--! split: <file>` line, as `graphile-migrate commit` joins current/ */
function joinParts(folder: string): string {
  const parts = readdirSync(folder)
    .filter((name) => !name.startsWith('.') && name.endsWith('.sql'))
    .map((name) => ({ name, id: Number(/^(\d+)(-[-_a-zA-Z0-9]*)?\.sql$/.exec(name)?.[1] ?? Number.NaN) }));
  for (const part of parts) if (Number.isNaN(part.id)) throw new Error(`${folder}/${part.name}: a part's name is <number>-<words>.sql`);
  const ids = new Set(parts.map((p) => p.id));
  if (ids.size !== parts.length) throw new Error(`${folder}: two parts share a number`);
  return parts
    .sort((a, b) => a.id - b.id)
    .map((part) => {
      const text = readFileSync(path.join(folder, part.name), 'utf8');
      if (Object.keys(headersOf(text)).length) throw new Error(`${folder}/${part.name}: a part carries no --! headers`);
      return `--! split: ${part.name}\n${text.trim()}\n`;
    })
    .join('\n');
}

/** graphile-migrate's chained hash: SHA-1 of the previous migration's hash, a newline and the body */
const hashOf = (body: string, previous: string | null) =>
  `sha1:${createHash('sha1')
    .update(`${`${previous ?? ''}\n${body.trim()}`.trim()}\n`)
    .digest('hex')}`;

/** The message as a file name: lower case, runs of other characters as one hyphen, at most 60 characters */
const slugOf = (message: string) =>
  message
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '-')
    .replace(/--+/g, '-')
    .replace(/(^-+|-+$)/g, '')
    .substring(0, 60);

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
const previous = last ? (headersOf(readFileSync(path.join(folder, last), 'utf8')).Hash ?? null) : null;
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
