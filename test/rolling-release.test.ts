// What `npm run test:rolling` (scripts/test-rolling.ts) runs as the previous
// release: the commit before the newest committed migration landed, which does not
// have that migration, and whose node_modules are this checkout's only when this
// lock installs every package the old one locks, as the old one locks it.
import { execFileSync } from 'node:child_process';
import { describe, expect, test } from 'vitest';
import { installsAllOf, previousRelease } from '../scripts/test-rolling.ts';
import { projectRoot } from '../src/db/setup.ts';

const git = (...args: string[]) => execFileSync('git', args, { cwd: projectRoot, encoding: 'utf8' }).trim();
const has = (commit: string, file: string) => git('ls-tree', '--name-only', commit, file) !== '';

describe('the previous release', () => {
  test('landed the migration before the newest ones, and is an ancestor of HEAD without them', () => {
    const { commit, migration } = previousRelease();
    const file = `migrations/committed/${migration}`;
    const migrations = (tree: string) => git('ls-tree', '--name-only', tree, 'migrations/committed/').split('\n').sort();
    expect(migrations('HEAD').at(-1)).toBe(file);
    expect(has(commit, file)).toBe(false);
    git('merge-base', '--is-ancestor', commit, 'HEAD');
    // its newest migration is one it added itself, and every migration after it came later
    const own = migrations(commit)
      .filter((f) => f.endsWith('.sql'))
      .at(-1)!;
    expect(git('log', '-1', '--diff-filter=A', '--format=%H', 'HEAD', '--', own)).toBe(commit);
    const newer = migrations('HEAD').filter((f) => f > own && f.endsWith('.sql'));
    expect(newer.length).toBeGreaterThan(0);
    for (const f of newer) expect(has(commit, f)).toBe(false);
  });

  test("reuses this checkout's node_modules only when this lock installs all the old one's server needs", () => {
    const lock = (packages: Record<string, { version: string; integrity: string }>) => ({
      packages: { '': { version: '1' }, ...packages },
    });
    const pg8 = { version: '8.1.0', integrity: 'sha512-a' };
    const old = lock({ 'node_modules/pg': pg8 });
    expect(
      installsAllOf(old, lock({ 'node_modules/pg': pg8, 'node_modules/squawk-cli': { version: '2.66.0', integrity: 'sha512-b' } })),
    ).toBe(true);
    expect(installsAllOf(old, lock({ 'node_modules/pg': { version: '8.2.0', integrity: 'sha512-c' } }))).toBe(false);
    expect(installsAllOf(old, lock({ 'node_modules/pg': { ...pg8, integrity: 'sha512-other' } }))).toBe(false);
    expect(installsAllOf(old, lock({}))).toBe(false);
    // a development tool locked otherwise (or not at all) is no reason to install: the old server never runs it
    const oldWithTool = {
      packages: { ...old.packages, 'node_modules/squawk-cli': { version: '2.66.0', integrity: 'sha512-d', dev: true } },
    };
    expect(installsAllOf(oldWithTool, lock({ 'node_modules/pg': pg8 }))).toBe(true);
    expect(
      installsAllOf(
        { packages: { ...oldWithTool.packages, 'node_modules/squawk-cli': { version: '2.66.0', integrity: 'sha512-d' } } },
        lock({ 'node_modules/pg': pg8 }),
      ),
    ).toBe(false);
  });
});
