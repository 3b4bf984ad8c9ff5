// The authorization rules at the SQL level (SPEC §5, §8): direct connections as the
// API's login role (rowgate_authenticator), switching per transaction to a subject
// role with transaction-local settings the way the server does, then querying tables
// and the rule functions directly. Also: the private schema is out of every API role's
// reach, and a session of any other login role that sets the subject settings by hand
// gains nothing.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { CredentialKind } from '../src/auth/tokens.ts';
import { withDatabase } from './database-server.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

type Kind = 'user' | 'organization' | 'customer' | 'member';
interface Subject {
  kind: Kind;
  id: string;
  scopes?: string[];
  /** the credential's kind (rowgate.credential_kind); by default the usual one of the subject kind */
  credential?: CredentialKind;
}
/** what `as` sets when a subject names no credential: a User signs in with a web session */
const DEFAULT_CREDENTIAL: Record<Kind, CredentialKind> = {
  user: 'web_session',
  organization: 'organization_access_token',
  customer: 'customer_session',
  member: 'member_session',
};

let app: TestApp;
let authenticator: pg.Pool;
let allScopes: string[];
let u: Record<'adminA' | 'memberA' | 'financeA' | 'removedA' | 'outsider' | 'adminB', TestUser>;
let A: string, B: string, C: string;
let accountA: string;
let productsA: string[], productsB: string[];
let custA: string, seatA: string;
let transactionsA: string[], transactionsB: string[];

const REASON = {
  noAccount: 'Organization has no account',
  financeRead: 'Only the account admin can access financial information',
  financeWrite: 'Only the account admin can manage financial information',
  notPermitted: 'Not permitted',
  onlyUsersMembers: 'Only users can manage members',
  onlyUsersTokens: 'Only users can manage access tokens',
  manageMembers: "You don't have permission to manage members",
  writeProducts: "You don't have permission to write products",
};
/** "You don't have permission to <verb> <things>" for each permission of rowgate.permissions */
const PERMISSION_REASONS: Record<string, string> = {
  'organization:manage': "You don't have permission to manage the organization",
  'members:manage': "You don't have permission to manage members",
  'finance:manage': "You don't have permission to manage financial information",
  'finance:read': "You don't have permission to read financial information",
  'access_tokens:manage': "You don't have permission to manage access tokens",
  'products:write': "You don't have permission to write products",
  'customers:write': "You don't have permission to write customers",
  'orders:write': "You don't have permission to write orders",
};

/** Runs `work` in a transaction of rowgate_authenticator that has become `subject`, as the server does; always rolled back. */
async function as<T>(subject: Subject, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await authenticator.connect();
  try {
    await client.query('begin');
    await client.query(`set local role ${pg.escapeIdentifier(`rowgate_${subject.kind}`)}`);
    await client.query(
      `select set_config('rowgate.subject_kind', $1, true), set_config('rowgate.subject_id', $2, true),
              set_config('rowgate.scopes', $3, true), set_config('rowgate.credential_kind', $4, true)`,
      [subject.kind, subject.id, (subject.scopes ?? allScopes).join(' '), subject.credential ?? DEFAULT_CREDENTIAL[subject.kind]],
    );
    return await work(client);
  } finally {
    await client.query('rollback').catch(() => {});
    client.release();
  }
}
const user = (who: keyof typeof u): Subject => ({ kind: 'user', id: u[who].id });
const organization = (id: string): Subject => ({ kind: 'organization', id });

async function one<T = any>(client: pg.ClientBase, text: string, values: unknown[] = []): Promise<T> {
  return (await client.query(text, values)).rows[0] as T;
}
const ids = async (client: pg.ClientBase, text: string, values: unknown[] = []) =>
  (await client.query<{ id: string }>(text, values)).rows.map((r) => r.id).sort();
const sorted = (list: string[]) => [...list].sort();

