// An organization always keeps an admin, whatever requests run at once (SPEC §21): two
// admins demoting, removing or leaving each other at the same moment, through REST and
// GraphQL, never both succeed; the one refused answers 422 with the reason, never a 5xx
// (no deadlock); and deleting a user who is the last admin of an organization with other
// members is refused, naming those organizations.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ApiResponse, startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
/** each race is run this many times, on a fresh organization each time */
const TRIALS = 15;

beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

interface Team {
  organization: string;
  a: TestUser;
  b: TestUser;
  /** a plain member: the organization has members besides its admins */
  member: TestUser;
  /** a member whose own role holds every permission, yet is no admin */
  owner: TestUser;
}

/** An organization with two admins (a and b), a member and a non-admin holding every permission. */
async function team(): Promise<Team> {
  const [a, b, member, owner] = await Promise.all([app.user(), app.user(), app.user(), app.user()]);
  const organization = (await app.organization(a.id)).id;
  await app.membership(organization, b.id, 'admin');
  await app.membership(organization, member.id, 'member');
  const [{ permissions }] = (await app.sql<{ permissions: string[] }>(
    `select array_agg(permission order by permission) as permissions from rowgate.role_permissions where role = 'admin'`,
  )) as [{ permissions: string[] }];
  const created = await app.post(`/v1/organizations/${organization}/roles`, { name: 'owners', permissions }, { session: a.session });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await app.membership(organization, owner.id, 'owners');
  return { organization, a, b, member, owner };
}

async function liveAdmins(organization: string): Promise<string[]> {
  const rows = await app.sql<{ user_id: string }>(
    `select user_id from rowgate.memberships where organization_id = $1 and role = 'admin' and deleted_at is null`,
    [organization],
  );
  return rows.map((r) => r.user_id);
}

/** what one request of a race came to: it did its change, or was refused (and how) */
type Outcome = { done: true } | { done: false; status: number; error: string; reason: string };

function rest(response: ApiResponse, doneStatus: number): Outcome {
  if (response.status === doneStatus) return { done: true };
  const detail = response.body?.detail;
  const reason = typeof detail === 'string' ? detail : Array.isArray(detail) ? detail.map((d: any) => d.msg).join('; ') : '';
  return { done: false, status: response.status, error: response.body?.error ?? '', reason };
}

function graphql(response: ApiResponse, field: string): Outcome {
  const errors = response.body?.errors as { message: string; extensions?: { code?: string } }[] | undefined;
  if (response.status === 200 && !errors && response.body?.data?.[field]) return { done: true };
  const code = errors?.[0]?.extensions?.code ?? '';
  const status =
    response.status !== 200 ? response.status : code === 'RequestValidationError' ? 422 : code === 'InternalServerError' ? 500 : 400;
  return { done: false, status, error: code, reason: errors?.map((e) => e.message).join('; ') ?? '' };
}

/** tallies of a race's trials: how often the refused request answered what */
type Tally = Record<string, number>;

/**
 * Runs `race` TRIALS times, each on a fresh team: exactly one of its two requests does
 * its change, the other is refused with one of `refusals` (422 when the two met, or what a
 * request answers once the other's change is committed), never a 5xx; an admin remains.
 */
async function trials(race: (t: Team) => Promise<[Outcome, Outcome]>, refusals: number[] = [422]): Promise<Tally> {
  const tally: Tally = {};
  for (let i = 0; i < TRIALS; i++) {
    const t = await team();
    const outcomes = await race(t);
    const detail = JSON.stringify(outcomes);
    expect(outcomes.filter((o) => o.done).length, detail).toBe(1);
    const refused = outcomes.find((o) => !o.done) as Extract<Outcome, { done: false }>;
    expect(refusals, detail).toContain(refused.status);
    if (refused.status === 422) expect(refused.reason, detail).toMatch(/admin/);
    tally[refused.status] = (tally[refused.status] ?? 0) + 1;
    expect((await liveAdmins(t.organization)).length, detail).toBeGreaterThanOrEqual(1);
  }
  return tally;
}

