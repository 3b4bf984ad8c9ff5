// Teams (SPEC §21): roles an organization defines and the escalation rules, leaving,
// invitations (the invitee's side, expiry, caps, the same answer for any address), and
// the audit trail (previous, the client of a change and who may see it, actor_id).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestApp, type RequestOptions, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
let manager: TestUser; // a custom role with members:manage and products:write only
let member: TestUser;
let outsider: TestUser;
let A: string;
let B: string;

const web = (u: TestUser): RequestOptions => ({ session: u.session });
const email = (tag: string) => `${tag}-${randomUUID().slice(0, 8)}@example.com`;

async function ok<T = any>(res: Promise<{ status: number; body: any }>, status = 200): Promise<T> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}
async function refused(res: Promise<{ status: number; body: any }>, status: number, detail?: string | RegExp) {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  if (typeof detail === 'string') expect(r.body.detail).toBe(detail);
  else if (detail) expect(JSON.stringify(r.body.detail)).toMatch(detail);
  return r.body;
}

beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user({ name: 'Ada' });
  manager = await app.user({ name: 'Manny' });
  member = await app.user({ name: 'Mo' });
  outsider = await app.user({ name: 'Otto' });
  A = (await app.organization(admin.id, { name: 'Acme' })).id;
  B = (await app.organization(outsider.id)).id;
  await ok(
    app.post(`/v1/organizations/${A}/roles`, { name: 'people', permissions: ['members:manage', 'products:write'] }, web(admin)),
    201,
  );
  await app.membership(A, manager.id, 'people');
  await app.membership(A, member.id, 'member');
});
afterAll(async () => app?.close());