beforeAll(async () => {
  app = await startTestApp();
  authenticator = new pg.Pool({ connectionString: app.authenticatorUrl, max: 2 });
  [{ all_scopes: allScopes }] = (await app.sql('select rowgate_private.all_scopes()')) as [{ all_scopes: string[] }];
  u = {
    adminA: await app.user(),
    memberA: await app.user(),
    financeA: await app.user(),
    removedA: await app.user(),
    outsider: await app.user(),
    adminB: await app.user(),
  };
  A = (await app.organization(u.adminA.id)).id;
  B = (await app.organization(u.adminB.id)).id;
  C = (await app.organization(u.adminA.id)).id; // no account
  await app.membership(A, u.memberA.id, 'member');
  await app.membership(A, u.financeA.id, 'finance');
  await app.membership(A, u.removedA.id, 'admin');
  await app.sql('update rowgate.memberships set deleted_at = now() where organization_id = $1 and user_id = $2', [A, u.removedA.id]);
  accountA = await app.account(A, u.adminA.id);
  await app.account(B, u.adminB.id);
  productsA = [await app.product(A), await app.product(A, { is_archived: true })];
  productsB = [await app.product(B)];
  custA = await app.customer(A);
  const custB = await app.customer(B);
  seatA = await app.customerMember(custA);
  await app.order(productsA[0]!, custA, 'paid');
  await app.order(productsB[0]!, custB, 'paid');
  const tx = async (org: string) =>
    (await app.sql<{ id: string }>('select id from rowgate.transactions where organization_id = $1', [org])).map((r) => r.id);
  transactionsA = await tx(A);
  transactionsB = await tx(B);
  await app.sql(`insert into rowgate.payout_accounts (organization_id, type, country, currency) values ($1, 'stripe', 'US', 'usd')`, [A]);
  // secrets that must stay out of reach
  await app.pat(u.adminA.id, ['products_read']);
  await app.oat(A, ['products_read']);
  await app.oauthUserToken(u.adminA.id, ['products_read']);
  await app.customerSession(custA);
});
afterAll(async () => {
  await authenticator?.end();
  await app?.close();
});