const demote = (by: TestUser, organization: string, who: TestUser) =>
  app.patch(`/v1/organizations/${organization}/members/${who.id}`, { role: 'member' }, { session: by.session });
const remove = (by: TestUser, organization: string, who: TestUser) =>
  app.delete(`/v1/organizations/${organization}/members/${who.id}`, { session: by.session });
const leave = (who: TestUser, organization: string) => app.delete(`/v1/organizations/${organization}/members/me`, { session: who.session });
const MEMBERSHIP_TO_MEMBER = `mutation ($id: UUID!) {
  updateMembershipByRowId(input: { rowId: $id, membershipPatch: { role: "member" } }) { membership { rowId role } }
}`;
const deleteUser = (who: TestUser) => app.delete('/v1/users/me', { session: who.session });

describe('SPEC §21: an organization always keeps an admin, whatever requests run at once', () => {
  // A request that starts once the other's change is committed is refused by the rules of a
  // single request: a demoted admin may no longer manage members (403), a removed one no
  // longer sees the organization (404). When the two meet, the second is 422.
  test('two admins demoting each other: one succeeds, the other is refused', async () => {
    const tally = await trials(
      async ({ organization, a, b }) => {
        const [x, y] = await Promise.all([demote(a, organization, b), demote(b, organization, a)]);
        return [rest(x, 200), rest(y, 200)];
      },
      [422, 403],
    );
    expect(tally[422], JSON.stringify(tally)).toBeGreaterThan(0);
  });

  test('two admins removing each other: one succeeds, the other is refused', async () => {
    const tally = await trials(
      async ({ organization, a, b }) => {
        const [x, y] = await Promise.all([remove(a, organization, b), remove(b, organization, a)]);
        return [rest(x, 204), rest(y, 204)];
      },
      [422, 404],
    );
    expect(tally[422], JSON.stringify(tally)).toBeGreaterThan(0);
  });

  test('two admins leaving at once: one leaves, the other is the last admin (422, no deadlock)', async () => {
    await trials(async ({ organization, a, b }) => {
      const [x, y] = await Promise.all([leave(a, organization), leave(b, organization)]);
      return [rest(x, 204), rest(y, 204)];
    });
  });

  test('one admin leaving while the other is demoted or removed: one of them is refused (422)', async () => {
    // the change is made by a member whose role holds every permission: it is no admin itself
    await trials(async ({ organization, a, b, owner }) => {
      const [x, y] = await Promise.all([leave(a, organization), demote(owner, organization, b)]);
      return [rest(x, 204), rest(y, 200)];
    });
    await trials(async ({ organization, a, b, owner }) => {
      const [x, y] = await Promise.all([remove(owner, organization, a), leave(b, organization)]);
      return [rest(x, 204), rest(y, 204)];
    });
  });

  test('one admin removing the other while being demoted by it: one succeeds, the other is refused', async () => {
    const tally = await trials(
      async ({ organization, a, b }) => {
        const [x, y] = await Promise.all([remove(a, organization, b), demote(b, organization, a)]);
        return [rest(x, 204), rest(y, 200)];
      },
      [422, 403, 404],
    );
    expect(tally[422], JSON.stringify(tally)).toBeGreaterThan(0);
  });

  test('one admin deleting its user while the other leaves: one of them is refused (422)', async () => {
    await trials(async ({ organization, a, b }) => {
      const [x, y] = await Promise.all([deleteUser(a), leave(b, organization)]);
      return [rest(x, 204), rest(y, 204)];
    });
  });

  test('two admins deleting their users at once: one is deleted, the other is the last admin (422)', async () => {
    await trials(async ({ a, b }) => {
      const [x, y] = await Promise.all([deleteUser(a), deleteUser(b)]);
      return [rest(x, 204), rest(y, 204)];
    });
  });

  test("GraphQL's updateMembership racing REST: one succeeds, the other is refused", async () => {
    const tally = await trials(
      async ({ organization, a, b }) => {
        const [{ id }] = (await app.sql<{ id: string }>('select id from rowgate.memberships where organization_id = $1 and user_id = $2', [
          organization,
          b.id,
        ])) as [{ id: string }];
        const [x, y] = await Promise.all([
          app.post(
            '/graphql',
            { query: MEMBERSHIP_TO_MEMBER, variables: { id } },
            { session: a.session, headers: { accept: 'application/json' } },
          ),
          demote(b, organization, a),
        ]);
        return [graphql(x, 'updateMembershipByRowId'), rest(y, 200)];
      },
      // a GraphQL update of a row its policy no longer lets it change is refused as "not permitted"
      [422, 403, 400],
    );
    expect(tally[422], JSON.stringify(tally)).toBeGreaterThan(0);
  });

  test("GraphQL's updateMembership of the last admin is refused with the reason", async () => {
    const { organization, a, b, owner } = await team();
    expect((await leave(b, organization)).status).toBe(204);
    const [{ id }] = (await app.sql<{ id: string }>('select id from rowgate.memberships where organization_id = $1 and user_id = $2', [
      organization,
      a.id,
    ])) as [{ id: string }];
    const response = await app.post(
      '/graphql',
      { query: MEMBERSHIP_TO_MEMBER, variables: { id } },
      { session: owner.session, headers: { accept: 'application/json' } },
    );
    expect(response.body.errors?.[0], JSON.stringify(response.body)).toMatchObject({
      message: 'path.user_id: An organization needs at least one admin',
      extensions: { code: 'RequestValidationError' },
    });
    expect(await liveAdmins(organization)).toEqual([a.id]);
  });

  test('users deleted at once across organizations take them in one order (no deadlock)', async () => {
    // a, b and c are admins of two organizations: a and b may both go, c remains in each
    for (let i = 0; i < TRIALS; i++) {
      const [a, b, c] = await Promise.all([app.user(), app.user(), app.user()]);
      const organizations = [(await app.organization(c.id)).id, (await app.organization(c.id)).id];
      for (const organization of organizations) {
        await app.membership(organization, a.id, 'admin');
        await app.membership(organization, b.id, 'admin');
      }
      const [x, y] = await Promise.all([deleteUser(a), deleteUser(b)]);
      expect([x.status, y.status], JSON.stringify([x.body, y.body])).toEqual([204, 204]);
      for (const organization of organizations) expect(await liveAdmins(organization)).toEqual([c.id]);
    }
  });
});

