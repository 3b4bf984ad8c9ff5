// Credentials that hold up when they leak (SPEC §22): tokens bound to client
// networks (refused elsewhere through REST and GraphQL alike), an organization's
// cap on token lifetimes, checksummed tokens (checked here by zlib's CRC-32, not
// the server's), and revocation on report, seen by every instance on its next
// request. Over HTTP, against a real database.
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { credentialKinds, generateToken, randomCharacters, tokenChecksum, tokenPrefixes } from '../src/auth/tokens.ts';
import { Consistency } from '../src/db/consistency.ts';
import { createPool } from '../src/db/pool.ts';
import { createGraphql } from '../src/graphql/server.ts';
import { createApp } from '../src/server/app.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { trustedProxies } from '../src/core/client-address.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { expectError, expectUnauthorized, expectValidationError } from './expect-api.ts';
import { startTestApp, type ApiResponse, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  // requests come from client addresses of the test's choosing: X-Forwarded-For from the trusted loopback
  app = await startTestApp({ operating: { trustedProxies: trustedProxies('127.0.0.1') } });
});
afterAll(async () => app?.close());

const from = (address: string) => ({ 'x-forwarded-for': address });

/** An organization whose admin is a new user (who may manage its tokens) */
async function adminOfOrganization() {
  const user = await app.user();
  const organization = await app.organization(user.id);
  return { user, organization };
}

/** The checksum as the test computes it: zlib's CRC-32 of the random part, in base62, padded to 6 */
function independentChecksum(random: string): string {
  const digits = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let value = BigInt(crc32(random));
  let text = '';
  while (value > 0n) {
    text = digits[Number(value % 62n)] + text;
    value /= 62n;
  }
  return text.padStart(6, '0');
}

/** A token in SPEC §22's format: its prefix, at least 32 random base62 characters, and their checksum */
function expectChecksummed(token: string, prefix: string) {
  expect(token.startsWith(prefix), token).toBe(true);
  const rest = token.slice(prefix.length);
  expect(rest).toMatch(/^[0-9A-Za-z]{38,}$/);
  const random = rest.slice(0, -6);
  expect(random.length).toBeGreaterThanOrEqual(32);
  expect(rest.slice(-6), token).toBe(independentChecksum(random));
}

describe('checksummed tokens', () => {
  test("SPEC §22's test vector, by the server's CRC-32 and by zlib's", () => {
    const random = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef';
    expect(independentChecksum(random)).toBe('2P40Ol');
    expect(tokenChecksum(random)).toBe('2P40Ol');
    // the checksum of a CRC-32 of 0 is all zeros, and the largest CRC-32 fits in 6 base62 digits
    expect(independentChecksum('')).toBe('000000');
    for (let i = 0; i < 200; i++) {
      const sample = randomCharacters(37);
      expect(tokenChecksum(sample)).toBe(independentChecksum(sample));
    }
  });

  test('every kind has its own prefix, and no prefix begins another', () => {
    const prefixes = [...Object.values(tokenPrefixes), 'rg_rt_', 'rg_ac_', 'rg_cs_', 'rg_sia_'];
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const a of prefixes) for (const b of prefixes) if (a !== b) expect(b.startsWith(a), `${a} / ${b}`).toBe(false);
    for (const kind of credentialKinds) expectChecksummed(generateToken(kind), tokenPrefixes[kind]);
  });

  test('tokens the API issues carry the checksum: PATs, OATs, web, customer and member sessions, sign-in attempts', async () => {
    const { user, organization } = await adminOfOrganization();
    const pat = await app.post('/v1/personal-access-tokens/', { comment: 'ci', scopes: ['user:read'] }, { session: user.session });
    expect(pat.status).toBe(201);
    expectChecksummed(pat.body.token, 'rg_pat_');
    const oat = await app.post(
      '/v1/organization-access-tokens/',
      { organization_id: organization.id, comment: 'ci', scopes: ['products_read'] },
      { session: user.session },
    );
    expect(oat.status).toBe(201);
    expectChecksummed(oat.body.token, 'rg_oat_');
    const customerId = await app.customer(organization.id);
    const customer = await app.post('/v1/customer-sessions/', { customer_id: customerId }, { session: user.session });
    expect(customer.status).toBe(201);
    expectChecksummed(customer.body.token, 'rg_cst_');
    const email = `leak.${randomUUID().slice(0, 8)}@example.com`;
    const asked = await app.request('POST', '/v1/login-code/request', { body: { email }, headers: from('192.0.2.40') });
    expect(asked.status).toBe(202);
    expectChecksummed(asked.body.attempt, 'rg_sia_');
    const code = /code is ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec((await app.outbox(email))[0]!.text)![1]!;
    const signedIn = await app.request('POST', '/v1/login-code/authenticate', {
      body: { email, code, attempt: asked.body.attempt },
      headers: from('192.0.2.40'),
    });
    expect(signedIn.status).toBe(200);
    const session = /rowgate_session=([^;]*)/.exec(signedIn.headers.getSetCookie().join('\n'))![1]!;
    expectChecksummed(session, 'rg_us_');
  });

  test('a token issued before, without a checksum, keeps working', async () => {
    const user = await app.user();
    const old = `rg_pat_${randomCharacters(43)}`;
    await app.sql('select rowgate_private.issue_personal_access_token($1, $2, $3, null, $4)', [
      user.id,
      'old',
      ['organizations_read'],
      app.hash(old),
    ]);
    expect((await app.get('/v1/organizations/', { token: old })).status).toBe(200);
  });
});

