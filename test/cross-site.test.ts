// Cookie-authenticated writes from another origin's page (SPEC §16): refused when
// the browser says so (Sec-Fetch-Site other than same-origin or none), logout
// included; reads, bearer tokens and clients that are not browsers are not.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError } from './expect-api.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

const site = (value: string) => ({ 'sec-fetch-site': value });

describe('the session cookie, a write, another origin: 403 NotPermitted, nothing changed', () => {
  test.each(['same-site', 'cross-site'])('POST /v1/auth/logout with Sec-Fetch-Site: %s', async (value) => {
    const user = await app.user();
    const res = await app.post('/v1/auth/logout', undefined, { session: user.session, headers: site(value) });
    expectError(res, 403, 'NotPermitted');
    expect(res.body.detail).toContain('Sec-Fetch-Site');
    expect((await app.get('/v1/users/me', { session: user.session })).status).toBe(200);
  });

  test.each(['same-site', 'cross-site'])('PATCH /v1/users/me with Sec-Fetch-Site: %s', async (value) => {
    const user = await app.user();
    const res = await app.patch('/v1/users/me', { name: 'Mallory was here' }, { session: user.session, headers: site(value) });
    expectError(res, 403, 'NotPermitted');
    expect((await app.get('/v1/users/me', { session: user.session })).body.name).not.toBe('Mallory was here');
  });
});

describe('what stays allowed', () => {
  test.each(['same-origin', 'none'])('a write from its own page (Sec-Fetch-Site: %s): the logout revokes the session', async (value) => {
    const user = await app.user();
    expect((await app.post('/v1/auth/logout', undefined, { session: user.session, headers: site(value) })).status).toBe(204);
    expect((await app.get('/v1/users/me', { session: user.session })).status).toBe(401);
  });

  test('a client that sends no Sec-Fetch-Site (curl): the write goes through', async () => {
    const user = await app.user();
    const res = await app.patch('/v1/users/me', { name: 'Renamed by curl' }, { session: user.session });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Renamed by curl');
  });

  test('a read with the cookie from another origin (its answer is the browser’s to withhold)', async () => {
    const user = await app.user();
    expect((await app.get('/v1/users/me', { session: user.session, headers: site('cross-site') })).status).toBe(200);
  });

  test('a write with a bearer token from another origin (a CORS app)', async () => {
    const user = await app.user();
    const token = await app.pat(user.id, ['organizations_write']);
    const res = await app.post(
      '/v1/organizations/',
      { name: 'Cross-origin Inc', slug: `cross-${Date.now()}` },
      { token, headers: site('cross-site') },
    );
    expect(res.status).toBe(201);
  });
});
