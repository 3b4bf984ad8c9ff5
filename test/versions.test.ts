// API versions (SPEC §23): the Rowgate-Version header read before anything
// else, the versions list, the document of each version, CORS for the
// version's headers, idempotency keys per version, and the retirement headers.
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ApiVersions, VERSIONS } from '../src/core/versions.ts';
import { createApp } from '../src/server/app.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

const OLD = '2026-11-20';
const NEW = '2026-12-15';

let app: TestApp;
let user: TestUser;
let org: string;
beforeAll(async () => {
  app = await startTestApp({ corsOrigins: ['https://app.example.com'] });
  user = await app.user();
  org = (await app.organization(user.id)).id;
});
afterAll(async () => app?.close());

describe('the Rowgate-Version header (SPEC §23)', () => {
  test.each([['2026-11-21'], [''], ['latest'], ['2026-11-20, 2026-12-15']])(
    '%j is 400 UnsupportedVersion before authentication, naming the supported ones',
    async (version) => {
      for (const options of [{}, { token: 'rg_pat_not_a_token' }, { session: user.session }]) {
        const res = await app.get('/v1/products/', { ...options, headers: { 'rowgate-version': version } });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('UnsupportedVersion');
        expect(res.body.detail).toContain(`${NEW}, ${OLD}`);
        expect(res.headers.get('rowgate-version')).toBe(NEW);
      }
    },
  );

  test('every /v1 answer names its version: a list, a 401, a 404, a 422', async () => {
    for (const version of [OLD, NEW]) {
      const headers = { 'rowgate-version': version };
      const answers = [
        await app.get('/v1/products/', { session: user.session, headers }),
        await app.get('/v1/products/', { headers }),
        await app.get(`/v1/products/${randomUUID()}`, { session: user.session, headers }),
        await app.get('/v1/products/?limit=0', { session: user.session, headers }),
        await app.get('/v1/no-such-thing', { headers }),
      ];
      expect(answers.map((r) => [r.status, r.headers.get('rowgate-version')])).toEqual(
        [200, 401, 404, 422, 404].map((status) => [status, version]),
      );
    }
  });

  test('a version changes only what its list says: a get, a create and its errors answer alike in both', async () => {
    const created = await app.post(
      '/v1/products/',
      { organization_id: org, name: 'same', price_amount: 1, price_currency: 'usd' },
      {
        session: user.session,
        headers: { 'rowgate-version': NEW },
      },
    );
    expect(created.status).toBe(201);
    const [old, now] = await Promise.all(
      [OLD, NEW].map((v) => app.get(`/v1/products/${created.body.id}`, { session: user.session, headers: { 'rowgate-version': v } })),
    );
    expect(now!.body).toEqual(old!.body);
    const refusals = await Promise.all(
      [OLD, NEW].map((v) => app.post('/v1/products/', { name: 'x' }, { session: user.session, headers: { 'rowgate-version': v } })),
    );
    expect(refusals[1]!.body).toEqual(refusals[0]!.body);
  });

  test('the OAuth2 protocol endpoints and /.well-known ignore the header', async () => {
    const headers = { 'rowgate-version': 'nonsense' };
    const token = await app.request('POST', '/v1/oauth2/token', {
      rawBody: 'grant_type=authorization_code&code=x',
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(token.body.error).not.toBe('UnsupportedVersion');
    expect(token.body.error).toEqual(expect.any(String));
    const metadata = await app.get('/.well-known/oauth-authorization-server', { headers });
    expect(metadata.status).toBe(200);
  });
});

describe('GET /v1/versions', () => {
  test('lists every version newest first with its changes, without a credential, alike in each version', async () => {
    const answers = await Promise.all([undefined, OLD, NEW].map((v) => app.get('/v1/versions', { version: v ?? null })));
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.body).toEqual(answers[0]!.body);
    }
    const { items } = answers[0]!.body;
    expect(Object.keys(answers[0]!.body)).toEqual(['items']);
    expect(items.map((v: { version: string }) => v.version)).toEqual([NEW, OLD]);
    expect(items[0]).toEqual({ version: NEW, released_at: expect.any(String), changes: [expect.stringContaining('next_cursor')] });
    expect(items[1].changes).toEqual([]);
  });
});

