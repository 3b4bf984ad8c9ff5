// The migration linter (scripts/lint-migrations.ts, docs/operations.md "What a
// migration may not do"): the new migrations of this checkout pass; each fixture
// of test/migration-lint-fixtures/bad/ is found by the rule it is named after,
// and every fixture of good/ passes. A folder is a migration of parts.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { baseline, lintMigration, newMigrations } from '../scripts/lint-migrations.ts';
import { projectRoot } from '../src/db/setup.ts';

const fixtures = path.join(projectRoot, 'test', 'migration-lint-fixtures');
/** The fixtures of one kind, relative to the project (as findings name them). */
const listed = (kind: 'bad' | 'good') =>
  readdirSync(path.join(fixtures, kind)).map((name) => path.relative(projectRoot, path.join(fixtures, kind, name)));

describe('migration lint', () => {
  test("this checkout's new migrations have no finding", async () => {
    const output = execFileSync(process.execPath, [path.join(projectRoot, 'scripts', 'lint-migrations.ts')], {
      cwd: projectRoot,
      encoding: 'utf8',
    });
    expect(output).toMatch(/, 0 finding\(s\)\n$/);
  });

  test.each(listed('bad').filter((file) => file.endsWith('.sql')))('bad: %s is found by its rule', async (file) => {
    const findings = await lintMigration(path.join(projectRoot, file));
    expect(findings.map((finding) => finding.rule)).toEqual([path.basename(file, '.sql')]);
    expect(findings[0]!.file).toBe(file);
  });

  test('bad: a finding in a part names the part and its line', async () => {
    const findings = await lintMigration(path.join(fixtures, 'bad', 'parts'));
    expect(findings).toEqual([
      {
        file: 'test/migration-lint-fixtures/bad/parts/002-an-index.sql',
        line: 3,
        rule: 'require-concurrent-index-creation',
        message: expect.any(String),
      },
    ]);
  });

  test.each(listed('good'))('good: %s passes', async (file) => {
    expect(await lintMigration(path.join(projectRoot, file))).toEqual([]);
  });

  test('the committed migrations after the baseline and the parts in current/ are linted, no earlier one', () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'rowgate-migrations-'));
    try {
      mkdirSync(path.join(folder, 'committed'));
      mkdirSync(path.join(folder, 'current'));
      const name = (n: number) => `${String(n).padStart(6, '0')}-m.sql`;
      for (const n of [baseline - 1, baseline, baseline + 1, baseline + 2]) writeFileSync(path.join(folder, 'committed', name(n)), '');
      expect(newMigrations(folder)).toEqual([baseline + 1, baseline + 2].map((n) => path.join(folder, 'committed', name(n))));
      writeFileSync(path.join(folder, 'current', '001-a.sql'), '-- a part\n');
      expect(newMigrations(folder).at(-1)).toBe(path.join(folder, 'current'));
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