describe('SPEC §2: a deleted user is a member of nothing, whatever requests run at once', () => {
  test('a member added while its user deletes itself: added first (then removed with it) or refused, never left live', async () => {
    const tally: Tally = {};
    for (let i = 0; i < TRIALS; i++) {
      const [admin, joining] = await Promise.all([app.user(), app.user({ email: `joining-${i}-${Date.now()}@example.com` })]);
      const organization = (await app.organization(admin.id)).id;
      const [added, deleted] = await Promise.all([
        app.post(`/v1/organizations/${organization}/members`, { email: joining.email, role: 'member' }, { session: admin.session }),
        deleteUser(joining),
      ]);
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(204);
      expect([201, 404, 422], JSON.stringify(added.body)).toContain(added.status);
      tally[added.status] = (tally[added.status] ?? 0) + 1;
      const live = await app.sql<{ id: string }>(
        `select m.id from rowgate.memberships m where m.organization_id = $1 and m.user_id = $2 and m.deleted_at is null`,
        [organization, joining.id],
      );
      expect(live).toEqual([]);
    }
    console.log(`a member added while its user deletes itself: ${JSON.stringify(tally)}`);
  });
});

describe('SPEC §21: deleting a user', () => {
  test('the last admin of organizations with other members is refused, naming them; nothing changes', async () => {
    const [admin, colleague] = await Promise.all([app.user(), app.user()]);
    const first = await app.organization(admin.id, { name: 'First Team' });
    const second = await app.organization(admin.id, { name: 'Second Team' });
    const alone = await app.organization(admin.id, { name: 'Alone Team' });
    const shared = await app.organization(colleague.id, { name: 'Shared Team' });
    await app.membership(first.id, colleague.id, 'member');
    await app.membership(second.id, colleague.id, 'finance');
    await app.membership(shared.id, admin.id, 'admin');

    const refused = await deleteUser(admin);
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body.error).toBe('RequestValidationError');
    expect(refused.body.detail).toHaveLength(1);
    expect(refused.body.detail[0].loc).toEqual(['path']);
    const reason: string = refused.body.detail[0].msg;
    expect(reason).toContain(`First Team (${first.id})`);
    expect(reason).toContain(`Second Team (${second.id})`);
    // an organization it is the only member of, or that keeps another admin, is not named
    expect(reason).not.toContain(alone.id);
    expect(reason).not.toContain(shared.id);
    expect((await app.get('/v1/users/me', { session: admin.session })).status).toBe(200);
    expect(await liveAdmins(first.id)).toEqual([admin.id]);

    // with another admin in one and the other deleted, the user goes, and its own organization with it
    expect(
      (await app.patch(`/v1/organizations/${first.id}/members/${colleague.id}`, { role: 'admin' }, { session: admin.session })).status,
    ).toBe(200);
    expect((await app.delete(`/v1/organizations/${second.id}`, { session: admin.session })).status).toBe(204);
    expect((await deleteUser(admin)).status).toBe(204);
    const organizations = await app.sql<{ id: string; deleted: boolean }>(
      'select id, deleted_at is not null as deleted from rowgate.organizations where id = any($1) order by id',
      [[first.id, alone.id, shared.id]],
    );
    expect(Object.fromEntries(organizations.map((o) => [o.id, o.deleted]))).toEqual({
      [first.id]: false,
      [alone.id]: true,
      [shared.id]: false,
    });
    expect(await liveAdmins(first.id)).toEqual([colleague.id]);
    expect(await liveAdmins(shared.id)).toEqual([colleague.id]);
    const left = await app.sql('select 1 from rowgate.memberships where user_id = $1 and deleted_at is null', [admin.id]);
    expect(left).toEqual([]);
  });

  test('an operator deleting the last admin of an organization with other members in SQL is refused too', async () => {
    const [admin, colleague] = await Promise.all([app.user(), app.user()]);
    const organization = (await app.organization(admin.id)).id;
    await app.membership(organization, colleague.id, 'member');
    await expect(app.sql('update rowgate.users set deleted_at = now() where id = $1', [admin.id])).rejects.toMatchObject({
      code: 'RG422',
      message: 'An organization needs at least one admin',
    });
    expect(await liveAdmins(organization)).toEqual([admin.id]);
  });

  test("an update racing its caller's own leaving answers 200 or 404, never a 5xx or an empty 200", async () => {
    const outcomes: string[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const { organization, a } = await team();
      const [left, updated] = await Promise.all([
        app.delete(`/v1/organizations/${organization}/members/me`, { session: a.session }),
        app.patch(`/v1/organizations/${organization}`, { max_token_lifetime_days: 3650 }, { session: a.session }),
      ]);
      expect(left.status, JSON.stringify(left.body)).toBe(204);
      // authorized while a member, the update meets the row its caller no longer reaches: not found
      expect([200, 404], JSON.stringify(updated.body)).toContain(updated.status);
      if (updated.status === 200) expect(updated.body.id).toBe(organization);
      else expect(updated.body.error).toBe('ResourceNotFound');
      outcomes.push(`${updated.status}`);
    }
    console.log(`leave || update, ${TRIALS} trials: ${outcomes.join(' ')}`);
  });
});