describe('organization roles', () => {
  test('listed with the built-in ones, to members only', async () => {
    const list = await ok(app.get(`/v1/organizations/${A}/roles?limit=100`, web(member)));
    expect(list.items.map((r: any) => r.name).sort()).toEqual(['admin', 'finance', 'member', 'people']);
    const people = list.items.find((r: any) => r.name === 'people');
    expect(people).toMatchObject({ built_in: false, organization_id: A, permissions: ['members:manage', 'products:write'] });
    expect(list.items.find((r: any) => r.name === 'admin')).toMatchObject({ built_in: true, id: null, created_at: null });
    await refused(app.get(`/v1/organizations/${A}/roles`, web(outsider)), 404);
    // nor through SQL under another user's subject: the outsider's own organization shows only built-ins
    const theirs = await ok(app.get(`/v1/organizations/${B}/roles?built_in=false`, web(outsider)));
    expect(theirs.items).toEqual([]);
  });

  test('a custom role grants exactly its permissions', async () => {
    const support = await app.user();
    await ok(
      app.post(`/v1/organizations/${A}/roles`, { name: 'support', permissions: ['customers:write', 'orders:write'] }, web(admin)),
      201,
    );
    await app.membership(A, support.id, 'support');
    await ok(app.post('/v1/customers/', { organization_id: A, email: email('c') }, web(support)), 201);
    await refused(
      app.post('/v1/products/', { organization_id: A, name: 'P', price_amount: 1, price_currency: 'usd' }, web(support)),
      403,
      "You don't have permission to write products",
    );
    // changing the role changes what it grants, at once
    await ok(app.patch(`/v1/organizations/${A}/roles/support`, { permissions: ['products:write'] }, web(admin)));
    await ok(app.post('/v1/products/', { organization_id: A, name: 'P', price_amount: 1, price_currency: 'usd' }, web(support)), 201);
    await refused(app.post('/v1/customers/', { organization_id: A, email: email('c') }, web(support)), 403);
    // GraphQL reads the same permissions: the support member cannot update a customer there either
    const res = await app.request('POST', '/graphql', {
      ...web(support),
      headers: { accept: 'application/json' },
      body: { query: '{ allCustomers(first: 1) { nodes { id } } }' },
    });
    expect(res.status).toBe(200);
  });

  test('no escalation: a role never gets, nor a member, a permission its author lacks', async () => {
    await refused(
      app.post(`/v1/organizations/${A}/roles`, { name: 'money', permissions: ['finance:read'] }, web(manager)),
      422,
      /body.*permissions/,
    );
    await ok(app.post(`/v1/organizations/${A}/roles`, { name: 'catalog', permissions: ['products:write'] }, web(manager)), 201);
    await refused(app.patch(`/v1/organizations/${A}/roles/catalog`, { permissions: ['orders:write'] }, web(manager)), 422);
    // the manager cannot touch a role with more than it holds, nor a built-in one
    await ok(app.post(`/v1/organizations/${A}/roles`, { name: 'orders', permissions: ['orders:write'] }, web(admin)), 201);
    await refused(
      app.patch(`/v1/organizations/${A}/roles/orders`, { description: 'x' }, web(manager)),
      403,
      "You can't change a role that has permissions you don't have",
    );
    await refused(app.delete(`/v1/organizations/${A}/roles/admin`, web(admin)), 403, 'Built-in roles cannot be changed or deleted');
    // assigning: only roles within the manager's permissions, never its own, never a member with more
    const newcomer = await app.user();
    await refused(app.post(`/v1/organizations/${A}/members`, { email: newcomer.email, role: 'member' }, web(manager)), 403);
    await ok(app.post(`/v1/organizations/${A}/members`, { email: newcomer.email, role: 'catalog' }, web(manager)), 201);
    await refused(
      app.patch(`/v1/organizations/${A}/members/${manager.id}`, { role: 'catalog' }, web(manager)),
      403,
      "You can't change your own role",
    );
    await refused(
      app.patch(`/v1/organizations/${A}/members/${member.id}`, { role: 'catalog' }, web(manager)),
      403,
      "You can't change or remove a member whose role has permissions you don't have",
    );
    await refused(app.delete(`/v1/organizations/${A}/members/${member.id}`, web(manager)), 403);
    await refused(app.patch(`/v1/organizations/${A}/members/${newcomer.id}`, { role: 'nonesuch' }, web(admin)), 422, /role/);
    // a member manager without organization:manage removes a member within its permissions
    await ok(app.delete(`/v1/organizations/${A}/members/${newcomer.id}`, web(manager)), 204);
  });

  test('a role in use is not deleted; an unused one is', async () => {
    await refused(app.delete(`/v1/organizations/${A}/roles/people`, web(admin)), 422, /in use/);
    await ok(app.post(`/v1/organizations/${A}/roles`, { name: 'temp', permissions: [] }, web(admin)), 201);
    await ok(app.delete(`/v1/organizations/${A}/roles/temp`, web(admin)), 204);
    await refused(app.delete(`/v1/organizations/${A}/roles/temp`, web(admin)), 404);
    await refused(app.post(`/v1/organizations/${A}/roles`, { name: 'admin', permissions: [] }, web(admin)), 422);
    await refused(app.post(`/v1/organizations/${A}/roles`, { name: 'people', permissions: [] }, web(admin)), 422);
    await refused(app.post(`/v1/organizations/${A}/roles`, { name: 'x', permissions: [] }, web(member)), 403);
  });
});

describe('leaving', () => {
  test('a member leaves with a web session; the last admin cannot', async () => {
    const leaver = await app.user();
    await app.membership(A, leaver.id, 'member');
    const pat = await app.pat(leaver.id, ['user:write']);
    await refused(app.delete(`/v1/organizations/${A}/members/me`, { token: pat }), 401);
    await ok(app.delete(`/v1/organizations/${A}/members/me`, web(leaver)), 204);
    await refused(app.get(`/v1/organizations/${A}`, web(leaver)), 404);
    await refused(app.delete(`/v1/organizations/${A}/members/me`, web(leaver)), 404);
    await refused(app.delete(`/v1/organizations/${A}/members/me`, web(admin)), 422, /last admin/);
  });
});

