// /v1/customer-portal: what a customer (or a member seat of a business customer)
// sees of itself: its profile and its orders. RLS shows each subject only its own.
import { z } from 'zod';
import { CustomerRead } from './customers.ts';
import { found, notPermitted } from '../core/errors.ts';
import { listQuery, listSchema, multi } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { OrderRead, orderSortable } from './orders.ts';
import { access, route } from '../http/route-declaration.ts';
import { doc, idParams } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

const PortalCustomerUpdate = z
  .strictObject({
    first_name: doc(z.string().trim().max(200).nullable(), 'First name; null clears it.', 'Jo').optional(),
    last_name: doc(z.string().trim().max(200).nullable(), 'Last name; null clears it.', 'Doe').optional(),
  })
  .meta({ id: 'PortalCustomerUpdate', description: 'Fields a customer may change of itself.' });

// The portal shows a customer itself and its orders, not the merchant's own
// bookkeeping (external ids, metadata): their columns are not granted to portal roles.
// An order's refunded_amount is shown: what was given back is the customer's business.
const PortalCustomer = CustomerRead.omit({ external_id: true, metadata: true }).meta({
  id: 'PortalCustomer',
  description: 'The current customer, as the portal shows it.',
});
const PortalOrder = OrderRead.omit({ metadata: true }).meta({ id: 'PortalOrder', description: 'An order, as the portal shows it.' });
const customerColumns = 'id, organization_id, email, first_name, last_name, status, created_at, updated_at';
const orderColumns = 'id, organization_id, customer_id, product_id, amount, currency, status, refunded_amount, created_at, updated_at';

const read = access.customerPortal('customer_portal_read', 'customer_portal_write');
const write = access.customerPortal('customer_portal_write');
const me = `select ${customerColumns} from rowgate.customers where id = rowgate_hidden.current_customer_id()`;

const portalOrderList: ListSpec = { from: 'rowgate.orders', columns: orderColumns, sortable: orderSortable };

export const customerPortalRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/customer-portal/customers/me',
    operationId: 'customer_portal:me',
    explanation: explain.none,
    summary: 'Get the current customer',
    tag: 'customer-portal',
    access: read,
    status: 200,
    response: PortalCustomer,
    handler: async ({ tx }) => found(await tx.one(me)),
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/customer-portal/customers/me',
    operationId: 'customer_portal:update_me',
    explanation: explain.none,
    summary: 'Update the current customer',
    description: 'Customers only; member seats have read-only access (403).',
    tag: 'customer-portal',
    access: write,
    body: PortalCustomerUpdate,
    status: 200,
    response: PortalCustomer,
    handler: async ({ tx, body }) => {
      const denial = await tx.one<{ denial: string | null }>('select rowgate_hidden.portal_write_denial() as denial');
      if (denial?.denial) throw notPermitted(denial.denial);
      return found(
        await tx.one(
          `update rowgate.customers set
             first_name = case when $1 then $2 else first_name end,
             last_name = case when $3 then $4 else last_name end
           where id = rowgate_hidden.current_customer_id() returning ${customerColumns}`,
          ['first_name' in body, body.first_name ?? null, 'last_name' in body, body.last_name ?? null],
        ),
      );
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/customer-portal/orders/',
    operationId: 'customer_portal:list_orders',
    explanation: explain.none,
    summary: "List the current customer's orders",
    tag: 'customer-portal',
    access: read,
    query: listQuery(portalOrderList, {
      status: multi(z.enum(['pending', 'paid', 'refunded']), 'Only orders with this status (repeatable).', 'paid'),
    }),
    status: 200,
    response: listSchema(PortalOrder, 'PortalOrder'),
    handler: ({ tx, query }) => runList(tx, portalOrderList, query, new Where().anyOf('status', query.status)),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/customer-portal/orders/{id}',
    operationId: 'customer_portal:get_order',
    explanation: explain.own('orders'),
    summary: "Get one of the current customer's orders",
    tag: 'customer-portal',
    access: read,
    params: idParams,
    status: 200,
    response: PortalOrder,
    handler: async ({ tx, params }) => found(await tx.one(`select ${orderColumns} from rowgate.orders where id = $1`, [params.id])),
  }),
];
