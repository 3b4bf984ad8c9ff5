// graphile-migrate's file forms, as its README describes them, read by the
// migration lint (scripts/lint-migrations.ts) without its private modules: a
// committed migration is `--! Key: value` header lines, a blank line and the
// body; a folder of numbered parts is joined in number order, each part after a
// `--! split: <file>` line; a migration that runs outside a transaction opens its
// body with `--! no-transaction`. Committing is graphile-migrate's own `commit`
// (scripts/commit-migration.ts).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** A migration's header lines (`--! Key: value` at its top) and the body after them */
export function parseMigration(text: string): { headers: Record<string, string>; body: string } {
  const lines = text.split('\n');
  const headers: Record<string, string> = {};
  let count = 0;
  for (const line of lines) {
    const match = /^--! ([A-Z][a-zA-Z0-9_]*)(?::(.*))?$/.exec(line);
    if (!match) break;
    headers[match[1]!] = (match[2] ?? '').trim();
    count++;
  }
  return { headers, body: lines.slice(count).join('\n').replace(/^\n/, '') };
}

/** The numbered parts of a folder in order, each after a `--! split: <file>` line */
export function joinParts(folder: string): string {
  const parts = readdirSync(folder)
    .filter((name) => !name.startsWith('.') && name.endsWith('.sql'))
    .map((name) => ({ name, id: Number(/^(\d+)(-[-_a-zA-Z0-9]*)?\.sql$/.exec(name)?.[1] ?? Number.NaN) }));
  for (const part of parts) if (Number.isNaN(part.id)) throw new Error(`${folder}/${part.name}: a part's name is <number>-<words>.sql`);
  if (new Set(parts.map((p) => p.id)).size !== parts.length) throw new Error(`${folder}: two parts share a number`);
  return parts
    .sort((a, b) => a.id - b.id)
    .map((part) => {
      const text = readFileSync(path.join(folder, part.name), 'utf8');
      const { headers, body } = parseMigration(text);
      if (Object.keys(headers).length) throw new Error(`${folder}/${part.name}: a part carries no --! headers`);
      if (runsOutsideTransaction(body))
        throw new Error(`${folder}/${part.name}: --! no-transaction is for a committed file of one statement`);
      return `--! split: ${part.name}\n${text.trim()}\n`;
    })
    .join('\n');
}

/** Whether a migration's body opens with `--! no-transaction` */
export const runsOutsideTransaction = (body: string) => /^--!\s*no-transaction\b/.test(body.split('\n', 1)[0] ?? '');
