// Credentials (SPEC §2, §7): every credential kind the harness can mint, in every
// state: valid, missing, malformed, unknown, expired, revoked, its user deleted.
// Kinds and states are declared once in tables; the tests are generated from them.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { apiRoutes } from '../src/server/route-table.ts';
import { generateToken, tokenPrefixes, type CredentialKind } from '../src/auth/tokens.ts';
import { expectError, expectInsufficientScope, expectUnauthorized } from './expect-api.ts';
import { startTestApp, type ApiResponse, type RequestOptions, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

const ME = '/v1/users/me';

interface KindCase {
  kind: CredentialKind;
  /** a live credential of this kind for the user, able to call `probe` */
  mint(user: TestUser, options?: { expiresAt?: Date }): Promise<string>;
  /** how a token of this kind travels */
  send(token: string): RequestOptions;
  /** revoke it the way its owner (or, until an endpoint exists, the server) would */
  revoke(user: TestUser, token: string): Promise<void>;
  /** an endpoint accepting this kind: the request, and a check that it ran as `user` */
  probe: {
    method: string;
    path: string;
    succeeded(res: ApiResponse, user: TestUser): Promise<void>;
    /** after a refused request: nothing happened to `user` */
    untouched(user: TestUser): Promise<void>;
  };
}

const isDeleted = async (user: TestUser) =>
  (await app.sql<{ deleted: boolean }>('select deleted_at is not null as deleted from rowgate.users where id = $1', [user.id]))[0]?.deleted;

const getMe = {
  method: 'GET',
  path: ME,
  async succeeded(res: ApiResponse, user: TestUser) {
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: user.id, email: user.email });
  },
  async untouched() {},
};

const deleteMe = {
  method: 'DELETE',
  path: ME,
  async succeeded(res: ApiResponse, user: TestUser) {
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    expect(await isDeleted(user)).toBe(true);
  },
  async untouched(user: TestUser) {
    expect(await isDeleted(user)).toBe(false);
  },
};

const past = () => new Date(Date.now() - 60_000);
const bearer = (token: string): RequestOptions => ({ headers: { authorization: `Bearer ${token}` } });
/** both credentials at once: the cookie of one, the bearer token of another */
const both = (cookie: string, token: string): RequestOptions => ({
  headers: { cookie: `rowgate_session=${cookie}`, authorization: `Bearer ${token}` },
});

const kinds: KindCase[] = [
  {
    kind: 'web_session',
    mint: (user, options) =>
      app.session(
        user.id,
        options?.expiresAt ? { lifetime: `${Math.round((options.expiresAt.getTime() - Date.now()) / 1000)} seconds` } : {},
      ),
    send: (token) => ({ headers: { cookie: `rowgate_session=${token}` } }),
    revoke: async (_user, token) => {
      const revoked = await app.owner.query('update rowgate_private.sessions set revoked_at = now() where token_hash = $1', [
        app.hash(token),
      ]);
      expect(revoked.rowCount).toBe(1);
    },
    probe: getMe,
  },
  {
    kind: 'personal_access_token',
    mint: (user, options) => app.pat(user.id, ['user:write'], options),
    send: bearer,
    revoke: async (user) => {
      // through the API, as its owner does: DELETE /v1/personal-access-tokens/{id}
      const list = await app.get('/v1/personal-access-tokens/', { session: user.session });
      expect(list.body.items).toHaveLength(1);
      const res = await app.delete(`/v1/personal-access-tokens/${list.body.items[0].id}`, { session: user.session });
      expect(res.status).toBe(204);
      expect((await app.get('/v1/personal-access-tokens/', { session: user.session })).body.items).toEqual([]);
    },
    probe: deleteMe,
  },
  {
    kind: 'oauth2_user_token',
    mint: (user, options) => app.oauthUserToken(user.id, ['user:write'], options),
    send: bearer,
    revoke: async (_user, token) => {
      const revoked = await app.owner.query('update rowgate_private.oauth2_access_tokens set revoked_at = now() where token_hash = $1', [
        app.hash(token),
      ]);
      expect(revoked.rowCount).toBe(1);
    },
    probe: deleteMe,
  },
];

