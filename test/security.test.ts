// The checks behind docs/security.md: security headers on
// every kind of answer, the session cookie's flags, tokens stored only as their
// keyed hash, nothing of a presented token in the server log, and the
// cross-site consent guard.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApp } from '../src/server/app.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { generateToken } from '../src/auth/tokens.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  await app.organization(admin.id);
});
afterAll(() => app?.close());

describe("security headers: an API answer's on every answer, errors included (src/http/security-headers.ts)", () => {
  const answers = () =>
    [
      ['a JSON answer', () => app.get('/v1/users/me', { session: admin.session })],
      ['a 401', () => app.get('/v1/users/me')],
      ['a 404 route', () => app.get('/v1/nothing-here')],
      ['a 405', () => app.request('PUT', '/v1/users/me', { session: admin.session })],
      ['a 422', () => app.get('/v1/products/?limit=0', { session: admin.session })],
      [
        'malformed JSON',
        () =>
          app.request('POST', '/v1/organizations/', {
            session: admin.session,
            rawBody: '{',
            headers: { 'content-type': 'application/json' },
          }),
      ],
      ['an OAuth2 error', () => app.request('POST', '/v1/oauth2/token', { rawBody: '{', headers: { 'content-type': 'application/json' } })],
      ['the OpenAPI document', () => app.get('/v1/openapi.json')],
      ['GraphQL', () => app.request('POST', '/graphql', { body: { query: '{ __typename }' } })],
    ] as const;
  test.each(answers().map(([name], i) => [name, i] as const))('%s', async (_name, i) => {
    const res = await answers()[i]![1]();
    expect(res.headers.get('content-type')).toMatch(/json/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(res.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cross-origin-resource-policy')).toBe('same-origin');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('x-powered-by')).toBeNull();
  });
});

describe("security headers: a page's (helmet's defaults) on the HTML pages and their files", () => {
  test.each(['/docs', '/docs/init.js', '/docs/swagger-ui.css'])('%s', async (path) => {
    const res = await app.get(path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(res.headers.get('cross-origin-opener-policy')).toBe('same-origin');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('strict-transport-security')).toMatch(/max-age=\d+/);
  });
});

test('the session cookie of a sign-in is HttpOnly, SameSite=Lax, for the whole site, and sign-out clears it', async () => {
  const email = `cookie-${Date.now()}@example.com`;
  const asked = await app.post('/v1/login-code/request', { email });
  expect(asked.status).toBe(202);
  const [mail] = await app.outbox(email);
  const code = /code is ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(mail!.text)?.[1];
  expect(code, mail!.text).toBeDefined();
  const res = await app.post('/v1/login-code/authenticate', { email, code, attempt: asked.body.attempt });
  expect(res.status).toBe(200);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith('rowgate_session=')) ?? '';
  expect(cookie).toMatch(/^rowgate_session=rg_us_[0-9A-Za-z]{32,}/);
  expect(cookie).toMatch(/;\s*HttpOnly/i);
  expect(cookie).toMatch(/;\s*SameSite=Lax/i);
  expect(cookie).toMatch(/;\s*Path=\//i);
  const session = /^rowgate_session=([^;]+)/.exec(cookie)![1]!;
  const out = await app.post('/v1/auth/logout', undefined, { session });
  expect(out.status).toBe(204);
  expect(out.headers.get('set-cookie')).toMatch(/^rowgate_session=;.*Expires=Thu, 01 Jan 1970/i);
  // revoked server-side: the old cookie authenticates nobody
  expect((await app.get('/v1/users/me', { session })).status).toBe(401);
});

test('a token the API creates is shown once and stored nowhere in the clear, only as its keyed hash', async () => {
  const res = await app.post('/v1/personal-access-tokens/', { comment: 'audit', scopes: ['products_read'] }, { session: admin.session });
  expect(res.status).toBe(201);
  const token: string = res.body.token;
  expect(token).toMatch(/^rg_pat_[0-9A-Za-z]{32,}$/);
  // the hash is there
  const [stored] = await app.sql(`select count(*)::int as n from rowgate_private.access_token_hashes where token_hash = $1`, [
    app.hash(token),
  ]);
  expect(stored.n).toBe(1);
  // and the clear token is in no row of any table of the database
  const tables = await app.sql<{ name: string }>(
    `select format('%I.%I', n.nspname, c.relname) as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where c.relkind = 'r' and n.nspname in ('rowgate', 'rowgate_private', 'rowgate_hidden', 'rowgate_partitions')`,
  );
  expect(tables.length).toBeGreaterThan(10);
  const body = token.slice('rg_pat_'.length);
  for (const { name } of tables) {
    const [row] = await app.sql(`select count(*)::int as n from ${name} t where strpos(to_jsonb(t)::text, $1) > 0`, [body]);
    expect({ table: name, rows: row.n }).toEqual({ table: name, rows: 0 });
  }
  // nor does any read of it show the token again
  const listed = await app.get('/v1/personal-access-tokens/', { session: admin.session });
  expect(JSON.stringify(listed.body)).not.toContain(body);
});

test('the server log never shows a presented token, whatever the request', async () => {
  const lines: string[] = [];
  const logged = createApp({
    pool: app.pool,
    secret: app.secret,
    routes: allRoutes(app.pool),
    log: (line) => lines.push(line),
    mailer: outboxMailer((line) => lines.push(line)),
  });
  const server = logged.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const tokens = [generateToken('personal_access_token'), generateToken('organization_access_token'), generateToken('web_session')];
  const pat = await app.pat(admin.id, ['products_read']);
  try {
    for (const token of [...tokens, pat]) {
      const inits: RequestInit[] = [
        { headers: { authorization: `Bearer ${token}` } },
        { headers: { cookie: `rowgate_session=${token}` } },
        {
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          method: 'POST',
          body: `{"token": "${token}", `,
        },
        {
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          method: 'POST',
          body: JSON.stringify({ name: token, slug: token }),
        },
      ];
      for (const init of inits) {
        for (const path of ['/v1/products/', `/v1/products/${token}`, `/v1/organizations/?slug=${token}`, '/graphql']) {
          const res = await fetch(url + path, init);
          expect(res.status).toBeLessThan(500);
          await res.arrayBuffer();
        }
      }
    }
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  for (const token of [...tokens, pat]) {
    const body = token.replace(/^rg_[a-z_]+?_/, '');
    expect(lines.filter((l) => l.includes(body))).toEqual([]);
  }
});

test('a cross-site POST to the consent endpoint is refused even with the session cookie', async () => {
  const res = await app.request('POST', '/v1/oauth2/consent', {
    session: admin.session,
    rawBody:
      'action=allow&client_id=x&redirect_uri=https%3A%2F%2Fevil.example%2Fcb&response_type=code&scope=products_read&state=s&code_challenge=abc&code_challenge_method=S256',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
  });
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  expect(res.headers.get('location')).toBeNull();
});

test('behind a trusted proxy that ends TLS, the cookies of a sign-in go out Secure; a forged X-Forwarded-Proto changes nothing', async () => {
  const { trustedProxies } = await import('../src/core/client-address.ts');
  const behind = await startTestApp({ operating: { trustedProxies: trustedProxies('127.0.0.1') } });
  const direct = await startTestApp();
  try {
    for (const [target, secure] of [
      [behind, true],
      [direct, false],
    ] as const) {
      const email = `proxied-${Date.now()}-${secure}@example.com`;
      const asked = await target.request('POST', '/v1/login-code/request', { body: { email }, headers: { 'x-forwarded-proto': 'https' } });
      expect(asked.status).toBe(202);
      const cookie = asked.headers.getSetCookie().find((c) => c.startsWith('rowgate_signin='))!;
      expect(/;\s*Secure/i.test(cookie), `${secure ? 'trusted' : 'untrusted'} proxy`).toBe(secure);
    }
  } finally {
    await behind.close();
    await direct.close();
  }
});