describe('the OpenAPI document of each version', () => {
  const listAnswer = (document: any) =>
    document.paths['/v1/products/'].get.responses['200'].content['application/json'].schema as { $ref?: string };
  const resolved = (document: any, schema: { $ref?: string }) =>
    schema.$ref ? document.components.schemas[schema.$ref.split('/').pop()!] : schema;
  const listParameters = (document: any) => document.paths['/v1/products/'].get.parameters.map((p: { name: string }) => p.name);

  test('/v1/openapi.json is the newest; ?version= or the header picks another; an unknown one is 400', async () => {
    const newest = (await app.get('/v1/openapi.json', { version: null })).body;
    expect(newest.info.version).toBe(NEW);
    expect(Object.keys(resolved(newest, listAnswer(newest)).properties)).toEqual(['items', 'next_cursor']);
    expect(listParameters(newest)).toContain('after');
    expect(listParameters(newest)).not.toContain('page');
    for (const old of [
      (await app.get(`/v1/openapi.json?version=${OLD}`, { version: null })).body,
      (await app.get('/v1/openapi.json', { headers: { 'rowgate-version': OLD } })).body,
    ]) {
      expect(old.info.version).toBe(OLD);
      expect(Object.keys(resolved(old, listAnswer(old)).properties)).toEqual(['items', 'pagination']);
      expect(listParameters(old)).toContain('page');
      expect(listParameters(old)).not.toContain('after');
    }
    // outside the lists, the two documents say the same
    const old = (await app.get(`/v1/openapi.json?version=${OLD}`)).body;
    expect(newest.paths['/v1/products/{id}']).toEqual(old.paths['/v1/products/{id}']);
    const bad = await app.get('/v1/openapi.json?version=2020-01-01', { version: null });
    expect([bad.status, bad.body.error]).toEqual([400, 'UnsupportedVersion']);
  });

  test("the documents name the version header, its 400, and the keyset lists' count headers where they apply", async () => {
    const newest = (await app.get('/v1/openapi.json', { version: null })).body;
    const old = (await app.get(`/v1/openapi.json?version=${OLD}`, { version: null })).body;
    const sent = (document: any, path: string, method = 'get') =>
      document.paths[path][method].parameters.filter((p: { in: string }) => p.in === 'header').map((p: { name: string }) => p.name);
    const answered = (document: any, path: string, status: string, method = 'get') =>
      Object.keys(document.paths[path][method].responses[status].headers ?? {});
    for (const document of [newest, old]) {
      expect(sent(document, '/v1/products/{id}')).toEqual(['Rowgate-Version']);
      expect(sent(document, '/v1/products/', 'post')).toEqual(['Rowgate-Version', 'idempotency-key']);
      expect(sent(document, '/v1/versions')).toEqual(['Rowgate-Version']);
      expect(document.paths['/v1/versions'].get.responses['400'].content['application/json'].example.error).toBe('UnsupportedVersion');
      for (const status of ['200', '400', '401', '404'])
        expect(answered(document, '/v1/products/{id}', status)).toContain('Rowgate-Version');
      expect(document.paths['/v1/products/{id}'].get.responses['400'].content['application/json'].example.error).toBe('UnsupportedVersion');
      // the OAuth2 protocol endpoints are not versioned
      expect(document.paths['/v1/oauth2/token'].post.parameters ?? []).not.toContainEqual(
        expect.objectContaining({ name: 'Rowgate-Version' }),
      );
      expect(answered(document, '/v1/oauth2/token', '200', 'post')).not.toContain('Rowgate-Version');
    }
    expect(sent(newest, '/v1/products/')).toEqual(['Rowgate-Version', 'Prefer']);
    expect(answered(newest, '/v1/products/', '200')).toEqual(expect.arrayContaining(['Rowgate-Total-Count', 'Preference-Applied']));
    expect(answered(newest, '/v1/products/{id}', '200')).not.toContain('Rowgate-Total-Count');
    expect(sent(old, '/v1/products/')).toEqual(['Rowgate-Version']);
    expect(answered(old, '/v1/products/', '200')).not.toContain('Rowgate-Total-Count');
  });

  test('/docs offers each version', async () => {
    const init = await app.get('/docs/init.js');
    for (const version of [OLD, NEW]) {
      expect(init.body).toContain(`/docs/openapi-${version}.json`);
      const reference = await app.get(`/docs/openapi-${version}.json`);
      expect([reference.status, reference.body.info.version]).toEqual([200, version]);
    }
  });
});

