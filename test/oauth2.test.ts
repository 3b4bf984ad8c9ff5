// The OAuth2 authorization server (SPEC §2, §12; RFC 6749, 7636, 7009, 7662,
// 7591, 8414), end to end over HTTP against a real database: registration, the
// consent page, the code + PKCE flow, refresh rotation and reuse detection,
// revocation, introspection, user and organization tokens.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { aTimestamp, expectError, expectInsufficientScope, expectUnauthorized, expectValidationError } from './expect-api.ts';
import { startTestApp, type ApiResponse, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

const REDIRECT = 'https://client.example.com/callback';
const NATIVE_REDIRECT = 'com.example.app:/oauth/callback';

interface Client {
  id: string;
  client_id: string;
  client_secret?: string;
}

async function register(user: TestUser, body: Record<string, unknown> = {}): Promise<Client> {
  const res = await app.post(
    '/v1/oauth2/register',
    { client_name: 'Acme', redirect_uris: [REDIRECT], scope: 'user:read user:write products_read products_write', ...body },
    { session: user.session },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const publicClient = (user: TestUser, body: Record<string, unknown> = {}) =>
  register(user, { token_endpoint_auth_method: 'none', redirect_uris: [NATIVE_REDIRECT], ...body });

function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

const form = (params: Record<string, string | undefined>) =>
  new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined)).toString();

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

function authorize(user: TestUser | null, params: Record<string, string | undefined>) {
  return app.get(`/v1/oauth2/authorize?${form(params)}`, user ? { session: user.session } : {});
}

function consent(
  user: TestUser,
  params: Record<string, string | undefined>,
  options: { json?: boolean; headers?: Record<string, string> } = {},
) {
  return options.json
    ? app.post('/v1/oauth2/consent', params, { session: user.session, headers: options.headers })
    : app.request('POST', '/v1/oauth2/consent', { session: user.session, rawBody: form(params), headers: { ...FORM, ...options.headers } });
}

/** The query of the one link back to the client on an authorization error page (400, HTML, no redirect). */
function errorPageLink(res: ApiResponse, to = REDIRECT): URLSearchParams {
  expect(res.status, String(res.body)).toBe(400);
  expect(res.headers.get('location')).toBeNull();
  const hrefs = [...String(res.body).matchAll(/href="([^"]*)"/g)].map((m) =>
    m[1]!.replaceAll('&amp;', '&').replaceAll('&quot;', '"').replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&#39;', "'"),
  );
  expect(hrefs).toHaveLength(1);
  expect(hrefs[0]!.startsWith(`${to}?`), hrefs[0]).toBe(true);
  return new URL(hrefs[0]!).searchParams;
}

/** The query of the redirect a 302 answer makes. */
function redirected(res: ApiResponse, to = REDIRECT): URLSearchParams {
  expect(res.status, JSON.stringify(res.body)).toBe(302);
  const location = res.headers.get('location')!;
  expect(location.startsWith(`${to}?`), location).toBe(true);
  return new URL(location).searchParams;
}

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

/** POST a form to an OAuth2 endpoint, as the client (HTTP Basic when it has a secret, else client_id in the body). */
function clientPost(path: string, client: Client | null, params: Record<string, string | undefined>, options: { post?: boolean } = {}) {
  const headers: Record<string, string> = { ...FORM };
  const body = { ...params };
  if (client?.client_secret && !options.post) headers.authorization = basic(client.client_id, client.client_secret);
  else if (client) Object.assign(body, { client_id: client.client_id, client_secret: client.client_secret });
  return app.request('POST', path, { rawBody: form(body), headers });
}

const token = (client: Client | null, params: Record<string, string | undefined>, options: { post?: boolean } = {}) =>
  clientPost('/v1/oauth2/token', client, params, options);

interface Grant {
  code: string;
  verifier: string;
  redirect: string;
}

/** The user consents (form-encoded, like the page's form): a code for the client. */
async function grant(
  user: TestUser,
  client: Client,
  params: Record<string, string | undefined> = {},
  redirect = client.client_secret ? REDIRECT : NATIVE_REDIRECT,
): Promise<Grant> {
  const { verifier, challenge } = pkce();
  const state = randomBytes(8).toString('hex');
  const res = await consent(user, {
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: redirect,
    scope: 'user:read user:write',
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    action: 'allow',
    ...params,
  });
  const query = redirected(res, redirect);
  expect(query.get('state')).toBe(state);
  expect(query.get('error'), query.get('error_description') ?? '').toBeNull();
  return { code: query.get('code')!, verifier, redirect };
}

const exchange = (client: Client, g: Grant, extra: Record<string, string | undefined> = {}) =>
  token(client, { grant_type: 'authorization_code', code: g.code, redirect_uri: g.redirect, code_verifier: g.verifier, ...extra });

async function tokens(user: TestUser, client: Client, params: Record<string, string | undefined> = {}) {
  const res = await exchange(client, await grant(user, client, params));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { access_token: string; refresh_token: string; scope: string; expires_in: number; token_type: string };
}

const refresh = (client: Client, refreshToken: string, extra: Record<string, string> = {}) =>
  token(client, { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra });

/** An RFC 6749 §5.2 error: exactly {error, error_description}, not cacheable. */
function expectOAuth2Error(res: ApiResponse, status: number, error: string) {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: { error, error_description: expect.any(String) } });
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.headers.get('cache-control')).toBe('no-store');
}

const userinfo = (accessToken: string) => app.get('/v1/oauth2/userinfo', { token: accessToken });

describe('GET /.well-known/oauth-authorization-server (RFC 8414)', () => {
  test("the metadata names this server's endpoints and what it supports", async () => {
    const res = await app.get('/.well-known/oauth-authorization-server');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      issuer: app.url,
      authorization_endpoint: `${app.url}/v1/oauth2/authorize`,
      token_endpoint: `${app.url}/v1/oauth2/token`,
      registration_endpoint: `${app.url}/v1/oauth2/register`,
      revocation_endpoint: `${app.url}/v1/oauth2/revoke`,
      introspection_endpoint: `${app.url}/v1/oauth2/introspect`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    });
    expect(res.body.scopes_supported).toEqual(expect.arrayContaining(['user:read', 'user:write', 'products_read', 'payouts:write']));
    expect(res.body.scopes_supported.filter((s: string) => s.startsWith('customer_portal'))).toEqual([]);
  });
});

