// Analysts (SPEC §8, §10): `rowgate analysts grant` makes a LOGIN role bound to a
// user; plain SQL under it (a pg client is what psql is: the simple query
// protocol, COPY included) reads exactly what that user reads through the API
// with the read scopes, writes nothing, and every way around that fails.
import { randomBytes, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { withDatabase } from './database-server.ts';
import { ensureRoles, migrateDatabase } from '../src/db/setup.ts';
import { scramVerifier } from '../src/db/analysts.ts';
import { runCli, type CliRun } from './cli-runner.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
const superuserUrl = () => inject('superuserUrl');
/** roles are cluster-wide and the test files share the cluster: names unique to this run and file */
/** this file's analyst logins, told apart from other files' roles (they run side by side in one cluster) */
const LOGIN_PREFIX = `${inject('runId')}_an_`;
const loginName = (label: string) => `${LOGIN_PREFIX}${label}_${randomBytes(3).toString('hex')}`;
const made = new Set<string>();

/** `node src/cli/main.ts ...args` against this file's database, as rowgate_owner (DATABASE_URL) and no superuser. */
function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  return runCli(app, args, env);
}

interface Grant {
  login: string;
  password: string;
  database_url: string;
}

async function grant(userId: string, label: string, options: string[] = []): Promise<Grant> {
  const login = loginName(label);
  made.add(login);
  const run = await cli(['analysts', 'grant', '--user-id', userId, '--login', login, ...options]);
  expect(run, `analysts grant --login ${login}`).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout);
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // a terminated session reports on its next query
  await client.connect();
  return client;
}

async function superuser<T extends object = any>(sql: string, values: unknown[] = [], database = app.database): Promise<T[]> {
  const client = new pg.Client({ connectionString: withDatabase(superuserUrl(), database) });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

/** The statement fails with insufficient_privilege (42501), whatever it tried. */
async function expectDenied(client: pg.Client, sql: string, values?: unknown[]) {
  const error = await client.query(sql, values).then(
    () => null,
    (e: { code?: string; message: string }) => e,
  );
  expect(error, `${sql} must be refused`).not.toBeNull();
  expect({ sql, code: error!.code }).toEqual({ sql, code: '42501' });
}

/** COPY … TO STDOUT as psql runs it: the rows arrive as CopyData messages. */
function copyOut(client: pg.Client, sql: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const query = new pg.Query(sql) as pg.Query & { handleCopyData(message: { chunk: Buffer }): void };
    query.handleCopyData = (message) => void chunks.push(message.chunk);
    query.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    query.on('error', reject);
    void client.query(query);
  });
}

/** Every item of a list endpoint, page by page, with a bearer token or a web session. */
async function listAll(pathname: string, credential: string | { session: string }): Promise<any[]> {
  const items: any[] = [];
  const auth = typeof credential === 'string' ? { token: credential } : credential;
  for (let page = 1; ; page++) {
    const res = await app.get(`${pathname}${pathname.includes('?') ? '&' : '?'}limit=100&page=${page}`, auth);
    expect(res.status, `GET ${pathname}`).toBe(200);
    items.push(...res.body.items);
    if (page >= res.body.pagination.max_page) return items;
  }
}

/** SQL rows in the API's shape: its fields only, timestamps as ISO strings, bigints as numbers. */
function asApi(rows: Record<string, unknown>[], like: Record<string, unknown>[]): Record<string, unknown>[] {
  const keys = like[0] ? Object.keys(like[0]) : rows[0] ? Object.keys(rows[0]) : [];
  return rows.map((row) =>
    Object.fromEntries(
      keys.map((k) => {
        const v = row[k];
        const api = like[0]?.[k];
        return [k, typeof api === 'number' && typeof v === 'string' ? Number(v) : v];
      }),
    ),
  );
}

const byKey =
  (...keys: string[]) =>
  (a: Record<string, unknown>, b: Record<string, unknown>) =>
    keys
      .map((k) => String(a[k]))
      .join('|')
      .localeCompare(keys.map((k) => String(b[k])).join('|'));

// The world: ann is the analysts' user.
//   A: ann admin and account admin (finance visible)   B: ann member (no finance:read)
//   E: ann finance role                                  C: bob's, ann not a member
//   D: ann's membership removed                          F: ann admin, organization deleted
let ann: TestUser;
let bob: TestUser;
const org: Record<'A' | 'B' | 'C' | 'D' | 'E' | 'F', string> = {} as never;
let readToken: string;
/** an impersonation session: a web session with the read scopes (payout accounts take web sessions only) */
let readSession: { session: string };
let analyst: Grant;

async function fill(organizationId: string, label: string) {
  const products = [
    await app.product(organizationId, { name: `${label} basic`, price_amount: 1000 }),
    await app.product(organizationId, { name: `${label} pro`, price_amount: 2500, is_archived: true }),
  ];
  const deletedProduct = await app.product(organizationId, { name: `${label} gone` });
  await app.sql('update rowgate.products set deleted_at = now() where id = $1', [deletedProduct]);
  const customers = [await app.customer(organizationId), await app.customer(organizationId, { status: 'active' })];
  const deletedCustomer = await app.customer(organizationId);
  await app.sql('update rowgate.customers set deleted_at = now() where id = $1', [deletedCustomer]);
  await app.customerMember(customers[1]!);
  await app.sql(`insert into rowgate.payout_accounts (organization_id, type, country, currency) values ($1, 'bank_account', 'US', 'usd')`, [
    organizationId,
  ]);
  await app.order(products[0]!, customers[0]!, 'pending');
  await app.order(products[1]!, customers[1]!, 'paid');
  const refunded = await app.order(products[0]!, customers[1]!, 'paid');
  await app.sql(`update rowgate.orders set status = 'refunded' where id = $1`, [refunded]);
  // a payment of an earlier day, for the per-day views (past the timestamps trigger)
  const earlier = await app.order(products[0]!, customers[0]!, 'paid');
  await superuser(`begin; set local session_replication_role = replica;
    update rowgate.transactions set created_at = created_at - interval '3 days' where order_id = ${pg.escapeLiteral(earlier)};
    update rowgate.orders set created_at = created_at - interval '3 days' where id = ${pg.escapeLiteral(earlier)};
    commit`);
}

beforeAll(async () => {
  app = await startTestApp();
  ann = await app.user({ name: 'Ann Analyst' });
  bob = await app.user({ name: 'Bob' });
  org.A = (await app.organization(ann.id, { name: 'A' })).id;
  await app.account(org.A, ann.id);
  org.B = (await app.organization(bob.id, { name: 'B' })).id;
  await app.membership(org.B, ann.id, 'member');
  await app.account(org.B, bob.id);
  org.C = (await app.organization(bob.id, { name: 'C' })).id;
  await app.account(org.C, bob.id);
  org.D = (await app.organization(bob.id, { name: 'D' })).id;
  await app.membership(org.D, ann.id, 'member');
  await app.sql('update rowgate.memberships set deleted_at = now() where organization_id = $1 and user_id = $2', [org.D, ann.id]);
  org.E = (await app.organization(bob.id, { name: 'E' })).id;
  await app.membership(org.E, ann.id, 'finance');
  org.F = (await app.organization(ann.id, { name: 'F' })).id;
  for (const [label, id] of Object.entries(org)) await fill(id, label);
  await app.sql('update rowgate.organizations set deleted_at = now() where id = $1', [org.F]);

  const [read] = await app.sql<{ scopes: string[] }>('select rowgate_private.read_scopes() as scopes');
  readToken = await app.pat(ann.id, read!.scopes);
  const operator = await app.user({ admin: true });
  readSession = { session: await app.session(ann.id, { impersonatorId: operator.id, lifetime: '1 hour' }) };
  analyst = await grant(ann.id, 'ann');
});

afterAll(async () => {
  if (app) {
    for (const login of made) await superuser(`drop role if exists ${pg.escapeIdentifier(login)}`).catch(() => {});
    await app.close();
  }
});

