// /v1/events: what happened to an organization's data (SPEC §17). The rows are
// written by the database, with the change itself (migration 000004), and read
// under RLS: an event is visible exactly to those who may read its resource.
import { z } from 'zod';
import { ApiError, found, invalidField } from '../core/errors.ts';
import { access, route } from '../http/route-declaration.ts';
import { doc, idParams, timestamp, uuid } from '../core/fields.ts';
import { createdWindow, listQuery, listSchema, multi, organizationFilter, wholeNumber } from '../listing/lists.ts';
import { runList, Where, type ListSpec } from '../listing/list-statement.ts';
import { KeysetChunk } from '../listing/list-page.ts';
import { explain } from '../http/explanation.ts';
import type { ApiVersions } from '../core/versions.ts';

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
/** The answer's fields, as eventColumns names them (a page of events already computed holds them as they are) */
const EVENT_FIELDS = 'id, organization_id, type, resource_id, data, previous, actor, request_id, created_at';

const eventListSpec: ListSpec = {
  from: 'rowgate.events',
  columns: eventColumns,
  sortable: { created_at: 'created_at' },
  // RLS decides which events of a reachable organization show (their resource's rules)
  perOrganization: {},
};
const read = access.organization('events_read');

/** What rendering reads of an event: its stored resource, before and after. */
interface StoredEvent {
  type: string;
  data: Record<string, unknown>;
  previous: Record<string, unknown> | null;
}

/**
 * How the request renders events: their stored `data` and `previous` as its
 * version renders their resource (SPEC §23), as webhook bodies do; none where
 * its version renders them as stored, so that a page's JSON passes through unparsed.
 * It takes the handler's context, not its version: a JSON read's handler may start
 * before the version settles, and a route that says `rendersEventData` waits for it
 * only where some version renders event data; elsewhere the version is not read.
 */
function eventRendering(context: { readonly version: string; readonly versions: ApiVersions }) {
  if (!context.versions.rendersSomeEventData) return undefined;
  const { version, versions } = context;
  if (!versions.rendersEventData(version)) return undefined;
  const render = (type: string, resource: Record<string, unknown> | null) => resource && versions.eventData(version, type, resource);
  return <E extends StoredEvent>(event: E): E => ({
    ...event,
    data: render(event.type, event.data),
    previous: render(event.type, event.previous),
  });
}

/**
 * A feed cursor: the position of the last event handed out (0 before the first) and an instant
 * no later than what it covers (the last event's creation, or the poll that found nothing more),
 * which tells whether retention has pruned past it. Opaque to clients. A cursor of the format
 * that named transactions (`<xid>-<n>|<at>`) points into positions renumbered since: it is
 * expired; one handed out before any event (`|<at>`) still starts from the beginning.
 */
interface FeedCursor {
  position: bigint;
  at: number;
}
const encodeCursor = (c: FeedCursor) => Buffer.from(`p${c.position}.${c.at}`).toString('base64url');
function decodeCursor(value: string): FeedCursor | 'expired' {
  const text = Buffer.from(value, 'base64url').toString('latin1');
  const current = /^p(0|[1-9][0-9]{0,18})\.([0-9]{1,12})$/.exec(text);
  if (current) return { position: BigInt(current[1]!), at: Number(current[2]) };
  const before = /^(?:([0-9]{20}-[0-9]{19}))?\|([0-9]{1,12})$/.exec(text);
  if (before) return before[1] === undefined ? { position: 0n, at: Number(before[2]) } : 'expired';
  throw invalidField(['query', 'after'], 'Not a cursor this feed handed out');
}
const expiredCursor = (why = 'Events after this cursor may have been pruned') =>
  new ApiError(410, 'CursorExpired', `${why}; poll again without \`after\``);

export const EventFeed = z
  .object({
    items: doc(z.array(EventRead), 'The events after the cursor, oldest first in the feed’s order.', []),
    next_cursor: doc(
      z.string(),
      'Pass it as `after` in the next poll (with the same filters) to get what comes next; opaque.',
      'cDc0Mi4xNzYzNzE2MjAw',
    ),
  })
  .meta({ id: 'EventFeed', description: 'A poll of the event feed: what the cursor has not handed out yet, and the next cursor.' });

/**
 * One poll of the feed (SPEC §17), one statement. Positions are given by the sequencer
 * (rowgate_private.place_events) after the events' transactions commit, one run at a time:
 * a position seen by a poll is never followed by a lower one appearing later, so a cursor
 * never skips an event and never repeats one, and no open transaction holds the feed back.
 * Each reachable organization's range is read through its (organization_id, feed_position)
 * index, and the pages are merged, as the lists are.
 */