describe('CORS (SPEC §16) and the version headers', () => {
  test('a preflight allows Rowgate-Version, Prefer and Idempotency-Key; answers expose the version headers', async () => {
    const preflight = await app.request('OPTIONS', '/v1/products/', {
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'rowgate-version,prefer,idempotency-key',
      },
    });
    expect(preflight.status).toBe(204);
    // an answer on /v1 like any other: it names a version
    expect(preflight.headers.get('rowgate-version')).toBe(NEW);
    const allowed = preflight.headers.get('access-control-allow-headers')!.toLowerCase().split(',');
    for (const header of ['rowgate-version', 'prefer', 'idempotency-key']) expect(allowed).toContain(header);
    const answer = await app.get('/v1/products/', { session: user.session, headers: { origin: 'https://app.example.com' } });
    const exposed = answer.headers.get('access-control-expose-headers')!.toLowerCase().split(',');
    for (const header of [
      'rowgate-version',
      'rowgate-total-count',
      'preference-applied',
      'ratelimit',
      'ratelimit-policy',
      'rowgate-consistency',
    ]) {
      expect(exposed).toContain(header);
    }
  });
});

describe('idempotency keys (SPEC §17) and versions', () => {
  test('the same key in another version is 422 IdempotencyKeyReused; in the same version a replay', async () => {
    const key = randomUUID();
    const body = { organization_id: org, name: `idem ${key}`, price_amount: 100, price_currency: 'usd' };
    const send = (version: string) =>
      app.post('/v1/products/', body, { session: user.session, headers: { 'idempotency-key': key, 'rowgate-version': version } });
    expect((await send(OLD)).status).toBe(201);
    const replay = await send(OLD);
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
    const other = await send(NEW);
    expect([other.status, other.body.error]).toEqual([422, 'IdempotencyKeyReused']);
  });
});

