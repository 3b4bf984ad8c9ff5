// Events (SPEC §17): every change writes its event in the same transaction, with
// the resource as REST answers it and the actor of the request; a rolled-back
// request leaves none; REST, GraphQL and an analyst's SQL see the same events,
// exactly those whose resource the subject may read.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { runCli } from './cli-runner.ts';
import { startTestApp, type RequestOptions, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser; // admin of A and its account's admin
let member: TestUser; // role member in A
let finance: TestUser; // role finance in A
let outsider: TestUser; // admin of B only
let A: string;
let B: string;
let accountA: string;
let oatA: string;

const ALL = [
  'user:read',
  'user:write',
  'payouts:read',
  'payouts:write',
  ...['organizations', 'members', 'products', 'customers', 'orders', 'transactions', 'payouts', 'organization_access_tokens'].flatMap(
    (r) => [`${r}_read`, `${r}_write`],
  ),
  'customer_sessions_write',
  'events_read',
];

interface EventRow {
  id: string;
  organization_id: string;
  type: string;
  resource_id: string;
  data: Record<string, unknown>;
  actor: Record<string, unknown>;
  request_id: string | null;
  created_at: string;
}

/** the events of a resource, oldest first, as the owner sees them (past RLS) */
async function eventsOf(resourceId: string): Promise<EventRow[]> {
  return app.sql(
    `select id, organization_id, type, resource_id, data, actor, request_id, created_at
     from rowgate.events where resource_id = $1 order by created_at, id`,
    [resourceId],
  );
}

const credentialId = async (table: string, token: string) =>
  (
    await app.sql<{ id: string }>(
      table === 'sessions'
        ? 'select id from rowgate_private.sessions where token_hash = $1'
        : table === 'oauth2'
          ? 'select id from rowgate_private.oauth2_access_tokens where token_hash = $1'
          : `select coalesce(personal_access_token_id, organization_access_token_id) as id from rowgate_private.access_token_hashes where token_hash = $1`,
      [app.hash(token)],
    )
  )[0]!.id;

/** where the change came from (SPEC §21): the request's address and user agent, or null (the system, or a reader without organization:manage) */
const origin = { asymmetricMatch: (value: unknown) => value === null || typeof value === 'string' };
const actor = (kind: string, id: string | null, credentialKind: string | null, credential: string | null, extra = {}) => ({
  kind,
  id,
  credential_kind: credentialKind,
  credential_id: credential,
  impersonator_id: null,
  oauth2_client_id: null,
  ip: kind === 'system' ? null : origin,
  user_agent: kind === 'system' ? null : origin,
  ...extra,
});

async function ok(res: Promise<{ status: number; body: any }>, status = 200) {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user({ name: 'admin' });
  member = await app.user({ name: 'member' });
  finance = await app.user({ name: 'finance' });
  outsider = await app.user({ name: 'outsider' });
  A = (await app.organization(admin.id)).id;
  B = (await app.organization(outsider.id)).id;
  await app.membership(A, member.id, 'member');
  await app.membership(A, finance.id, 'finance');
  accountA = await app.account(A, admin.id);
  oatA = await app.oat(
    A,
    ALL.filter((s) => !s.includes(':')),
  );
});
afterAll(async () => app?.close());

