// The operator CLI (SPEC §10), run as a child process against this file's test
// database and with the test app's secret, so the tokens it prints work on the app.
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { projectRoot } from '../src/db/setup.ts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectInsufficientScope, expectUnauthorized } from './expect-api.ts';
import { runCli, type CliRun } from './cli-runner.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  return runCli(app, args, env);
}

/** A successful run: exit 0, one JSON document on stdout, nothing on stderr. */
async function cliJson(args: string[]): Promise<any> {
  const run = await cli(args);
  expect(run, `rowgate ${args.join(' ')}`).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const within = (iso: string, expected: number, toleranceMs = 120_000) =>
  expect(Math.abs(new Date(iso).getTime() - expected)).toBeLessThan(toleranceMs);

describe('round trips: what the CLI makes works on the API', () => {
  let userId: string;
  let email: string;
  let session: string;

  beforeAll(async () => {
    email = `Ada.${randomUUID().slice(0, 8)}@Example.com`;
    const created = await cliJson(['users', 'create', '--email', email, '--name', 'Ada Lovelace']);
    userId = created.id;
  });

  test('users create prints the user; the e-mail is stored lower-case', async () => {
    expect(userId).toMatch(UUID);
    const [row] = await app.sql(
      `select email, name, exists (select 1 from rowgate_private.platform_admins a where a.user_id = u.id) as is_admin, deleted_at
       from rowgate.users u where id = $1`,
      [userId],
    );
    expect(row).toEqual({ email: email.toLowerCase(), name: 'Ada Lovelace', is_admin: false, deleted_at: null });
  });

  test('sessions create → a web session that GET /v1/users/me accepts', async () => {
    const out = await cliJson(['sessions', 'create', '--user-id', userId]);
    expect(Object.keys(out).sort()).toEqual(['expires_at', 'token']);
    expect(out.token).toMatch(/^rg_us_[0-9A-Za-z]{32,64}$/);
    within(out.expires_at, Date.now() + 31 * 24 * 3600 * 1000);
    session = out.token;
    const res = await app.get('/v1/users/me', { session });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: userId, email: email.toLowerCase(), name: 'Ada Lovelace', is_admin: false });
  });

  test('tokens create --scopes user:read → a PAT that is listed, and refused (403) by DELETE /v1/users/me', async () => {
    const out = await cliJson(['tokens', 'create', '--user-id', userId, '--scopes', 'user:read']);
    expect(out).toEqual({
      id: expect.stringMatching(UUID),
      comment: expect.any(String),
      scopes: ['user:read'],
      expires_at: null,
      token: expect.stringMatching(/^rg_pat_[0-9A-Za-z]{32,64}$/),
    });
    const listed = await app.get('/v1/personal-access-tokens/', { session });
    expect(listed.body.items.map((t: { id: string }) => t.id)).toContain(out.id);

    const res = await app.delete('/v1/users/me', { token: out.token });
    expectInsufficientScope(res, ['user:write']);
    expect((await app.sql('select deleted_at from rowgate.users where id = $1', [userId]))[0]).toEqual({ deleted_at: null });
  });

  test('tokens create with a comment, several scopes and --expires-in', async () => {
    const out = await cliJson([
      'tokens',
      'create',
      '--user-id',
      userId,
      '--scopes',
      'user:write, user:read',
      '--comment',
      'deploys',
      '--expires-in',
      '3600',
    ]);
    expect(out).toMatchObject({ comment: 'deploys', scopes: ['user:read', 'user:write'] });
    within(out.expires_at, Date.now() + 3600_000);
    const [row] = await app.sql('select comment, scopes from rowgate.personal_access_tokens where id = $1', [out.id]);
    expect(row).toEqual({ comment: 'deploys', scopes: ['user:read', 'user:write'] });
  });

  test('users set-admin sets the platform-admin flag', async () => {
    const before = (await app.get('/v1/users/me', { session })).body;
    expect(before.is_admin).toBe(false);
    expect(await cliJson(['users', 'set-admin', '--user-id', userId])).toEqual({ id: userId, is_admin: true });
    const after = (await app.get('/v1/users/me', { session })).body;
    // the flag is part of the user's answer: giving it changes the user (updated_at moves)
    expect(after).toEqual({ ...before, is_admin: true, updated_at: expect.any(String) });
    expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    // again: nothing changes
    expect(await cliJson(['users', 'set-admin', '--user-id', userId])).toEqual({ id: userId, is_admin: true });
    expect(await app.sql('select user_id from rowgate_private.platform_admins where user_id = $1', [userId])).toEqual([
      { user_id: userId },
    ]);
  });

  test('users create --admin', async () => {
    const out = await cliJson(['users', 'create', '--email', `grace.${randomUUID().slice(0, 8)}@example.com`, '--admin']);
    expect(out).toMatchObject({ id: expect.stringMatching(UUID), name: null, is_admin: true });
    expect(await app.sql('select user_id from rowgate_private.platform_admins where user_id = $1', [out.id])).toEqual([
      { user_id: out.id },
    ]);
    const session = await app.session(out.id);
    expect((await app.get('/v1/users/me', { session })).body).toMatchObject({ id: out.id, is_admin: true });
  });

  test('a user:write token deletes the user; then its credentials fail and the CLI finds no such user', async () => {
    const { token } = await cliJson(['tokens', 'create', '--user-id', userId, '--scopes', 'user:write']);
    expect((await app.delete('/v1/users/me', { token })).status).toBe(204);
    expectUnauthorized(await app.get('/v1/users/me', { session }), true);
    for (const args of [
      ['sessions', 'create', '--user-id', userId],
      ['tokens', 'create', '--user-id', userId, '--scopes', 'user:read'],
      ['users', 'set-admin', '--user-id', userId],
    ]) {
      const run = await cli(args);
      expect(run, args.join(' ')).toMatchObject({ code: 2, stdout: '' });
      expect(run.stderr).toMatch(/^rowgate: no user [0-9a-f-]{36}\n$/);
    }
  });
});

