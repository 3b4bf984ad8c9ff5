// Idempotency keys (SPEC §17): a POST or PATCH under /v1 with `Idempotency-Key`
// has one effect per key of its subject; a retry gets the first 2xx answer
// again, byte for byte; another request with the key is 422, a duplicate sent
// while the first runs is 409; answers other than 2xx are not kept.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectValidationError } from './expect-api.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let user: TestUser;
let stranger: TestUser;
let org: string;
let foreign: string;
beforeAll(async () => {
  app = await startTestApp();
  user = await app.user();
  stranger = await app.user();
  org = (await app.organization(user.id)).id;
  foreign = (await app.organization(stranger.id)).id;
});
afterAll(async () => app?.close());

/** The answer as the wire carries it: status, the replay header, the body's bytes. */
async function send(method: string, path: string, credential: { session?: string; token?: string }, body: unknown, key?: string) {
  // one API version for every credential: a key is claimed per version (SPEC §23), and a web session's differs from a PAT's pin
  const headers: Record<string, string> = { 'content-type': 'application/json', 'rowgate-version': '2026-11-20' };
  if (credential.session) headers.cookie = `rowgate_session=${credential.session}`;
  if (credential.token) headers.authorization = `Bearer ${credential.token}`;
  if (key !== undefined) headers['idempotency-key'] = key;
  const res = await fetch(app.url + path, { method, headers, body: JSON.stringify(body) });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), text: await res.text() };
}

const product = (name: string, organization = org) => ({ organization_id: organization, name, price_amount: 100, price_currency: 'usd' });
const productsNamed = async (name: string) =>
  (await app.sql<{ id: string }>('select id from rowgate.products where name = $1', [name])).map((r) => r.id);

describe('a retry with the key', () => {
  test('POST: one product; the retry gets the first answer byte for byte, marked replayed', async () => {
    const key = randomUUID();
    const name = `idem ${key}`;
    const first = await send('POST', '/v1/products/', user, product(name), key);
    expect(first).toMatchObject({ status: 201, replayed: null });
    const again = await send('POST', '/v1/products/', user, product(name), key);
    expect(again).toEqual({ status: 201, replayed: 'true', text: first.text });
    expect(await productsNamed(name)).toEqual([JSON.parse(first.text).id]);
  });

  test('PATCH: the first answer, even after the row changed again', async () => {
    const created = JSON.parse((await send('POST', '/v1/products/', user, product(`patch ${randomUUID()}`))).text);
    const key = randomUUID();
    const first = await send('PATCH', `/v1/products/${created.id}`, user, { name: 'first name' }, key);
    expect(first.status).toBe(200);
    expect((await send('PATCH', `/v1/products/${created.id}`, user, { name: 'second name' })).status).toBe(200);
    expect(await send('PATCH', `/v1/products/${created.id}`, user, { name: 'first name' }, key)).toEqual({
      status: 200,
      replayed: 'true',
      text: first.text,
    });
    expect((await app.get(`/v1/products/${created.id}`, { session: user.session })).body.name).toBe('second name');
  });

  test('keys belong to the subject: its other credentials replay it, another user has its own', async () => {
    const key = randomUUID();
    const name = `subject ${key}`;
    const first = await send('POST', '/v1/products/', user, product(name), key);
    expect(first.status).toBe(201);
    const pat = await app.pat(user.id, ['products_write']);
    expect(await send('POST', '/v1/products/', { token: pat }, product(name), key)).toMatchObject({ status: 201, replayed: 'true' });
    const theirs = await send('POST', '/v1/products/', stranger, product(name, foreign), key);
    expect(theirs).toMatchObject({ status: 201, replayed: null });
    expect((await productsNamed(name)).length).toBe(2);
  });
});

