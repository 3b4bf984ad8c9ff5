// Request ids, the access log, rate limits and metrics (SPEC §14), on
// an app whose log this file reads and whose limits it sets.
import type { IncomingMessage } from 'node:http';
import { Writable } from 'node:stream';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApp } from '../src/server/app.ts';
import { access, route } from '../src/http/route-declaration.ts';
import { listen } from '../src/server/listen.ts';
import { createHttpServer } from '../src/server/http-server.ts';
import { clientAddress, perClient, trustedProxies } from '../src/core/client-address.ts';
import fc from 'fast-check';
import { accessLog } from '../src/operating/access-log.ts';
import { createLogger } from '../src/operating/logger.ts';
import { createMetricsServer, Metrics } from '../src/operating/metrics.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

const RATE = 5;
let app: TestApp;
const logLines: string[] = [];
const metrics = new Metrics({ processMetrics: false });
let ann: TestUser;
let patA: string;
let patB: string;
const sentIds = new Set<string>();
const secrets = new Set<string>();

beforeAll(async () => {
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  app = await startTestApp({
    limits: { perCredential: RATE, perAddress: RATE },
    operating: {
      logger: createLogger({ destination }),
      metrics,
      trustedProxies: trustedProxies('127.0.0.1'),
    },
  });
  ann = await app.user();
  patA = await app.pat(ann.id, ['user:read', 'products_read']);
  patB = await app.pat(ann.id, ['user:read', 'products_read']);
  for (const s of [ann.session, patA, patB]) secrets.add(s);
});
afterAll(async () => app?.close());

/** a request from its own client address (X-Forwarded-For, the test's proxy being trusted), with an id the test sends */
let addresses = 0;
const newAddress = () => `198.51.100.${++addresses}`;
async function send(method: string, path: string, options: { token?: string; session?: string; body?: unknown; address?: string } = {}) {
  const id = `t-${sentIds.size}-${Math.random().toString(36).slice(2)}`;
  sentIds.add(id);
  return app.request(method, path, {
    token: options.token,
    session: options.session,
    body: options.body,
    headers: { 'x-request-id': id, 'x-forwarded-for': options.address ?? newAddress() },
  });
}