const call = (k: KindCase, options: RequestOptions) => app.request(k.probe.method, k.probe.path, options);

test('the kinds covered here are the ones the harness can mint', () => {
  expect(kinds.map((k) => k.kind)).toEqual(['web_session', 'personal_access_token', 'oauth2_user_token']);
});

test.each(kinds)('$kind: its probe endpoint accepts it (route table)', ({ kind, probe }) => {
  const route = apiRoutes.find((r) => r.method.toUpperCase() === probe.method && r.path === probe.path);
  expect(route?.access?.credentials).toContain(kind);
});

describe('valid', () => {
  test.each(kinds)('$kind authenticates its user', async (k) => {
    const user = await app.user();
    const token = await k.mint(user);
    await k.probe.succeeded(await call(k, k.send(token)), user);
  });

  test.each(kinds)('$kind close to its expiry still authenticates', async (k) => {
    const user = await app.user();
    const token = await k.mint(user, { expiresAt: new Date(Date.now() + 120_000) });
    await k.probe.succeeded(await call(k, k.send(token)), user);
  });

  test('the session cookie is found among other cookies', async () => {
    const user = await app.user();
    const res = await app.get(ME, { headers: { cookie: `theme=dark; rowgate_session=${user.session}; lang=en` } });
    await getMe.succeeded(res, user);
  });

  test.each([['bearer'], ['BEARER'], ['Bearer  ']])('the scheme is case-insensitive and may be followed by spaces (%j)', async (scheme) => {
    const user = await app.user();
    const token = await app.pat(user.id, ['user:write']);
    const res = await app.delete(ME, { headers: { authorization: `${scheme} ${token}` } });
    await deleteMe.succeeded(res, user);
  });
});

describe('missing', () => {
  const cases: [name: string, headers: Record<string, string>][] = [
    ['no header at all', {}],
    ['only other cookies', { cookie: 'theme=dark; lang=en' }],
  ];
  const probes = [...new Map(kinds.map((k) => [`${k.probe.method} ${k.probe.path}`, k])).values()];
  test.each(probes.flatMap((k) => cases.map(([name, headers]) => ({ k, name, headers, endpoint: `${k.probe.method} ${k.probe.path}` }))))(
    '$endpoint with $name → 401, no error="invalid_token"',
    async ({ k, headers }) => {
      const user = await app.user();
      const res = await call(k, { headers });
      expectUnauthorized(res, false);
      await k.probe.untouched(user);
    },
  );
});

