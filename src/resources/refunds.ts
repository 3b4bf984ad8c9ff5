// /v1/refunds: money given back on a paid order (SPEC §18). Scopes
// refunds_read|write; creating needs the orders:write permission. Every refund
// goes through rowgate.create_refund (one SQL function for REST and GraphQL),
// which locks the order, so refunds of one order never exceed it together.
import { z } from 'zod';
import { currency } from '../core/money.ts';
import { found } from '../core/errors.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { doc, idParams, jsonOrNull, metadata, timestamps, uuid } from '../core/fields.ts';
import { createdWindow, listQuery, listSchema, metadataFilter, multi, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { explain } from '../http/explanation.ts';

const amount = doc(
  z.number().int().min(1).max(100_000_000_000),
  "Amount given back, in the currency's minor unit (cents): at least 1, at most what remains of the order.",
  1000,
);
const reason = doc(
  z.enum(['duplicate', 'fraudulent', 'customer_request', 'other']),
  'Why the money is given back: duplicate, fraudulent, customer_request or other.',
  'customer_request',
);
const comment = doc(z.string().max(1000).nullable(), 'A note for your own records; null when none.', 'Arrived damaged');

export const RefundRead = z
  .object({
    id: uuid('The refund id.'),
    organization_id: uuid("The organization that refunded (the order's)."),
    order_id: uuid('The order refunded.'),
    amount,
    currency: doc(currency, "The order's currency.", 'usd'),
    reason,
    comment,
    metadata,
    ...timestamps,
  })
  .meta({ id: 'Refund', description: 'Money given back on a paid order; it records a `refund` transaction of −amount.' });

const RefundCreate = z
  .strictObject({
    order_id: uuid("The order to refund; must be `paid` (else 422 at body.order_id) and within the subject's reach."),
    amount,
    reason,
    comment: comment.optional(),
    metadata: metadata.optional(),
  })
  .meta({
    id: 'RefundCreate',
    description: "A refund of a paid order. The refund that brings the order's refunded_amount to its amount sets its status to refunded.",
  });

export const refundColumns = 'id, organization_id, order_id, amount, currency, reason, comment, metadata, created_at, updated_at';
const read = readScopes('refunds');
const write = writeScopes('refunds');

export const refundListSpec: ListSpec = {
  from: 'rowgate.refunds',
  columns: refundColumns,
  sortable: { created_at: 'created_at', amount: 'amount' },
  perOrganization: { counter: 'refunds' },
};

export const refundRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/refunds/',
    operationId: 'refunds:list',
    exportedAs: 'refunds',
    explanation: explain.list,
    summary: 'List refunds',
    description: "The refunds of the subject's organizations: visible to whoever reads their orders (every member), with `refunds_read`.",
    tag: 'refunds',
    access: access.organization(...read),
    query: listQuery(refundListSpec, {
      organization_id: organizationFilter,
      order_id: multi(z.uuid(), 'Only refunds of this order (repeatable).', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
      metadata: metadataFilter,
      ...createdWindow,
    }),
    status: 200,
    response: listSchema(RefundRead, 'Refund'),
    handler: ({ tx, query }) =>
      runList(
        tx,
        refundListSpec,
        query,
        new Where().organizations(query.organization_id).anyOf('order_id', query.order_id, 'uuid').metadata(query).created(query),
      ),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/refunds/{id}',
    operationId: 'refunds:get',
    explanation: explain.visible('refunds'),
    summary: 'Get a refund',
    tag: 'refunds',
    access: access.organization(...read),
    params: idParams,
    status: 200,
    response: RefundRead,
    handler: async ({ tx, params }) => found(await tx.one(`select ${refundColumns} from rowgate.refunds where id = $1`, [params.id])),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/refunds/',
    operationId: 'refunds:create',
    explanation: explain.target('orders:write'),
    summary: 'Refund an order',
    description:
      'Only a `paid` order is refunded (422 at body.order_id), by at most what remains of it (422 at body.amount). Records a `refund` transaction of −amount; the refund that completes the order sets its status to `refunded`. Refunds of one order are taken one at a time, so concurrent ones never exceed it together.',
    authorize: { resource: 'order', policy: 'orders:write', field: 'order_id' },
    tag: 'refunds',
    access: access.organization(...write),
    body: RefundCreate,
    status: 201,
    response: RefundRead,
    handler: ({ tx, body }) =>
      tx.one(`select ${refundColumns} from rowgate.create_refund($1, $2, $3, $4, $5::jsonb)`, [
        body.order_id,
        body.amount,
        body.reason,
        body.comment ?? null,
        jsonOrNull(body.metadata),
      ]),
  }),
];
