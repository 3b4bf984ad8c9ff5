// How many credentials and webhook endpoints one owner holds (migrations 000032,
// 000036, docs/decisions.md "At most so many per owner"): 100 personal access
// tokens per user, 100 organization access tokens per organization, 100
// OAuth2 clients per user, 16 webhook endpoints per organization. Past the
// number, SPEC §7's policy denial (403 NotPermitted, the reason); revoked and
// deleted rows make room, expired tokens do not (they count until revoked);
// other owners are not touched; requests racing for the last places get
// exactly those places; the operator's SQL path is bound by the same rule.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let user: TestUser;
let other: TestUser;
let org: string;
let otherOrg: string;

beforeAll(async () => {
  app = await startTestApp();
  [user, other] = [await app.user(), await app.user()];
  org = (await app.organization(user.id)).id;
  otherOrg = (await app.organization(other.id)).id;
});
afterAll(() => app?.close());

const web = (who: TestUser = user) => ({ session: who.session });
const denied = (sentence: string) => ({ error: 'NotPermitted', detail: sentence });

describe('personal access tokens: 100 per user until revoked', () => {
  const SENTENCE = 'At most 100 personal access tokens per user; revoke one to make room';
  const create = (who: TestUser = user) => app.post('/v1/personal-access-tokens/', { comment: 'ci', scopes: ['user:read'] }, web(who));

  test('revoked tokens leave room, expired ones count (made a minute apart, they would be unbounded); the 101st is refused, another user is not', async () => {
    const insert = (expired: boolean, revoked: boolean) =>
      app.sql(
        `insert into rowgate.personal_access_tokens (user_id, comment, scopes, expires_at, deleted_at)
         select $1, 'filler', '{user:read}', case when $2 then now() - interval '1 second' end, case when $3 then now() end
         from generate_series(1, $4)`,
        [user.id, expired, revoked, revoked ? 5 : expired ? 3 : 94],
      );
    await insert(false, false);
    await insert(true, false);
    await insert(false, true);
    for (let i = 0; i < 3; i++) expect((await create()).status).toBe(201);
    const refused = await create();
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 403, body: denied(SENTENCE) });
    expect((await create(other)).status).toBe(201);

    // the operator's path is bound by the same rule
    await expect(app.pat(user.id, ['user:read'])).rejects.toMatchObject({ code: 'RG403', message: SENTENCE });

    // revoking one makes room for exactly one
    const [live] = await app.sql<{ id: string }>(
      `select id from rowgate.personal_access_tokens where user_id = $1 and deleted_at is null and expires_at is null limit 1`,
      [user.id],
    );
    expect((await app.delete(`/v1/personal-access-tokens/${live!.id}`, web())).status).toBe(204);
    expect((await create()).status).toBe(201);
    expect((await create()).status).toBe(403);
  });
});

describe('organization access tokens: 100 per organization until revoked', () => {
  const SENTENCE = 'At most 100 organization access tokens per organization; revoke one to make room';
  const create = (organization_id: string, who: TestUser) =>
    app.post('/v1/organization-access-tokens/', { organization_id, comment: 'shop', scopes: ['products_read'] }, web(who));

  test('the 101st token of an organization is refused, expired ones counted; another organization is not touched', async () => {
    await app.sql(
      `insert into rowgate.organization_access_tokens (organization_id, comment, scopes, expires_at)
       select $1, 'filler', '{products_read}', case when g <= 3 then now() - interval '1 second' end from generate_series(1, 99) g`,
      [org],
    );
    expect((await create(org, user)).status).toBe(201);
    const refused = await create(org, user);
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 403, body: denied(SENTENCE) });
    expect((await create(otherOrg, other)).status).toBe(201);
  });
});

describe('OAuth2 clients: 100 per user', () => {
  const SENTENCE = 'At most 100 OAuth2 clients per user; delete one to make room';
  const register = () =>
    app.post(
      '/v1/oauth2/register',
      { client_name: 'Acme', redirect_uris: ['http://127.0.0.1:9999/cb'], token_endpoint_auth_method: 'none' },
      web(),
    );

  test("the 101st client is refused in SPEC §7's shape, not RFC 7591's (its metadata is fine); a deleted one leaves room", async () => {
    const clientId = () => `rg_ci_${randomBytes(18).toString('hex')}`;
    for (let i = 0; i < 99; i++) {
      await app.sql(
        `insert into rowgate.oauth2_clients (client_id, user_id, client_name, redirect_uris, scopes, token_endpoint_auth_method)
         values ($1, $2, 'filler', '{http://127.0.0.1:9999/cb}', '{user:read}', 'none')`,
        [clientId(), user.id],
      );
    }
    const last = await register();
    expect(last.status).toBe(201);
    const refused = await register();
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 403, body: denied(SENTENCE) });
    expect((await app.delete(`/v1/oauth2/clients/${last.body.id}`, web())).status).toBe(204);
    expect((await register()).status).toBe(201);
  });
});

describe('webhook endpoints: 16 per organization', () => {
  const SENTENCE = 'At most 16 webhook endpoints per organization; delete one to make room';
  const create = (organization_id: string, who: TestUser, i: number) =>
    app.post('/v1/webhook-endpoints/', { organization_id, url: `https://hooks.example.com/${i}`, event_types: ['order.paid'] }, web(who));

  test('ten requests racing for the last four places: four are created, six refused, and the organization holds 16', async () => {
    await app.sql(
      `insert into rowgate.webhook_endpoints (organization_id, url, event_types)
       select $1, 'https://hooks.example.com/filler/' || g, '{order.paid}' from generate_series(1, 12) g`,
      [org],
    );
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => create(org, user, i)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 201, 201, 403, 403, 403, 403, 403, 403]);
    expect(answers.find((a) => a.status === 403)!.body).toEqual(denied(SENTENCE));
    const [counted] = await app.sql<{ live: number }>(
      'select count(*)::int as live from rowgate.webhook_endpoints where organization_id = $1 and deleted_at is null',
      [org],
    );
    expect(counted?.live).toBe(16);
    expect((await create(otherOrg, other, 0)).status).toBe(201);

    const made = answers.find((a) => a.status === 201)!.body.id as string;
    expect((await app.delete(`/v1/webhook-endpoints/${made}`, web())).status).toBe(204);
    expect((await create(org, user, 99)).status).toBe(201);
    expect((await create(org, user, 100)).status).toBe(403);
  });
});
