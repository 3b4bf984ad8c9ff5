// An integration's own view (SPEC §25): personal access tokens kept to named
// organizations (through REST, GraphQL and the authorization check), a user's
// sessions and authorized apps, an organization's OAuth2 grants, webhook secret
// rotation and the request log. Over HTTP, against a real database.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { expectError, expectValidationError } from './expect-api.ts';
import { generateToken } from '../src/auth/tokens.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { WebhookWorker } from '../src/webhooks/worker.ts';
import { RequestLog } from '../src/operating/request-log.ts';
import { Metrics } from '../src/operating/metrics.ts';
import { uuidv7 } from '../src/core/uuidv7.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
const requestLog = new RequestLog({ flushMs: 20 });
beforeAll(async () => {
  app = await startTestApp({ operating: { requestLog } });
});
afterAll(async () => {
  await requestLog.stop();
  await app?.close();
});

/** A user with two organizations of its own (A and B, a product each) and a third it does not belong to */
async function userWithTwoOrganizations() {
  const user = await app.user();
  const a = await app.organization(user.id);
  const b = await app.organization(user.id);
  const stranger = await app.user();
  const c = await app.organization(stranger.id);
  const productA = await app.product(a.id);
  const productB = await app.product(b.id);
  return { user, a, b, c, productA, productB };
}

async function keptPat(session: string, organizationIds: string[] | null, extra: Record<string, unknown> = {}) {
  return app.post(
    '/v1/personal-access-tokens/',
    { comment: 'kept', scopes: ['products_read', 'organizations_write', 'user:write'], organization_ids: organizationIds, ...extra },
    { session },
  );
}

