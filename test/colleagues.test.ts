// What every interface shows of another user (SPEC §13, §15):
// what REST's members list names, the id, the name and the e-mail, and nothing
// more. rowgate.users shows the subject itself only; rowgate.colleagues (GraphQL
// `Colleague`) shows the users who share an organization with it. The matrix runs
// every subject × interface and compares each with REST; then the side channels a
// whole row had (the avatar, the timestamps that move with the platform-admin
// flag) and the view's barrier against a caller's own conditions.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { grantAnalyst, revokeAnalyst } from '../src/db/analysts.ts';
import { startTestApp, type RequestOptions, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;

// A: adminA, memberA, financeA and a platform admin; B: adminB and memberA (so
// memberA's colleagues span both); C: outsider alone. goneA was a member of A and
// deleted their account.
const w = {} as Record<'adminA' | 'memberA' | 'financeA' | 'platformAdmin' | 'adminB' | 'outsider' | 'goneA', TestUser> & {
  A: string;
  B: string;
  C: string;
};

interface Person {
  id: string;
  email: string;
  name: string | null;
}
const byId = (a: Person, b: Person) => a.id.localeCompare(b.id);

beforeAll(async () => {
  app = await startTestApp();
  const everybody = ['adminA', 'memberA', 'financeA', 'platformAdmin', 'adminB', 'outsider', 'goneA'] as const;
  for (const who of everybody) w[who] = await app.user({ name: `User ${who}`, admin: who === 'platformAdmin' });
  await app.sql(`update rowgate.users set avatar_url = 'https://avatars.example/' || id where id = any($1)`, [
    everybody.map((who) => w[who].id),
  ]);
  w.A = (await app.organization(w.adminA.id)).id;
  w.B = (await app.organization(w.adminB.id)).id;
  w.C = (await app.organization(w.outsider.id)).id;
  await app.membership(w.A, w.memberA.id, 'member');
  await app.membership(w.A, w.financeA.id, 'finance');
  await app.membership(w.A, w.platformAdmin.id, 'admin');
  await app.membership(w.A, w.goneA.id, 'member');
  await app.membership(w.B, w.memberA.id, 'member');
  await app.account(w.A, w.adminA.id);
  await app.sql('update rowgate.users set deleted_at = now() where id = $1', [w.goneA.id]);
});
afterAll(async () => {
  await app?.close();
});

const person = (who: keyof typeof w & string): Person => {
  const u = w[who as 'adminA'];
  return { id: u.id, email: u.email, name: `User ${who}` };
};
const people = (...who: (keyof typeof w & string)[]) => who.map(person).sort(byId);

async function graphql(query: string, auth: RequestOptions) {
  const res = await app.request('POST', '/graphql', { ...auth, headers: { accept: 'application/json' }, body: { query } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data;
}

/** REST: every member of every organization the credential lists, as the members list names them */
async function restColleagues(auth: RequestOptions): Promise<Person[]> {
  const found = new Map<string, Person>();
  for (const organization of [w.A, w.B, w.C]) {
    const res = await app.get(`/v1/organizations/${organization}/members?limit=100`, auth);
    expect([200, 401, 403, 404], JSON.stringify(res.body)).toContain(res.status);
    if (res.status !== 200) continue;
    for (const m of res.body.items) found.set(m.user_id, { id: m.user_id, email: m.email, name: m.name });
  }
  return [...found.values()].sort(byId);
}

async function graphqlColleagues(auth: RequestOptions): Promise<Person[]> {
  const got = await graphql('{ allColleagues { nodes { rowId email name } } }', auth);
  return got.allColleagues.nodes
    .map((n: { rowId: string; email: string; name: string }) => ({ id: n.rowId, email: n.email, name: n.name }))
    .sort(byId);
}

/** the members GraphQL relates to their memberships and to the account they administer */
async function graphqlRelated(auth: RequestOptions): Promise<Person[]> {
  const got = await graphql(
    `{ allMemberships { nodes { colleagueByUserId { rowId email name } } }
       allAccounts { nodes { colleagueByAdminId { rowId email name } } } }`,
    auth,
  );
  const found = new Map<string, Person>();
  const related = [
    ...got.allMemberships.nodes.map((n: { colleagueByUserId: unknown }) => n.colleagueByUserId),
    ...got.allAccounts.nodes.map((n: { colleagueByAdminId: unknown }) => n.colleagueByAdminId),
  ] as ({ rowId: string; email: string; name: string } | null)[];
  for (const c of related) if (c) found.set(c.rowId, { id: c.rowId, email: c.email, name: c.name });
  return [...found.values()].sort(byId);
}

/** every user GraphQL shows whole (`User`, with its avatar and timestamps), by any path */
async function graphqlWholeUsers(auth: RequestOptions): Promise<string[]> {
  const got = await graphql(
    `{ allUsers { nodes { rowId avatarUrl createdAt updatedAt } }
       allMemberships { nodes { userByUserId { rowId avatarUrl } } }
       allAccounts { nodes { userByAdminId { rowId avatarUrl } } } }`,
    auth,
  );
  const ids = new Set<string>(got.allUsers.nodes.map((n: { rowId: string }) => n.rowId));
  for (const n of got.allMemberships.nodes) if (n.userByUserId) ids.add(n.userByUserId.rowId);
  for (const n of got.allAccounts.nodes) if (n.userByAdminId) ids.add(n.userByAdminId.rowId);
  return [...ids].sort();
}

const analysts: string[] = [];
async function asAnalyst<T>(user: TestUser, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const login = `${inject('runId')}_coll_${randomBytes(3).toString('hex')}`;
  analysts.push(login);
  const granted = await grantAnalyst({ ownerUrl: app.ownerUrl, userId: user.id, login });
  const client = new pg.Client({ connectionString: granted.database_url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
afterAll(async () => {
  for (const login of analysts) await revokeAnalyst({ ownerUrl: app.ownerUrl, login }).catch(() => {});
});

describe('what each interface shows of other users: what REST names, no more', () => {
  const subjects: { name: string; auth: () => Promise<RequestOptions>; self: string | null; colleagues: () => Person[] }[] = [
    {
      name: "memberA's web session (members of A and B)",
      auth: async () => ({ session: w.memberA.session }),
      self: 'memberA',
      colleagues: () => people('adminA', 'memberA', 'financeA', 'platformAdmin', 'adminB'),
    },
    {
      name: "adminA's PAT with members_read and user:read",
      auth: async () => ({ token: await app.pat(w.adminA.id, ['members_read', 'user:read', 'organizations_read', 'payouts_read']) }),
      self: 'adminA',
      colleagues: () => people('adminA', 'memberA', 'financeA', 'platformAdmin'),
    },
    {
      name: "adminA's PAT with user:read only: itself, no colleague",
      auth: async () => ({ token: await app.pat(w.adminA.id, ['user:read', 'payouts_read']) }),
      self: 'adminA',
      colleagues: () => [],
    },
    {
      name: "adminA's PAT with members_read only: colleagues, not its own whole row",
      auth: async () => ({ token: await app.pat(w.adminA.id, ['members_read', 'payouts_read']) }),
      self: null,
      colleagues: () => people('adminA', 'memberA', 'financeA', 'platformAdmin'),
    },
    {
      name: "A's organization access token (nobody's self)",
      auth: async () => ({ token: await app.oat(w.A, ['members_read', 'payouts_read']) }),
      self: null,
      colleagues: () => people('adminA', 'memberA', 'financeA', 'platformAdmin'),
    },
    {
      name: "the outsider's web session (alone in C)",
      auth: async () => ({ session: w.outsider.session }),
      self: 'outsider',
      colleagues: () => people('outsider'),
    },
  ];

  test.each(subjects)('$name', async ({ auth: mint, self, colleagues }) => {
    const auth = await mint();
    const expected = colleagues();
    const rest = await restColleagues(auth);
    expect(rest, 'REST').toEqual(expected);
    expect(await graphqlColleagues(auth), 'GraphQL allColleagues').toEqual(expected);
    // through relations: the members of the memberships and the account's admin it reads, each a colleague
    const related = await graphqlRelated(auth);
    for (const c of related) expect(expected, 'GraphQL relations').toContainEqual(c);
    // and every colleague is one relation away (a membership names each)
    expect(related, 'GraphQL relations').toEqual(expected);
    // the whole row (avatar, timestamps) of nobody but the subject itself
    expect(await graphqlWholeUsers(auth), 'GraphQL User').toEqual(self ? [w[self as 'adminA'].id] : []);
  });

  test.each(['memberA', 'adminA', 'outsider'] as const)(
    "%s's analyst: the same colleagues, and a whole row of itself only",
    async (who) => {
      const expected = await restColleagues({ session: w[who].session });
      await asAnalyst(w[who], async (client) => {
        const colleagues = await client.query('select * from rowgate.colleagues');
        expect(colleagues.fields.map((f) => f.name)).toEqual(['id', 'email', 'name']);
        expect([...colleagues.rows].sort(byId)).toEqual(expected);
        const users = await client.query('select * from rowgate.users');
        expect(users.rows.map((r) => r.id)).toEqual([w[who].id]);
        // a join through the table finds nobody else's avatar
        const joined = await client.query('select u.avatar_url from rowgate.memberships m join rowgate.users u on u.id = m.user_id');
        const own = { avatar_url: `https://avatars.example/${w[who].id}` };
        expect(joined.rows).toEqual(who === 'memberA' ? [own, own] : [own]);
      });
    },
  );

  test("GraphQL's Colleague has the members list's fields and relations, nothing of the whole row", async () => {
    const got = await graphql('{ __type(name: "Colleague") { fields { name type { kind ofType { kind } } } } }', {
      session: w.memberA.session,
    });
    const scalars = got.__type.fields
      .filter((f: { type: { kind: string; ofType: { kind: string } | null } }) => (f.type.ofType ?? f.type).kind === 'SCALAR')
      .map((f: { name: string }) => f.name)
      .sort();
    expect(scalars).toEqual(['email', 'id', 'name', 'rowId']);
  });

  test("a deleted user is nobody's colleague, anywhere", async () => {
    const auth = { session: w.adminA.session };
    for (const list of [await restColleagues(auth), await graphqlColleagues(auth), await graphqlRelated(auth)]) {
      expect(list.map((p) => p.id)).not.toContain(w.goneA.id);
    }
    await asAnalyst(w.adminA, async (client) =>
      expect((await client.query('select id from rowgate.colleagues where id = $1', [w.goneA.id])).rows).toEqual([]),
    );
  });
});

describe('a deleted account leaves its organizations (migration 000028)', () => {
  /** the user ids of A's memberships, as REST, GraphQL and an analyst see them */
  async function membersOfA(viewer: TestUser) {
    const rest = await app.get(`/v1/organizations/${w.A}/members?limit=100`, { session: viewer.session });
    const graphqlAnswer = await graphql(`{ allMemberships(condition: { organizationId: "${w.A}" }) { totalCount nodes { userId } } }`, {
      session: viewer.session,
    });
    const analyst = await asAnalyst(viewer, async (client) =>
      (await client.query('select user_id from rowgate.memberships where organization_id = $1', [w.A])).rows.map((r) => r.user_id),
    );
    return {
      rest: rest.body.items.map((m: { user_id: string }) => m.user_id).sort(),
      restTotal: rest.body.pagination.total_count,
      graphql: graphqlAnswer.allMemberships.nodes.map((n: { userId: string }) => n.userId).sort(),
      graphqlTotal: graphqlAnswer.allMemberships.totalCount,
      analyst: analyst.sort(),
    };
  }

  test('REST, GraphQL and analysts list the same members, the deleted one in none; its removal is an event', async () => {
    const leaving = await app.user({ name: 'Leaving' });
    await app.membership(w.A, leaving.id, 'member');
    expect((await membersOfA(w.adminA)).graphql).toContain(leaving.id);
    expect((await app.delete('/v1/users/me', { session: leaving.session })).status).toBe(204);
    const seen = await membersOfA(w.adminA);
    expect(seen.rest).not.toContain(leaving.id);
    expect(seen.graphql).toEqual(seen.rest);
    expect(seen.analyst).toEqual(seen.rest);
    expect(seen.graphqlTotal).toBe(seen.restTotal);
    const events = await app.sql<{ type: string }>('select type from rowgate.events where organization_id = $1 and resource_id = $2', [
      w.A,
      leaving.id,
    ]);
    expect(events.map((e) => e.type)).toContain('membership.deleted');
  });

  test("an organization's last admin may still delete their account", async () => {
    const alone = await app.user({ name: 'Alone' });
    const organization = (await app.organization(alone.id)).id;
    expect((await app.delete('/v1/users/me', { session: alone.session })).status).toBe(204);
    const [left] = await app.sql<{ live: number }>(
      'select count(*)::int as live from rowgate.memberships where organization_id = $1 and deleted_at is null',
      [organization],
    );
    expect(left).toEqual({ live: 0 });
  });

  test('a live last admin still cannot be removed or demoted', async () => {
    const admin = await app.user({ name: 'Only admin' });
    const organization = (await app.organization(admin.id)).id;
    const removed = await app.delete(`/v1/organizations/${organization}/members/${admin.id}`, { session: admin.session });
    expect(removed.status, JSON.stringify(removed.body)).toBe(422);
    const demoted = await app.patch(
      `/v1/organizations/${organization}/members/${admin.id}`,
      { role: 'member' },
      { session: admin.session },
    );
    expect(demoted.status, JSON.stringify(demoted.body)).toBe(422);
  });

  test('an operator deleting the last admin in SQL ends its membership too', async () => {
    const admin = await app.user({ name: 'Deleted by an operator' });
    const organization = (await app.organization(admin.id)).id;
    await app.sql('update rowgate.users set deleted_at = now() where id = $1', [admin.id]);
    const [left] = await app.sql<{ live: number }>(
      'select count(*)::int as live from rowgate.memberships where organization_id = $1 and deleted_at is null',
      [organization],
    );
    expect(left).toEqual({ live: 0 });
  });
});

describe('side channels of the whole row', () => {
  test("giving or taking a colleague's platform-admin flag changes nothing a colleague reads", async () => {
    const read = () => asAnalyst(w.memberA, async (client) => (await client.query('select * from rowgate.colleagues order by id')).rows);
    const graphqlRead = () =>
      graphql(
        '{ allColleagues { nodes { rowId email name } } allMemberships { nodes { colleagueByUserId { name } userByUserId { updatedAt } } } }',
        { session: w.memberA.session },
      );
    const [before, graphqlBefore] = [await read(), await graphqlRead()];
    const updatedAt = async () =>
      (await app.sql<{ t: string }>('select updated_at::text as t from rowgate.users where id = $1', [w.platformAdmin.id]))[0]!.t;
    const since = await updatedAt();
    await app.sql('delete from rowgate_private.platform_admins where user_id = $1', [w.platformAdmin.id]);
    // the flag did move the user's own updated_at (GET /v1/users/me shows it) ...
    expect(await updatedAt()).not.toBe(since);
    // ... and a colleague reads the same as before, in SQL and in GraphQL
    expect(await read()).toEqual(before);
    expect(await graphqlRead()).toEqual(graphqlBefore);
    await app.sql('insert into rowgate_private.platform_admins (user_id) values ($1)', [w.platformAdmin.id]);
  });

  test("the view's barrier: a caller's failing condition never runs on a row the view hides", async () => {
    await asAnalyst(w.memberA, async (client) => {
      // were the outsider's row (not a colleague) reached by the caller's condition, the division would fail
      const { rows } = await client.query(
        'select id from rowgate.colleagues where 1 / (case when email = $1 then 0 else 1 end) = 1 order by id',
        [w.outsider.email],
      );
      expect(rows.map((r) => r.id)).toEqual(people('adminA', 'memberA', 'financeA', 'platformAdmin', 'adminB').map((p) => p.id));
      // the same condition on a visible row fails: the test's condition can fail
      await expect(
        client.query('select id from rowgate.colleagues where 1 / (case when email = $1 then 0 else 1 end) = 1', [w.adminA.email]),
      ).rejects.toMatchObject({ code: '22012' });
    });
  });

  test('the view writes nothing: no API role and no analyst may change it', async () => {
    const [privileges] = await app.sql<{ writers: string[] }>(
      `select array(select r from unnest(array['rowgate_user', 'rowgate_organization', 'rowgate_analyst']) r
         where has_table_privilege(r, 'rowgate.colleagues', 'insert, update, delete, truncate')) as writers`,
    );
    expect(privileges!.writers).toEqual([]);
  });
});