describe("POST /v1/oauth2/register (RFC 7591) and managing one's clients", () => {
  test('a confidential client gets a secret, shown once and stored only as a keyed hash', async () => {
    const user = await app.user();
    const res = await app.post(
      '/v1/oauth2/register',
      { client_name: 'Reports', redirect_uris: [REDIRECT, 'http://127.0.0.1:9999/cb'], scope: 'products_read user:read' },
      { session: user.session },
    );
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      client_id: expect.stringMatching(/^rg_ci_[0-9A-Za-z]{24}$/),
      client_secret: expect.stringMatching(/^rg_cs_[0-9A-Za-z]{43}$/),
      client_secret_expires_at: 0,
      client_name: 'Reports',
      redirect_uris: [REDIRECT, 'http://127.0.0.1:9999/cb'],
      scope: 'products_read user:read',
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      client_id_issued_at: expect.any(Number),
    });
    const [row] = await app.sql('select secret_hash from rowgate_private.oauth2_client_secrets where client_id = $1', [res.body.client_id]);
    expect(row!.secret_hash).toEqual(app.hash(res.body.client_secret));
    expect(JSON.stringify(await app.sql('select * from rowgate.oauth2_clients where client_id = $1', [res.body.client_id]))).not.toContain(
      res.body.client_secret,
    );
    // shown once: reading it back never shows it
    const got = await app.get(`/v1/oauth2/clients/${res.body.id}`, { session: user.session });
    expect(got.status).toBe(200);
    expect(got.body.client_secret).toBeUndefined();
    const { client_secret: _secret, client_secret_expires_at: _expiry, ...read } = res.body;
    expect(got.body).toEqual(read);
  });

  test('a public client (none) gets no secret; unknown RFC 7591 metadata is ignored', async () => {
    const user = await app.user();
    const res = await app.post(
      '/v1/oauth2/register',
      {
        client_name: 'App',
        redirect_uris: [NATIVE_REDIRECT],
        scope: 'user:read',
        token_endpoint_auth_method: 'none',
        logo_uri: 'https://x.example/l.png',
      },
      { session: user.session },
    );
    expect(res.status).toBe(201);
    expect(res.body.client_secret).toBeUndefined();
    expect(res.body.token_endpoint_auth_method).toBe('none');
    expect(await app.sql('select 1 from rowgate_private.oauth2_client_secrets where client_id = $1', [res.body.client_id])).toEqual([]);
  });

  test.each([
    [{ redirect_uris: ['http://client.example.com/cb'] }, ['body', 'redirect_uris', 0]],
    [{ redirect_uris: ['https://client.example.com/cb#frag'] }, ['body', 'redirect_uris', 0]],
    [{ redirect_uris: ['/relative'] }, ['body', 'redirect_uris', 0]],
    [{ redirect_uris: ['javascript:alert(1)'] }, ['body', 'redirect_uris', 0]],
    // it goes to evil.example, and the consent page would show it as it is written (a hostile review)
    [{ redirect_uris: ['https://trusted.example@evil.example/cb'] }, ['body', 'redirect_uris', 0]],
    // the answer's own parameters, which would then come twice (a registered iss would shadow the real one: RFC 9207)
    [{ redirect_uris: ['https://client.example.com/cb?iss=https%3A%2F%2Fevil.example'] }, ['body', 'redirect_uris', 0]],
    [{ redirect_uris: ['https://client.example.com/cb?x=1&code=x'] }, ['body', 'redirect_uris', 0]],
    [{ redirect_uris: [] }, ['body', 'redirect_uris']],
    [{ scope: 'user:read  products_read' }, ['body', 'scope']],
    [{ scope: 'user:read no_such_scope' }, ['body', 'scope']],
    [{ scope: 'customer_portal_read' }, ['body', 'scope']],
    [{ token_endpoint_auth_method: 'private_key_jwt' }, ['body', 'token_endpoint_auth_method']],
    [{ client_name: '' }, ['body', 'client_name']],
  ])('%j → 400 (RFC 7591) naming %j', async (change, loc) => {
    const user = await app.user();
    const res = await app.post(
      '/v1/oauth2/register',
      { client_name: 'Acme', redirect_uris: [REDIRECT], scope: 'user:read', ...change },
      { session: user.session },
    );
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: loc[1] === 'redirect_uris' ? 'invalid_redirect_uri' : 'invalid_client_metadata',
      error_description: expect.stringContaining(`${loc.slice(1).join('.')}: `),
    });
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  test('a body that is not JSON metadata → 400 invalid_client_metadata', async () => {
    const user = await app.user();
    const res = await app.request('POST', '/v1/oauth2/register', {
      session: user.session,
      rawBody: '{"client_name": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_client_metadata');
  });

  test('without a scope: every scope the server supports; the answer with its secret is not stored', async () => {
    const user = await app.user();
    const res = await app.post('/v1/oauth2/register', { client_name: 'Anything', redirect_uris: [REDIRECT] }, { session: user.session });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const metadata = await app.get('/.well-known/oauth-authorization-server');
    expect(res.body.scope.split(' ').sort()).toEqual([...metadata.body.scopes_supported].sort());
    // and its consent page shows what it asks for
    const consent = await app.get(
      `/v1/oauth2/authorize?${new URLSearchParams({ response_type: 'code', client_id: res.body.client_id, redirect_uri: REDIRECT, scope: 'products_read', state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256' })}`,
      { session: user.session },
    );
    expect(consent.status).toBe(200);
    expect(consent.body as string).toContain('products_read');
  });

  test('registration needs a web session (401 for a token), with user:write (403 for an impersonation)', async () => {
    const user = await app.user();
    const body = { client_name: 'Acme', redirect_uris: [REDIRECT], scope: 'user:read' };
    expectUnauthorized(await app.post('/v1/oauth2/register', body, { token: await app.pat(user.id, ['user:write']) }), false);
    expectUnauthorized(await app.post('/v1/oauth2/register', body), false);
    const admin = await app.user({ admin: true });
    const session = await app.session(user.id, { impersonatorId: admin.id, lifetime: '1 hour' });
    expectInsufficientScope(await app.post('/v1/oauth2/register', body, { session }), ['user:write']);
  });

  test('a user lists, gets and deletes its own clients only', async () => {
    const owner = await app.user();
    const stranger = await app.user();
    const a = await register(owner);
    const b = await publicClient(owner);
    const theirs = await register(stranger);
    const list = await app.get('/v1/oauth2/clients/', { session: owner.session });
    expect(list.status).toBe(200);
    expect(list.body.items.map((c: Client) => c.client_id).sort()).toEqual([a.client_id, b.client_id].sort());
    expect(list.body.pagination).toEqual({ total_count: 2, max_page: 1 });
    expectError(await app.get(`/v1/oauth2/clients/${theirs.id}`, { session: owner.session }), 404, 'ResourceNotFound');
    expectError(await app.delete(`/v1/oauth2/clients/${theirs.id}`, { session: owner.session }), 404, 'ResourceNotFound');
    expect((await app.delete(`/v1/oauth2/clients/${a.id}`, { session: owner.session })).status).toBe(204);
    expectError(await app.get(`/v1/oauth2/clients/${a.id}`, { session: owner.session }), 404, 'ResourceNotFound');
    expect((await app.get('/v1/oauth2/clients/', { session: owner.session })).body.items.map((c: Client) => c.client_id)).toEqual([
      b.client_id,
    ]);
    expect((await app.get(`/v1/oauth2/clients/${theirs.id}`, { session: stranger.session })).status).toBe(200);
  });

  test('deleting a client revokes its tokens at once, and its pending codes', async () => {
    const user = await app.user();
    const client = await register(user);
    const issued = await tokens(user, client);
    const pending = await grant(user, client);
    expect((await userinfo(issued.access_token)).status).toBe(200);
    expect((await app.delete(`/v1/oauth2/clients/${client.id}`, { session: user.session })).status).toBe(204);
    expectUnauthorized(await userinfo(issued.access_token), true);
    expectOAuth2Error(await refresh(client, issued.refresh_token), 401, 'invalid_client');
    expectOAuth2Error(await exchange(client, pending), 401, 'invalid_client');
  });
});