describe('personal access tokens kept to some organizations', () => {
  test('reach only their organizations through REST, GraphQL and the check', async () => {
    const { user, a, b, productA, productB } = await userWithTwoOrganizations();
    const created = await keptPat(user.session, [a.id]);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.organization_ids).toEqual([a.id]);
    const token = created.body.token as string;

    const list = await app.get('/v1/products/', { token });
    expect(list.status).toBe(200);
    expect(list.body.items.map((p: { id: string }) => p.id)).toEqual([productA]);
    expect((await app.get(`/v1/products/${productA}`, { token })).status).toBe(200);
    expectError(await app.get(`/v1/products/${productB}`, { token }), 404, 'ResourceNotFound');
    expectError(await app.get(`/v1/organizations/${b.id}`, { token }), 404, 'ResourceNotFound');
    const orgs = await app.get('/v1/organizations/', { token });
    expect(orgs.body.items.map((o: { id: string }) => o.id)).toEqual([a.id]);

    const graphql = await app.post('/graphql', { query: '{ allProducts { nodes { rowId } } }' }, { token });
    expect(graphql.body.data.allProducts.nodes.map((n: { rowId: string }) => n.rowId)).toEqual([productA]);

    const check = await app.post(
      '/v1/authorization/check',
      {
        checks: [
          { operation: 'products:get', params: { id: productA } },
          { operation: 'products:get', params: { id: productB } },
        ],
      },
      { token },
    );
    expect(check.status, JSON.stringify(check.body)).toBe(200);
    expect(check.body.results.map((r: { status: number }) => r.status)).toEqual([200, 404]);

    // the same user's unrestricted token reaches both
    const all = await keptPat(user.session, null);
    expect(all.body.organization_ids).toBeNull();
    expect((await app.get(`/v1/products/${productB}`, { token: all.body.token })).status).toBe(200);

    // listed with its organizations
    const listed = await app.get('/v1/personal-access-tokens/', { session: user.session });
    const row = listed.body.items.find((t: { id: string }) => t.id === created.body.id);
    expect(row.organization_ids).toEqual([a.id]);
  });

  test('each id must be an organization the user reaches: one 422 for unknown and unreachable', async () => {
    const { user, a, c } = await userWithTwoOrganizations();
    for (const wrong of [c.id, randomUUID()]) {
      const issues = expectValidationError(await keptPat(user.session, [a.id, wrong]));
      expect(issues.map((i) => i.loc)).toEqual([['body', 'organization_ids', 1]]);
    }
    const unknown = expectValidationError(await keptPat(user.session, [randomUUID()]));
    const stranger = expectValidationError(await keptPat(user.session, [c.id]));
    expect(stranger.map((i) => i.msg)).toEqual(unknown.map((i) => i.msg));
    expect(expectValidationError(await keptPat(user.session, [])).map((i) => i.loc)).toEqual([['body', 'organization_ids']]);
  });

  test('cannot create organizations or delete its user', async () => {
    const { user, a } = await userWithTwoOrganizations();
    const token = (await keptPat(user.session, [a.id])).body.token as string;
    const made = await app.post('/v1/organizations/', { name: 'x', slug: `x-${randomUUID().slice(0, 8)}` }, { token });
    expectError(made, 403, 'NotPermitted');
    expect(made.body.detail).toMatch(/kept to some organizations/);
    const deleted = await app.delete('/v1/users/me', { token });
    expectError(deleted, 403, 'NotPermitted');
    expect(deleted.body.detail).toMatch(/kept to some organizations/);
    expect((await app.get('/v1/users/me', { session: user.session })).status).toBe(200);
  });

  test('a scope refusal of such a token is recorded only in its organizations', async () => {
    const { user, a, b, productA, productB } = await userWithTwoOrganizations();
    const token = (await keptPat(user.session, [a.id])).body.token as string;
    // products_read only: an update is refused for its scope, then recorded where it resolves and is reached
    for (const product of [productA, productB]) {
      const refused = await app.patch(`/v1/products/${product}`, { name: 'x' }, { token });
      expect(refused.status).toBe(403);
    }
    const recorded = await app.sql<{ organization_id: string }>(
      `select organization_id from rowgate.denials where organization_id = any($1) and operation = 'products:update'`,
      [[a.id, b.id]],
    );
    expect(recorded.map((r) => r.organization_id)).toEqual([a.id]);
  });

  test('lives no longer than the shortest max_token_lifetime_days of its organizations', async () => {
    const { user, a, b } = await userWithTwoOrganizations();
    await app.sql('update rowgate.organizations set max_token_lifetime_days = 2 where id = $1', [b.id]);
    const issues = expectValidationError(await keptPat(user.session, [a.id, b.id]));
    expect(issues.map((i) => i.loc)).toEqual([['body', 'expires_in']]);
    const tooLong = expectValidationError(await keptPat(user.session, [a.id, b.id], { expires_in: 3 * 86400 }));
    expect(tooLong.map((i) => i.loc)).toEqual([['body', 'expires_in']]);
    expect((await keptPat(user.session, [a.id, b.id], { expires_in: 86400 })).status).toBe(201);
    expect((await keptPat(user.session, [a.id])).status).toBe(201);
  });
});

