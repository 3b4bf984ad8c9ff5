// `rowgate db lint` (SPEC §20): passes on the schema the committed migrations make,
// and fails on each fixture of test/lint-fixtures/ (one file a rule; the part after
// `-- waived:` waives what the part before it shows).
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { type LintRule, lintRules, lintSchema, parseNodeTree, perRowCalls } from '../src/db/lint.ts';
import { ensureDatabase, projectRoot } from '../src/db/setup.ts';
import { runCli } from './cli-runner.ts';
import { withDatabase } from './database-server.ts';
import type { TestApp } from './harness.ts';

const database = `rowgate_lint_${randomBytes(6).toString('hex')}`;
let client: pg.Client;

beforeAll(async () => {
  await ensureDatabase(inject('superuserUrl'), database, inject('template'));
  client = new pg.Client({ connectionString: withDatabase(inject('superuserUrl'), database) });
  await client.connect();
});
afterAll(async () => {
  await client?.end();
  const admin = new pg.Client({ connectionString: inject('superuserUrl') });
  await admin.connect();
  await admin.query(`drop database if exists ${pg.escapeIdentifier(database)} with (force)`).finally(() => admin.end());
});

const fixture = (rule: LintRule) => {
  const text = readFileSync(path.join(projectRoot, 'test', 'lint-fixtures', `${rule}.sql`), 'utf8');
  const [made, waiver] = text.split('-- waived:');
  return { made: made!, waiver: waiver! };
};

/** Runs `sql` in a transaction that is rolled back, linting schema lint_fixture in it. */
async function lintWith(...sql: string[]) {
  await client.query('begin');
  try {
    await client.query('create schema lint_fixture');
    for (const text of sql) await client.query(text);
    return await lintSchema(client, ['lint_fixture']);
  } finally {
    await client.query('rollback');
  }
}

/** The CLI against this file's database (as the owner, the way a DBA runs it). */
const cli = (args: string[]) => {
  const ownerUrl = withDatabase(inject('superuserUrl'), database, { name: 'rowgate_owner', password: inject('ownerPassword') });
  return runCli({ ownerUrl, authenticatorUrl: ownerUrl, secret: 'x'.repeat(32) } as TestApp, args);
};

describe('db lint', () => {
  test("the project's schema has no finding", async () => {
    expect(await lintSchema(client)).toEqual([]);
    expect(await cli(['db', 'lint'])).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  test.each(lintRules)('%s: its fixture is found, and its waiver waives it', async (rule) => {
    const { made, waiver } = fixture(rule);
    const findings = await lintWith(made);
    expect(findings.length).toBeGreaterThan(0);
    expect(new Set(findings.map((f) => f.rule))).toEqual(new Set([rule]));
    expect(await lintWith(made, waiver)).toEqual([]);
  });

  test('a waiver needs the rule and a reason', async () => {
    const { made } = fixture('rls-disabled');
    for (const comment of ['@lint-allow rls-disabled:', '@lint-allow rls-disabled', '@lint-allow public-grant: another rule']) {
      const findings = await lintWith(made, `comment on table lint_fixture.notes is '${comment}'`);
      expect(findings.map((f) => f.rule)).toEqual(['rls-disabled']);
    }
  });

  test('each finding is what the fixture shows, one line each from the CLI, exit code 1', async () => {
    expect((await lintWith(fixture('security-definer').made)).map((f) => [f.object, f.message])).toEqual([
      ['function lint_fixture.for_everyone()', 'is security definer and executable by public'],
      ['function lint_fixture.unpinned()', 'is security definer without a pinned search_path'],
    ]);
    expect((await lintWith(fixture('per-row-helper').made)).map((f) => f.object)).toEqual(['policy select_member on lint_fixture.notes']);
    expect((await lintWith(fixture('policy-always-true').made)).map((f) => f.object)).toEqual(['policy select_all on lint_fixture.notes']);
    // SPEC §24: what organizations' SQL logins may execute is an allowlist
    expect((await lintWith(fixture('sql-login-function').made)).map((f) => [f.object, f.message])).toEqual([
      [
        'function lint_fixture.organization_name(uuid)',
        'is executable by rowgate_sql_login and not on the allowlist of functions that check reach',
      ],
    ]);
    expect((await lintWith(fixture('public-grant').made)).map((f) => f.object)).toEqual([
      'function lint_fixture.twice(integer)',
      'table lint_fixture.notes',
      'table lint_fixture.tags',
    ]);

    await client.query('create schema lint_fixture');
    try {
      await client.query(fixture('public-grant').made);
      const run = await cli(['db', 'lint', '--schema', 'lint_fixture']);
      expect(run.code).toBe(1);
      const lines = run.stdout.trim().split('\n');
      expect(lines).toHaveLength(3);
      for (const line of lines) expect(JSON.parse(line)).toMatchObject({ rule: 'public-grant' });
    } finally {
      await client.query('drop schema lint_fixture cascade');
    }
  });

  test('reads stored expression trees: calls in a sub-select are wrapped, a column argument is per row by design', () => {
    const helpers = new Map([
      ['1', 's.bare'],
      ['2', 's.column'],
    ]);
    const tree = parseNodeTree(
      '{BOOLEXPR :boolop and :args ({FUNCEXPR :funcid 1 :args <> :location -1} {FUNCEXPR :funcid 2 :args ({VAR :varno 1 :varlevelsup 0}) :location -1}' +
        ' {SUBLINK :subLinkType 4 :testexpr <> :subselect {QUERY :targetList ({TARGETENTRY :expr {FUNCEXPR :funcid 1 :args <>}})}}' +
        ' {CONST :consttype 25 :constisnull false :constvalue 8 [ 32 0 0 0 117 115 101 114 ]} {FUNCEXPR :funcid 99 :args <>}) :location -1}',
    );
    expect(perRowCalls(tree, helpers)).toEqual(['s.bare']);
  });
});
