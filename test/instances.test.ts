// Several API instances on one database (SPEC §19), the fast slice: three apps
// in this process, each with its own pool and consistency memory, as three
// servers would have (the process run: test/long/instances.process.long.ts).
// Nothing passes between them: what one changes, the others read from the
// database on their next request.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Consistency, formatPosition, parsePosition } from '../src/db/consistency.ts';
import { standbyName } from '../src/db/read-replicas.ts';
import { loadConfig } from '../src/config.ts';
import { createPool } from '../src/db/pool.ts';
import { createApp } from '../src/server/app.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { startTestApp, type TestApp } from './harness.ts';

interface Instance {
  url: string;
  close(): Promise<void>;
}

async function instance(app: TestApp): Promise<Instance> {
  const pool = createPool({ connectionString: app.authenticatorUrl, max: 2, statementTimeoutMs: 10_000 });
  const server: Server = createApp({
    pool,
    secret: app.secret,
    routes: allRoutes(pool),
    validateResponses: true,
    mailer: outboxMailer(() => {}),
    consistency: new Consistency({ primary: pool }),
  }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await pool.end();
    },
  };
}

async function get(base: string, path: string, headers: Record<string, string>) {
  const response = await fetch(base + path, { headers });
  return { status: response.status, body: (await response.json()) as any };
}

describe('three instances on one database', () => {
  let a: TestApp;
  let b: Instance;
  let c: Instance;
  beforeAll(async () => {
    a = await startTestApp();
    b = await instance(a);
    c = await instance(a);
  });
  afterAll(async () => {
    await b?.close();
    await c?.close();
    await a?.close();
  });

  test('a profile change through one is read through the others on their next request, token or not', async () => {
    const user = await a.user({ name: 'Before' });
    const cookie = { cookie: `rowgate_session=${user.session}` };
    for (const base of [a.url, b.url, c.url]) expect((await get(base, '/v1/users/me', cookie)).body.name).toBe('Before');
    const patched = await a.patch('/v1/users/me', { name: 'After' }, { session: user.session });
    expect(patched.status).toBe(200);
    expect(parsePosition(patched.headers.get('rowgate-consistency'))).not.toBeNull();
    for (const base of [b.url, c.url]) expect((await get(base, '/v1/users/me', cookie)).body.name).toBe('After');
  });

  test('a session signed out, a token revoked or a user deleted through one is refused through the others on the next request', async () => {
    const user = await a.user();
    const other = await a.user();
    const cookie = { cookie: `rowgate_session=${user.session}` };
    const pat = await a.pat(user.id, ['organizations_read']);
    const bearer = { authorization: `Bearer ${pat}` };
    for (const base of [b.url, c.url]) {
      expect((await get(base, '/v1/users/me', cookie)).status).toBe(200);
      expect((await get(base, '/v1/organizations/', bearer)).status).toBe(200);
      expect((await get(base, '/v1/users/me', { cookie: `rowgate_session=${other.session}` })).status).toBe(200);
    }
    // a personal access token revoked through A
    const [row] = await a.sql<{ id: string }>('select id from rowgate.personal_access_tokens where user_id = $1 and deleted_at is null', [
      user.id,
    ]);
    expect((await a.delete(`/v1/personal-access-tokens/${row!.id}`, { session: user.session })).status).toBe(204);
    for (const base of [b.url, c.url]) expect((await get(base, '/v1/organizations/', bearer)).status).toBe(401);
    // a web session signed out through A
    expect((await a.post('/v1/auth/logout', {}, { session: other.session })).status).toBe(204);
    for (const base of [b.url, c.url])
      expect((await get(base, '/v1/users/me', { cookie: `rowgate_session=${other.session}` })).status).toBe(401);
    // a user deleted through A: every credential of it
    const second = await a.pat(user.id, ['user:write']);
    expect((await a.delete('/v1/users/me', { token: second })).status).toBe(204);
    for (const base of [b.url, c.url]) expect((await get(base, '/v1/users/me', cookie)).status).toBe(401);
  });

  test('a malformed token is no token; a resource created through one is listed through the others', async () => {
    const user = await a.user();
    const organization = await a.organization(user.id);
    const created = await a.post(
      '/v1/products/',
      { organization_id: organization.id, name: 'Seen', price_amount: 100, price_currency: 'usd' },
      {
        session: user.session,
      },
    );
    expect(created.status).toBe(201);
    for (const base of [b.url, c.url]) {
      const list = await get(base, '/v1/products/', { cookie: `rowgate_session=${user.session}`, 'rowgate-consistency': 'not/a-token' });
      expect(list.body.items.map((p: { id: string }) => p.id)).toEqual([created.body.id]);
    }
  });
});

test('a position reads and prints as PostgreSQL writes a pg_lsn', () => {
  expect(formatPosition(parsePosition('16/B374D848')!)).toBe('16/B374D848');
  expect(parsePosition('0/0')).toBe(0n);
  expect(parsePosition('FFFFFFFF/FFFFFFFF')).toBe(2n ** 64n - 1n);
  for (const bad of ['', '16', '16/', '/1', '1/2/3', 'G/1', '123456789/0', ' 1/1 x', 42, undefined]) expect(parsePosition(bad)).toBeNull();
});

test('a standby is named by host, port and database, whatever URL form AUTH_DATABASE_URL takes (a socket too), never its password', () => {
  expect(standbyName('postgresql://rowgate_authenticator:secret@10.0.0.7:5433/rowgate')).toBe('10.0.0.7:5433/rowgate');
  expect(standbyName('postgres://rowgate_authenticator:secret@/rowgate?host=/run/postgresql')).toBe('/run/postgresql:5432/rowgate');
  expect(standbyName('postgresql://u:p@%2Fvar%2Frun%2Fpostgresql:6432/rowgate')).toBe('/var/run/postgresql:6432/rowgate');
  for (const url of ['postgresql://u:hunter2@h/d', 'postgres://u:hunter2@/d?host=/s']) expect(standbyName(url)).not.toContain('hunter2');
  expect(
    loadConfig({ ROWGATE_READ_DATABASE_URLS: 'postgres://u:p@/rowgate?host=/run/postgresql, postgresql://u:p@h:5/d' })
      .ROWGATE_READ_DATABASE_URLS,
  ).toEqual(['postgres://u:p@/rowgate?host=/run/postgresql', 'postgresql://u:p@h:5/d']);
});
