// Lints the migrations a deployed database has not run yet, the way a DBA reads
// them: Squawk (settings in .squawk.toml) plus the project's own rules below.
// Migrations up to `baseline` are history, already run everywhere, and are not
// linted; every later file of migrations/committed/ is, and so are the parts in
// migrations/current/, joined as graphile-migrate joins them when it commits.
//
// `node scripts/lint-migrations.ts [file.sql | folder of parts]…` prints one line a
// finding and exits 1 when there is one; without arguments it lints the new
// migrations of this checkout. docs/operations.md, "What a migration may not do",
// says what each rule guards and how a waiver is written.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { joinParts, parseMigration, runsOutsideTransaction } from './migration-files.ts';

const root = path.resolve(import.meta.dirname, '..');

/** The last migration committed before the linter existed: the ones after it are linted. */
export const baseline = 56;

/** The longest `lock_timeout` a migration may set, in milliseconds. */
export const longestLockTimeout = 5_000;

export type Finding = { file: string; line: number; rule: string; message: string };

/** The committed migrations numbered after the baseline, and migrations/current/ when it holds parts. */
export function newMigrations(folder = path.join(root, 'migrations')): string[] {
  const committed = readdirSync(path.join(folder, 'committed'))
    .filter((name) => /^\d{6}-.*\.sql$/.test(name) && Number(name.slice(0, 6)) > baseline)
    .sort()
    .map((name) => path.join(folder, 'committed', name));
  const current = path.join(folder, 'current');
  const hasParts = existsSync(current) && readdirSync(current).some((name) => name.endsWith('.sql'));
  return hasParts ? [...committed, current] : committed;
}

/** Where a line of the text Squawk read is in the files the author wrote. */
type Source = { text: string; place: (line: number) => { file: string; line: number } };

async function readMigration(location: string): Promise<Source> {
  const relative = path.relative(root, location);
  if (!statSync(location).isDirectory()) {
    return { text: readFileSync(location, 'utf8'), place: (line) => ({ file: relative, line }) };
  }
  const text = joinParts(location);
  const starts = [...text.split('\n').entries()]
    .map(([index, line]) => ({ index, part: /^--! split: (.+)$/.exec(line)?.[1] }))
    .filter((start): start is { index: number; part: string } => start.part !== undefined);
  return {
    text,
    place: (line) => {
      const start = starts.findLast((candidate) => candidate.index < line);
      return start ? { file: path.join(relative, start.part), line: line - start.index - 1 } : { file: relative, line };
    },
  };
}

/** A waiver names its rules, then `--` and why: `-- squawk-ignore ban-drop-column -- the release before reads … no more`. */
const waiver = /--\s*squawk-ignore(?:-file)?\b(.*)$/;
const waiverWithReason = /^\s+[a-z-]+(?:\s*,\s*[a-z-]+)*\s+--\s+\S.{9,}$/;
const lockTimeout = /^\s*set\s+(local\s+)?lock_timeout\s*(?:=|to)\s*'?([^';]+)'?\s*;/i;

function milliseconds(value: string): number | null {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|min)?\s*$/.exec(value);
  if (!match) return null;
  return Number(match[1]) * { ms: 1, s: 1_000, min: 60_000 }[(match[2] ?? 'ms') as 'ms' | 's' | 'min'];
}

/** The project's rules Squawk does not have: waivers say why, a lock_timeout is short and transaction-local. */
function ownRules(text: string, inTransaction: boolean): { line: number; rule: string; message: string }[] {
  const findings: { line: number; rule: string; message: string }[] = [];
  for (const [line, content] of text.split('\n').entries()) {
    const waived = waiver.exec(content);
    if (waived && !waiverWithReason.test(waived[1]!)) {
      findings.push({
        line,
        rule: 'waiver-without-reason',
        message: 'a waiver names its rules, then `--` and why: `-- squawk-ignore <rule> -- <why it is safe here>`',
      });
    }
    const timeout = lockTimeout.exec(content);
    if (timeout) {
      const value = milliseconds(timeout[2]!);
      if (value === null || value === 0 || value > longestLockTimeout) {
        findings.push({
          line,
          rule: 'lock-timeout-too-long',
          message: `lock_timeout is at most ${longestLockTimeout / 1000}s (and not 0, which waits forever): a waiting lock stalls every query queued behind it`,
        });
      }
      if (inTransaction && !timeout[1]) {
        findings.push({
          line,
          rule: 'lock-timeout-not-local',
          message: '`set local lock_timeout`: a plain `set` outlives the migration and holds for the next ones run in the same session',
        });
      }
    }
  }
  return findings;
}

/** The rules .squawk.toml excludes (its `excluded_rules` list). */
function configuredExclusions(): string[] {
  const settings = readFileSync(path.join(root, '.squawk.toml'), 'utf8');
  const list = /^excluded_rules\s*=\s*\[([^\]]*)\]/m.exec(settings)?.[1] ?? '';
  return [...list.matchAll(/^\s*"([a-z-]+)"/gm)].map((match) => match[1]!);
}

type SquawkFinding = { line: number; rule_name: string; message: string };

function squawk(text: string, name: string, inTransaction: boolean): SquawkFinding[] {
  const args = ['--config', path.join(root, '.squawk.toml'), '--reporter', 'json', '--stdin-filepath', name];
  // A `--! no-transaction` migration is one statement (a concurrent index build):
  // it runs outside a transaction, where a `set local` has no effect, and the
  // lock it takes (SHARE UPDATE EXCLUSIVE) blocks neither reads nor writes.
  // `--exclude` replaces the settings' list, so it repeats it.
  if (!inTransaction) args.push('--no-assume-in-transaction', '--exclude', [...configuredExclusions(), 'require-lock-timeout'].join(','));
  const run = spawnSync(path.join(root, 'node_modules', '.bin', 'squawk'), args, { input: text, encoding: 'utf8' });
  if (run.error) throw run.error;
  if (run.status !== 0 && run.status !== 1) throw new Error(`squawk exited ${run.status}: ${run.stderr}`);
  return run.stdout.trim() ? (JSON.parse(run.stdout) as SquawkFinding[]) : [];
}

/** Every finding in one migration: a committed file or a folder of parts. Lines count from 1. */
export async function lintMigration(location: string): Promise<Finding[]> {
  let source: Source;
  try {
    source = await readMigration(location);
  } catch (error) {
    return [{ file: path.relative(root, location), line: 1, rule: 'unreadable', message: (error as Error).message }];
  }
  const { body } = parseMigration(source.text);
  const inTransaction = !runsOutsideTransaction(body);
  const found = [
    ...squawk(source.text, path.relative(root, location), inTransaction).map((f) => ({
      line: f.line,
      rule: f.rule_name,
      message: f.message,
    })),
    ...ownRules(source.text, inTransaction),
  ];
  return found
    .map(({ line, rule, message }) => {
      const at = source.place(line);
      return { file: at.file, line: at.line + 1, rule, message };
    })
    .sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.rule.localeCompare(b.rule));
}

if (import.meta.main) {
  const locations = process.argv.slice(2).length > 0 ? process.argv.slice(2).map((file) => path.resolve(file)) : newMigrations();
  let count = 0;
  for (const location of locations) {
    for (const finding of await lintMigration(location)) {
      console.log(`${finding.file}:${finding.line}: ${finding.rule}: ${finding.message}`);
      count += 1;
    }
  }
  console.log(`${locations.length} migration(s) after ${String(baseline).padStart(6, '0')} linted, ${count} finding(s)`);
  process.exitCode = count > 0 ? 1 : 0;
}