describe('what a subject reaches (RLS)', () => {
  test('a member sees the products of A and none of B', async () => {
    await as(user('memberA'), async (c) => {
      expect(await ids(c, 'select id from rowgate.products')).toEqual(sorted(productsA));
      expect(await one(c, 'select count(*)::int as n from rowgate.products where organization_id = $1', [B])).toEqual({ n: 0 });
    });
  });

  test('the admin of B sees the products of B only', async () => {
    await as(user('adminB'), async (c) => expect(await ids(c, 'select id from rowgate.products')).toEqual(sorted(productsB)));
  });

  const tenantTables = [
    ['organizations', 'id'],
    ['memberships', 'organization_id'],
    ['accounts', 'organization_id'],
    ['organization_access_tokens', 'organization_id'],
    ['products', 'organization_id'],
    ['customers', 'organization_id'],
    ['customer_members', 'organization_id'],
    ['orders', 'organization_id'],
    ['transactions', 'organization_id'],
    ['payout_accounts', 'organization_id'],
  ] as const;

  test('the tenant tables hold rows of A (the fixture is meaningful)', async () => {
    for (const [table, column] of tenantTables) {
      const [row] = await app.sql(`select count(*)::int as n from rowgate.${table} where ${column} = $1`, [A]);
      expect(row!.n, table).toBeGreaterThan(0);
    }
  });

  for (const who of ['removedA', 'outsider'] as const) {
    test.each(tenantTables.map(([table, column]) => ({ table, column })))(
      `${who} sees no row of A in rowgate.$table`,
      async ({ table, column }) => {
        await as(user(who), async (c) => {
          expect(await one(c, `select count(*)::int as n from rowgate.${table} where ${column} = $1`, [A])).toEqual({ n: 0 });
        });
      },
    );
    test(`${who} reaches no organization`, async () => {
      await as(user(who), async (c) => {
        expect(await one(c, 'select rowgate_hidden.current_organization_ids() as ids')).toEqual({ ids: [] });
        // the users table shows itself only, and it has no colleagues
        expect(await ids(c, 'select id from rowgate.users')).toEqual([u[who].id]);
        expect(await ids(c, 'select id from rowgate.colleagues')).toEqual([]);
      });
    });
  }

  test('the removed member is not among the members a member of A sees', async () => {
    await as(user('memberA'), async (c) => {
      const rows = await c.query<{ user_id: string }>('select user_id from rowgate.memberships where organization_id = $1', [A]);
      expect(rows.rows.map((r) => r.user_id).sort()).toEqual(sorted([u.adminA.id, u.memberA.id, u.financeA.id]));
      expect(await ids(c, 'select id from rowgate.colleagues')).toEqual(sorted([u.adminA.id, u.memberA.id, u.financeA.id]));
      // the users table shows the member itself only: colleagues are names and e-mails (rowgate.colleagues)
      expect(await ids(c, 'select id from rowgate.users')).toEqual([u.memberA.id]);
    });
  });

  test("transactions: a member sees none, finance and admin see A's, an organization its own", async () => {
    await as(user('memberA'), async (c) => expect(await ids(c, 'select id from rowgate.transactions')).toEqual([]));
    await as(user('financeA'), async (c) => expect(await ids(c, 'select id from rowgate.transactions')).toEqual(sorted(transactionsA)));
    await as(user('adminA'), async (c) => expect(await ids(c, 'select id from rowgate.transactions')).toEqual(sorted(transactionsA)));
    await as(organization(A), async (c) => expect(await ids(c, 'select id from rowgate.transactions')).toEqual(sorted(transactionsA)));
    await as(organization(B), async (c) => expect(await ids(c, 'select id from rowgate.transactions')).toEqual(sorted(transactionsB)));
  });

  test('accounts: the account admin and the organization; payout accounts: the account admin with a web session only', async () => {
    const count =
      'select (select count(*)::int from rowgate.accounts where organization_id = $1) as accounts, (select count(*)::int from rowgate.payout_accounts where organization_id = $1) as payouts';
    await as(user('adminA'), async (c) => expect(await one(c, count, [A])).toEqual({ accounts: 1, payouts: 1 }));
    // payout accounts are web payouts read (SPEC §4): no token reads them, whatever its scopes
    for (const credential of ['personal_access_token', 'oauth2_user_token'] as const) {
      await as({ ...user('adminA'), credential }, async (c) =>
        expect(await one(c, count, [A]), credential).toEqual({ accounts: 1, payouts: 0 }),
      );
    }
    for (const credential of ['organization_access_token', 'oauth2_organization_token'] as const) {
      await as({ ...organization(A), credential }, async (c) =>
        expect(await one(c, count, [A]), credential).toEqual({ accounts: 1, payouts: 0 }),
      );
    }
    for (const who of ['memberA', 'financeA'] as const) {
      await as(user(who), async (c) => expect(await one(c, count, [A]), who).toEqual({ accounts: 0, payouts: 0 }));
    }
  });

  test('a customer sees itself and its own orders; its seat likewise', async () => {
    // portal sessions carry the portal scopes (rowgate_private.authenticate)
    const portal = ['customer_portal_read', 'customer_portal_write'];
    for (const subject of [
      { kind: 'customer', id: custA, scopes: portal },
      { kind: 'member', id: seatA, scopes: portal },
    ] as Subject[]) {
      await as(subject, async (c) => {
        expect(await ids(c, 'select id from rowgate.customers')).toEqual([custA]);
        const orders = await c.query<{ customer_id: string }>('select customer_id from rowgate.orders');
        expect(orders.rows.map((r) => r.customer_id)).toEqual([custA]);
        expect(await one(c, 'select rowgate_hidden.current_organization_ids() as ids')).toEqual({ ids: [] });
      });
    }
  });

  test('writes follow the role permission: finance cannot touch products, a member can', async () => {
    await as(user('financeA'), async (c) => {
      expect((await c.query('update rowgate.products set name = $2 where organization_id = $1', [A, 'x'])).rowCount).toBe(0);
    });
    await as(user('financeA'), async (c) => {
      await expect(
        c.query(`insert into rowgate.products (organization_id, name, price_amount, price_currency) values ($1, 'x', 1, 'usd')`, [A]),
      ).rejects.toMatchObject({ code: '42501', message: expect.stringMatching(/row-level security/) });
    });
    await as(user('memberA'), async (c) => {
      expect((await c.query('update rowgate.products set name = $2 where organization_id = $1', [A, 'x'])).rowCount).toBe(productsA.length);
      expect((await c.query('update rowgate.products set name = $2 where organization_id = $1', [B, 'x'])).rowCount).toBe(0);
    });
  });
});