test('commands run at the same moment all succeed (each applies the migrations under a lock)', async () => {
  const emails = [1, 2, 3].map((i) => `parallel-${i}-${randomUUID().slice(0, 8)}@example.com`);
  const runs = await Promise.all(emails.map((email) => cli(['users', 'create', '--email', email])));
  expect(runs.map((r) => ({ code: r.code, stderr: r.stderr }))).toEqual(emails.map(() => ({ code: 0, stderr: '' })));
  expect(runs.map((r) => JSON.parse(r.stdout).email)).toEqual(emails);
});

describe('db commands', () => {
  test('db urls names the given database', async () => {
    expect(await cliJson(['db', 'urls'])).toEqual({ DATABASE_URL: app.ownerUrl, AUTH_DATABASE_URL: app.authenticatorUrl });
  });

  test('db migrate is idempotent on a migrated database', async () => {
    expect(await cliJson(['db', 'migrate'])).toEqual({ migrated: true });
  });

  test('db status prints JSON, and its exit code says whether anything is pending', async () => {
    const run = await cli(['db', 'status']);
    const out = JSON.parse(run.stdout);
    expect(out).toEqual({ pending_migrations: [], current_migration_not_empty: expect.any(Boolean) });
    expect(run.code).toBe(out.current_migration_not_empty ? 1 : 0);
  });
});

