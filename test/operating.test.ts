// Operating (SPEC §14): answers no cache keeps, bounded 422s, a
// statement timeout as 504 Timeout with a warning line, HTTP connections that
// do not stay open for ever, a statement timeout that works.
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { ECHOED_CHARACTERS, MAX_ISSUES } from '../src/core/errors.ts';
import { listen } from '../src/server/listen.ts';
import { createHttpServer } from '../src/server/http-server.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

const TIMEOUT_MS = 1000;
let app: TestApp;
const lines: string[] = [];
let ann: TestUser;
let organizationId: string;
let pat: string;

beforeAll(async () => {
  app = await startTestApp({ statementTimeoutMs: TIMEOUT_MS, log: (line) => lines.push(line) });
  ann = await app.user();
  organizationId = (await app.organization(ann.id)).id;
  await app.product(organizationId);
  pat = await app.pat(ann.id, ['products_write', 'user:read']);
});
afterAll(async () => app?.close());

describe('Cache-Control: no-store on every /v1 answer and the OAuth2 endpoints', () => {
  const cases: [string, () => Promise<{ status: number; headers: Headers }>, number][] = [
    ['a list', () => app.get('/v1/products/', { token: pat }), 200],
    [
      'a created token',
      () => app.post('/v1/personal-access-tokens/', { comment: 'x', scopes: ['user:read'] }, { session: ann.session }),
      201,
    ],
    ['a 401', () => app.get('/v1/products/'), 401],
    ['a 404 of an unknown route', () => app.get('/v1/nothing-here'), 404],
    ['a 422', () => app.get('/v1/products/?limit=0', { token: pat }), 422],
    ['the OpenAPI document', () => app.get('/v1/openapi.json'), 200],
    [
      'the OAuth2 token endpoint',
      () =>
        app.request('POST', '/v1/oauth2/token', {
          rawBody: 'grant_type=x',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
      401,
    ],
    ['GraphQL', () => app.post('/graphql', { query: '{ __typename }' }), 200],
  ];
  test.for(cases)('%s', async ([, send, status]) => {
    const res = await send();
    expect({ status: res.status, cacheControl: res.headers.get('cache-control') }).toEqual({ status, cacheControl: 'no-store' });
  });
});

describe('a 422 is bounded: at most 50 issues, at most 200 characters of any input', () => {
  test('an 878 KB body of unknown fields with long names', async () => {
    const body = Object.fromEntries(Array.from({ length: 800 }, (_, i) => [`${'k'.repeat(1000)}${i}`, 'v'.repeat(100)]));
    const rawBody = JSON.stringify({
      name: 'x'.repeat(5000),
      price_amount: 1,
      price_currency: 'usd',
      organization_id: organizationId,
      ...body,
    });
    const res = await app.request('POST', '/v1/products/', { token: pat, rawBody, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(422);
    const detail = res.body.detail as { type: string; loc: unknown[]; msg: string; input?: unknown }[];
    expect(detail).toHaveLength(MAX_ISSUES);
    expect(detail.at(-1)).toMatchObject({ type: 'too_many_issues', msg: expect.stringMatching(/^\d+ more issues are not listed$/) });
    const strings = JSON.stringify(detail).match(/"(?:[^"\\]|\\.)*"/g) ?? [];
    expect(Math.max(...strings.map((s) => s.length))).toBeLessThanOrEqual(2 * ECHOED_CHARACTERS + 3 + 2);
    const inputs = detail.flatMap((d) => (typeof d.input === 'string' ? [d.input] : []));
    expect(inputs.length).toBeGreaterThan(0);
    expect(inputs.every((i) => i.length <= ECHOED_CHARACTERS)).toBe(true);
    // an unknown field's name is echoed in its location and its message, at most 200 characters each time
    const unknown = detail.find((d) => d.msg.startsWith('Unknown field'))!;
    expect(unknown.msg.length).toBeLessThanOrEqual('Unknown field ""'.length + ECHOED_CHARACTERS);
    expect((unknown.loc.at(-1) as string).length).toBeLessThanOrEqual(ECHOED_CHARACTERS);
    expect(JSON.stringify(res.body).length).toBeLessThan(40_000);
  });
});

describe('a statement past the statement timeout is 504 Timeout, naming the limit, with a warning line', () => {
  async function lockedProducts<T>(work: () => Promise<T>): Promise<T> {
    const locker = new pg.Client({ connectionString: app.ownerUrl });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table rowgate.products in access exclusive mode');
      return await work();
    } finally {
      await locker.query('rollback').catch(() => {});
      await locker.end();
    }
  }

  test('REST: a locked table answers 504 within the timeout and a second', async () => {
    const { res, ms } = await lockedProducts(async () => {
      const start = Date.now();
      const res = await app.get('/v1/products/', { token: pat });
      return { res, ms: Date.now() - start };
    });
    expect({ status: res.status, body: res.body, retryAfter: res.headers.get('retry-after') }).toEqual({
      status: 504,
      body: { error: 'Timeout', detail: 'The request took longer than 1 second and was cancelled' },
      retryAfter: null,
    });
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(ms).toBeLessThan(TIMEOUT_MS + 1000);
    expect(lines.filter((l) => /timeout/i.test(l) && l.includes('/v1/products/'))).not.toEqual([]);
  });

  test('GraphQL: TIMEOUT, naming the limit', async () => {
    const res = await lockedProducts(() => app.post('/graphql', { query: '{ allProducts(first: 1) { totalCount } }' }, { token: pat }));
    expect(res.status).toBe(200);
    expect(res.body.errors[0]).toMatchObject({
      message: 'The request took longer than 1 second and was cancelled',
      extensions: { code: 'TIMEOUT' },
    });
  });

  test('a database that cannot be reached stays 503 (the timeout is not it)', async () => {
    // the statement timeout's wording decides; an operator's cancel (57014 too) is not a timeout
    const { fromDatabaseError } = await import('../src/core/errors.ts');
    expect(fromDatabaseError({ code: '57014', message: 'canceling statement due to statement timeout' }, 2500)?.status).toBe(504);
    expect(fromDatabaseError({ code: '57014', message: 'canceling statement due to user request' }, 2500)?.status).toBe(503);
    expect(fromDatabaseError({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' }, 2500)?.status).toBe(503);
    // PostgreSQL's words (async.c) when its NOTIFY queue is full: the database cannot take the write now
    const full = fromDatabaseError({ code: '54000', message: 'too many notifications in the NOTIFY queue' }, 2500);
    expect({ status: full?.status, headers: full?.headers }).toEqual({ status: 503, headers: { 'Retry-After': '2' } });
    // another program limit (an index row too large, say) is not the database being unavailable
    expect(fromDatabaseError({ code: '54000', message: 'index row size 9000 exceeds maximum 8191' }, 2500)).toBeNull();
    // a transaction PostgreSQL undid for a concurrent one (a deadlock, a serialization failure): to be sent again
    for (const code of ['40P01', '40001']) {
      const collided = fromDatabaseError({ code, message: 'deadlock detected' }, 2500);
      expect({ status: collided?.status, headers: collided?.headers }).toEqual({ status: 503, headers: { 'Retry-After': '1' } });
    }
  });

  test("a row that breaks the metadata's rule is a 422 at the metadata; another check is the server's bug (a 500)", async () => {
    const { fromDatabaseError } = await import('../src/core/errors.ts');
    const metadata = fromDatabaseError({
      code: '23514',
      constraint: 'orders_metadata_valid',
      message: 'new row … violates check constraint',
    });
    const where = (error: typeof metadata) => ({
      status: error?.status,
      loc: (error?.detail as { loc: string[] }[] | undefined)?.[0]?.loc,
    });
    expect(where(metadata)).toEqual({ status: 422, loc: ['body', 'metadata'] });
    const other = fromDatabaseError({ code: '23514', constraint: 'orders_amount_check', message: 'new row … violates check constraint' });
    expect(other).toBeNull();
  });
});

describe('idle and slow HTTP connections are closed', () => {
  let port: number;
  let server: ReturnType<typeof createHttpServer>;
  beforeAll(async () => {
    server = createHttpServer((_req, res) => res.end('ok'), {
      statementTimeoutMs: TIMEOUT_MS,
      timeouts: { keepAliveTimeout: 300, headersTimeout: 300, requestTimeout: 600, connectionsCheckingInterval: 50 },
    });
    await listen(server, 0, '127.0.0.1');
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** what the server wrote before it closed the connection */
  function answerBeforeClose(write?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => write && socket.write(write));
      let got = '';
      socket.on('data', (d) => (got += d));
      socket.on('error', reject);
      socket.on('close', () => resolve(got));
    });
  }

  test('a connection that sends nothing, and one whose headers never end, get a 408 and are closed', async () => {
    const [silent, slow] = await Promise.all([answerBeforeClose(), answerBeforeClose('GET / HTTP/1.1\r\nHost: x\r\n')]);
    for (const answer of [silent, slow]) {
      expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(answer).toContain('"error":"RequestTimeout"');
    }
  });

  test('an idle keep-alive connection is closed after its answer', async () => {
    const answer = await answerBeforeClose('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: keep-alive/);
  });
});

test('a malformed request behind one whose answer is under way: the connection is cut, nothing written into that answer', async () => {
  let finish = () => {};
  const server = createHttpServer(
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      finish = () => res.end('rest');
    },
    { statementTimeoutMs: TIMEOUT_MS },
  );
  await listen(server, 0, '127.0.0.1');
  try {
    const got = await new Promise<string>((resolve, reject) => {
      const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1', () =>
        socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'),
      );
      let data = '';
      let sent = false;
      socket.on('data', (chunk) => {
        data += chunk;
        // the answer's start is out: now a request Node's parser refuses, on the same connection
        if (data.includes('partial') && !sent) {
          sent = true;
          socket.write('BOGUS\r\n\r\n');
        }
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(data));
    });
    expect(got).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(got).not.toContain('400 Bad Request');
  } finally {
    finish();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('ROWGATE_STATEMENT_TIMEOUT_MS: at least a second (100 passed, then start-up failed)', () => {
  expect(() => loadConfig({ ROWGATE_STATEMENT_TIMEOUT_MS: '100' })).toThrow(/ROWGATE_STATEMENT_TIMEOUT_MS/);
  expect(loadConfig({ ROWGATE_STATEMENT_TIMEOUT_MS: '1000' }).ROWGATE_STATEMENT_TIMEOUT_MS).toBe(1000);
});
