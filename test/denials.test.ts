// SPEC §20: recorded denials. Every 403 answer on an organization's data is kept as a row
// although the request's transaction rolls back; only in organizations the caller reaches;
// capped at 1,000 rows per credential, organization and hour (then one row counts the rest);
// read by users with `organization:manage` (scope `organizations_read`); pruned with events.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { pruneEvents } from '../src/upkeep/event-retention.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
let member: TestUser;
let outsider: TestUser;
let org: string;
let other: string;
let product: string;
let otherProduct: string;

beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  member = await app.user();
  outsider = await app.user();
  org = (await app.organization(admin.id)).id;
  other = (await app.organization(outsider.id)).id;
  await app.membership(org, member.id, 'finance');
  product = await app.product(org, { name: 'Kept' });
  otherProduct = await app.product(other);
});
afterAll(() => app?.close());

const denials = (organizationId: string, query = '', session = admin.session) =>
  app.get(`/v1/organizations/${organizationId}/denials${query}`, { session });

describe('recording', () => {
  test("a policy's 403 is kept with its request, credential, user, step, error and reason; the write rolled back", async () => {
    const refused = await app.patch(`/v1/products/${product}`, { name: 'Renamed' }, { session: member.session });
    expect(refused.status).toBe(403);
    const requestId = refused.headers.get('x-request-id');
    const [name] = await app.sql('select name from rowgate.products where id = $1', [product]);
    expect(name).toEqual({ name: 'Kept' });
    const [session] = await app.sql<{ id: string }>(
      `select id from rowgate_private.sessions where user_id = $1 and kind = 'user' order by created_at desc limit 1`,
      [member.id],
    );
    const list = await denials(org, `?operation=products:update&user_id=${member.id}`);
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]).toMatchObject({
      organization_id: org,
      request_id: requestId,
      operation: 'products:update',
      credential_kind: 'web_session',
      credential_id: session?.id ?? expect.any(String),
      user_id: member.id,
      step: 'policy',
      error: 'NotPermitted',
      reason: refused.body.detail,
      count: 1,
    });
  });

  test("a 403 raised by the operation's own SQL is kept, in the organization it named", async () => {
    const before = (await denials(org, '?operation=products:create')).body.pagination.total_count;
    const refused = await app.post(
      '/v1/products/',
      { organization_id: org, name: 'New', price_amount: 100, price_currency: 'usd' },
      { session: member.session },
    );
    expect(refused.status).toBe(403);
    const after = await denials(org, '?operation=products:create');
    expect(after.body.pagination.total_count).toBe(before + 1);
    expect(after.body.items[0]).toMatchObject({ step: 'policy', error: 'NotPermitted', reason: refused.body.detail });
  });

  test('a 404 (another organization, a missing row) leaves no row anywhere', async () => {
    const [{ n: before }] = await app.sql('select count(*)::int as n from rowgate.denials');
    expect((await app.patch(`/v1/products/${otherProduct}`, { name: 'x' }, { session: member.session })).status).toBe(404);
    expect((await app.patch(`/v1/products/${randomUUID()}`, { name: 'x' }, { session: member.session })).status).toBe(404);
    const [{ n: after }] = await app.sql('select count(*)::int as n from rowgate.denials');
    expect(after).toBe(before);
  });

  test('a scope refusal is kept in the organization its resource or organization_id resolves to, when the caller reaches it', async () => {
    const readOnly = await app.pat(member.id, ['products_read']);
    const [pat] = await app.sql<{ id: string }>(
      `select id from rowgate.personal_access_tokens where user_id = $1 order by created_at desc limit 1`,
      [member.id],
    );
    const refused = await app.patch(`/v1/products/${product}`, { name: 'x' }, { token: readOnly });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('InsufficientScope');
    const mine = await app.sql('select * from rowgate.denials where credential_id = $1 order by created_at, id', [pat!.id]);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      organization_id: org,
      request_id: refused.headers.get('x-request-id'),
      operation: 'products:update',
      credential_kind: 'personal_access_token',
      user_id: member.id,
      step: 'scope',
      error: 'InsufficientScope',
      count: 1,
    });
    // a create names its organization; an organization token's refusal is its organization's
    const create = { organization_id: org, name: 'New', price_amount: 100, price_currency: 'usd' };
    expect((await app.post('/v1/products/', create, { token: readOnly })).status).toBe(403);
    const oat = await app.oat(org, ['products_read']);
    expect((await app.patch(`/v1/products/${product}`, { name: 'x' }, { token: oat })).status).toBe(403);
    const rows = await app.sql<{ operation: string; credential_kind: string; user_id: string | null }>(
      `select operation, credential_kind, user_id from rowgate.denials
       where organization_id = $1 and step = 'scope' and credential_id <> $2 or credential_id = $2 and operation = 'products:create'`,
      [org, pat!.id],
    );
    expect(rows.map((r) => [r.operation, r.credential_kind, r.user_id]).sort()).toEqual([
      ['products:create', 'personal_access_token', member.id],
      ['products:update', 'organization_access_token', null],
    ]);
    // the manager sees it
    const list = await denials(org, `?operation=products:update&user_id=${member.id}`);
    expect(list.body.items.some((d: { step: string }) => d.step === 'scope')).toBe(true);
  });

  test("a scope refusal out of the caller's reach, missing or naming no organization leaves no row", async () => {
    const [{ n: before }] = await app.sql('select count(*)::int as n from rowgate.denials');
    const readOnly = await app.pat(member.id, ['products_read']);
    const customersOnly = await app.pat(member.id, ['customers_read']);
    expect((await app.patch(`/v1/products/${otherProduct}`, { name: 'x' }, { token: readOnly })).status).toBe(403);
    expect((await app.patch(`/v1/products/${randomUUID()}`, { name: 'x' }, { token: readOnly })).status).toBe(403);
    const elsewhere = { organization_id: other, name: 'New', price_amount: 100, price_currency: 'usd' };
    expect((await app.post('/v1/products/', elsewhere, { token: readOnly })).status).toBe(403);
    expect((await app.get('/v1/products/', { token: customersOnly })).status).toBe(403);
    const [{ n: after }] = await app.sql('select count(*)::int as n from rowgate.denials');
    expect(after).toBe(before);
  });

  test("an outsider's refusal in another organization (a 404) leaves no row there", async () => {
    // the outsider's 403 in org (not reached) is a 404: nothing in org's log
    expect((await app.patch(`/v1/products/${product}`, { name: 'x' }, { session: outsider.session })).status).toBe(404);
    const rows = await app.sql('select organization_id from rowgate.denials where user_id = $1', [outsider.id]);
    expect(rows).toEqual([]);
  });
});