describe('rowgate_hidden.current_organization_ids', () => {
  const cases: { who: string; subject: () => Subject; permission: string | null; expected: () => string[] }[] = [
    { who: 'memberA', subject: () => user('memberA'), permission: 'finance:read', expected: () => [] },
    { who: 'financeA', subject: () => user('financeA'), permission: 'finance:read', expected: () => [A] },
    { who: 'adminA', subject: () => user('adminA'), permission: 'finance:read', expected: () => [A, C] },
    { who: 'removedA (was admin)', subject: () => user('removedA'), permission: 'finance:read', expected: () => [] },
    { who: 'memberA', subject: () => user('memberA'), permission: null, expected: () => [A] },
    { who: 'memberA', subject: () => user('memberA'), permission: 'products:write', expected: () => [A] },
    { who: 'financeA', subject: () => user('financeA'), permission: 'products:write', expected: () => [] },
    { who: 'adminA', subject: () => user('adminA'), permission: null, expected: () => [A, C] },
    {
      who: 'organization A (bypasses the permission filter)',
      subject: () => organization(A),
      permission: 'finance:read',
      expected: () => [A],
    },
    { who: 'organization A', subject: () => organization(A), permission: null, expected: () => [A] },
    { who: 'a customer', subject: () => ({ kind: 'customer', id: custA }), permission: null, expected: () => [] },
    { who: 'a member seat', subject: () => ({ kind: 'member', id: seatA }), permission: null, expected: () => [] },
  ];
  test.each(cases.map((c) => ({ ...c, p: c.permission ?? '(none)' })))('$who, permission $p', async (c) => {
    await as(c.subject(), async (client) => {
      const row = await one<{ ids: string[] }>(
        client,
        c.permission === null
          ? 'select rowgate_hidden.current_organization_ids() as ids'
          : 'select rowgate_hidden.current_organization_ids($1) as ids',
        c.permission === null ? [] : [c.permission],
      );
      expect(sorted(row.ids)).toEqual(sorted(c.expected()));
    });
  });
});

describe('policy functions return the exact denial reasons (SPEC §5)', () => {
  test('the permissions table words every reason', async () => {
    const rows = await app.sql<{ name: string; reason: string }>(
      `select name, format('You don''t have permission to %s %s', verb, things) as reason from rowgate.permissions`,
    );
    expect(Object.fromEntries(rows.map((r) => [r.name, r.reason]))).toEqual(PERMISSION_REASONS);
  });

  test.each(Object.keys(PERMISSION_REASONS))('role_permission_denial(A, %s) per subject', async (permission) => {
    const roleGrants: Record<string, string[]> = {
      memberA: ['products:write', 'customers:write', 'orders:write'],
      financeA: ['finance:read'],
      adminA: Object.keys(PERMISSION_REASONS),
    };
    for (const [who, granted] of Object.entries(roleGrants)) {
      await as(user(who as keyof typeof u), async (c) => {
        const row = await one(c, 'select rowgate_hidden.role_permission_denial($1, $2) as denial', [A, permission]);
        expect(row.denial, who).toBe(granted.includes(permission) ? null : PERMISSION_REASONS[permission]);
      });
    }
    await as(organization(A), async (c) =>
      expect(await one(c, 'select rowgate_hidden.role_permission_denial($1, $2) as denial', [A, permission])).toEqual({ denial: null }),
    );
  });

  // any other subject: 'Not permitted' (the functions are granted to these roles, and say so)
  test.each(['customer', 'member'] as const)('role_permission_denial and policy_denial for a %s subject → Not permitted', async (kind) => {
    const subject: Subject = { kind, id: kind === 'customer' ? custA : seatA };
    for (const permission of Object.keys(PERMISSION_REASONS)) {
      await as(subject, async (c) =>
        expect(
          await one(
            c,
            'select rowgate_hidden.role_permission_denial($1, $2) as role_permission, rowgate_hidden.policy_denial($1, $2) as policy',
            [A, permission],
          ),
          permission,
        ).toEqual({ role_permission: REASON.notPermitted, policy: REASON.notPermitted }),
      );
    }
  });

  const policies: { name: string; subject: () => Subject; org: () => string; sql: string; denial: string | null }[] = [
    { name: 'finance-read, the account admin', subject: () => user('adminA'), org: () => A, sql: 'finance_read_denial($1)', denial: null },
    {
      name: 'finance-read, a member',
      subject: () => user('memberA'),
      org: () => A,
      sql: 'finance_read_denial($1)',
      denial: REASON.financeRead,
    },
    {
      name: 'finance-read, finance role (not the account admin)',
      subject: () => user('financeA'),
      org: () => A,
      sql: 'finance_read_denial($1)',
      denial: REASON.financeRead,
    },
    {
      name: 'finance-read, an organization without account',
      subject: () => user('adminA'),
      org: () => C,
      sql: 'finance_read_denial($1)',
      denial: REASON.noAccount,
    },
    {
      name: 'finance-read, organization subject',
      subject: () => organization(A),
      org: () => A,
      sql: 'finance_read_denial($1)',
      denial: null,
    },
    {
      name: 'finance-read, organization subject without account',
      subject: () => organization(C),
      org: () => C,
      sql: 'finance_read_denial($1)',
      denial: null,
    },
    {
      name: 'finance-read, a customer',
      subject: () => ({ kind: 'customer', id: custA }),
      org: () => A,
      sql: 'finance_read_denial($1)',
      denial: REASON.notPermitted,
    },
    {
      name: 'finance-write, the account admin',
      subject: () => user('adminA'),
      org: () => A,
      sql: 'finance_write_denial($1)',
      denial: null,
    },
    {
      name: 'finance-write, finance role',
      subject: () => user('financeA'),
      org: () => A,
      sql: 'finance_write_denial($1)',
      denial: REASON.financeWrite,
    },
    {
      name: 'finance-write, an organization without account',
      subject: () => user('adminA'),
      org: () => C,
      sql: 'finance_write_denial($1)',
      denial: REASON.noAccount,
    },
    {
      name: 'finance-write, organization subject',
      subject: () => organization(A),
      org: () => A,
      sql: 'finance_write_denial($1)',
      denial: REASON.notPermitted,
    },
    { name: 'members-management, admin', subject: () => user('adminA'), org: () => A, sql: 'members_management_denial($1)', denial: null },
    {
      name: 'members-management, member',
      subject: () => user('memberA'),
      org: () => A,
      sql: 'members_management_denial($1)',
      denial: REASON.manageMembers,
    },
    {
      name: 'members-management, organization subject',
      subject: () => organization(A),
      org: () => A,
      sql: 'members_management_denial($1)',
      denial: REASON.onlyUsersMembers,
    },
    {
      name: 'access-token management, organization subject',
      subject: () => organization(A),
      org: () => A,
      sql: 'access_token_management_denial($1)',
      denial: REASON.onlyUsersTokens,
    },
    {
      name: 'access-token management, finance role',
      subject: () => user('financeA'),
      org: () => A,
      sql: 'access_token_management_denial($1)',
      denial: PERMISSION_REASONS['access_tokens:manage']!,
    },
    {
      name: 'access-token management, admin',
      subject: () => user('adminA'),
      org: () => A,
      sql: 'access_token_management_denial($1)',
      denial: null,
    },
    { name: 'policy_denial by name: read', subject: () => user('financeA'), org: () => A, sql: `policy_denial($1, 'read')`, denial: null },
    {
      name: 'policy_denial by name: finance_write',
      subject: () => user('memberA'),
      org: () => A,
      sql: `policy_denial($1, 'finance_write')`,
      denial: REASON.financeWrite,
    },
    {
      name: 'policy_denial by name: a role permission',
      subject: () => user('financeA'),
      org: () => A,
      sql: `policy_denial($1, 'products:write')`,
      denial: REASON.writeProducts,
    },
  ];
  test.each(policies)('$name', async (p) => {
    await as(p.subject(), async (c) => {
      expect(await one(c, `select rowgate_hidden.${p.sql} as denial`, [p.org()])).toEqual({ denial: p.denial });
    });
  });

  test('portal writes: a customer may, a member seat may not', async () => {
    await as({ kind: 'customer', id: custA }, async (c) =>
      expect(await one(c, 'select rowgate_hidden.portal_write_denial() as denial')).toEqual({ denial: null }),
    );
    await as({ kind: 'member', id: seatA }, async (c) =>
      expect(await one(c, 'select rowgate_hidden.portal_write_denial() as denial')).toEqual({
        denial: 'Members have read-only access to the customer portal',
      }),
    );
  });
});

