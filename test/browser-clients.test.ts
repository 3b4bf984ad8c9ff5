// Browser apps and OAuth2 libraries (SPEC §16): CORS for the origins of
// ROWGATE_CORS_ORIGINS (bearer tokens only, never credentials), the metadata
// readable from anywhere, and an issuer the Host header cannot change.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

const APP_ORIGIN = 'http://app.example:3000';
const OTHER_ORIGIN = 'http://evil.example';
const PUBLIC_URL = 'https://rowgate.example';

let app: TestApp;
let plain: TestApp;
let ada: TestUser;
let token: string;
beforeAll(async () => {
  [app, plain] = await Promise.all([startTestApp({ corsOrigins: [APP_ORIGIN], publicUrl: PUBLIC_URL }), startTestApp()]);
  ada = await app.user();
  const organization = await app.organization(ada.id);
  await app.product(organization.id);
  token = await app.pat(ada.id, ['products_read']);
});
afterAll(async () => {
  await app?.close();
  await plain?.close();
});

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A request with headers fetch would not let a test choose (Origin, Host). */
function raw(target: TestApp, method: string, pathname: string, headers: Record<string, string> = {}, body?: string): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${target.url}${pathname}`, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

const preflight = (target: TestApp, pathname: string, origin: string, method = 'GET', headers = 'authorization') =>
  raw(target, 'OPTIONS', pathname, { origin, 'access-control-request-method': method, 'access-control-request-headers': headers });

describe('CORS for an allowed origin', () => {
  test.each([
    ['/v1/products/', 'GET', 'authorization'],
    // the consistency token a write answered, sent back by a later read (SPEC §19)
    ['/v1/products/', 'GET', 'authorization,rowgate-consistency'],
    ['/v1/products/', 'POST', 'authorization,content-type,idempotency-key'],
    ['/graphql', 'POST', 'authorization,content-type'],
    ['/v1/oauth2/token', 'POST', 'content-type'],
    ['/v1/oauth2/revoke', 'POST', 'content-type,authorization'],
    ['/v1/oauth2/introspect', 'POST', 'content-type,authorization'],
  ])('a preflight of %s %s: 204, the origin, no credentials', async (pathname, method, headers) => {
    const res = await preflight(app, pathname, APP_ORIGIN, method, headers);
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(String(res.headers['access-control-allow-methods'])).toContain(method);
    for (const header of headers.split(',')) expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain(header);
    expect(String(res.headers.vary)).toMatch(/Origin/);
    // a /v1 answer like any other (SPEC §14): no cache keeps it, and it carries the API's security headers
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  test('a call with a bearer token: its answer names the origin and exposes WWW-Authenticate, never credentials', async () => {
    const ok = await raw(app, 'GET', '/v1/products/', { origin: APP_ORIGIN, authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).items).toHaveLength(1);
    expect(ok.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
    expect(ok.headers['access-control-allow-credentials']).toBeUndefined();
    for (const exposed of ['WWW-Authenticate', 'Retry-After', 'X-Request-Id', 'RateLimit', 'RateLimit-Policy', 'Rowgate-Consistency']) {
      expect(String(ok.headers['access-control-expose-headers']).split(',')).toContain(exposed);
    }
    // a refusal is readable too, so a client library sees why
    const refused = await raw(app, 'GET', '/v1/products/', { origin: APP_ORIGIN, authorization: 'Bearer rg_pat_nope' });
    expect(refused.status).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
  });

  test('GraphQL with a bearer token', async () => {
    const res = await raw(
      app,
      'POST',
      '/graphql',
      { origin: APP_ORIGIN, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      JSON.stringify({ query: '{ allProducts { totalCount } }' }),
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ data: { allProducts: { totalCount: 1 } } });
    expect(res.headers['access-control-allow-origin']).toBe(APP_ORIGIN);
  });
});

describe('no CORS header for any other origin, nor without ROWGATE_CORS_ORIGINS', () => {
  test.each([
    ['another origin', () => app, OTHER_ORIGIN],
    ['a server without allowed origins', () => plain, APP_ORIGIN],
  ])('%s: the preflight is refused, the call carries no CORS header', async (_name, target, origin) => {
    const res = await preflight(target(), '/v1/products/', origin);
    expect(res.status).toBe(405);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    const call = await raw(target(), 'GET', '/v1/products/', { origin, authorization: `Bearer ${token}` });
    expect(call.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('the authorization server metadata', () => {
  test('any origin may read it (Access-Control-Allow-Origin: *), on every server', async () => {
    for (const [target, origin] of [
      [app, OTHER_ORIGIN],
      [plain, APP_ORIGIN],
    ] as const) {
      const res = await raw(target, 'GET', '/.well-known/oauth-authorization-server', { origin });
      expect(res.status).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      const pre = await preflight(target, '/.well-known/oauth-authorization-server', origin, 'GET', 'accept');
      expect(pre.status).toBe(204);
      expect(pre.headers['access-control-allow-origin']).toBe('*');
    }
  });

  test('ROWGATE_PUBLIC_URL is the issuer and starts every URL, whatever Host the request names', async () => {
    for (const host of [undefined, 'evil.example', '127.0.0.1:1', 'localhost']) {
      const res = await raw(app, 'GET', '/.well-known/oauth-authorization-server', host ? { host } : {});
      const metadata = JSON.parse(res.body);
      expect(metadata.issuer, String(host)).toBe(PUBLIC_URL);
      const urls = Object.entries<unknown>(metadata).filter(([key]) => key.endsWith('_endpoint') || key === 'service_documentation');
      expect(urls.length).toBeGreaterThan(5);
      for (const [key, url] of urls) expect(String(url).startsWith(`${PUBLIC_URL}/`), key).toBe(true);
    }
  });

  test('unset, the issuer is the address the server listens on (http://HOST:PORT), whatever the Host', async () => {
    const res = await raw(plain, 'GET', '/.well-known/oauth-authorization-server', { host: 'localhost:9' });
    expect(JSON.parse(res.body).issuer).toBe(plain.url);
  });
});