describe('reading', () => {
  test('members without organization:manage get 403 (itself recorded), outsiders 404, organization tokens 401', async () => {
    expect((await denials(org, '', member.session)).status).toBe(403);
    expect((await denials(org, '', outsider.session)).status).toBe(404);
    const oat = await app.oat(org, ['organizations_read']);
    expect((await app.get(`/v1/organizations/${org}/denials`, { token: oat })).status).toBe(401);
    const list = await denials(org, '?operation=denials:list');
    expect(list.body.items[0]).toMatchObject({ operation: 'denials:list', user_id: member.id, step: 'policy' });
  });

  test('a PAT needs organizations_read', async () => {
    const without = await app.pat(admin.id, ['products_read']);
    expect((await app.get(`/v1/organizations/${org}/denials`, { token: without })).status).toBe(403);
    const withScope = await app.pat(admin.id, ['organizations_read']);
    expect((await app.get(`/v1/organizations/${org}/denials`, { token: withScope })).status).toBe(200);
  });

  test('filters: user_id, operation, created_after, created_before; sorting; list envelope', async () => {
    const all = await denials(org, '?limit=100');
    expect(all.body.pagination.total_count).toBeGreaterThanOrEqual(3);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await denials(org, `?created_after=${future}`)).body.items).toEqual([]);
    expect((await denials(org, `?created_before=${future}`)).body.pagination.total_count).toBe(all.body.pagination.total_count);
    // the admin's only refusal: its PAT without organizations_read (a scope refusal)
    expect(
      (await denials(org, `?user_id=${admin.id}`)).body.items.map((d: { operation: string; step: string }) => [d.operation, d.step]),
    ).toEqual([['denials:list', 'scope']]);
    const ascending = await denials(org, '?sorting=created_at&limit=100');
    expect(ascending.body.items.map((d: { id: string }) => d.id)).toEqual([...all.body.items].reverse().map((d: { id: string }) => d.id));
    expect((await denials(org, '?sorting=reason')).status).toBe(422);
    expect((await denials(org, '?user_id=nope')).status).toBe(422);
  });
});

