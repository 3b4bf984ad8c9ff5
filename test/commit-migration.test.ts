// scripts/commit-migration.ts, run in a copy of the project: graphile-migrate's own
// commit numbers the migration, chains it to the last committed one and runs it on a
// shadow database before the file is kept; a migration that fails leaves nothing.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { projectRoot } from '../src/db/setup.ts';

let copy: string;
const committed = () => path.join(copy, 'migrations', 'committed');
const current = () => path.join(copy, 'migrations', 'current');
const files = () => readdirSync(committed()).sort();
const headers = (name: string) =>
  Object.fromEntries(
    [...readFileSync(path.join(committed(), name), 'utf8').matchAll(/^--! (Previous|Hash|Message): (.*)$/gm)].map((m) => [m[1], m[2]]),
  );
const commitMigration = (source: string, message: string) =>
  spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', 'scripts/commit-migration.ts', source, message], {
    cwd: copy,
    encoding: 'utf8',
  });

beforeAll(() => {
  copy = mkdtempSync(path.join(tmpdir(), 'rowgate-commit-test-'));
  for (const item of ['src', 'scripts', 'db', 'package.json', '.gmrc'])
    cpSync(path.join(projectRoot, item), path.join(copy, item), { recursive: true });
  cpSync(path.join(projectRoot, 'migrations', 'committed'), committed(), { recursive: true });
  mkdirSync(current());
  symlinkSync(path.join(projectRoot, 'node_modules'), path.join(copy, 'node_modules'));
});
afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe('committing a migration', () => {
  test('the parts of migrations/current become the next migration, chained to the last, and current is emptied', () => {
    const before = files();
    writeFileSync(
      path.join(current(), '001-probes.sql'),
      '-- Probes exist to test the commit.\ncreate table rowgate.commit_probes (id int primary key);\n',
    );
    writeFileSync(
      path.join(current(), '002-comment.sql'),
      "-- And say what they are.\ncomment on table rowgate.commit_probes is 'probe';\n",
    );
    const run = commitMigration('migrations/current', 'Probes for the commit test');
    expect(run.status, run.stderr).toBe(0);
    const added = files().filter((f) => !before.includes(f));
    const number = String(Number(before.at(-1)!.slice(0, 6)) + 1).padStart(6, '0');
    expect(added).toEqual([`${number}-probes-for-the-commit-test.sql`]);
    expect(headers(added[0]!).Previous).toBe(headers(before.at(-1)!).Hash);
    expect(headers(added[0]!).Message).toBe('Probes for the commit test');
    const body = readFileSync(path.join(committed(), added[0]!), 'utf8');
    expect(body).toContain('--! split: 001-probes.sql\n-- Probes exist');
    expect(body.indexOf('002-comment.sql')).toBeGreaterThan(body.indexOf('001-probes.sql'));
    expect(readdirSync(current())).toEqual([]);
  });

  test('a file of its own (a concurrent index build) follows, chained to it', () => {
    const before = files();
    const file = path.join(copy, 'index.sql');
    writeFileSync(
      file,
      '--! no-transaction\n-- Probes are found by id.\ncreate index concurrently if not exists commit_probes_id on rowgate.commit_probes (id);\n',
    );
    const run = commitMigration(file, 'Probes indexed concurrently');
    expect(run.status, run.stderr).toBe(0);
    const added = files().filter((f) => !before.includes(f));
    expect(added).toHaveLength(1);
    expect(headers(added[0]!).Previous).toBe(headers(before.at(-1)!).Hash);
    expect(readFileSync(path.join(committed(), added[0]!), 'utf8')).toMatch(/\n\n--! no-transaction\n/);
  });

  test('a migration that fails on the shadow database is not committed, and current keeps it', () => {
    const before = files();
    writeFileSync(
      path.join(current(), '001-broken.sql'),
      '-- A table in a schema that does not exist.\ncreate table nowhere.probes (id int);\n',
    );
    const run = commitMigration('migrations/current', 'A broken migration');
    expect(run.status).not.toBe(0);
    expect(run.stderr).toMatch(/nowhere/);
    expect(files()).toEqual(before);
    expect(readdirSync(current())).toEqual(['001-broken.sql']);
  });
});
