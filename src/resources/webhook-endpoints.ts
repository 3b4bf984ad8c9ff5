// /v1/webhook-endpoints: where an organization's events are sent (SPEC §17).
// Users with organization:manage (for reading too) and the organization itself;
// the signing secret is shown once, at creation. Deliveries are made by the
// server's worker (src/webhooks/worker.ts).
import { API_VERSION_COLUMN, API_VERSIONS, apiVersionField, apiVersionRead, PIN_API_VERSION } from '../core/versions.ts';
import { z } from 'zod';
import { found, invalidField } from '../core/errors.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { generateWebhookSecret, sealSecret } from '../webhooks/secrets.ts';
import { urlDenial } from '../webhooks/url-rules.ts';
import { doc, idParams, nullableTimestamp, timestamp, timestamps, uuid } from '../core/fields.ts';
import { listQuery, listSchema, multi, organizationFilter } from '../listing/lists.ts';
import { runList, Where, type ListSpec } from '../listing/list-statement.ts';
import { explain } from '../http/explanation.ts';

/** ROWGATE_WEBHOOKS_ALLOW_LOOPBACK=1: loopback URLs, over http too (development, tests) */
export const loopbackAllowed = () => process.env.ROWGATE_WEBHOOKS_ALLOW_LOOPBACK === '1';

const url = doc(z.string().min(1).max(2000), 'Where events are POSTed: https:// to a public address.', 'https://example.com/hooks/rowgate');
const eventTypes = doc(
  z
    .array(z.string().regex(/^[a-z_]{1,50}\.[a-z_]{1,50}$/, 'An event type: <resource>.<change>'))
    .min(1)
    .max(100),
  'The event types to send (SPEC §17); each must be one the caller may read.',
  ['order.paid', 'order.refunded'],
);
const description = doc(z.string().max(500).nullable(), 'What the endpoint is for.', 'Fulfilment service');
const enabled = doc(z.boolean(), 'Whether events are sent; false after 10 events in a row failed every attempt.', true);

export const WebhookEndpointRead = z
  .object({
    id: uuid('The endpoint id.'),
    organization_id: uuid('The organization whose events it receives.'),
    url,
    event_types: eventTypes,
    description,
    enabled,
    secret_rotated_at: nullableTimestamp('When the signing secret was last rotated; null: never.'),
    api_version: apiVersionRead('its webhook bodies are rendered in'),
    ...timestamps,
  })
  .meta({ id: 'WebhookEndpoint', description: 'A URL that receives signed events (Standard Webhooks).' });

