// The answer cache (src/auth/answer-cache.ts, migration 000002): GET /v1/users/me
// answered from memory only while the database has not said the answer changed.
// What it must never do is answer for a credential or a user row that changed:
// through this server, from the next request on; from SQL, once the change's
// notification has arrived; at the credential's expiry, always.
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { AnswerCache, CHANGES_CHANNEL } from '../src/auth/answer-cache.ts';
import { createApp } from '../src/http/app.ts';
import { allRoutes } from '../src/http/routes.ts';
import { withDatabase } from './database-server.ts';
import { expectUnauthorized } from './expect-api.ts';
import { startTestApp, type TestApp } from './harness.ts';

const ME = '/v1/users/me';
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

const waitFor = async (what: string, done: () => boolean | Promise<boolean>, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

/** GET users/me twice: the second answer must come from the cache. */
async function cached(session: string) {
  const first = await app.get(ME, { session });
  expect(first.status).toBe(200);
  const hits = app.answerCache.hits;
  const second = await app.get(ME, { session });
  expect(app.answerCache.hits, 'the second answer came from the cache').toBe(hits + 1);
  return { first, second };
}

describe('served from the cache', () => {
  test('the same status, headers and body as the database gave', async () => {
    const user = await app.user({ name: 'Ada' });
    const { first, second } = await cached(user.session);
    expect(second.body).toEqual(first.body);
    // each answer has its own date, request id and place in its rate-limit window
    const perAnswer = new Set(['date', 'x-request-id', 'ratelimit']);
    const headers = (res: typeof first) => Object.fromEntries([...res.headers].filter(([name]) => !perAnswer.has(name)));
    expect(headers(second)).toEqual(headers(first));
  });

  test('only for the credential it was asked with: another session of the user, or a bad one, is asked again', async () => {
    const user = await app.user();
    await cached(user.session);
    const hits = app.answerCache.hits;
    expect((await app.get(ME, { session: await app.session(user.id) })).status).toBe(200);
    expectUnauthorized(await app.get(ME, { session: user.session.slice(0, -1) + (user.session.endsWith('a') ? 'b' : 'a') }), true);
    expect(app.answerCache.hits).toBe(hits);
  });

  test('refusals are not kept: a revoked session is asked again, and refused every time', async () => {
    const user = await app.user();
    await app.sql('update rowgate_private.sessions set revoked_at = now() where token_hash = $1', [app.hash(user.session)]);
    const hits = app.answerCache.hits;
    for (let i = 0; i < 3; i++) expectUnauthorized(await app.get(ME, { session: user.session }), true);
    expect(app.answerCache.hits, 'no refusal was served from the cache').toBe(hits);
  });
});

describe('a change made in SQL (an operator, another server) ends the answer once its notification arrives', () => {
  test.each([
    ['the session revoked', 'update rowgate_private.sessions set revoked_at = now() where user_id = $1', 401],
    ['the session cut short', "update rowgate_private.sessions set expires_at = now() - interval '1 second' where user_id = $1", 401],
    ['the session removed', 'delete from rowgate_private.sessions where user_id = $1', 401],
    ['the user deleted', 'update rowgate.users set deleted_at = now() where id = $1', 401],
    ['the user renamed', "update rowgate.users set name = 'Grace' where id = $1", 200],
  ] as const)('%s', async (_what, change, status) => {
    const user = await app.user({ name: 'Ada' });
    await cached(user.session);
    await app.sql(change, [user.id]);
    await app.synced();
    const res = await app.get(ME, { session: user.session });
    expect(res.status).toBe(status);
    if (status === 200) expect(res.body.name).toBe('Grace');
  });

  test('changes committed out of the order of their ids: each ends its answer (an id is taken at insert, not at commit)', async () => {
    const [early, late] = [await app.user({ name: 'Ada' }), await app.user({ name: 'Ada' })];
    await cached(early.session);
    await cached(late.session);
    // the first transaction takes its change's id, and commits after the second has committed and been read
    const first = await app.owner.connect();
    try {
      await first.query('begin');
      await first.query("update rowgate.users set name = 'Grace' where id = $1", [early.id]);
      await app.sql("update rowgate.users set name = 'Grace' where id = $1", [late.id]);
      await app.synced();
      expect((await app.get(ME, { session: late.session })).body.name).toBe('Grace');
      await cached(early.session); // still Ada: the first has not committed
      await first.query('commit');
    } finally {
      first.release();
    }
    await app.synced();
    expect((await app.get(ME, { session: early.session })).body.name).toBe('Grace');
  });

  test("another user's change leaves this user's answer cached", async () => {
    const [ada, grace] = [await app.user(), await app.user()];
    await cached(ada.session);
    await app.sql("update rowgate.users set name = 'Grace' where id = $1", [grace.id]);
    await app.synced();
    const hits = app.answerCache.hits;
    expect((await app.get(ME, { session: ada.session })).status).toBe(200);
    expect(app.answerCache.hits).toBe(hits + 1);
  });

  test('a change to the scopes ends every answer', async () => {
    const user = await app.user();
    await cached(user.session);
    await app.sql("update rowgate_private.scopes set implies = implies where name = 'user:read'");
    await app.synced();
    expect(app.answerCache.size).toBe(0);
  });
});

test('the answer ends when the session expires, with no notification', async () => {
  const user = await app.user();
  const session = await app.session(user.id, { lifetime: '1.5 seconds' });
  const [session_] = await app.sql<{ expires_at: string }>('select expires_at from rowgate_private.sessions where token_hash = $1', [
    app.hash(session),
  ]);
  await cached(session);
  await new Promise((resolve) => setTimeout(resolve, Date.parse(session_!.expires_at) - Date.now() + 20));
  expectUnauthorized(await app.get(ME, { session }), true);
});

describe('a change made through this server holds for its next request, before any notification', () => {
  /** An app on the test database whose cache never hears a notification: only its own commits tell it. */
  class DeafCache extends AnswerCache {
    protected override notified(payload: string | undefined) {
      if (payload?.startsWith('sync:')) super.notified(payload);
    }
  }
  let deaf: { cache: DeafCache; url: string; close: () => Promise<void> };
  beforeAll(async () => {
    const cache = new DeafCache({ connectionString: app.listenUrl, maxAgeMs: 60_000 });
    await cache.start();
    const server = createApp({ pool: app.pool, secret: app.secret, routes: allRoutes(app.pool), answerCache: cache }).listen(
      0,
      '127.0.0.1',
    );
    await new Promise((resolve) => server.once('listening', resolve));
    deaf = {
      cache,
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await cache.stop();
      },
    };
  });
  afterAll(async () => deaf?.close());

  const call = async (method: string, session?: string, options: { token?: string; body?: unknown } = {}) => {
    const headers: Record<string, string> = {};
    if (session) headers.cookie = `rowgate_session=${session}`;
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.body) headers['content-type'] = 'application/json';
    const res = await fetch(deaf.url + ME.replace('/v1/users/me', method === 'logout' ? '/v1/auth/logout' : ME), {
      method: method === 'logout' ? 'POST' : method,
      headers,
      body: options.body ? JSON.stringify(options.body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : text };
  };
  const deafCached = async (session: string) => {
    expect((await call('GET', session)).status).toBe(200);
    const hits = deaf.cache.hits;
    expect((await call('GET', session)).status).toBe(200);
    expect(deaf.cache.hits).toBe(hits + 1);
  };

  test('PATCH /v1/users/me: the next GET has the new name', async () => {
    const user = await app.user({ name: 'Ada' });
    await deafCached(user.session);
    expect((await call('PATCH', user.session, { body: { name: 'Ada King' } })).status).toBe(200);
    expect((await call('GET', user.session)).body.name).toBe('Ada King');
  });

  test('POST /v1/auth/logout: the next GET is a 401', async () => {
    const user = await app.user();
    await deafCached(user.session);
    expect((await call('logout', user.session)).status).toBe(204);
    expect((await call('GET', user.session)).status).toBe(401);
  });

  test('DELETE /v1/users/me with a personal access token: the web session is refused next', async () => {
    const user = await app.user();
    await deafCached(user.session);
    expect((await call('DELETE', undefined, { token: await app.pat(user.id, ['user:write']) })).status).toBe(204);
    expect((await call('GET', user.session)).status).toBe(401);
  });

  test('a write that fails changes nothing, and forgets nothing', async () => {
    const user = await app.user({ name: 'Ada' });
    await deafCached(user.session);
    expect((await call('PATCH', user.session, { body: { name: '' } })).status).toBe(422);
    const hits = deaf.cache.hits;
    expect((await call('GET', user.session)).body.name).toBe('Ada');
    expect(deaf.cache.hits).toBe(hits + 1);
  });
});

test('without its listening connection the cache serves nothing, until it listens again', async () => {
  const user = await app.user({ name: 'Ada' });
  await cached(user.session);
  const superuser = new pg.Client({ connectionString: withDatabase(inject('superuserUrl'), app.database) });
  await superuser.connect();
  try {
    const killed = await superuser.query(
      "select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'rowgate listener' and datname = $1",
      [app.database],
    );
    expect(killed.rowCount).toBeGreaterThan(0);
    await waitFor('the cache to notice', () => !app.answerCache.active);
    expect(app.answerCache.size).toBe(0);
    // not listening: a change in SQL holds at once, with no waiting
    await app.sql("update rowgate.users set name = 'Grace' where id = $1", [user.id]);
    const hits = app.answerCache.hits;
    expect((await app.get(ME, { session: user.session })).body.name).toBe('Grace');
    expect((await app.get(ME, { session: user.session })).body.name).toBe('Grace');
    expect(app.answerCache.hits).toBe(hits);
    await waitFor('the cache to listen again', () => app.answerCache.active);
    await cached(user.session);
  } finally {
    await superuser.end();
  }
});

describe('AnswerCache', () => {
  let cache: AnswerCache;
  beforeAll(async () => {
    cache = new AnswerCache({ connectionString: app.listenUrl, maxAgeMs: 60_000, maxEntries: 3 });
    await cache.start();
  });
  afterAll(async () => cache?.stop());
  const answer = (userId: string) => ({ userId, scopes: new Set(['user:read']), body: '{}' });

  test('an answer read before something was forgotten is not kept (it may predate the change)', () => {
    const ticket = cache.ticket()!;
    cache.forget('someone-else');
    cache.put(ticket, 'k', answer('u1'), null);
    expect(cache.get('k')).toBeUndefined();
    cache.put(cache.ticket()!, 'k', answer('u1'), null);
    expect(cache.get('k')).toBeDefined();
  });

  test("forgetting a user forgets each of their credentials' answers; '*' forgets all", () => {
    cache.forget('*');
    cache.put(cache.ticket()!, 'a1', answer('a'), null);
    cache.put(cache.ticket()!, 'a2', answer('a'), null);
    cache.put(cache.ticket()!, 'b1', answer('b'), null);
    cache.forget('x a');
    expect([cache.get('a1'), cache.get('a2'), cache.get('b1')?.userId]).toEqual([undefined, undefined, 'b']);
    cache.forget('*');
    expect(cache.size).toBe(0);
  });

  test('an answer is not kept past its expiry, nor past the maximum age; the oldest goes when full', () => {
    cache.forget('*');
    cache.put(cache.ticket()!, 'past', answer('a'), Date.now() - 1);
    expect(cache.get('past')).toBeUndefined();
    for (const key of ['k1', 'k2', 'k3', 'k4']) cache.put(cache.ticket()!, key, answer(key), null);
    expect(['k1', 'k2', 'k3', 'k4'].map((k) => cache.get(k) !== undefined)).toEqual([false, true, true, true]);
    const unstarted = new AnswerCache({ connectionString: app.listenUrl, maxAgeMs: 60_000 });
    expect(unstarted.ticket()).toBeNull(); // not listening: nothing is kept
  });

  test('a sync whose statement fails leaves nothing waiting for its marker', async () => {
    const failing = { query: () => Promise.reject(new Error('the pool is full')) } as unknown as pg.Pool;
    const waiting = () => (cache as unknown as { syncs: Map<string, unknown> }).syncs.size;
    const before = waiting();
    for (let i = 0; i < 20; i++) await expect(cache.sync(failing)).rejects.toThrow('the pool is full');
    expect(waiting()).toBe(before);
  });

  test('a notification names nothing: whatever its payload, the cache reads what changed from the database', async () => {
    const [u1, u2] = [await app.user(), await app.user()];
    cache.forget('*');
    cache.put(cache.ticket()!, 'k1', answer(u1.id), null);
    cache.put(cache.ticket()!, 'k2', answer(u2.id), null);
    await app.sql('select pg_notify($1, $2)', [CHANGES_CHANNEL, `${u1.id} ${u2.id}`]);
    await cache.sync(app.owner);
    expect([cache.get('k1')?.userId, cache.get('k2')?.userId]).toEqual([u1.id, u2.id]); // nothing changed
    await app.sql("update rowgate.users set name = 'changed' where id = $1", [u1.id]);
    await cache.sync(app.owner);
    expect([cache.get('k1')?.userId, cache.get('k2')?.userId]).toEqual([undefined, u2.id]);
  });
});

describe('the triggers', () => {
  async function notifications(work: () => Promise<unknown>) {
    const listener = new pg.Client({ connectionString: app.listenUrl });
    await listener.connect();
    const payloads: string[] = [];
    listener.on('notification', (m) => payloads.push(m.payload ?? ''));
    await listener.query(`listen ${CHANGES_CHANNEL}`);
    await work();
    await listener.query('select 1'); // a round trip: what was committed before it has arrived
    await listener.end();
    return payloads;
  }

  const lastChange = async () =>
    (await app.sql<{ user_ids: string }>('select user_ids from rowgate_private.user_changes order by id desc limit 1'))[0]?.user_ids;

  test('one notification per statement, naming nothing; the changed users, each once, are recorded where only the server reads them; a long list is everybody', async () => {
    const users = await Promise.all([1, 2, 3].map(() => app.user()));
    const ids = users.map((u) => u.id);
    const payloads = await notifications(() => app.sql("update rowgate.users set name = 'x' where id = any($1::uuid[])", [ids]));
    expect(payloads).toEqual(['']);
    expect((await lastChange())!.split(' ').sort()).toEqual([...ids].sort());
    const many = await Promise.all(Array.from({ length: 120 }, () => app.user()));
    expect(
      await notifications(() => app.sql('update rowgate.users set name = null where id = any($1::uuid[])', [many.map((u) => u.id)])),
    ).toEqual(['']);
    expect(await lastChange()).toBe('*');
  });

  test('a new session, or a statement that changes no row, says nothing; a rolled-back change says nothing', async () => {
    const user = await app.user();
    expect(
      await notifications(async () => {
        await app.session(user.id);
        await app.sql("update rowgate.users set name = 'x' where false");
        const client = await app.owner.connect();
        try {
          await client.query('begin');
          await client.query("update rowgate.users set name = 'y' where id = $1", [user.id]);
          await client.query('rollback');
        } finally {
          client.release();
        }
      }),
    ).toEqual([]);
  });

  test('a change is kept ten minutes from its commit: one made by a transaction that began long before is not pruned at once', async () => {
    const [a, b] = [await app.user(), await app.user()];
    const client = await app.owner.connect();
    let id: string;
    try {
      await client.query('begin');
      await client.query("update rowgate.users set name = 'long' where id = $1", [a.id]);
      // as a transaction that began eleven minutes ago stamps its change
      const { rows } = await client.query<{ id: string }>(
        "update rowgate_private.user_changes set created_at = now() - interval '11 minutes' where xid = pg_current_xact_id() returning id::text",
      );
      id = rows[0]!.id;
      await client.query('commit');
    } finally {
      client.release();
    }
    // the next change prunes what is older than ten minutes: not this one, which has just committed
    await app.sql("update rowgate.users set name = 'next' where id = $1", [b.id]);
    expect(await app.sql('select 1 from rowgate_private.user_changes where id = $1', [id])).toHaveLength(1);
  });

  test('a user changed many times since the horizon is named once, not counted into "everybody"', async () => {
    const [user] = [await app.user()];
    const client = await app.owner.connect();
    try {
      await client.query('begin');
      // 3,000 changes naming one user: 108,000 characters with the repeats
      await client.query('insert into rowgate_private.user_changes (user_ids) select $1 from generate_series(1, 3000)', [user.id]);
      const { rows } = await client.query<{ xid: string }>('select pg_current_xact_id()::text as xid');
      await client.query('commit');
      const [read] = await app.sql<{ user_ids: string }>('select user_ids from rowgate_private.user_changes_after($1::xid8)', [
        rows[0]!.xid,
      ]);
      expect(read!.user_ids).toBe(user.id);
    } finally {
      client.release();
    }
  });

  test("the changed users are in the transaction's rowgate.changed_users, for the server that commits it", async () => {
    const [a, b] = [await app.user(), await app.user()];
    const client = await app.owner.connect();
    try {
      await client.query('begin');
      await client.query("update rowgate.users set name = 'x' where id = $1", [a.id]);
      await client.query('update rowgate_private.sessions set revoked_at = now() where user_id = $1', [b.id]);
      const { rows } = await client.query("select current_setting('rowgate.changed_users', true) as users");
      expect(rows[0].users).toBe(`${a.id} ${b.id}`);
      await client.query('rollback');
    } finally {
      client.release();
    }
  });
});
