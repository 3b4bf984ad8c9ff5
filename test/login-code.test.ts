// Sign-in by e-mail code and sign-out (SPEC §12), the development outbox and its
// CLI command (SPEC §10), and the mailer: over HTTP, against a real database.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { trustedProxies } from '../src/core/client-address.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { projectRoot } from '../src/db/setup.ts';
import { createMailer } from '../src/signin/mailer.ts';
import { aTimestamp, expectError, expectUnauthorized, expectValidationError } from './expect-api.ts';
import { startTestApp, type ApiResponse, type TestApp } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  // each test asks from client addresses of its own (X-Forwarded-For from the trusted loopback)
  app = await startTestApp({ operating: { trustedProxies: trustedProxies('127.0.0.1') } });
});
afterAll(async () => app?.close());

const newEmail = () => `ada.${randomUUID().slice(0, 8)}@example.com`;

let clients = 0;
const newClient = () => `203.0.113.${++clients}`;
/** The client every request of a test comes from unless it says otherwise */
let client = newClient();
beforeEach(() => {
  client = newClient();
});
const from = (address: string) => ({ headers: { 'x-forwarded-for': address } });

/** The attempts answered to each address's latest request, by address */
const attempts = new Map<string, string>();
async function requestCode(email: string, address = client) {
  const res = await app.request('POST', '/v1/login-code/request', { body: { email }, ...from(address) });
  if (res.status === 202) attempts.set(email.toLowerCase(), res.body.attempt);
  return res;
}
/** The code with the attempt of the address's latest request (or the one given) */
const authenticate = (email: string, code: string, attempt = attempts.get(email.toLowerCase()), address = client) =>
  app.request('POST', '/v1/login-code/authenticate', { body: { email, code, ...(attempt ? { attempt } : {}) }, ...from(address) });

/** The code of the latest message to `email` in the development outbox. */
async function latestCode(email: string): Promise<string> {
  const [message] = await app.outbox(email);
  expect(message, `a message to ${email}`).toBeDefined();
  const code = /code is ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(message!.text)?.[1];
  expect(code, message!.text).toBeDefined();
  return code!;
}

/** The session token a response sets, checking the cookie's attributes (SPEC §2). */
function sessionCookie(res: ApiResponse): string {
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('rowgate_session='));
  expect(cookie).toBeDefined();
  expect(cookie).toMatch(/; HttpOnly/i);
  expect(cookie).toMatch(/; SameSite=Lax/i);
  expect(cookie).toMatch(/; Path=\//i);
  const token = /^rowgate_session=([^;]*)/.exec(cookie!)![1]!;
  expect(token).toMatch(/^rg_us_[0-9A-Za-z]{43}$/);
  return token;
}

async function signIn(email: string) {
  expect((await requestCode(email)).status).toBe(202);
  const res = await authenticate(email, await latestCode(email));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { user: res.body, session: sessionCookie(res) };
}

