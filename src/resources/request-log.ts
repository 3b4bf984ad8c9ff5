// An organization's request log (SPEC §25): its /v1 requests of the last 30 days,
// written by the server after each answer (src/operating/request-log.ts), read here
// by users with organization:manage; rowgate.request_log's policy decides the rows.
// A row's detail adds the events the request wrote and its recorded denial, linked by
// the row's server-made id.
import { z } from 'zod';
import { found } from '../core/errors.ts';
import { doc, timestamp, uuid } from '../core/fields.ts';
import { access, readScopes, route } from '../http/route-declaration.ts';
import { createdWindow, listQuery, listSchema, multi } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';

const nullable = (schema: z.ZodType, description: string, example: unknown) => doc(schema.nullable(), description, example);

const RequestLogRead = z
  .object({
    id: uuid('The row id, made by the server; the events and denial of the request are linked by it.'),
    request_id: doc(z.string(), 'The request id (X-Request-Id) the answer carried.', 'req_3f2b1c9e'),
    method: doc(z.string(), 'The HTTP method.', 'POST'),
    route: doc(z.string(), 'The route template.', '/v1/products/'),
    path: doc(z.string(), 'The path requested, without its query string.', '/v1/products/'),
    status: doc(z.number().int(), 'The status answered.', 201),
    error: nullable(z.string(), 'The `error` of an error answer; null otherwise.', null),
    duration_ms: doc(z.number().int().min(0), 'How long the answer took.', 12),
    credential_kind: nullable(z.string(), 'The kind of credential that made the request.', 'personal_access_token'),
    credential_id: nullable(z.uuid(), 'The credential (token or session) that made it.', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    user_id: nullable(z.uuid(), 'The user, for a User subject; null for an organization token.', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
    client_ip: nullable(z.string(), 'The client address (SPEC §14); erased with its user.', '203.0.113.7'),
    user_agent: nullable(z.string(), 'The User-Agent, at most 256 characters; erased with its user.', 'acme-sdk/1.4'),
    api_version: nullable(z.string(), 'The API version of the answer.', '2026-12-15'),
    idempotent_replayed: doc(z.boolean(), 'Whether the answer replayed a stored one (Idempotency-Key).', false),
    created_at: timestamp('When the answer ended.'),
  })
  .meta({ id: 'RequestLogEntry', description: 'A /v1 request about the organization.' });

const DenialOfRequest = z
  .object({
    id: uuid('The denial id.'),
    operation: nullable(z.string(), 'The operation refused.', 'products:update'),
    step: nullable(z.string(), 'The check of SPEC §5 that refused it.', 'policy'),
    error: nullable(z.string(), 'The error answered.', 'NotPermitted'),
    reason: nullable(z.string(), 'The denial sentence answered.', "You don't have permission to update products"),
    created_at: timestamp('When it was recorded.'),
  })
  .meta({ id: 'RequestLogDenial', description: 'The denial recorded for the request (SPEC §20).' });

const RequestLogDetail = RequestLogRead.extend({
  event_ids: doc(z.array(z.uuid()), 'The events the request wrote.', ['3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b']),
  denial: doc(DenialOfRequest.nullable(), 'The denial recorded for the request (SPEC §20); null when none was.', null),
}).meta({ id: 'RequestLogEntryDetail', description: 'A /v1 request about the organization, with the events it wrote and its denial.' });

const columns =
  'id, request_id, method, route, path, status, error, duration_ms, credential_kind, credential_id, user_id, host(client_ip) as client_ip, user_agent, api_version, idempotent_replayed, created_at';

const list: ListSpec = { from: 'rowgate.request_log', columns, sortable: { created_at: 'created_at', duration_ms: 'duration_ms' } };

const STATUS = /^(?:[1-5][0-9][0-9]|[1-5]xx)$/;
const asArray = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

const organizationParams = z.object({ id: uuid('The organization id.') });

export const requestLogRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/requests',
    operationId: 'requests:list',
    summary: 'List the requests about an organization',
    description:
      'The /v1 requests of the last 30 days whose subject is the organization, or whose resource or `organization_id` resolved to it for a caller that reaches it. Written after each answer, in batches: a row appears within seconds, or is dropped when writing falls behind. Bodies and query strings are never kept. For users whose role grants `organization:manage`.',
    tag: 'authorization',
    access: access.organizationUser(...readScopes('organizations')),
    params: organizationParams,
    query: listQuery(list, {
      status: multi(
        doc(z.string().regex(STATUS, 'A status (404) or a class (4xx, 5xx)'), 'A status or a class of statuses.', '4xx'),
        'Only these statuses or classes (repeatable: `404`, `4xx`, `5xx`).',
        '4xx',
      ),
      method: multi(z.enum(['GET', 'POST', 'PATCH', 'DELETE']), 'Only these methods (repeatable).', 'POST'),
      route: multi(z.string().min(1).max(200), 'Only these route templates (repeatable).', '/v1/products/'),
      credential_id: multi(z.uuid(), 'Only requests of these credentials (repeatable).', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
      request_id: multi(z.string().min(1).max(128), 'Only these request ids (repeatable).', 'req_3f2b1c9e'),
      ...createdWindow,
    }),
    status: 200,
    response: listSchema(RequestLogRead, 'RequestLogEntry'),
    authorize: { resource: 'organization', policy: 'organization:manage' },
    handler: ({ tx, params, query }) => {
      const where = new Where()
        .equals('organization_id', params.id)
        .anyOf('method', query.method)
        .anyOf('route', query.route)
        .anyOf('credential_id', query.credential_id, 'uuid')
        .anyOf('request_id', query.request_id)
        .created(query);
      const statuses = asArray(query.status);
      if (statuses.length) {
        const exact = statuses.filter((s) => !s.endsWith('xx')).map(Number);
        const classes = statuses.filter((s) => s.endsWith('xx')).map((s) => Number(s[0]));
        where.conditions.push(
          `(status = any(${where.params.add(exact)}::integer[]) or status / 100 = any(${where.params.add(classes)}::integer[]))`,
        );
      }
      return runList(tx, list, query, where);
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/requests/{request_id}',
    operationId: 'requests:get',
    summary: 'Get a request about an organization',
    description: 'The row, with the events the request wrote (`event_ids`) and its recorded denial (`denial`, or null).',
    tag: 'authorization',
    access: access.organizationUser(...readScopes('organizations')),
    params: organizationParams.extend({ request_id: uuid('The row id (`id` of the list), not the X-Request-Id.') }),
    status: 200,
    response: RequestLogDetail,
    authorize: { resource: 'organization', policy: 'organization:manage' },
    handler: async ({ tx, params }) =>
      found(
        await tx.one(
          `select ${columns}, rowgate.request_log_event_ids(organization_id, id) as event_ids,
             (select to_jsonb(d) from (select d.id, d.operation, d.step, d.error, d.reason, d.created_at from rowgate.denials d
               where d.organization_id = r.organization_id and d.request_log_id = r.id order by d.created_at limit 1) d) as denial
           from rowgate.request_log r where r.organization_id = $1 and r.id = $2`,
          [params.id, params.request_id],
        ),
      ),
  }),
];
