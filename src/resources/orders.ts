// /v1/orders: what customers bought (SPEC §9, §11). A paid order records a payment transaction.
import { z } from 'zod';
import { currency } from '../core/money.ts';
import { found } from '../core/errors.ts';
import { createdWindow, listQuery, listSchema, metadataFilter, multi, organizationFilter } from '../listing/lists.ts';
import { runList, Where, type ListSpec } from '../listing/list-statement.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { doc, idParams, jsonOrNull, metadata, timestamps, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

const amount = doc(z.number().int().min(0).max(100_000_000_000), "Amount in the currency's minor unit (cents).", 2500);
const status = doc(z.enum(['pending', 'paid', 'refunded']), 'pending → paid → refunded; a status only moves forward.', 'paid');

export const OrderRead = z
  .object({
    id: uuid('The order id.'),
    organization_id: uuid("The organization that sold it (the product's)."),
    customer_id: uuid('The customer who bought.'),
    product_id: uuid('The product bought.'),
    amount,
    currency,
    status,
    refunded_amount: doc(
      z.number().int().min(0).max(100_000_000_000),
      'How much of `amount` has been refunded (the sum of its refunds, SPEC §18); equals `amount` once the order is refunded.',
      1000,
    ),
    metadata,
    ...timestamps,
  })
  .meta({ id: 'Order', description: 'An order of a product by a customer.' });

const OrderCreate = z
  .strictObject({
    customer_id: uuid("The customer; must belong to the product's organization."),
    product_id: uuid('The product; its organization owns the order.'),
    amount: amount.optional(),
    currency: doc(currency, "Currency of `amount` (requires `amount`); default: the product's currency.", 'usd').optional(),
    status: doc(z.enum(['pending', 'paid']), 'pending (default) or paid; an order is refunded later, by an update.', 'paid').optional(),
    metadata: metadata.optional(),
  })
  .refine((o) => o.currency === undefined || o.amount !== undefined, {
    message: 'amount is required when currency is given',
    path: ['amount'],
  })
  .meta({ id: 'OrderCreate', description: "A new order; amount and currency default to the product's price, status to pending." });

const OrderUpdate = z
  .strictObject({
    status: doc(
      z.enum(['pending', 'paid', 'refunded']),
      'pending → paid → refunded; a status only moves forward. `refunded` refunds what remains of a paid order (a refund of reason `other`).',
      'refunded',
    ).optional(),
    metadata: metadata.optional(),
  })
  .meta({ id: 'OrderUpdate', description: 'Fields to change: the status (forward only), the metadata (replaced whole).' });

export const orderColumns =
  'id, organization_id, customer_id, product_id, amount, currency, status, refunded_amount, metadata, created_at, updated_at';
const read = readScopes('orders');
const write = writeScopes('orders');
const idFilter = (what: string) => multi(z.uuid(), `Only orders of this ${what} (repeatable).`, '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b');

export const orderSortable = { created_at: 'created_at', amount: 'amount' };
export const orderListSpec: ListSpec = {
  from: 'rowgate.orders',
  columns: orderColumns,
  sortable: orderSortable,
  perOrganization: { counter: 'orders', inOrderIndex: true },
};

export const orderRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/orders/',
    operationId: 'orders:list',
    exportedAs: 'orders',
    explanation: explain.list,
    summary: 'List orders',
    tag: 'orders',
    access: access.organization(...read),
    query: listQuery(orderListSpec, {
      organization_id: organizationFilter,
      customer_id: idFilter('customer'),
      product_id: idFilter('product'),
      status: multi(status, 'Only orders with this status (repeatable).', 'paid'),
      external_customer_id: multi(
        z.string().min(1).max(200),
        "Only orders of the customer with this external id (repeatable; the organization's live customers).",
        'cus_8f2a61',
      ),
      metadata: metadataFilter,
      ...createdWindow,
    }),
    status: 200,
    response: listSchema(OrderRead, 'Order'),
    handler: ({ tx, query }) =>
      runList(
        tx,
        orderListSpec,
        query,
        new Where()
          .organizations(query.organization_id)
          .anyOf('customer_id', query.customer_id, 'uuid')
          .anyOf('product_id', query.product_id, 'uuid')
          .anyOf('status', query.status)
          .externalCustomers(query.external_customer_id)
          .metadata(query)
          .created(query),
      ),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/orders/{id}',
    operationId: 'orders:get',
    explanation: explain.visible('orders'),
    summary: 'Get an order',
    tag: 'orders',
    access: access.organization(...read),
    params: idParams,
    status: 200,
    response: OrderRead,
    handler: async ({ tx, params }) => found(await tx.one(`select ${orderColumns} from rowgate.orders where id = $1`, [params.id])),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/orders/',
    operationId: 'orders:create',
    explanation: explain.target('orders:write'),
    summary: 'Create an order',
    description: "The organization is the product's; the customer must belong to it (422 at body.customer_id).",
    authorize: { resource: 'product', policy: 'orders:write', field: 'product_id' },
    tag: 'orders',
    access: access.organization(...write),
    body: OrderCreate,
    status: 201,
    response: OrderRead,
    handler: async ({ tx, body }) => {
      // the metadata goes in with the insert, so the order's events carry it
      return tx.one(`select ${orderColumns} from rowgate.create_order($1, $2, $3, $4, $5, $6::jsonb)`, [
        body.product_id,
        body.customer_id,
        body.amount ?? null,
        body.currency ?? null,
        body.status ?? null,
        jsonOrNull(body.metadata),
      ]);
    },
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/orders/{id}',
    operationId: 'orders:update',
    summary: 'Update an order',
    description:
      'Moves the status forward; `paid` records a payment transaction; `refunded` refunds what remains of the order: one refund (reason `other`) and its `refund` transaction, as `POST /v1/refunds/` would.',
    tag: 'orders',
    access: access.organization(...write),
    params: idParams,
    body: OrderUpdate,
    status: 200,
    response: OrderRead,
    authorize: { resource: 'order', policy: 'orders:write' },
    handler: ({ tx, params, body }) =>
      tx.one(
        `update rowgate.orders set status = coalesce($2, status), metadata = coalesce($3::jsonb, metadata)
         where id = $1 returning ${orderColumns}`,
        [params.id, body.status ?? null, jsonOrNull(body.metadata)],
      ),
  }),
];
