// Organizations' SQL logins (SPEC §24): minted, listed and revoked through the API by users
// with organization:manage; the login (a pg client is what psql is) reads exactly what an
// organization access token with its scopes reads, writes nothing, and from the moment it
// is revoked or expires reads no rows, cannot connect, and loses its sessions.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { watchSqlLogins, type SqlLoginWatch } from '../src/upkeep/sql-login-sessions.ts';
import { sqlLoginFunctions } from '../src/db/lint-sql-logins.ts';
import { withDatabase } from './database-server.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let sweep: SqlLoginWatch;
let admin: TestUser;
let orgA: string;
let orgB: string;
const logins = new Set<string>();
const clients: pg.Client[] = [];

const superuserUrl = () => inject('superuserUrl');

async function superuser<T extends object = any>(sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: withDatabase(superuserUrl(), app.database) });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

interface Minted {
  id: string;
  login: string;
  database_url: string;
  [key: string]: unknown;
}

async function mint(organizationId: string, scopes: string[], session = admin.session, extra: object = {}): Promise<Minted> {
  const res = await app.post(`/v1/organizations/${organizationId}/sql-credentials`, { comment: 'BI', scopes, ...extra }, { session });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  logins.add(res.body.login);
  return res.body;
}

/** The login's URL on this test's database (the answer names the server's pool, which may be PgBouncer). */
function urlOf(minted: Minted): string {
  const given = new URL(minted.database_url);
  const url = new URL(app.ownerUrl);
  url.username = given.username;
  url.password = given.password;
  return url.toString();
}

async function connect(minted: Minted): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: urlOf(minted) });
  client.on('error', () => {}); // a terminated session reports on its next query
  await client.connect();
  clients.push(client);
  return client;
}