describe('allowed_ips', () => {
  async function patFor(user: TestUser, allowed: string[] | null | undefined) {
    const body = {
      comment: 'bound',
      scopes: ['user:read', 'organizations_read'],
      ...(allowed === undefined ? {} : { allowed_ips: allowed }),
    };
    const res = await app.post('/v1/personal-access-tokens/', body, { session: user.session });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string; token: string; allowed_ips: string[] | null };
  }

  /** an endpoint personal access tokens reach (organizations_read) */
  const ME = '/v1/organizations/';

  const lastUsed = async (table: string, id: string) =>
    (await app.sql<{ last_used_at: Date | null }>(`select last_used_at from rowgate.${table} where id = $1`, [id]))[0]!.last_used_at;

  function expectRefusedFromAddress(res: ApiResponse, address: string) {
    expectUnauthorized(res, true);
    expect(res.body.detail).toMatch(/client address/);
    expect(res.body.detail).toContain(address);
  }

  const graphql = (token: string, address: string, query = '{ allOrganizations { totalCount } }') =>
    app.request('POST', '/graphql', { token, body: { query }, headers: from(address) });

  test('stored as CIDRs, shown on creation and in the list; null (the default) allows any address', async () => {
    const user = await app.user();
    const bound = await patFor(user, ['203.0.113.0/24', '2001:db8::/32', '198.51.100.7', '203.0.113.0/24']);
    expect(bound.allowed_ips).toEqual(['203.0.113.0/24', '2001:db8::/32', '198.51.100.7/32']);
    const free = await patFor(user, undefined);
    expect(free.allowed_ips).toBeNull();
    expect((await patFor(user, null)).allowed_ips).toBeNull();
    const list = await app.get('/v1/personal-access-tokens/', { session: user.session });
    expect(list.body.items.find((t: { id: string }) => t.id === bound.id).allowed_ips).toEqual(bound.allowed_ips);
    // any address for a token without a list
    expect((await app.request('GET', ME, { token: free.token, headers: from('192.0.2.1') })).status).toBe(200);
  });

  test('entries are stored and shown in canonical CIDR form; an IPv4-mapped entry is its IPv4 network (SPEC §22)', async () => {
    const user = await app.user();
    const bound = await patFor(user, [
      '127.0.0.1',
      '2001:0DB8:0000:0000:0000:0000:0000:0001',
      '2001:DB8::/32',
      '::ffff:203.0.113.0/120',
      '::FFFF:c633:6407',
    ]);
    expect(bound.allowed_ips).toEqual(['127.0.0.1/32', '2001:db8::1/128', '2001:db8::/32', '203.0.113.0/24', '198.51.100.7/32']);
    const [row] = await app.sql<{ allowed_ips: string }>('select allowed_ips::text from rowgate.personal_access_tokens where id = $1', [
      bound.id,
    ]);
    expect(row!.allowed_ips).toBe('{127.0.0.1/32,2001:db8::1/128,2001:db8::/32,203.0.113.0/24,198.51.100.7/32}');
    // the mapped entry admits the IPv4 client, written either way
    expect((await app.request('GET', ME, { token: bound.token, headers: from('203.0.113.9') })).status).toBe(200);
    expect((await app.request('GET', ME, { token: bound.token, headers: from('::ffff:198.51.100.7') })).status).toBe(200);
    expectRefusedFromAddress(await app.request('GET', ME, { token: bound.token, headers: from('198.51.100.8') }), '198.51.100.8');
  });

  test('a PAT used from outside its networks: 401 through REST and GraphQL, and its last use stays', async () => {
    const user = await app.user();
    const { id, token } = await patFor(user, ['203.0.113.0/24']);
    expect(await lastUsed('personal_access_tokens', id)).toBeNull();
    expectRefusedFromAddress(await app.request('GET', ME, { token, headers: from('198.51.100.9') }), '198.51.100.9');
    expectRefusedFromAddress(await graphql(token, '198.51.100.9'), '198.51.100.9');
    expect(await lastUsed('personal_access_tokens', id)).toBeNull();
    // from inside: served, and used
    const inside = await app.request('GET', ME, { token, headers: from('203.0.113.77') });
    expect(inside.status).toBe(200);
    // a read's commit may follow its answer (src/http/pipeline.ts)
    await vi.waitFor(async () => expect(await lastUsed('personal_access_tokens', id)).not.toBeNull());
    const query = await graphql(token, '203.0.113.77');
    expect(query.status, JSON.stringify(query.body)).toBe(200);
    expect(query.body.data.allOrganizations.totalCount).toBe(0);
    // the server has now seen the token authenticate: GraphQL sends its authentication within the query's
    // transaction (src/graphql/transport/deferred-authentication.ts), and refuses it from outside all the same
    expectRefusedFromAddress(await graphql(token, '198.51.100.10'), '198.51.100.10');
    expectRefusedFromAddress(await app.request('GET', ME, { token, headers: from('198.51.100.10') }), '198.51.100.10');
  });

  test('an OAT bound to an IPv6 network: REST and GraphQL alike, the full address compared (not its /64)', async () => {
    const { user, organization } = await adminOfOrganization();
    const created = await app.post(
      '/v1/organization-access-tokens/',
      { organization_id: organization.id, comment: 'v6', scopes: ['organizations_read'], allowed_ips: ['2001:db8:0:0:1::/80'] },
      { session: user.session },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.allowed_ips).toEqual(['2001:db8:0:0:1::/80']);
    const { token, id } = created.body;
    const ok = await app.request('GET', '/v1/organizations/', { token, headers: from('2001:db8::1:0:0:5') });
    expect(ok.status).toBe(200);
    expect((await graphql(token, '2001:db8::1:0:0:5')).body.data.allOrganizations.totalCount).toBe(1);
    // the same /64, another /80
    expectRefusedFromAddress(
      await app.request('GET', '/v1/organizations/', { token, headers: from('2001:db8::2:0:0:5') }),
      '2001:db8::2:0:0:5',
    );
    expectRefusedFromAddress(await graphql(token, '2001:db8::2:0:0:5'), '2001:db8::2:0:0:5');
    // an IPv4 client is in no IPv6 network
    expectRefusedFromAddress(await app.request('GET', '/v1/organizations/', { token, headers: from('203.0.113.1') }), '203.0.113.1');
    const list = await app.get(`/v1/organization-access-tokens/?organization_id=${organization.id}`, { session: user.session });
    expect(list.body.items.find((t: { id: string }) => t.id === id).allowed_ips).toEqual(['2001:db8:0:0:1::/80']);
  });

  test('the address is the one the rate limits see: behind a trusted proxy, the forwarded client; never a spoofed one', async () => {
    const user = await app.user();
    const { token } = await patFor(user, ['127.0.0.1']);
    // the trusted loopback proxy forwards another client: that client is refused
    expectRefusedFromAddress(await app.request('GET', ME, { token, headers: from('203.0.113.5') }), '203.0.113.5');
    // a client that writes an address the proxy appended after it gains nothing: the rightmost untrusted hop counts
    expectRefusedFromAddress(await app.request('GET', ME, { token, headers: from('127.0.0.1, 203.0.113.5') }), '203.0.113.5');
    // the loopback itself, with nothing forwarded
    expect((await app.get(ME, { token })).status).toBe(200);
  });

  test('a token of a kind the endpoint does not take, from outside its networks, is refused for the address', async () => {
    const { user, organization } = await adminOfOrganization();
    const created = await app.post(
      '/v1/organization-access-tokens/',
      { organization_id: organization.id, comment: 'x', scopes: ['organizations_read'], allowed_ips: ['192.0.2.0/24'] },
      { session: user.session },
    );
    // GET /v1/users/me takes no organization token
    const res = await app.request('GET', ME, { token: created.body.token, headers: from('198.51.100.1') });
    expectUnauthorized(res, true);
  });

  test('bad lists are 422 at their place, and nothing is created', async () => {
    const user = await app.user();
    const cases: [unknown, (string | number)[]][] = [
      [[], ['body', 'allowed_ips']],
      [Array.from({ length: 21 }, (_, i) => `192.0.2.${i}`), ['body', 'allowed_ips']],
      [
        ['192.0.2.0/24', 'not-an-address'],
        ['body', 'allowed_ips', 1],
      ],
      [['10.0.0.1/8'], ['body', 'allowed_ips', 0]],
      [['192.0.2.0/33'], ['body', 'allowed_ips', 0]],
      [[42], ['body', 'allowed_ips', 0]],
      ['192.0.2.0/24', ['body', 'allowed_ips']],
      // abbreviated IPv4 (PostgreSQL would read it classful), host bits set, leading zeros, zone ids (SPEC §22)
      [['127.1'], ['body', 'allowed_ips', 0]],
      [
        ['192.0.2.0/24', '10.1'],
        ['body', 'allowed_ips', 1],
      ],
      [['10.1.2.3/8'], ['body', 'allowed_ips', 0]],
      [['010.0.0.1'], ['body', 'allowed_ips', 0]],
      [['10.0.0.0/08'], ['body', 'allowed_ips', 0]],
      [['fe80::1%eth0'], ['body', 'allowed_ips', 0]],
      [['2001:db8::1/129'], ['body', 'allowed_ips', 0]],
      [['2001:db8::1/64'], ['body', 'allowed_ips', 0]],
      [['::ffff:10.1.2.3/104'], ['body', 'allowed_ips', 0]],
      [['1.2.3.4/'], ['body', 'allowed_ips', 0]],
    ];
    for (const [allowed, loc] of cases) {
      const res = await app.post(
        '/v1/personal-access-tokens/',
        { comment: 'bad', scopes: ['user:read'], allowed_ips: allowed },
        { session: user.session },
      );
      const issues = expectValidationError(res);
      expect(
        issues.map((i) => i.loc),
        JSON.stringify(allowed),
      ).toContainEqual(loc);
    }
    const organization = await app.organization(user.id);
    const oat = await app.post(
      '/v1/organization-access-tokens/',
      { organization_id: organization.id, comment: 'bad', scopes: ['products_read'], allowed_ips: ['::1', 'nope'] },
      { session: user.session },
    );
    expect(expectValidationError(oat).map((i) => i.loc)).toContainEqual(['body', 'allowed_ips', 1]);
    expect(await app.sql('select 1 from rowgate.personal_access_tokens where user_id = $1', [user.id])).toEqual([]);
    expect(await app.sql('select 1 from rowgate.organization_access_tokens where organization_id = $1', [organization.id])).toEqual([]);
  });
});

