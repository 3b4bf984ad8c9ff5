// Error shapes everywhere (SPEC §6, §7): unknown routes and methods, bodies that
// cannot be read, validation errors and their locations, list parameters.
// One declared case per row; the tests are generated from the tables.
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { boundedText, ECHOED_CHARACTERS } from '../src/core/errors.ts';
import { allRoutes, apiRoutes } from '../src/server/route-table.ts';
import { expectError, expectUnauthorized, expectValidationError, type Issue } from './expect-api.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let user: TestUser;
beforeAll(async () => {
  app = await startTestApp();
  user = await app.user({ name: 'Errors' });
});
afterAll(async () => app?.close());

const withParams = (path: string) => path.replace(/\{\w+\}/g, () => randomUUID());

describe('service endpoints', () => {
  test.each(['/healthz', '/readyz'])('GET %s → 200 {status: "ok"}', async (path) => {
    const res = await app.get(path);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'ok' } });
  });
});

describe('unknown routes → 404', () => {
  const cases: [method: string, path: string][] = [
    ['GET', '/v1/nothing-here'],
    ['POST', '/v1/nothing-here/'],
    ['GET', '/v2/users/me'],
    ['GET', '/v1/users/me/extra'],
    ['DELETE', '/v1/personal-access-tokens/a/b'],
    ['PATCH', '/'],
    ['GET', '/v1/'],
  ];
  test.each(cases)('%s %s', async (method, path) => {
    const res = await app.request(method, path, { session: user.session });
    expectError(res, 404, 'NotFound');
  });
});

describe('a method a path does not serve → 405 with Allow', () => {
  // every path of the route table (service routes included), every method it lacks
  const routes = allRoutes({} as pg.Pool);
  const methodsByPath = new Map<string, Set<string>>();
  for (const r of routes) {
    const set = methodsByPath.get(r.path) ?? new Set<string>();
    set.add(r.method.toUpperCase());
    methodsByPath.set(r.path, set);
  }
  /** the OAuth2 protocol endpoints answer every error in RFC 6749's shape (their 405 too) */
  const oauth2Paths = new Set(routes.filter((r) => r.errorFormat === 'oauth2').map((r) => r.path));
  const cases = [...methodsByPath].flatMap(([path, allowed]) =>
    ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => !allowed.has(m)).map((method) => ({ method, path, allowed })),
  );

  test('the table has paths to check', () => {
    expect(methodsByPath.has('/v1/users/me')).toBe(true);
    expect(oauth2Paths).toEqual(
      new Set(['/v1/oauth2/token', '/v1/oauth2/revoke', '/v1/oauth2/introspect', '/.well-known/oauth-authorization-server']),
    );
    expect(cases.length).toBeGreaterThan(methodsByPath.size);
  });

  test.each(cases)('$method $path', async ({ method, path, allowed }) => {
    // no credential: the method is refused before anybody is authenticated
    const res = await app.request(method, withParams(path));
    if (oauth2Paths.has(path)) {
      expect({ status: res.status, body: res.body }).toEqual({
        status: 405,
        body: { error: 'invalid_request', error_description: `Allowed: ${[...allowed].join(', ')}` },
      });
    } else expectError(res, 405, 'MethodNotAllowed');
    const allow = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim());
    expect(allow.sort()).toEqual([...allowed].sort());
  });

  test('an OAuth2 endpoint with the trailing slash the router matches too: RFC 6749 shape', async () => {
    const res = await app.request('PUT', '/v1/oauth2/token/');
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 405, error: 'invalid_request' });
  });
});