describe('a version with a retirement date', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    // a test-only retirement date on the first version
    const versions = new ApiVersions([{ ...VERSIONS[0]!, sunset_at: '2029-01-01T00:00:00Z' }, ...VERSIONS.slice(1)]);
    server = createApp({
      pool: app.pool,
      secret: app.secret,
      routes: allRoutes(app.pool),
      mailer: outboxMailer(() => {}),
      versions,
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  test('its answers carry Deprecation (RFC 9745) and Sunset (RFC 8594); the newest version’s do not', async () => {
    const get = (version: string) =>
      fetch(`${base}/v1/products/`, { headers: { 'rowgate-version': version, cookie: `rowgate_session=${user.session}` } });
    const old = await get(OLD);
    expect(old.status).toBe(200);
    expect(old.headers.get('deprecation')).toBe(`@${Date.parse('2026-12-15T00:00:00Z') / 1000}`);
    expect(old.headers.get('sunset')).toBe('Mon, 01 Jan 2029 00:00:00 GMT');
    const now = await get(NEW);
    expect([now.headers.get('deprecation'), now.headers.get('sunset')]).toEqual([null, null]);
  });
});

describe('pinning (SPEC §23): the version of a request without Rowgate-Version', () => {
  /** the shape and the header of a list answer without Rowgate-Version */
  async function versionOf(auth: { token?: string; session?: string }, path = '/v1/products/') {
    const res = await app.get(path, { ...auth, version: null });
    expect(res.status).toBe(200);
    const shape = 'next_cursor' in res.body ? NEW : 'pagination' in res.body ? OLD : 'neither';
    expect(res.headers.get('rowgate-version')).toBe(shape);
    return shape;
  }

  test('a web session uses the newest; the header overrides any pin', async () => {
    expect(await versionOf({ session: user.session })).toBe(NEW);
    const res = await app.get('/v1/products/', { session: user.session, version: OLD });
    expect([res.headers.get('rowgate-version'), 'pagination' in res.body]).toEqual([OLD, true]);
  });

  test('personal access tokens: api_version of the create body, else the newest; tokens made before versions: 2026-11-20', async () => {
    const made = async (body: Record<string, unknown>) => {
      const res = await app.post(
        '/v1/personal-access-tokens/',
        { comment: 'pin', scopes: ['products_read'], ...body },
        { session: user.session },
      );
      expect(res.status).toBe(201);
      return res.body as { token: string; api_version: string; id: string };
    };
    const newest = await made({});
    expect(newest.api_version).toBe(NEW);
    expect(await versionOf({ token: newest.token })).toBe(NEW);
    const pinned = await made({ api_version: OLD });
    expect(pinned.api_version).toBe(OLD);
    expect(await versionOf({ token: pinned.token })).toBe(OLD);
    const listed = await app.get('/v1/personal-access-tokens/?limit=100', { session: user.session });
    expect(listed.body.items.find((t: { id: string }) => t.id === pinned.id).api_version).toBe(OLD);
    // made without a version in its transaction (the operator CLI, an owner's SQL): the newest too
    expect(await versionOf({ token: await app.pat(user.id, ['products_read']) })).toBe(NEW);
    const bad = await app.post(
      '/v1/personal-access-tokens/',
      { comment: 'x', scopes: ['products_read'], api_version: '2026-01-01' },
      { session: user.session },
    );
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((i: { loc: string[] }) => i.loc)).toEqual([['body', 'api_version']]);
  });

  test("the database pins what is made without a version to the server's newest", async () => {
    const defaults = await app.sql<{ column: string; fallback: string }>(
      `select c.table_name || '.' || c.column_name as column, c.column_default as fallback from information_schema.columns c
       where c.column_name = 'api_version' and c.table_schema in ('rowgate', 'rowgate_private') and c.column_default is not null
       order by 1`,
    );
    expect(defaults.map((d) => d.column)).toEqual([
      'oauth2_clients.api_version',
      'organization_access_tokens.api_version',
      'personal_access_tokens.api_version',
      'sessions.api_version',
      'webhook_endpoints.api_version',
    ]);
    for (const d of defaults) expect(d.fallback, d.column).toContain(`'${new ApiVersions(VERSIONS).newest}'::text`);
  });

  test('organization access tokens: api_version of the create body, else the newest', async () => {
    const made = async (body: Record<string, unknown>) => {
      const res = await app.post(
        '/v1/organization-access-tokens/',
        { organization_id: org, comment: 'pin', scopes: ['products_read'], ...body },
        { session: user.session },
      );
      expect(res.status).toBe(201);
      return res.body as { token: string; api_version: string };
    };
    const newest = await made({});
    expect([newest.api_version, await versionOf({ token: newest.token })]).toEqual([NEW, NEW]);
    const pinned = await made({ api_version: OLD });
    expect([pinned.api_version, await versionOf({ token: pinned.token })]).toEqual([OLD, OLD]);
    // made without a version in its transaction: the newest
    expect(await versionOf({ token: await app.oat(org, ['products_read']) })).toBe(NEW);
  });

  test("OAuth2 tokens use their client's version (registration body, else the newest)", async () => {
    const register = async (body: Record<string, unknown>) => {
      const res = await app.post(
        '/v1/oauth2/register',
        { client_name: 'pin', redirect_uris: ['https://app.example.com/cb'], ...body },
        { session: user.session },
      );
      expect(res.status).toBe(201);
      return res.body as { client_id: string; api_version: string };
    };
    for (const [body, version] of [
      [{}, NEW],
      [{ api_version: OLD }, OLD],
    ] as const) {
      const client = await register(body);
      expect(client.api_version).toBe(version);
      // a token of the client, as the token endpoint issues one (refreshed ones are of the same client)
      const token = await app.oauthUserToken(user.id, ['products_read']);
      await app.sql(`update rowgate_private.oauth2_access_tokens set client_id = $1 where token_hash = $2`, [
        client.client_id,
        app.hash(token),
      ]);
      expect(await versionOf({ token })).toBe(version);
    }
  });

  test('customer and member sessions use the version of the request that created them', async () => {
    const customer = await app.customer(org);
    for (const version of [OLD, NEW]) {
      const res = await app.post('/v1/customer-sessions/', { customer_id: customer }, { session: user.session, version });
      expect(res.status).toBe(201);
      expect(await versionOf({ token: res.body.token }, '/v1/customer-portal/orders/')).toBe(version);
    }
  });

  test('webhook endpoints: api_version of the create body, else the newest; PATCH changes it', async () => {
    const created = await app.post(
      '/v1/webhook-endpoints/',
      { organization_id: org, url: 'https://hooks.example.com/pin', event_types: ['order.paid'] },
      { session: user.session },
    );
    expect([created.status, created.body.api_version]).toEqual([201, NEW]);
    const patched = await app.patch(`/v1/webhook-endpoints/${created.body.id}`, { api_version: OLD }, { session: user.session });
    expect([patched.status, patched.body.api_version]).toEqual([200, OLD]);
    const pinned = await app.post(
      '/v1/webhook-endpoints/',
      { organization_id: org, url: 'https://hooks.example.com/pin2', event_types: ['order.paid'], api_version: OLD },
      { session: user.session },
    );
    expect(pinned.body.api_version).toBe(OLD);
  });
});

