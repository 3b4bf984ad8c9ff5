// /v1/customers: an organization's customers (SPEC §9, §11).
import { z } from 'zod';
import { found } from '../http/errors.ts';
import { type ListSpec, listQuery, listSchema, multi, organizationFilter, runList, Where } from './lists.ts';
import { access, readScopes, route, writeScopes } from '../http/route.ts';
import { doc, idParams, timestamps, uuid } from './fields.ts';

const email = doc(
  z
    .email()
    .max(320)
    .transform((e) => e.toLowerCase()),
  "E-mail address; unique among the organization's customers.",
  'jo@example.com',
);
const firstName = doc(z.string().trim().max(200).nullable(), 'First name; null when unknown.', 'Jo');
const lastName = doc(z.string().trim().max(200).nullable(), 'Last name; null when unknown.', 'Doe');
const status = doc(z.enum(['pending', 'active']), 'pending until the customer is confirmed, then active.', 'active');

export const CustomerRead = z
  .object({
    id: uuid('The customer id.'),
    organization_id: uuid('The organization the customer buys from.'),
    email: doc(z.string(), "E-mail address; unique among the organization's customers.", 'jo@example.com'),
    first_name: firstName,
    last_name: lastName,
    status,
    ...timestamps,
  })
  .meta({ id: 'Customer', description: 'A customer of an organization.' });

const CustomerCreate = z
  .strictObject({
    organization_id: uuid('The organization; required for users, implied for organization tokens.').optional(),
    email,
    first_name: firstName.optional(),
    last_name: lastName.optional(),
    status: status.optional(),
  })
  .meta({ id: 'CustomerCreate', description: 'A new customer (status defaults to pending).' });

const CustomerUpdate = z
  .strictObject({
    email: email.optional(),
    first_name: firstName.optional(),
    last_name: lastName.optional(),
    status: status.optional(),
  })
  .meta({ id: 'CustomerUpdate', description: 'Fields to change; only the fields sent change; null clears a name.' });

export const customerColumns = 'id, organization_id, email, first_name, last_name, status, created_at, updated_at';
const read = readScopes('customers');
const write = writeScopes('customers');

const customerList: ListSpec = {
  from: 'rowgate.customers',
  columns: customerColumns,
  sortable: { created_at: 'created_at', email: 'email' },
  perOrganization: { counter: 'customers' },
};

export const customerRoutes = [
  route({
    method: 'get',
    path: '/v1/customers/',
    operationId: 'customers:list',
    summary: 'List customers',
    tag: 'customers',
    access: access.organization(...read),
    query: listQuery(customerList, {
      organization_id: organizationFilter,
      status: multi(status, 'Only customers with this status (repeatable).', 'active'),
      email: doc(z.string().max(320).optional(), 'Only the customer with this e-mail address (case-insensitive).', 'jo@example.com'),
      query: doc(z.string().max(200).optional(), 'Case-insensitive search in e-mail and names.', 'jo'),
    }),
    status: 200,
    response: listSchema(CustomerRead, 'Customer'),
    handler: ({ tx, query }) =>
      runList(
        tx,
        customerList,
        query,
        new Where()
          .organizations(query.organization_id)
          .anyOf('status', query.status)
          .equals('email', query.email?.toLowerCase())
          .search(['email', 'first_name', 'last_name'], query.query),
      ),
  }),
  route({
    method: 'get',
    path: '/v1/customers/{id}',
    operationId: 'customers:get',
    summary: 'Get a customer',
    tag: 'customers',
    access: access.organization(...read),
    params: idParams,
    status: 200,
    response: CustomerRead,
    handler: async ({ tx, params }) => found(await tx.one(`select ${customerColumns} from rowgate.customers where id = $1`, [params.id])),
  }),
  route({
    method: 'post',
    path: '/v1/customers/',
    operationId: 'customers:create',
    summary: 'Create a customer',
    description:
      "Needs the `customers:write` permission. The e-mail must be unique among the organization's customers (422 at body.email).",
    tag: 'customers',
    access: access.organization(...write),
    body: CustomerCreate,
    status: 201,
    response: CustomerRead,
    handler: ({ tx, body }) =>
      tx.one(
        `insert into rowgate.customers (organization_id, email, first_name, last_name, status)
         values (rowgate_hidden.target_organization_id($1, 'customers:write'), $2, $3, $4, $5)
         returning ${customerColumns}`,
        [body.organization_id ?? null, body.email, body.first_name ?? null, body.last_name ?? null, body.status ?? 'pending'],
      ),
  }),
  route({
    method: 'patch',
    path: '/v1/customers/{id}',
    operationId: 'customers:update',
    summary: 'Update a customer',
    tag: 'customers',
    access: access.organization(...write),
    params: idParams,
    body: CustomerUpdate,
    status: 200,
    response: CustomerRead,
    authorize: { resource: 'customer', policy: 'customers:write' },
    handler: ({ tx, params, body }) =>
      tx.one(
        `update rowgate.customers set
           email = coalesce($2, email),
           first_name = case when $3 then $4 else first_name end,
           last_name = case when $5 then $6 else last_name end,
           status = coalesce($7, status)
         where id = $1 returning ${customerColumns}`,
        [
          params.id,
          body.email ?? null,
          'first_name' in body,
          body.first_name ?? null,
          'last_name' in body,
          body.last_name ?? null,
          body.status ?? null,
        ],
      ),
  }),
  route({
    method: 'delete',
    path: '/v1/customers/{id}',
    operationId: 'customers:delete',
    summary: 'Delete a customer',
    description: 'A soft delete: the customer disappears from every API and its portal sessions stop working; its orders remain.',
    tag: 'customers',
    access: access.organization(...write),
    params: idParams,
    status: 204,
    authorize: { resource: 'customer', policy: 'customers:write', checkedBy: 'rowgate.delete_resource' },
    handler: async ({ tx, params }) => {
      await tx.one(`select rowgate.delete_resource('customer', $1)`, [params.id]);
    },
  }),
];