describe('bad usage → exit code 2, one line on stderr, nothing on stdout, nothing written', () => {
  let existing: string;
  let taken: string;
  beforeAll(async () => {
    const user = await app.user();
    existing = user.id;
    taken = user.email.toUpperCase();
  });

  const cases: [name: string, args: (userId: string) => string[], message: RegExp][] = [
    ['an unknown command', () => ['frobnicate'], /^rowgate: unknown command 'frobnicate'\n$/],
    ['an unknown command of a group', () => ['users', 'frobnicate'], /^rowgate: unknown command 'frobnicate'\n$/],
    ['an extra argument', () => ['users', 'create', '--email', 'x@example.com', 'extra'], /^rowgate: too many arguments for 'create'/],
    ['an unknown option', () => ['users', 'create', '--email', 'x@example.com', '--bogus'], /^rowgate: unknown option '--bogus'\n$/],
    ['an option without its value', () => ['users', 'create', '--email'], /^rowgate: option '--email <address>' argument missing\n$/],
    [
      'users create without --email',
      () => ['users', 'create', '--name', 'Nobody'],
      /^rowgate: required option '--email <address>' not specified\n$/,
    ],
    [
      'users create with a malformed e-mail',
      () => ['users', 'create', '--email', 'ada'],
      /^rowgate: option '--email <address>' argument 'ada' is invalid\. Not an e-mail address\.\n$/,
    ],
    [
      'users create with a space in the e-mail',
      () => ['users', 'create', '--email', 'ada @example.com'],
      /^rowgate: option '--email <address>' argument 'ada @example\.com' is invalid\. Not an e-mail address\.\n$/,
    ],
    [
      'users create with an e-mail that exists',
      () => ['users', 'create', '--email', taken],
      /^rowgate: a user with this e-mail address exists already\n$/,
    ],
    ['users set-admin without --user-id', () => ['users', 'set-admin'], /^rowgate: required option '--user-id <uuid>' not specified\n$/],
    ['sessions create without --user-id', () => ['sessions', 'create'], /required option '--user-id <uuid>' not specified/],
    [
      'sessions create with a malformed --user-id',
      () => ['sessions', 'create', '--user-id', 'ada'],
      /^rowgate: option '--user-id <uuid>' argument 'ada' is invalid\. Not a uuid\.\n$/,
    ],
    ['sessions create for an unknown user', () => ['sessions', 'create', '--user-id', randomUUID()], /^rowgate: no user [0-9a-f-]{36}\n$/],
    ['tokens create without --scopes', (id) => ['tokens', 'create', '--user-id', id], /required option '--scopes <a,b>' not specified/],
    ['tokens create with empty --scopes', (id) => ['tokens', 'create', '--user-id', id, '--scopes', ' , '], /At least one scope is needed/],
    [
      'mail outbox with a malformed --to',
      () => ['mail', 'outbox', '--to', 'nobody'],
      /argument 'nobody' is invalid\. Not an e-mail address/,
    ],
    [
      'tokens create with an unknown scope',
      (id) => ['tokens', 'create', '--user-id', id, '--scopes', 'user:read,root'],
      /Unknown scope: root/,
    ],
    [
      'tokens create with a bad --expires-in',
      (id) => ['tokens', 'create', '--user-id', id, '--scopes', 'user:read', '--expires-in', 'soon'],
      /^rowgate: option '--expires-in <seconds>' argument 'soon' is invalid\. Not a positive whole number of seconds\.\n$/,
    ],
  ];
  // each run is a fresh Node process: run them side by side
  test.concurrent.for(cases)('%s', async ([, args, message], { expect }) => {
    const before = await app.sql(
      'select (select count(*) from rowgate.users) as users, (select count(*) from rowgate.personal_access_tokens) as pats',
    );
    const run = await cli(args(existing));
    expect(run).toEqual({ code: 2, stdout: '', stderr: expect.stringMatching(message) });
    expect(
      await app.sql('select (select count(*) from rowgate.users) as users, (select count(*) from rowgate.personal_access_tokens) as pats'),
    ).toEqual(before);
  });

  const config: [name: string, env: Record<string, string | undefined>, message: RegExp][] = [
    ['DATABASE_URL without ROWGATE_SECRET', { ROWGATE_SECRET: undefined }, /ROWGATE_SECRET/],
    ['DATABASE_URL without AUTH_DATABASE_URL', { AUTH_DATABASE_URL: undefined }, /AUTH_DATABASE_URL/],
    ['a short ROWGATE_SECRET', { ROWGATE_SECRET: 'short' }, /ROWGATE_SECRET: must be at least 32 characters/],
    ['a DATABASE_URL that is not postgres://', { DATABASE_URL: 'mysql://x' }, /DATABASE_URL: must be a postgres:\/\/ URL/],
  ];
  test.concurrent.for(config)('invalid configuration: %s', async ([, env, message], { expect }) => {
    const run = await cli(['db', 'urls'], env);
    expect(run).toEqual({ code: 2, stdout: '', stderr: expect.stringMatching(message) });
  });

  test('no command, or a group without its command: the usage on stderr, exit 2', async () => {
    for (const args of [[], ['users']]) {
      const run = await cli(args);
      expect(run).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/^Usage: rowgate/) });
    }
  });
});