describe('rowgate_hidden.authorize: resolve, reach, policy in one call', () => {
  const cases: {
    name: string;
    subject: () => Subject;
    args: () => [string, string, string];
    organization: () => string | null;
    denial?: string | null;
  }[] = [
    {
      name: 'an unknown id → not found',
      subject: () => user('adminA'),
      args: () => ['product', randomUUID(), 'products:write'],
      organization: () => null,
    },
    {
      name: "another organization's product → not found",
      subject: () => user('memberA'),
      args: () => ['product', productsB[0]!, 'read'],
      organization: () => null,
    },
    {
      name: 'the removed member → not found',
      subject: () => user('removedA'),
      args: () => ['product', productsA[0]!, 'read'],
      organization: () => null,
    },
    {
      name: 'a customer → not found',
      subject: () => ({ kind: 'customer', id: custA }),
      args: () => ['product', productsA[0]!, 'read'],
      organization: () => null,
    },
    // a role-permission policy for a customer: an answer (not found), not an error
    {
      name: 'a customer, a write policy → not found',
      subject: () => ({ kind: 'customer', id: custA }),
      args: () => ['product', productsA[0]!, 'products:write'],
      organization: () => null,
    },
    {
      name: 'a member seat, a write policy → not found',
      subject: () => ({ kind: 'member', id: seatA }),
      args: () => ['customer', custA, 'customers:write'],
      organization: () => null,
    },
    {
      name: 'finance role writing a product → denial',
      subject: () => user('financeA'),
      args: () => ['product', productsA[0]!, 'products:write'],
      organization: () => A,
      denial: REASON.writeProducts,
    },
    {
      name: 'member writing a product → allowed',
      subject: () => user('memberA'),
      args: () => ['product', productsA[0]!, 'products:write'],
      organization: () => A,
      denial: null,
    },
    {
      name: 'member reading the account → denial',
      subject: () => user('memberA'),
      args: () => ['account', accountA, 'finance_read'],
      organization: () => A,
      denial: REASON.financeRead,
    },
    {
      name: 'admin, organization without account → denial',
      subject: () => user('adminA'),
      args: () => ['organization', C, 'finance_read'],
      organization: () => C,
      denial: REASON.noAccount,
    },
    {
      name: 'organization token managing members → denial',
      subject: () => organization(A),
      args: () => ['organization', A, 'members_management'],
      organization: () => A,
      denial: REASON.onlyUsersMembers,
    },
    {
      name: 'organization token, another organization → not found',
      subject: () => organization(B),
      args: () => ['organization', A, 'read'],
      organization: () => null,
    },
  ];
  test.each(cases)('$name', async (k) => {
    await as(k.subject(), async (c) => {
      const rows = (await c.query('select organization_id, denial from rowgate_hidden.authorize($1, $2, $3)', k.args())).rows;
      expect(rows).toHaveLength(1);
      expect(rows[0].organization_id).toBe(k.organization());
      if (k.organization() !== null) expect(rows[0].denial).toBe(k.denial);
    });
  });

  test('rowgate.delete_resource runs the same checks: 404 out of reach, 403 with the reason, the row untouched', async () => {
    await as(user('outsider'), async (c) =>
      expect(c.query(`select rowgate.delete_resource('product', $1)`, [productsA[0]])).rejects.toMatchObject({ code: 'RG404' }),
    );
    await as(user('financeA'), async (c) =>
      expect(c.query(`select rowgate.delete_resource('product', $1)`, [productsA[0]])).rejects.toMatchObject({
        code: 'RG403',
        message: REASON.writeProducts,
      }),
    );
    await as(organization(A), async (c) =>
      expect(
        c.query(`select rowgate.delete_resource('membership', (select id from rowgate.memberships where user_id = $1))`, [u.memberA.id]),
      ).rejects.toMatchObject({
        code: 'RG403',
        message: REASON.onlyUsersMembers,
      }),
    );
    expect(await app.sql('select deleted_at from rowgate.products where id = $1', [productsA[0]])).toEqual([{ deleted_at: null }]);
  });
});

