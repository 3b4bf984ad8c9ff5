// /v1/customers: an organization's customers (SPEC §9, §11).
import { z } from 'zod';
import type { Tx } from '../db/pool.ts';
import { found } from '../core/errors.ts';
import { createdWindow, listQuery, listSchema, metadataFilter, multi, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { doc, idParams, jsonOrNull, metadata, timestamps, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

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
const externalId = doc(
  z.string().min(1).max(200).nullable(),
  "Your own id for the customer; unique among the organization's live customers; null when none.",
  'cus_8f2a61',
);
const status = doc(z.enum(['pending', 'active']), 'pending until the customer is confirmed, then active.', 'active');

export const CustomerRead = z
  .object({
    id: uuid('The customer id.'),
    organization_id: uuid('The organization the customer buys from.'),
    email: doc(z.string(), "E-mail address; unique among the organization's customers.", 'jo@example.com'),
    first_name: firstName,
    last_name: lastName,
    status,
    external_id: externalId,
    metadata,
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
    external_id: externalId.optional(),
    metadata: metadata.optional(),
  })
  .meta({ id: 'CustomerCreate', description: 'A new customer (status defaults to pending).' });

export const CustomerUpdate = z
  .strictObject({
    email: email.optional(),
    first_name: firstName.optional(),
    last_name: lastName.optional(),
    status: status.optional(),
    external_id: externalId.optional(),
    metadata: metadata.optional(),
  })
  .meta({ id: 'CustomerUpdate', description: 'Fields to change; only the fields sent change; null clears a name.' });

export const customerColumns = 'id, organization_id, email, first_name, last_name, status, external_id, metadata, created_at, updated_at';
/** PATCH of a customer (by id or by external id): the policy, then only the fields sent */
/** The update of a customer whose authorization was asked (its route's declaration, or the caller's). */
export function updateCustomer(tx: Tx, id: string, body: z.infer<typeof CustomerUpdate>) {
  return tx.one(
    `update rowgate.customers set
       email = coalesce($2, email),
       first_name = case when $3 then $4 else first_name end,
       last_name = case when $5 then $6 else last_name end,
       status = coalesce($7, status),
       external_id = case when $8 then $9 else external_id end,
       metadata = coalesce($10::jsonb, metadata)
     where id = $1 returning ${customerColumns}`,
    [
      id,
      body.email ?? null,
      'first_name' in body,
      body.first_name ?? null,
      'last_name' in body,
      body.last_name ?? null,
      body.status ?? null,
      'external_id' in body,
      body.external_id ?? null,
      jsonOrNull(body.metadata),
    ],
  );
}

export const deleteCustomer = async (tx: Tx, id: string) => {
  await tx.one(`select rowgate.delete_resource('customer', $1)`, [id]);
};

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
    effect: 'reads',
    path: '/v1/customers/',
    operationId: 'customers:list',
    exportedAs: 'customers',
    explanation: explain.list,
    summary: 'List customers',
    tag: 'customers',
    access: access.organization(...read),
    query: listQuery(customerList, {
      organization_id: organizationFilter,
      status: multi(status, 'Only customers with this status (repeatable).', 'active'),
      email: doc(z.string().max(320).optional(), 'Only the customer with this e-mail address (case-insensitive).', 'jo@example.com'),
      query: doc(z.string().max(200).optional(), 'Case-insensitive search in e-mail and names.', 'jo'),
      external_id: multi(z.string().min(1).max(200), 'Only the customers with this external id (repeatable).', 'cus_8f2a61'),
      metadata: metadataFilter,
      ...createdWindow,
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
          .search(['email', 'first_name', 'last_name'], query.query)
          .anyOf('external_id', query.external_id)
          .metadata(query)
          .created(query),
      ),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/customers/{id}',
    operationId: 'customers:get',
    explanation: explain.visible('customers'),
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
    effect: 'writes',
    path: '/v1/customers/',
    operationId: 'customers:create',
    explanation: explain.target('customers:write'),
    summary: 'Create a customer',
    description:
      "Needs the `customers:write` permission. The e-mail must be unique among the organization's customers (422 at body.email), and so must the external id among its live customers (422 at body.external_id).",
    tag: 'customers',
    access: access.organization(...write),
    body: CustomerCreate,
    status: 201,
    response: CustomerRead,
    handler: ({ tx, body }) =>
      tx.one(
        `insert into rowgate.customers (organization_id, email, first_name, last_name, status, external_id, metadata)
         values (rowgate_hidden.target_organization_id($1, 'customers:write'), $2, $3, $4, $5, $6, coalesce($7::jsonb, '{}'))
         returning ${customerColumns}`,
        [
          body.organization_id ?? null,
          body.email,
          body.first_name ?? null,
          body.last_name ?? null,
          body.status ?? 'pending',
          body.external_id ?? null,
          jsonOrNull(body.metadata),
        ],
      ),
  }),
  route({
    method: 'patch',
    effect: 'writes',
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
    handler: ({ tx, params, body }) => updateCustomer(tx, params.id, body),
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/customers/{id}',
    operationId: 'customers:delete',
    summary: 'Delete a customer',
    description: 'A soft delete: the customer disappears from every API and its portal sessions stop working; its orders remain.',
    tag: 'customers',
    access: access.organization(...write),
    params: idParams,
    status: 204,
    authorize: { resource: 'customer', policy: 'customers:write', checkedBy: 'rowgate.delete_resource' },
    handler: ({ tx, params }) => deleteCustomer(tx, params.id),
  }),
];