describe('help and version go to stdout, exit 0', () => {
  test.concurrent.for(['help', 'help users', 'users help create'])('rowgate %s: the help asked for', async (line, { expect }) => {
    const run = await cli(line.split(' '));
    expect(run).toMatchObject({ code: 0, stderr: '', stdout: expect.stringMatching(/^Usage: rowgate/) });
  });

  test("--help lists the groups; a group's --help lists its commands", async () => {
    const run = await cli(['--help']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^Usage: rowgate \[options\] \[command\]/);
    for (const group of ['users', 'sessions', 'tokens', 'analysts', 'mail', 'db']) expect(run.stdout).toMatch(new RegExp(`\\n  ${group} `));
    const users = await cli(['users', '--help']);
    expect(users).toMatchObject({ code: 0, stderr: '', stdout: expect.stringMatching(/^Usage: rowgate users/) });
    for (const command of ['create', 'set-admin']) expect(users.stdout).toContain(`  ${command} `);
  });

  test.concurrent.for([
    ['users', 'create', '--email <address>'],
    ['tokens', 'create', '--expires-in <seconds>'],
    ['analysts', 'grant', '--login <name>'],
    ['db', 'init', '--help'],
  ])('%s %s --help shows its options', async ([group, command, option], { expect }) => {
    const run = await cli([group!, command!, '--help']);
    expect(run).toMatchObject({ code: 0, stderr: '', stdout: expect.stringMatching(new RegExp(`^Usage: rowgate ${group} ${command}`)) });
    expect(run.stdout).toContain(option);
  });

  test('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(await readFile(path.join(projectRoot, 'package.json'), 'utf8'));
    for (const flag of ['--version', '-V']) expect(await cli([flag])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});

describe('a ROWGATE_HOME without a database: refused, nothing created', () => {
  test.concurrent.for([[['users', 'create', '--email', 'ada@example.com']], [['db', 'urls']], [['db', 'migrate']]])(
    '%s',
    async ([args], { expect }) => {
      const home = path.join(tmpdir(), `rowgate-mistyped-${randomUUID()}`);
      const run = await cli(args!, {
        DATABASE_URL: undefined,
        AUTH_DATABASE_URL: undefined,
        ROWGATE_SECRET: undefined,
        ROWGATE_HOME: home,
      });
      expect(run).toEqual({
        code: 2,
        stdout: '',
        stderr: `rowgate: no embedded database in ${home} (ROWGATE_HOME); create it with \`npx rowgate db init\` or \`npm start\`, or set DATABASE_URL\n`,
      });
      expect(existsSync(home)).toBe(false);
    },
  );
});

test('a database that cannot be reached: exit 1 and a message, no JSON', async () => {
  const run = await cli(['db', 'urls'], { DATABASE_URL: 'postgres://rowgate_owner:x@127.0.0.1:1/nothing' });
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: '' });
  expect(run.stderr).toMatch(/^rowgate: /);
});