describe('max_token_lifetime_days', () => {
  const DAY = 86_400;
  const createOat = (user: TestUser, organizationId: string, expiresIn?: number | null) =>
    app.post(
      '/v1/organization-access-tokens/',
      {
        organization_id: organizationId,
        comment: 'capped',
        scopes: ['products_read'],
        ...(expiresIn === undefined ? {} : { expires_in: expiresIn }),
      },
      { session: user.session },
    );

  test('set and cleared with PATCH (organization:manage), shown on reads, bounded 1..3650', async () => {
    const { user, organization } = await adminOfOrganization();
    expect((await app.get(`/v1/organizations/${organization.id}`, { session: user.session })).body.max_token_lifetime_days).toBeNull();
    const set = await app.patch(`/v1/organizations/${organization.id}`, { max_token_lifetime_days: 30 }, { session: user.session });
    expect(set.status).toBe(200);
    expect(set.body.max_token_lifetime_days).toBe(30);
    // a PATCH of another field leaves it
    const renamed = await app.patch(`/v1/organizations/${organization.id}`, { name: 'Renamed' }, { session: user.session });
    expect(renamed.body).toMatchObject({ name: 'Renamed', max_token_lifetime_days: 30 });
    for (const bad of [0, 3651, 1.5, '30']) {
      const res = await app.patch(`/v1/organizations/${organization.id}`, { max_token_lifetime_days: bad }, { session: user.session });
      expect(expectValidationError(res).map((i) => i.loc)).toContainEqual(['body', 'max_token_lifetime_days']);
    }
    // a member without organization:manage may not
    const member = await app.user();
    await app.membership(organization.id, member.id, 'member');
    const refused = await app.patch(`/v1/organizations/${organization.id}`, { max_token_lifetime_days: 3650 }, { session: member.session });
    expect(refused.status).toBe(403);
    const cleared = await app.patch(`/v1/organizations/${organization.id}`, { max_token_lifetime_days: null }, { session: user.session });
    expect(cleared.body.max_token_lifetime_days).toBeNull();
    // the change is an event of the organization, with the field in its data
    const [event] = await app.sql<{ data: { max_token_lifetime_days: number | null } }>(
      `select data from rowgate.events where resource_id = $1 and type = 'organization.updated' order by created_at desc limit 1`,
      [organization.id],
    );
    expect(event!.data).toHaveProperty('max_token_lifetime_days', null);
  });

  test('an OAT without expires_in, or beyond the cap, is 422 at body.expires_in; within it, created', async () => {
    const { user, organization } = await adminOfOrganization();
    expect((await createOat(user, organization.id)).status).toBe(201);
    await app.patch(`/v1/organizations/${organization.id}`, { max_token_lifetime_days: 30 }, { session: user.session });
    for (const expiresIn of [undefined, null, 30 * DAY + 1, 3650 * DAY]) {
      const issues = expectValidationError(await createOat(user, organization.id, expiresIn));
      expect(
        issues.map((i) => i.loc),
        String(expiresIn),
      ).toEqual([['body', 'expires_in']]);
    }
    for (const expiresIn of [60, 30 * DAY]) {
      const res = await createOat(user, organization.id, expiresIn);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    }
    // the cap is the database's: the SQL function refuses as the API does
    const client = await app.pool.connect();
    try {
      await client.query('begin');
      await client.query(
        `select set_config('role', 'rowgate_user', true), set_config('rowgate.subject_kind', 'user', true),
           set_config('rowgate.subject_id', $1, true), set_config('rowgate.credential_kind', 'web_session', true),
           set_config('rowgate.scopes', 'organization_access_tokens_write products_read', true)`,
        [user.id],
      );
      await expect(
        client.query(`select rowgate.create_organization_access_token($1, 'sql', '{products_read}', null, '\\x01')`, [organization.id]),
      ).rejects.toMatchObject({ code: 'RG422', detail: 'body.expires_in' });
    } finally {
      await client.query('rollback');
      client.release();
    }
    // personal tokens are not the organization's
    const pat = await app.post('/v1/personal-access-tokens/', { comment: 'free', scopes: ['user:read'] }, { session: user.session });
    expect(pat.status).toBe(201);
  });
});