const WebhookEndpointCreated = WebhookEndpointRead.extend({
  secret: doc(
    z.string(),
    'The signing secret (`whsec_` + base64). Shown once, in this answer only: store it now.',
    'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  ),
}).meta({ id: 'WebhookEndpointCreated', description: 'The new endpoint, with its signing secret (shown once).' });

const WebhookEndpointCreate = z
  .strictObject({
    organization_id: uuid('The organization (a User subject must name it).').optional(),
    url,
    event_types: eventTypes,
    description: description.optional(),
    enabled: enabled.optional(),
    api_version: apiVersionField('its webhook bodies are rendered in'),
  })
  .meta({ id: 'WebhookEndpointCreate', description: 'A new webhook endpoint.' });

const WebhookEndpointUpdate = z
  .strictObject({
    url: url.optional(),
    event_types: eventTypes.optional(),
    description: description.optional(),
    enabled: enabled.optional(),
    api_version: apiVersionField('its webhook bodies are rendered in', 'unchanged'),
  })
  .meta({
    id: 'WebhookEndpointUpdate',
    description: 'Fields to change; only the fields sent change. Enabling again restarts the failure count.',
  });

const WebhookSecretRotate = z
  .strictObject({
    expire_previous_in: doc(
      z.number().int().min(0).max(604_800),
      'Seconds the previous secret keeps signing (0..604800, default 86400).',
      86_400,
    ).optional(),
  })
  .meta({ id: 'WebhookSecretRotate', description: 'How long the previous secret keeps signing.' });

const WebhookSecretRotated = z
  .object({
    secret: doc(
      z.string(),
      'The new signing secret (`whsec_` + base64). Shown once, in this answer only: store it now.',
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    ),
  })
  .meta({ id: 'WebhookSecretRotated', description: 'The new signing secret (shown once).' });

export const WebhookAttemptRead = z
  .object({
    id: uuid('The attempt id.'),
    event_id: uuid('The event sent.'),
    attempt: doc(z.number().int().min(1), 'Which attempt of this delivery it was (1 to 10).', 1),
    status: doc(z.enum(['succeeded', 'failed']), 'succeeded: a 2xx within 10 s.', 'succeeded'),
    response_code: doc(z.number().int().nullable(), "The receiver's HTTP status; null when none came.", 200),
    duration_ms: doc(z.number().int().min(0), 'How long the attempt took.', 87),
    error: doc(z.string().nullable(), 'Why it failed.', null),
    created_at: timestamp('When the attempt started (RFC 3339, UTC); it took duration_ms.'),
  })
  .meta({ id: 'WebhookAttempt', description: 'One attempt to deliver an event to an endpoint.' });

const columns = `id, organization_id, url, event_types, description, enabled, secret_rotated_at, ${API_VERSION_COLUMN}, created_at, updated_at`;
const attemptColumns = 'id, event_id, attempt, status, response_code, duration_ms, error, created_at';
const endpointListSpec: ListSpec = {
  from: 'rowgate.webhook_endpoints',
  columns,
  sortable: { created_at: 'created_at' },
  perOrganization: { permission: 'organization:manage' },
};
const attemptListSpec: ListSpec = { from: 'rowgate.webhook_attempts', columns: attemptColumns, sortable: { created_at: 'created_at' } };
const read = access.organization(...readScopes('webhooks'));
const write = access.organization(...writeScopes('webhooks'));

function checkUrl(value: string) {
  const denial = urlDenial(value, loopbackAllowed());
  if (denial) throw invalidField(['body', 'url'], denial, value);
}

/** SPEC §5 steps 3-5 for one endpoint: 404 out of reach, 403 without organization:manage (the scope: the route's access). */
const manageEndpoint = { resource: 'webhook_endpoint', policy: 'organization:manage' } as const;

export const webhookEndpointRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/webhook-endpoints/',
    operationId: 'webhook_endpoints:list',
    explanation: explain.list,
    summary: 'List webhook endpoints',
    description: 'The endpoints of the organizations where the user may manage the organization (`organization:manage`).',
    tag: 'webhooks',
    access: read,
    query: listQuery(endpointListSpec, { organization_id: organizationFilter }),
    status: 200,
    response: listSchema(WebhookEndpointRead, 'WebhookEndpoint'),
    handler: ({ tx, query }) => runList(tx, endpointListSpec, query, new Where().organizations(query.organization_id)),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/webhook-endpoints/',
    operationId: 'webhook_endpoints:create',
    explanation: explain.target('organization:manage'),
    summary: 'Create a webhook endpoint',
    description:
      'Finance event types need the right to read them. The answer carries the signing secret, once. An organization has at most 16 endpoints (past them: 403 `NotPermitted`; delete one to make room).',
    authorize: { resource: 'organization', policy: 'organization:manage', field: 'organization_id' },
    tag: 'webhooks',
    access: write,
    body: WebhookEndpointCreate,
    status: 201,
    response: WebhookEndpointCreated,
    handler: async ({ tx, body, secret: serverSecret }) => {
      checkUrl(body.url);
      const secret = generateWebhookSecret();
      await tx.one(PIN_API_VERSION, [body.api_version ?? API_VERSIONS.newest]);
      const created = await tx.one(`select ${columns} from rowgate.create_webhook_endpoint($1, $2, $3, $4, $5, $6)`, [
        body.organization_id ?? null,
        body.url,
        body.event_types,
        body.description ?? null,
        body.enabled ?? true,
        sealSecret(secret, serverSecret),
      ]);
      return { ...created, secret };
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/webhook-endpoints/{id}',
    operationId: 'webhook_endpoints:get',
    summary: 'Get a webhook endpoint',
    tag: 'webhooks',
    access: read,
    params: idParams,
    authorize: manageEndpoint,
    status: 200,
    response: WebhookEndpointRead,
    handler: async ({ tx, params }) => found(await tx.one(`select ${columns} from rowgate.webhook_endpoints where id = $1`, [params.id])),
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/webhook-endpoints/{id}',
    operationId: 'webhook_endpoints:update',
    summary: 'Update a webhook endpoint',
    tag: 'webhooks',
    access: write,
    params: idParams,
    body: WebhookEndpointUpdate,
    authorize: manageEndpoint,
    status: 200,
    response: WebhookEndpointRead,
    handler: async ({ tx, params, body }) => {
      if (body.url !== undefined) checkUrl(body.url);
      return found(
        await tx.one(
          `update rowgate.webhook_endpoints set url = coalesce($2, url), event_types = coalesce($3, event_types),
             description = case when $4 then $5 else description end, enabled = coalesce($6, enabled),
             api_version = coalesce($7, api_version)
           where id = $1 returning ${columns}`,
          [
            params.id,
            body.url ?? null,
            body.event_types ?? null,
            body.description !== undefined,
            body.description ?? null,
            body.enabled ?? null,
            body.api_version ?? null,
          ],
        ),
      );
    },
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/webhook-endpoints/{id}/secret/rotate',
    operationId: 'webhook_endpoints:rotate_secret',
    explanation: explain.authorized('webhook_endpoint', 'organization:manage'),
    summary: "Rotate an endpoint's signing secret",
    description:
      'A new secret signs every attempt from now on, first or retried. Until the previous one expires (`expire_previous_in` seconds, default 86400; 0 ends it at once), each delivery carries both signatures, space-separated, so a receiver holding either verifies it. An endpoint has at most two live secrets: rotating again ends the previous one at once. The new secret is in this answer only. Writes `webhook_endpoint.updated` (`secret_rotated_at`).',
    tag: 'webhooks',
    access: write,
    params: idParams,
    body: WebhookSecretRotate,
    status: 200,
    response: WebhookSecretRotated,
    handler: async ({ tx, params, body, secret: serverSecret }) => {
      const secret = generateWebhookSecret();
      await tx.one('select rowgate.rotate_webhook_secret($1, $2, $3)', [
        params.id,
        sealSecret(secret, serverSecret),
        body.expire_previous_in ?? 86_400,
      ]);
      return { secret };
    },
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/webhook-endpoints/{id}',
    operationId: 'webhook_endpoints:delete',
    explanation: explain.authorized('webhook_endpoint', 'organization:manage'),
    summary: 'Delete a webhook endpoint',
    description: 'Its pending deliveries are dropped.',
    tag: 'webhooks',
    access: write,
    params: idParams,
    status: 204,
    handler: async ({ tx, params }) => {
      await tx.one('select rowgate.delete_webhook_endpoint($1)', [params.id]);
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/webhook-endpoints/{id}/deliveries',
    operationId: 'webhook_deliveries:list',
    summary: "List an endpoint's delivery attempts",
    tag: 'webhooks',
    access: read,
    params: idParams,
    query: listQuery(attemptListSpec, {
      event_id: multi(z.uuid(), 'Only attempts of this event (repeatable).', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
      status: multi(
        doc(z.enum(['succeeded', 'failed']), 'An outcome.', 'failed'),
        'Only attempts with this outcome (repeatable).',
        'failed',
      ),
    }),
    status: 200,
    authorize: manageEndpoint,
    response: listSchema(WebhookAttemptRead, 'WebhookAttempt'),
    handler: async ({ tx, params, query }) =>
      runList(
        tx,
        attemptListSpec,
        query,
        new Where().equals('endpoint_id', params.id).anyOf('event_id', query.event_id, 'uuid').anyOf('status', query.status),
      ),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/webhook-endpoints/{id}/redeliver',
    operationId: 'webhook_endpoints:redeliver',
    explanation: explain.authorized('webhook_endpoint', 'organization:manage'),
    summary: 'Send an event to an endpoint again',
    description: 'A new delivery of the event (up to 10 attempts), whatever became of the earlier ones.',
    tag: 'webhooks',
    access: write,
    params: idParams,
    body: z
      .strictObject({ event_id: uuid('An event of the endpoint’s organization.') })
      .meta({ id: 'WebhookRedeliver', description: 'The event to send again.' }),
    status: 202,
    response: z
      .object({ endpoint_id: uuid('The endpoint.'), event_id: uuid('The event, queued for delivery.') })
      .meta({ id: 'WebhookRedelivery', description: 'The delivery was queued.' }),
    handler: async ({ tx, params, body }) => {
      await tx.one('select rowgate.redeliver_webhook_event($1, $2)', [params.id, body.event_id]);
      return { endpoint_id: params.id, event_id: body.event_id };
    },
  }),
];
