// Cookie-authenticated writes from another origin's page (SPEC §16): refused when
// the browser says so (Sec-Fetch-Site other than same-origin or none; without it, a
// foreign Origin), on every write of the route table that takes the session cookie
// (logout and the OAuth2 consent among them) and on GraphQL; reads, bearer tokens
// and clients that are not browsers are not.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ApiRoute, isAnonymous } from '../src/http/route-declaration.ts';
import { apiRoutes } from '../src/server/route-table.ts';
import { expectError } from './expect-api.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

const site = (value: string) => ({ 'sec-fetch-site': value });
const foreign = [
  ['Sec-Fetch-Site: same-site', site('same-site')],
  ['Sec-Fetch-Site: cross-site', site('cross-site')],
  ['no Sec-Fetch-Site, a foreign Origin', { origin: 'https://sibling.example' }],
  ['no Sec-Fetch-Site, Origin: null', { origin: 'null' }],
] as const;

const cookieWrites = apiRoutes.filter(
  (r): r is ApiRoute => r.access !== null && r.method !== 'get' && !isAnonymous(r.access) && r.access.credentials.includes('web_session'),
);

test('the writes that take the session cookie include logout, the OAuth2 consent and registration', () => {
  const names = cookieWrites.map((r) => `${r.method.toUpperCase()} ${r.path}`);
  expect(names).toEqual(expect.arrayContaining(['POST /v1/auth/logout', 'POST /v1/oauth2/consent', 'POST /v1/oauth2/register']));
  expect(names.length).toBeGreaterThanOrEqual(10);
});

describe.each(cookieWrites.map((r) => ({ route: r, name: `${r.method.toUpperCase()} ${r.path}` })))('$name', ({ route }) => {
  test.each(foreign)('with the session cookie and %s → 403 NotPermitted', async (_name, headers) => {
    const user = await app.user();
    const path = route.path.replace(/\{\w+\}/g, () => randomUUID());
    const res = await app.request(route.method.toUpperCase(), path, {
      session: user.session,
      headers,
      ...(route.body ? { body: {} } : {}),
    });
    expectError(res, 403, 'NotPermitted');
    expect(res.body.detail).toMatch(/Sec-Fetch-Site|Origin/);
    expect(res.headers.get('location')).toBeNull();
  });
});

describe('nothing changes', () => {
  test.each(foreign)('POST /v1/auth/logout with %s: the session lives on', async (_name, headers) => {
    const user = await app.user();
    expectError(await app.post('/v1/auth/logout', undefined, { session: user.session, headers }), 403, 'NotPermitted');
    expect((await app.get('/v1/users/me', { session: user.session })).status).toBe(200);
  });

  test.each(foreign)('PATCH /v1/users/me with %s: the name stays', async (_name, headers) => {
    const user = await app.user({ name: 'Alice' });
    const res = await app.patch('/v1/users/me', { name: 'Mallory was here' }, { session: user.session, headers });
    expectError(res, 403, 'NotPermitted');
    expect((await app.get('/v1/users/me', { session: user.session })).body.name).toBe('Alice');
  });

  test.each(foreign)('GraphQL with the cookie and %s (any operation may be a mutation) → 403 NotPermitted', async (_name, headers) => {
    const user = await app.user();
    const res = await app.post('/graphql', { query: '{ __typename }' }, { session: user.session, headers });
    expectError(res, 403, 'NotPermitted');
  });
});

describe('what stays allowed', () => {
  test.each([
    ['Sec-Fetch-Site: same-origin', site('same-origin')],
    ['Sec-Fetch-Site: none (typed in the address bar)', site('none')],
    ['no Sec-Fetch-Site, this server’s Origin', { origin: '' }],
  ])('a write from its own page (%s): the logout revokes the session', async (_name, given) => {
    const user = await app.user();
    const headers = 'origin' in given ? { origin: app.url } : given;
    expect((await app.post('/v1/auth/logout', undefined, { session: user.session, headers })).status).toBe(204);
    expect((await app.get('/v1/users/me', { session: user.session })).status).toBe(401);
  });

  test('a client that sends neither header (curl): the write goes through', async () => {
    const user = await app.user();
    const res = await app.patch('/v1/users/me', { name: 'Renamed by curl' }, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Renamed by curl');
  });

  test('a read with the cookie from another origin (the browser withholds its answer from that page)', async () => {
    const user = await app.user();
    expect((await app.get('/v1/users/me', { session: user.session, headers: site('cross-site') })).status).toBe(200);
  });

  test('GraphQL with the cookie from its own page (GraphiQL)', async () => {
    const user = await app.user();
    const res = await app.post('/graphql', { query: '{ __typename }' }, { session: user.session, headers: site('same-origin') });
    expect(res.status).toBe(200);
  });

  test('a write with a bearer token from another origin (a CORS app)', async () => {
    const user = await app.user();
    const token = await app.pat(user.id, ['organizations_write']);
    const res = await app.post(
      '/v1/organizations/',
      { name: 'Cross-origin Inc', slug: `cross-${randomUUID().slice(0, 8)}` },
      { token, headers: site('cross-site') },
    );
    expect(res.status).toBe(201);
  });
});