describe('malformed', () => {
  /** Ways to spoil a valid token, applied to a freshly minted one. */
  const spoilers: [name: string, spoil: (token: string, prefix: string) => string][] = [
    ['wrong prefix', (t, p) => `rg_xx_${t.slice(p.length)}`],
    ['no prefix', (t, p) => t.slice(p.length)],
    ['upper-case prefix', (t, p) => p.toUpperCase() + t.slice(p.length)],
    ['too short (31 characters)', (t, p) => t.slice(0, p.length + 31)],
    ['too long (65 characters)', (t, p) => t.slice(0, p.length) + t.slice(p.length).padEnd(65, 'x')],
    ['non-base62 (-)', (t, p) => `${t.slice(0, p.length + 5)}-${t.slice(p.length + 6)}`],
    ['non-base62 (_)', (t, p) => `${t.slice(0, p.length + 5)}_${t.slice(p.length + 6)}`],
    ['non-base62 (.)', (t, p) => `${t.slice(0, p.length + 5)}.${t.slice(p.length + 6)}`],
    ['non-base62 (%)', (t, p) => `${t.slice(0, p.length + 5)}%${t.slice(p.length + 6)}`],
    ['empty', () => ''],
  ];
  test.each(kinds.flatMap((k) => spoilers.map(([name, spoil]) => ({ k, kind: k.kind, name, spoil }))))(
    '$kind, $name → 401 invalid_token',
    async ({ k, spoil }) => {
      const user = await app.user();
      const token = await k.mint(user);
      const spoilt = spoil(token, tokenPrefixes[k.kind]);
      expect(spoilt).not.toBe(token);
      const res = await call(k, k.send(spoilt));
      expectUnauthorized(res, true);
      await k.probe.untouched(user);
    },
  );

  const bearerKinds = kinds.filter((k) => k.kind !== 'web_session');
  const headers: [name: string, header: (token: string) => string][] = [
    ['the Basic scheme', (t) => `Basic ${t}`],
    ['the Basic scheme with user:password', (t) => `Basic ${Buffer.from(`${t}:`).toString('base64')}`],
    ['another scheme', (t) => `Token ${t}`],
    ['no scheme', (t) => t],
    ['two tokens', (t) => `Bearer ${t} ${t}`],
    ['the scheme alone', () => 'Bearer'],
  ];
  test.each(bearerKinds.flatMap((k) => headers.map(([name, header]) => ({ k, kind: k.kind, name, header }))))(
    '$kind in an Authorization header with $name → 401 invalid_token',
    async ({ k, header }) => {
      const user = await app.user();
      const token = await k.mint(user);
      const res = await call(k, { headers: { authorization: header(token) } });
      expectUnauthorized(res, true);
      await k.probe.untouched(user);
    },
  );

  test('a valid web session sent as a bearer token → 401 invalid_token', async () => {
    const user = await app.user();
    expectUnauthorized(await app.get(ME, { token: user.session }), true);
    expectUnauthorized(await app.delete(ME, { token: user.session }), true);
    expect(await isDeleted(user)).toBe(false);
    await getMe.succeeded(await app.get(ME, { session: user.session }), user);
  });

  test.each(bearerKinds)('a valid $kind sent as the session cookie → 401 invalid_token', async (k) => {
    const user = await app.user();
    const token = await k.mint(user);
    expectUnauthorized(await call(k, { headers: { cookie: `rowgate_session=${token}` } }), true);
    await k.probe.untouched(user);
  });
});

describe('unknown, expired, revoked: 401 invalid_token, all alike', () => {
  /** The answer to a well-formed token never issued: the other states must not tell more. */
  async function unknownAnswer(k: KindCase) {
    const res = await call(k, k.send(generateToken(k.kind)));
    expectUnauthorized(res, true);
    return res;
  }

  test.each(kinds)('unknown $kind (well-formed, never issued)', async (k) => {
    const user = await app.user();
    await unknownAnswer(k);
    await k.probe.untouched(user);
  });

  test.each(kinds.filter((k) => k.kind !== 'web_session'))(
    'the body of a valid $kind under another kind’s prefix is unknown',
    async (k) => {
      const user = await app.user();
      const token = await k.mint(user);
      const other = k.kind === 'personal_access_token' ? 'oauth2_user_token' : 'personal_access_token';
      const moved = tokenPrefixes[other] + token.slice(tokenPrefixes[k.kind].length);
      expectUnauthorized(await call(k, bearer(moved)), true);
      await k.probe.untouched(user);
    },
  );

  const states: [state: string, make: (k: KindCase, user: TestUser) => Promise<string>][] = [
    ['expired', (k, user) => k.mint(user, { expiresAt: past() })],
    [
      'revoked',
      async (k, user) => {
        const token = await k.mint(user);
        await k.revoke(user, token);
        return token;
      },
    ],
    [
      'of a user deleted through DELETE /v1/users/me',
      async (k, user) => {
        const token = await k.mint(user);
        const res = await app.delete(ME, { session: user.session });
        expect(res.status).toBe(204);
        return token;
      },
    ],
    [
      'of a user soft-deleted in SQL (credentials left unrevoked)',
      async (k, user) => {
        const token = await k.mint(user);
        await app.sql('update rowgate.users set deleted_at = now() where id = $1', [user.id]);
        return token;
      },
    ],
  ];
  test.each(kinds.flatMap((k) => states.map(([state, make]) => ({ k, kind: k.kind, state, make }))))(
    '$kind $state',
    async ({ k, make }) => {
      const user = await app.user();
      const token = await make(k, user);
      const res = await call(k, k.send(token));
      expectUnauthorized(res, true);
      expect(res.body.detail).toBe((await unknownAnswer(k)).body.detail);
      if (!(await isDeleted(user))) await k.probe.untouched(user);
    },
  );

  test('an expired impersonation session authenticates nobody', async () => {
    const admin = await app.user({ admin: true });
    const target = await app.user();
    const token = await app.session(target.id, { impersonatorId: admin.id, lifetime: '-1 second' });
    expectUnauthorized(await app.get(ME, { session: token }), true);
  });
});