describe('request bodies that cannot be read', () => {
  const PAT = '/v1/personal-access-tokens/';
  const valid = JSON.stringify({ comment: 'from a bad request', scopes: ['user:read'] });

  const malformed: [name: string, body: string][] = [
    ['truncated JSON', '{"comment": "x", "scopes": ['],
    ['a trailing comma', '{"comment": "x",}'],
    ['single quotes', "{'comment': 'x'}"],
    ['a bare string (not an object)', '"just a string"'],
    ['null', 'null'],
    ['not JSON at all', 'comment=x'],
  ];
  test.each(malformed)('malformed JSON (%s) → 422 at body', async (_name, rawBody) => {
    const res = await app.request('POST', PAT, { session: user.session, rawBody, headers: { 'content-type': 'application/json' } });
    const issues = expectValidationError(res);
    expect(issues).toEqual([{ type: 'json_invalid', loc: ['body'], msg: expect.stringContaining('Invalid JSON') }]);
  });

  test('a JSON array where an object is expected → 422 at body', async () => {
    const res = await app.request('POST', PAT, { session: user.session, rawBody: '[]', headers: { 'content-type': 'application/json' } });
    expect(expectValidationError(res)).toEqual([{ type: 'invalid_type', loc: ['body'], msg: expect.any(String), input: [] }]);
  });

  test('JSON nested 100,000 deep → 422 at body, the server unharmed (found by the fuzzer: a stack overflow, a 500)', async () => {
    const depth = 100_000;
    const deep = '['.repeat(depth) + ']'.repeat(depth);
    const res = await app.request('POST', PAT, { session: user.session, rawBody: deep, headers: { 'content-type': 'application/json' } });
    expect(expectValidationError(res).map((i) => [i.type, i.loc])).toEqual([['invalid_type', ['body']]]);
    // a NUL at the bottom is found and located
    const withNul = `{"comment":${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}}`;
    const nul = await app.request('POST', PAT, {
      session: user.session,
      rawBody: withNul,
      headers: { 'content-type': 'application/json' },
    });
    const [issue] = expectValidationError(nul);
    expect(issue!.type).toBe('string_nul');
    expect(issue!.loc.slice(0, 3)).toEqual(['body', 'comment', 0]);
    expect(issue!.loc).toHaveLength(depth + 2);
    expect((await app.get('/v1/users/me', { session: user.session })).status).toBe(200);
  });

  const unsupported: [contentType: string][] = [
    ['text/plain'],
    ['text/plain; charset=utf-8'],
    ['application/xml'],
    ['application/octet-stream'],
    ['application/json; charset=latin1'],
  ];
  test.each(unsupported)('a body of type %s → 415', async (contentType) => {
    const res = await app.request('POST', PAT, { session: user.session, rawBody: valid, headers: { 'content-type': contentType } });
    expectError(res, 415, 'UnsupportedMediaType');
    expect(await app.sql('select 1 from rowgate.personal_access_tokens where user_id = $1', [user.id])).toEqual([]);
  });

  test('a chunked text/plain body (no content-length) → 415', async () => {
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(valid));
        controller.close();
      },
    });
    const response = await fetch(app.url + PAT, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', cookie: `rowgate_session=${user.session}` },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    const body = await response.json();
    expect({ status: response.status, body }).toEqual({ status: 415, body: { error: 'UnsupportedMediaType', detail: expect.any(String) } });
  });

  // a Content-Encoding the body is not in: zlib's or brotli's error was a 400 `BadRequest` outside SPEC §7's table
  test.each(['gzip', 'deflate', 'br'])(
    'a body that is not the %s its Content-Encoding says → 422 at body, nothing written',
    async (encoding) => {
      const response = await fetch(app.url + PAT, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding, cookie: `rowgate_session=${user.session}` },
        body: valid,
      });
      const body = (await response.json()) as { detail: Issue[] };
      const issues = expectValidationError({ status: response.status, headers: response.headers, body });
      expect(issues).toEqual([{ type: 'body_encoding', loc: ['body'], msg: expect.stringContaining('Content-Encoding') }]);
      expect(await app.sql('select 1 from rowgate.personal_access_tokens where user_id = $1', [user.id])).toEqual([]);
    },
  );

  test('an unsupported Content-Encoding or charset is a 415 that quotes it bounded', async () => {
    const cases: Record<string, string>[] = [
      { 'content-type': 'application/json', 'content-encoding': 'x'.repeat(8_000) },
      { 'content-type': `application/json; charset=${'q'.repeat(8_000)}` },
    ];
    for (const headers of cases) {
      const response = await fetch(app.url + PAT, {
        method: 'POST',
        headers: { ...headers, cookie: `rowgate_session=${user.session}` },
        body: valid,
      });
      const text = await response.text();
      expect(response.status).toBe(415);
      expect(JSON.parse(text)).toEqual({ error: 'UnsupportedMediaType', detail: expect.any(String) });
      expect(text.length).toBeLessThan(500);
    }
  });

  test('a body in the Content-Encoding it says is read', async () => {
    const response = await fetch(app.url + PAT, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', cookie: `rowgate_session=${user.session}` },
      body: gzipSync(valid),
    });
    expect(response.status).toBe(201);
    await app.sql('delete from rowgate.personal_access_tokens where user_id = $1', [user.id]);
  });

  const MiB = 1024 * 1024;
  const bodyOfSize = (bytes: number) => {
    const head = '{"scopes":["user:read"],"comment":"';
    const tail = '"}';
    return head + 'a'.repeat(bytes - head.length - tail.length) + tail;
  };

  test('a body over 1 MiB → 413 PayloadTooLarge', async () => {
    const rawBody = bodyOfSize(MiB + 1);
    expect(Buffer.byteLength(rawBody)).toBe(MiB + 1);
    const res = await app.request('POST', PAT, { session: user.session, rawBody, headers: { 'content-type': 'application/json' } });
    expectError(res, 413, 'PayloadTooLarge');
  });

  test('a body of exactly 1 MiB is read (and then validated: 422 at body.comment)', async () => {
    const rawBody = bodyOfSize(MiB);
    expect(Buffer.byteLength(rawBody)).toBe(MiB);
    const res = await app.request('POST', PAT, { session: user.session, rawBody, headers: { 'content-type': 'application/json' } });
    expect(expectValidationError(res).map((i) => [i.type, i.loc])).toEqual([['too_big', ['body', 'comment']]]);
  });
});