describe('keyset pages under concurrent inserts (SPEC §23)', () => {
  test.each(['', 'sorting=name', 'sorting=-price_amount', 'sorting=created_at'])(
    '%s: every row that existed before the first page appears exactly once, whatever is inserted meanwhile',
    async (sorting) => {
      const owner = await app.user();
      const organization = (await app.organization(owner.id)).id;
      const insert = (n: number, tag: string) =>
        app.sql<{ id: string }>(
          `insert into rowgate.products (organization_id, name, price_amount, price_currency, created_at)
           select $1, $2 || ' ' || (random() * 1000)::int, (random() * 5)::int * 100, 'usd', now() - random() * interval '30 days'
           from generate_series(1, $3::int) returning id`,
          [organization, tag, n],
        );
      const before = (await insert(40, 'before')).map((r) => r.id);
      const seen: string[] = [];
      let after: string | null = null;
      for (let page = 0; page < 100; page++) {
        const query = [sorting, 'limit=4', after ? `after=${encodeURIComponent(after)}` : ''].filter(Boolean).join('&');
        const res = await app.get(`/v1/products/?${query}`, { session: owner.session, version: NEW });
        expect(res.status).toBe(200);
        seen.push(...res.body.items.map((item: { id: string }) => item.id));
        // rows arrive between pages, sorted anywhere among the rest
        await insert(3, 'during');
        after = res.body.next_cursor;
        if (after === null) break;
      }
      const counts = new Map<string, number>();
      for (const id of seen) counts.set(id, (counts.get(id) ?? 0) + 1);
      expect(before.filter((id) => counts.get(id) !== 1)).toEqual([]);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    },
  );
});

describe('a version known before authentication', () => {
  /** A pg client that notes when the authentication and a products list are sent, and when answered. */
  class TimelineClient extends pg.Client {
    static events: string[] | null = null;
    override query(...args: unknown[]): any {
      const q = args[0];
      const text = typeof q === 'string' ? q : String((q as { text?: string })?.text);
      const label = text.includes("set_config('role'") ? 'authentication' : text.includes('from rowgate.products') ? 'list' : null;
      const answer = (pg.Client.prototype.query as (...a: unknown[]) => unknown).apply(this, args);
      const events = TimelineClient.events;
      if (label && events) {
        events.push(`${label} sent`);
        (answer as Promise<unknown>).then(
          () => events.push(`${label} answered`),
          () => {},
        );
      }
      return answer;
    }
  }

  let pool: pg.Pool;
  let server: Server;
  let base: string;
  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: app.authenticatorUrl, max: 2, Client: TimelineClient });
    server = createApp({ pool, secret: app.secret, routes: allRoutes(pool), mailer: outboxMailer(() => {}) }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await pool?.end();
  });

  async function timeline(headers: Record<string, string>) {
    const events: string[] = [];
    TimelineClient.events = events;
    try {
      const res = await fetch(`${base}/v1/products/?organization_id=${org}`, { headers });
      expect(res.status).toBe(200);
      return { version: res.headers.get('rowgate-version'), events };
    } finally {
      TimelineClient.events = null;
    }
  }

  test("a web session's list is sent with its authentication: the database pins web sessions to none", async () => {
    const [row] = await app.sql<{ pinned: string | null }>(
      `select rowgate_private.credential_api_version('web_session', gen_random_uuid()) as pinned`,
    );
    expect(row!.pinned).toBeNull();
    const { version, events } = await timeline({ cookie: `rowgate_session=${user.session}` });
    expect(version).toBe(NEW);
    expect(events.indexOf('list sent')).toBeGreaterThan(-1);
    expect(events.indexOf('list sent')).toBeLessThan(events.indexOf('authentication answered'));
  });

  test("a token's list waits for its pin, read with its authentication", async () => {
    const token = await app.pat(user.id, ['products_read']);
    const { version, events } = await timeline({ authorization: `Bearer ${token}` });
    expect(version).toBe(NEW);
    expect(events.indexOf('list sent')).toBeGreaterThan(events.indexOf('authentication answered'));
  });
});