describe('POST /v1/login-code/request', () => {
  test('202 for an address nobody has: the code goes to the outbox, and no user is created yet', async () => {
    const email = newEmail();
    const res = await requestCode(email);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ attempt: expect.any(String), email, expires_in: 900 });
    const messages = await app.outbox(email);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ to: email, subject: expect.stringMatching(/sign-in code/) });
    expect(messages[0]!.text).toMatch(/valid for 15 minutes/);
    expect(await app.sql('select 1 from rowgate.users where email = $1', [email])).toEqual([]);
  });

  test('202 for a known address too, with the same answer; the address is taken lower-case', async () => {
    const user = await app.user();
    const res = await requestCode(user.email.toUpperCase());
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ attempt: expect.any(String), email: user.email, expires_in: 900 });
    expect(await app.outbox(user.email)).toHaveLength(1);
  });

  test('the code is stored only as a keyed hash, valid 15 minutes', async () => {
    const email = newEmail();
    await requestCode(email);
    const code = await latestCode(email);
    const rows = await app.sql<{ code_hash: Buffer; ttl: number }>(
      `select code_hash, extract(epoch from expires_at - created_at)::int as ttl from rowgate_private.login_codes where email = $1`,
      [email],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.ttl).toBe(900);
    expect(rows[0]!.code_hash).toHaveLength(32);
    const stored = JSON.stringify(await app.sql('select * from rowgate_private.login_codes where email = $1', [email]));
    expect(stored).not.toContain(code);
    expect(stored).not.toContain(code.replace('-', ''));
  });

  test('a sixth code for the same address from one client within the hour → 429, and no sixth message', async () => {
    const email = newEmail();
    for (let i = 0; i < 5; i++) expect((await requestCode(email)).status).toBe(202);
    const res = await requestCode(email);
    expectError(res, 429, 'TooManyRequests');
    // until the fifth newest code leaves the hour: all five were just asked for
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(3580);
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(3600);
    expect(await app.outbox(email)).toHaveLength(5);
    // another address from the same client, and the same address from another client, are not affected
    expect((await requestCode(newEmail())).status).toBe(202);
    expect((await requestCode(email, newClient())).status).toBe(202);
  });

  test('a client asks for at most 20 codes an hour in all, the same answer for known and unknown addresses', async () => {
    const known = await app.user();
    for (let i = 0; i < 20; i++) expect((await requestCode(newEmail())).status).toBe(202);
    const unknown = await requestCode(newEmail());
    const forKnown = await requestCode(known.email);
    for (const res of [unknown, forKnown]) expectError(res, 429, 'TooManyRequests');
    expect(forKnown.body).toEqual(unknown.body);
    // the owner, from its own address, is not locked out
    expect((await requestCode(known.email, newClient())).status).toBe(202);
  });

  test('an IPv6 client is its /64: the codes its addresses ask for add up', async () => {
    const asked = [];
    for (let i = 0; i < 21; i++) asked.push((await requestCode(newEmail(), `2001:db8:77::${(i + 1).toString(16)}`)).status);
    expect(asked).toEqual([...Array(20).fill(202), 429]);
    expect((await requestCode(newEmail(), '2001:db8:77:1::1')).status).toBe(202);
  });

  test('codes asked at once from one client are counted one after the other', async () => {
    const answers = await Promise.all(Array.from({ length: 30 }, () => requestCode(newEmail())));
    expect(answers.filter((r) => r.status === 202)).toHaveLength(20);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(10);
  });

  test("the wait a 429 names is the database's: when the oldest code counted leaves the hour", async () => {
    const email = newEmail();
    for (let i = 0; i < 5; i++) expect((await requestCode(email)).status).toBe(202);
    // the first code asked for 55 minutes ago, the others 2 minutes ago
    await app.sql(
      `update rowgate_private.login_codes set created_at = now() - case when created_at = (select min(created_at) from rowgate_private.login_codes where email = $1)
         then interval '55 minutes' else interval '2 minutes' end where email = $1`,
      [email],
    );
    const res = await requestCode(email);
    expectError(res, 429, 'TooManyRequests');
    // the fifth newest is the oldest, 5 minutes from leaving
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(280);
    expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(300);
    expect((res.body as { detail: string }).detail).toBe('Too many sign-in codes were asked for from this client; try again in 5 minutes');
    await app.sql(`update rowgate_private.login_codes set created_at = created_at - interval '6 minutes' where email = $1`, [email]);
    expect((await requestCode(email)).status).toBe(202);
  });

  test('the answer carries the attempt, also as the rowgate_signin cookie on the sign-in paths only', async () => {
    const res = await requestCode(newEmail());
    expect(res.body).toEqual({ attempt: expect.stringMatching(/^rg_sia_[0-9A-Za-z]{43}$/), email: expect.any(String), expires_in: 900 });
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('rowgate_signin='));
    expect(cookie).toBeDefined();
    expect(cookie).toContain(`rowgate_signin=${res.body.attempt}`);
    expect(cookie).toMatch(/; HttpOnly/i);
    expect(cookie).toMatch(/; SameSite=Lax/i);
    expect(cookie).toMatch(/; Path=\/v1\/login-code(;|$)/i);
    // only its keyed hash is kept
    expect(JSON.stringify(await app.sql('select * from rowgate_private.login_codes'))).not.toContain(res.body.attempt);
  });

  test.each([
    [{ email: 'not-an-email' }, ['body', 'email']],
    [{}, ['body', 'email']],
    [{ email: 'a@example.com', extra: 1 }, ['body', 'extra']],
  ])('%j → 422 at %j', async (body, loc) => {
    const issues = expectValidationError(await app.post('/v1/login-code/request', body));
    expect(issues.map((i) => i.loc)).toEqual([loc]);
  });

  test('a form-encoded body → 415 (JSON only)', async () => {
    const res = await app.request('POST', '/v1/login-code/request', {
      rawBody: 'email=a%40example.com',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectError(res, 415, 'UnsupportedMediaType');
  });
});