/** A registered OAuth2 client of a new user */
async function oauthClient(name = 'Acme Reports') {
  const owner = await app.user();
  const clientId = `rg_ci_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
  await app.sql(
    `insert into rowgate.oauth2_clients (client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method)
     values ($1, $2, $3, '{https://example.com/cb}', '{products_read,user:read}', 'none')`,
    [clientId, owner.id, name],
  );
  return clientId;
}

/** A grant as the token endpoint makes one: a code, its family, an access token and a refresh token */
async function grant(clientId: string, userId: string, scopes: string[], organizationId: string | null = null) {
  const access = generateToken(organizationId ? 'oauth2_organization_token' : 'oauth2_user_token');
  const [family] = await app.sql<{ id: string }>(
    `with code as (
       insert into rowgate_private.oauth2_authorization_codes (code_hash, client_id, user_id, organization_id, scopes, redirect_uri, expires_at, used_at)
       values (sha256(gen_random_uuid()::text::bytea), $1, $2, $3, $4, 'https://example.com/cb', now() + interval '1 minute', now()) returning id)
     insert into rowgate_private.oauth2_token_families (client_id, user_id, organization_id, scopes, authorization_code_id)
     select $1, $2, $3, $4, id from code returning id`,
    [clientId, userId, organizationId, scopes],
  );
  await app.sql('select rowgate_private.issue_oauth2_tokens($1, $2, $3, sha256(gen_random_uuid()::text::bytea))', [
    family!.id,
    scopes,
    app.hash(access),
  ]);
  return { familyId: family!.id, token: access };
}

describe('sessions', () => {
  test('listed with the latest address and agent; one ended is refused at its next request; others ended at once', async () => {
    const user = await app.user();
    const laptop = user.session;
    const phone = await app.session(user.id);
    const admin = await app.user({ admin: true });
    const impersonation = await app.session(user.id, { lifetime: '1 hour', impersonatorId: admin.id });
    expect((await app.get('/v1/users/me', { session: phone, headers: { 'user-agent': 'Phone/1.0' } })).status).toBe(200);

    // a read's use is recorded with its commit, which may land just after its answer
    let listed = await app.get('/v1/users/me/sessions', { session: laptop, headers: { 'user-agent': 'Laptop/2.0' } });
    for (let i = 0; i < 20 && !JSON.stringify(listed.body).includes('Phone/1.0'); i++) {
      await new Promise((r) => setTimeout(r, 100));
      listed = await app.get('/v1/users/me/sessions', { session: laptop, headers: { 'user-agent': 'Laptop/2.0' } });
    }
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.pagination).toEqual({ total_count: 3, max_page: 1 });
    const [mine] = await app.sql<{ id: string }>('select id from rowgate_private.sessions where token_hash = $1', [app.hash(laptop)]);
    const [phones] = await app.sql<{ id: string }>('select id from rowgate_private.sessions where token_hash = $1', [app.hash(phone)]);
    const byId = Object.fromEntries(listed.body.items.map((s: { id: string }) => [s.id, s]));
    expect(byId[mine!.id]).toMatchObject({ current: true, user_agent: 'Laptop/2.0', client_ip: '127.0.0.1', impersonated_by: null });
    expect(byId[phones!.id]).toMatchObject({ current: false, user_agent: 'Phone/1.0', client_ip: '127.0.0.1' });
    expect(byId[phones!.id].last_used_at).toMatch(/:00(\.0+)?\+00:00$/);
    const impersonated = listed.body.items.find((s: { impersonated_by: string | null }) => s.impersonated_by === admin.id);
    expect(impersonated).toBeDefined();

    // another user's session, and an unknown id: 404
    const stranger = await app.user();
    expectError(await app.delete(`/v1/users/me/sessions/${phones!.id}`, { session: stranger.session }), 404, 'ResourceNotFound');
    expectError(await app.delete(`/v1/users/me/sessions/${randomUUID()}`, { session: laptop }), 404, 'ResourceNotFound');
    // a token is not a web session
    const pat = await app.pat(user.id, ['user:write']);
    expect((await app.get('/v1/users/me/sessions', { token: pat })).status).toBe(401);

    expect((await app.delete(`/v1/users/me/sessions/${phones!.id}`, { session: laptop })).status).toBe(204);
    expect((await app.get('/v1/users/me', { session: phone })).status).toBe(401);
    expect((await app.get('/v1/users/me', { session: impersonation })).status).toBe(200);

    expect((await app.post('/v1/users/me/sessions/revoke-others', undefined, { session: laptop })).status).toBe(204);
    expect((await app.get('/v1/users/me', { session: impersonation })).status).toBe(401);
    expect((await app.get('/v1/users/me', { session: laptop })).status).toBe(200);

    // ending the current one signs out
    const ended = await app.delete(`/v1/users/me/sessions/${mine!.id}`, { session: laptop });
    expect(ended.status).toBe(204);
    expect(ended.headers.get('set-cookie')).toMatch(/rowgate_session=;/);
    expect((await app.get('/v1/users/me', { session: laptop })).status).toBe(401);
  });
});

describe('authorized apps and organization grants', () => {
  test("a user's apps, one row per client, subject kind and organization; revoking one ends every grant to it", async () => {
    const user = await app.user();
    const organization = await app.organization(user.id);
    const reports = await oauthClient('Acme Reports');
    const other = await oauthClient('Other');
    const first = await grant(reports, user.id, ['products_read']);
    await grant(reports, user.id, ['user:read']);
    const onOrganization = await grant(reports, user.id, ['products_read'], organization.id);
    const kept = await grant(other, user.id, ['products_read']);
    expect((await app.get('/v1/users/me', { token: first.token })).status).toBe(401); // a products_read token: no user scope
    expect((await app.get('/v1/products/', { token: first.token })).status).toBe(200);

    const listed = await app.get('/v1/users/me/authorized-apps?sorting=client_name', { session: user.session });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.items.map((a: Record<string, unknown>) => [a.client_name, a.sub_type, a.organization_id, a.scopes])).toEqual(
      expect.arrayContaining([
        ['Acme Reports', 'user', null, ['products_read', 'user:read']],
        ['Acme Reports', 'organization', organization.id, ['products_read']],
        ['Other', 'user', null, ['products_read']],
      ]),
    );
    expect(listed.body.pagination.total_count).toBe(3);
    const used = listed.body.items.find(
      (a: { sub_type: string; client_name: string }) => a.client_name === 'Acme Reports' && a.sub_type === 'user',
    );
    expect(used.last_used_at).not.toBeNull();

    expect((await app.delete(`/v1/users/me/authorized-apps/${reports}`, { session: user.session })).status).toBe(204);
    expect((await app.get('/v1/products/', { token: first.token })).status).toBe(401);
    expect((await app.get('/v1/products/', { token: onOrganization.token })).status).toBe(401);
    expect((await app.get('/v1/products/', { token: kept.token })).status).toBe(200);
    const [family] = await app.sql('select revoked_at from rowgate_private.oauth2_token_families where id = $1', [first.familyId]);
    expect(family.revoked_at).not.toBeNull();
    expectError(await app.delete(`/v1/users/me/authorized-apps/${reports}`, { session: user.session }), 404, 'ResourceNotFound');
    const after = await app.get('/v1/users/me/authorized-apps', { session: user.session });
    expect(after.body.items.map((a: { client_name: string }) => a.client_name)).toEqual(['Other']);
  });

  test("an organization's grants, whoever made them, for its token managers", async () => {
    const admin = await app.user();
    const organization = await app.organization(admin.id);
    const member = await app.user();
    await app.membership(organization.id, member.id, 'member');
    const client = await oauthClient();
    const made = await grant(client, admin.id, ['products_read'], organization.id);
    await grant(client, admin.id, ['products_read']); // a user grant: not the organization's

    const listed = await app.get(`/v1/organizations/${organization.id}/oauth2-grants`, { session: admin.session });
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.items).toEqual([
      expect.objectContaining({ id: made.familyId, organization_id: organization.id, client_id: client, user_id: admin.id }),
    ]);
    const refused = await app.get(`/v1/organizations/${organization.id}/oauth2-grants`, { session: member.session });
    expectError(refused, 403, 'NotPermitted');
    const outsider = await app.user();
    expectError(
      await app.get(`/v1/organizations/${organization.id}/oauth2-grants`, { session: outsider.session }),
      404,
      'ResourceNotFound',
    );
    expectError(
      await app.delete(`/v1/organizations/${organization.id}/oauth2-grants/${made.familyId}`, { session: member.session }),
      403,
      'NotPermitted',
    );
    expect((await app.get('/v1/products/', { token: made.token })).status).toBe(200);
    expect(
      (await app.delete(`/v1/organizations/${organization.id}/oauth2-grants/${made.familyId}`, { session: admin.session })).status,
    ).toBe(204);
    expect((await app.get('/v1/products/', { token: made.token })).status).toBe(401);
    expectError(
      await app.delete(`/v1/organizations/${organization.id}/oauth2-grants/${made.familyId}`, { session: admin.session }),
      404,
      'ResourceNotFound',
    );
  });
});

describe('webhook secret rotation', () => {
  const received: { path: string; headers: Record<string, string>; body: string }[] = [];
  let status = 200;
  let server: http.Server;
  let base = '';
  let worker: WebhookWorker;
  beforeAll(async () => {
    process.env.ROWGATE_WEBHOOKS_ALLOW_LOOPBACK = '1';
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers as Record<string, string>, body });
        res.writeHead(status).end('ok');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    worker = new WebhookWorker({
      connectionString: app.authenticatorUrl,
      secret: app.secret,
      allowLoopback: true,
      pollMs: 100,
      retryDelayMs: (attempt) => 10 * attempt,
      timeoutMs: 2_000,
      log: () => {},
      mailer: outboxMailer(() => {}),
    });
    await worker.start();
  });
  afterAll(async () => {
    await worker?.stop();
    server?.closeAllConnections();
    server?.close();
  });

  async function until<T>(what: string, get: () => T | Promise<T>, ok: (v: T) => boolean): Promise<T> {
    for (let i = 0; i < 300; i++) {
      const v = await get();
      if (ok(v)) return v;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  /** Makes a product in the organization and waits for its delivery at `path` */
  async function delivered(organizationId: string, path: string) {
    const before = received.filter((r) => r.path === path).length;
    await app.product(organizationId);
    const all = await until(
      `a delivery at ${path}`,
      () => received.filter((r) => r.path === path),
      (r) => r.length > before,
    );
    return all[all.length - 1]!;
  }

  const verifies = (secret: string, r: { headers: Record<string, string>; body: string }) => {
    try {
      new Webhook(secret).verify(r.body, r.headers);
      return true;
    } catch {
      return false;
    }
  };

  test('both signatures during the overlap, at most two live secrets, the new one shown once; an event tells', async () => {
    const admin = await app.user();
    const organization = await app.organization(admin.id);
    const web = { session: admin.session };
    const created = await app.post(
      '/v1/webhook-endpoints/',
      { organization_id: organization.id, url: `${base}/rotating`, event_types: ['product.created'] },
      web,
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.secret_rotated_at).toBeNull();
    const id = created.body.id as string;
    const first = created.body.secret as string;
    expect(verifies(first, await delivered(organization.id, '/rotating'))).toBe(true);

    const rotated = await app.post(`/v1/webhook-endpoints/${id}/secret/rotate`, {}, web);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(Object.keys(rotated.body)).toEqual(['secret']);
    const second = rotated.body.secret as string;
    expect(second).toMatch(/^whsec_/);
    const overlap = await delivered(organization.id, '/rotating');
    expect(overlap.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verifies(first, overlap) && verifies(second, overlap)).toBe(true);
    const read = await app.get(`/v1/webhook-endpoints/${id}`, web);
    expect(read.body.secret_rotated_at).not.toBeNull();
    const events = await app.get(`/v1/events/?type=webhook_endpoint.updated&resource_id=${id}`, web);
    expect(events.body.items[0]?.data.secret_rotated_at).toBe(read.body.secret_rotated_at);

    // rotating again ends the first at once: the second and third sign
    const third = (await app.post(`/v1/webhook-endpoints/${id}/secret/rotate`, { expire_previous_in: 3600 }, web)).body.secret as string;
    const again = await delivered(organization.id, '/rotating');
    expect(again.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect([verifies(first, again), verifies(second, again), verifies(third, again)]).toEqual([false, true, true]);

    // no overlap: the new one alone
    const fourth = (await app.post(`/v1/webhook-endpoints/${id}/secret/rotate`, { expire_previous_in: 0 }, web)).body.secret as string;
    const alone = await delivered(organization.id, '/rotating');
    expect(alone.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect([verifies(third, alone), verifies(fourth, alone)]).toEqual([false, true]);

    for (const bad of [-1, 604_801, 1.5, 'x']) {
      const issues = expectValidationError(await app.post(`/v1/webhook-endpoints/${id}/secret/rotate`, { expire_previous_in: bad }, web));
      expect(issues.map((i) => i.loc)).toEqual([['body', 'expire_previous_in']]);
    }
    const member = await app.user();
    await app.membership(organization.id, member.id, 'member');
    expectError(await app.post(`/v1/webhook-endpoints/${id}/secret/rotate`, {}, { session: member.session }), 403, 'NotPermitted');
    const outsider = await app.user();
    expectError(await app.post(`/v1/webhook-endpoints/${id}/secret/rotate`, {}, { session: outsider.session }), 404, 'ResourceNotFound');
  });

  test("an endpoint its failures disable mails its organization's managers, once", async () => {
    const admin = await app.user();
    const organization = await app.organization(admin.id);
    const otherAdmin = await app.user();
    await app.membership(organization.id, otherAdmin.id, 'admin');
    const member = await app.user();
    await app.membership(organization.id, member.id, 'member');
    const created = await app.post(
      '/v1/webhook-endpoints/',
      { organization_id: organization.id, url: `${base}/down`, event_types: ['product.created'] },
      { session: admin.session },
    );
    // nine earlier events failed already
    await app.sql('update rowgate.webhook_endpoints set consecutive_failures = 9 where id = $1', [created.body.id]);
    status = 503;
    try {
      await app.product(organization.id);
      await until(
        'the endpoint to be disabled',
        async () => (await app.sql('select enabled from rowgate.webhook_endpoints where id = $1', [created.body.id]))[0].enabled,
        (enabled) => enabled === false,
      );
      await until(
        'the mail',
        () => app.outbox(admin.email),
        (mails) => mails.length > 0,
      );
    } finally {
      status = 200;
    }
    for (const manager of [admin, otherAdmin]) {
      const mails = await app.outbox(manager.email);
      expect(mails).toHaveLength(1);
      expect(mails[0]!.subject).toMatch(/disabled/);
      expect(mails[0]!.text).toContain(created.body.id);
    }
    expect(await app.outbox(member.email)).toHaveLength(0);
    // disabled by hand: no mail
    await app.patch(`/v1/webhook-endpoints/${created.body.id}`, { enabled: true }, { session: admin.session });
    await app.patch(`/v1/webhook-endpoints/${created.body.id}`, { enabled: false }, { session: admin.session });
    expect(await app.outbox(admin.email)).toHaveLength(1);
  });
});

describe('request log', () => {
  /** The organization's rows for a request id, once written */
  async function logged(organizationId: string, session: string, requestId: string) {
    for (let i = 0; i < 100; i++) {
      await requestLog.flush();
      const res = await app.get(`/v1/organizations/${organizationId}/requests?request_id=${requestId}`, { session });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      if (res.body.items.length) return res.body.items as Record<string, any>[];
      await new Promise((r) => setTimeout(r, 50));
    }
    return [];
  }

  test("a request's row: no query string nor body, its events and its denial linked by the row's id", async () => {
    const admin = await app.user();
    const organization = await app.organization(admin.id);
    const requestId = `req-${randomUUID()}`;
    const created = await app.request('POST', '/v1/products/?secret=shh', {
      session: admin.session,
      body: { organization_id: organization.id, name: 'Logged', price_amount: 100, price_currency: 'usd' },
      headers: { 'x-request-id': requestId, 'user-agent': 'acme-sdk/1.4' },
    });
    expect(created.status).toBe(201);
    const [row] = await logged(organization.id, admin.session, requestId);
    expect(row).toMatchObject({
      request_id: requestId,
      method: 'POST',
      route: '/v1/products/',
      path: '/v1/products/',
      status: 201,
      error: null,
      credential_kind: 'web_session',
      user_id: admin.id,
      client_ip: '127.0.0.1',
      user_agent: 'acme-sdk/1.4',
      idempotent_replayed: false,
    });
    expect(JSON.stringify(row)).not.toContain('shh');
    expect(JSON.stringify(row)).not.toContain('Logged');
    const detail = await app.get(`/v1/organizations/${organization.id}/requests/${row!.id}`, { session: admin.session });
    expect(detail.status, JSON.stringify(detail.body)).toBe(200);
    const [event] = await app.sql<{ id: string }>(
      "select id from rowgate.events where organization_id = $1 and type = 'product.created' and resource_id = $2",
      [organization.id, created.body.id],
    );
    expect(detail.body.event_ids).toEqual([event!.id]);
    expect(detail.body.denial).toBeNull();

    // a refused request: its denial, by the row's id
    const member = await app.user();
    await app.membership(organization.id, member.id, 'finance');
    const refusedId = `req-${randomUUID()}`;
    const refused = await app.request('PATCH', `/v1/products/${created.body.id}`, {
      session: member.session,
      body: { name: 'No' },
      headers: { 'x-request-id': refusedId },
    });
    expect(refused.status).toBe(403);
    const [denied] = await logged(organization.id, admin.session, refusedId);
    expect(denied).toMatchObject({ status: 403, error: 'NotPermitted', user_id: member.id });
    const deniedDetail = await app.get(`/v1/organizations/${organization.id}/requests/${denied!.id}`, { session: admin.session });
    expect(deniedDetail.body.denial).toMatchObject({ error: 'NotPermitted', operation: 'products:update' });
    expect(deniedDetail.body.event_ids).toEqual([]);

    // filters
    const fours = await app.get(`/v1/organizations/${organization.id}/requests?status=4xx`, { session: admin.session });
    expect(fours.body.items.every((r: { status: number }) => r.status >= 400 && r.status < 500)).toBe(true);
    expect(fours.body.items.map((r: { id: string }) => r.id)).toContain(denied!.id);
    const posts = await app.get(`/v1/organizations/${organization.id}/requests?method=POST&status=201`, { session: admin.session });
    expect(posts.body.items.map((r: { id: string }) => r.id)).toEqual([row!.id]);
    expectValidationError(await app.get(`/v1/organizations/${organization.id}/requests?status=6xx`, { session: admin.session }));

    // who reads it: managers only; organization tokens never
    expectError(await app.get(`/v1/organizations/${organization.id}/requests`, { session: member.session }), 403, 'NotPermitted');
    const oat = await app.oat(organization.id, ['organizations_read']);
    expect((await app.get(`/v1/organizations/${organization.id}/requests`, { token: oat })).status).toBe(401);
  });

  test("a stranger's probe leaves no row; an organization token's requests land in its organization", async () => {
    const admin = await app.user();
    const organization = await app.organization(admin.id);
    const product = await app.product(organization.id);
    const stranger = await app.user();
    const probes = [`/v1/products/${product}`, `/v1/organizations/${organization.id}`, `/v1/products/?organization_id=${organization.id}`];
    const ids: string[] = [];
    for (const path of probes) {
      const requestId = `probe-${randomUUID()}`;
      ids.push(requestId);
      await app.get(path, { session: stranger.session, headers: { 'x-request-id': requestId } });
    }
    const oatId = `oat-${randomUUID()}`;
    const oat = await app.oat(organization.id, ['products_read']);
    expect((await app.get('/v1/products/', { token: oat, headers: { 'x-request-id': oatId } })).status).toBe(200);
    expect(await logged(organization.id, admin.session, oatId)).toHaveLength(1);
    // written by now (the token's request came after them): none is there
    for (const id of ids) {
      const res = await app.get(`/v1/organizations/${organization.id}/requests?request_id=${id}`, { session: admin.session });
      expect(res.body.items).toEqual([]);
    }
    expect(await app.sql('select 1 from rowgate.request_log where user_id = $1', [stranger.id])).toEqual([]);
  });

  test("a deleted user's addresses are erased with it", async () => {
    const admin = await app.user();
    const organization = await app.organization(admin.id);
    const leaver = await app.user();
    await app.membership(organization.id, leaver.id, 'member');
    const requestId = `leaver-${randomUUID()}`;
    await app.get(`/v1/organizations/${organization.id}`, {
      session: leaver.session,
      headers: { 'x-request-id': requestId, 'user-agent': 'x/1' },
    });
    const [row] = await logged(organization.id, admin.session, requestId);
    expect(row).toMatchObject({ client_ip: '127.0.0.1', user_agent: 'x/1' });
    expect((await app.delete('/v1/users/me', { session: leaver.session })).status).toBe(204);
    const [after] = await logged(organization.id, admin.session, requestId);
    expect(after).toMatchObject({ client_ip: null, user_agent: null, user_id: leaver.id });
  });

  test('kept in day partitions made a week ahead; days past 30 are dropped', async () => {
    await app.sql('select rowgate_private.add_request_log_partitions()');
    const days = await app.sql<{ name: string }>(
      `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
       where i.inhparent = 'rowgate.request_log'::regclass and c.relname <> 'request_log_default' order by 1`,
    );
    expect(days.length).toBeGreaterThanOrEqual(7);
    const admin = await app.user();
    const organization = await app.organization(admin.id);
    const old = uuidv7(Date.now() - 40 * 86_400_000);
    const recent = uuidv7(Date.now() - 20 * 86_400_000);
    for (const [id, daysAgo] of [
      [old, 40],
      [recent, 20],
    ] as const) {
      await app.sql(
        `insert into rowgate.request_log (id, organization_id, request_id, method, route, path, status, duration_ms, created_at)
         values ($1, $2, 'r', 'GET', '/v1/products/', '/v1/products/', 200, 1, now() - make_interval(days => $3))`,
        [id, organization.id, daysAgo],
      );
    }
    await app.sql('select rowgate_private.prune_request_log()');
    const left = await app.sql<{ id: string }>('select id from rowgate.request_log where organization_id = $1', [organization.id]);
    expect(left.map((r) => r.id)).toEqual([recent]);
  });

  test('a flush writes what was queued when it began; rows that come meanwhile wait for the next, unless a batch waits', async () => {
    const writer = new RequestLog({ flushMs: 3_600_000, batch: 3 }).use(app.pool);
    const row = () => ({ ...loggedRow(), id: uuidv7() });
    writer.push(row());
    writer.push(row());
    const first = writer.flush();
    writer.push(row());
    writer.push(row());
    await first;
    expect(writer.written).toBe(2);
    await writer.flush();
    expect(writer.written).toBe(4);
    // a whole batch waiting while it writes: written at once, then what is left waits
    writer.push(row());
    const second = writer.flush();
    for (let i = 0; i < 4; i++) writer.push(row());
    await second;
    expect(writer.written).toBe(4 + 1 + 3);
    await writer.stop();
    expect(writer.written).toBe(9);
    expect(writer.dropped).toBe(0);
  });

  test('when writing falls behind, rows are dropped and counted; nothing waits', async () => {
    const metrics = new Metrics({ processMetrics: false });
    const bounded = new RequestLog({ maxQueued: 2, metrics });
    const row = loggedRow();
    for (let i = 0; i < 5; i++) bounded.push(row);
    expect(bounded.dropped).toBe(3);
    expect((await metrics.requestLogDropped.get()).values[0]?.value).toBe(3);
  });
});

/** A request log row of an organization nobody reaches: the database keeps none of it. */
function loggedRow() {
  return {
    id: randomUUID(),
    organization_id: randomUUID(),
    subject_kind: 'user',
    subject_id: randomUUID(),
    request_id: 'r',
    method: 'GET',
    route: '/v1/products/',
    path: '/v1/products/',
    status: 200,
    error: null,
    duration_ms: 1,
    credential_kind: 'web_session',
    credential_id: null,
    client_ip: null,
    user_agent: null,
    api_version: null,
    idempotent_replayed: false,
    created_at: new Date().toISOString(),
  };
}