describe('an event per change, with its data as REST answers it and the actor of the request', () => {
  test('products through a web session, a PAT and an OAuth2 user token', async () => {
    const web = { session: admin.session };
    const created = await ok(
      app.post('/v1/products/', { organization_id: A, name: 'P', price_amount: 500, price_currency: 'usd' }, web),
      201,
    );
    const pat = await app.pat(admin.id, ALL);
    const updated = await ok(app.patch(`/v1/products/${created.id}`, { name: 'P2' }, { token: pat }));
    const oauth = await app.oauthUserToken(admin.id, ALL);
    await ok(app.delete(`/v1/products/${created.id}`, { token: oauth }), 204);

    const events = await eventsOf(created.id);
    expect(events.map((e) => e.type)).toEqual(['product.created', 'product.updated', 'product.deleted']);
    expect(events[0]!.data).toEqual(created);
    expect(events[1]!.data).toEqual(updated);
    // deleting changes nothing REST shows but the moment it last changed
    expect({ ...events[2]!.data, updated_at: null }).toEqual({ ...updated, updated_at: null });
    expect(events.map((e) => e.organization_id)).toEqual([A, A, A]);
    expect(events[0]!.actor).toEqual(actor('user', admin.id, 'web_session', await credentialId('sessions', admin.session)));
    expect(events[1]!.actor).toEqual(actor('user', admin.id, 'personal_access_token', await credentialId('access_token_hashes', pat)));
    expect(events[2]!.actor).toEqual(
      actor('user', admin.id, 'oauth2_token', await credentialId('oauth2', oauth), { oauth2_client_id: 'test-client' }),
    );
  });

  test('customers through an organization token, then the customer itself through its portal session', async () => {
    const created = await ok(
      app.post('/v1/customers/', { email: `c-${randomBytes(3).toString('hex')}@example.com` }, { token: oatA }),
      201,
    );
    const session = await app.customerSession(created.id);
    const mine = await ok(app.patch('/v1/customer-portal/customers/me', { first_name: 'Ada' }, { token: session }));
    const events = await eventsOf(created.id);
    expect(events.map((e) => e.type)).toEqual(['customer.created', 'customer.updated']);
    expect(events[0]!.data).toEqual(created);
    expect(events[1]!.data).toMatchObject(mine);
    expect(events[0]!.actor).toEqual(
      actor('organization', A, 'organization_access_token', await credentialId('access_token_hashes', oatA)),
    );
    expect(events[1]!.actor).toEqual(actor('customer', created.id, 'customer_session', await credentialId('sessions', session)));
  });

  test('an order created with metadata: its order.created and order.paid carry it, and nothing else is written', async () => {
    const product = await app.product(A, { price_amount: 300 });
    const customer = await app.customer(A);
    const order = await ok(
      app.post(
        '/v1/orders/',
        { product_id: product, customer_id: customer, status: 'paid', metadata: { channel: 'web' } },
        {
          session: admin.session,
        },
      ),
      201,
    );
    expect(order.metadata).toEqual({ channel: 'web' });
    const events = await eventsOf(order.id);
    expect(events.map((e) => e.type)).toEqual(['order.created', 'order.paid']);
    expect(events[0]!.data).toEqual(order);
    expect(events[1]!.data).toEqual(order);
  });

  test('a paid order: order.created, order.paid and its transaction; refunding it: order.updated, order.refunded', async () => {
    const product = await app.product(A, { price_amount: 700 });
    const customer = await app.customer(A);
    const oauthOrg = await app.oauthOrganizationToken(
      admin.id,
      A,
      ALL.filter((s) => !s.includes(':')),
    );
    const order = await ok(
      app.post('/v1/orders/', { product_id: product, customer_id: customer, status: 'paid' }, { token: oauthOrg }),
      201,
    );
    const refunded = await ok(app.patch(`/v1/orders/${order.id}`, { status: 'refunded' }, { session: admin.session }));
    const events = await eventsOf(order.id);
    expect(events.map((e) => e.type)).toEqual(['order.created', 'order.paid', 'order.updated', 'order.refunded']);
    expect(events[0]!.data).toEqual(order);
    expect(events[1]!.data).toEqual(order);
    expect(events[2]!.data).toEqual(refunded);
    expect(events[0]!.actor).toEqual(
      actor('organization', A, 'oauth2_token', await credentialId('oauth2', oauthOrg), { oauth2_client_id: 'test-client' }),
    );
    // the transactions, as their list answers them
    const transactions = (await ok(app.get(`/v1/transactions/?order_id=${order.id}&sorting=amount`, { session: admin.session }))).items;
    expect(transactions.map((t: { type: string }) => t.type)).toEqual(['refund', 'payment']);
    for (const transaction of transactions) {
      const [event] = await eventsOf(transaction.id);
      expect(event).toMatchObject({ type: 'transaction.created', data: transaction, organization_id: A });
    }
  });

  test('organizations, memberships, accounts, payout accounts and organization access tokens', async () => {
    const web = { session: admin.session };
    const organization = await ok(app.post('/v1/organizations/', { name: 'New', slug: `new-${randomBytes(3).toString('hex')}` }, web), 201);
    const renamed = await ok(app.patch(`/v1/organizations/${organization.id}`, { name: 'Renamed' }, web));
    const added = await ok(app.post(`/v1/organizations/${organization.id}/members`, { email: member.email, role: 'member' }, web), 201);
    const changed = await ok(app.patch(`/v1/organizations/${organization.id}/members/${member.id}`, { role: 'finance' }, web));
    await ok(app.delete(`/v1/organizations/${organization.id}/members/${member.id}`, web), 204);
    const account = await ok(app.post('/v1/accounts/', { organization_id: organization.id, country: 'FR', currency: 'eur' }, web), 201);
    const accountChanged = await ok(app.patch(`/v1/accounts/${account.id}`, { country: 'DE' }, web));
    const payout = await ok(
      app.post('/v1/payout-accounts/', { organization_id: organization.id, type: 'stripe', country: 'FR', currency: 'eur' }, web),
      201,
    );
    await ok(app.delete(`/v1/payout-accounts/${payout.id}`, web), 204);
    const token = await ok(
      app.post('/v1/organization-access-tokens/', { organization_id: organization.id, comment: 'ci', scopes: ['products_read'] }, web),
      201,
    );
    await ok(app.delete(`/v1/organization-access-tokens/${token.id}`, web), 204);
    const withAccount = await ok(app.get(`/v1/organizations/${organization.id}`, web));
    await ok(app.delete(`/v1/organizations/${organization.id}`, web), 204);

    const types = async (id: string) => (await eventsOf(id)).map((e) => e.type);
    expect(await types(organization.id)).toEqual([
      'organization.created',
      'organization.updated', // renamed
      'organization.updated', // its account_id set by the account's creation
      'organization.deleted',
    ]);
    const organizationEvents = await eventsOf(organization.id);
    expect(organizationEvents[1]!.data).toEqual(renamed);
    expect(organizationEvents[2]!.data).toEqual(withAccount);
    // the creator's membership comes with the organization
    const memberships = await app.sql<EventRow>(
      `select type, resource_id, data from rowgate.events where organization_id = $1 and type like 'membership.%' order by created_at, id`,
      [organization.id],
    );
    expect(memberships.map((e) => [e.type, e.resource_id])).toEqual([
      ['membership.created', admin.id],
      ['membership.created', member.id],
      ['membership.updated', member.id],
      ['membership.deleted', member.id],
    ]);
    expect(memberships[1]!.data).toEqual(added);
    expect(memberships[2]!.data).toEqual(changed);
    const accountEvents = await eventsOf(account.id);
    expect(accountEvents.map((e) => e.type)).toEqual(['account.created', 'account.updated']);
    expect(accountEvents[0]!.data).toEqual(account);
    expect(accountEvents[1]!.data).toEqual(accountChanged);
    const payoutEvents = await eventsOf(payout.id);
    expect(payoutEvents.map((e) => e.type)).toEqual(['payout_account.created', 'payout_account.deleted']);
    expect(payoutEvents[0]!.data).toEqual(payout);
    const tokenEvents = await eventsOf(token.id);
    expect(tokenEvents.map((e) => e.type)).toEqual(['organization_access_token.created', 'organization_access_token.deleted']);
    const { token: _secret, ...tokenRead } = token;
    expect(tokenEvents[0]!.data).toEqual(tokenRead);
    expect(JSON.stringify(tokenEvents)).not.toContain(_secret);
  });

  test('a token being used (last_used_at) writes no event; a change by the owner is the system', async () => {
    const before = await app.sql<{ n: number }>('select count(*)::int as n from rowgate.events where organization_id = $1', [A]);
    await app.sql(`update rowgate.organization_access_tokens set last_used_at = now() where organization_id = $1`, [A]);
    const after = await app.sql<{ n: number }>('select count(*)::int as n from rowgate.events where organization_id = $1', [A]);
    expect(after[0]!.n).toBe(before[0]!.n);
    const product = await app.product(A);
    const [event] = await eventsOf(product);
    expect(event!.actor).toEqual(actor('system', null, null, null));
    expect(event!.request_id).toBeNull();
  });

  test('the actor of an impersonation session, of a member seat, and the request id, from the transaction settings', async () => {
    const impersonation = await app.session(member.id, { impersonatorId: admin.id, lifetime: '1 hour' });
    const customer = await app.customer(A);
    const seat = await app.customerMember(customer);
    const memberSession = await app.memberSession(seat);
    const client = await app.pool.connect();
    try {
      const actorOf = async (settings: Record<string, string>) => {
        await client.query('begin');
        await client.query(`select set_config('role', 'rowgate_user', true)`);
        for (const [name, value] of Object.entries(settings)) await client.query('select set_config($1, $2, true)', [name, value]);
        const { rows } = await client.query('select rowgate_hidden.current_actor() as actor');
        await client.query('rollback');
        return rows[0].actor;
      };
      expect(
        await actorOf({
          'rowgate.subject_kind': 'user',
          'rowgate.subject_id': member.id,
          'rowgate.credential_kind': 'web_session',
          'rowgate.credential_id': await credentialId('sessions', impersonation),
        }),
      ).toEqual(actor('user', member.id, 'web_session', await credentialId('sessions', impersonation), { impersonator_id: admin.id }));
      // the authentication statement's setting counts only beside the credential it names: another's is looked past
      const impersonationId = await credentialId('sessions', impersonation);
      const settingsOf = (origin: string) => ({
        'rowgate.subject_kind': 'user',
        'rowgate.subject_id': member.id,
        'rowgate.credential_kind': 'web_session',
        'rowgate.credential_id': impersonationId,
        'rowgate.credential_impersonator': origin,
      });
      expect((await actorOf(settingsOf(`${impersonationId}:${outsider.id}`))).impersonator_id).toBe(outsider.id);
      expect((await actorOf(settingsOf(`${await credentialId('sessions', admin.session)}:`))).impersonator_id).toBe(admin.id);
      expect(
        await actorOf({
          'rowgate.subject_kind': 'member',
          'rowgate.subject_id': seat,
          'rowgate.credential_kind': 'member_session',
          'rowgate.credential_id': await credentialId('sessions', memberSession),
        }),
      ).toEqual(actor('member', seat, 'member_session', await credentialId('sessions', memberSession)));
      // an event written in a transaction that names its request carries the request id
      await client.query('begin');
      await client.query(`select set_config('rowgate.request_id', 'req-42', true)`);
      await client.query(`select set_config('role', 'rowgate_organization', true)`);
      for (const [name, value] of Object.entries({
        'rowgate.subject_kind': 'organization',
        'rowgate.subject_id': A,
        'rowgate.credential_kind': 'organization_access_token',
        'rowgate.credential_id': await credentialId('access_token_hashes', oatA),
        'rowgate.scopes': 'products_write products_read',
      }))
        await client.query('select set_config($1, $2, true)', [name, value]);
      const { rows } = await client.query(
        `insert into rowgate.products (organization_id, name, price_amount, price_currency) values ($1, 'R', 1, 'usd') returning id`,
        [A],
      );
      await client.query('commit');
      const [event] = await eventsOf(rows[0].id);
      expect(event).toMatchObject({ type: 'product.created', request_id: 'req-42', actor: { kind: 'organization', id: A } });
    } finally {
      client.release();
    }
  });

  test('an event renders its timestamps in UTC whatever the writing session’s time zone', async () => {
    const client = new pg.Client({ connectionString: app.ownerUrl });
    await client.connect();
    try {
      for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns']) {
        await client.query('begin');
        await client.query(`select set_config('TimeZone', $1, true)`, [zone]);
        const { rows } = await client.query(
          `insert into rowgate.products (organization_id, name, price_amount, price_currency) values ($1, 'Z', 1, 'usd') returning id`,
          [A],
        );
        await client.query(`update rowgate.products set name = 'Z2' where id = $1`, [rows[0].id]);
        await client.query('commit');
        const events = await app.sql<{ data: Record<string, string>; previous: unknown }>(
          'select data, previous from rowgate.events where resource_id = $1 order by created_at, id',
          [rows[0].id],
        );
        expect(events.length, zone).toBe(2);
        for (const { data } of events) {
          expect(data.created_at, zone).toMatch(/\+00:00$/);
          expect(data.updated_at, zone).toMatch(/\+00:00$/);
        }
        expect(events[1]!.previous, zone).toEqual({ name: 'Z' });
      }
    } finally {
      await client.end();
    }
  });

  test('settings set by hand outside the API’s login make the change the system’s', async () => {
    const client = new pg.Client({ connectionString: app.ownerUrl });
    await client.connect();
    try {
      await client.query('begin');
      await client.query(`select set_config('rowgate.subject_kind', 'user', true), set_config('rowgate.subject_id', $1, true)`, [admin.id]);
      const { rows } = await client.query(
        `insert into rowgate.products (organization_id, name, price_amount, price_currency) values ($1, 'S', 1, 'usd') returning id`,
        [A],
      );
      await client.query('commit');
      expect((await eventsOf(rows[0].id))[0]!.actor).toMatchObject({ kind: 'system', id: null });
    } finally {
      await client.end();
    }
  });

  // the trigger removes the hidden columns from the row: a column added to a table is in one list or the other
  test('every events trigger names each column of its table once, as shown or as hidden', async () => {
    const triggers = await app.sql<{ table: string; shown: string; hidden: string; columns: string[] }>(
      `select t.tgrelid::regclass::text as table, a[3] as shown, a[4] as hidden,
         array(select attname::text from pg_attribute where attrelid = t.tgrelid and attnum > 0 and not attisdropped order by attname) as columns
       from pg_trigger t, lateral (select string_to_array(encode(t.tgargs, 'escape'), '\\000') as a) args
       where t.tgname = '_400_events' and t.tgfoid = 'rowgate_private.tg__events()'::regprocedure`,
    );
    expect(triggers.length).toBeGreaterThanOrEqual(14);
    for (const { table, shown, hidden, columns } of triggers) {
      const named = [...shown.split(','), ...hidden.split(',')].filter(Boolean).sort();
      expect(named, table).toEqual([...columns].sort());
    }
  });
});

