// SPEC §20 for analysts: `rowgate.check(operation, params, organization_id)` answers for the
// analyst's own user as a web session (the same answer POST /v1/authorization/check gives
// that user's web session), and analysts of users with `organization:manage` read the
// organization's recorded denials, and only theirs.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { withDatabase } from './database-server.ts';
import { runCli } from './cli-runner.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
const superuserUrl = () => inject('superuserUrl');
const made = new Set<string>();

// ann: admin of A, finance in B; bob: admin of B and of C (ann not a member)
let ann: TestUser;
let bob: TestUser;
const org: Record<'A' | 'B' | 'C', string> = {} as never;
let productA: string;
let productB: string;
let productC: string;
let analyst: pg.Client;

async function grant(userId: string): Promise<string> {
  const login = `${inject('runId')}_ax_${randomBytes(3).toString('hex')}`;
  made.add(login);
  const run = await runCli(app, ['analysts', 'grant', '--user-id', userId, '--login', login]);
  expect(run, `analysts grant --login ${login}`).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout).database_url;
}

beforeAll(async () => {
  app = await startTestApp();
  ann = await app.user();
  bob = await app.user();
  org.A = (await app.organization(ann.id)).id;
  org.B = (await app.organization(bob.id)).id;
  org.C = (await app.organization(bob.id)).id;
  await app.membership(org.B, ann.id, 'finance');
  productA = await app.product(org.A);
  productB = await app.product(org.B);
  productC = await app.product(org.C);
  analyst = new pg.Client({ connectionString: await grant(ann.id) });
  analyst.on('error', () => {});
  await analyst.connect();
});

afterAll(async () => {
  await analyst?.end().catch(() => {});
  if (app) {
    for (const login of made) {
      const client = new pg.Client({ connectionString: withDatabase(superuserUrl(), app.database) });
      await client.connect();
      await client.query(`drop role if exists ${pg.escapeIdentifier(login)}`).catch(() => {});
      await client.end();
    }
    await app.close();
  }
});

const check = async (operation: string, params: Record<string, string> = {}, organizationId: string | null = null) =>
  (await analyst.query('select rowgate.check($1, $2::jsonb, $3::uuid) as answer', [operation, JSON.stringify(params), organizationId]))
    .rows[0].answer;

describe('rowgate.check for analysts', () => {
  test("answers as the analyst's user with a web session would be answered by POST /v1/authorization/check", async () => {
    const items = [
      { operation: 'products:update', params: { id: productA } },
      { operation: 'products:update', params: { id: productB } },
      { operation: 'products:update', params: { id: productC } },
      { operation: 'products:update', params: { id: randomUUID() } },
      { operation: 'products:create', organization_id: org.A },
      { operation: 'products:create', organization_id: org.B },
      { operation: 'products:create', organization_id: org.C },
      { operation: 'organizations:update', params: { id: org.B } },
      { operation: 'members:list', params: { id: org.A } },
      { operation: 'products:list' },
    ];
    const api = await app.post('/v1/authorization/check', { checks: items }, { session: ann.session });
    expect(api.status).toBe(200);
    for (const [i, item] of items.entries()) {
      expect(await check(item.operation, item.params ?? {}, item.organization_id ?? null), `${item.operation} ${i}`).toEqual(
        api.body.results[i],
      );
    }
  });

  test('allowed, refused with the reason, out of reach without one', async () => {
    expect(await check('products:update', { id: productA })).toMatchObject({
      allowed: true,
      status: 200,
      step: null,
      basis: { credential_kind: 'web_session', role: 'admin', permission: 'products:write' },
    });
    const refused = await check('products:update', { id: productB });
    expect(refused).toMatchObject({ allowed: false, status: 403, error: 'NotPermitted', step: 'policy', basis: { role: 'finance' } });
    expect(refused.reason).toMatch(/permission/);
    expect(await check('products:update', { id: productC })).toMatchObject({
      allowed: false,
      status: 404,
      error: 'ResourceNotFound',
      step: 'resource',
      reason: null,
      basis: { role: null },
    });
    expect(await check('products:create', {}, org.C)).toMatchObject({ status: 404, step: 'resource', reason: null });
  });

  test('the answer names no organization; an unknown operation is an error', async () => {
    expect(await check('products:update', { id: productA })).not.toHaveProperty('organization_id');
    await expect(check('products:fly')).rejects.toMatchObject({ code: 'RG422' });
  });

  test('an analyst cannot ask about another user, nor record denials', async () => {
    await expect(
      analyst.query(`select rowgate_hidden.check_operations('[{"operation":"products:list"}]', $1)`, [bob.id]),
    ).rejects.toMatchObject({ code: '42501' });
    await expect(
      analyst.query(
        `select rowgate_private.record_denial('user', $1, 'web_session', null, '', 'r', 'products:list', '{}', $2, null, 'policy', 'NotPermitted', 'x')`,
        [ann.id, org.A],
      ),
    ).rejects.toMatchObject({ code: '42501' });
  });
});

describe('denials for analysts', () => {
  test("the analyst of an organization manager reads that organization's denials, and only those", async () => {
    // bob's finance colleague in B is refused, and ann is refused in B (finance): B's log is bob's to read
    expect((await app.patch(`/v1/products/${productB}`, { name: 'x' }, { session: ann.session })).status).toBe(403);
    // in A, ann (admin) reads; make a refusal there: a finance member of A
    const fay = await app.user();
    await app.membership(org.A, fay.id, 'finance');
    expect((await app.patch(`/v1/products/${productA}`, { name: 'x' }, { session: fay.session })).status).toBe(403);
    const { rows } = await analyst.query('select organization_id, user_id, operation, step, error from rowgate.denials');
    expect(rows).toEqual([
      { organization_id: org.A, user_id: fay.id, operation: 'products:update', step: 'policy', error: 'NotPermitted' },
    ]);
    // as the API answers ann
    const api = await app.get(`/v1/organizations/${org.A}/denials`, { session: ann.session });
    expect(api.body.items.map((d: { user_id: string }) => d.user_id)).toEqual([fay.id]);
    expect((await app.get(`/v1/organizations/${org.B}/denials`, { session: ann.session })).status).toBe(403);
    expect((await app.get(`/v1/organizations/${org.B}/denials`, { session: bob.session })).body.items).toHaveLength(2);
  });

  test('analysts write nothing to denials', async () => {
    await expect(
      analyst.query(`insert into rowgate.denials (organization_id, credential_kind) values ($1, 'web_session')`, [org.A]),
    ).rejects.toMatchObject({ code: expect.stringMatching(/^(42501|25006)$/) });
  });
});