describe('GET /v1/personal-access-tokens/{id}: the caller’s own token, as its list shows it', () => {
  test('its owner reads it; another user, and anyone once it is revoked, gets 404', async () => {
    const owner = await app.user();
    const stranger = await app.user();
    await app.pat(owner.id, ['user:read']);
    const [listed] = (await app.get('/v1/personal-access-tokens/', { session: owner.session })).body.items;
    const path = `/v1/personal-access-tokens/${listed.id}`;
    const read = await app.get(path, { session: owner.session });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(listed);
    expect(read.body).not.toHaveProperty('token');
    expect((await app.get(path, { session: stranger.session })).status).toBe(404);
    expect((await app.delete(path, { session: owner.session })).status).toBe(204);
    expect((await app.get(path, { session: owner.session })).status).toBe(404);
  });
});

describe('DELETE /v1/users/me revokes every credential of the user', () => {
  test.each(kinds)('deleted with a $kind', async (deleting) => {
    const user = await app.user();
    const tokens = await Promise.all(kinds.map(async (k) => ({ k, token: await k.mint(user) })));
    const deletingToken = tokens.find((t) => t.k === deleting)!.token;
    await deleteMe.succeeded(await app.delete(ME, deleting.send(deletingToken)), user);

    for (const { k, token } of tokens) {
      expectUnauthorized(await call(k, k.send(token)), true);
    }
    expectUnauthorized(await app.get(ME, { session: user.session }), true);
    // revoked in the database, not merely hidden behind the deleted user
    const [row] = await app.sql(
      `select
         (select count(*) from rowgate_private.sessions where user_id = $1 and revoked_at is null) as live_sessions,
         (select count(*) from rowgate.personal_access_tokens where user_id = $1 and deleted_at is null) as live_pats,
         (select count(*) from rowgate_private.oauth2_access_tokens where user_id = $1 and revoked_at is null) as live_oauth`,
      [user.id],
    );
    expect(row).toEqual({ live_sessions: 0, live_pats: 0, live_oauth: 0 });
  });

  test('another user’s credentials keep working', async () => {
    const [gone, stays] = [await app.user(), await app.user()];
    expect((await app.delete(ME, { session: gone.session })).status).toBe(204);
    await getMe.succeeded(await app.get(ME, { session: stays.session }), stays);
  });
});