describe('what a key refuses', () => {
  test('the same body with its fields in another order, or other spacing, is the same request: the replay', async () => {
    const key = randomUUID();
    const name = `reordered ${key}`;
    const body = { organization_id: org, name, price_amount: 100, price_currency: 'usd', metadata: { b: 1, a: 'x' } };
    const first = await send('POST', '/v1/products/', user, body, key);
    expect(first.status).toBe(201);
    const reordered = { metadata: { a: 'x', b: 1 }, price_currency: 'usd', price_amount: 100, name, organization_id: org };
    expect(await send('POST', '/v1/products/', user, reordered, key)).toEqual({ status: 201, replayed: 'true', text: first.text });
    // a value changed inside is another request still
    const changed = await send('POST', '/v1/products/', user, { ...reordered, metadata: { a: 'y', b: 1 } }, key);
    expect(JSON.parse(changed.text).error).toBe('IdempotencyKeyReused');
    expect(await productsNamed(name)).toHaveLength(1);
  });

  test('a stored answer that is not sealed is not replayed, nor is the request run again: 422', async () => {
    const key = randomUUID();
    const name = `unsealed ${key}`;
    const first = await send('POST', '/v1/products/', user, product(name), key);
    expect(first.status).toBe(201);
    // an answer in clear where a sealed one belongs: no server writes it, so none gives it back
    await app.sql('update rowgate_private.idempotency_keys set response_body = $2 where key = $1', [key, first.text]);
    const again = await send('POST', '/v1/products/', user, product(name), key);
    expect(again.status).toBe(422);
    expect(JSON.parse(again.text).error).toBe('IdempotencyKeyReused');
    expect(await productsNamed(name)).toHaveLength(1);
  });

  test('a body nested hundreds of thousands deep with a key: refused as input, not a 500', async () => {
    const deep = `{"organization_id":"${org}","name":"deep","price_amount":100,"price_currency":"usd","metadata":{"a":${'['.repeat(200_000)}${']'.repeat(200_000)}}}`;
    const res = await fetch(`${app.url}/v1/products/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `rowgate_session=${user.session}`, 'idempotency-key': randomUUID() },
      body: deep,
    });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: string }).error).toBe('RequestValidationError');
  });

  test('the same key with another body, path or method: 422 IdempotencyKeyReused, no effect', async () => {
    const key = randomUUID();
    const name = `reused ${key}`;
    const first = JSON.parse((await send('POST', '/v1/products/', user, product(name), key)).text);
    for (const [method, path, body] of [
      ['POST', '/v1/products/', product(`${name} (changed)`)],
      ['POST', '/v1/customers/', { organization_id: org, email: 'a@example.com' }],
      ['PATCH', `/v1/products/${first.id}`, { name }],
    ] as const) {
      const res = await send(method, path, user, body, key);
      expect(res.status, `${method} ${path}`).toBe(422);
      expect(JSON.parse(res.text)).toEqual({ error: 'IdempotencyKeyReused', detail: expect.any(String) });
    }
    expect(await productsNamed(`${name} (changed)`)).toEqual([]);
  });

  test.each([
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['not ASCII', 'clé'],
    ['a control character', 'a\tb'],
  ])('a key that is %s: 422 at the header', async (_name, key) => {
    const headers = { 'idempotency-key': key };
    const res = await app.post('/v1/products/', product(`bad key ${randomUUID()}`), { session: user.session, headers }).catch(() => null);
    // fetch itself refuses some header values; those the server gets are refused with their place
    if (res) expect(expectValidationError(res).map((i) => i.loc)).toEqual([['header', 'idempotency-key']]);
  });

  test('duplicates sent at once: exactly one effect; the others 409 IdempotencyKeyInUse or the replay', async () => {
    const key = randomUUID();
    const name = `concurrent ${key}`;
    const answers = await Promise.all(Array.from({ length: 8 }, () => send('POST', '/v1/products/', user, product(name), key)));
    const created = answers.filter((a) => a.status === 201);
    expect(answers.every((a) => a.status === 201 || a.status === 409)).toBe(true);
    expect(new Set(created.map((a) => a.text)).size).toBe(1);
    for (const busy of answers.filter((a) => a.status === 409)) expect(JSON.parse(busy.text).error).toBe('IdempotencyKeyInUse');
    expect((await productsNamed(name)).length).toBe(1);
    // once it answered, every retry is the replay
    expect(await send('POST', '/v1/products/', user, product(name), key)).toEqual({
      status: 201,
      replayed: 'true',
      text: created[0]!.text,
    });
  });

  test('an answer other than 2xx is not kept: the key is free for the corrected request', async () => {
    const key = randomUUID();
    const name = `refused ${key}`;
    // an organization out of reach: refused, nothing kept
    expect((await send('POST', '/v1/products/', user, product(name, foreign), key)).status).toBeGreaterThanOrEqual(400);
    const corrected = await send('POST', '/v1/products/', user, product(name), key);
    expect(corrected).toMatchObject({ status: 201, replayed: null });
    expect((await productsNamed(name)).length).toBe(1);
  });

  test('reads ignore the header; the database keeps no key for them', async () => {
    const key = randomUUID();
    const res = await app.get('/v1/products/', { session: user.session, headers: { 'idempotency-key': key } });
    expect(res.status).toBe(200);
    expect(await app.sql('select 1 from rowgate_private.idempotency_keys where key = $1', [key])).toEqual([]);
  });
});

describe('what makes two requests the same (a hostile review, 2026-11-26)', () => {
  test('two Idempotency-Key headers are refused at the header, not joined into one key', async () => {
    const { request } = await import('node:http');
    const target = new URL(app.url);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: target.hostname, port: target.port, path: '/v1/products/', method: 'POST' }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.setHeader('content-type', 'application/json');
      req.setHeader('cookie', `rowgate_session=${user.session}`);
      req.setHeader('idempotency-key', ['first', 'second']);
      req.on('error', reject);
      req.end(JSON.stringify(product(`two keys ${randomUUID()}`)));
    });
    expect(answer.status).toBe(422);
    expect(JSON.parse(answer.body).detail.map((i: { loc: string[] }) => i.loc)).toEqual([['header', 'idempotency-key']]);
  });

  test('the query string is part of the request: the same key and body for another organization is 422, not a replay', async () => {
    const second = (await app.organization(user.id)).id;
    const external = `ext-${randomUUID()}`;
    for (const organization of [org, second]) {
      const created = await send('POST', '/v1/customers/', user, {
        organization_id: organization,
        email: `${randomUUID()}@example.com`,
        external_id: external,
      });
      expect(created.status).toBe(201);
    }
    const key = randomUUID();
    const first = await send('PATCH', `/v1/customers/external/${external}?organization_id=${org}`, user, { last_name: 'Patched' }, key);
    expect(first.status).toBe(200);
    const other = await send('PATCH', `/v1/customers/external/${external}?organization_id=${second}`, user, { last_name: 'Patched' }, key);
    expect(other.status).toBe(422);
    expect(JSON.parse(other.text).error).toBe('IdempotencyKeyReused');
  });

  test("sign-out's key is the same request only through the same session", async () => {
    const [one, two] = [await app.session(user.id), await app.session(user.id)];
    const key = randomUUID();
    expect((await send('POST', '/v1/auth/logout', { session: one }, undefined, key)).status).toBe(204);
    const other = await send('POST', '/v1/auth/logout', { session: two }, undefined, key);
    expect(other.status).toBe(422);
    expect(JSON.parse(other.text).error).toBe('IdempotencyKeyReused');
    // not a silent 204: the second session was not signed out, and says so
    expect((await app.get('/v1/users/me', { session: two })).status).toBe(200);
  });

  test('a stored answer holds no secret in clear; its replay gives it back byte for byte', async () => {
    const key = randomUUID();
    const first = await send('POST', '/v1/personal-access-tokens/', user, { comment: 'kept-comment', scopes: ['user:read'] }, key);
    expect(first.status).toBe(201);
    const token = JSON.parse(first.text).token as string;
    expect(token).toMatch(/^rg_pat_/);
    const [stored] = await app.sql<{ response_body: string }>('select response_body from rowgate_private.idempotency_keys where key = $1', [
      key,
    ]);
    expect(stored!.response_body).not.toContain(token);
    expect(stored!.response_body).not.toContain('kept-comment');
    expect(stored!.response_body).toMatch(/^sealed:v1:/);
    expect(await send('POST', '/v1/personal-access-tokens/', user, { comment: 'kept-comment', scopes: ['user:read'] }, key)).toEqual({
      status: 201,
      replayed: 'true',
      text: first.text,
    });
  });

  test("a key older than 24 hours is forgotten, the request runs again, even where the cleanup of others' keys does not reach it", async () => {
    // older expired keys of others, written first: the ten a claim cleans, in either order PostgreSQL reads them
    await app.sql(
      `insert into rowgate_private.idempotency_keys (subject_kind, subject_id, key, request_hash, response_status, response_body, created_at)
         select 'user', gen_random_uuid(), 'older ' || i, '\\x00', 201, '{}', now() - interval '72 hours' from generate_series(1, 30) i`,
    );
    const key = randomUUID();
    const name = `expired ${key}`;
    expect((await send('POST', '/v1/products/', user, product(name), key)).status).toBe(201);
    await app.sql(`update rowgate_private.idempotency_keys set created_at = now() - interval '25 hours' where key = $1`, [key]);
    expect(await send('POST', '/v1/products/', user, product(name), key)).toMatchObject({ status: 201, replayed: null });
    expect((await productsNamed(name)).length).toBe(2);
  });

  test("cleaning expired keys never waits for another transaction's: a keyed write goes on while they are locked", async () => {
    await app.sql(
      `insert into rowgate_private.idempotency_keys (subject_kind, subject_id, key, request_hash, response_status, response_body, created_at)
         select 'user', gen_random_uuid(), 'expired ' || i, '\\x00', 201, '{}', now() - interval '48 hours' from generate_series(1, 20) i`,
    );
    const holder = await app.owner.connect();
    try {
      await holder.query('begin');
      // every expired key, whatever earlier tests left: a cleanup that waited would wait here
      await holder.query(`select 1 from rowgate_private.idempotency_keys where created_at < now() - interval '24 hours' for update`);
      const name = `while locked ${randomUUID()}`;
      const answer = send('POST', '/v1/products/', user, product(name), randomUUID());
      // before the fix the claim waited for this transaction; a bounded wait tells the two apart
      const outcome = await Promise.race([answer.then((a) => a.status), new Promise((r) => setTimeout(() => r('still waiting'), 5_000))]);
      expect(outcome).toBe(201);
    } finally {
      await holder.query('rollback');
      holder.release();
    }
  });
});

describe('what a replay carries besides its body', () => {
  const post = (path: string, session: string, body: unknown, key: string) =>
    fetch(app.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: `rowgate_session=${session}`, 'idempotency-key': key },
      body: JSON.stringify(body),
    });

  test("an impersonation's session cookie, set again", async () => {
    const admin = await app.user({ admin: true });
    const target = await app.user();
    const key = randomUUID();
    const first = await post('/v1/impersonations/', admin.session, { user_id: target.id }, key);
    expect(first.status).toBe(201);
    const again = await post('/v1/impersonations/', admin.session, { user_id: target.id }, key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(await first.text());
    expect(again.headers.getSetCookie()).toEqual(first.headers.getSetCookie());
    expect(first.headers.getSetCookie()[0]).toMatch(/^rowgate_session=rg_us_/);
  });

  test('the Rowgate-Consistency token a read of the write needs', async () => {
    const key = randomUUID();
    const first = await post('/v1/products/', user.session, product(`consistent ${key}`), key);
    expect(first.headers.get('rowgate-consistency')).toBeTruthy();
    const again = await post('/v1/products/', user.session, product(`consistent ${key}`), key);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('rowgate-consistency')).toBeTruthy();
  });
});

describe('a sealed answer belongs to its row (a review, 2026-11-26)', () => {
  test("another subject's sealed answer copied into a row does not open there: 422, not the other's token", async () => {
    const other = await app.user();
    const key = randomUUID();
    const body = { comment: 'bound', scopes: ['user:read'] };
    const mine = await send('POST', '/v1/personal-access-tokens/', user, body, key);
    const theirs = await send('POST', '/v1/personal-access-tokens/', other, body, key);
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    // someone with write access to the database moves my sealed answer into their row
    await app.sql(
      `update rowgate_private.idempotency_keys t set response_body = m.response_body
         from rowgate_private.idempotency_keys m where t.key = $1 and m.key = $1 and t.subject_id = $2 and m.subject_id = $3`,
      [key, other.id, user.id],
    );
    const again = await send('POST', '/v1/personal-access-tokens/', other, body, key);
    expect(again.status).toBe(422);
    expect(again.text).not.toContain(JSON.parse(mine.text).token);
  });

  test('the same request through a proxy (an absolute-form target) is the same request: the replay', async () => {
    const key = randomUUID();
    const name = `absolute ${key}`;
    const first = await send('POST', '/v1/products/', user, product(name), key);
    expect(first.status).toBe(201);
    const { request } = await import('node:http');
    const target = new URL(app.url);
    const again = await new Promise<{ status: number; replayed: unknown; text: string }>((resolve, reject) => {
      const req = request({ host: target.hostname, port: target.port, path: `${app.url}/v1/products/`, method: 'POST' }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, replayed: res.headers['idempotent-replayed'], text }));
      });
      req.setHeader('content-type', 'application/json');
      req.setHeader('cookie', `rowgate_session=${user.session}`);
      req.setHeader('rowgate-version', '2026-11-20');
      req.setHeader('idempotency-key', key);
      req.on('error', reject);
      req.end(JSON.stringify(product(name)));
    });
    expect(again).toEqual({ status: 201, replayed: 'true', text: first.text });
    // and without the collection's trailing slash: the same route, the same request
    expect(await send('POST', '/v1/products', user, product(name), key)).toEqual({ status: 201, replayed: 'true', text: first.text });
  });
});