/** Waits (5 s at most) until the condition holds; the outcome is asserted, not the time it took. */
async function eventually(condition: () => Promise<boolean>): Promise<boolean> {
  for (const until = Date.now() + 5_000; Date.now() < until; ) {
    if (await condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}

const sessionsOf = async (login: string) =>
  Number((await superuser<{ n: string }>('select count(*) as n from pg_stat_activity where usename = $1', [login]))[0]!.n);

async function sqlError(client: pg.Client, sql: string): Promise<string | undefined> {
  return client.query(sql).then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );
}

beforeAll(async () => {
  app = await startTestApp();
  // as every server runs it (src/server/start.ts)
  sweep = watchSqlLogins([app.pool]);
  admin = await app.user();
  orgA = (await app.organization(admin.id)).id;
  orgB = (await app.organization(admin.id)).id;
  const customerA = await app.customer(orgA);
  const customerB = await app.customer(orgB);
  for (let i = 0; i < 3; i++) await app.order(await app.product(orgA), customerA, i === 0 ? 'paid' : 'pending');
  await app.order(await app.product(orgB), customerB, 'paid');
});

afterAll(async () => {
  sweep?.stop();
  await Promise.all(clients.map((c) => c.end().catch(() => {})));
  for (const login of logins) await superuser(`drop role if exists ${pg.escapeIdentifier(login)}`).catch(() => {});
  await app?.close();
});

describe('minting (SPEC §24)', () => {
  test('an admin mints a login: the answer, the name pattern, the URL with its password only once', async () => {
    const minted = await mint(orgA, ['products_read'], admin.session, { expires_in: 3600 });
    expect(Object.keys(minted).sort()).toEqual(
      [
        'comment',
        'created_at',
        'created_by',
        'database_url',
        'expires_at',
        'id',
        'last_used_at',
        'login',
        'organization_id',
        'scopes',
        'updated_at',
      ].sort(),
    );
    expect(minted.login).toMatch(/^rg_sql_[a-z2-7]{20}$/);
    expect(minted).toMatchObject({ organization_id: orgA, created_by: admin.id, scopes: ['products_read'], last_used_at: null });
    expect(new URL(minted.database_url).username).toBe(minted.login);
    const got = await app.get(`/v1/organizations/${orgA}/sql-credentials/${minted.id}`, { session: admin.session });
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty('database_url');
    const listed = await app.get(`/v1/organizations/${orgA}/sql-credentials`, { session: admin.session });
    expect(listed.body.items.map((i: { id: string }) => i.id)).toContain(minted.id);
    // the role: in the group only, inheriting without SET, neither superuser nor CREATEROLE, valid until its expiry
    const [role] = await superuser(
      `select r.rolsuper, r.rolcreaterole, r.rolcanlogin, r.rolvaliduntil is not null as valid_until,
         array(select g.rolname::text || ':' || m.inherit_option || ':' || m.set_option from pg_auth_members m join pg_roles g on g.oid = m.roleid
           where m.member = r.oid) as groups,
         r.rolpassword like 'SCRAM-SHA-256$%' as scram
       from pg_authid r where r.rolname = $1`,
      [minted.login],
    );
    expect(role).toEqual({
      rolsuper: false,
      rolcreaterole: false,
      rolcanlogin: true,
      valid_until: true,
      groups: ['rowgate_sql_login:true:false'],
      scram: true,
    });
  });

  test('who may mint: a member without organization:manage is refused with the reason; an organization token is not accepted', async () => {
    const member = await app.user();
    await app.membership(orgA, member.id, 'member');
    const res = await app.post(
      `/v1/organizations/${orgA}/sql-credentials`,
      { comment: 'x', scopes: ['products_read'] },
      { session: member.session },
    );
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('NotPermitted');
    const oat = await app.oat(orgA, ['organizations_write', 'products_read']);
    const byToken = await app.post(
      `/v1/organizations/${orgA}/sql-credentials`,
      { comment: 'x', scopes: ['products_read'] },
      { token: oat },
    );
    expect(byToken.status).toBe(401);
    const listed = await app.get(`/v1/organizations/${orgA}/sql-credentials`, { session: member.session });
    expect(listed.status).toBe(403);
  });

  test('scopes are read scopes the creator could use itself (section 21), else 422 at body.scopes.i', async () => {
    const write = await app.post(
      `/v1/organizations/${orgA}/sql-credentials`,
      { comment: 'x', scopes: ['products_read', 'orders_write'] },
      { session: admin.session },
    );
    expect(write.status).toBe(422);
    expect(write.body.detail[0].loc).toEqual(['body', 'scopes', 1]);
    // a role holding organization:manage but not finance:read mints no transactions_read
    const manager = await app.user();
    await app.sql(
      `insert into rowgate.organization_roles (organization_id, name, permissions) values ($1, 'manager', '{organization:manage}')`,
      [orgA],
    );
    await app.membership(orgA, manager.id, 'manager');
    const finance = await app.post(
      `/v1/organizations/${orgA}/sql-credentials`,
      { comment: 'x', scopes: ['transactions_read'] },
      { session: manager.session },
    );
    expect(finance.status).toBe(422);
    expect(finance.body.detail[0].loc).toEqual(['body', 'scopes', 0]);
    const fine = await app.post(
      `/v1/organizations/${orgA}/sql-credentials`,
      { comment: 'x', scopes: ['orders_read'] },
      { session: manager.session },
    );
    expect(fine.status).toBe(201);
    logins.add(fine.body.login);
  });

  test('at most 10 live per organization (422 at body); a revoked one makes room', async () => {
    const organization = (await app.organization(admin.id)).id;
    const made: Minted[] = [];
    for (let i = 0; i < 10; i++) made.push(await mint(organization, ['products_read']));
    const eleventh = await app.post(
      `/v1/organizations/${organization}/sql-credentials`,
      { comment: 'x', scopes: ['products_read'] },
      { session: admin.session },
    );
    expect(eleventh.status).toBe(422);
    expect(eleventh.body.detail[0].loc).toEqual(['body']);
    expect((await app.delete(`/v1/organizations/${organization}/sql-credentials/${made[0]!.id}`, { session: admin.session })).status).toBe(
      204,
    );
    await mint(organization, ['products_read']);
  });

  test('events sql_credential.created and .deleted, for the organization managers only', async () => {
    const minted = await mint(orgA, ['orders_read']);
    expect((await app.delete(`/v1/organizations/${orgA}/sql-credentials/${minted.id}`, { session: admin.session })).status).toBe(204);
    const events = await app.get(`/v1/events/?resource_id=${minted.id}&sorting=created_at`, { session: admin.session });
    expect(events.body.items.map((e: { type: string }) => e.type)).toEqual(['sql_credential.created', 'sql_credential.deleted']);
    expect(events.body.items[0].data).not.toHaveProperty('login_dropped_at');
    const oat = await app.oat(orgA, ['events_read']);
    const byToken = await app.get(`/v1/events/?resource_id=${minted.id}`, { token: oat });
    expect(byToken.body.items).toEqual([]);
  });
});

describe('what a login reads (SPEC §24)', () => {
  test('exactly what an organization token with its scopes reads, one organization, read-only', async () => {
    const minted = await mint(orgA, ['orders_read', 'products_read']);
    const client = await connect(minted);
    const oat = await app.oat(orgA, ['orders_read', 'products_read']);
    const api = (await app.get('/v1/orders/?limit=100', { token: oat })).body.items.map((o: { id: string }) => o.id).sort();
    const sql = (await client.query('select id from rowgate.orders')).rows.map((r) => r.id).sort();
    expect(sql).toEqual(api);
    expect(sql.length).toBe(3);
    // select * works; no scope, no rows
    expect((await client.query('select * from rowgate.products')).rowCount).toBe(3);
    expect((await client.query('select * from rowgate.customers')).rowCount).toBe(0);
    // the organizations row needs organizations_read, as through REST
    expect((await client.query('select * from rowgate.organizations')).rowCount).toBe(0);
    for (const statement of [
      'select * from rowgate.users',
      'select * from rowgate_private.sessions',
      "update rowgate.products set name = 'x'",
      'create temporary table t (x int)',
      'create table rowgate.t (x int)',
      'set role rowgate_organization',
      'set role rowgate_sql_login',
    ]) {
      expect(await sqlError(client, statement), statement).toBe('42501');
    }
    // settings name nobody here: the identity is session_user's
    await client.query(`select set_config('rowgate.subject_id', $1, false), set_config('rowgate.subject_kind', 'organization', false)`, [
      orgB,
    ]);
    expect((await client.query('select organization_id from rowgate.orders')).rows.every((r) => r.organization_id === orgA)).toBe(true);
  });

  test('rowgate.check answers as an organization token with the login’s scopes', async () => {
    const minted = await mint(orgA, ['products_read']);
    const client = await connect(minted);
    const { rows } = await client.query(
      `select rowgate.check('products:list', '{}', $1) as list, rowgate.check('orders:list', '{}', $1) as orders,
         rowgate.check('products:list', '{}', $2) as other`,
      [orgA, orgB],
    );
    expect(rows[0].list).toMatchObject({
      allowed: true,
      basis: { credential_kind: 'organization_access_token', scopes: ['products_read'] },
    });
    expect(rows[0].orders).toMatchObject({ allowed: false, status: 403, error: 'InsufficientScope' });
    expect(rows[0].other).toMatchObject({ allowed: false, status: 404 });
  });
});

test('every function the group may execute answers the same for another organization’s ids as for ids that exist nowhere', async () => {
  const minted = await mint(orgA, ['orders_read', 'products_read', 'members_read', 'organizations_read']);
  const client = await connect(minted);
  // ids of orgB (another tenant) and of its rows, against random ids
  const [theirs] = await app.sql(
    `select o.id as organization, (select id from rowgate.orders where organization_id = o.id limit 1) as row_id,
       (select user_id from rowgate.memberships where organization_id = o.id limit 1) as user_id
     from rowgate.organizations o where o.id = $1`,
    [orgB],
  );
  const nowhere = { organization: randomUUID(), row_id: randomUUID(), user_id: randomUUID() };
  const functions = await superuser<{ signature: string; args: string[] }>(
    `select p.oid::regprocedure::text as signature, array(select format_type(t, null) from unnest(p.proargtypes) t) as args
     from pg_proc p where has_function_privilege('rowgate_sql_login', p.oid, 'EXECUTE')
       and p.pronamespace in ('rowgate'::regnamespace, 'rowgate_hidden'::regnamespace, 'rowgate_private'::regnamespace)`,
  );
  expect(functions.map((f) => f.signature).sort()).toEqual([...sqlLoginFunctions].sort());
  const argument = (type: string, ids: typeof nowhere, n: number) => {
    switch (type) {
      case 'uuid':
        return pg.escapeLiteral(n === 1 ? ids.user_id : ids.organization) + '::uuid';
      case 'uuid[]':
        return `array[${pg.escapeLiteral(ids.row_id)}]::uuid[]`;
      case 'text':
        return n === 0 ? "'orders'" : "'finance_read'";
      case 'boolean':
        return 'false';
      case 'jsonb':
        return `jsonb_build_array(jsonb_build_object('operation', 'orders:get', 'params', jsonb_build_object('id', ${pg.escapeLiteral(ids.row_id)})))`;
      default:
        return null;
    }
  };
  let called = 0;
  for (const f of functions) {
    if (!f.args.some((a) => a.startsWith('uuid') || a === 'jsonb')) continue;
    const call = (ids: typeof nowhere) => {
      const args = f.args.map((a, n) => argument(a, ids, n));
      if (args.includes(null)) return null;
      const name = f.signature.slice(0, f.signature.indexOf('('));
      return `select to_jsonb(x) as answer from ${name}(${args.join(', ')}) x`;
    };
    const [theirsSql, nowhereSql] = [call(theirs), call(nowhere)];
    if (!theirsSql || !nowhereSql) continue;
    const answer = (sql: string) =>
      client.query(sql).then(
        (r) => JSON.stringify(r.rows).replaceAll(theirs.organization, 'ID').replaceAll(nowhere.organization, 'ID'),
        (e: { code?: string }) => `error ${e.code}`,
      );
    expect(await answer(theirsSql), f.signature).toEqual(await answer(nowhereSql));
    called++;
  }
  expect(called).toBeGreaterThan(10);
});

describe('revocation and expiry (SPEC §24)', () => {
  test('a revoked login reads no rows at once, its sessions end, and it cannot connect again', async () => {
    const minted = await mint(orgA, ['orders_read']);
    const client = await connect(minted);
    expect((await client.query('select id from rowgate.orders')).rowCount).toBe(3);
    // a transaction open across the revocation sees no rows from its next statement
    await client.query('begin');
    expect((await app.delete(`/v1/organizations/${orgA}/sql-credentials/${minted.id}`, { session: admin.session })).status).toBe(204);
    const after = await client.query('select id from rowgate.orders').then(
      (r) => r.rowCount,
      () => 0,
    );
    expect(after).toBe(0);
    expect(await eventually(async () => (await sessionsOf(minted.login)) === 0)).toBe(true);
    await expect(connect(minted)).rejects.toThrow();
    // its role is dropped once no session is left
    expect(await eventually(async () => (await superuser('select 1 from pg_roles where rolname = $1', [minted.login])).length === 0)).toBe(
      true,
    );
    expect((await app.get(`/v1/organizations/${orgA}/sql-credentials/${minted.id}`, { session: admin.session })).status).toBe(404);
  });

  test('an expired login reads no rows and its sessions end', async () => {
    const minted = await mint(orgA, ['orders_read'], admin.session, { expires_in: 3600 });
    const client = await connect(minted);
    expect((await client.query('select id from rowgate.orders')).rowCount).toBe(3);
    await app.sql(`update rowgate.sql_credentials set expires_at = now() - interval '1 second' where id = $1`, [minted.id]);
    const after = await client.query('select id from rowgate.orders').then(
      (r) => r.rowCount,
      () => 0,
    );
    expect(after).toBe(0);
    expect(await eventually(async () => (await sessionsOf(minted.login)) === 0)).toBe(true);
  });

  test("an organization's logins share 5 connections", async () => {
    const organization = (await app.organization(admin.id)).id;
    const one = await mint(organization, ['products_read']);
    const two = await mint(organization, ['products_read']);
    for (let i = 0; i < 3; i++) await connect(one);
    for (let i = 0; i < 3; i++) await connect(two);
    expect(await eventually(async () => (await sessionsOf(one.login)) + (await sessionsOf(two.login)) === 5)).toBe(true);
  });

  test('membership.deleted lists the SQL logins the member made (SPEC §21)', async () => {
    const organization = (await app.organization(admin.id)).id;
    const colleague = await app.user();
    await app.membership(organization, colleague.id, 'admin');
    const minted = await mint(organization, ['products_read'], colleague.session);
    expect((await app.delete(`/v1/organizations/${organization}/members/${colleague.id}`, { session: admin.session })).status).toBe(204);
    const events = await app.get(`/v1/events/?organization_id=${organization}&type=membership.deleted`, { session: admin.session });
    expect(events.body.items[0].data.credentials.sql_credentials).toEqual([{ id: minted.id, login: minted.login }]);
  });
});

describe('the API holds no role-making power (SPEC §24)', () => {
  test('neither the authenticator nor any role it may take is superuser or CREATEROLE', async () => {
    const rows = await superuser<{ rolname: string; rolsuper: boolean; rolcreaterole: boolean }>(
      `select r.rolname, r.rolsuper, r.rolcreaterole from pg_roles r
       where pg_has_role('rowgate_authenticator', r.oid, 'member') or r.rolname = 'rowgate_authenticator'`,
    );
    expect(rows.length).toBeGreaterThan(5);
    expect(rows.filter((r) => r.rolsuper || r.rolcreaterole)).toEqual([]);
    const group = await superuser(`select 1 from pg_auth_members m where m.member = 'rowgate_sql_login'::regrole`);
    expect(group).toEqual([]);
    const publicConnect = await superuser(`select has_database_privilege('public', current_database(), 'connect') as c`).catch(() => [
      { c: null },
    ]);
    expect(publicConnect[0]?.c ?? false).toBe(false);
  });
});