describe('X-Request-Id on every answer', () => {
  const cases: [string, () => Promise<{ status: number; headers: Headers }>][] = [
    ['a REST answer', () => app.get('/v1/users/me', { session: ann.session })],
    ['a REST error', () => app.get('/v1/users/me', { token: 'rg_pat_unknown' })],
    ['an unknown route', () => app.get('/v1/nothing')],
    ['health', () => app.get('/healthz')],
    ['GraphQL', () => app.post('/graphql', { query: '{ __typename }' })],
    [
      'the OAuth2 token endpoint',
      () =>
        app.request('POST', '/v1/oauth2/token', {
          rawBody: 'grant_type=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
    ],
    ['the OAuth2 metadata', () => app.get('/.well-known/oauth-authorization-server')],
    [
      'a CORS preflight',
      () =>
        app.request('OPTIONS', '/.well-known/oauth-authorization-server', {
          headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
        }),
    ],
    ['a method a path does not take (405)', () => app.request('PUT', '/v1/products/')],
  ];
  test.for(cases)('%s: a new one when none is sent', async ([, call]) => {
    const res = await call();
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("a request Node's parser refuses: its 400 carries an id, and the log a line with it", async () => {
    const { connect } = await import('node:net');
    const target = new URL(app.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(target.port), target.hostname, () =>
        socket.write('GET /v1/users/me HTTP/1.1\r\nHost: x\r\nBad\u0000Header: 1\r\n\r\n'),
      );
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
      socket.on('end', () => resolve(answer));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    const id = /\r\nX-Request-Id: ([0-9a-f-]{36})\r\n/.exec(raw)?.[1];
    expect(id).toBeDefined();
    await new Promise((r) => setTimeout(r, 50));
    expect(logLines.map((l) => JSON.parse(l)).find((l) => l.request_id === id)).toMatchObject({ route: '(unparsed)', status: 400 });
  });

  test('a preflight and a 405 each write their line, under a route label of their own', async () => {
    const preflight = await app.request('OPTIONS', '/.well-known/oauth-authorization-server', {
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'GET' },
    });
    // an OPTIONS that is no preflight is what it is: a path no route has
    const bare = await send('OPTIONS', '/v1/nothing-here', {});
    const refused = await send('PUT', '/v1/products/', {});
    expect(refused.status).toBe(405);
    const lines = logLines.map((l) => JSON.parse(l));
    expect(lines.find((l) => l.request_id === preflight.headers.get('x-request-id'))).toMatchObject({
      method: 'OPTIONS',
      route: '(preflight)',
    });
    expect(lines.find((l) => l.request_id === bare.headers.get('x-request-id'))).toMatchObject({ method: 'OPTIONS', route: '(unmatched)' });
    expect(lines.find((l) => l.request_id === refused.headers.get('x-request-id'))).toMatchObject({
      method: 'PUT',
      route: '/v1/products/',
      status: 405,
    });
  });

  test("the client's own when well-formed, a new one otherwise", async () => {
    const echo = async (id: string) =>
      (await app.request('GET', '/v1/users/me', { session: ann.session, headers: { 'x-request-id': id } })).headers.get('x-request-id');
    expect(await echo('abc.DEF_1:2-3')).toBe('abc.DEF_1:2-3');
    expect(await echo('x'.repeat(128))).toBe('x'.repeat(128));
    for (const bad of ['x'.repeat(129), 'a b', 'é', 'a,b', '<script>']) expect(await echo(bad)).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('it is rowgate.request_id in the transaction, set with the other settings', async () => {
    const probe = route({
      method: 'get',
      effect: 'reads',
      path: '/v1/probe',
      operationId: 'probe',
      summary: 'probe',
      description: 'the settings of the request transaction',
      tag: 'test',
      access: access.userRead,
      status: 200,
      response: z.object({ request_id: z.string(), subject_kind: z.string() }),
      handler: async ({ tx }) =>
        tx.one(
          `select current_setting('rowgate.request_id', true) as request_id, current_setting('rowgate.subject_kind', true) as subject_kind`,
        ),
    });
    const anonymousProbe = route({
      ...probe,
      path: '/v1/anonymous-probe',
      access: access.anonymous,
      response: z.object({ request_id: z.string() }),
      handler: async ({ tx }) => tx.one(`select current_setting('rowgate.request_id', true) as request_id`),
    });
    const server = await listen(
      createHttpServer(createApp({ pool: app.pool, secret: app.secret, routes: [probe, anonymousProbe] }), { statementTimeoutMs: 10_000 }),
      0,
      '127.0.0.1',
    );
    try {
      const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
      const res = await fetch(`${base}/v1/probe`, { headers: { authorization: `Bearer ${patA}`, 'x-request-id': 'probe-1' } });
      expect(await res.json()).toEqual({ request_id: 'probe-1', subject_kind: 'user' });
      const anonymous = await fetch(`${base}/v1/anonymous-probe`, { headers: { 'x-request-id': 'probe-2' } });
      expect(await anonymous.json()).toEqual({ request_id: 'probe-2' });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('rate limits', () => {
  /** The windows are whole seconds: a burst sent at the start of one stays in it */
  const startOfASecond = () => new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
  const headersOf = (res: { headers: Headers }) => ({
    policy: res.headers.get('ratelimit-policy'),
    limit: res.headers.get('ratelimit'),
    retryAfter: res.headers.get('retry-after'),
  });

  test('a burst above the limit from one PAT gets 429s while a second PAT is served', async () => {
    // a PAT in use: seen to authenticate, so it spends its own allowance only (under load the burst's
    // first answer could come after the refusals, which then were the address's)
    expect((await send('GET', '/v1/products/', { token: patA, address: newAddress() })).status).toBe(200);
    await startOfASecond();
    const address = newAddress();
    const burst = await Promise.all(Array.from({ length: 4 * RATE }, () => send('GET', '/v1/products/', { token: patA, address })));
    const statuses = burst.map((r) => r.status);
    // the window and the burst: twice the rate at least (more if the burst outlasts a window), then refusals
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2 * RATE);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    const served = burst.find((r) => r.status === 200)!;
    expect(headersOf(served)).toEqual({
      policy: `"default";q=${RATE};w=1`,
      limit: expect.stringMatching(/^"default";r=\d+;t=1$/),
      retryAfter: null,
    });
    const refused = burst.find((r) => r.status === 429)!;
    expect(refused.body).toEqual({ error: 'TooManyRequests', detail: expect.stringContaining(`${RATE} requests per second`) });
    expect(headersOf(refused)).toEqual({ policy: `"default";q=${RATE};w=1`, limit: '"default";r=0;t=1', retryAfter: '1' });
    const other = await send('GET', '/v1/products/', { token: patB, address });
    expect(other.status).toBe(200);
  });

  test('without a credential, per client address; a refused credential costs its address', async () => {
    const [x, y] = [newAddress(), newAddress()];
    await startOfASecond();
    const fromX = await Promise.all(Array.from({ length: 3 * RATE }, () => send('GET', '/v1/users/me', { address: x })));
    expect(fromX.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    expect(headersOf(fromX.find((r) => r.status === 429)!).policy).toBe(`"anonymous";q=${RATE};w=1`);
    expect((await send('GET', '/v1/users/me', { address: y })).status).toBe(401); // served: its own 401
    // unknown tokens from z: 401s, each charged to z, until z is refused whatever it presents
    const z_ = newAddress();
    await startOfASecond();
    const answers = [];
    for (let i = 0; i < 2 * RATE + 2; i++)
      answers.push(await send('GET', '/v1/users/me', { token: `rg_pat_${'x'.repeat(40)}${i}`, address: z_ }));
    const guesses = answers.map((a) => a.status);
    expect(guesses.slice(0, 2 * RATE)).toEqual(Array(2 * RATE).fill(401));
    expect(guesses.at(-1)).toBe(429);
    // each new token has its whole allowance, the address less: the fields name the address's, which refuses next
    expect(headersOf(answers[2]!).policy).toBe(`"anonymous";q=${RATE};w=1`);
    expect((await send('GET', '/v1/users/me', { session: ann.session, address: newAddress() })).status).toBe(200);
  });

  test("the OAuth2 protocol endpoints' 429 is in RFC 6749's shape, as their other errors are", async () => {
    const x = newAddress();
    await startOfASecond();
    const answers = await Promise.all(
      Array.from({ length: 3 * RATE }, () => send('POST', '/v1/oauth2/token', { body: { grant_type: 'client_credentials' }, address: x })),
    );
    const refused = answers.find((r) => r.status === 429)!;
    expect(refused.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(headersOf(refused).policy).toBe(`"anonymous";q=${RATE};w=1`);
    // the ones served are the endpoint's own answers, in the same shape
    expect(answers.find((r) => r.status !== 429)!.body).toMatchObject({ error: expect.any(String), error_description: expect.any(String) });
  });

  test('an IPv6 client is its /64, however it spells its address; an IPv4 client its address', async () => {
    for (const [address, key] of [
      ['2001:db8::a', '2001:db8:0:0::/64'],
      ['2001:DB8::A', '2001:db8:0:0::/64'],
      ['2001:0db8:0000:0000:0000:0000:0000:000a', '2001:db8:0:0::/64'],
      ['2001:db8::b', '2001:db8:0:0::/64'],
      ['2001:db8:0:0:ffff::1', '2001:db8:0:0::/64'],
      ['2001:db8:0:1::1', '2001:db8:0:1::/64'],
      ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
      ['fe80::1%eth0', 'fe80:0:0:0::/64'],
      ['::1', '0:0:0:0::/64'],
      ['192.0.2.1', '192.0.2.1'],
    ]) {
      expect(perClient(address!), address).toBe(key);
    }
    // an IPv4 address written as IPv6 is that IPv4 address, however written
    for (const [address, key] of [
      ['::ffff:192.0.2.1', '192.0.2.1'],
      ['::FFFF:192.0.2.1', '192.0.2.1'],
      ['::ffff:c000:0201', '192.0.2.1'],
      ['::192.0.2.1', '192.0.2.1'],
      ['0:0:0:0:0:ffff:192.0.2.1', '192.0.2.1'],
      ['0:0:0:0:0:FFFF:c000:0201', '192.0.2.1'],
      ['::ffff:0:192.0.2.1', '192.0.2.1'],
      ['64:ff9b::192.0.2.1', '192.0.2.1'],
      ['::1', '0:0:0:0::/64'],
    ]) {
      const req = { socket: { remoteAddress: address }, headers: {} } as unknown as IncomingMessage;
      expect(clientAddress(req, null), address).toBe(key);
    }
  });

  test('an anonymous flood from an address does not refuse a credential seen to authenticate there', async () => {
    const address = newAddress();
    const bob = await app.user();
    const pat = await app.pat(bob.id, ['products_read']);
    secrets.add(pat);
    expect((await send('GET', '/v1/products/', { token: pat, address })).status).toBe(200);
    await startOfASecond();
    const flood = await Promise.all(Array.from({ length: 4 * RATE }, () => send('GET', '/v1/users/me', { address })));
    expect(flood.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    expect((await send('GET', '/v1/users/me', { address })).status).toBe(429);
    // the known credential spends its own allowance only; one never seen is checked, one at a time, and served
    expect((await send('GET', '/v1/products/', { token: pat, address })).status).toBe(200);
    const unseen = await app.pat(bob.id, ['products_read']);
    secrets.add(unseen);
    expect((await send('GET', '/v1/products/', { token: unseen, address })).status).toBe(200);
    // one such check a second per address: an invented one right after is refused unchecked
    expect((await send('GET', '/v1/products/', { token: `rg_pat_${'q'.repeat(43)}`, address })).status).toBe(429);
    expect((await send('GET', '/v1/users/me', { address })).status).toBe(429);
  });

  test("a new credential's first burst never spends its address's allowance", async () => {
    const address = newAddress();
    const carol = await app.user();
    const [first, second] = [await app.pat(carol.id, ['products_read']), await app.pat(carol.id, ['products_read'])];
    for (const pat of [first, second]) secrets.add(pat);
    await startOfASecond();
    const burst = await Promise.all(Array.from({ length: 2 * RATE }, () => send('GET', '/v1/products/', { token: first, address })));
    expect(burst.map((r) => r.status)).toEqual(Array(2 * RATE).fill(200));
    // the points its requests spent before it was known are back: the address has its whole allowance
    const anonymous = await Promise.all(Array.from({ length: RATE }, () => send('GET', '/v1/users/me', { address })));
    expect(anonymous.map((r) => r.status)).toEqual(Array(RATE).fill(401));
    expect((await send('GET', '/v1/products/', { token: second, address })).status).toBe(200);
  });

  test("made-up tokens sent at once get no more than their address's allowance", async () => {
    const address = newAddress();
    await startOfASecond();
    const guesses = await Promise.all(
      Array.from({ length: 6 * RATE }, (_, i) => send('GET', '/v1/users/me', { token: `rg_pat_${'y'.repeat(40)}${i}`, address })),
    );
    // the window and the burst of the address, then refusals before the database is asked
    expect(guesses.filter((r) => r.status === 401).length).toBeLessThanOrEqual(2 * RATE);
    expect(guesses.filter((r) => r.status === 429).length).toBeGreaterThanOrEqual(4 * RATE);
  });

  test('the limits and no-store see the path the router sees: another case is no route, an absolute target is limited', async () => {
    const upper = await send('GET', '/V1/users/me', { session: ann.session });
    expect(upper.status).toBe(404);
    // an absolute-form request target (as a proxy sends it) reaches the route with the limits and no-store
    const { request } = await import('node:http');
    const target = new URL(app.url);
    const answer = await new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
      const req = request(
        { host: target.hostname, port: target.port, path: `${app.url}/v1/users/me`, headers: { cookie: `rowgate_session=${ann.session}` } },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.headers['ratelimit-policy']).toBe(`"default";q=${RATE};w=1`);
  });
});

describe('the access log and the metrics', () => {
  test('one JSON line per request: its id, route template, status, subject kind and credential, and no secret', async () => {
    // patB: patA's allowance is what the burst test above spent
    const res = await send('GET', '/v1/users/me', { token: patB, address: newAddress() });
    const id = res.headers.get('x-request-id');
    await new Promise((resolve) => setTimeout(resolve, 50)); // the line is written when the response closes
    const line = logLines.map((l) => JSON.parse(l)).find((l) => l.request_id === id);
    expect(line).toEqual({
      level: 'info',
      time: expect.any(String),
      msg: 'request',
      request_id: id,
      method: 'GET',
      route: '/v1/users/me',
      status: 401, // users/me takes web sessions only
      duration_ms: expect.any(Number),
      subject_kind: null,
      credential_id: null,
    });
    const signedIn = await send('GET', '/v1/products/{id}'.replace('{id}', '00000000-0000-0000-0000-000000000000'), {
      token: patB,
      address: newAddress(),
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [credential] = await app.sql<{ id: string }>(
      'select id from rowgate.personal_access_tokens where user_id = $1 order by created_at desc limit 1',
      [ann.id],
    );
    expect(logLines.map((l) => JSON.parse(l)).find((l) => l.request_id === signedIn.headers.get('x-request-id'))).toMatchObject({
      route: '/v1/products/{id}',
      status: 404,
      subject_kind: 'user',
      credential_id: credential!.id,
    });
  });

  test("the access line is the logger's own: 5xx at warn, the others at info, each level's filter applying", () => {
    const written: string[] = [];
    const write = accessLog(createLogger({ destination: { write: (line: string) => void written.push(line) } }));
    const fields = { request_id: 'abc.1:2-3', method: 'GET', route: '/v1/x', duration_ms: 1.5, subject_kind: 'user', credential_id: null };
    write({ ...fields, status: 200, aborted: false });
    write({ ...fields, status: 504, aborted: false });
    write({ ...fields, status: 200, aborted: true });
    const lines = written.map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.level, l.msg, l.status, l.aborted])).toEqual([
      ['info', 'request', 200, undefined],
      ['warn', 'request failed', 504, undefined],
      ['info', 'request', 200, true],
    ]);
    expect(Object.keys(lines[0]).sort()).toEqual(
      ['level', 'time', 'request_id', 'method', 'route', 'status', 'duration_ms', 'subject_kind', 'credential_id', 'msg'].sort(),
    );
    // a number JSON cannot hold is null
    write({ ...fields, duration_ms: Number.NaN, status: 200, aborted: false });
    expect(JSON.parse(written.at(-1)!).duration_ms).toBeNull();
    // a level above info keeps the 2xx lines out, the 5xx ones in
    const quiet: string[] = [];
    const warnOnly = accessLog(createLogger({ level: 'warn', destination: { write: (line: string) => void quiet.push(line) } }));
    warnOnly({ ...fields, status: 200, aborted: false });
    warnOnly({ ...fields, status: 500, aborted: false });
    expect(quiet.map((l) => JSON.parse(l).status)).toEqual([500]);
  });

  test('an access line is one line of JSON holding exactly its fields, whatever their characters', () => {
    const written: string[] = [];
    const write = accessLog(createLogger({ destination: { write: (line: string) => void written.push(line) } }));
    // mostly the characters written as they are, with some that JSON must escape, and anything at all
    const characters = fc.constantFrom(...'aZ0_.:-/{}() "\\\n\u0001\u007f\u2028é'.split(''));
    const value = fc.oneof(fc.string({ unit: characters, maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }));
    const nullable = fc.option(value, { nil: null });
    fc.assert(
      fc.property(value, value, nullable, nullable, (route, request_id, subject_kind, credential_id) => {
        const fields = { request_id, method: 'GET', route, status: 200, duration_ms: 1, subject_kind, credential_id };
        write({ ...fields, aborted: false });
        const line = written.pop()!;
        expect(line.indexOf('\n')).toBe(line.length - 1);
        const { level, time, msg, ...parsed } = JSON.parse(line);
        expect([level, typeof time, msg]).toEqual(['info', 'string', 'request']);
        expect(parsed).toEqual(fields);
      }),
      { numRuns: 2_000 },
    );
  });

  test('each access line carries the time it was written, to the millisecond', async () => {
    const written: string[] = [];
    const write = accessLog(createLogger({ destination: { write: (line: string) => void written.push(line) } }));
    const fields = { request_id: 'r', method: 'GET', route: '/v1/x', status: 200, duration_ms: 1, subject_kind: null, credential_id: null };
    for (let i = 0; i < 5; i++) {
      const before = Date.now();
      write({ ...fields, aborted: false });
      const after = Date.now();
      const time = Date.parse(JSON.parse(written.at(-1)!).time);
      expect(time).toBeGreaterThanOrEqual(before);
      expect(time).toBeLessThanOrEqual(after);
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    expect(new Set(written.map((l) => JSON.parse(l).time)).size).toBe(5);
  });

  test("a child logger's bindings are on its access lines as on its other lines", () => {
    const written: string[] = [];
    const logger = createLogger({ destination: { write: (line: string) => void written.push(line) } }).child({ instance: 'a' });
    const fields = { request_id: 'r', method: 'GET', route: '/v1/x', status: 200, duration_ms: 1, subject_kind: null, credential_id: null };
    accessLog(logger)({ ...fields, aborted: false });
    logger.info('started');
    expect(written.map((l) => JSON.parse(l).instance)).toEqual(['a', 'a']);
  });

  test('the log of this file holds every request id it sent, and none of its secrets', async () => {
    await new Promise((resolve) => setTimeout(resolve, 50));
    const log = logLines.join('\n');
    const missing = [...sentIds].filter((id) => !log.includes(`"request_id":"${id}"`));
    expect(missing).toEqual([]);
    const codes = (await app.sql<{ subject: string }>('select subject from rowgate_private.mail_outbox')).map(
      (m) => /([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(m.subject)?.[1],
    );
    for (const secret of [...secrets, ...codes.filter(Boolean)]) expect(log).not.toContain(secret);
    expect(log).not.toMatch(/rg_(pat|us|oat|at_u|at_o|cst|mst|rt)_[A-Za-z0-9]{20}/);
  });

  test('GET /metrics on its own server: requests by route template and status, pool connections, refusals', async () => {
    const server = await listen(createMetricsServer(new Metrics({ pool: app.pool, processMetrics: false })), 0, '127.0.0.1');
    const poolOnly = await (await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/metrics`)).text();
    server.close();
    expect(poolOnly).toMatch(/rowgate_pool_connections\{state="in_use"\} \d+/);
    expect(poolOnly).toMatch(/rowgate_pool_connections\{state="waiting"\} \d+/);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/rowgate_http_requests_total\{method="GET",route="\/v1\/products\/",status="200"\} \d+/);
    expect(text).toMatch(/rowgate_http_request_duration_seconds_bucket\{[^}]*route="\(rate limited\)",status="429"[^}]*\} \d+/);
    expect(text).toMatch(/rowgate_rate_limit_refusals_total\{policy="default"\} [1-9]/);
    expect(text).toMatch(/rowgate_rate_limit_refusals_total\{policy="anonymous"\} [1-9]/);
    expect(text).not.toContain('/v1/nothing'); // an unmatched path is no label
    await app.post('/graphql', { query: `{ ${'a: __typename '.repeat(30)} }` });
    expect(await metrics.registry.metrics()).toMatch(/rowgate_graphql_refusals_total\{code="QUERY_TOO_COMPLEX"\} [1-9]/);
  });
});