describe("secrets are out of every API role's reach", () => {
  const privateTables = ['sessions', 'access_token_hashes', 'oauth2_access_tokens', 'scopes', 'platform_admins'];
  const subjects: { kind: Kind; id: () => string }[] = [
    { kind: 'user', id: () => u.adminA.id },
    { kind: 'organization', id: () => A },
    { kind: 'customer', id: () => custA },
    { kind: 'member', id: () => seatA },
  ];
  test.each(subjects.flatMap((s) => privateTables.map((table) => ({ ...s, table }))))(
    'rowgate_$kind cannot read rowgate_private.$table (42501)',
    async ({ kind, id, table }) => {
      await as({ kind, id: id() }, async (c) =>
        expect(c.query(`select * from rowgate_private.${table}`)).rejects.toMatchObject({ code: '42501' }),
      );
    },
  );

  test('rowgate_user cannot call rowgate_private.authenticate (42501)', async () => {
    await as(user('adminA'), async (c) =>
      expect(c.query(`select * from rowgate_private.authenticate('web_session', '\\x00'::bytea)`)).rejects.toMatchObject({ code: '42501' }),
    );
  });

  test.each(privateTables)('the authenticator itself, before switching role, cannot read rowgate_private.%s (42501)', async (table) => {
    const client = await authenticator.connect();
    try {
      await expect(client.query(`select * from rowgate_private.${table}`)).rejects.toMatchObject({ code: '42501' });
    } finally {
      client.release();
    }
  });

  test('the authenticator becomes subject roles only', async () => {
    for (const role of ['rowgate_owner', 'rowgate_analyst', 'postgres']) {
      const client = await authenticator.connect();
      try {
        await client.query('begin');
        await expect(client.query(`set local role ${role}`), role).rejects.toMatchObject({ code: '42501' });
      } finally {
        await client.query('rollback');
        client.release();
      }
    }
  });

  test('no table outside rowgate_private holds a token hash; a user reads its PATs without one', async () => {
    const hashColumns = await app.sql(
      `select table_schema, table_name, column_name from information_schema.columns
       where column_name like '%hash%' and table_schema like 'rowgate%' order by 1, 2, 3`,
    );
    expect(hashColumns.every((c: { table_schema: string }) => c.table_schema === 'rowgate_private')).toBe(true);
    expect(hashColumns.length).toBeGreaterThan(0);
    // the columns rowgate_user may read of its PATs: metadata only
    const granted = await app.sql<{ column_name: string }>(
      `select column_name from information_schema.column_privileges
       where grantee = 'rowgate_user' and table_schema = 'rowgate' and table_name = 'personal_access_tokens' and privilege_type = 'SELECT'
       order by 1`,
    );
    expect(granted.map((g) => g.column_name)).toEqual([
      'allowed_ips',
      'api_version',
      'comment',
      'created_at',
      'expires_at',
      'id',
      'last_used_at',
      'organization_ids',
      'scopes',
      'updated_at',
      'user_id',
    ]);
    await as(user('adminA'), async (c) => {
      const result = await c.query(
        'select id, user_id, comment, scopes, expires_at, last_used_at, created_at, updated_at from rowgate.personal_access_tokens',
      );
      expect(result.rows.map((r) => r.user_id)).toEqual([u.adminA.id]);
    });
    await as(user('adminA'), async (c) =>
      expect(c.query('select * from rowgate.personal_access_tokens')).rejects.toMatchObject({ code: '42501' }),
    );
    // the users table: the API roles see public columns only; the platform-admin flag is not one of its columns
    await as(organization(A), async (c) => expect(c.query('select is_admin from rowgate.users')).rejects.toMatchObject({ code: '42703' }));
    await as(user('adminA'), async (c) => expect(c.query('select deleted_at from rowgate.users')).rejects.toMatchObject({ code: '42501' }));
  });
});