describe('the authorization code flow with PKCE, end to end over HTTP', () => {
  test("a registered redirect URI's query is kept as written, the code and state appended (RFC 6749 §3.1.2)", async () => {
    const user = await app.user();
    const withQuery = `${REDIRECT}?x=a%20b&y=%2F`;
    const client = await register(user, { redirect_uris: [withQuery] });
    const { challenge } = pkce();
    const res = await consent(user, {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: withQuery,
      scope: 'user:read',
      state: 's 1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      action: 'allow',
    });
    expect(res.status).toBe(302);
    const location = res.headers.get('location')!;
    expect(location).toMatch(new RegExp(`^${withQuery.replaceAll('?', '\\?')}&code=[^&]+&state=s\\+1&iss=`));
  });

  test('authorize page → consent form → code → token → the API', async () => {
    const user = await app.user();
    const client = await register(user, { client_name: 'Acme <Reports> & "Co"' });
    const { verifier, challenge } = pkce();
    const params = {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      scope: 'user:read user:write',
      state: 'st<"&>',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };

    // 1. the consent page: HTML whose form posts the request back, escaped
    const page = await authorize(user, params);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('content-security-policy')).toContain(`form-action 'self' https://client.example.com`);
    expect(page.headers.get('content-security-policy')).toContain(`frame-ancestors 'none'`);
    const html = page.body as string;
    expect(html).toContain('<form method="post" action="/v1/oauth2/consent">');
    expect(html).toContain('Acme &lt;Reports&gt; &amp; &quot;Co&quot;');
    expect(html).not.toContain('<Reports>');
    expect(html).toContain(user.email);
    expect(html).toContain('<code>user:write</code>');
    const fields = Object.fromEntries(
      [...html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)].map((m) => [
        m[1],
        m[2]!
          .replace(/&lt;/g, '<')
          .replace(/&gt;/g, '>')
          .replace(/&quot;/g, '"')
          .replace(/&#39;/g, "'")
          .replace(/&amp;/g, '&'),
      ]),
    );
    expect(fields).toEqual(params);
    expect(html).toMatch(/<button type="submit" name="action" value="allow">/);
    expect(html).toMatch(/<button type="submit" name="action" value="deny">/);

    // 2. the user allows: the form as the browser posts it
    const allowed = await consent(user, { ...fields, action: 'allow' }, { headers: { origin: app.url, 'sec-fetch-site': 'same-origin' } });
    const query = redirected(allowed);
    expect(query.get('state')).toBe('st<"&>');
    expect(query.get('iss')).toBe(app.url);
    const code = query.get('code')!;
    expect(code).toMatch(/^rg_ac_[0-9A-Za-z]{43}$/);
    expect(allowed.headers.get('cache-control')).toBe('no-store');

    // 3. the client exchanges the code with its verifier (HTTP Basic)
    const res = await token(client, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('pragma')).toBe('no-cache');
    expect(res.body).toEqual({
      access_token: expect.stringMatching(/^rg_at_u_[0-9A-Za-z]{43}$/),
      token_type: 'Bearer',
      expires_in: expect.any(Number),
      refresh_token: expect.stringMatching(/^rg_rt_[0-9A-Za-z]{43}$/),
      scope: 'user:read user:write',
    });
    expect(Math.abs(res.body.expires_in - 3600)).toBeLessThanOrEqual(2);

    // 4. the API, with the token
    const info = await userinfo(res.body.access_token);
    expect(info.status).toBe(200);
    expect(info.body).toEqual({ sub: user.id, email: user.email, name: null, picture: null, updated_at: expect.any(Number) });

    // only keyed hashes were stored: the code, the access token, the refresh token
    const stored = JSON.stringify([
      ...(await app.sql('select * from rowgate_private.oauth2_authorization_codes where client_id = $1', [client.client_id])),
      ...(await app.sql('select * from rowgate_private.oauth2_access_tokens where client_id = $1', [client.client_id])),
      ...(await app.sql(
        'select r.* from rowgate_private.oauth2_refresh_tokens r join rowgate_private.oauth2_token_families f on f.id = r.family_id where f.client_id = $1',
        [client.client_id],
      )),
    ]);
    for (const secret of [code, res.body.access_token, res.body.refresh_token]) expect(stored).not.toContain(secret);
    const [lifetimes] = await app.sql(
      `select extract(epoch from t.expires_at - t.created_at)::int as access, extract(epoch from r.expires_at - r.created_at)::int as refresh
       from rowgate_private.oauth2_access_tokens t join rowgate_private.oauth2_refresh_tokens r on r.family_id = t.family_id
       where t.token_hash = $1`,
      [app.hash(res.body.access_token)],
    );
    expect(lifetimes).toEqual({ access: 3600, refresh: 30 * 24 * 3600 });
  });

  test('a public client: PKCE, consent as JSON, client_id alone at the token endpoint', async () => {
    const user = await app.user();
    const client = await publicClient(user);
    const { verifier, challenge } = pkce();
    const res = await consent(
      user,
      {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: NATIVE_REDIRECT,
        scope: 'user:read',
        code_challenge: challenge,
        code_challenge_method: 'S256',
        action: 'allow',
      },
      { json: true },
    );
    const query = redirected(res, NATIVE_REDIRECT);
    expect(query.get('state')).toBeNull();
    const issued = await token(client, {
      grant_type: 'authorization_code',
      code: query.get('code')!,
      redirect_uri: NATIVE_REDIRECT,
      code_verifier: verifier,
    });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    expect(issued.body.scope).toBe('user:read');
    expect((await userinfo(issued.body.access_token)).status).toBe(200);
  });

  test('client_secret_post works too; the scope defaults to all the client registered', async () => {
    const user = await app.user();
    const client = await register(user, { token_endpoint_auth_method: 'client_secret_post', scope: 'user:read products_read' });
    const g = await grant(user, client, { scope: undefined });
    const res = await token(
      client,
      { grant_type: 'authorization_code', code: g.code, redirect_uri: g.redirect, code_verifier: g.verifier },
      { post: true },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.scope).toBe('products_read user:read');
  });

  test('a confidential client may skip PKCE; then a verifier at the token endpoint is refused', async () => {
    const user = await app.user();
    const client = await register(user);
    const query = redirected(
      await consent(user, {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        scope: 'user:read',
        action: 'allow',
      }),
    );
    expectOAuth2Error(
      await token(client, {
        grant_type: 'authorization_code',
        code: query.get('code')!,
        redirect_uri: REDIRECT,
        code_verifier: pkce().verifier,
      }),
      400,
      'invalid_grant',
    );
    const again = redirected(
      await consent(user, {
        response_type: 'code',
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        scope: 'user:read',
        action: 'allow',
      }),
    );
    const res = await token(client, { grant_type: 'authorization_code', code: again.get('code')!, redirect_uri: REDIRECT });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  test('the consent page and the consent need a web session', async () => {
    const user = await app.user();
    const client = await register(user);
    const params = { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'user:read' };
    expectUnauthorized(await authorize(null, params), false);
    expectUnauthorized(await app.get(`/v1/oauth2/authorize?${form(params)}`, { token: await app.pat(user.id, ['user:write']) }), false);
    const admin = await app.user({ admin: true });
    const impersonation = { ...user, session: await app.session(user.id, { impersonatorId: admin.id, lifetime: '1 hour' }) };
    expectInsufficientScope(await authorize(impersonation, params), ['user:write']);
    expectInsufficientScope(await consent(impersonation, { ...params, action: 'allow' }), ['user:write']);
  });
});

describe('authorization requests that fail', () => {
  let user: TestUser;
  let client: Client;
  let pub: Client;
  const base = () => ({ response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, scope: 'user:read', state: 'abc' });
  beforeAll(async () => {
    user = await app.user();
    client = await register(user);
    pub = await publicClient(user);
  });

  test('an unknown client or an unregistered redirect URI is shown to the user (422), never redirected', async () => {
    for (const send of [
      (p: Record<string, string>) => authorize(user, p),
      (p: Record<string, string>) => consent(user, { ...p, action: 'allow' }),
    ]) {
      const unknown = await send({ ...base(), client_id: 'rg_ci_000000000000000000000000' });
      expect(unknown.headers.get('location')).toBeNull();
      expect(expectValidationError(unknown).map((i) => i.loc[1])).toEqual(['client_id']);
      const elsewhere = await send({ ...base(), redirect_uri: 'https://attacker.example/cb' });
      expect(elsewhere.headers.get('location')).toBeNull();
      expect(expectValidationError(elsewhere).map((i) => i.loc[1])).toEqual(['redirect_uri']);
    }
  });

  test.each([
    ['the user denies', { action: 'deny' }, 'access_denied'],
    ['a scope the client did not register', { scope: 'user:read orders_read' }, 'invalid_scope'],
    ['an unknown scope', { scope: 'no_such_scope' }, 'invalid_scope'],
    ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
    ['no response_type', { response_type: undefined }, 'invalid_request'],
    ['code_challenge_method=plain', { code_challenge: pkce().challenge, code_challenge_method: 'plain' }, 'invalid_request'],
    ['a malformed code_challenge', { code_challenge: 'short', code_challenge_method: 'S256' }, 'invalid_request'],
    ['sub_type=organization without organization_id', { sub_type: 'organization' }, 'invalid_request'],
    ['an unknown sub_type', { sub_type: 'robot' }, 'invalid_request'],
  ])('%s → redirect with error=%s and the state', async (_name, change, error) => {
    const params = { ...base(), action: 'allow', ...change } as Record<string, string>;
    for (const key of Object.keys(params)) if (params[key] === undefined) delete params[key];
    const query = redirected(await consent(user, params));
    expect(Object.fromEntries(query)).toEqual({ error, error_description: expect.any(String), state: 'abc', iss: app.url });
    if (error !== 'access_denied') {
      // the authorization endpoint shows it first, with the same parameters behind its link
      const { action: _action, ...request } = params;
      expect(Object.fromEntries(errorPageLink(await authorize(user, request)))).toEqual(Object.fromEntries(query));
    }
  });

  test('an error at the authorization endpoint is a page the user reads, never a redirect (RFC 9700 §4.11.2)', async () => {
    // an attacker's client, a link with a scope it cannot have: the victim sees rowgate's page, not the attacker's site
    const attacker = await app.user();
    const evil = await register(attacker, { client_name: 'Evil <b>App</b>', redirect_uris: ['https://attacker.example/landing'] });
    const res = await authorize(user, {
      response_type: 'code',
      client_id: evil.client_id,
      redirect_uri: 'https://attacker.example/landing',
      scope: 'orders_write',
      state: 'x"><script>alert(1)</script>',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.body).toContain('Evil &lt;b&gt;App&lt;/b&gt;');
    expect(res.body).not.toContain('<script>');
    expect(res.body).toContain('invalid_scope');
    expect(res.body).toContain('<code>https://attacker.example</code>');
    const link = errorPageLink(res, 'https://attacker.example/landing');
    expect(Object.fromEntries(link)).toEqual({
      error: 'invalid_scope',
      error_description: expect.any(String),
      state: 'x"><script>alert(1)</script>',
      iss: app.url,
    });
    // nothing was granted
    expect(
      await app.sql('select count(*)::int as n from rowgate_private.oauth2_authorization_codes where client_id = $1', [evil.client_id]),
    ).toEqual([{ n: 0 }]);
  });

  test('a public client without PKCE → invalid_request', async () => {
    const query = redirected(
      await consent(user, {
        response_type: 'code',
        client_id: pub.client_id,
        redirect_uri: NATIVE_REDIRECT,
        scope: 'user:read',
        action: 'allow',
      }),
      NATIVE_REDIRECT,
    );
    expect(query.get('error')).toBe('invalid_request');
    expect(query.get('error_description')).toMatch(/PKCE/);
  });

  test('no code is made when the request fails or is denied', async () => {
    const before = await app.sql('select count(*)::int as n from rowgate_private.oauth2_authorization_codes where client_id = $1', [
      client.client_id,
    ]);
    redirected(await consent(user, { ...base(), action: 'deny' }));
    redirected(await consent(user, { ...base(), scope: 'orders_read', action: 'allow' }));
    expect(
      await app.sql('select count(*)::int as n from rowgate_private.oauth2_authorization_codes where client_id = $1', [client.client_id]),
    ).toEqual(before);
  });

  test.each([
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site', { 'sec-fetch-site': 'same-site' }],
    ['a foreign Origin', { origin: 'https://attacker.example' }],
    ['Origin: null', { origin: 'null' }],
  ])('a consent the browser marks as cross-site (%s) → 403, no code', async (_name, headers) => {
    const res = await consent(user, { ...base(), action: 'allow' }, { headers });
    expectError(res, 403, 'NotPermitted');
    expect(res.headers.get('location')).toBeNull();
  });

  test('the consent body is validated: 422 at its fields (action is required)', async () => {
    const { state: _state, ...rest } = base();
    expect(expectValidationError(await consent(user, rest as Record<string, string>)).map((i) => i.loc)).toEqual([['body', 'action']]);
    expect(expectValidationError(await consent(user, { ...base(), action: 'maybe' })).map((i) => i.loc)).toEqual([['body', 'action']]);
  });
});

describe('the token endpoint: codes', () => {
  let user: TestUser;
  let client: Client;
  let pub: Client;
  beforeAll(async () => {
    user = await app.user();
    client = await register(user);
    pub = await publicClient(user);
  });

  test('a replayed code fails and revokes the tokens issued from it (RFC 6749 §4.1.2)', async () => {
    const g = await grant(user, client);
    const first = await exchange(client, g);
    expect(first.status).toBe(200);
    expect((await userinfo(first.body.access_token)).status).toBe(200);
    const replay = await exchange(client, g);
    expectOAuth2Error(replay, 400, 'invalid_grant');
    expect(replay.body.error_description).toMatch(/used already/);
    expectUnauthorized(await userinfo(first.body.access_token), true);
    expectOAuth2Error(await refresh(client, first.body.refresh_token), 400, 'invalid_grant');
  });

  test('a wrong code_verifier fails, and spends the code', async () => {
    const g = await grant(user, pub);
    const wrong = await exchange(pub, g, { code_verifier: pkce().verifier });
    expectOAuth2Error(wrong, 400, 'invalid_grant');
    expect(wrong.body.error_description).toMatch(/code_verifier/);
    expectOAuth2Error(await exchange(pub, g), 400, 'invalid_grant');
  });

  test('a missing code_verifier fails when a challenge was sent', async () => {
    const g = await grant(user, pub);
    expectOAuth2Error(await exchange(pub, g, { code_verifier: undefined }), 400, 'invalid_grant');
  });

  test("a redirect_uri other than the request's fails", async () => {
    const other = await register(user, { redirect_uris: [REDIRECT, 'https://client.example.com/other'] });
    const g = await grant(user, other);
    expectOAuth2Error(await exchange(other, g, { redirect_uri: 'https://client.example.com/other' }), 400, 'invalid_grant');
  });

  test("another client's code fails (and stays the other client's)", async () => {
    const g = await grant(user, client);
    const thief = await register(user);
    expectOAuth2Error(await exchange(thief, g), 400, 'invalid_grant');
    expect((await exchange(client, g)).status).toBe(200);
  });

  test('an expired code fails', async () => {
    const g = await grant(user, client);
    await app.sql(`update rowgate_private.oauth2_authorization_codes set expires_at = now() - interval '1 second' where code_hash = $1`, [
      app.hash(g.code),
    ]);
    expectOAuth2Error(await exchange(client, g), 400, 'invalid_grant');
  });

  test('an unknown code fails', async () => {
    expectOAuth2Error(await exchange(client, { code: 'rg_ac_nope', verifier: pkce().verifier, redirect: REDIRECT }), 400, 'invalid_grant');
  });

  test('a code whose user was deleted meanwhile fails', async () => {
    const doomed = await app.user();
    const c = await register(doomed);
    const g = await grant(doomed, c);
    const other = await tokens(doomed, c);
    expect((await app.delete('/v1/users/me', { token: other.access_token })).status).toBe(204);
    // the client's owner is gone, so is the client
    expectOAuth2Error(await exchange(c, g), 401, 'invalid_client');
  });
});

describe('the token endpoint: client authentication and malformed requests', () => {
  let user: TestUser;
  let client: Client;
  let pub: Client;
  beforeAll(async () => {
    user = await app.user();
    client = await register(user);
    pub = await publicClient(user);
  });

  test.each(['token', 'revoke', 'introspect'])(
    'a NUL in the HTTP Basic client id at /v1/oauth2/%s → 401 invalid_client, not a 500',
    async (endpoint) => {
      const res = await app.request('POST', `/v1/oauth2/${endpoint}`, {
        rawBody: form({ grant_type: 'refresh_token', refresh_token: 'x', token: 'x' }),
        headers: { ...FORM, authorization: `Basic ${Buffer.from('\u0000:x').toString('base64')}` },
      });
      expectOAuth2Error(res, 401, 'invalid_client');
    },
  );

  test('a wrong secret → 401 invalid_client with a Basic challenge; the code is not spent', async () => {
    const g = await grant(user, client);
    const res = await token(
      { ...client, client_secret: `${client.client_secret}x` },
      { grant_type: 'authorization_code', code: g.code, redirect_uri: REDIRECT, code_verifier: g.verifier },
    );
    expectOAuth2Error(res, 401, 'invalid_client');
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="rowgate"');
    expect((await exchange(client, g)).status).toBe(200);
  });

  test.each([
    ['a confidential client without its secret', () => ({ client_id: client.client_id })],
    ['a public client with a secret', () => ({ client_id: pub.client_id, client_secret: 'rg_cs_whatever' })],
    ['an unknown client', () => ({ client_id: 'rg_ci_000000000000000000000000' })],
    ['no client at all', () => ({})],
  ])('%s → 401 invalid_client', async (_name, credentials) => {
    expectOAuth2Error(
      await token(null, { grant_type: 'refresh_token', refresh_token: 'rg_rt_x', ...credentials() }),
      401,
      'invalid_client',
    );
  });

  test('malformed Basic credentials → 401 invalid_client', async () => {
    const res = await app.request('POST', '/v1/oauth2/token', {
      rawBody: form({ grant_type: 'refresh_token', refresh_token: 'rg_rt_x' }),
      headers: { ...FORM, authorization: 'Basic !!!' },
    });
    expectOAuth2Error(res, 401, 'invalid_client');
  });

  test('two authentication methods at once → 400 invalid_request', async () => {
    const res = await app.request('POST', '/v1/oauth2/token', {
      rawBody: form({ grant_type: 'refresh_token', refresh_token: 'rg_rt_x', client_secret: client.client_secret }),
      headers: { ...FORM, authorization: basic(client.client_id, client.client_secret!) },
    });
    expectOAuth2Error(res, 400, 'invalid_request');
  });

  test.each([
    ['no grant_type', {}, 400, 'invalid_request'],
    ['an unsupported grant_type', { grant_type: 'password' }, 400, 'unsupported_grant_type'],
    ['authorization_code without code', { grant_type: 'authorization_code', redirect_uri: REDIRECT }, 400, 'invalid_request'],
    [
      'a malformed code_verifier',
      { grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT, code_verifier: 'short' },
      400,
      'invalid_request',
    ],
    ['refresh_token without the token', { grant_type: 'refresh_token' }, 400, 'invalid_request'],
    ['a repeated parameter', { grant_type: ['refresh_token', 'refresh_token'] }, 400, 'invalid_request'],
  ])('%s → %i %s (RFC 6749 error body)', async (_name, params, status, error) => {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) for (const value of [v].flat()) body.append(k, value);
    const res = await app.request('POST', '/v1/oauth2/token', {
      rawBody: body.toString(),
      headers: { ...FORM, authorization: basic(client.client_id, client.client_secret!) },
    });
    expectOAuth2Error(res, status, error);
  });

  test('a body of another type, or malformed JSON, is an RFC 6749 invalid_request too', async () => {
    const text = await app.request('POST', '/v1/oauth2/token', { rawBody: 'grant_type=x', headers: { 'content-type': 'text/plain' } });
    expectOAuth2Error(text, 415, 'invalid_request');
    const json = await app.request('POST', '/v1/oauth2/token', {
      rawBody: '{"grant_type":',
      headers: { 'content-type': 'application/json' },
    });
    expectOAuth2Error(json, 400, 'invalid_request');
  });

  test('JSON is accepted beside the form encoding', async () => {
    const g = await grant(user, pub);
    const res = await app.post('/v1/oauth2/token', {
      grant_type: 'authorization_code',
      code: g.code,
      redirect_uri: g.redirect,
      code_verifier: g.verifier,
      client_id: pub.client_id,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});

describe('a client authenticates the way it registered (token_endpoint_auth_method), at every endpoint that authenticates it', () => {
  const METHODS = ['client_secret_basic', 'client_secret_post', 'none'] as const;
  type Method = (typeof METHODS)[number];
  /** POST a form as the client, authenticated by `method` (with its secret, or one it does not have) */
  function as(method: Method, client: Client, path: string, params: Record<string, string | undefined>) {
    const headers: Record<string, string> = { ...FORM };
    const body = { ...params };
    if (method === 'client_secret_basic') headers.authorization = basic(client.client_id, client.client_secret ?? '');
    else if (method === 'client_secret_post')
      Object.assign(body, { client_id: client.client_id, client_secret: client.client_secret ?? 'rg_cs_none' });
    else body.client_id = client.client_id;
    return app.request('POST', path, { rawBody: form(body), headers });
  }
  let user: TestUser;
  beforeAll(async () => {
    user = await app.user();
  });

  describe.each(METHODS)('registered with %s', (registered) => {
    let client: Client;
    let issued: { access_token: string; refresh_token: string };
    beforeAll(async () => {
      client = registered === 'none' ? await publicClient(user) : await register(user, { token_endpoint_auth_method: registered });
      const g = await grant(user, client);
      const res = await as(registered, client, '/v1/oauth2/token', {
        grant_type: 'authorization_code',
        code: g.code,
        redirect_uri: g.redirect,
        code_verifier: g.verifier,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      issued = res.body;
    });

    test.each(METHODS.filter((m) => m !== registered))('%s is refused like a wrong secret; the code is not spent', async (used) => {
      const g = await grant(user, client);
      const code = { grant_type: 'authorization_code', code: g.code, redirect_uri: g.redirect, code_verifier: g.verifier };
      expectOAuth2Error(await as(used, client, '/v1/oauth2/token', code), 401, 'invalid_client');
      expectOAuth2Error(
        await as(used, client, '/v1/oauth2/token', { grant_type: 'refresh_token', refresh_token: issued.refresh_token }),
        401,
        'invalid_client',
      );
      expectOAuth2Error(await as(used, client, '/v1/oauth2/introspect', { token: issued.access_token }), 401, 'invalid_client');
      expectOAuth2Error(await as(used, client, '/v1/oauth2/revoke', { token: issued.access_token }), 401, 'invalid_client');
      // the registered way still works: nothing was spent or revoked by the refused attempts
      expect((await as(registered, client, '/v1/oauth2/token', code)).status).toBe(200);
      const introspected = await as(registered, client, '/v1/oauth2/introspect', { token: issued.access_token });
      expect(introspected.body.active).toBe(true);
    });
  });
});

describe('refresh tokens: rotation and reuse detection', () => {
  let user: TestUser;
  let client: Client;
  beforeAll(async () => {
    user = await app.user();
    client = await register(user);
  });

  test('a refresh rotates: new access and refresh tokens, the old refresh token spent', async () => {
    const first = await tokens(user, client);
    const second = await refresh(client, first.refresh_token);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body).toMatchObject({ token_type: 'Bearer', scope: 'user:read user:write' });
    expect(second.body.access_token).not.toBe(first.access_token);
    expect(second.body.refresh_token).not.toBe(first.refresh_token);
    expect((await userinfo(second.body.access_token)).status).toBe(200);
    const third = await refresh(client, second.body.refresh_token);
    expect(third.status).toBe(200);
    expect((await userinfo(third.body.access_token)).status).toBe(200);
  });

  test('each issue prunes ten access and ten refresh tokens that expired more than a day ago, and nothing younger', async () => {
    const first = await tokens(user, client);
    const [family] = await app.sql<{ family_id: string }>(
      'select family_id from rowgate_private.oauth2_access_tokens where client_id = $1 order by created_at desc limit 1',
      [client.client_id],
    );
    const old = (table: 'access' | 'refresh', n: number, age: string) =>
      table === 'access'
        ? app.sql<{ id: string }>(
            `insert into rowgate_private.oauth2_access_tokens (token_hash, client_id, user_id, scopes, expires_at, family_id)
             select uuid_send(gen_random_uuid()), $1, $2, '{user:read}', now() - $3::interval - g * interval '1 second', $4
             from generate_series(1, ${n}) g returning id`,
            [client.client_id, user.id, age, family!.family_id],
          )
        : app.sql<{ id: string }>(
            `insert into rowgate_private.oauth2_refresh_tokens (token_hash, family_id, expires_at)
             select uuid_send(gen_random_uuid()), $2, now() - $1::interval - g * interval '1 second' from generate_series(1, ${n}) g returning id`,
            [age, family!.family_id],
          );
    const [staleAccess, staleRefresh] = [await old('access', 11, '2 days'), await old('refresh', 11, '2 days')];
    const [recentAccess, recentRefresh] = [await old('access', 1, '1 hour'), await old('refresh', 1, '1 hour')];
    expect((await refresh(client, first.refresh_token)).status).toBe(200);
    const left = async (table: string, ids: { id: string }[]) =>
      (await app.sql<{ id: string }>(`select id from rowgate_private.${table} where id = any ($1)`, [ids.map((r) => r.id)])).map(
        (r) => r.id,
      );
    // the ten oldest of each went (the youngest of the eleven stays), the ones expired an hour ago stay
    expect(await left('oauth2_access_tokens', [...staleAccess, ...recentAccess])).toEqual(
      expect.arrayContaining([staleAccess[0]!.id, recentAccess[0]!.id]),
    );
    expect((await left('oauth2_access_tokens', staleAccess)).length).toBe(1);
    expect((await left('oauth2_refresh_tokens', staleRefresh)).length).toBe(1);
    expect(await left('oauth2_refresh_tokens', recentRefresh)).toEqual([recentRefresh[0]!.id]);
  });

  test('a reused refresh token revokes the whole family: every access and refresh token of the grant', async () => {
    const first = await tokens(user, client);
    const second = (await refresh(client, first.refresh_token)).body;
    const third = (await refresh(client, second.refresh_token)).body;
    const unrelated = await tokens(user, client);
    // an attacker replays the first refresh token
    const reuse = await refresh(client, first.refresh_token);
    expectOAuth2Error(reuse, 400, 'invalid_grant');
    expect(reuse.body.error_description).toMatch(/used already/);
    for (const t of [first, second, third]) expectUnauthorized(await userinfo(t.access_token), true);
    expectOAuth2Error(await refresh(client, third.refresh_token), 400, 'invalid_grant');
    // another grant of the same user and client is untouched
    expect((await userinfo(unrelated.access_token)).status).toBe(200);
    expect((await refresh(client, unrelated.refresh_token)).status).toBe(200);
  });

  test('a refresh may narrow the scopes, never widen them (and a refused widening spends nothing)', async () => {
    const first = await tokens(user, client, { scope: 'user:read products_read' });
    const wider = await refresh(client, first.refresh_token, { scope: 'user:read products_write' });
    expectOAuth2Error(wider, 400, 'invalid_scope');
    const narrower = await refresh(client, first.refresh_token, { scope: 'products_read' });
    expect(narrower.status, JSON.stringify(narrower.body)).toBe(200);
    expect(narrower.body.scope).toBe('products_read');
    expectInsufficientScope(await userinfo(narrower.body.access_token), ['user:read', 'user:write']);
    // the grant keeps its scopes: the next refresh may ask for them all again
    const again = await refresh(client, narrower.body.refresh_token);
    expect(again.body.scope).toBe('products_read user:read');
  });

  test('another client cannot use the refresh token', async () => {
    const first = await tokens(user, client);
    const other = await register(user);
    expectOAuth2Error(await refresh(other, first.refresh_token), 400, 'invalid_grant');
    expect((await refresh(client, first.refresh_token)).status).toBe(200);
  });

  test('an expired refresh token fails', async () => {
    const first = await tokens(user, client);
    await app.sql(`update rowgate_private.oauth2_refresh_tokens set expires_at = now() - interval '1 second' where token_hash = $1`, [
      app.hash(first.refresh_token),
    ]);
    expectOAuth2Error(await refresh(client, first.refresh_token), 400, 'invalid_grant');
  });
});

describe('a client whose owner deleted their account (a hostile review, 2026-11-26)', () => {
  test('is deleted with it: the tokens other users granted it stop working at once', async () => {
    const owner = await app.user();
    const granter = await app.user();
    const client = await register(owner);
    const issued = await tokens(granter, client);
    expect((await userinfo(issued.access_token)).status).toBe(200);
    expect((await app.request('DELETE', '/v1/users/me', { session: owner.session })).status).toBe(204);
    expect((await userinfo(issued.access_token)).status).toBe(401);
    expectOAuth2Error(await refresh(client, issued.refresh_token), 401, 'invalid_client');
  });
});

describe('POST /v1/oauth2/revoke (RFC 7009)', () => {
  let user: TestUser;
  let client: Client;
  beforeAll(async () => {
    user = await app.user();
    client = await register(user);
  });
  const revoke = (c: Client, t: string, hint?: string) => clientPost('/v1/oauth2/revoke', c, { token: t, token_type_hint: hint });

  test('revoking an access token takes effect at once; its refresh token still works', async () => {
    const issued = await tokens(user, client);
    expect((await userinfo(issued.access_token)).status).toBe(200);
    const res = await revoke(client, issued.access_token, 'access_token');
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: {} });
    expectUnauthorized(await userinfo(issued.access_token), true);
    expect((await refresh(client, issued.refresh_token)).status).toBe(200);
  });

  test('revoking a refresh token revokes its grant: the access tokens issued from it stop at once', async () => {
    const issued = await tokens(user, client);
    const rotated = (await refresh(client, issued.refresh_token)).body;
    expect((await revoke(client, rotated.refresh_token)).status).toBe(200);
    expectUnauthorized(await userinfo(issued.access_token), true);
    expectUnauthorized(await userinfo(rotated.access_token), true);
    expectOAuth2Error(await refresh(client, rotated.refresh_token), 400, 'invalid_grant');
  });

  test("another client's token, or an unknown one: 200 and nothing changes", async () => {
    const issued = await tokens(user, client);
    const other = await register(user);
    expect((await revoke(other, issued.access_token)).status).toBe(200);
    expect((await revoke(other, issued.refresh_token)).status).toBe(200);
    expect((await revoke(client, 'rg_at_u_unknown')).status).toBe(200);
    expect((await userinfo(issued.access_token)).status).toBe(200);
    expect((await refresh(client, issued.refresh_token)).status).toBe(200);
  });

  test('a failed client authentication → 401 invalid_client, nothing revoked', async () => {
    const issued = await tokens(user, client);
    expectOAuth2Error(await revoke({ ...client, client_secret: 'rg_cs_wrong' }, issued.access_token), 401, 'invalid_client');
    expect((await userinfo(issued.access_token)).status).toBe(200);
    expectOAuth2Error(await clientPost('/v1/oauth2/revoke', client, {}), 400, 'invalid_request');
  });
});

describe('POST /v1/oauth2/introspect (RFC 7662)', () => {
  let user: TestUser;
  let client: Client;
  beforeAll(async () => {
    user = await app.user();
    client = await register(user);
  });
  const introspect = (c: Client, t: string) => clientPost('/v1/oauth2/introspect', c, { token: t });

  test('an active access token, then revoked; a refresh token; another client learns nothing', async () => {
    const issued = await tokens(user, client);
    const res = await introspect(client, issued.access_token);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toEqual({
      active: true,
      scope: 'user:read user:write',
      client_id: client.client_id,
      username: user.email,
      token_type: 'Bearer',
      exp: expect.any(Number),
      iat: expect.any(Number),
      sub: user.id,
      sub_type: 'user',
      user_id: user.id,
      iss: app.url,
    });
    expect(res.body.exp - res.body.iat).toBe(3600);
    const refreshInfo = await introspect(client, issued.refresh_token);
    expect(refreshInfo.body).toMatchObject({ active: true, token_type: 'refresh_token', client_id: client.client_id, sub: user.id });
    const other = await register(user);
    expect((await introspect(other, issued.access_token)).body).toEqual({ active: false });
    await clientPost('/v1/oauth2/revoke', client, { token: issued.access_token });
    expect((await introspect(client, issued.access_token)).body).toEqual({ active: false });
    expect((await introspect(client, 'garbage')).body).toEqual({ active: false });
    expectOAuth2Error(await introspect({ ...client, client_secret: 'rg_cs_wrong' }, issued.access_token), 401, 'invalid_client');
  });
});

describe('what an OAuth2 user token reaches', () => {
  test('DELETE /v1/users/me (user write) works with it, and ends every credential', async () => {
    const user = await app.user();
    const client = await register(user);
    const issued = await tokens(user, client);
    const res = await app.delete('/v1/users/me', { token: issued.access_token });
    expect(res.status).toBe(204);
    expect((await app.sql('select deleted_at from rowgate.users where id = $1', [user.id]))[0]!.deleted_at).toEqual(aTimestamp);
    expectUnauthorized(await userinfo(issued.access_token), true);
    expectOAuth2Error(await refresh(client, issued.refresh_token), 401, 'invalid_client');
  });

  test('DELETE /v1/users/me needs user:write: a user:read token gets 403', async () => {
    const user = await app.user();
    const client = await register(user);
    const issued = await tokens(user, client, { scope: 'user:read' });
    expectInsufficientScope(await app.delete('/v1/users/me', { token: issued.access_token }), ['user:write']);
  });

  test.each([
    ['GET', '/v1/users/me'],
    ['PATCH', '/v1/users/me'],
    ['GET', '/v1/personal-access-tokens/'],
    ['POST', '/v1/oauth2/register'],
    ['GET', '/v1/oauth2/clients/'],
    ['POST', '/v1/auth/logout'],
  ])('web-only %s %s → 401 naming the accepted credentials', async (method, path) => {
    const user = await app.user();
    const issued = await tokens(user, await register(user));
    const res = await app.request(method, path, { token: issued.access_token, ...(method === 'GET' ? {} : { body: {} }) });
    expectUnauthorized(res, false); // a good token of a kind this endpoint does not take
    expect(res.body.detail).toMatch(/web session/);
    expect(res.body.detail).toMatch(/OAuth2 user token was sent/);
  });
});

describe('organization tokens (sub_type=organization)', () => {
  let admin: TestUser;
  let member: TestUser;
  let client: Client;
  let a: string;
  let b: string;
  let productA: string;
  let productB: string;
  beforeAll(async () => {
    admin = await app.user();
    member = await app.user();
    a = (await app.organization(admin.id)).id;
    b = (await app.organization(admin.id)).id;
    await app.membership(a, member.id, 'member');
    productA = await app.product(a);
    productB = await app.product(b);
    client = await register(admin);
  });
  const forOrganization = (organizationId: string, scope = 'products_read') => ({
    sub_type: 'organization',
    organization_id: organizationId,
    scope,
  });

  test('an admin grants a token acting for one organization: rg_at_o_, reaching that organization only', async () => {
    const page = await authorize(admin, {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
      ...forOrganization(a),
    });
    expect(page.status).toBe(200);
    expect(page.body).toMatch(/the organization <strong>org-/);
    const issued = await tokens(admin, client, forOrganization(a));
    expect(issued.access_token).toMatch(/^rg_at_o_/);
    const list = await app.get('/v1/products/', { token: issued.access_token });
    expect(list.status).toBe(200);
    expect(list.body.items.map((p: { id: string }) => p.id)).toEqual([productA]);
    expect((await app.get(`/v1/products/${productA}`, { token: issued.access_token })).status).toBe(200);
    expectError(await app.get(`/v1/products/${productB}`, { token: issued.access_token }), 404, 'ResourceNotFound');
    expect((await app.get(`/v1/products/?organization_id=${b}`, { token: issued.access_token })).body.items).toEqual([]);
    // its scopes bind: no write
    expectInsufficientScope(
      await app.post('/v1/products/', { name: 'X', price_amount: 1, price_currency: 'usd' }, { token: issued.access_token }),
      ['products_write'],
    );
    // it acts for no user
    expectUnauthorized(await userinfo(issued.access_token), false);
    expectUnauthorized(await app.delete('/v1/users/me', { token: issued.access_token }), false);
    // and refreshes into organization tokens
    const refreshed = await refresh(client, issued.refresh_token);
    expect(refreshed.body.access_token).toMatch(/^rg_at_o_/);
    const intro = await clientPost('/v1/oauth2/introspect', client, { token: refreshed.body.access_token });
    expect(intro.body).toMatchObject({ active: true, sub: a, sub_type: 'organization', organization_id: a, user_id: admin.id });
  });

  test("a member without access_tokens:manage is refused (access_denied, the policy's reason)", async () => {
    const memberClient = await register(member);
    const query = redirected(
      await consent(member, {
        response_type: 'code',
        client_id: memberClient.client_id,
        redirect_uri: REDIRECT,
        action: 'allow',
        ...forOrganization(a),
      }),
    );
    expect(query.get('error')).toBe('access_denied');
    expect(query.get('error_description')).toBe("You don't have permission to manage access tokens");
  });

  test('an organization the user does not reach, or user scopes, are refused', async () => {
    const strangers = (await app.organization((await app.user()).id)).id;
    const base = { response_type: 'code', client_id: client.client_id, redirect_uri: REDIRECT, action: 'allow' };
    expect(redirected(await consent(admin, { ...base, ...forOrganization(strangers) })).get('error')).toBe('invalid_request');
    expect(redirected(await consent(admin, { ...base, ...forOrganization(a, 'products_read user:read') })).get('error')).toBe(
      'invalid_scope',
    );
    expect(redirected(await consent(admin, { ...base, organization_id: a, scope: 'products_read' })).get('error')).toBe('invalid_request');
  });

  test('SPEC §21: an organization grant holds only the scopes its user could use itself; the others are left out', async () => {
    // a role that manages access tokens and nothing else
    await app.sql(
      `insert into rowgate.organization_roles (organization_id, name, permissions) values ($1, 'tokens', '{access_tokens:manage}')`,
      [a],
    );
    const keeper = await app.user();
    await app.membership(a, keeper.id, 'tokens');
    const c = await register(keeper, { scope: 'products_read products_write organizations_write members_read webhooks_write' });
    const asked = forOrganization(a, 'products_read products_write organizations_write members_read');
    const base = {
      response_type: 'code',
      client_id: c.client_id,
      redirect_uri: REDIRECT,
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    };
    // the consent page offers only what the user may grant, and says how many were left out
    const page = await authorize(keeper, { ...base, ...asked });
    expect(page.status).toBe(200);
    const offered = [...String(page.body).matchAll(/<li><code>([^<]*)<\/code><\/li>/g)].map((m) => m[1]);
    expect(offered).toEqual(['members_read', 'products_read']);
    expect(page.body).not.toContain('organizations_write');
    expect(page.body).toContain('2 of the requested scopes are left out');
    // the issued token carries them only, and its answer says so (RFC 6749 §3.3)
    const issued = await tokens(keeper, c, asked);
    expect(issued.scope).toBe('members_read products_read');
    expectInsufficientScope(await app.patch(`/v1/organizations/${a}`, { name: 'Owned' }, { token: issued.access_token }), [
      'organizations_write',
    ]);
    expectInsufficientScope(
      await app.post('/v1/products/', { name: 'X', price_amount: 1, price_currency: 'usd' }, { token: issued.access_token }),
      ['products_write'],
    );
    expect((await app.get('/v1/products/', { token: issued.access_token })).status).toBe(200);
    // a request left with no scope it may grant is invalid_scope, naming what is missing
    const none = redirected(
      await consent(keeper, { ...base, ...forOrganization(a, 'organizations_write webhooks_write'), action: 'allow' }),
    );
    expect(none.get('error')).toBe('invalid_scope');
    expect(none.get('error_description')).toMatch(/organizations_write.*organization:manage/);
    // an admin grants them all
    const adminClient = await register(admin, { scope: 'products_read products_write organizations_write' });
    const full = await tokens(admin, adminClient, forOrganization(a, 'products_read products_write organizations_write'));
    expect(full.scope).toBe('organizations_write products_read products_write');
  });

  test('SPEC §21: membership.deleted lists the organization grants the member made there', async () => {
    const granter = await app.user();
    await app.membership(a, granter.id, 'admin');
    const c = await register(granter, { client_name: 'Reporting' });
    await tokens(granter, c, forOrganization(a, 'products_read'));
    await tokens(granter, c, {}); // a user grant: not the organization's
    const removed = await app.delete(`/v1/organizations/${a}/members/${granter.id}`, { session: admin.session });
    expect(removed.status, JSON.stringify(removed.body)).toBe(204);
    const [event] = await app.sql<{ data: any }>(
      `select data from rowgate.events where organization_id = $1 and type = 'membership.deleted' and resource_id = $2`,
      [a, granter.id],
    );
    expect(event!.data.credentials.oauth2_grants).toEqual([
      { client_id: c.client_id, client_name: 'Reporting', scopes: ['products_read'] },
    ]);
    expect(event!.data.credentials.organization_access_tokens).toEqual([]);
  });

  test("when the granting user may no longer manage the organization's tokens, its tokens stop and cannot refresh", async () => {
    const second = await app.user();
    await app.membership(a, second.id, 'admin');
    const c = await register(second);
    const issued = await tokens(second, c, forOrganization(a));
    expect((await app.get('/v1/products/', { token: issued.access_token })).status).toBe(200);
    await app.sql(`update rowgate.memberships set role = 'member' where organization_id = $1 and user_id = $2`, [a, second.id]);
    expectUnauthorized(await app.get('/v1/products/', { token: issued.access_token }), true);
    expectOAuth2Error(await refresh(c, issued.refresh_token), 400, 'invalid_grant');
    expect((await clientPost('/v1/oauth2/introspect', c, { token: issued.access_token })).body).toEqual({ active: false });
  });
});

describe('the OpenAPI document describes the OAuth2 endpoints as they answer', () => {
  test('the authorization endpoint declares its error page: a 400 in HTML', async () => {
    const doc = (await app.get('/v1/openapi.json')).body;
    const responses = doc.paths['/v1/oauth2/authorize'].get.responses;
    expect(Object.keys(responses['400'].content)).toEqual(['text/html']);
    expect(Object.keys(responses['200'].content)).toEqual(['text/html']);
  });

  test("the token endpoint takes a form (and JSON), and its errors are RFC 6749's", async () => {
    const doc = (await app.get('/v1/openapi.json')).body;
    const op = doc.paths['/v1/oauth2/token'].post;
    expect(Object.keys(op.requestBody.content)).toEqual(['application/x-www-form-urlencoded', 'application/json']);
    // the client's own credentials: HTTP Basic, or in the body (no header)
    expect(op.security).toEqual([{ oauth2Client: [] }, {}]);
    expect(Object.keys(op.responses).sort()).toEqual(['200', '400', '401', '413', '415', '429', '503', '504']);
    expect(op.responses['400'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/OAuth2Error' });
    expect(doc.components.schemas.OAuth2Error.properties).toHaveProperty('error_description');
    const authorizeOp = doc.paths['/v1/oauth2/authorize'].get;
    expect(Object.keys(authorizeOp.responses['200'].content)).toEqual(['text/html']);
    expect(Object.keys(doc.paths['/v1/oauth2/consent'].post.requestBody.content)).toEqual([
      'application/x-www-form-urlencoded',
      'application/json',
    ]);
    const login = doc.paths['/v1/login-code/authenticate'].post;
    expect(login.security).toEqual([]);
    expect(login.responses['401'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
  });
});