// The router decodes a path's parameters before any route runs: one that is not
// percent-encoded UTF-8 was a 400 `BadRequest` echoing the whole segment (a
// 12,000-character one, whole). It is a bad path, answered so whoever asks (the
// route's credential is not read: nothing is known of the path to keep back).
describe('a path parameter that is not percent-encoded UTF-8 → 422 at path, echoed bounded', () => {
  const long = `${'A'.repeat(12_000)}%ff`;
  const cases: [path: string, input: string][] = [
    ['/v1/products/%ff', '%ff'],
    ['/v1/customers/external/%E0%A4%A', '%E0%A4%A'],
    ['/v1/personal-access-tokens/%C0%80', '%C0%80'],
    [`/v1/products/${long}`, `${long.slice(0, ECHOED_CHARACTERS - 1)}…`],
  ];
  test.each(cases.map(([path, input]) => ({ path: path.slice(0, 40), full: path, input })))('$path', async ({ full, input }) => {
    for (const session of [user.session, undefined]) {
      const res = await app.get(full, { session });
      expect(expectValidationError(res)).toEqual([{ type: 'path_encoding', loc: ['path'], msg: expect.any(String), input }]);
      expect(JSON.stringify(res.body).length).toBeLessThan(500);
    }
  });
});

describe('validation errors → 422 with {type, loc, msg, input?}', () => {
  interface Case {
    name: string;
    method: string;
    path: string;
    body?: unknown;
    /** the issues, in order: [type, loc] and the refused input when there is one */
    issues: { type: string; loc: (string | number)[]; input?: unknown }[];
  }
  const PAT = '/v1/personal-access-tokens/';
  const cases: Case[] = [
    // PostgreSQL text cannot hold U+0000: refused at its location, wherever it is (found by the HTTP fuzzer)
    {
      name: 'a NUL character in a string of an array',
      method: 'POST',
      path: PAT,
      body: { comment: 'ci', scopes: ['\u0000'] },
      issues: [{ type: 'string_nul', loc: ['body', 'scopes', 0], input: '\u0000' }],
    },
    {
      name: 'a NUL character in a string, and in a field name',
      method: 'POST',
      path: PAT,
      body: { comment: 'c\u0000i', scopes: ['products_read'], 'x\u0000': 1 },
      issues: [
        { type: 'string_nul', loc: ['body', 'comment'], input: 'c\u0000i' },
        { type: 'string_nul', loc: ['body', 'x\u0000'] },
      ],
    },
    // zod skips a field named __proto__ without a word (an object's or a record's): refused at its location
    {
      name: 'a field named __proto__',
      method: 'POST',
      path: PAT,
      body: JSON.parse('{"comment": "x", "scopes": ["user:read"], "__proto__": {"admin": true}}'),
      issues: [{ type: 'reserved_key', loc: ['body', '__proto__'] }],
    },
    {
      name: 'a query parameter named __proto__',
      method: 'GET',
      path: `${PAT}?__proto__=1`,
      issues: [{ type: 'reserved_key', loc: ['query', '__proto__'] }],
    },
    {
      name: 'a NUL character in the query',
      method: 'GET',
      path: `${PAT}?sorting=%00`,
      issues: [{ type: 'string_nul', loc: ['query', 'sorting'], input: '\u0000' }],
    },
    {
      name: 'missing required fields',
      method: 'POST',
      path: PAT,
      body: {},
      issues: [
        { type: 'invalid_type', loc: ['body', 'comment'] },
        { type: 'invalid_type', loc: ['body', 'scopes'] },
      ],
    },
    {
      name: 'a blank comment',
      method: 'POST',
      path: PAT,
      body: { comment: '   ', scopes: ['user:read'] },
      issues: [{ type: 'too_small', loc: ['body', 'comment'], input: '   ' }],
    },
    {
      name: 'a comment of the wrong type',
      method: 'POST',
      path: PAT,
      body: { comment: 42, scopes: ['user:read'] },
      issues: [{ type: 'invalid_type', loc: ['body', 'comment'], input: 42 }],
    },
    {
      name: 'no scopes',
      method: 'POST',
      path: PAT,
      body: { comment: 'x', scopes: [] },
      issues: [{ type: 'too_small', loc: ['body', 'scopes'], input: [] }],
    },
    {
      name: 'an empty scope, located at its index',
      method: 'POST',
      path: PAT,
      body: { comment: 'x', scopes: ['user:read', ''] },
      issues: [{ type: 'too_small', loc: ['body', 'scopes', 1], input: '' }],
    },
    {
      name: 'an unknown field, located at the field',
      method: 'POST',
      path: PAT,
      body: { comment: 'x', scopes: ['user:read'], colour: 'blue' },
      issues: [{ type: 'unrecognized_keys', loc: ['body', 'colour'], input: 'blue' }],
    },
    {
      name: 'two unknown fields, one issue each',
      method: 'POST',
      path: PAT,
      body: { comment: 'x', scopes: ['user:read'], a: 1, b: 2 },
      issues: [
        { type: 'unrecognized_keys', loc: ['body', 'a'], input: 1 },
        { type: 'unrecognized_keys', loc: ['body', 'b'], input: 2 },
      ],
    },
    {
      name: 'expires_in below one minute',
      method: 'POST',
      path: PAT,
      body: { comment: 'x', scopes: ['user:read'], expires_in: 59 },
      issues: [{ type: 'too_small', loc: ['body', 'expires_in'], input: 59 }],
    },
    {
      name: 'expires_in not an integer',
      method: 'POST',
      path: PAT,
      body: { comment: 'x', scopes: ['user:read'], expires_in: 3600.5 },
      issues: [{ type: 'invalid_type', loc: ['body', 'expires_in'], input: 3600.5 }],
    },
    {
      name: 'a scope that does not exist (checked by the database)',
      method: 'POST',
      path: PAT,
      body: { comment: 'x', scopes: ['user:read', 'root'] },
      issues: [{ type: 'value_error', loc: ['body', 'scopes'] }],
    },
    {
      name: 'a customer-portal scope (not a scope a PAT can hold)',
      method: 'POST',
      path: PAT,
      body: { comment: 'x', scopes: ['customer_portal_read'] },
      issues: [{ type: 'value_error', loc: ['body', 'scopes'] }],
    },
    {
      name: 'an avatar URL that is not http(s)',
      method: 'PATCH',
      path: '/v1/users/me',
      body: { avatar_url: 'ftp://example.com/a.png' },
      issues: [{ type: 'invalid_format', loc: ['body', 'avatar_url'], input: 'ftp://example.com/a.png' }],
    },
    {
      name: 'an e-mail change (not an updatable field)',
      method: 'PATCH',
      path: '/v1/users/me',
      body: { email: 'new@example.com' },
      issues: [{ type: 'unrecognized_keys', loc: ['body', 'email'], input: 'new@example.com' }],
    },
    {
      name: 'a name of the wrong type',
      method: 'PATCH',
      path: '/v1/users/me',
      body: { name: ['Ada'] },
      issues: [{ type: 'invalid_type', loc: ['body', 'name'], input: ['Ada'] }],
    },
    {
      name: 'a path id that is not a uuid',
      method: 'DELETE',
      path: `${PAT}not-a-uuid`,
      issues: [{ type: 'invalid_format', loc: ['path', 'id'], input: 'not-a-uuid' }],
    },
    ...(
      [
        ['limit=0', 'too_small', 'limit', '0'],
        ['limit=101', 'too_big', 'limit', '101'],
        ['limit=-1', 'too_small', 'limit', '-1'],
        ['limit=ten', 'invalid_format', 'limit', 'ten'],
        ['limit=2.5', 'invalid_type', 'limit', '2.5'],
        ['limit=10&limit=20', 'invalid_type', 'limit', ['10', '20']],
        ['page=0', 'too_small', 'page', '0'],
        ['page=-3', 'too_small', 'page', '-3'],
        ['page=first', 'invalid_format', 'page', 'first'],
        ['sorting=unknown', 'custom', 'sorting', 'unknown'],
        ['sorting=-unknown', 'custom', 'sorting', '-unknown'],
        ['sorting=comment,unknown', 'custom', 'sorting', 'comment,unknown'],
        ['sorting=comment&sorting=secret', 'custom', 'sorting', ['comment', 'secret']],
        ['colour=blue', 'unrecognized_keys', 'colour', 'blue'],
      ] as const
    ).map(
      ([query, type, field, input]): Case => ({
        name: `list query ${query}`,
        method: 'GET',
        path: `${PAT}?${query}`,
        issues: [{ type, loc: ['query', field], input }],
      }),
    ),
  ];

  test.each(cases)('$method $path: $name', async ({ method, path, body, issues }) => {
    const res = await app.request(method, path, { session: user.session, body });
    const got = expectValidationError(res);
    expect(got).toEqual(
      issues.map((issue) => ({
        type: issue.type,
        loc: issue.loc,
        msg: expect.any(String),
        ...('input' in issue ? { input: issue.input } : {}),
      })),
    );
    // nothing was written
    expect(await app.sql('select 1 from rowgate.personal_access_tokens where user_id = $1', [user.id])).toEqual([]);
  });

  test.each(cases.filter((c) => c.method !== 'GET'))(
    'without a credential, $method $path ($name) is a 401, not a 422',
    async ({ method, path, body }) => {
      expectUnauthorized(await app.request(method, path, { body }), false);
    },
  );

  test('validation messages say what is wrong', async () => {
    const res = await app.get(`${PAT}?sorting=nope`, { session: user.session });
    const [issue] = expectValidationError(res) as [Issue];
    expect(issue.msg).toContain('nope');
    expect(issue.msg).toContain('comment');
  });
});