describe('subject settings are trusted only in sessions of rowgate_authenticator (SPEC §8)', () => {
  const superuserUrl = () => inject('superuserUrl');
  const created: string[] = [];

  /** A throwaway LOGIN role of this test, granted `grants`, and a client connected as it. */
  async function loginRole(grants: string[]) {
    const name = `spoof_${randomBytes(6).toString('hex')}`;
    const password = randomBytes(18).toString('base64url');
    const admin = new pg.Client({ connectionString: withDatabase(superuserUrl(), app.database) });
    await admin.connect();
    try {
      await admin.query(`create role ${name} login password ${pg.escapeLiteral(password)}`);
      created.push(name);
      for (const g of grants) await admin.query(`grant ${pg.escapeIdentifier(g)} to ${name}`);
      await admin.query(`grant connect on database ${pg.escapeIdentifier(app.database)} to ${name}`);
    } finally {
      await admin.end();
    }
    const client = new pg.Client({ connectionString: withDatabase(superuserUrl(), app.database, { name, password }) });
    await client.connect();
    return client;
  }

  afterAll(async () => {
    if (!created.length) return;
    const admin = new pg.Client({ connectionString: withDatabase(superuserUrl(), app.database) });
    await admin.connect();
    try {
      for (const name of created) {
        await admin.query(`drop owned by ${name}`);
        await admin.query(`drop role ${name}`);
      }
      const left = await admin.query(`select rolname from pg_roles where rolname = any($1)`, [created]);
      expect(left.rows).toEqual([]);
    } finally {
      await admin.end();
    }
  });

  const spoof = async (client: pg.Client, subjectId: string) => {
    await client.query(
      `select set_config('rowgate.subject_kind', 'user', true), set_config('rowgate.subject_id', $1, true),
              set_config('rowgate.scopes', $2, true), set_config('rowgate.credential_kind', 'web_session', true)`,
      [subjectId, allScopes.join(' ')],
    );
  };
  const seesNothing = async (client: pg.Client) => {
    expect(
      await one(
        client,
        `select rowgate_hidden.current_subject_kind() as kind, rowgate_hidden.current_subject_id() as id,
                rowgate_hidden.current_user_id() as user_id, rowgate_hidden.current_scopes() as scopes,
                rowgate_hidden.current_organization_ids() as organizations, rowgate_hidden.current_credential_kind() as credential`,
      ),
    ).toEqual({ kind: null, id: null, user_id: null, scopes: null, organizations: [], credential: null });
    for (const table of [
      'organizations',
      'memberships',
      'products',
      'customers',
      'orders',
      'transactions',
      'accounts',
      'payout_accounts',
      'users',
    ]) {
      expect(await one(client, `select count(*)::int as n from rowgate.${table}`), table).toEqual({ n: 0 });
    }
  };

  test('control: the same settings in an authenticator session reach A', async () => {
    await as(user('adminA'), async (c) => {
      expect(await one(c, 'select rowgate_hidden.current_user_id() as id')).toEqual({ id: u.adminA.id });
      expect(await one(c, 'select count(*)::int as n from rowgate.products')).toEqual({ n: productsA.length });
    });
  });

  test('a login role granted rowgate_user that sets the settings by hand sees nothing', async () => {
    const client = await loginRole(['rowgate_user']);
    try {
      await client.query('begin');
      await client.query('set local role rowgate_user');
      await spoof(client, u.adminA.id);
      await seesNothing(client);
      // its hand-set scopes are not trusted either: the write function refuses on the scope
      await expect(client.query(`select rowgate.create_organization('Spoof', 'spoof-org')`)).rejects.toMatchObject({
        code: 'RGSCO',
      });
      await client.query('rollback');
      // nor can it become the authenticator
      await expect(client.query('set role rowgate_authenticator')).rejects.toMatchObject({ code: '42501' });
    } finally {
      await client.end();
    }
  });

  test('even a login role that may become rowgate_authenticator gains nothing (session_user is what counts)', async () => {
    const client = await loginRole(['rowgate_authenticator']);
    try {
      await client.query('begin');
      await client.query('set local role rowgate_authenticator');
      await client.query('set local role rowgate_user');
      await spoof(client, u.adminA.id);
      expect(await one(client, 'select current_user::text as current, session_user::text as session')).toMatchObject({
        current: 'rowgate_user',
      });
      await seesNothing(client);
      await client.query('rollback');
    } finally {
      await client.end();
    }
  });

  test('a login role granted rowgate_analyst but bound to no user sees nothing', async () => {
    const client = await loginRole(['rowgate_analyst']);
    try {
      await client.query('begin');
      await spoof(client, u.adminA.id);
      await seesNothing(client);
      await client.query('rollback');
    } finally {
      await client.end();
    }
  });

  test('an analyst bound to memberA who names adminA by hand is still memberA, read-only', async () => {
    const client = await loginRole(['rowgate_analyst']);
    try {
      const login = (await one<{ login: string }>(client, 'select session_user::text as login')).login;
      await app.sql('insert into rowgate_private.analysts (login, user_id) values ($1, $2)', [login, u.memberA.id]);
      await client.query('begin');
      await spoof(client, u.adminA.id);
      const who = await one(
        client,
        'select rowgate_hidden.current_user_id() as user_id, rowgate_hidden.current_organization_ids() as organizations, rowgate_hidden.has_scope($1) as can_write',
        ['products_write'],
      );
      expect(who).toEqual({ user_id: u.memberA.id, organizations: [A], can_write: false });
      expect(await ids(client, 'select id from rowgate.products')).toEqual(sorted(productsA));
      expect(await ids(client, 'select id from rowgate.transactions')).toEqual([]); // the member role lacks finance:read
      await client.query('rollback');
      for (const statement of [
        `update rowgate.products set name = 'x'`,
        'select * from rowgate_private.analysts',
        'select * from rowgate_private.sessions',
        // rowgate_hidden.authorize() answers analysts now (rowgate.check, SPEC §20), only for
        // organizations they reach; what names the organization of any id stays refused
        `select rowgate_hidden.resource_organization_id('product', '${productsA[0]}')`,
      ]) {
        await expect(client.query(statement), statement).rejects.toMatchObject({ code: '42501' });
      }
    } finally {
      await client.end();
    }
  });

  test('the owner cannot become rowgate_user, and its own settings name nobody', async () => {
    const owner = new pg.Client({ connectionString: app.ownerUrl });
    await owner.connect();
    try {
      await expect(owner.query('set role rowgate_user')).rejects.toMatchObject({ code: '42501' });
      await owner.query('begin');
      await spoof(owner, u.adminA.id);
      expect(
        await one(
          owner,
          'select rowgate_hidden.current_subject_kind() as kind, rowgate_hidden.current_user_id() as id, rowgate_hidden.current_organization_ids() as organizations',
        ),
      ).toEqual({ kind: null, id: null, organizations: [] });
      await owner.query('rollback');
    } finally {
      await owner.end();
    }
  });
});