describe('a bearer token wins over the cookie', () => {
  test('valid cookie + a valid PAT on a web-only endpoint → 401 (the PAT was judged, not the cookie)', async () => {
    const user = await app.user();
    const pat = await app.pat(user.id, ['user:write']);
    const res = await app.get(ME, both(user.session, pat));
    expectUnauthorized(res, false); // a good token of a kind this endpoint does not take
    expect(res.body.detail).toMatch(/web session/);
  });

  const invalidBearers: [name: string, bearer: (user: TestUser) => Promise<string>][] = [
    ['an unknown PAT', async () => generateToken('personal_access_token')],
    ['an unknown OAuth2 user token', async () => generateToken('oauth2_user_token')],
    ['an expired PAT of the same user', (user) => app.pat(user.id, ['user:write'], { expiresAt: past() })],
    ['a malformed token', async () => 'rg_pat_short'],
  ];
  test.each(invalidBearers)('valid cookie + %s → 401, and nothing happens', async (_name, makeBearer) => {
    const user = await app.user();
    const res = await app.delete(ME, both(user.session, await makeBearer(user)));
    expectUnauthorized(res, true);
    expect(await isDeleted(user)).toBe(false);
  });

  const invalidCookies: [name: string, cookie: (user: TestUser) => Promise<string>][] = [
    ['an unknown session', async () => generateToken('web_session')],
    ['a malformed session', async () => 'rg_us_nope'],
    [
      'a revoked session',
      async (user) => {
        const token = await app.session(user.id);
        await kinds[0]!.revoke(user, token);
        return token;
      },
    ],
    ['an expired session', (user) => app.session(user.id, { lifetime: '-1 minute' })],
  ];
  const bearers = kinds.filter((k) => k.kind !== 'web_session');
  test.each(bearers.flatMap((k) => invalidCookies.map(([name, cookie]) => ({ k, kind: k.kind, name, cookie }))))(
    '$name cookie + a valid $kind → the bearer authenticates',
    async ({ k, cookie }) => {
      const user = await app.user();
      const token = await k.mint(user);
      await k.probe.succeeded(await call(k, both(await cookie(user), token)), user);
    },
  );

  test.each(bearers)('the cookie of one user + a $kind of another → the bearer’s user is the subject', async (k) => {
    const [cookieUser, bearerUser] = [await app.user(), await app.user()];
    const token = await k.mint(bearerUser);
    await deleteMe.succeeded(await app.delete(ME, both(cookieUser.session, token)), bearerUser);
    expect(await isDeleted(cookieUser)).toBe(false);
  });
});

describe('an impersonation session carries only the read scopes', () => {
  let admin: TestUser;
  let target: TestUser;
  let session: string;
  beforeAll(async () => {
    admin = await app.user({ admin: true, name: 'Admin' });
    target = await app.user({ name: 'Target' });
    session = await app.session(target.id, { impersonatorId: admin.id, lifetime: '1 hour' });
  });

  test('GET /v1/users/me → 200, as the impersonated user', async () => {
    const res = await app.get(ME, { session });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: target.id, email: target.email, name: 'Target' });
  });

  test('GET /v1/personal-access-tokens/ → 200', async () => {
    const res = await app.get('/v1/personal-access-tokens/', { session });
    expect(res.status).toBe(200);
  });

  const writes: [method: string, path: string, body: unknown, scopes: string[]][] = [
    ['PATCH', ME, { name: 'Changed' }, ['user:write']],
    ['DELETE', ME, undefined, ['user:write']],
    ['POST', '/v1/personal-access-tokens/', { comment: 'x', scopes: ['user:read'] }, ['user:write']],
  ];
  test.each(writes)('%s %s → 403 InsufficientScope, nothing changes', async (method, path, body, scopes) => {
    const res = await app.request(method, path, { session, body });
    expectInsufficientScope(res, scopes);
    const [row] = await app.sql('select name, deleted_at from rowgate.users where id = $1', [target.id]);
    expect(row).toEqual({ name: 'Target', deleted_at: null });
    expect(await app.sql('select 1 from rowgate.personal_access_tokens where user_id = $1', [target.id])).toEqual([]);
  });

  test('the same user’s own session may write', async () => {
    const res = await app.patch(ME, { name: 'Target' }, { session: target.session });
    expect(res.status).toBe(200);
  });
});

test('a 401 never says whether a user exists', async () => {
  const res = await app.get(ME, { session: generateToken('web_session') });
  expectError(res, 401, 'Unauthorized');
  expect(JSON.stringify(res.body)).not.toMatch(/user/i);
});