describe('analysts grant', () => {
  test('prints {login, password, database_url}: a URL of this database, as the new role', () => {
    expect(Object.keys(analyst).sort()).toEqual(['database_url', 'login', 'password']);
    const url = new URL(analyst.database_url);
    const owner = new URL(app.ownerUrl);
    expect({ user: url.username, password: decodeURIComponent(url.password), host: url.host, path: url.pathname }).toEqual({
      user: analyst.login,
      password: analyst.password,
      host: owner.host,
      path: `/${app.database}`,
    });
    expect(analyst.password.length).toBeGreaterThanOrEqual(24);
  });

  test('the role: LOGIN, a member of rowgate_analyst only, no attributes, a SCRAM verifier; the binding', async () => {
    const [role] = await superuser(
      `select r.rolcanlogin, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls, r.rolinherit,
         starts_with(a.rolpassword, 'SCRAM-SHA-256$') as scram,
         array(select m.roleid::regrole::text from pg_auth_members m where m.member = r.oid) as member_of
       from pg_roles r join pg_authid a on a.oid = r.oid where r.rolname = $1`,
      [analyst.login],
    );
    expect(role).toEqual({
      rolcanlogin: true,
      rolsuper: false,
      rolcreaterole: false,
      rolcreatedb: false,
      rolreplication: false,
      rolbypassrls: false,
      rolinherit: true,
      scram: true,
      member_of: ['rowgate_analyst'],
    });
    expect(await app.sql('select login::text, user_id from rowgate_private.analysts where login = $1', [analyst.login])).toEqual([
      { login: analyst.login, user_id: ann.id },
    ]);
  });

  test('analysts list shows the binding', async () => {
    const run = await cli(['analysts', 'list']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toContainEqual({
      login: analyst.login,
      user_id: ann.id,
      created_at: expect.any(String),
      role_exists: true,
      connection_limit: 5,
      statement_timeout_ms: 60_000,
      idle_in_transaction_timeout_ms: 60_000,
    });
  });

  test('the session is that user with the read scopes, whatever it is called', async () => {
    const client = await connect(analyst.database_url);
    try {
      const { rows } = await client.query(
        `select session_user::text, rowgate_hidden.current_subject_kind() as kind, rowgate_hidden.current_user_id() as user_id`,
      );
      expect(rows[0]).toEqual({ session_user: analyst.login, kind: 'user', user_id: ann.id });
      const { rows: scopes } = await client.query('select rowgate_hidden.current_scopes() as s');
      const [{ expected }] = await app.sql('select rowgate_private.read_scopes() as expected');
      expect(scopes[0].s).toEqual(expected);
      expect(scopes[0].s.every((s: string) => s.endsWith('read'))).toBe(true);
    } finally {
      await client.end();
    }
  });

  const refusals: [name: string, args: (userId: string) => string[], message: RegExp][] = [
    ['an upper-case login', (u) => ['--user-id', u, '--login', 'Ann'], /--login: An analyst's login is a lower-case identifier/],
    [
      'a login with a quote',
      (u) => ['--user-id', u, '--login', `ann"; drop role postgres; --`],
      /--login: An analyst's login is a lower-case/,
    ],
    ['a login too long for a role', (u) => ['--user-id', u, '--login', 'a'.repeat(64)], /--login: An analyst's login is a lower-case/],
    ["a login in PostgreSQL's pg_ namespace", (u) => ['--user-id', u, '--login', 'pg_analyst'], /reserved by PostgreSQL/],
    ["an API role's name", (u) => ['--user-id', u, '--login', 'rowgate_owner'], /belong to the API's own roles/],
    ["an organization SQL login's namespace", (u) => ['--user-id', u, '--login', 'rg_sql_abc'], /belong to organizations' SQL logins/],
    ['a reserved word', (u) => ['--user-id', u, '--login', 'select'], /--login: A reserved word is not a login/],
    ['an existing role that is not an analyst', (u) => ['--user-id', u, '--login', 'postgres'], /exists and is not an analyst/],
    ['an unknown user', () => ['--user-id', randomUUID(), '--login', 'nobody_analyst'], /--user-id: User .* not found/],
    [
      'a statement timeout past a day',
      (u) => ['--user-id', u, '--login', 'nobody_analyst', '--statement-timeout', '86401'],
      /--statement-timeout: A statement timeout is from 1 second to 1 day/,
    ],
    [
      'a connection limit past 1000',
      (u) => ['--user-id', u, '--login', 'nobody_analyst', '--connection-limit', '1001'],
      /--connection-limit: A connection limit is from 1 to 1000/,
    ],
    ['a malformed user id', () => ['--user-id', 'ann', '--login', 'nobody_analyst'], /argument 'ann' is invalid\. Not a uuid/],
    ['no --login', (u) => ['--user-id', u], /required option '--login <name>' not specified/],
  ];
  /**
   * this file's roles in rowgate_analyst, and the role named --login (other test
   * files make analyst roles too, at the same time, so one may appear between
   * the two reads)
   */
  const analystRoles = (login: string | undefined) =>
    superuser(
      `select rolname::text, pg_has_role(oid, 'rowgate_analyst', 'member') as analyst from pg_roles
       where pg_has_role(oid, 'rowgate_analyst', 'member') and rolname <> 'rowgate_analyst' and starts_with(rolname, $2) or rolname = $1 order by 1`,
      [login ?? '', LOGIN_PREFIX],
    );
  // each run is a fresh Node process: run them side by side
  test.concurrent.for(refusals)('refuses %s: exit 2, a message, no role', async ([, args, message], { expect }) => {
    const login = args(ann.id)[args(ann.id).indexOf('--login') + 1];
    const before = await analystRoles(login);
    const run = await cli(['analysts', 'grant', ...args(ann.id)]);
    expect(run).toEqual({ code: 2, stdout: '', stderr: expect.stringMatching(message) });
    expect(await analystRoles(login)).toEqual(before);
    expect(await app.sql('select count(*)::int as n from rowgate_private.analysts')).toEqual([{ n: 1 }]);
  });

  test('refuses a login that is an analyst already (no rebinding to another user)', async () => {
    const run = await cli(['analysts', 'grant', '--user-id', bob.id, '--login', analyst.login]);
    expect(run).toEqual({ code: 2, stdout: '', stderr: expect.stringMatching(/analyst already/) });
    expect(await app.sql('select user_id from rowgate_private.analysts where login = $1', [analyst.login])).toEqual([{ user_id: ann.id }]);
  });
});

describe("the analysts' functions: rowgate_sql_admin's, called by the owner (SPEC §15, §24)", () => {
  /** a client of rowgate_owner, the role the CLI's DATABASE_URL names */
  async function asOwner<T>(run: (owner: pg.Client) => Promise<T>): Promise<T> {
    const owner = new pg.Client({ connectionString: app.ownerUrl });
    await owner.connect();
    try {
      return await run(owner);
    } finally {
      await owner.end();
    }
  }
  /** the error a statement of the owner's fails with: its code, message and detail */
  const refusal = (sql: string, values: unknown[]) =>
    asOwner((owner) =>
      owner.query(sql, values).then(
        () => null,
        (e: { code?: string; message: string; detail?: string }) => ({ code: e.code, message: e.message, detail: e.detail }),
      ),
    );
  const create = (login: string, verifier: string, limits = '') =>
    refusal(`select rowgate_private.create_analyst_login(p_user_id => $1, p_login => $2, p_verifier => $3${limits})`, [
      ann.id,
      login,
      verifier,
    ]);

  test('grant and revoke work on a connection that is neither superuser nor CREATEROLE', async () => {
    const login = loginName('owner');
    made.add(login);
    const password = randomBytes(18).toString('base64url');
    await asOwner(async (owner) => {
      const { rows } = await owner.query(
        `select session_user::text as who, r.rolsuper, r.rolcreaterole from pg_roles r where r.rolname = current_user`,
      );
      expect(rows).toEqual([{ who: 'rowgate_owner', rolsuper: false, rolcreaterole: false }]);
      await owner.query('select rowgate_private.create_analyst_login($1, $2, $3)', [ann.id, login, scramVerifier(password)]);
    });
    const url = new URL(analyst.database_url);
    url.username = login;
    url.password = password;
    const session = await connect(url.toString());
    expect((await session.query('select rowgate_hidden.current_user_id() as id')).rows).toEqual([{ id: ann.id }]);
    const revoked = await asOwner(async (owner) => {
      await owner.query('select rowgate_private.disable_analyst_login($1)', [login]);
      return (await owner.query('select * from rowgate_private.drop_analyst_login($1)', [login])).rows;
    });
    expect(revoked).toEqual([{ login, user_id: ann.id, role_dropped: true, sessions_terminated: 1 }]);
    await expect(session.query('select 1')).rejects.toThrow();
    await session.end().catch(() => {});
    expect(await superuser('select 1 from pg_roles where rolname = $1', [login])).toEqual([]);
  });

  test('the role made is administered by rowgate_sql_admin and a member of rowgate_analyst with INHERIT TRUE, SET FALSE', async () => {
    expect(
      await superuser(
        `select g.rolname::text as role, m.rolname::text as member, am.admin_option, am.inherit_option, am.set_option
         from pg_auth_members am join pg_roles g on g.oid = am.roleid join pg_roles m on m.oid = am.member
         where (g.rolname = $1 or m.rolname = $1) order by 1, 2, 3`,
        [analyst.login],
      ),
    ).toEqual([
      { role: analyst.login, member: 'rowgate_sql_admin', admin_option: false, inherit_option: true, set_option: false },
      { role: analyst.login, member: 'rowgate_sql_admin', admin_option: true, inherit_option: false, set_option: false },
      { role: 'rowgate_analyst', member: analyst.login, admin_option: false, inherit_option: true, set_option: false },
    ]);
  });

  test('only rowgate_owner may call them: not public, the API roles, analysts or SQL logins', async () => {
    const functions = [
      'rowgate_private.create_analyst_login(uuid,text,text,integer,integer,integer)',
      'rowgate_private.disable_analyst_login(text)',
      'rowgate_private.drop_analyst_login(text)',
    ];
    const rows = await superuser<{ fn: string; owner: string; callers: string[] }>(
      `select p.oid::regprocedure::text as fn, p.proowner::regrole::text as owner,
         array(select r.rolname::text from pg_roles r where has_function_privilege(r.oid, p.oid, 'execute')
           and not r.rolsuper and r.rolname in ('rowgate_owner', 'rowgate_authenticator', 'rowgate_user', 'rowgate_organization',
             'rowgate_analyst', 'rowgate_sql_login', 'rowgate_anonymous', $2) order by 1) as callers,
         exists (select from aclexplode(p.proacl) a where a.grantee = 0) as public
       from pg_proc p where p.oid = any ($1::regprocedure[]) order by 1`,
      [functions, analyst.login],
    );
    expect(rows).toEqual(functions.map((fn) => ({ fn, owner: 'rowgate_sql_admin', callers: ['rowgate_owner'], public: false })));
    const client = await connect(analyst.database_url);
    try {
      await expectDenied(client, 'select rowgate_private.drop_analyst_login($1)', [analyst.login]);
    } finally {
      await client.end();
    }
  });

  test('a clear password is refused: only a SCRAM-SHA-256 verifier', async () => {
    const login = loginName('clear');
    for (const verifier of ['hunter2-hunter2', `md5${'0'.repeat(32)}`, `${scramVerifier('x')} `, '']) {
      expect(await create(login, verifier), verifier).toEqual({
        code: 'RG422',
        message: "An analyst's login takes a SCRAM-SHA-256 verifier, never a password",
        detail: 'verifier',
      });
    }
    expect(await superuser('select 1 from pg_roles where rolname = $1', [login])).toEqual([]);
  });

  test('bad names and limits are refused in SQL, before anything is made', async () => {
    const verifier = scramVerifier('x');
    const names: [string, RegExp][] = [
      ['Ann', /lower-case identifier/],
      ['a'.repeat(64), /lower-case identifier/],
      ['1ann', /lower-case identifier/],
      ['ann\n', /lower-case identifier/],
      ['pg_ann', /reserved by PostgreSQL/],
      ['rowgate', /API's own roles/],
      ['rowgate_ann', /API's own roles/],
      ['rg_sql_aaaaaaaaaaaaaaaaaaaa', /organizations' SQL logins/],
      ['user', /reserved word/],
      ['public', /reserved word/],
      ['none', /reserved word/],
    ];
    for (const [login, message] of names) {
      expect(await create(login, verifier), login).toMatchObject({
        code: 'RG422',
        message: expect.stringMatching(message),
        detail: 'login',
      });
    }
    const login = loginName('limits');
    for (const [limits, detail] of [
      [', p_connection_limit => 0', 'connection_limit'],
      [', p_connection_limit => 1001', 'connection_limit'],
      [', p_statement_timeout_ms => 999', 'statement_timeout'],
      [', p_statement_timeout_ms => 86400001', 'statement_timeout'],
      [', p_idle_in_transaction_timeout_ms => 0', 'idle_in_transaction_timeout'],
      [', p_idle_in_transaction_timeout_ms => null', 'idle_in_transaction_timeout'],
    ]) {
      expect(await create(login, verifier, limits), limits).toMatchObject({ code: 'RG422', detail });
    }
    expect(await superuser('select 1 from pg_roles where rolname = $1', [login])).toEqual([]);
  });

  test('grant takes over no existing role: the API roles, an organization SQL login, a superuser, any other', async () => {
    const session = await app.session(ann.id);
    const res = await app.post(`/v1/organizations/${org.A}/sql-credentials`, { comment: 'BI', scopes: ['products_read'] }, { session });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const sqlLogin: string = res.body.login;
    const plain = loginName('plain');
    made.add(plain);
    await superuser(`create role ${pg.escapeIdentifier(plain)} login`);
    const taken: [string, RegExp][] = [
      ['rowgate_authenticator', /API's own roles/],
      [sqlLogin, /organizations' SQL logins/],
      ['postgres', /exists and is not an analyst/],
      [plain, /exists and is not an analyst/],
    ];
    for (const [login, message] of taken) {
      expect(await create(login, scramVerifier('x')), login).toMatchObject({
        code: 'RG422',
        message: expect.stringMatching(message),
        detail: 'login',
      });
    }
    // unchanged: still what they were, and none of them an analyst
    expect(
      await superuser(
        `select rolname::text, rolcanlogin, pg_has_role(oid, 'rowgate_analyst', 'member') as analyst from pg_roles
         where rolname = any ($1::text[]) order by 1`,
        [[sqlLogin, plain, 'rowgate_authenticator']],
      ),
    ).toEqual(
      [
        { rolname: sqlLogin, rolcanlogin: true, analyst: false },
        { rolname: plain, rolcanlogin: true, analyst: false },
        { rolname: 'rowgate_authenticator', rolcanlogin: true, analyst: false },
      ].sort((a, b) => a.rolname.localeCompare(b.rolname)),
    );
    expect(
      await app.sql('select count(*)::int as n from rowgate_private.analysts where login = any ($1::text[])', [[sqlLogin, plain]]),
    ).toEqual([{ n: 0 }]);
    await app.delete(`/v1/organizations/${org.A}/sql-credentials/${res.body.id}`, { session });
  });

  test('revoke refuses an organization SQL login, and an analyst-shaped role it did not make until the roles script hands it over', async () => {
    const refused = (login: string) =>
      asOwner((owner) =>
        owner.query('select rowgate_private.disable_analyst_login($1)', [login]).then(
          () => null,
          (e: { code?: string; message: string }) => ({ code: e.code, message: e.message }),
        ),
      );
    expect(await refused('rg_sql_aaaaaaaaaaaaaaaaaaaa')).toEqual({
      code: 'RG422',
      message: expect.stringMatching(/organizations' SQL logins/),
    });
    // a member of rowgate_analyst a superuser made, bound by hand: rowgate_sql_admin does not administer it
    const foreign = loginName('foreign');
    made.add(foreign);
    await superuser(`create role ${pg.escapeIdentifier(foreign)} login in role rowgate_analyst`);
    const other = loginName('other');
    made.add(other);
    await superuser(`create role ${pg.escapeIdentifier(other)} login in role rowgate_user`);
    await app.sql('insert into rowgate_private.analysts (login, user_id) values ($1, $2)', [foreign, ann.id]);
    try {
      expect(await refused(foreign)).toEqual({ code: 'RG422', message: expect.stringMatching(/rowgate_sql_admin does not administer/) });
      const run = await cli(['analysts', 'revoke', '--login', foreign]);
      expect(run).toEqual({ code: 2, stdout: '', stderr: expect.stringMatching(/does not administer/) });
      expect(await superuser('select rolcanlogin from pg_roles where rolname = $1', [foreign])).toEqual([{ rolcanlogin: true }]);
      // a role shaped otherwise (a member of another role too) is never handed over
      await superuser(`grant rowgate_analyst to ${pg.escapeIdentifier(other)}`);
      await ensureRoles(superuserUrl(), {});
      expect(
        await superuser(
          `select m.rolname::text as member, am.admin_option, am.inherit_option, am.set_option
           from pg_auth_members am join pg_roles m on m.oid = am.member
           where am.roleid = $1::text::regrole or (am.roleid = 'rowgate_analyst'::regrole and m.rolname = $1::text) order by 1, 2`,
          [foreign],
        ),
      ).toEqual([
        { member: foreign, admin_option: false, inherit_option: true, set_option: false },
        { member: 'rowgate_sql_admin', admin_option: true, inherit_option: true, set_option: false },
      ]);
      expect(await superuser(`select count(*)::int as n from pg_auth_members where roleid = $1::regrole`, [other])).toEqual([{ n: 0 }]);
      const revoked = await cli(['analysts', 'revoke', '--login', foreign]);
      expect(revoked).toMatchObject({ code: 0, stderr: '' });
      expect(await superuser('select 1 from pg_roles where rolname = $1', [foreign])).toEqual([]);
    } finally {
      await app.sql('delete from rowgate_private.analysts where login = $1', [foreign]);
    }
  });

  test('the second step of revoke refuses a login that can still log in (its ended sessions would come back)', async () => {
    const error = await refusal('select * from rowgate_private.drop_analyst_login($1)', [analyst.login]);
    expect(error).toMatchObject({ code: '55000' });
    expect(await superuser('select rolcanlogin from pg_roles where rolname = $1', [analyst.login])).toEqual([{ rolcanlogin: true }]);
  });
});

describe('the analyst reads exactly what the API shows the user with read scopes', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = await connect(analyst.database_url);
  });
  afterAll(async () => client?.end());

  const sql = async (text: string) => (await client.query(text)).rows;

  test('organizations', async () => {
    const api = await listAll('/v1/organizations/', readToken);
    const rows = await sql('select * from rowgate.organizations');
    expect(asApi(rows, api).sort(byKey('id'))).toEqual(api.sort(byKey('id')));
    expect(api.map((o) => o.id).sort()).toEqual([org.A, org.B, org.E].sort());
  });

  for (const [name, pathname, query] of [
    ['products', '/v1/products/', 'select * from rowgate.products'],
    ['customers', '/v1/customers/', 'select * from rowgate.customers'],
    ['orders', '/v1/orders/', 'select * from rowgate.orders'],
    ['transactions', '/v1/transactions/', 'select * from rowgate.transactions'],
    ['refunds', '/v1/refunds/', 'select * from rowgate.refunds'],
  ] as const) {
    test(name, async () => {
      const api = await listAll(pathname, readToken);
      const rows = await sql(query);
      expect(asApi(rows, api).sort(byKey('id'))).toEqual(api.sort(byKey('id')));
      expect(api.length).toBeGreaterThan(0);
      // never a row of an organization the user does not reach (C, D, F), nor one the finance filter hides (B)
      const hidden = name === 'transactions' ? [org.B, org.C, org.D, org.F] : [org.C, org.D, org.F];
      expect(api.filter((r) => hidden.includes(r.organization_id))).toEqual([]);
    });
  }

  test('select * works on every table and view it may read: each column granted, or none of the relation', async () => {
    // what the analyst may read, asked as the analyst (privilege functions answer for current_user)
    const relations = await sql(`
      select c.relname as name, count(*)::int as columns,
        count(*) filter (where has_column_privilege(c.oid, a.attnum, 'select'))::int as readable
      from pg_class c
      join pg_namespace n on n.oid = c.relnamespace
      join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
      where n.nspname = 'rowgate' and c.relkind in ('r', 'p', 'v', 'm', 'f')
      group by c.relname order by c.relname`);
    const partial = relations.filter((r) => r.readable > 0 && r.readable < r.columns).map((r) => r.name);
    expect(partial, 'relations whose grants leave a column out (select * fails on them)').toEqual([]);
    const readable = relations.filter((r) => r.readable > 0);
    expect(readable.map((r) => r.name)).toEqual(
      expect.arrayContaining(['users', 'organizations', 'memberships', 'accounts', 'products', 'customers', 'customer_members']),
    );
    expect(readable.map((r) => r.name)).toEqual(
      expect.arrayContaining(['orders', 'transactions', 'refunds', 'payout_accounts', 'revenue_by_day']),
    );
    for (const { name, columns } of readable) {
      const result = await client.query(`select * from rowgate.${pg.escapeIdentifier(name)}`);
      expect(result.fields.length, name).toBe(columns);
      // soft-deleted rows stay hidden: the column is there, and null
      if (result.fields.some((f) => f.name === 'deleted_at'))
        expect(
          result.rows.filter((r) => r.deleted_at !== null),
          name,
        ).toEqual([]);
    }
  });

  // an admin's analyst reads these three as the API lists them, rather than a "permission denied"
  test('webhook endpoints, their attempts and organization access tokens: what the API lists, no more', async () => {
    const endpoint = (organization_id: string, session: string) =>
      app.post(
        '/v1/webhook-endpoints/',
        { organization_id, url: 'https://hooks.example.com/in', event_types: ['order.created'] },
        { session },
      );
    const created = [await endpoint(org.A, ann.session), await endpoint(org.C, bob.session)];
    expect(created.map((r) => r.status)).toEqual([201, 201]);
    await app.oat(org.A, ['products_read']);
    await app.oat(org.C, ['products_read']);
    const [mine] = await sql('select id from rowgate.webhook_endpoints');
    for (const [pathname, query] of [
      ['/v1/webhook-endpoints/', 'select * from rowgate.webhook_endpoints'],
      ['/v1/organization-access-tokens/', 'select * from rowgate.organization_access_tokens'],
    ] as const) {
      const api = await listAll(pathname, readToken);
      const rows = await sql(query);
      expect(asApi(rows, api).sort(byKey('id')), pathname).toEqual(api.sort(byKey('id')));
      expect(api.length, pathname).toBeGreaterThan(0);
      expect(new Set(api.map((r) => r.organization_id)), pathname).toEqual(new Set([org.A]));
    }
    expect(mine?.id).toBe(created[0]!.body.id);
    // every column readable, and the attempts' relation answers under the same policy (none made here)
    expect(await sql('select * from rowgate.webhook_attempts')).toEqual([]);
  });

  test('payout accounts (the finance-read policy: the account admin only)', async () => {
    const api = await listAll('/v1/payout-accounts/', readSession);
    const rows = await sql('select * from rowgate.payout_accounts');
    expect(asApi(rows, api).sort(byKey('id'))).toEqual(api.sort(byKey('id')));
    expect(api.map((p) => p.organization_id)).toEqual([org.A]);
  });

  test('accounts: the ones GET /v1/organizations/{id}/account shows, and no other', async () => {
    const api: any[] = [];
    for (const id of Object.values(org)) {
      const res = await app.get(`/v1/organizations/${id}/account`, { token: readToken });
      expect([200, 403, 404], `${id}: ${JSON.stringify(res.body)}`).toContain(res.status);
      if (res.status === 200) api.push(res.body);
    }
    const rows = await sql('select id, organization_id, admin_id, country, currency, status, created_at, updated_at from rowgate.accounts');
    expect(asApi(rows, api).sort(byKey('id'))).toEqual(api.sort(byKey('id')));
    expect(api.map((a) => a.organization_id)).toEqual([org.A]);
  });

  test('memberships (with the colleagues they name)', async () => {
    const api = (await Promise.all([org.A, org.B, org.E].map((id) => listAll(`/v1/organizations/${id}/members`, readToken)))).flat();
    const rows = await sql(
      `select m.user_id, m.organization_id, m.role, u.email, u.name, m.created_at, m.updated_at
       from rowgate.memberships m join rowgate.colleagues u on u.id = m.user_id`,
    );
    expect(asApi(rows, api).sort(byKey('organization_id', 'user_id'))).toEqual(api.sort(byKey('organization_id', 'user_id')));
    expect(api.length).toBe(5); // A: ann; B: bob, ann; E: bob, ann
  });

  test("revenue_by_day: the API's transactions summed per organization, UTC day and currency", async () => {
    const transactions = await listAll('/v1/transactions/', readToken);
    const expected = new Map<
      string,
      {
        organization_id: string;
        day: string;
        currency: string;
        gross_amount: number;
        refunded_amount: number;
        net_amount: number;
        payments: number;
      }
    >();
    for (const t of transactions) {
      const day = new Date(t.created_at).toISOString().slice(0, 10);
      const key = `${t.organization_id}|${day}|${t.currency}`;
      const row = expected.get(key) ?? {
        organization_id: t.organization_id,
        day,
        currency: t.currency,
        gross_amount: 0,
        refunded_amount: 0,
        net_amount: 0,
        payments: 0,
      };
      if (t.type === 'payment') (row.gross_amount += t.amount), (row.payments += 1);
      else row.refunded_amount -= t.amount;
      row.net_amount += t.amount;
      expected.set(key, row);
    }
    const rows = await sql(
      `select organization_id, day::text as day, currency, gross_amount::float8, refunded_amount::float8, net_amount::float8, payments::int
       from rowgate.revenue_by_day`,
    );
    const key = byKey('organization_id', 'day', 'currency');
    expect(rows.sort(key)).toEqual([...expected.values()].sort(key));
    expect(rows.length).toBeGreaterThanOrEqual(4); // A and E, today and three days ago
  });

  test("orders_by_day: the API's orders counted per organization, UTC day and status", async () => {
    const orders = await listAll('/v1/orders/', readToken);
    const expected = new Map<string, { organization_id: string; day: string; status: string; orders: number; amount: number }>();
    for (const o of orders) {
      const day = new Date(o.created_at).toISOString().slice(0, 10);
      const key = `${o.organization_id}|${day}|${o.status}`;
      const row = expected.get(key) ?? { organization_id: o.organization_id, day, status: o.status, orders: 0, amount: 0 };
      row.orders += 1;
      row.amount += o.amount;
      expected.set(key, row);
    }
    const rows = await sql('select organization_id, day::text as day, status, orders::int, amount::float8 from rowgate.orders_by_day');
    const key = byKey('organization_id', 'day', 'status');
    expect(rows.sort(key)).toEqual([...expected.values()].sort(key));
  });

  test('COPY (columns) TO STDOUT, as psql \\copy does it, gives the same rows as SELECT: RLS applies', async () => {
    const copied = (await copyOut(client, 'copy rowgate.products (id) to stdout')).trim().split('\n').sort();
    const selected = (await sql('select id from rowgate.products')).map((r) => r.id).sort();
    expect(copied).toEqual(selected);
    expect(copied.length).toBe(6); // two live products in each of A, B and E
    // every column, as `\\copy rowgate.products to file` asks: the same rows, deleted_at empty
    const whole = (await copyOut(client, 'copy rowgate.products to stdout')).trim().split('\n');
    expect(whole.map((line) => line.split('\t')[0]).sort()).toEqual(selected);
    const columns = (
      await sql(
        `select attname from pg_attribute where attrelid = 'rowgate.products'::regclass and attnum > 0 and not attisdropped order by attnum`,
      )
    ).map((r) => r.attname);
    const deletedAt = columns.indexOf('deleted_at');
    expect(deletedAt).toBeGreaterThan(0);
    expect(whole.map((line) => line.split('\t')[deletedAt])).toEqual(whole.map(() => '\\N'));
  });
});

describe('writes fail', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = await connect(analyst.database_url);
  });
  afterAll(async () => client?.end());

  const tables = [
    'organizations',
    'memberships',
    'products',
    'customers',
    'customer_members',
    'orders',
    'transactions',
    'refunds',
    'accounts',
    'payout_accounts',
    'users',
    'personal_access_tokens',
    'organization_access_tokens',
    'roles',
    'role_permissions',
    'permissions',
  ];
  /** a column of each table, for UPDATE … SET c = c */
  const column = (table: string) => (table === 'role_permissions' ? 'role' : ['roles', 'permissions'].includes(table) ? 'name' : 'id');
  test.for(tables)('insert, update, delete on rowgate.%s, with or without write scopes set', async (table) => {
    const before = await app.sql(`select md5(string_agg(t::text, ',' order by t::text)) as digest from rowgate.${table} t`);
    await expectDenied(client, `insert into rowgate.${table} default values`);
    await expectDenied(client, `update rowgate.${table} set ${column(table)} = ${column(table)}`);
    await expectDenied(client, `delete from rowgate.${table}`);
    await client.query('begin');
    try {
      await client.query(`select set_config('rowgate.scopes', $1, true)`, [
        'products_write customers_write orders_write organizations_write members_write',
      ]);
      await expectDenied(client, `delete from rowgate.${table}`);
    } finally {
      await client.query('rollback');
    }
    expect(await app.sql(`select md5(string_agg(t::text, ',' order by t::text)) as digest from rowgate.${table} t`)).toEqual(before);
  });

  test('the write functions are not theirs: create_order, create_refund, create_organization, delete_resource', async () => {
    const [product] = await app.sql('select id from rowgate.products where organization_id = $1 and deleted_at is null limit 1', [org.A]);
    const [customer] = await app.sql('select id from rowgate.customers where organization_id = $1 and deleted_at is null limit 1', [org.A]);
    await expectDenied(client, 'select * from rowgate.create_order($1, $2, null, null, null)', [product.id, customer.id]);
    const [order] = await app.sql(`select id from rowgate.orders where organization_id = $1 and status = 'paid' limit 1`, [org.A]);
    await expectDenied(client, `select * from rowgate.create_refund($1, 1, 'other')`, [order.id]);
    expect(await app.sql('select count(*)::int as n from rowgate.refunds where order_id = $1', [order.id])).toEqual([{ n: 0 }]);
    await expectDenied(client, `select rowgate.create_organization('Mine', $1)`, [`mine-${randomUUID().slice(0, 8)}`]);
    await expectDenied(client, `select rowgate.delete_resource('product', $1)`, [product.id]);
    expect(await app.sql('select deleted_at from rowgate.products where id = $1', [product.id])).toEqual([{ deleted_at: null }]);
  });

  test('COPY … FROM STDIN is refused before any row is read', async () => {
    await expectDenied(client, 'copy rowgate.products (organization_id, name, price_amount, price_currency) from stdin');
  });

  // PostgreSQL grants lo_create/lo_creat/lo_from_bytea to PUBLIC, in every database. Fails until a
  // superuser runs, in the rowgate database: revoke execute on function pg_catalog.lo_create(oid),
  // pg_catalog.lo_creat(integer), pg_catalog.lo_from_bytea(oid, bytea) from public; (docs/operations.md)
  test('no large objects: nothing of theirs is stored in the database', async () => {
    await expectDenied(client, 'select lo_create(0)');
    await expectDenied(client, `select lo_from_bytea(0, '\\x00'::bytea)`);
    await expectDenied(client, 'select lo_creat(-1)');
  });
});

describe('bypass attempts fail', () => {
  /** what ann's analyst sees with no tricks: the baseline every attempt is compared with */
  let baseline: { products: string[]; organizations: string[] };
  const probe = async (client: pg.Client) => ({
    products: (await client.query('select id from rowgate.products order by id')).rows.map((r) => r.id),
    organizations: (await client.query('select id from rowgate.organizations order by id')).rows.map((r) => r.id),
  });
  const session = async <T>(run: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = await connect(analyst.database_url);
    try {
      return await run(client);
    } finally {
      await client.end();
    }
  };
  beforeAll(async () => {
    baseline = await session(probe);
    expect(baseline.organizations).toEqual([org.A, org.B, org.E].sort());
  });

  test("1. session settings naming another user (bob), with all scopes: still ann's rows", async () => {
    await session(async (client) => {
      await client.query(
        `select set_config('rowgate.subject_kind', 'user', false), set_config('rowgate.subject_id', $1, false),
        set_config('rowgate.scopes', 'organizations_read organizations_write products_read products_write finance:read', false)`,
        [bob.id],
      );
      expect(await probe(client)).toEqual(baseline);
      expect((await client.query('select rowgate_hidden.current_user_id() as id')).rows).toEqual([{ id: ann.id }]);
    });
  });

  test('2. the same settings transaction-local, as the API sets them', async () => {
    await session(async (client) => {
      await client.query('begin');
      await client.query(
        `select set_config('rowgate.subject_kind', 'user', true), set_config('rowgate.subject_id', $1, true),
        set_config('rowgate.scopes', 'products_write', true)`,
        [bob.id],
      );
      expect(await probe(client)).toEqual(baseline);
      await expectDenied(client, `update rowgate.products set name = 'mine'`);
      await client.query('rollback');
    });
  });

  test("3. settings naming organization C as an Organization subject: still ann's rows", async () => {
    await session(async (client) => {
      await client.query(`set rowgate.subject_kind = 'organization'`);
      await client.query(`select set_config('rowgate.subject_id', $1, false)`, [org.C]);
      expect(await probe(client)).toEqual(baseline);
      expect((await client.query('select rowgate_hidden.current_subject_kind() as kind')).rows).toEqual([{ kind: 'user' }]);
    });
  });

  test('4. SET ROLE to any API role or the superuser is refused', async () => {
    await session(async (client) => {
      for (const role of [
        'rowgate_user',
        'rowgate_authenticator',
        'rowgate_owner',
        'rowgate_organization',
        'rowgate_customer',
        'rowgate_member',
        'rowgate_anonymous',
        'postgres',
      ]) {
        await expectDenied(client, `set role ${role}`);
      }
      expect((await client.query('select current_user::text as who')).rows).toEqual([{ who: analyst.login }]);
    });
  });

  test('5. SET SESSION AUTHORIZATION to the authenticator (whose settings are trusted) is refused', async () => {
    await session(async (client) => {
      await expectDenied(client, 'set session authorization rowgate_authenticator');
      await expectDenied(client, 'set session authorization rowgate_owner');
    });
  });

  test('6. SET ROLE rowgate_analyst is refused too (its membership has SET FALSE); identity is the login anyway', async () => {
    await session(async (client) => {
      await expectDenied(client, 'set role rowgate_analyst');
      await client.query(`select set_config('rowgate.subject_id', $1, false)`, [bob.id]);
      expect(await probe(client)).toEqual(baseline);
    });
  });

  test("7. the secrets are out of reach: sessions, token hashes, OAuth2 tokens, the analysts table, a web session's own tokens", async () => {
    await session(async (client) => {
      for (const table of [
        'rowgate_private.sessions',
        'rowgate_private.access_token_hashes',
        'rowgate_private.oauth2_access_tokens',
        'rowgate_private.analysts',
        'rowgate_private.scopes',
      ]) {
        await expectDenied(client, `select * from ${table}`);
      }
      // listed through a web session only (SPEC §4); organization access tokens' metadata is the API's to a
      // user who manages them, and so the analyst's (test above), as their events always were
      await expectDenied(client, 'select * from rowgate.personal_access_tokens');
    });
  });

  test('8. rowgate_private.authenticate (and the token issuers) cannot be called', async () => {
    await session(async (client) => {
      await expectDenied(client, `select * from rowgate_private.authenticate('web_session', $1)`, [Buffer.alloc(32)]);
      await expectDenied(client, `select * from rowgate_private.issue_user_session($1, $2, interval '1 day')`, [bob.id, Buffer.alloc(32)]);
      await expectDenied(client, `select rowgate.create_personal_access_token('x', '{user:write}', null, $1)`, [Buffer.alloc(32)]);
    });
  });

  test("9. security-definer resolution with another organization's ids is refused", async () => {
    await session(async (client) => {
      await expectDenied(client, `select rowgate_hidden.resource_organization_id('organization', $1)`, [org.C]);
      // authorize() and its reachable-only lookup answer nothing for an organization the analyst does not reach
      const { rows } = await client.query(`select * from rowgate_hidden.authorize('organization', $1, 'read')`, [org.C]);
      expect(rows).toEqual([{ organization_id: null, denial: null }]);
      const { rows: lookup } = await client.query(`select rowgate_hidden.reachable_resource_organization_id('organization', $1) as id`, [
        org.C,
      ]);
      expect(lookup).toEqual([{ id: null }]);
    });
  });

  test('10. security-definer writes aimed at another organization: add_member, create_account, create_customer_session', async () => {
    await session(async (client) => {
      await expectDenied(client, `select rowgate.add_member($1, $2, 'admin')`, [org.C, ann.email]);
      await expectDenied(client, `select rowgate.create_account($1, 'US', 'usd')`, [org.C]);
      await expectDenied(client, `select * from rowgate.create_customer_session(gen_random_uuid(), null, $1)`, [Buffer.alloc(32)]);
      await expectDenied(client, `select * from rowgate.create_impersonation_session($1, $2)`, [bob.id, Buffer.alloc(32)]);
    });
    expect(
      await app.sql('select count(*)::int as n from rowgate.memberships where organization_id = $1 and user_id = $2', [org.C, ann.id]),
    ).toEqual([{ n: 0 }]);
  });

  test('11. the helpers it may call answer for ann only, whatever ids it passes', async () => {
    await session(async (client) => {
      await client.query(`select set_config('rowgate.subject_id', $1, false)`, [bob.id]);
      const { rows } = await client.query(
        `select rowgate_hidden.current_organization_ids() as orgs, rowgate_hidden.has_permission($1, 'products:write') as c_write,
           rowgate_hidden.current_customer_id() as customer, rowgate_hidden.role_permission_denial($1, 'products:write') is not null as c_denied`,
        [org.C],
      );
      expect(rows[0].orgs.sort()).toEqual([org.A, org.B, org.E].sort());
      expect(rows[0]).toMatchObject({ c_write: false, customer: null, c_denied: true });
    });
  });

  test('12. the finance policy helper tells nothing about an organization the user does not reach', async () => {
    // finance_denial is a security definer granted to analysts (their RLS uses it): for
    // an unreachable organization it must answer as for one that does not exist, not
    // reveal whether C exists, has an account, or who administers it (its account
    // lookup is limited to rowgate_hidden.current_organization_ids()).
    await session(async (client) => {
      const { rows } = await client.query(
        `select rowgate_hidden.finance_denial($1, false) as c, rowgate_hidden.finance_denial(gen_random_uuid(), false) as nothing,
           rowgate_hidden.finance_read_denial($1) as c_read, rowgate_hidden.policy_denial($1, 'finance_read') as c_policy`,
        [org.C],
      );
      expect(rows[0]).toEqual({ c: rows[0].nothing, nothing: rows[0].nothing, c_read: rows[0].nothing, c_policy: rows[0].nothing });
    });
  });

  test('13. CREATE FUNCTION, CREATE TABLE, CREATE TEMP TABLE, CREATE SCHEMA, CREATE EXTENSION: all refused', async () => {
    await session(async (client) => {
      for (const schema of ['public', 'rowgate', 'rowgate_hidden']) {
        await expectDenied(client, `create function ${schema}.current_user_id() returns uuid language sql as $$ select null::uuid $$`);
        await expectDenied(client, `create table ${schema}.mine (x int)`);
        await expectDenied(client, `create view ${schema}.mine as select 1 as x`);
      }
      await expectDenied(client, 'create temp table mine (x int)');
      await expectDenied(client, 'create function pg_temp.mine() returns int language sql as $$ select 1 $$');
      await expectDenied(client, 'create schema mine');
      await expectDenied(client, 'create extension if not exists dblink');
    });
  });

  test('14. COPY … TO a server file or a program is refused, and so is reading server files', async () => {
    await session(async (client) => {
      await expectDenied(client, `copy (select id from rowgate.products) to '${path.join(tmpdir(), `rowgate-${randomUUID()}.csv`)}'`);
      await expectDenied(client, `copy (select 1) to program 'true'`);
      await expectDenied(client, `select pg_read_file('/etc/passwd')`);
    });
  });

  test('15. ALTER ROLE self: no attributes, no settings, no other roles', async () => {
    await session(async (client) => {
      const self = pg.escapeIdentifier(analyst.login);
      for (const change of ['superuser', 'bypassrls', 'createrole', 'createdb', 'replication']) {
        await expectDenied(client, `alter role ${self} ${change}`);
      }
      await expectDenied(client, `alter role ${self} set rowgate.subject_id = '${bob.id}'`);
      await expectDenied(client, `grant rowgate_user to ${self}`);
      await expectDenied(client, `grant rowgate_authenticator to ${self}`);
    });
  });

  test('16. what the role may touch is an allow-list: read-only relations, a few security-definer helpers', async () => {
    const [grants] = await superuser(
      `select
         array(select c.oid::regclass::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_toast%'
             and has_any_column_privilege($1, c.oid, 'select') order by 1) as readable,
         array(select c.oid::regclass::text from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg\\_toast%' and c.relkind in ('r', 'v', 'm', 'p', 'f')
             and (has_table_privilege($1, c.oid, 'insert, update, delete, truncate, references, trigger')
               or has_any_column_privilege($1, c.oid, 'insert, update, references')) order by 1) as writable,
         array(select p.oid::regprocedure::text from pg_proc p join pg_namespace n on n.oid = p.pronamespace
           where n.nspname not in ('pg_catalog', 'information_schema') and p.prosecdef
             and has_function_privilege($1, p.oid, 'execute') order by 1) as definers,
         array(select n.nspname::text from pg_namespace n where has_schema_privilege($1, n.oid, 'create') order by 1) as creatable_schemas,
         has_database_privilege($1, current_database(), 'create') as create_schema,
         has_database_privilege($1, current_database(), 'temporary') as temporary`,
      [analyst.login],
    );
    expect(grants).toEqual({
      readable: [
        'rowgate.accounts',
        'rowgate.colleagues',
        'rowgate.customer_members',
        'rowgate.customers',
        'rowgate.denials',
        'rowgate.event_clients',
        'rowgate.events',
        'rowgate.invitations',
        'rowgate.memberships',
        'rowgate.orders',
        'rowgate.orders_by_day',
        'rowgate.organization_access_tokens',
        'rowgate.organization_roles',
        'rowgate.organizations',
        'rowgate.payout_accounts',
        'rowgate.permissions',
        'rowgate.products',
        'rowgate.refunds',
        'rowgate.request_log',
        'rowgate.revenue_by_day',
        'rowgate.role_permissions',
        'rowgate.roles',
        // the organization's SQL logins, for analysts of users with organization:manage (SPEC §24)
        'rowgate.sql_credentials',
        'rowgate.transactions',
        'rowgate.users',
        'rowgate.webhook_attempts',
        'rowgate.webhook_endpoints',
        // what each operation needs and how it is checked (SPEC §20): reference data
        'rowgate_hidden.operations',
      ],
      writable: [],
      definers: [
        'rowgate_hidden.analyst_scopes()',
        'rowgate_hidden.analyst_user_id()',
        'rowgate_hidden.current_colleague_ids()',
        'rowgate_hidden.current_customer_id()',
        'rowgate_hidden.current_organization_ids(text)',
        // the analyst's own permissions and address (SPEC §21)
        'rowgate_hidden.current_permissions(uuid)',
        // the analyst's own role, only in organizations it reaches (rowgate.check's basis)
        'rowgate_hidden.current_role_in(uuid)',
        'rowgate_hidden.current_user_email()',
        'rowgate_hidden.finance_denial(uuid,boolean)',
        // the names beside an invitation the analyst may see
        'rowgate_hidden.invitation_names(uuid)',
        // whether an invitation is the analyst's own to answer (rowgate.check of accept and decline)
        'rowgate_hidden.invitee_invitation_found(uuid)',
        // why a member's removal is refused, in organizations the analyst reaches (rowgate.check)
        'rowgate_hidden.member_removal_denial(uuid,uuid)',
        // whether an organization whose finances the analyst may read has an account (rowgate.check)
        'rowgate_hidden.organization_account_exists(uuid)',
        // counts only over the organizations the subject reaches
        'rowgate_hidden.organization_row_count(text,uuid[])',
        // the organization of a resource, only when the analyst reaches it (rowgate.check's lookups)
        'rowgate_hidden.reachable_resource_organization_id(text,uuid)',
        'rowgate_hidden.reachable_resource_organization_ids(text,uuid[])',
        // an organization's SQL login's own organization and scopes, by session_user (SPEC §24): null for an analyst
        'rowgate_hidden.sql_login_organization_id()',
        'rowgate_hidden.sql_login_scopes()',
        // the names of the scopes a web session carries (rowgate.check answers as one)
        'rowgate_hidden.web_session_scopes()',
      ],
      creatable_schemas: [],
      create_schema: false,
      temporary: false,
    });
  });

  test('17. statistics of the RLS tables stay hidden (pg_stats), even after ANALYZE', async () => {
    await app.sql('analyze rowgate.products, rowgate.customers, rowgate.orders');
    await session(async (client) => {
      const { rows } = await client.query(`select tablename, attname from pg_stats where schemaname = 'rowgate'`);
      expect(rows).toEqual([]);
    });
  });
});

describe('the binding decides', () => {
  test("a deleted user's analyst sees nothing", async () => {
    const carol = await app.user();
    const organization = await app.organization(carol.id);
    await app.product(organization.id);
    const carolAnalyst = await grant(carol.id, 'carol');
    const client = await connect(carolAnalyst.database_url);
    try {
      expect((await client.query('select count(*)::int as n from rowgate.products')).rows).toEqual([{ n: 1 }]);
      await app.sql('update rowgate.users set deleted_at = now() where id = $1', [carol.id]);
      expect((await client.query('select count(*)::int as n from rowgate.products')).rows).toEqual([{ n: 0 }]);
      expect((await client.query('select rowgate_hidden.current_user_id() as id')).rows).toEqual([{ id: null }]);
    } finally {
      await client.end();
    }
  });

  test('a role in rowgate_analyst without a binding sees nothing', async () => {
    const login = loginName('unbound');
    made.add(login);
    const password = randomBytes(18).toString('base64url');
    await superuser(`create role ${pg.escapeIdentifier(login)} login password ${pg.escapeLiteral(password)} in role rowgate_analyst`);
    const url = new URL(analyst.database_url);
    url.username = login;
    url.password = password;
    const client = await connect(url.toString());
    try {
      await client.query(`select set_config('rowgate.subject_id', $1, false), set_config('rowgate.subject_kind', 'user', false)`, [ann.id]);
      expect((await client.query('select count(*)::int as n from rowgate.products')).rows).toEqual([{ n: 0 }]);
      expect((await client.query('select rowgate_hidden.current_subject_kind() as kind')).rows).toEqual([{ kind: null }]);
    } finally {
      await client.end();
    }
  });
});

describe("an analyst's limits (SPEC §15)", () => {
  /** the role's connection limit and settings, as PostgreSQL keeps them */
  const roleLimits = async (login: string) =>
    (
      await superuser(
        `select r.rolconnlimit as connection_limit,
           (select s.setconfig from pg_db_role_setting s where s.setrole = r.oid and s.setdatabase = 0) as settings
         from pg_roles r where r.rolname = $1`,
        [login],
      )
    )[0];
  /** waits until the analyst's session shows `state` in pg_stat_activity for longer than `ms` (what the limits measure) */
  async function stateFor(login: string, state: string, ms: number) {
    for (;;) {
      const rows = await superuser(
        `select 1 from pg_stat_activity where usename = $1 and state = $2
           and coalesce(case when state = 'active' then query_start else state_change end, now()) < clock_timestamp() - make_interval(secs => $3 / 1000.0)`,
        [login, state, ms],
      );
      if (rows.length) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  /** what the server runs every second, as the server's login runs it */
  const enforce = async () => (await app.pool.query('select cancelled, terminated from rowgate_private.enforce_analyst_limits()')).rows[0];

  test('analysts grant: 5 connections, 60 s statements, 60 s idle transactions by default; its options choose others', async () => {
    // and a whole transaction's bound where PostgreSQL has one (17+)
    const [{ version }] = (await superuser(`select current_setting('server_version_num')::int as version`)) as [{ version: number }];
    const whole = version >= 170000 ? ['transaction_timeout=15min'] : [];
    expect(await roleLimits(analyst.login)).toEqual({
      connection_limit: 5,
      settings: ['statement_timeout=60000', 'idle_in_transaction_session_timeout=60000', ...whole],
    });
    const chosen = await grant(ann.id, 'chosen', [
      '--connection-limit',
      '2',
      '--statement-timeout',
      '3',
      '--idle-in-transaction-timeout',
      '4',
    ]);
    expect(await roleLimits(chosen.login)).toEqual({
      connection_limit: 2,
      settings: ['statement_timeout=3000', 'idle_in_transaction_session_timeout=4000', ...whole],
    });
    expect(
      await app.sql(
        'select connection_limit, statement_timeout_ms, idle_in_transaction_timeout_ms from rowgate_private.analysts where login = $1',
        [chosen.login],
      ),
    ).toEqual([{ connection_limit: 2, statement_timeout_ms: 3000, idle_in_transaction_timeout_ms: 4000 }]);
  });

  test('an analyst holding its connection limit plus one cannot make the API answer 503', async () => {
    const holder = await grant(ann.id, 'holder');
    const held = await Promise.all(Array.from({ length: 5 }, () => connect(holder.database_url)));
    try {
      const sixth = await connect(holder.database_url).then(
        async (c) => (await c.end(), null),
        (e: { code?: string }) => e,
      );
      expect(sixth?.code).toBe('53300'); // too many connections for role
      // the pool opens new connections for these (more than it holds idle)
      const answers = await Promise.all(Array.from({ length: 12 }, () => app.get('/v1/organizations/?limit=1', { token: readToken })));
      expect(answers.map((a) => a.status)).toEqual(Array(12).fill(200));
    } finally {
      await Promise.all(held.map((c) => c.end()));
    }
  });

  test('a statement past its timeout is cancelled even when the session set statement_timeout = 0', async () => {
    const slow = await grant(ann.id, 'slow', ['--statement-timeout', '1']);
    const client = await connect(slow.database_url);
    try {
      await client.query('set statement_timeout = 0');
      const sleeping = client.query('select pg_sleep(600)').then(
        () => null,
        (e: { code?: string }) => e,
      );
      await stateFor(slow.login, 'active', 1000);
      expect(await enforce()).toEqual({ cancelled: 1, terminated: 0 });
      expect((await sleeping)?.code).toBe('57014');
      expect((await client.query('select 1 as alive')).rows).toEqual([{ alive: 1 }]); // the session stays
    } finally {
      await client.end();
    }
  });

  test('a transaction idle past its timeout, or an advisory lock held, ends the session (migrations are not blocked)', async () => {
    const idle = await grant(ann.id, 'idle', ['--idle-in-transaction-timeout', '1']);
    const client = await connect(idle.database_url);
    await client.query('set idle_in_transaction_session_timeout = 0');
    await client.query('begin');
    await client.query('select 1');
    await stateFor(idle.login, 'idle in transaction', 1000);
    expect(await enforce()).toEqual({ cancelled: 0, terminated: 1 });
    await expect(client.query('select 1')).rejects.toThrow();
    await client.end().catch(() => {});

    // the migrations' advisory lock (graphile-migrate's), held by an analyst: the migrations end its session and run
    const locker = await connect(idle.database_url);
    await locker.query('select pg_advisory_lock(4727445306447283)');
    await migrateDatabase(app.ownerUrl);
    await expect(locker.query('select 1')).rejects.toThrow();
    await locker.end().catch(() => {});
  });

  // a DO block that catches each cancel would otherwise hold its locks, and a migration's ALTER TABLE (then the
  // API's reads) would wait behind it
  test('a statement that catches its cancel ends its session 5 s past its timeout', async () => {
    const stubborn = await grant(ann.id, 'stubborn', ['--statement-timeout', '1']);
    const client = await connect(stubborn.database_url);
    try {
      await client.query('set statement_timeout = 0');
      const holding = client
        .query(
          `do $$ begin
             perform count(*) from rowgate.products;
             for i in 1..600 loop
               begin perform pg_sleep(0.1); exception when query_canceled then null; end;
             end loop;
           end $$`,
        )
        .then(
          () => null,
          (e: { code?: string }) => e,
        );
      await stateFor(stubborn.login, 'active', 1000);
      expect(await enforce()).toEqual({ cancelled: 1, terminated: 0 });
      await stateFor(stubborn.login, 'active', 6000);
      expect(await enforce()).toEqual({ cancelled: 0, terminated: 1 });
      expect((await holding)?.code).toBe('57P01'); // admin_shutdown: the session ended
    } finally {
      await client.end().catch(() => {});
    }
  });

  test('a transaction of short statements ends once it is longer than both timeouts together', async () => {
    const busy = await grant(ann.id, 'busy', ['--statement-timeout', '1', '--idle-in-transaction-timeout', '1']);
    const client = await connect(busy.database_url);
    const started = Date.now();
    let ended: { code?: string } | undefined;
    try {
      await client.query('begin');
      await client.query('select count(*) from rowgate.products');
      // never a statement nor a pause past its limit: the transaction's own length is what ends it
      while (!ended && Date.now() - started < 10_000) {
        ended = await client.query('select pg_sleep(0.3)').then(
          () => undefined,
          (e: { code?: string }) => e,
        );
        if (!ended) await enforce();
      }
      // ended in its statement (admin_shutdown) or between two (the connection gone)
      expect(ended, 'the transaction was not ended').toBeDefined();
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_000);
      // its process exits after the signal
      const gone = async () => (await superuser('select 1 from pg_stat_activity where usename = $1', [busy.login])).length === 0;
      for (const until = Date.now() + 5_000; !(await gone()) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
      expect(await gone()).toBe(true);
    } finally {
      await client.end().catch(() => {});
    }
  });

  test('a session in a maintenance database (postgres, template1) ends: it held CREATE DATABASE and a role drop back', async () => {
    for (const database of ['postgres', 'template1']) {
      const url = new URL(analyst.database_url);
      url.pathname = `/${database}`;
      const client = await connect(url.toString());
      const ended = new Promise((resolve) => client.on('error', resolve));
      expect(await enforce(), database).toEqual({ cancelled: 0, terminated: 1 });
      await ended;
      await client.end().catch(() => {});
    }
  });

  test('LISTEN tells an analyst nothing of other tenants: no write notifies anything', async () => {
    const listener = await connect(analyst.database_url);
    const payloads: string[] = [];
    listener.on('notification', (m) => payloads.push(m.payload ?? ''));
    await listener.query('listen rowgate_webhooks');
    const carol = await app.user();
    const carolsOrganization = (await app.organization(carol.id, { name: 'carol' })).id;
    await app.sql(
      `insert into rowgate.webhook_endpoints (organization_id, url, event_types) values ($1, 'https://carol.example/hook', '{product.created}')`,
      [carolsOrganization],
    );
    const product = await app.product(carolsOrganization);
    await listener.query('select 1'); // a round trip: what was committed before it has arrived
    // the webhook senders poll: a write that queues a delivery notifies nobody
    expect(payloads).toEqual([]);
    for (const named of [carol.id, carolsOrganization, product]) expect(JSON.stringify(payloads)).not.toContain(named);
    await expectDenied(listener, 'select * from rowgate_private.enforce_analyst_limits()');
    await listener.end();
  });
});

describe('analysts revoke', () => {
  test('refuses roles that are not bound analysts: the API roles, the superuser, an unbound member', async () => {
    for (const login of ['rowgate_user', 'rowgate_authenticator', 'postgres', 'nobody_at_all']) {
      const run = await cli(['analysts', 'revoke', '--login', login]);
      expect(run, login).toEqual({ code: 2, stdout: '', stderr: expect.stringMatching(/not an analyst|API's own roles/) });
    }
    expect(
      await superuser(
        `select rolname::text from pg_roles where rolname in ('rowgate_user', 'rowgate_authenticator', 'postgres') order by 1`,
      ),
    ).toEqual([{ rolname: 'postgres' }, { rolname: 'rowgate_authenticator' }, { rolname: 'rowgate_user' }]);
  });

  // a role whose drop fails (something of its own in another database) must not be left unbound and able to log in,
  // with no limits any more
  test('a role that cannot be dropped is left unable to log in, and still bound (still limited)', async () => {
    const stuck = await grant(ann.id, 'stuck');
    // something of its own in another database, which `drop owned` here cannot reach
    const table = `analyst_owned_${randomBytes(4).toString('hex')}`;
    await superuser(`create table ${table} (x int); alter table ${table} owner to ${pg.escapeIdentifier(stuck.login)}`, [], 'postgres');
    try {
      const run = await cli(['analysts', 'revoke', '--login', stuck.login]);
      expect(run).toMatchObject({ code: 2, stdout: '', stderr: expect.stringMatching(/can no longer log in and is still bound/) });
      expect(await superuser('select rolcanlogin from pg_roles where rolname = $1', [stuck.login])).toEqual([{ rolcanlogin: false }]);
      expect(await app.sql('select 1 as bound from rowgate_private.analysts where login = $1', [stuck.login])).toEqual([{ bound: 1 }]);
      const error = await connect(stuck.database_url).then(
        async (c) => (await c.end(), null),
        (e: { code?: string }) => e,
      );
      expect(error?.code).toMatch(/^28/);
    } finally {
      await superuser(`drop table ${table}`, [], 'postgres');
    }
    // once what held it is gone, revoke finishes
    expect(await cli(['analysts', 'revoke', '--login', stuck.login])).toMatchObject({ code: 0, stderr: '' });
    expect(await superuser('select 1 from pg_roles where rolname = $1', [stuck.login])).toEqual([]);
  });

  test('unbinds and drops the role, ends its open session; the URL no longer logs in', async () => {
    const open = await connect(analyst.database_url);
    const run = await cli(['analysts', 'revoke', '--login', analyst.login]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({ login: analyst.login, user_id: ann.id, role_dropped: true, sessions_terminated: 1 });
    await expect(open.query('select 1')).rejects.toThrow();
    await open.end().catch(() => {});

    expect(await superuser('select 1 from pg_roles where rolname = $1', [analyst.login])).toEqual([]);
    expect(await app.sql('select 1 from rowgate_private.analysts where login = $1', [analyst.login])).toEqual([]);
    const error = await connect(analyst.database_url).then(
      async (c) => (await c.end(), null),
      (e: { code?: string }) => e,
    );
    expect(error?.code).toMatch(/^28/); // invalid_authorization_specification / invalid_password

    const again = await cli(['analysts', 'revoke', '--login', analyst.login]);
    expect(again).toEqual({ code: 2, stdout: '', stderr: expect.stringMatching(/not an analyst of this database/) });
  });
});