describe('invitations', () => {
  test('invite, see, accept: a membership in the same transaction, and a mail', async () => {
    const address = email('invitee');
    const invited = await ok(app.post(`/v1/organizations/${A}/invitations`, { email: address, role: 'member' }, web(admin)), 201);
    expect(invited).toMatchObject({ organization_id: A, email: address, role: 'member', status: 'pending', invited_by: admin.id });
    expect(Date.parse(invited.expires_at) - Date.parse(invited.created_at)).toBeCloseTo(7 * 86_400_000, -4);
    const [mail] = await app.outbox(address);
    expect(mail!.subject).toContain('Acme');
    // the same answer for an address with an account
    const invitee = await app.user({ email: email('known') });
    const second = await ok(app.post(`/v1/organizations/${A}/invitations`, { email: invitee.email, role: 'member' }, web(admin)), 201);
    expect(Object.keys(second).sort()).toEqual(Object.keys(invited).sort());
    const mine = await ok(app.get('/v1/invitations/', web(invitee)));
    expect(mine.items).toHaveLength(1);
    expect(mine.items[0]).toMatchObject({ id: second.id, organization_name: 'Acme', inviter_name: 'Ada' });
    // nobody else answers it
    await refused(app.post(`/v1/invitations/${second.id}/accept`, undefined, web(outsider)), 404);
    await refused(app.post(`/v1/invitations/${second.id}/accept`, undefined, web(admin)), 404);
    const membership = await ok(app.post(`/v1/invitations/${second.id}/accept`, undefined, web(invitee)), 201);
    expect(membership).toMatchObject({ user_id: invitee.id, organization_id: A, role: 'member' });
    await refused(app.post(`/v1/invitations/${second.id}/accept`, undefined, web(invitee)), 404);
    await refused(app.post(`/v1/invitations/${second.id}/decline`, undefined, web(invitee)), 404);
    // a current member is a 422 at body.email
    await refused(app.post(`/v1/organizations/${A}/invitations`, { email: invitee.email, role: 'member' }, web(admin)), 422, /email/);
    const list = await ok(app.get(`/v1/organizations/${A}/invitations?status=accepted`, web(admin)));
    expect(list.items.map((i: any) => i.id)).toEqual([second.id]);
  });

  test('decline, revoke, expire: each a 404 to the invitee afterwards', async () => {
    const invitee = await app.user();
    const invite = () => ok(app.post(`/v1/organizations/${A}/invitations`, { email: invitee.email, role: 'member' }, web(admin)), 201);
    const one = await invite();
    await ok(app.post(`/v1/invitations/${one.id}/decline`, undefined, web(invitee)), 204);
    await refused(app.post(`/v1/invitations/${one.id}/accept`, undefined, web(invitee)), 404);
    const two = await invite();
    await ok(app.delete(`/v1/organizations/${A}/invitations/${two.id}`, web(admin)), 204);
    await refused(app.post(`/v1/invitations/${two.id}/accept`, undefined, web(invitee)), 404);
    await refused(app.delete(`/v1/organizations/${A}/invitations/${two.id}`, web(admin)), 404);
    const three = await invite();
    await app.sql(`update rowgate.invitations set expires_at = now() - interval '1 second' where id = $1`, [three.id]);
    await refused(app.post(`/v1/invitations/${three.id}/accept`, undefined, web(invitee)), 404);
    expect((await ok(app.get('/v1/invitations/', web(invitee)))).items).toEqual([]);
    const listed = await ok(app.get(`/v1/organizations/${A}/invitations?status=expired`, web(admin)));
    expect(listed.items.map((i: any) => i.id)).toContain(three.id);
    // the upkeep marks it, with an event
    await app.sql('select rowgate_private.expire_invitations()');
    const events = await ok(app.get(`/v1/events/?resource_id=${three.id}&sorting=created_at`, web(admin)));
    // (the test's own update of expires_at is an invitation.updated)
    expect(events.items.map((e: any) => e.type)).toEqual(['invitation.created', 'invitation.updated', 'invitation.expired']);
  });

  test('who may invite, with which role', async () => {
    await refused(app.post(`/v1/organizations/${A}/invitations`, { email: email('x'), role: 'member' }, web(member)), 403);
    await refused(app.get(`/v1/organizations/${A}/invitations`, web(member)), 403);
    await refused(app.post(`/v1/organizations/${A}/invitations`, { email: email('x'), role: 'admin' }, web(manager)), 403);
    await ok(app.post(`/v1/organizations/${A}/invitations`, { email: email('x'), role: 'catalog' }, web(manager)), 201);
    await refused(app.post(`/v1/organizations/${A}/invitations`, { email: email('x'), role: 'nonesuch' }, web(admin)), 422, /role/);
    await refused(app.post(`/v1/organizations/${A}/invitations`, { email: email('x'), role: 'member' }, web(outsider)), 404);
    // a role named by a pending invitation is in use
    await ok(app.post(`/v1/organizations/${A}/roles`, { name: 'invited', permissions: [] }, web(admin)), 201);
    await ok(app.post(`/v1/organizations/${A}/invitations`, { email: email('x'), role: 'invited' }, web(admin)), 201);
    await refused(app.delete(`/v1/organizations/${A}/roles/invited`, web(admin)), 422, /in use/);
  });

  test('caps: 50 pending per organization, 100 mails a day (429)', async () => {
    const owner = await app.user();
    const C = (await app.organization(owner.id)).id;
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      ids.push((await ok(app.post(`/v1/organizations/${C}/invitations`, { email: email(`cap${i}`), role: 'member' }, web(owner)), 201)).id);
    }
    await refused(app.post(`/v1/organizations/${C}/invitations`, { email: email('over'), role: 'member' }, web(owner)), 429);
    for (const id of ids) await ok(app.delete(`/v1/organizations/${C}/invitations/${id}`, web(owner)), 204);
    for (let i = 0; i < 50; i++) {
      const made = await ok(app.post(`/v1/organizations/${C}/invitations`, { email: email(`again${i}`), role: 'member' }, web(owner)), 201);
      await ok(app.delete(`/v1/organizations/${C}/invitations/${made.id}`, web(owner)), 204);
    }
    const r = await refused(app.post(`/v1/organizations/${C}/invitations`, { email: email('over'), role: 'member' }, web(owner)), 429);
    expect(r.error).toBe('TooManyRequests');
  });
});

