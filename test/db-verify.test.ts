// `rowgate db verify` (docs/operations.md): exit 0 and nothing printed on sound data; exit 1
// and one JSON line a violating row once the data is broken the way no request can break it
// (as the superuser, with the triggers that guard it disabled).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { runCli } from './cli-runner.ts';
import { withDatabase } from './database-server.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => app?.close());

/** Runs statements as the superuser with triggers off (session_replication_role = replica). */
async function asSuperuserWithoutTriggers(...statements: [string, unknown[]][]) {
  const client = new pg.Client({ connectionString: withDatabase(inject('superuserUrl'), app.database) });
  await client.connect();
  try {
    await client.query('set session_replication_role = replica');
    for (const [text, values] of statements) await client.query(text, values);
  } finally {
    await client.end();
  }
}

const lines = (stdout: string) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe('db verify', () => {
  test('sound data (organizations with admins, members, roles, events): exit 0, nothing printed', async () => {
    const admin = await app.user();
    const member = await app.user();
    const org = await app.organization(admin.id);
    await app.membership(org.id, member.id, 'member');
    const made = await app.post(
      `/v1/organizations/${org.id}/roles`,
      { name: 'helpers', permissions: ['products:write'] },
      { session: admin.session },
    );
    expect(made.status).toBe(201);
    await app.membership(org.id, (await app.user()).id, 'helpers');
    expect(await runCli(app, ['db', 'verify'])).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  test('an organization without its admin, an undefined role, an event of no organization: exit 1, one line each', async () => {
    const admin = await app.user();
    const member = await app.user();
    const org = await app.organization(admin.id);
    await app.membership(org.id, member.id, 'member');
    const stranger = await app.user();
    await app.membership(org.id, stranger.id, 'member');
    const [membership] = await app.sql<{ id: string }>('select id from rowgate.memberships where user_id = $1', [stranger.id]);
    const ghost = randomUUID();
    const [event] = await app.sql<{ id: string }>('select id from rowgate.events where organization_id = $1 limit 1', [org.id]);
    await asSuperuserWithoutTriggers(
      // the only admin demoted: the keep-an-admin trigger is off
      ["update rowgate.memberships set role = 'member' where organization_id = $1 and user_id = $2", [org.id, admin.id]],
      // a role the organization never defined: the role check is off
      ["update rowgate.memberships set role = 'nobody' where id = $1", [membership!.id]],
      // an event moved to an organization that does not exist (events carry no foreign key)
      ['update rowgate.events set organization_id = $1 where organization_id = $2 and id = $3', [ghost, org.id, event!.id]],
    );
    const run = await runCli(app, ['db', 'verify']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 1, stderr: '' });
    expect(lines(run.stdout)).toEqual([
      { table: 'events', id: event!.id, organization_id: ghost, problem: `names organization ${ghost}, which does not exist` },
      {
        table: 'memberships',
        id: membership!.id,
        organization_id: org.id,
        problem: "role 'nobody' is neither built in nor a role of its organization",
      },
      { table: 'organizations', id: org.id, organization_id: org.id, problem: 'has 3 live member(s) and no admin' },
    ]);
  });
});
