// Access classes decided in the database (SPEC §4, §13). What
// REST keeps to web sessions (payout accounts, changing the user) no token
// reaches through GraphQL or SQL either, because RLS and the SQL functions check
// the credential's kind (rowgate_hidden.current_credential_kind()); and nobody
// but the user itself reads its platform-admin flag (rowgate_private.platform_admins):
// not a colleague through GraphQL, not an organization, not an analyst.
import { mkdtemp, copyFile, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { grantAnalyst, revokeAnalyst } from '../src/db/analysts.ts';
import { ensureDatabase, migrateDatabase, projectRoot } from '../src/db/setup.ts';
import type { CredentialKind } from '../src/auth/tokens.ts';
import { withDatabase } from './database-server.ts';
import { startTestApp, type RequestOptions, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let authenticator: pg.Pool;
let allScopes: string[];
let _readScopes: string[];

// The world: organization A, whose account adminA administers, with two live
// payout accounts and a deleted one; B with its own. platformAdmin is a platform
// admin and a member of A (a colleague of adminA and memberA).
const w = {} as {
  adminA: TestUser;
  memberA: TestUser;
  platformAdmin: TestUser;
  adminB: TestUser;
  A: string;
  B: string;
  payoutsA: string[];
  payoutB: string;
  impersonation: string;
};

const payoutAccount = async (organizationId: string, deleted = false) =>
  (
    await app.sql<{ id: string }>(
      `insert into rowgate.payout_accounts (organization_id, type, country, currency, deleted_at)
       values ($1, 'bank_account', 'US', 'usd', case when $2 then now() end) returning id`,
      [organizationId, deleted],
    )
  )[0]!.id;

beforeAll(async () => {
  app = await startTestApp();
  authenticator = new pg.Pool({ connectionString: app.authenticatorUrl, max: 2 });
  // the database is dropped at close while a client may still be closing
  authenticator.on('error', () => {});
  authenticator.on('connect', (client) => client.on('error', () => {}));
  [{ scopes: allScopes }] = (await app.sql('select rowgate_private.all_scopes() as scopes')) as [{ scopes: string[] }];
  [{ scopes: _readScopes }] = (await app.sql('select rowgate_private.read_scopes() as scopes')) as [{ scopes: string[] }];
  w.adminA = await app.user({ name: 'Admin A' });
  w.memberA = await app.user({ name: 'Member A' });
  w.platformAdmin = await app.user({ name: 'Platform Admin', admin: true });
  w.adminB = await app.user({ name: 'Admin B' });
  w.A = (await app.organization(w.adminA.id)).id;
  w.B = (await app.organization(w.adminB.id)).id;
  await app.membership(w.A, w.memberA.id, 'member');
  await app.membership(w.A, w.platformAdmin.id, 'admin');
  await app.account(w.A, w.adminA.id);
  await app.account(w.B, w.adminB.id);
  w.payoutsA = [await payoutAccount(w.A), await payoutAccount(w.A)].sort();
  await payoutAccount(w.A, true);
  w.payoutB = await payoutAccount(w.B);
  w.impersonation = await app.session(w.adminA.id, { impersonatorId: w.platformAdmin.id, lifetime: '1 hour' });
});
afterAll(async () => {
  await authenticator?.end();
  await app?.close();
});

// ---------------------------------------------------------------------------
// GraphQL

interface GraphqlResult {
  status: number;
  body: { data?: any; errors?: { message: string; extensions?: { code?: string } }[] };
}
const gql = async (query: string, auth: RequestOptions = {}, variables: Record<string, unknown> = {}): Promise<GraphqlResult> =>
  (await app.request('POST', '/graphql', {
    ...auth,
    headers: { accept: 'application/json' },
    body: { query, variables },
  })) as GraphqlResult;

async function data(query: string, auth: RequestOptions = {}, variables: Record<string, unknown> = {}) {
  const result = await gql(query, auth, variables);
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  expect(result.body.errors, JSON.stringify(result.body.errors)).toBeUndefined();
  return result.body.data;
}

const sorted = (ids: string[]) => [...ids].sort();

/** the ids REST lists for a credential that may list them */
async function restPayoutIds(auth: RequestOptions): Promise<string[]> {
  const res = await app.get('/v1/payout-accounts/?limit=100', auth);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return sorted(res.body.items.map((i: { id: string }) => i.id));
}

const PAYOUTS = `query ($id: UUID!) {
  allOrganizations { nodes { rowId } }
  allPayoutAccounts { totalCount nodes { rowId } }
  payoutAccountByRowId(rowId: $id) { rowId }
  organizationByRowId(rowId: $id) { rowId }
}`;
const ORGANIZATION_PAYOUTS = `query ($id: UUID!) { organizationByRowId(rowId: $id) { rowId payoutAccountsByOrganizationId { totalCount nodes { rowId } } } }`;

describe('payout accounts through GraphQL: a web session only (web payouts read)', () => {
  test('a web session of the account admin reads the payout accounts REST lists for it', async () => {
    const auth = { session: w.adminA.session };
    const got = await data(PAYOUTS, auth, { id: w.payoutsA[0] });
    expect(sorted(got.allPayoutAccounts.nodes.map((n: { rowId: string }) => n.rowId))).toEqual(w.payoutsA);
    expect(got.allPayoutAccounts.totalCount).toBe(2);
    expect(got.payoutAccountByRowId).toEqual({ rowId: w.payoutsA[0] });
    expect(await restPayoutIds(auth)).toEqual(w.payoutsA);
    const viaOrganization = await data(ORGANIZATION_PAYOUTS, auth, { id: w.A });
    expect(sorted(viaOrganization.organizationByRowId.payoutAccountsByOrganizationId.nodes.map((n: { rowId: string }) => n.rowId))).toEqual(
      w.payoutsA,
    );
  });

  test('an impersonation session of the account admin (a web session with the read scopes) reads them too', async () => {
    const auth = { session: w.impersonation };
    const got = await data(PAYOUTS, auth, { id: w.payoutsA[0] });
    expect(sorted(got.allPayoutAccounts.nodes.map((n: { rowId: string }) => n.rowId))).toEqual(w.payoutsA);
    expect(await restPayoutIds(auth)).toEqual(w.payoutsA);
  });

  test('a web session of another member of A reads none (the finance-read policy still applies)', async () => {
    const got = await data(PAYOUTS, { session: w.memberA.session }, { id: w.payoutsA[0] });
    expect(got.allPayoutAccounts).toEqual({ totalCount: 0, nodes: [] });
  });

  // every token kind that can hold a payouts scope, each with the scope that opened
  // payout accounts before (SPEC §3: `payouts_read` for organization tokens and
  // PATs, `payouts:read` for user tokens), write scopes too, and organizations_read
  // so that the same query shows the credential itself works
  const tokens: { name: string; kind: CredentialKind; mint: () => Promise<string> }[] = [
    {
      name: 'an OAT with payouts_read',
      kind: 'organization_access_token',
      mint: () => app.oat(w.A, ['payouts_read', 'organizations_read']),
    },
    {
      name: 'an OAT with payouts_write',
      kind: 'organization_access_token',
      mint: () => app.oat(w.A, ['payouts_write', 'organizations_read']),
    },
    {
      name: 'an OAuth2 organization token with payouts_read',
      kind: 'oauth2_organization_token',
      mint: () => app.oauthOrganizationToken(w.adminA.id, w.A, ['payouts_read', 'organizations_read']),
    },
    {
      name: 'an OAuth2 organization token with payouts_write',
      kind: 'oauth2_organization_token',
      mint: () => app.oauthOrganizationToken(w.adminA.id, w.A, ['payouts_write', 'organizations_read']),
    },
    {
      name: "the account admin's PAT with payouts_read",
      kind: 'personal_access_token',
      mint: () => app.pat(w.adminA.id, ['payouts_read', 'organizations_read']),
    },
    {
      name: "the account admin's PAT with payouts:read",
      kind: 'personal_access_token',
      mint: () => app.pat(w.adminA.id, ['payouts:read', 'organizations_read']),
    },
    { name: "the account admin's PAT with every scope", kind: 'personal_access_token', mint: () => app.pat(w.adminA.id, allScopes) },
    {
      name: "the account admin's OAuth2 user token with payouts:read",
      kind: 'oauth2_user_token',
      mint: () => app.oauthUserToken(w.adminA.id, ['payouts:read', 'payouts_read', 'organizations_read']),
    },
  ];
  test.each(tokens)('$name reads none, by id or through its organization; REST refuses it (401)', async ({ mint }) => {
    const token = await mint();
    const got = await data(PAYOUTS, { token }, { id: w.payoutsA[0] });
    // the credential works: it reads its organization
    expect(got.allOrganizations.nodes).toEqual([{ rowId: w.A }]);
    expect(got.allPayoutAccounts).toEqual({ totalCount: 0, nodes: [] });
    expect(got.payoutAccountByRowId).toBeNull();
    const viaOrganization = await data(ORGANIZATION_PAYOUTS, { token }, { id: w.A });
    expect(viaOrganization.organizationByRowId.payoutAccountsByOrganizationId).toEqual({ totalCount: 0, nodes: [] });
    expect((await app.get('/v1/payout-accounts/', { token })).status).toBe(401);
  });

  test('GraphQL publishes no way to create or change payout accounts, nor to change users', async () => {
    const got = await data('{ __schema { mutationType { fields { name } } } }');
    const names: string[] = got.__schema.mutationType.fields.map((f: { name: string }) => f.name);
    expect(names.filter((n) => /payout/i.test(n))).toEqual([]);
    expect(names.filter((n) => /^(update|delete)User/.test(n))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// SQL, as the server runs it: rowgate_authenticator, a subject role and the settings.

interface Subject {
  kind: 'user' | 'organization';
  id: string;
  credential: CredentialKind;
  scopes?: string[];
}

/** Runs `work` in a transaction of rowgate_authenticator that has become `subject`, as the server does; rolled back. */
async function as<T>(subject: Subject, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await authenticator.connect();
  try {
    await client.query('begin');
    await client.query(`set local role ${pg.escapeIdentifier(`rowgate_${subject.kind}`)}`);
    await client.query(
      `select set_config('rowgate.subject_kind', $1, true), set_config('rowgate.subject_id', $2, true),
              set_config('rowgate.scopes', $3, true), set_config('rowgate.credential_kind', $4, true)`,
      [subject.kind, subject.id, (subject.scopes ?? allScopes).join(' '), subject.credential],
    );
    return await work(client);
  } finally {
    await client.query('rollback').catch(() => {});
    client.release();
  }
}

const userTokens = ['personal_access_token', 'oauth2_user_token'] as const;
const organizationTokens = ['organization_access_token', 'oauth2_organization_token'] as const;

/** the error a statement fails with, or null */
const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (e: { code?: string; message: string }) => ({ code: e.code, message: e.message }),
  );

describe('changing the user: a web session only (web user write)', () => {
  const rename = (c: pg.PoolClient, id: string) => c.query(`update rowgate.users set name = 'Renamed' where id = $1`, [id]);

  test('control: a web session holding user:write changes its user', async () => {
    await as({ kind: 'user', id: w.memberA.id, credential: 'web_session' }, async (c) =>
      expect((await rename(c, w.memberA.id)).rowCount).toBe(1),
    );
  });

  test.each(userTokens)('a %s holding user:write changes nothing: the update policy refuses the credential', async (credential) => {
    await as({ kind: 'user', id: w.memberA.id, credential, scopes: ['user:read', 'user:write'] }, async (c) => {
      expect((await rename(c, w.memberA.id)).rowCount).toBe(0);
      // the row is there to read: it is the update that is refused
      expect((await c.query('select id from rowgate.users where id = $1', [w.memberA.id])).rows).toEqual([{ id: w.memberA.id }]);
    });
  });

  test('a credential kind the server never sets (none, or made up) changes nothing either', async () => {
    for (const credential of ['', 'web-session', 'WEB_SESSION'] as unknown as CredentialKind[]) {
      await as({ kind: 'user', id: w.memberA.id, credential }, async (c) =>
        expect((await rename(c, w.memberA.id)).rowCount, credential).toBe(0),
      );
    }
  });

  test('deleting the user stays open to every User credential with user:write (SPEC §9)', async () => {
    for (const credential of ['web_session', ...userTokens] as const) {
      const user = await app.user();
      await as({ kind: 'user', id: user.id, credential, scopes: ['user:read', 'user:write'] }, async (c) =>
        expect((await c.query('select rowgate.delete_current_user() as deleted')).rows, credential).toEqual([{ deleted: true }]),
      );
    }
  });
});

describe('payout accounts in SQL: a web session only', () => {
  const insert = (c: pg.PoolClient, organizationId: string) =>
    c.query(`insert into rowgate.payout_accounts (organization_id, type, country, currency) values ($1, 'stripe', 'US', 'usd')`, [
      organizationId,
    ]);
  const adminA = (credential: CredentialKind): Subject => ({ kind: 'user', id: w.adminA.id, credential });

  test('the account admin with a web session reads, creates and deletes them', async () => {
    await as(adminA('web_session'), async (c) => {
      expect(sorted((await c.query<{ id: string }>('select id from rowgate.payout_accounts')).rows.map((r) => r.id))).toEqual(w.payoutsA);
      expect((await insert(c, w.A)).rowCount).toBe(1);
      await c.query(`select rowgate.delete_resource('payout_account', $1)`, [w.payoutsA[0]]);
      expect((await c.query('select id from rowgate.payout_accounts where id = $1', [w.payoutsA[0]])).rows).toEqual([]);
    });
  });

  const tokenSubjects = [
    ...userTokens.map((credential) => ({ name: `the account admin's ${credential}`, subject: () => adminA(credential) })),
    ...organizationTokens.map((credential) => ({
      name: `organization A's ${credential}`,
      subject: (): Subject => ({ kind: 'organization', id: w.A, credential }),
    })),
  ];
  test.each(tokenSubjects)('$name, with every scope, reads none, creates none, deletes none', async ({ subject }) => {
    await as(subject(), async (c) => {
      expect((await c.query('select id from rowgate.payout_accounts')).rows).toEqual([]);
      expect((await c.query('select count(*)::int as n from rowgate.accounts where organization_id = $1', [w.A])).rows).toEqual([{ n: 1 }]);
    });
    // users: the insert policy refuses (RLS); organizations hold no insert grant on the table at all
    await as(subject(), async (c) =>
      expect(await failure(insert(c, w.A))).toEqual({
        code: '42501',
        message: expect.stringMatching(subject().kind === 'user' ? /row-level security/ : /permission denied/),
      }),
    );
    await as(subject(), async (c) =>
      expect(await failure(c.query(`select rowgate.delete_resource('payout_account', $1)`, [w.payoutsA[1]]))).toEqual({
        code: 'RG403',
        message: 'Payout accounts are managed with a web session only',
      }),
    );
    expect(await app.sql('select deleted_at from rowgate.payout_accounts where id = $1', [w.payoutsA[1]])).toEqual([{ deleted_at: null }]);
  });

  test('the check comes before everything else: an unknown id answers the same refusal, not a 404', async () => {
    await as(adminA('personal_access_token'), async (c) =>
      expect(await failure(c.query(`select rowgate.delete_resource('payout_account', gen_random_uuid())`))).toMatchObject({
        code: 'RG403',
      }),
    );
  });

  test('other resources are deleted by tokens as before (only payout accounts are web-only)', async () => {
    const product = await app.product(w.A);
    await as({ kind: 'organization', id: w.A, credential: 'organization_access_token', scopes: ['products_write'] }, async (c) => {
      await c.query(`select rowgate.delete_resource('product', $1)`, [product]);
      expect((await c.query('select id from rowgate.products where id = $1', [product])).rows).toEqual([]);
    });
  });
});

describe('impersonation: a platform admin with its own web session', () => {
  const impersonate = (c: pg.PoolClient) =>
    c.query('select user_id from rowgate.create_impersonation_session($1, $2)', [w.memberA.id, randomBytes(32)]);

  test('control: with a web session it impersonates', async () => {
    await as({ kind: 'user', id: w.platformAdmin.id, credential: 'web_session' }, async (c) =>
      expect((await impersonate(c)).rows).toEqual([{ user_id: w.memberA.id }]),
    );
  });

  test.each(userTokens)('with a %s holding every scope it does not', async (credential) => {
    await as({ kind: 'user', id: w.platformAdmin.id, credential }, async (c) =>
      expect(await failure(impersonate(c))).toEqual({ code: 'RG403', message: "Impersonation takes a platform admin's web session" }),
    );
  });

  test('a user who is not a platform admin does not, with a web session either', async () => {
    await as({ kind: 'user', id: w.adminA.id, credential: 'web_session' }, async (c) =>
      expect(await failure(impersonate(c))).toEqual({ code: 'RG403', message: 'Only platform admins can impersonate users' }),
    );
  });

  test('REST: the platform admin impersonates with its web session', async () => {
    const res = await app.post('/v1/impersonations/', { user_id: w.memberA.id }, { session: w.platformAdmin.session });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.user_id).toBe(w.memberA.id);
  });
});

describe('rowgate_hidden.current_credential_kind()', () => {
  test('answers the kind the server set, in its own sessions', async () => {
    for (const credential of ['web_session', ...userTokens] as const) {
      await as({ kind: 'user', id: w.memberA.id, credential }, async (c) =>
        expect((await c.query('select rowgate_hidden.current_credential_kind() as kind')).rows).toEqual([{ kind: credential }]),
      );
    }
  });

  test('the owner who sets the setting by hand gets nothing from it', async () => {
    const owner = new pg.Client({ connectionString: app.ownerUrl });
    await owner.connect();
    try {
      await owner.query('begin');
      await owner.query(`select set_config('rowgate.credential_kind', 'web_session', true)`);
      expect((await owner.query('select rowgate_hidden.current_credential_kind() as kind')).rows).toEqual([{ kind: null }]);
      await owner.query('rollback');
    } finally {
      await owner.end();
    }
  });
});

// ---------------------------------------------------------------------------
// The platform-admin flag: the user's own, and nobody else's.

describe('the platform-admin flag', () => {
  test('is no column of rowgate.users; its table is private: no API role, no analyst has any privilege on it', async () => {
    expect(
      await app.sql(
        `select column_name from information_schema.columns where table_schema = 'rowgate' and column_name like '%admin%' order by 1`,
      ),
    ).toEqual([{ column_name: 'admin_id' }]); // rowgate.accounts.admin_id: the account admin, another thing
    const roles = [
      'rowgate_anonymous',
      'rowgate_user',
      'rowgate_organization',
      'rowgate_customer',
      'rowgate_member',
      'rowgate_analyst',
      'rowgate_authenticator',
    ];
    const privileges = await app.sql<{ role: string; any: boolean }>(
      `select r as role, has_table_privilege(r, 'rowgate_private.platform_admins', 'select, insert, update, delete, truncate, references, trigger')
         or has_any_column_privilege(r, 'rowgate_private.platform_admins', 'select, insert, update, references') as any
       from unnest($1::text[]) r`,
      [roles],
    );
    expect(privileges).toEqual(roles.map((role) => ({ role, any: false })));
    // the one helper that reads it answers for the transaction's own user, and only rowgate_user may call it
    expect(
      await app.sql(
        `select r as role, has_function_privilege(r, 'rowgate_hidden.current_user_is_platform_admin()', 'execute') as execute from unnest($1::text[]) r`,
        [roles],
      ),
    ).toEqual(roles.map((role) => ({ role, execute: role === 'rowgate_user' })));
  });

  test('GET /v1/users/me shows the caller its own flag, in the same shape as before', async () => {
    for (const [who, admin] of [
      ['platformAdmin', true],
      ['memberA', false],
    ] as const) {
      const res = await app.get('/v1/users/me', { session: w[who].session });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(['id', 'email', 'name', 'avatar_url', 'is_admin', 'created_at', 'updated_at']);
      expect(res.body).toMatchObject({ id: w[who].id, is_admin: admin });
    }
  });

  test('PATCH /v1/users/me answers the flag too', async () => {
    const admin = await app.user({ admin: true });
    const res = await app.patch('/v1/users/me', { name: 'Still admin' }, { session: admin.session });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ name: 'Still admin', is_admin: true });
  });

  test('the sign-in answer carries it', async () => {
    const email = w.platformAdmin.email;
    const asked = await app.post('/v1/login-code/request', { email });
    expect(asked.status).toBe(202);
    const [message] = await app.outbox(email);
    const code = /code is ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(message!.text)![1]!;
    const res = await app.post('/v1/login-code/authenticate', { email, code, attempt: asked.body.attempt });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body)).toEqual(['id', 'email', 'name', 'avatar_url', 'is_admin', 'created_at', 'updated_at']);
    expect(res.body).toMatchObject({ id: w.platformAdmin.id, is_admin: true });
  });

  test("GraphQL's User has no such field; a colleague's allUsers and allColleagues show no flag of any kind", async () => {
    const type = await data('{ __type(name: "User") { fields { name type { kind name ofType { kind name } } } } }');
    const fields: { name: string; type: { kind: string; name: string | null; ofType: { kind: string; name: string } | null } }[] =
      type.__type.fields;
    expect(fields.map((f) => f.name)).not.toContain('isAdmin');
    const refused = await gql('{ allUsers { nodes { rowId isAdmin } } }', { session: w.memberA.session });
    expect(refused.body.errors?.[0]?.message).toMatch(/Cannot query field "isAdmin" on type "User"/);
    // every scalar field of User and of Colleague, asked by a colleague of the platform admin: no boolean anywhere
    const scalars = fields.filter((f) => (f.type.ofType ?? f.type).kind === 'SCALAR').map((f) => f.name);
    expect(scalars).toContain('email');
    const got = await data(`{ allUsers { nodes { ${scalars.join(' ')} } } allColleagues { nodes { rowId email name } } }`, {
      session: w.memberA.session,
    });
    expect(got.allUsers.nodes.map((n: { rowId: string }) => n.rowId)).toEqual([w.memberA.id]);
    const colleagues: Record<string, unknown>[] = got.allColleagues.nodes;
    expect(colleagues.map((n) => n.rowId).sort()).toEqual(sorted([w.adminA.id, w.memberA.id, w.platformAdmin.id]));
    for (const node of [...got.allUsers.nodes, ...colleagues])
      expect(Object.values(node).filter((v) => typeof v === 'boolean')).toEqual([]);
  });

  test("REST never shows a colleague's flag: the members list names users without it", async () => {
    const res = await app.get(`/v1/organizations/${w.A}/members?limit=100`, { session: w.memberA.session });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).not.toMatch(/admin"?\s*:\s*(true|false)/);
    expect(res.body.items.map((m: { user_id: string }) => m.user_id)).toContain(w.platformAdmin.id);
  });

  test('an organization subject reads no flag (there is none to read)', async () => {
    for (const [sql, code] of [
      ['select is_admin from rowgate.users', '42703'],
      ['select * from rowgate_private.platform_admins', '42501'],
      ['select rowgate_hidden.current_user_is_platform_admin()', '42501'],
    ]) {
      await as({ kind: 'organization', id: w.A, credential: 'organization_access_token' }, async (c) =>
        expect(await failure(c.query(sql!)), sql).toMatchObject({ code }),
      );
    }
  });

  test("rowgate_hidden.current_user_is_platform_admin() is the transaction user's own answer", async () => {
    for (const [who, admin] of [
      ['platformAdmin', true],
      ['memberA', false],
    ] as const) {
      await as({ kind: 'user', id: w[who].id, credential: 'personal_access_token', scopes: ['user:read'] }, async (c) =>
        expect((await c.query('select rowgate_hidden.current_user_is_platform_admin() as admin')).rows, who).toEqual([{ admin }]),
      );
    }
  });

  test('given or taken by an operator in SQL: the answer (and its updated_at) changes on the next request', async () => {
    const user = await app.user();
    const before = (await app.get('/v1/users/me', { session: user.session })).body;
    expect(before.is_admin).toBe(false);
    await app.sql('insert into rowgate_private.platform_admins (user_id) values ($1)', [user.id]);
    const given = (await app.get('/v1/users/me', { session: user.session })).body;
    expect(given).toEqual({ ...before, is_admin: true, updated_at: expect.any(String) });
    expect(Date.parse(given.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
    await app.sql('delete from rowgate_private.platform_admins where user_id = $1', [user.id]);
    const taken = (await app.get('/v1/users/me', { session: user.session })).body;
    expect(taken).toEqual({ ...given, is_admin: false, updated_at: expect.any(String) });
    expect(Date.parse(taken.updated_at)).toBeGreaterThan(Date.parse(given.updated_at));
  });
});

describe('analysts: select * from rowgate.users works and shows no flag', () => {
  const made: string[] = [];

  async function analyst(userId: string): Promise<pg.Client> {
    const login = `${inject('runId')}_acdb_${randomBytes(3).toString('hex')}`;
    made.push(login);
    const granted = await grantAnalyst({ ownerUrl: app.ownerUrl, userId, login });
    const client = new pg.Client({ connectionString: granted.database_url });
    await client.connect();
    return client;
  }
  afterAll(async () => {
    for (const login of made) await revokeAnalyst({ ownerUrl: app.ownerUrl, login }).catch(() => {});
  });

  const USER_COLUMNS = ['id', 'email', 'name', 'avatar_url', 'created_at', 'updated_at', 'deleted_at'];

  test.each([
    ['a member, looking at colleagues who include a platform admin', 'memberA'],
    ['the platform admin itself', 'platformAdmin'],
  ] as const)('%s', async (_name, who) => {
    const client = await analyst(w[who].id);
    try {
      const result = await client.query('select * from rowgate.users');
      expect(result.fields.map((f) => f.name)).toEqual(USER_COLUMNS);
      expect(result.rows.map((r) => r.id)).toEqual([w[who].id]);
      expect(result.rows.every((r) => r.deleted_at === null)).toBe(true);
      const colleagues = await client.query('select * from rowgate.colleagues');
      expect(colleagues.fields.map((f) => f.name)).toEqual(['id', 'email', 'name']);
      expect(colleagues.rows.map((r) => r.id).sort()).toEqual(sorted([w.adminA.id, w.memberA.id, w.platformAdmin.id]));
      expect(await failure(client.query('select is_admin from rowgate.users'))).toMatchObject({ code: '42703' });
      expect(await failure(client.query('select * from rowgate_private.platform_admins'))).toMatchObject({ code: '42501' });
      expect(await failure(client.query('select rowgate_hidden.current_user_is_platform_admin()'))).toMatchObject({ code: '42501' });
    } finally {
      await client.end();
    }
  });

  test("an analyst counts as a web session: the account admin's analyst reads A's payout accounts, and changes nothing", async () => {
    const client = await analyst(w.adminA.id);
    try {
      expect((await client.query('select rowgate_hidden.current_credential_kind() as kind')).rows).toEqual([{ kind: 'web_session' }]);
      const live = sorted(
        (
          await app.sql<{ id: string }>('select id from rowgate.payout_accounts where organization_id = $1 and deleted_at is null', [w.A])
        ).map((r) => r.id),
      );
      expect(sorted((await client.query('select id from rowgate.payout_accounts')).rows.map((r) => r.id))).toEqual(live);
      expect(await failure(client.query(`update rowgate.users set name = 'x'`))).toMatchObject({ code: '42501' });
      expect(
        await failure(
          client.query(
            `insert into rowgate.payout_accounts (organization_id, type, country, currency) values ($1, 'stripe', 'US', 'usd')`,
            [w.A],
          ),
        ),
      ).toMatchObject({ code: '42501' });
      // the settings it may set by hand change nothing
      await client.query('begin');
      await client.query(`select set_config('rowgate.credential_kind', 'personal_access_token', true)`);
      expect((await client.query('select rowgate_hidden.current_credential_kind() as kind')).rows).toEqual([{ kind: 'web_session' }]);
      await client.query('rollback');
    } finally {
      await client.end();
    }
  });
});

// ---------------------------------------------------------------------------
// Upgrading: the flags set before migration 000003 survive it.

describe('migration 000003 on a database with platform admins', () => {
  const database = `rowgate_upgrade_${randomBytes(6).toString('hex')}`;
  let folder: string;
  afterAll(async () => {
    if (folder) await rm(folder, { recursive: true, force: true });
    const admin = new pg.Client({ connectionString: inject('superuserUrl') });
    await admin.connect();
    await admin.query(`drop database if exists ${pg.escapeIdentifier(database)} with (force)`).finally(() => admin.end());
  });

  test('moves every is_admin flag to rowgate_private.platform_admins and drops the column', async () => {
    const ownerUrl = withDatabase(inject('superuserUrl'), database, { name: 'rowgate_owner', password: inject('ownerPassword') });
    await ensureDatabase(inject('superuserUrl'), database);
    folder = await mkdtemp(path.join(tmpdir(), 'rowgate-migrations-'));
    await mkdir(path.join(folder, 'committed'));
    await writeFile(path.join(folder, 'current.sql'), '-- Enter migration here\n');
    const committed = (await readdir(path.join(projectRoot, 'migrations', 'committed'))).filter((f) => f.endsWith('.sql')).sort();
    const upTo = async (number: string) => {
      for (const file of committed.filter((f) => f.slice(0, 6) <= number)) {
        await copyFile(path.join(projectRoot, 'migrations', 'committed', file), path.join(folder, 'committed', file));
      }
      await migrateDatabase(ownerUrl, folder);
    };
    await upTo('000002');
    const owner = new pg.Client({ connectionString: ownerUrl });
    await owner.connect();
    try {
      const { rows } = await owner.query<{ id: string; email: string }>(
        `insert into rowgate.users (email, is_admin) values ('op@example.com', true), ('ada@example.com', false), ('gone@example.com', true)
         returning id, email`,
      );
      const id = Object.fromEntries(rows.map((r) => [r.email, r.id]));
      await owner.query(`update rowgate.users set deleted_at = now() where email = 'gone@example.com'`);
      const before = await owner.query('select id, updated_at from rowgate.users order by id');
      await upTo('000003');
      expect((await owner.query('select user_id from rowgate_private.platform_admins order by user_id')).rows).toEqual(
        sorted([id['op@example.com']!, id['gone@example.com']!]).map((user_id) => ({ user_id })),
      );
      expect(
        (
          await owner.query(
            `select 1 from pg_attribute where attrelid = 'rowgate.users'::regclass and attname = 'is_admin' and not attisdropped`,
          )
        ).rows,
      ).toEqual([]);
      // moving the flags is no change to the users
      expect((await owner.query('select id, updated_at from rowgate.users order by id')).rows).toEqual(before.rows);
    } finally {
      await owner.end();
    }
  }, 120_000);
});