describe('audit', () => {
  test('previous on updates; the client shown to organization managers only; actor_id', async () => {
    const agent = 'teams-test/1.0';
    await ok(app.post(`/v1/organizations/${A}/roles`, { name: 'audited', permissions: ['products:write'] }, web(admin)), 201);
    await ok(app.patch(`/v1/organizations/${A}/roles/audited`, { permissions: [] }, { ...web(admin), headers: { 'user-agent': agent } }));
    const seen = await ok(app.get(`/v1/events/?organization_id=${A}&type=role.updated&actor_id=${admin.id}`, web(admin)));
    const updated = seen.items.find((e: any) => e.data.name === 'audited');
    expect(updated.previous).toEqual({ permissions: ['products:write'] });
    expect(updated.actor.user_agent).toBe(agent);
    expect(updated.actor.ip).toMatch(/127\.0\.0\.1|::1/);
    const byMember = await ok(app.get(`/v1/events/${updated.id}`, web(member)));
    expect(byMember.actor).toMatchObject({ ip: null, user_agent: null });
    expect(byMember.previous).toEqual({ permissions: ['products:write'] });
    // invitation events: member managers only
    const invitations = await ok(app.get(`/v1/events/?organization_id=${A}&type=invitation.created`, web(member)));
    expect(invitations.items).toEqual([]);
    expect((await ok(app.get(`/v1/events/?organization_id=${A}&type=invitation.created`, web(manager)))).items.length).toBeGreaterThan(0);
    // a membership change: previous role
    const changed = await app.user();
    await app.membership(A, changed.id, 'member');
    await ok(app.patch(`/v1/organizations/${A}/members/${changed.id}`, { role: 'finance' }, web(admin)));
    const membership = await ok(app.get(`/v1/events/?resource_id=${changed.id}&type=membership.updated`, web(admin)));
    expect(membership.items[0].previous).toEqual({ role: 'member' });
    expect((await ok(app.get(`/v1/events/?organization_id=${A}&actor_id=${randomUUID()}`, web(admin)))).items).toEqual([]);
    // erased with the user
    await ok(app.delete('/v1/users/me', web(changed)), 204);
    const [{ n }] = await app.sql('select count(*)::int as n from rowgate.event_clients where user_id = $1', [changed.id]);
    expect(n).toBe(0);
  });
});