test('a request that fails after its change leaves no event (the change and its events roll back together)', async () => {
  // a failure after the events trigger, inside the request's statement
  await app.sql(`create function rowgate_private.tg_test_fail() returns trigger language plpgsql security definer as $$
    begin raise exception 'refused after the event' using errcode = 'RG422', detail = 'body.name'; end $$`);
  await app.sql(`create trigger _999_test_fail after insert on rowgate.products for each row when (new.name = 'doomed')
    execute function rowgate_private.tg_test_fail()`);
  try {
    const before = await app.sql<{ n: number }>('select count(*)::int as n from rowgate.events');
    const res = await app.post(
      '/v1/products/',
      { organization_id: A, name: 'doomed', price_amount: 1, price_currency: 'usd' },
      {
        session: admin.session,
      },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    const after = await app.sql<{ n: number }>('select count(*)::int as n from rowgate.events');
    expect(after[0]!.n).toBe(before[0]!.n);
    expect(await app.sql(`select 1 from rowgate.events where data->>'name' = 'doomed'`)).toEqual([]);
  } finally {
    await app.sql('drop trigger _999_test_fail on rowgate.products');
  }
});

describe('who sees which events: REST, GraphQL and an analyst alike', () => {
  /** every kind of event of A, made once */
  beforeAll(async () => {
    const web = { session: admin.session };
    const product = await ok(
      app.post('/v1/products/', { organization_id: A, name: 'V', price_amount: 9, price_currency: 'usd' }, web),
      201,
    );
    const customer = await app.customer(A);
    await ok(app.post('/v1/orders/', { product_id: product.id, customer_id: customer, status: 'paid' }, web), 201);
    await ok(app.patch(`/v1/accounts/${accountA}`, { country: 'CA' }, web));
    await ok(app.post('/v1/payout-accounts/', { organization_id: A, type: 'stripe', country: 'US', currency: 'usd' }, web), 201);
    await ok(app.post('/v1/organization-access-tokens/', { organization_id: A, comment: 'v', scopes: ['products_read'] }, web), 201);
    await app.product(B);
  });

  /** what each reader may see, by the rules of SPEC §5/§17 (declared here, not read from src) */
  const RULES: Record<string, (type: string) => boolean> = {
    adminWeb: () => true,
    adminPat: (t) => !t.startsWith('payout_account.'), // payout accounts: web sessions only
    member: (t) => !/^(transaction|account|payout_account|organization_access_token)\./.test(t),
    finance: (t) => !/^(account|payout_account|organization_access_token)\./.test(t),
    oat: (t) => !/^(payout_account|organization_access_token)\./.test(t),
  };

  async function expected(organizationId: string, rule: (type: string) => boolean) {
    const rows = await app.sql<{ id: string; type: string }>('select id, type from rowgate.events where organization_id = $1', [
      organizationId,
    ]);
    return rows.filter((r) => rule(r.type)).map((r) => r.id);
  }

  async function restIds(auth: RequestOptions) {
    const ids: string[] = [];
    for (let page = 1; ; page++) {
      const body = await ok(app.get(`/v1/events/?limit=100&page=${page}`, auth));
      ids.push(...body.items.map((e: EventRow) => e.id));
      if (page >= body.pagination.max_page) return ids.sort();
    }
  }

  async function graphqlIds(auth: RequestOptions) {
    const ids: string[] = [];
    let after: string | null = null;
    for (;;) {
      const res = await app.post(
        '/graphql',
        {
          query: `query($after: Cursor) { allEvents(first: 100, after: $after) { nodes { rowId } pageInfo { hasNextPage endCursor } } }`,
          variables: { after },
        },
        auth,
      );
      expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
      const connection = res.body.data.allEvents;
      ids.push(...connection.nodes.map((n: { rowId: string }) => n.rowId));
      if (!connection.pageInfo.hasNextPage) return ids.sort();
      after = connection.pageInfo.endCursor;
    }
  }

  async function analystIds(user: TestUser) {
    const login = `${inject('runId')}_ev_${randomBytes(3).toString('hex')}`;
    const run = await runCli(app, ['analysts', 'grant', '--user-id', user.id, '--login', login]);
    expect(run, 'analysts grant').toMatchObject({ code: 0 });
    const client = new pg.Client({ connectionString: JSON.parse(run.stdout).database_url });
    await client.connect();
    try {
      const { rows } = await client.query('select * from rowgate.events');
      return rows.map((r: { id: string }) => r.id).sort();
    } finally {
      await client.end();
      await runCli(app, ['analysts', 'revoke', '--login', login]);
    }
  }

  test('each reader sees exactly the events of the resources it may read, through every interface', async () => {
    const pat = (u: TestUser) => app.pat(u.id, ALL);
    const readers: [string, RequestOptions, TestUser | null, (t: string) => boolean][] = [
      ['admin web session', { session: admin.session }, admin, RULES.adminWeb!],
      ['admin PAT', { token: await pat(admin) }, null, RULES.adminPat!],
      ['member web session', { session: member.session }, member, RULES.member!],
      ['finance web session', { session: finance.session }, finance, RULES.finance!],
      ['organization token', { token: oatA }, null, RULES.oat!],
    ];
    for (const [label, auth, analyst, rule] of readers) {
      const want = (await expected(A, rule)).sort();
      expect(want.length, label).toBeGreaterThan(0);
      expect(await restIds(auth), `${label}: REST`).toEqual(want);
      expect(await graphqlIds(auth), `${label}: GraphQL`).toEqual(want);
      if (analyst) expect(await analystIds(analyst), `${label}: analyst`).toEqual(want);
    }
    // the outsider sees B's events only, and none of A's
    const outsiderIds = await restIds({ session: outsider.session });
    expect(outsiderIds).toEqual((await expected(B, () => true)).sort());
    // a token without events_read sees none, and its REST call is refused
    const noEvents = await app.pat(admin.id, ['products_read']);
    expect((await app.get('/v1/events/', { token: noEvents })).status).toBe(403);
    expect(await graphqlIds({ token: noEvents })).toEqual([]);
  }, 180_000);

  test('GET /v1/events/{id} answers the list item; an event out of reach is a 404', async () => {
    const [first] = (await ok(app.get('/v1/events/?limit=1&type=order.paid', { session: admin.session }))).items;
    expect(first.type).toBe('order.paid');
    expect(await ok(app.get(`/v1/events/${first.id}`, { session: admin.session }))).toEqual(first);
    expect((await app.get(`/v1/events/${first.id}`, { session: outsider.session })).status).toBe(404);
    const [transaction] = (await ok(app.get('/v1/events/?limit=1&type=transaction.created', { session: admin.session }))).items;
    expect((await app.get(`/v1/events/${transaction.id}`, { session: member.session })).status).toBe(404);
  });

  test('filters: type (repeated), resource_id, organization_id, a time window; sorted by created_at', async () => {
    const web = { session: admin.session };
    const paid = (await ok(app.get('/v1/events/?limit=100&type=order.paid&type=order.created', web))).items;
    expect(new Set(paid.map((e: EventRow) => e.type))).toEqual(new Set(['order.paid', 'order.created']));
    const one = paid[0];
    const ofResource = (await ok(app.get(`/v1/events/?resource_id=${one.resource_id}`, web))).items;
    expect(ofResource.every((e: EventRow) => e.resource_id === one.resource_id)).toBe(true);
    expect((await ok(app.get(`/v1/events/?organization_id=${B}`, web))).items).toEqual([]);
    const future = (await ok(app.get('/v1/events/?created_after=2999-01-01T00:00:00Z', web))).pagination.total_count;
    expect(future).toBe(0);
    const ascending = (await ok(app.get('/v1/events/?limit=100&sorting=created_at', web))).items.map((e: EventRow) => e.created_at);
    expect(ascending).toEqual([...ascending].sort());
    expect((await app.get('/v1/events/?sorting=type', web)).status).toBe(422);
    expect((await app.get('/v1/events/?type=nonsense', web)).status).toBe(422);
  });

  test('GraphQL publishes events read-only', async () => {
    const res = await app.post('/graphql', { query: '{ __schema { mutationType { fields { name } } } }' }, { session: admin.session });
    const names: string[] = res.body.data.__schema.mutationType.fields.map((f: { name: string }) => f.name);
    expect(names.filter((n) => /event/i.test(n))).toEqual([]);
  });
});
