// Invitations (SPEC §21): a member manager invites an address with a role; whoever signs in
// with that address accepts or declines. The rules (who may invite, with which role, the
// caps, who may answer, expiry) are the database's: rowgate.create_invitation and its
// siblings, and rowgate.invitations under RLS. Creating one answers the same whether or
// not the address has an account, and records a mail to the address, sent after the
// commit (or kept in the development outbox).
import { z } from 'zod';
import { found, notFound } from '../core/errors.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import type { Tx } from '../db/pool.ts';
import type { Mailer } from '../core/mail.ts';
import { doc, timestamp, timestamps, uuid } from '../core/fields.ts';
import { listQuery, listSchema, multi, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { MembershipRead } from './members.ts';
import { explain } from '../http/explanation.ts';

const STATUSES = ['pending', 'accepted', 'declined', 'revoked', 'expired'] as const;
const status = doc(
  z.enum(STATUSES),
  '`pending` until answered; `accepted`, `declined`, `revoked`, or `expired` 7 days after it was made.',
  'pending',
);
const role = doc(z.string().min(1).max(50), 'The role the invitee gets: a built-in role or one of the organization’s.', 'member');

const InvitationRead = z
  .object({
    id: uuid('The invitation id.'),
    organization_id: uuid('The organization the invitee is asked to join.'),
    organization_name: doc(z.string().nullable(), 'The organization’s name.', 'Acme Inc.'),
    email: doc(z.email(), 'The invited address: whoever signs in with it may accept.', 'grace@example.com'),
    role,
    status,
    invited_by: uuid('The user who invited.'),
    inviter_name: doc(
      z.string().nullable(),
      'The display name of the user who invited (null when it has none, or is deleted).',
      'Ada Lovelace',
    ),
    expires_at: timestamp('Until when it can be accepted (RFC 3339, UTC): 7 days after it was made.'),
    ...timestamps,
  })
  .meta({ id: 'Invitation', description: 'An invitation to join an organization with a role.' });

const InvitationList = listSchema(InvitationRead, 'Invitation');

const InvitationCreate = z
  .strictObject({
    email: doc(z.email().max(320), 'The address to invite, with or without an account.', 'grace@example.com'),
    role,
  })
  .meta({ id: 'InvitationCreate', description: 'Whom to invite, with which role.' });

const organizationParams = z.object({ id: uuid('The organization id.') });
const invitationParams = z.object({ id: uuid('The organization id.'), invitation_id: uuid('The invitation id.') });
const inviteeParams = z.object({ id: uuid('The invitation id.') });

const statusOf = `case when i.status = 'pending' and i.expires_at <= now() then 'expired' else i.status end`;
const from = 'rowgate.invitations i cross join lateral rowgate_hidden.invitation_names(i.id) n';
const columns = `i.id, i.organization_id, n.organization_name, i.email, i.role, ${statusOf} as status, i.invited_by, n.inviter_name,
  i.expires_at, i.created_at, i.updated_at`;
const managerList: ListSpec = {
  from,
  columns,
  id: 'i.id',
  sortable: { created_at: 'i.created_at', expires_at: 'i.expires_at', email: 'i.email', role: 'i.role' },
};
const inviteeList: ListSpec = { ...managerList };

async function readInvitation(tx: Tx, id: string) {
  return found(await tx.one(`select ${columns} from ${from} where i.id = $1`, [id]));
}

async function mailInvitation(tx: Tx, mailer: Mailer, invitation: Record<string, unknown>) {
  const inviter = (invitation.inviter_name as string | null) ?? 'A member';
  const organization = invitation.organization_name as string;
  await mailer.send(
    {
      to: invitation.email as string,
      subject: `${inviter} invited you to ${organization} on rowgate`,
      text:
        `${inviter} invited you to join ${organization} on rowgate, with the role ${invitation.role as string}.\n\n` +
        `Sign in with this address to accept or decline (GET /v1/invitations/). The invitation expires at ${invitation.expires_at as string}.\n` +
        'If you did not expect it, ignore this message.\n',
    },
    tx,
  );
}

export const invitationRoutes = [
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/organizations/{id}/invitations',
    operationId: 'invitations:create',
    summary: 'Invite someone to the organization',
    description:
      'Mails the address an invitation valid 7 days, with the same answer whether or not the address has an account. The role holds at most the permissions the caller holds (403). A current member is a 422 at `body.email`. At most 50 pending invitations per organization and 100 invitation mails per organization a day (429).',
    tag: 'invitations',
    access: access.organization(...writeScopes('members')),
    params: organizationParams,
    body: InvitationCreate,
    status: 201,
    response: InvitationRead,
    errors: [429],
    authorize: { resource: 'organization', policy: 'members_management' },
    handler: async ({ tx, params, body, mailer }) => {
      const created = await tx.one<{ id: string }>('select id from rowgate.create_invitation($1, $2, $3)', [
        params.id,
        body.email,
        body.role,
      ]);
      const invitation = await readInvitation(tx, created!.id);
      await mailInvitation(tx, mailer, invitation as Record<string, unknown>);
      return invitation;
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/invitations',
    operationId: 'invitations:list',
    summary: 'List the invitations of an organization',
    tag: 'invitations',
    access: access.organization(...readScopes('members')),
    params: organizationParams,
    query: listQuery(managerList, { status: multi(status, 'Only invitations with this status (repeatable).', 'pending') }),
    status: 200,
    response: InvitationList,
    authorize: { resource: 'organization', policy: 'members_management' },
    handler: ({ tx, params, query }) =>
      runList(tx, managerList, query, new Where().equals('i.organization_id', params.id).anyOf(`(${statusOf})`, query.status)),
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/organizations/{id}/invitations/{invitation_id}',
    operationId: 'invitations:revoke',
    summary: 'Revoke an invitation',
    description: 'A pending invitation only; one expired, answered or revoked is a 404.',
    tag: 'invitations',
    access: access.organization(...writeScopes('members')),
    params: invitationParams,
    status: 204,
    authorize: { resource: 'organization', policy: 'members_management' },
    handler: async ({ tx, params }) => {
      await tx.one('select rowgate.revoke_invitation($1, $2)', [params.id, params.invitation_id]);
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/invitations/',
    operationId: 'invitations:mine',
    // an invitation is the invitee's by its address, which the SQL of accept and decline checks (a 404 otherwise)
    explanation: explain.none,
    summary: 'List the invitations to my address',
    description: 'The pending invitations to the signed-in user’s address.',
    tag: 'invitations',
    access: access.webUserRead,
    query: listQuery(inviteeList, { organization_id: organizationFilter }),
    status: 200,
    response: InvitationList,
    handler: ({ tx, query }) => {
      const where = new Where().organizations(query.organization_id);
      where.conditions.push("i.email = (select rowgate_hidden.current_user_email()) and i.status = 'pending' and i.expires_at > now()");
      return runList(tx, inviteeList, query, where);
    },
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/invitations/{id}/accept',
    operationId: 'invitations:accept',
    explanation: { lookup: 'invitee', resource: 'invitations', match: { id: 'id' } },
    summary: 'Accept an invitation',
    description:
      'Makes the signed-in user a member of the organization with the invitation’s role, at once. Anyone but the invitee, and an invitation expired, revoked or answered, get a 404.',
    tag: 'invitations',
    access: access.webUserWrite,
    params: inviteeParams,
    status: 201,
    response: MembershipRead,
    handler: async ({ tx, params }) => {
      const membership = await tx.one<{ organization_id: string; user_id: string }>(
        'select organization_id, user_id from rowgate.accept_invitation($1)',
        [params.id],
      );
      if (!membership) throw notFound();
      return found(
        await tx.one(
          `select m.user_id, m.organization_id, m.role, u.email, u.name, m.created_at, m.updated_at
           from rowgate.memberships m join rowgate.colleagues u on u.id = m.user_id
           where m.organization_id = $1 and m.user_id = $2`, // RLS: live memberships
          [membership.organization_id, membership.user_id],
        ),
      );
    },
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/invitations/{id}/decline',
    operationId: 'invitations:decline',
    explanation: { lookup: 'invitee', resource: 'invitations', match: { id: 'id' } },
    summary: 'Decline an invitation',
    description: 'Anyone but the invitee, and an invitation expired, revoked or answered, get a 404.',
    tag: 'invitations',
    access: access.webUserWrite,
    params: inviteeParams,
    status: 204,
    handler: async ({ tx, params }) => {
      await tx.one('select rowgate.decline_invitation($1)', [params.id]);
    },
  }),
];