describe('POST /v1/credentials/revoke', () => {
  const revoke = (tokens: unknown, address = '192.0.2.200') =>
    app.request('POST', '/v1/credentials/revoke', { body: tokens === undefined ? {} : { tokens }, headers: from(address) });

  test('the answer is 202 {} whatever the tokens were: live, unknown, revoked or noise', async () => {
    const user = await app.user();
    const live = await app.pat(user.id, ['user:read']);
    const answers = await Promise.all([
      revoke([generateToken('personal_access_token')]),
      revoke(['hello', 'rg_pat_short', 'x'.repeat(5000)]),
      revoke([live, live]),
      revoke([live]),
    ]);
    for (const res of answers) {
      expect(res.status).toBe(202);
      expect(res.body).toEqual({});
    }
    const headersOf = (res: ApiResponse) =>
      [...res.headers.keys()].filter((k) => !['date', 'x-request-id', 'ratelimit'].includes(k)).sort();
    for (const res of answers) expect(headersOf(res)).toEqual(headersOf(answers[0]!));
  });

  test('a malformed body is 422 and repeats no token', async () => {
    const token = generateToken('personal_access_token');
    const bodies: unknown[] = [undefined, [], Array.from({ length: 101 }, () => token), [token, 42], token, { [token]: token }];
    for (const tokens of bodies) {
      const res = await revoke(tokens);
      expectValidationError(res);
      expect(JSON.stringify(res.body)).not.toContain(token.slice(7));
    }
    const extra = await app.request('POST', '/v1/credentials/revoke', {
      body: { tokens: [token], note: token },
      headers: from('192.0.2.201'),
    });
    expectValidationError(extra);
    expect(JSON.stringify(extra.body)).not.toContain(token.slice(7));
  });

  test('a PAT is revoked at once and its user mailed (without the token); refused on the next request', async () => {
    const user = await app.user();
    const created = await app.post(
      '/v1/personal-access-tokens/',
      { comment: 'Leaky CI', scopes: ['organizations_read'] },
      { session: user.session },
    );
    const { token, id } = created.body;
    expect((await app.get('/v1/organizations/', { token })).status).toBe(200);
    expect((await revoke([token])).status).toBe(202);
    expectUnauthorized(await app.get('/v1/organizations/', { token }), true);
    expectUnauthorized(await app.request('POST', '/graphql', { token, body: { query: '{ __typename }' } }), true);
    const [mail] = await app.outbox(user.email);
    expect(mail!.text).toContain('personal access token "Leaky CI"');
    expect(mail!.text).toContain(id);
    expect(mail!.text).not.toContain(token.slice(7));
    // reported again: nothing more to do, nobody mailed twice
    expect((await revoke([token])).status).toBe(202);
    expect(await app.outbox(user.email)).toHaveLength(1);
  });

  test('an OAT: revoked, an event of its organization, and its creator mailed', async () => {
    const { user, organization } = await adminOfOrganization();
    const created = await app.post(
      '/v1/organization-access-tokens/',
      { organization_id: organization.id, comment: 'Storefront', scopes: ['organizations_read'] },
      { session: user.session },
    );
    const { token, id } = created.body;
    expect((await app.get('/v1/organizations/', { token })).status).toBe(200);
    const reported = await revoke([token]);
    expect(reported.status).toBe(202);
    expectUnauthorized(await app.get('/v1/organizations/', { token }), true);
    const events = await app.get(
      `/v1/events/?organization_id=${organization.id}&type=organization_access_token.deleted&resource_id=${id}`,
      { session: user.session },
    );
    expect(events.status).toBe(200);
    expect(events.body.items).toHaveLength(1);
    expect(events.body.items[0]).toMatchObject({
      type: 'organization_access_token.deleted',
      resource_id: id,
      actor: { kind: 'system' },
      request_id: reported.headers.get('x-request-id'),
    });
    expect(events.body.items[0].data).toMatchObject({ id, comment: 'Storefront' });
    const [mail] = await app.outbox(user.email);
    expect(mail!.text).toContain(`organization access token "Storefront"`);
    expect(mail!.text).not.toContain(token.slice(7));
  });

  test('every kind of token in one report: all revoked, each creator told once', async () => {
    const { user, organization } = await adminOfOrganization();
    const admin = await app.user({ admin: true });
    const impersonation = await app.session(user.id, { impersonatorId: admin.id, lifetime: '1 hour' });
    const customerId = await app.customer(organization.id);
    const tokens = {
      session: await app.session(user.id),
      impersonation,
      oauthUser: await app.oauthUserToken(user.id, ['organizations_read']),
      oauthOrganization: await app.oauthOrganizationToken(user.id, organization.id, ['organizations_read']),
      customer: await app.customerSession(customerId),
      member: await app.memberSession(await app.customerMember(await app.customer(organization.id))),
    };
    const probes: [string, string, Record<string, string>][] = [
      ['session', '/v1/users/me', { cookie: `rowgate_session=${tokens.session}` }],
      ['impersonation', '/v1/users/me', { cookie: `rowgate_session=${tokens.impersonation}` }],
      ['oauthUser', '/v1/organizations/', { authorization: `Bearer ${tokens.oauthUser}` }],
      ['oauthOrganization', '/v1/organizations/', { authorization: `Bearer ${tokens.oauthOrganization}` }],
      ['customer', '/v1/customer-portal/customers/me', { authorization: `Bearer ${tokens.customer}` }],
    ];
    for (const [name, path, headers] of probes) expect((await app.request('GET', path, { headers })).status, name).toBe(200);
    expect((await revoke(Object.values(tokens))).status).toBe(202);
    for (const [name, path, headers] of probes) expect((await app.request('GET', path, { headers })).status, name).toBe(401);
    const revoked = await app.sql<{ n: number }>(
      `select count(*)::int as n from rowgate_private.sessions where token_hash = any ($1) and revoked_at is not null`,
      [[tokens.session, tokens.impersonation, tokens.customer, tokens.member].map((t) => app.hash(t))],
    );
    expect(revoked[0]!.n).toBe(4);
    // the user is told of its session and OAuth2 grants in one mail; the administrator of the impersonation
    const mails = await app.outbox(user.email);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.text.match(/^- your /gm)).toHaveLength(3);
    expect((await app.outbox(admin.email))[0]!.text).toContain('web session');
  });
});

