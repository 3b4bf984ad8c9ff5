// /v1/events: what happened to an organization's data (SPEC §17). The rows are
// written by the database, with the change itself (migration 000004), and read
// under RLS: an event is visible exactly to those who may read its resource.
import { z } from 'zod';
import { found } from '../core/errors.ts';
import { access, route } from '../http/route-declaration.ts';
import { doc, idParams, timestamp, uuid } from '../core/fields.ts';
import { createdWindow, listQuery, listSchema, multi, organizationFilter } from './lists.ts';
import { runList, Where, type ListSpec } from './list-statement.ts';

const nullableUuid = (description: string) => doc(z.uuid().nullable(), description, '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b');

export const Actor = z
  .object({
    kind: doc(z.enum(['user', 'organization', 'customer', 'member', 'system']), 'Who made the change.', 'user'),
    id: nullableUuid('The user, organization, customer or member seat; null for the system.'),
    credential_kind: doc(
      z
        .enum(['web_session', 'personal_access_token', 'organization_access_token', 'oauth2_token', 'customer_session', 'member_session'])
        .nullable(),
      'The kind of credential it used; null for the system.',
      'personal_access_token',
    ),
    credential_id: nullableUuid('The credential it used (a token or session id, never the token).'),
    impersonator_id: nullableUuid('The platform admin impersonating the user, if any.'),
    oauth2_client_id: doc(z.string().nullable(), 'The OAuth2 client the token was issued to, if any.', 'rg_client_3f2b1c9e'),
    ip: doc(
      z.string().nullable(),
      "The request's client address (SPEC §14). Shown only to users with `organization:manage` (null for everyone else, and for the system); erased after 90 days or when the user is deleted.",
      '203.0.113.7',
    ),
    user_agent: doc(
      z.string().max(256).nullable(),
      "The request's `User-Agent`, at most 256 characters. Shown and erased like `ip`.",
      'rowgate-cli/1.0',
    ),
  })
  .meta({ id: 'EventActor', description: 'Who made a change: the subject and its credential when it was made.' });

const eventType = doc(
  z.string().regex(/^[a-z_]{1,50}\.[a-z_]{1,50}$/, 'An event type: <resource>.<change>'),
  '`<resource>.created|updated|deleted`, or `order.paid`, `order.refunded`.',
  'order.paid',
);

export const EventRead = z
  .object({
    id: uuid('The event id (also the `webhook-id` of its deliveries).'),
    organization_id: uuid('The organization whose data changed.'),
    type: eventType,
    resource_id: uuid('The resource that changed (for a membership, its user).'),
    data: doc(z.record(z.string(), z.unknown()), 'The resource as its REST endpoint answered at that moment.', { id: '…' }),
    previous: doc(
      z.record(z.string(), z.unknown()).nullable(),
      'On a `*.updated` event, the changed fields’ values before the change; null on any other event.',
      { role: 'member' },
    ),
    actor: Actor,
    request_id: doc(
      z.string().nullable(),
      "The request that made the change (its X-Request-Id); null outside the API's requests.",
      'req_1',
    ),
    created_at: timestamp('When the change was made (RFC 3339, UTC): the start of its transaction.'),
  })
  .meta({ id: 'Event', description: 'A change of an organization’s data, written in the same transaction as the change.' });

// an actor's client address and user agent come from rowgate.event_clients, whose policy shows
// them to users with organization:manage only (older events' actors lack the two keys)
export const eventColumns = `id, organization_id, type, resource_id, data, previous,
  actor || coalesce((select jsonb_build_object('ip', c.ip, 'user_agent', c.user_agent) from rowgate.event_clients c
    where c.organization_id = events.organization_id and c.event_id = events.id), '{"ip": null, "user_agent": null}') as actor,
  request_id, created_at`;
const eventListSpec: ListSpec = {
  from: 'rowgate.events',
  columns: eventColumns,
  sortable: { created_at: 'created_at' },
  // RLS decides which events of a reachable organization show (their resource's rules)
  perOrganization: {},
};
const read = access.organization('events_read');

export const eventRoutes = [
  route({
    method: 'get',
    path: '/v1/events/',
    operationId: 'events:list',
    summary: 'List events',
    description:
      'Visible exactly to those who may read the resource: transaction events need the `finance:read` permission, account and payout-account events the finance-read policy (payout accounts a web session too), organization access token events `access_tokens:manage`, webhook endpoint events `organization:manage`; the rest every member.',
    tag: 'events',
    access: read,
    query: listQuery(eventListSpec, {
      organization_id: organizationFilter,
      type: multi(eventType, 'Only events of this type (repeatable).', 'order.paid'),
      resource_id: multi(z.uuid(), 'Only events of this resource (repeatable).', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
      actor_id: multi(
        z.uuid(),
        'Only events made by this actor: a user, organization, customer or member seat id (repeatable).',
        '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b',
      ),
      ...createdWindow,
    }),
    status: 200,
    response: listSchema(EventRead, 'Event'),
    handler: ({ tx, query }) =>
      runList(
        tx,
        eventListSpec,
        query,
        new Where()
          .organizations(query.organization_id)
          .anyOf('type', query.type)
          .anyOf('resource_id', query.resource_id, 'uuid')
          .anyOf("(actor ->> 'id')", query.actor_id)
          .created(query),
      ),
  }),
  route({
    method: 'get',
    path: '/v1/events/{id}',
    operationId: 'events:get',
    summary: 'Get an event',
    tag: 'events',
    access: read,
    params: idParams,
    status: 200,
    response: EventRead,
    handler: async ({ tx, params }) => found(await tx.one(`select ${eventColumns} from rowgate.events where id = $1`, [params.id])),
  }),
];