describe("sign-in codes per mailbox: 10 an hour of unknown origin, 10 more for each of the owner's own", () => {
  let networks = 0;
  /** a client of a /24 nobody signed in from */
  const strangerClient = () => `198.18.${++networks}.1`;
  const withDevice = (address: string, device: string) => ({ headers: { 'x-forwarded-for': address, cookie: `rowgate_device=${device}` } });
  const ask = (email: string, options: { headers: Record<string, string> }) =>
    app.request('POST', '/v1/login-code/request', { body: { email }, ...options });
  /** the owner signs in from `address`; the device cookie its browser keeps */
  async function ownerSignsIn(email: string, address: string): Promise<string> {
    const asked = await requestCode(email, address);
    expect(asked.status).toBe(202);
    const res = await authenticate(email, await latestCode(email), asked.body.attempt, address);
    expect(res.status).toBe(200);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('rowgate_device='));
    expect(cookie).toMatch(/; HttpOnly/i);
    expect(cookie).toMatch(/; Path=\/v1\/login-code/i);
    expect(cookie).toMatch(/; Max-Age=31536000/i);
    return /^rowgate_device=([^;]*)/.exec(cookie!)![1]!;
  }
  /** requests from strangers until the address's allowance of unknown origin is spent (10 in all, counting what came before) */
  async function strangersSpend(email: string) {
    for (let i = (await app.outbox(email)).length; i < 10; i++) expect((await requestCode(email, strangerClient())).status).toBe(202);
    expect(await app.outbox(email)).toHaveLength(10);
  }

  test('an 11th request of unknown origin answers 202 alike and nothing is mailed', async () => {
    const email = newEmail();
    const answers: ApiResponse[] = [];
    for (let i = 0; i < 11; i++) answers.push(await requestCode(email, strangerClient()));
    expect(answers.map((r) => r.status)).toEqual(Array(11).fill(202));
    expect(await app.outbox(email)).toHaveLength(10);
    // nothing tells the 11th from the others: the same body's shape, the same cookies
    const [first, last] = [answers[0]!, answers[10]!];
    expect(Object.keys(last.body)).toEqual(Object.keys(first.body));
    expect(last.body).toEqual({ attempt: expect.stringMatching(/^rg_sia_/), email, expires_in: 900 });
    const names = (r: ApiResponse) => r.headers.getSetCookie().map((c) => c.split('=')[0]);
    expect(names(last)).toEqual(names(first));
    // many clients at once do not get past it either
    await Promise.all(Array.from({ length: 5 }, () => requestCode(email, strangerClient())));
    expect(await app.outbox(email)).toHaveLength(10);
  });

  test("the owner's browser (its rowgate_device cookie) has its own 10, which strangers cannot spend", async () => {
    const email = newEmail();
    const device = await ownerSignsIn(email, strangerClient());
    await strangersSpend(email);
    expect((await requestCode(email, strangerClient())).status).toBe(202);
    expect(await app.outbox(email)).toHaveLength(10);
    // the owner, from a network it never signed in from, with its browser: codes still come
    for (let i = 0; i < 10; i++) expect((await ask(email, withDevice(strangerClient(), device))).status).toBe(202);
    expect(await app.outbox(email)).toHaveLength(20);
    // and its own 10 are spent like any other
    expect((await ask(email, withDevice(strangerClient(), device))).status).toBe(202);
    expect(await app.outbox(email)).toHaveLength(20);
  });

  test('a device cookie that is not signed by the server, or is of another address, is of unknown origin', async () => {
    const email = newEmail();
    const device = await ownerSignsIn(email, strangerClient());
    await strangersSpend(email);
    const forged = `${device.slice(0, device.lastIndexOf('.'))}.${'A'.repeat(43)}`;
    expect((await ask(email, withDevice(strangerClient(), forged))).status).toBe(202);
    const other = newEmail();
    await strangersSpend(other);
    expect((await ask(other, withDevice(strangerClient(), device))).status).toBe(202);
    expect(await app.outbox(email)).toHaveLength(10);
    expect(await app.outbox(other)).toHaveLength(10);
  });

  test('a /24 that signed in to the account lately has its own 10', async () => {
    const email = newEmail();
    const home = strangerClient(); // 198.18.N.1
    await ownerSignsIn(email, home);
    await strangersSpend(email);
    const network = home.replace(/\.1$/, '');
    // another address of the same /24, without any cookie
    for (let i = 0; i < 10; i++) expect((await requestCode(email, `${network}.${100 + i}`)).status).toBe(202);
    expect(await app.outbox(email)).toHaveLength(20);
    expect((await requestCode(email, `${network}.200`)).status).toBe(202);
    expect(await app.outbox(email)).toHaveLength(20);
    // a neighbouring /24 is a stranger's
    expect((await requestCode(email, strangerClient())).status).toBe(202);
    expect(await app.outbox(email)).toHaveLength(20);
  });

  test('an IPv6 /64 that signed in is known as a whole', async () => {
    const email = newEmail();
    await ownerSignsIn(email, '2001:db8:5a:1::1');
    await strangersSpend(email);
    expect((await requestCode(email, '2001:db8:5a:1:ffff::9')).status).toBe(202);
    expect(await app.outbox(email)).toHaveLength(11);
  });
});

