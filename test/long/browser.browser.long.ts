// Browser clients in a real browser (SPEC §16), `npm run test:browser`:
// headless Chromium (Debian's `chromium`, installed here when missing, as the
// bench installs wrk) driven by playwright-core, against a test app whose
// ROWGATE_CORS_ORIGINS lists one other origin.
//  - /docs renders the API reference over plain HTTP, with no CSP violation;
//  - a page of the allowed origin calls /v1 with a bearer token and reads the
//    answer; the same page of an origin not listed cannot read it; a
//    cross-origin call with the session cookie is refused by the browser itself
//    (no Access-Control-Allow-Credentials).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../harness.ts';

const CHROMIUM = '/usr/bin/chromium';

/** A page that calls the API from its own origin and shows what it could read. */
const PAGE = `<!doctype html><meta charset="utf-8"><title>another origin</title>
<script>
  window.call = async (url, init) => {
    try {
      const res = await fetch(url, init);
      return { status: res.status, body: await res.text() };
    } catch (error) {
      return { blocked: String(error) };
    }
  };
</script>`;

/** An origin of its own: a server on another port that serves PAGE. */
async function pageServer(): Promise<{ origin: string; close: () => void }> {
  const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/** What PAGE's call(url, init) gave, run in the page (so with its origin). */
type CallInit = { headers?: Record<string, string>; credentials?: 'include' };
const callFrom = (page: Page, url: string, init: CallInit) =>
  page.evaluate(({ url, init }) => (window as unknown as { call: (u: string, i: CallInit) => Promise<unknown> }).call(url, init), {
    url,
    init,
  });

let app: TestApp;
let browser: Browser;
let allowed: Awaited<ReturnType<typeof pageServer>>;
let other: Awaited<ReturnType<typeof pageServer>>;
let user: TestUser;
let token: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    console.error('installing chromium (Debian package chromium)…');
    execFileSync('sh', ['-c', 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null'], {
      stdio: 'inherit',
    });
  }
  [allowed, other] = await Promise.all([pageServer(), pageServer()]);
  app = await startTestApp({ corsOrigins: [allowed.origin] });
  user = await app.user();
  token = await app.pat(user.id, ['organizations_read']);
  // as root, Chromium runs only without its sandbox
  browser = await chromium.launch({ executablePath: CHROMIUM, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
});

afterAll(async () => {
  await browser?.close();
  allowed?.close();
  other?.close();
  await app?.close();
});

describe('headless Chromium', () => {
  // reached by any name, not only localhost (helmet's upgrade-insecure-requests sent the browser to https for its CSS and JS)
  test.each(['127.0.0.1', 'localhost'])(
    '/docs renders the reference over plain HTTP reached as %s, with no CSP violation',
    async (host) => {
      const base = app.url.replace('127.0.0.1', host);
      const page = await browser.newPage();
      const problems: string[] = [];
      const elsewhere: string[] = [];
      page.on('request', (request) => {
        if (!request.url().startsWith('data:') && !request.url().startsWith(`${base}/`)) elsewhere.push(request.url());
      });
      page.on('console', (message) => {
        // a failed load is reported below with its URL
        if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(message.text());
      });
      page.on('pageerror', (error) => problems.push(String(error)));
      // every resource the page loads is there, but the icon the browser asks for on its own
      page.on('response', (response) => {
        if (response.status() >= 400 && !response.url().endsWith('/favicon.ico')) problems.push(`${response.status()} ${response.url()}`);
      });
      await page.goto(`${base}/docs`);
      // Swagger UI has drawn the document's operations
      await page.waitForSelector('.opblock', { timeout: 30_000 });
      expect(await page.locator('.opblock').count()).toBeGreaterThan(50);
      expect(await page.title()).toContain('rowgate');
      expect(problems).toEqual([]);
      expect(elsewhere).toEqual([]); // nothing upgraded to https, nothing from another host
      await page.close();
    },
  );

  test('a page of an allowed origin runs a GraphQL query with a bearer token and reads a 401 challenge', async () => {
    const page = await browser.newPage();
    await page.goto(`${allowed.origin}/`);
    const graphql = await page.evaluate(
      async ({ url, token }) => {
        const res = await fetch(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ __typename }' }),
        });
        return { status: res.status, body: await res.json() };
      },
      { url: `${app.url}/graphql`, token },
    );
    expect(graphql).toEqual({ status: 200, body: { data: { __typename: 'Query' } } });
    // WWW-Authenticate is exposed: a browser client learns why it was refused
    const challenge = await page.evaluate(
      async ({ url, token }) => (await fetch(url, { headers: { authorization: `Bearer ${token}x` } })).headers.get('www-authenticate'),
      { url: `${app.url}/v1/organizations/`, token },
    );
    expect(challenge).toBe('Bearer realm="rowgate", error="invalid_token"');
    await page.close();
  });

  test('a page of an allowed origin reads a /v1 answer made with a bearer token', async () => {
    const page = await browser.newPage();
    await page.goto(`${allowed.origin}/`);
    const result = await callFrom(page, `${app.url}/v1/organizations/`, { headers: { authorization: `Bearer ${token}` } });
    expect(result).toMatchObject({ status: 200 });
    expect(JSON.parse((result as { body: string }).body)).toMatchObject({ items: [], next_cursor: null });
    await page.close();
  });

  test('a page of an origin not listed cannot read it', async () => {
    const page = await browser.newPage();
    await page.goto(`${other.origin}/`);
    const result = await callFrom(page, `${app.url}/v1/organizations/`, { headers: { authorization: `Bearer ${token}` } });
    expect(result).toEqual({ blocked: expect.stringContaining('Failed to fetch') });
    await page.close();
  });

  test('the session cookie never goes cross-origin: the browser refuses the answer', async () => {
    const context = await browser.newContext();
    await context.addCookies([{ name: 'rowgate_session', value: user.session, url: app.url }]);
    const page = await context.newPage();
    await page.goto(`${allowed.origin}/`);
    const result = await callFrom(page, `${app.url}/v1/users/me`, { credentials: 'include' });
    expect(result).toEqual({ blocked: expect.stringContaining('Failed to fetch') });
    await context.close();
  });
});