describe('pagination and sorting of a list (personal access tokens)', () => {
  interface Row {
    id: string;
    comment: string;
    last_used_at: number | null;
    created_us: number;
  }
  let lister: TestUser;
  let rows: Row[];
  const TOTAL = 12;
  const LIMIT = 5;

  beforeAll(async () => {
    lister = await app.user();
    // two statements: created_at ties inside each batch, and differs between them;
    // comments and last use repeat, so every sort key has ties that `id` must break
    for (const batch of [0, 1]) {
      await app.sql(
        `insert into rowgate.personal_access_tokens (user_id, comment, scopes, last_used_at)
         select $1, (array['alpha', 'bravo', 'charlie'])[1 + i % 3], '{user:read}',
           case when i % 4 = 0 then null else timestamptz '2026-01-01' + (i % 2) * interval '1 day' end
         from generate_series($2::int, $2::int + 5) i`,
        [lister.id, batch * 6],
      );
    }
    rows = await app.sql<Row>(
      `select id, comment, (extract(epoch from last_used_at) * 1000)::float8 as last_used_at,
         (extract(epoch from created_at) * 1000000)::float8 as created_us
       from rowgate.personal_access_tokens where user_id = $1`,
      [lister.id],
    );
    expect(rows).toHaveLength(TOTAL);
    expect(new Set(rows.map((r) => r.created_us)).size).toBe(2);
  });

  /** The order SPEC §6 promises, computed here: keys in turn (PostgreSQL puts nulls last ascending), ties on id. */
  function expectedOrder(sorting: string | undefined) {
    const keys = (sorting ?? '-created_at').split(',');
    const column = { created_at: 'created_us', comment: 'comment', last_used_at: 'last_used_at' } as const;
    const compare = (a: unknown, b: unknown) => {
      if (a === b) return 0;
      if (a === null) return 1;
      if (b === null) return -1;
      return (a as number | string) < (b as number | string) ? -1 : 1;
    };
    const lastDescending = keys[keys.length - 1]!.startsWith('-');
    return [...rows]
      .sort((x, y) => {
        for (const key of keys) {
          const descending = key.startsWith('-');
          const field = column[key.replace(/^-/, '') as keyof typeof column];
          const c = compare(x[field], y[field]);
          if (c) return descending ? -c : c;
        }
        const c = compare(x.id, y.id);
        return lastDescending ? -c : c;
      })
      .map((r) => r.id);
  }

  const sortings: (string | undefined)[] = [
    undefined,
    'created_at',
    '-created_at',
    'comment',
    '-comment',
    'last_used_at',
    '-last_used_at',
    'comment,-last_used_at',
    '-comment,created_at',
    'last_used_at,comment,-created_at',
  ];

  test.each(sortings.map((sorting) => ({ sorting: sorting ?? '(default)', value: sorting })))(
    'sorting=$sorting: pages in order, never overlapping, with true totals',
    async ({ value }) => {
      const seen: string[] = [];
      const maxPage = Math.ceil(TOTAL / LIMIT);
      for (let page = 1; page <= maxPage + 1; page++) {
        const query = new URLSearchParams({ page: String(page), limit: String(LIMIT), ...(value ? { sorting: value } : {}) });
        const res = await app.get(`/v1/personal-access-tokens/?${query}`, { session: lister.session });
        expect(res.status).toBe(200);
        expect(res.body.pagination).toEqual({ total_count: TOTAL, max_page: maxPage });
        const expectedSize = page <= maxPage ? Math.min(LIMIT, TOTAL - (page - 1) * LIMIT) : 0;
        expect(res.body.items).toHaveLength(expectedSize);
        seen.push(...res.body.items.map((i: { id: string }) => i.id));
      }
      expect(new Set(seen).size).toBe(TOTAL);
      expect(seen).toEqual(expectedOrder(value));
    },
  );

  test('the two directions of a key are each other’s reverse when the key has no ties', async () => {
    const ids = async (sorting: string) =>
      (await app.get(`/v1/personal-access-tokens/?limit=100&sorting=${sorting}`, { session: lister.session })).body.items.map(
        (i: { id: string }) => i.id,
      );
    // created_at ties break on id in the same direction, so the whole order reverses
    expect(await ids('-created_at')).toEqual((await ids('created_at')).reverse());
  });

  test('repeated sorting parameters mean the same as a comma-separated list', async () => {
    const a = await app.get('/v1/personal-access-tokens/?limit=100&sorting=comment&sorting=-last_used_at', { session: lister.session });
    const b = await app.get('/v1/personal-access-tokens/?limit=100&sorting=comment,-last_used_at', { session: lister.session });
    expect(a.status).toBe(200);
    expect(a.body.items.map((i: { id: string }) => i.id)).toEqual(expectedOrder('comment,-last_used_at'));
    expect(b.body).toEqual(a.body);
  });

  const pastTheEnd: [page: number, limit: number][] = [
    [4, 5],
    [2, 12],
    [1000, 1],
    [1_000_000, 100],
  ];
  test.each(pastTheEnd)('page %i with limit %i (past the end) → no items, the true totals', async (page, limit) => {
    const res = await app.get(`/v1/personal-access-tokens/?page=${page}&limit=${limit}`, { session: lister.session });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], pagination: { total_count: TOTAL, max_page: Math.ceil(TOTAL / limit) } });
  });

  test('defaults: page 1, limit 10', async () => {
    const res = await app.get('/v1/personal-access-tokens/', { session: lister.session });
    expect(res.status).toBe(200);
    expect(res.body.items.map((i: { id: string }) => i.id)).toEqual(expectedOrder(undefined).slice(0, 10));
    expect(res.body.pagination).toEqual({ total_count: TOTAL, max_page: 2 });
  });

  test('an empty list: no items, total 0, max_page 0', async () => {
    const empty = await app.user();
    const res = await app.get('/v1/personal-access-tokens/?page=3', { session: empty.session });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], pagination: { total_count: 0, max_page: 0 } });
  });

  test('a list shows only the caller’s own, live tokens', async () => {
    const [one] = rows;
    await app.sql('update rowgate.personal_access_tokens set deleted_at = now() where id = $1', [one!.id]);
    try {
      const res = await app.get('/v1/personal-access-tokens/?limit=100', { session: lister.session });
      expect(res.body.pagination.total_count).toBe(TOTAL - 1);
      expect(res.body.items.map((i: { id: string }) => i.id)).not.toContain(one!.id);
      const other = await app.get('/v1/personal-access-tokens/?limit=100', { session: user.session });
      expect(other.body.pagination.total_count).toBe(0);
    } finally {
      await app.sql('update rowgate.personal_access_tokens set deleted_at = null where id = $1', [one!.id]);
    }
  });
});

test('the route table is not empty (the generated cases above have something to cover)', () => {
  expect(apiRoutes.length).toBeGreaterThanOrEqual(6);
});

test('an echoed input is cut between characters, never inside a surrogate pair', () => {
  // an emoji is two UTF-16 units: cut at an odd length, the first half would be left alone
  const emojis = '😀'.repeat(300);
  for (const max of [199, 200, 201]) {
    const cut = boundedText(emojis, max);
    expect(cut.length).toBeLessThanOrEqual(max);
    expect(cut.endsWith('😀…')).toBe(true);
    expect(cut.isWellFormed()).toBe(true);
  }
  expect(boundedText(`a${emojis}`, 200)).toBe(`a${'😀'.repeat(99)}…`);
});