describe('POST /v1/login-code/authenticate', () => {
  test('the first sign-in creates the user, answers it and sets the session cookie, which then works', async () => {
    const email = newEmail();
    const { user, session } = await signIn(email);
    expect(user).toEqual({
      id: expect.any(String),
      email,
      name: null,
      avatar_url: null,
      is_admin: false,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const me = await app.get('/v1/users/me', { session });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(user.id);
    const [row] = await app.sql<{ days: number }>(
      `select round(extract(epoch from expires_at - created_at) / 86400)::int as days from rowgate_private.sessions where user_id = $1`,
      [user.id],
    );
    expect(row!.days).toBe(31);
  });

  test('a known user signs in as itself (no new user)', async () => {
    const existing = await app.user();
    const { user } = await signIn(existing.email);
    expect(user.id).toBe(existing.id);
    expect(await app.sql('select id from rowgate.users where email = $1', [existing.email])).toEqual([{ id: existing.id }]);
  });

  test('case, spaces and dashes in the typed code do not matter; the address is case-insensitive', async () => {
    const email = newEmail();
    await requestCode(email);
    const code = await latestCode(email);
    const res = await authenticate(email.toUpperCase(), ` ${code.toLowerCase().replace('-', ' ')} `);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    sessionCookie(res);
  });

  test('a wrong code → 401 and no cookie; the right one still works afterwards', async () => {
    const email = newEmail();
    await requestCode(email);
    const code = await latestCode(email);
    const wrong = await authenticate(email, code === 'AAAA-AAAA' ? 'BBBB-BBBB' : 'AAAA-AAAA');
    expectUnauthorized(wrong, false);
    expect(wrong.headers.getSetCookie()).toEqual([]);
    expect((await authenticate(email, code)).status).toBe(200);
  });

  test('5 wrong codes end the attempt, wherever they come from: the right code is then 401 too', async () => {
    const email = newEmail();
    await requestCode(email);
    const code = await latestCode(email);
    for (let i = 0; i < 5; i++) expectUnauthorized(await authenticate(email, 'ZZZZ-ZZZ2', undefined, newClient()), false);
    const [row] = await app.sql<{ wrong_codes: number }>('select wrong_codes from rowgate_private.login_codes where email = $1', [email]);
    expect(row!.wrong_codes).toBe(5);
    expectUnauthorized(await authenticate(email, code), false);
    // a new attempt has its own code
    await requestCode(email);
    expect((await authenticate(email, await latestCode(email))).status).toBe(200);
  });

  test("a code works only with its own attempt: another client's guesses cannot reach it, nor end it", async () => {
    const email = newEmail();
    await requestCode(email);
    const code = await latestCode(email);
    const ownerAttempt = attempts.get(email)!;
    // a guesser asks for a code to the same address: its attempt is its own
    const guesser = newClient();
    await requestCode(email, guesser);
    const guesserAttempt = attempts.get(email)!;
    expectUnauthorized(await authenticate(email, code, guesserAttempt, guesser), false);
    expectUnauthorized(await authenticate(email, code, `rg_sia_${'x'.repeat(43)}`, guesser), false);
    // with no attempt at all, nothing is counted against anyone
    const none = await app.request('POST', '/v1/login-code/authenticate', { body: { email, code }, ...from(guesser) });
    expectUnauthorized(none, false);
    expect((await authenticate(email, code, ownerAttempt)).status).toBe(200);
  });

  test('the attempt comes from the rowgate_signin cookie when the body has none', async () => {
    const email = newEmail();
    const asked = await requestCode(email);
    const cookie = asked.headers
      .getSetCookie()
      .find((c) => c.startsWith('rowgate_signin='))!
      .split(';')[0]!;
    const res = await app.request('POST', '/v1/login-code/authenticate', {
      body: { email, code: await latestCode(email) },
      headers: { cookie, 'x-forwarded-for': client },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // the attempt is over: its cookie is cleared
    expect(res.headers.getSetCookie().find((c) => c.startsWith('rowgate_signin='))).toMatch(/Expires=Thu, 01 Jan 1970/);
  });

  test('a code signs in once', async () => {
    const email = newEmail();
    await requestCode(email);
    const code = await latestCode(email);
    expect((await authenticate(email, code)).status).toBe(200);
    expectUnauthorized(await authenticate(email, code), false);
  });

  test('an expired code → 401', async () => {
    const email = newEmail();
    await requestCode(email);
    const code = await latestCode(email);
    await app.sql(`update rowgate_private.login_codes set expires_at = now() - interval '1 second' where email = $1`, [email]);
    expectUnauthorized(await authenticate(email, code), false);
  });

  test('a code is good for its own address only', async () => {
    const email = newEmail();
    const other = newEmail();
    await requestCode(email);
    const attempt = attempts.get(email);
    await requestCode(other);
    expectUnauthorized(await authenticate(other, await latestCode(email), attempt), false);
  });

  test('a sign-in for a deleted user creates a new user with the address', async () => {
    const { user, session } = await signIn(newEmail());
    expect((await app.delete('/v1/users/me', { session })).status).toBe(204);
    const again = await signIn(user.email);
    expect(again.user.id).not.toBe(user.id);
  });

  test('the body is validated: 422 at its fields', async () => {
    const issues = expectValidationError(await app.post('/v1/login-code/authenticate', { email: 'x' }));
    expect(issues.map((i) => i.loc).sort()).toEqual([
      ['body', 'code'],
      ['body', 'email'],
    ]);
  });
});

describe('POST /v1/auth/logout', () => {
  test("revokes the session server-side (204), clears the cookie, and leaves the user's other sessions alone", async () => {
    const { user, session } = await signIn(newEmail());
    const other = await app.session(user.id);
    const res = await app.post('/v1/auth/logout', undefined, { session });
    expect(res.status).toBe(204);
    expect(res.body).toBe('');
    const cleared = res.headers.getSetCookie().find((c) => c.startsWith('rowgate_session='));
    expect(cleared).toMatch(/^rowgate_session=;.*Expires=Thu, 01 Jan 1970/i);
    // the token itself no longer works, whoever keeps it
    expectUnauthorized(await app.get('/v1/users/me', { session }), true);
    const [row] = await app.sql('select revoked_at from rowgate_private.sessions where token_hash = $1', [app.hash(session)]);
    expect(row!.revoked_at).toEqual(aTimestamp);
    expect((await app.get('/v1/users/me', { session: other })).status).toBe(200);
  });

  test('an impersonation session can sign out too', async () => {
    const admin = await app.user({ admin: true });
    const target = await app.user();
    const session = await app.session(target.id, { impersonatorId: admin.id, lifetime: '1 hour' });
    expect((await app.post('/v1/auth/logout', undefined, { session })).status).toBe(204);
    expectUnauthorized(await app.get('/v1/users/me', { session }), true);
  });

  test('without a session → 401; with a token → 401 (web sessions only)', async () => {
    expectUnauthorized(await app.post('/v1/auth/logout', undefined), false);
    const user = await app.user();
    expectUnauthorized(await app.post('/v1/auth/logout', undefined, { token: await app.pat(user.id, ['user:write']) }), false);
  });
});

describe('the anonymous role reaches only what sign-in needs', () => {
  async function asAnonymous<T>(work: (c: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: app.authenticatorUrl });
    await client.connect();
    try {
      await client.query('begin');
      await client.query(`select set_config('role', 'rowgate_anonymous', true)`);
      return await work(client);
    } finally {
      await client.query('rollback').catch(() => {});
      await client.end();
    }
  }
  const refused = (sql: string, values: unknown[] = []) =>
    asAnonymous(async (c) => {
      const error = await c.query(sql, values).then(
        () => null,
        (e: { code?: string }) => e,
      );
      expect({ sql, code: error?.code }).toEqual({ sql, code: '42501' });
    });

  test.each([
    'select * from rowgate_private.login_codes',
    'select * from rowgate_private.mail_outbox',
    'select * from rowgate_private.sessions',
    'select * from rowgate.users',
    'select * from rowgate.oauth2_clients',
    'select * from rowgate_private.oauth2_refresh_tokens',
    'select rowgate.revoke_current_session()',
    'select rowgate.delete_oauth2_client(gen_random_uuid())',
  ])('%s → permission denied', (sql) => refused(sql));

  test('it may ask for a code (the function checks nothing it should not)', async () => {
    const row = await asAnonymous(
      async (c) =>
        (await c.query(`select * from rowgate.request_login_code('x@example.com', '\\x00', '\\x01', '192.0.2.9', null)`)).rows[0],
    );
    expect(row).toEqual({ status: 'created', expires_in: 900, retry_after: null, mail: true });
  });
});

describe('the mailer', () => {
  test('with no SMTP_URL: the outbox, and a log line that shows no code', async () => {
    const lines: string[] = [];
    const mailer = createMailer(loadConfig({}), (l) => lines.push(l), app.secret);
    const client = new pg.Client({ connectionString: app.authenticatorUrl });
    await client.connect();
    const to = newEmail();
    try {
      await client.query('begin');
      await client.query(`select set_config('role', 'rowgate_anonymous', true)`);
      const tx = { rows: async (text: string, values: unknown[]) => (await client.query(text, values)).rows } as never;
      await mailer.send({ to, subject: 'Hello', text: 'code is ABCD-EFGH' }, tx);
      await client.query('commit');
    } finally {
      await client.end();
    }
    expect(lines.join('\n')).toContain(`npx rowgate mail outbox --to ${to}`);
    expect(lines.join('\n')).not.toContain('ABCD-EFGH');
    expect(lines.join('\n')).not.toContain('Hello');
    expect(await app.outbox(to)).toMatchObject([{ to, subject: 'Hello', text: 'code is ABCD-EFGH' }]);
  });

  test.each([
    [{ SMTP_URL: 'http://mail.example.com' }, 'SMTP_URL'],
    [{ SMTP_URL: 'mail.example.com:25' }, 'SMTP_URL'],
    [{ MAIL_FROM: 'not an address' }, 'MAIL_FROM'],
  ])('configuration %j is refused with a message naming %s', (env, name) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(new RegExp(`${name}: `));
  });
});

describe('npx rowgate mail outbox', () => {
  function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    const base: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (
        value !== undefined &&
        !/^(DATABASE_URL|AUTH_DATABASE_URL|ROOT_DATABASE_URL|SHADOW_DATABASE_URL|ROWGATE_.*|SMTP_URL|MAIL_FROM)$/.test(key)
      )
        base[key] = value;
    }
    return new Promise((resolve) => {
      execFile(
        process.execPath,
        [path.join(projectRoot, 'src', 'cli', 'main.ts'), ...args],
        {
          cwd: projectRoot,
          timeout: 60_000,
          env: {
            ...base,
            DATABASE_URL: app.ownerUrl,
            AUTH_DATABASE_URL: app.authenticatorUrl,
            ROWGATE_SECRET: app.secret,
            ROWGATE_HOME: path.join(tmpdir(), `rowgate-mail-test-${process.pid}`),
            ...env,
          },
        },
        (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
      );
    });
  }

  test("--to prints that address's messages, newest first, as [{to, subject, text, created_at}]; the code signs in", async () => {
    const email = newEmail();
    await requestCode(email);
    await requestCode(email);
    await requestCode(newEmail());
    const run = await cli(['mail', 'outbox', '--to', email.toUpperCase()]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const messages = JSON.parse(run.stdout);
    expect(messages).toHaveLength(2);
    for (const m of messages) expect(Object.keys(m).sort()).toEqual(['created_at', 'subject', 'text', 'to']);
    expect(messages.every((m: { to: string }) => m.to === email)).toBe(true);
    expect(Date.parse(messages[0].created_at)).toBeGreaterThanOrEqual(Date.parse(messages[1].created_at));
    const code = /code is ([A-Z0-9-]+)/.exec(messages[0].text)![1]!;
    expect((await authenticate(email, code)).status).toBe(200);
  });

  test('without --to: the latest messages of every address', async () => {
    const email = newEmail();
    await requestCode(email);
    const run = await cli(['mail', 'outbox']);
    expect(run.code).toBe(0);
    const messages = JSON.parse(run.stdout);
    expect(messages.length).toBeGreaterThan(1);
    expect(messages.length).toBeLessThanOrEqual(20);
    expect(messages[0].to).toBe(email);
  });

  test('with SMTP_URL set there is no outbox to read: exit 2 with a message', async () => {
    const run = await cli(['mail', 'outbox'], { SMTP_URL: 'smtp://127.0.0.1:2525' });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/SMTP_URL is set/);
  });
});