describe('the cap and the recording function', () => {
  const call = (n: number, credentialId: string) =>
    app.pool.query<{ kept: number }>(
      `select count(*) filter (where rowgate_private.record_denial('user', $1, 'personal_access_token', $2, 'products_write', 'req',
         'products:update', jsonb_build_object('id', $3::text), null, null, 'policy', 'NotPermitted', 'No'))::int as kept
       from generate_series(1, $4)`,
      [member.id, credentialId, product, n],
    );

  test('1,000 rows per credential, organization and hour; then one row counts the rest', async () => {
    const credential = randomUUID();
    expect((await call(1003, credential)).rows[0]!.kept).toBe(1003);
    const rows = await app.sql<{ operation: string | null; count: number }>(
      'select operation, count from rowgate.denials where credential_id = $1',
      [credential],
    );
    expect(rows.filter((r) => r.operation === 'products:update')).toHaveLength(1000);
    expect(rows.filter((r) => r.operation === null)).toEqual([{ operation: null, count: 3 }]);
    // another credential has its own cap
    const another = randomUUID();
    await call(2, another);
    expect(await app.sql('select count(*)::int as n from rowgate.denials where credential_id = $1', [another])).toEqual([{ n: 2 }]);
  });

  test('a subject that does not reach the organization leaves no row', async () => {
    const credential = randomUUID();
    const { rows } = await app.pool.query(
      `select rowgate_private.record_denial('user', $1, 'web_session', $2, '', 'req', 'products:update',
         jsonb_build_object('id', $3::text), null, null, 'policy', 'NotPermitted', 'No') as kept`,
      [outsider.id, credential, product],
    );
    expect(rows[0].kept).toBe(false);
    // nor when the caller claims the organization
    const claimed = await app.pool.query(
      `select rowgate_private.record_denial('user', $1, 'web_session', $2, '', 'req', 'products:update',
         '{}', $3, null, 'policy', 'NotPermitted', 'No') as kept`,
      [outsider.id, credential, org],
    );
    expect(claimed.rows[0].kept).toBe(false);
  });

  test('only the authenticator may call it; the subject settings do not outlive the call', async () => {
    const granted = await app.sql<{ role: string }>(
      `select r.rolname as role from pg_roles r
       where has_function_privilege(r.oid, 'rowgate_private.record_denial(text, uuid, text, uuid, text, text, text, jsonb, uuid, uuid, text, text, text)', 'execute')
         and r.rolname like 'rowgate_%' and not r.rolsuper and r.rolname <> (select proowner::regrole::text from pg_proc where proname = 'record_denial')`,
    );
    expect(granted.map((r) => r.role)).toEqual(['rowgate_authenticator']);
    const client = await app.pool.connect();
    try {
      await client.query('begin');
      await client.query(
        `select rowgate_private.record_denial('user', $1, 'web_session', null, '', 'req', 'products:update', '{}', null, null, 'policy', 'NotPermitted', 'No')`,
        [member.id],
      );
      const { rows } = await client.query(`select coalesce(current_setting('rowgate.subject_id', true), '') as subject`);
      expect(rows[0].subject).toBe('');
      await client.query('rollback');
    } finally {
      client.release();
    }
  });
});

describe('pruning', () => {
  test('denials older than the retention go with the events', async () => {
    const credential = randomUUID();
    await app.pool.query(
      `select rowgate_private.record_denial('user', $1, 'web_session', $2, '', 'old', 'products:update', jsonb_build_object('id', $3::text),
         null, null, 'policy', 'NotPermitted', 'Old')`,
      [member.id, credential, product],
    );
    await app.sql(`update rowgate.denials set created_at = now() - interval '40 days' where credential_id = $1`, [credential]);
    const kept = await app.sql('select count(*)::int as n from rowgate.denials where credential_id <> $1', [credential]);
    await pruneEvents(app.pool, 30);
    expect(await app.sql('select count(*)::int as n from rowgate.denials where credential_id = $1', [credential])).toEqual([{ n: 0 }]);
    expect(await app.sql('select count(*)::int as n from rowgate.denials where credential_id <> $1', [credential])).toEqual(kept);
  });
});