function feedStatement(query: { organization_id?: string | string[]; type?: string | string[]; limit: number }, after: bigint) {
  const values: unknown[] = [after.toString(), query.limit];
  const reachable = 'rowgate_hidden.current_organization_ids()';
  const organizations = query.organization_id === undefined ? undefined : [query.organization_id].flat();
  const scope = organizations
    ? `array(select unnest(${reachable}) intersect select unnest($${values.push(organizations)}::uuid[]))`
    : reachable;
  const types = query.type === undefined ? '' : `and type = any($${values.push([query.type].flat())}::text[])`;
  const text = `with scope as (select ${scope} as ids),
    page as (
      select top.* from unnest((select ids from scope)::uuid[]) as organization(id)
        cross join lateral (
          select feed_position, ${eventColumns} from rowgate.events
          where organization_id = organization.id and feed_position > $1::bigint ${types}
          order by feed_position limit $2::int
        ) top
      order by top.feed_position limit $2::int
    ),
    last as (select feed_position, created_at from page order by feed_position desc limit 1)
    select coalesce((select json_agg(p) from (select ${EVENT_FIELDS} from page order by feed_position) p), '[]')::text as items,
      (select count(*) from page)::int as n,
      (select feed_position from last)::text as last_position,
      (select floor(extract(epoch from created_at))::bigint from last) as last_at,
      floor(extract(epoch from now()))::bigint as now_at,
      floor(extract(epoch from rowgate_hidden.events_pruned_before()))::bigint as pruned_before`;
  return { text, values };
}

export const eventRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/events/feed',
    operationId: 'events:feed',
    explanation: explain.list,
    summary: 'Poll the event feed',
    description:
      'Every event the caller may read that the cursor has not handed out yet, each exactly once across polls, in the feed’s order (`feed_position` in GraphQL and SQL): the order in which events’ transactions become visible to the feed, which looks several times a second. An event is in the feed within a second of its commit, whatever other transactions are open; one whose transaction commits late comes after those handed out before it, never skipped. Without `after`, the feed starts at the oldest event kept. A cursor older than what retention kept, or of the format used before positions were numbered after commit, is a 410 `CursorExpired`: start again without `after`.',
    tag: 'events',
    access: read,
    query: z.strictObject({
      organization_id: organizationFilter,
      type: multi(eventType, 'Only events of this type (repeatable).', 'order.paid'),
      after: doc(z.string().max(200).optional(), 'The `next_cursor` of the previous poll; none: from the oldest event kept.', 'MDAw…'),
      limit: doc(wholeNumber(1, 100, 100), 'Events per poll, 1 to 100.', 100),
    }),
    status: 200,
    errors: [410],
    response: EventFeed,
    rendersEventData: true,
    handler: async (context) => {
      const { tx, query } = context;
      const after = query.after === undefined ? undefined : decodeCursor(query.after);
      if (after === 'expired') throw expiredCursor('This cursor names positions the feed has renumbered since');
      const statement = feedStatement(query, after?.position ?? 0n);
      const row = (await tx.one<{
        items: string;
        n: number;
        last_position: string | null;
        last_at: string | null;
        now_at: string;
        pruned_before: string | null;
      }>(statement.text, statement.values))!;
      if (after && row.pruned_before !== null && after.at < Number(row.pruned_before)) throw expiredCursor();
      // a full page: more may follow at once; a short one: everything placed so far was handed out
      const next: FeedCursor =
        row.n === query.limit
          ? { position: BigInt(row.last_position!), at: Number(row.last_at) }
          : { position: row.last_position === null ? (after?.position ?? 0n) : BigInt(row.last_position), at: Number(row.now_at) };
      const items = JSON.parse(row.items) as StoredEvent[];
      const render = eventRendering(context);
      return { items: render ? items.map(render) : items, next_cursor: encodeCursor(next) };
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/events/',
    operationId: 'events:list',
    exportedAs: 'events',
    explanation: explain.list,
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
    rendersEventData: true,
    handler: async (context) => {
      const { tx, query } = context;
      const page = await runList(
        tx,
        eventListSpec,
        query,
        new Where()
          .organizations(query.organization_id)
          .anyOf('type', query.type)
          .anyOf('resource_id', query.resource_id, 'uuid')
          .anyOf("(actor ->> 'id')", query.actor_id)
          .created(query),
      );
      const render = eventRendering(context);
      if (!render) return page;
      // an export's chunk is lines, a page one JSON array
      if (page instanceof KeysetChunk) return page.mapItems<StoredEvent>(render);
      return page.withItems(JSON.stringify((JSON.parse(page.itemsJson) as StoredEvent[]).map(render)));
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/events/{id}',
    operationId: 'events:get',
    explanation: explain.visible('events'),
    summary: 'Get an event',
    tag: 'events',
    access: read,
    params: idParams,
    status: 200,
    response: EventRead,
    rendersEventData: true,
    handler: async (context) => {
      const event = found(
        await context.tx.one<StoredEvent>(`select ${eventColumns} from rowgate.events where id = $1`, [context.params.id]),
      );
      const render = eventRendering(context);
      return render ? render(event) : event;
    },
  }),
];
