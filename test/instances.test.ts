// Several API instances on one database (SPEC §19), the fast slice: three apps
// in this process, each with its own pool, answer cache and consistency memory,
// as three servers would have (the process run: test/long/instances.process.long.ts).
// A change through one instance holds at once through the others for a request
// that sends the write's Rowgate-Consistency token, however late the other
// instance's notifications are: here they are held back until asked for.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AnswerCache } from '../src/auth/answer-cache.ts';
import { Consistency, formatPosition, parsePosition } from '../src/db/consistency.ts';
import { type ReadReplicas, standbyName } from '../src/db/read-replicas.ts';
import { loadConfig } from '../src/config.ts';
import { createPool } from '../src/db/pool.ts';
import { createApp } from '../src/http/app.ts';
import { allRoutes } from '../src/http/routes.ts';
import { generateToken } from '../src/auth/tokens.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { startTestApp, type TestApp } from './harness.ts';

/**
 * An answer cache whose listener is as slow as it can be: changes announced by
 * other instances are applied only when a sync marker arrives (in order, as a
 * slow listener would apply them), never on their own.
 */
class HeldAnswerCache extends AnswerCache {
  private held: (string | undefined)[] = [];
  /** the sync markers that came back: each a round trip a request waited for */
  markers = 0;
  protected override notified(payload: string | undefined) {
    if (payload?.startsWith('sync:')) this.markers++;
    if (!payload?.startsWith('sync:')) {
      this.held.push(payload);
      return;
    }
    for (const change of this.held.splice(0)) super.notified(change);
    super.notified(payload);
  }
}

interface Instance {
  url: string;
  cache: HeldAnswerCache;
  close(): Promise<void>;
}

async function instance(app: TestApp, reads?: ReadReplicas): Promise<Instance> {
  const pool = createPool({ connectionString: app.authenticatorUrl, max: 2, statementTimeoutMs: 10_000 });
  const cache = new HeldAnswerCache({ connectionString: app.listenUrl, maxAgeMs: 30_000 });
  await cache.start();
  const server: Server = createApp({
    pool,
    secret: app.secret,
    routes: allRoutes(pool),
    validateResponses: true,
    mailer: outboxMailer(() => {}),
    answerCache: cache,
    consistency: new Consistency({ primary: pool }),
    reads,
  }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    cache,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await cache.stop();
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

  test('a profile change through one is seen through the others by a request carrying its token', async () => {
    const user = await a.user({ name: 'Before' });
    const cookie = { cookie: `rowgate_session=${user.session}` };
    for (const base of [a.url, b.url, c.url]) expect((await get(base, '/v1/users/me', cookie)).body.name).toBe('Before');
    const hits = b.cache.hits;
    expect((await get(b.url, '/v1/users/me', cookie)).body.name).toBe('Before');
    expect(b.cache.hits).toBe(hits + 1); // B answers from its cache

    const patched = await a.patch('/v1/users/me', { name: 'After' }, { session: user.session });
    expect(patched.status).toBe(200);
    const token = patched.headers.get('rowgate-consistency');
    expect(parsePosition(token)).not.toBeNull();

    // without the token, B has not heard of the change yet (its notifications are held)
    expect((await get(b.url, '/v1/users/me', cookie)).body.name).toBe('Before');
    // with it, B catches up first
    expect((await get(b.url, '/v1/users/me', { ...cookie, 'rowgate-consistency': token! })).body.name).toBe('After');
    expect((await get(c.url, '/v1/users/me', { ...cookie, 'rowgate-consistency': token! })).body.name).toBe('After');
  });

  test('a token costs a round trip only to serve a kept answer: none for a credential that never authenticated, none with nothing kept', async () => {
    // past any position the database will reach: every request carrying it would wait for a sync
    const future = { 'rowgate-consistency': 'FFFFFFFF/FFFFFFFF' };
    const before = b.cache.markers;
    const invented = { cookie: `rowgate_session=${generateToken('web_session')}`, ...future };
    for (let i = 0; i < 5; i++) expect((await get(b.url, '/v1/users/me', invented)).status).toBe(401);
    expect(b.cache.markers).toBe(before);
    const user = await a.user({ name: 'Kept' });
    const cookie = { cookie: `rowgate_session=${user.session}`, ...future };
    // nothing kept for it yet: the database answers, fresh, with no sync
    expect((await get(b.url, '/v1/users/me', cookie)).body.name).toBe('Kept');
    expect(b.cache.markers).toBe(before);
    // its answer kept: served after a sync
    const hits = b.cache.hits;
    expect((await get(b.url, '/v1/users/me', cookie)).body.name).toBe('Kept');
    expect(b.cache.markers).toBe(before + 1);
    expect(b.cache.hits).toBeGreaterThan(hits); // looked up, and again once caught up
  });

  test('an answer the cache keeps is read on the primary, never on a standby (which may be behind a write announced here)', async () => {
    let onStandby: string[] = [];
    // a standby that is the primary: it records what was sent to it
    const standby = {
      read: <T>(_position: unknown, run: (pool: never) => Promise<T>) => {
        onStandby.push('read');
        return run(a.pool as never);
      },
    } as unknown as ReadReplicas;
    const d = await instance(a, standby);
    try {
      const user = await a.user();
      const organization = await a.organization(user.id);
      const cookie = { cookie: `rowgate_session=${user.session}` };
      expect((await get(d.url, '/v1/users/me', cookie)).status).toBe(200);
      expect(onStandby).toEqual([]);
      onStandby = [];
      expect((await get(d.url, `/v1/products/?organization_id=${organization.id}`, cookie)).status).toBe(200);
      expect(onStandby).toEqual(['read']);
    } finally {
      await d.close();
    }
  });

  test('credentials ended through one instance are refused through the others with the token', async () => {
    const user = await a.user();
    const cookie = { cookie: `rowgate_session=${user.session}` };
    const pat = await a.pat(user.id, ['user:write']);
    for (const base of [b.url, c.url]) expect((await get(base, '/v1/users/me', cookie)).status).toBe(200);
    const deleted = await a.delete('/v1/users/me', { token: pat });
    expect(deleted.status).toBe(204);
    const token = deleted.headers.get('rowgate-consistency')!;
    for (const base of [b.url, c.url]) {
      expect((await get(base, '/v1/users/me', { ...cookie, 'rowgate-consistency': token })).status).toBe(401);
    }
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