describe('a token revoked on report is refused by every instance on its next request', () => {
  let other: { url: string; close(): Promise<void> };
  beforeAll(async () => {
    // a second server on the same database, with its own pool, GraphQL and memories
    const pool = createPool({ connectionString: app.authenticatorUrl, max: 2, statementTimeoutMs: 10_000 });
    const graphql = await createGraphql({ pool, secret: app.secret, development: false });
    const server: Server = createApp({
      pool,
      secret: app.secret,
      routes: allRoutes(pool),
      validateResponses: true,
      mailer: outboxMailer(() => {}),
      mounts: [graphql.mount],
      consistency: new Consistency({ primary: pool }),
    }).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    other = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
        await graphql.release();
        await pool.end();
      },
    };
  });
  afterAll(async () => other?.close());

  test('REST and GraphQL on the other instance, after it had seen the token authenticate', async () => {
    const { organization } = await adminOfOrganization();
    const token = await app.oat(organization.id, ['organizations_read']);
    const rest = () => fetch(`${other.url}/v1/organizations/`, { headers: { authorization: `Bearer ${token}` } });
    const gql = () =>
      fetch(`${other.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ allOrganizations { totalCount } }' }),
      });
    // seen twice, so that its GraphQL authentication now rides in the query's transaction
    for (let i = 0; i < 2; i++) {
      expect((await rest()).status).toBe(200);
      expect((await gql()).status).toBe(200);
    }
    expect((await revoke([token])).status).toBe(202);
    expect((await rest()).status).toBe(401);
    const refused = await gql();
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: 'Unauthorized' });
  });

  async function revoke(tokens: string[]) {
    return app.request('POST', '/v1/credentials/revoke', { body: { tokens } });
  }
});

describe('bounded by the anonymous rate limit', () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({
      limits: { perCredential: 100, perAddress: 2 },
      operating: { trustedProxies: trustedProxies('127.0.0.1') },
    });
  });
  afterAll(async () => limited?.close());

  test('one address gets its anonymous allowance, then 429 with Retry-After; another address is not refused', async () => {
    const send = (address: string) =>
      limited.request('POST', '/v1/credentials/revoke', {
        body: { tokens: [generateToken('personal_access_token')] },
        headers: from(address),
      });
    const answers = await Promise.all(Array.from({ length: 12 }, () => send('198.51.100.50')));
    const statuses = answers.map((r) => r.status);
    expect(statuses).toContain(202);
    expect(statuses).toContain(429);
    const refused = answers.find((r) => r.status === 429)!;
    expectError(refused, 429, 'TooManyRequests');
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.headers.get('ratelimit-policy')).toMatch(/^"anonymous";q=2;w=1$/);
    expect((await send('198.51.100.51')).status).toBe(202);
  });
});
