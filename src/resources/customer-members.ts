// Member seats of a business customer (SPEC §18): /v1/customers/{id}/members and
// the organization-wide /v1/members/. Scopes customers_read|write; changes need
// the customers:write permission (RLS and rowgate.delete_customer_member).
import { z } from 'zod';
import type { Tx } from '../db/pool.ts';
import { found } from '../core/errors.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { doc, jsonOrNull, metadata, timestamps, uuid } from '../core/fields.ts';
import { createdWindow, listQuery, listSchema, metadataFilter, multi, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { explain } from '../http/explanation.ts';

const email = doc(
  z
    .email()
    .max(320)
    .transform((e) => e.toLowerCase()),
  "The seat holder's e-mail address; unique among the customer's seats.",
  'ada@example.com',
);
const name = doc(z.string().trim().max(200).nullable(), "The seat holder's name; null when unknown.", 'Ada Lovelace');
const role = doc(
  z.enum(['owner', 'billing_manager', 'member']),
  'What the seat is for: owner, billing_manager or member (the default).',
  'billing_manager',
);

export const CustomerMemberRead = z
  .object({
    id: uuid('The seat id.'),
    organization_id: uuid("The organization (the customer's)."),
    customer_id: uuid('The customer the seat belongs to.'),
    email: doc(z.string(), "The seat holder's e-mail address; unique among the customer's seats.", 'ada@example.com'),
    name,
    role,
    metadata,
    ...timestamps,
  })
  .meta({ id: 'CustomerMember', description: 'A member seat of a business customer; it signs in to the customer portal.' });

const CustomerMemberList = listSchema(CustomerMemberRead, 'CustomerMember');

const CustomerMemberCreate = z
  .strictObject({ email, name: name.optional(), role: role.optional(), metadata: metadata.optional() })
  .meta({ id: 'CustomerMemberCreate', description: 'A new seat of the customer (role defaults to member).' });

const CustomerMemberUpdate = z
  .strictObject({ email: email.optional(), name: name.optional(), role: role.optional(), metadata: metadata.optional() })
  .meta({ id: 'CustomerMemberUpdate', description: 'Fields to change; only the fields sent change; null clears the name.' });

const columns = 'id, organization_id, customer_id, email, name, role, metadata, created_at, updated_at';
const customerParams = z.object({ id: uuid('The customer id.') });
const seatParams = z.object({ id: uuid('The customer id.'), member_id: uuid('The seat id.') });
const read = readScopes('customers');
const write = writeScopes('customers');
const sortable = { created_at: 'created_at', email: 'email' };
// role too: one customer's seats are few, and e-mails never tie within a customer
const customerSeatList: ListSpec = { from: 'rowgate.customer_members', columns, sortable: { ...sortable, role: 'role' } };
const seatList: ListSpec = { from: 'rowgate.customer_members', columns, sortable, perOrganization: { counter: 'customer_members' } };
const emailFilter = doc(z.string().max(320).optional(), 'Only the seat with this e-mail address (case-insensitive).', 'ada@example.com');

/** one seat of one customer, under RLS: 404 when either is out of sight or they do not belong together */
async function readSeat(tx: Tx, customerId: string, memberId: string) {
  return found(await tx.one(`select ${columns} from rowgate.customer_members where id = $1 and customer_id = $2`, [memberId, customerId]));
}

export const customerMemberRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/customers/{id}/members',
    operationId: 'customer_members:list',
    summary: "List a customer's member seats",
    tag: 'customer members',
    access: access.organization(...read),
    params: customerParams,
    query: listQuery(customerSeatList, { email: emailFilter, metadata: metadataFilter, ...createdWindow }),
    authorize: { resource: 'customer', policy: 'read' },
    status: 200,
    response: CustomerMemberList,
    handler: ({ tx, params, query }) =>
      runList(
        tx,
        customerSeatList,
        query,
        new Where().equals('customer_id', params.id).equals('email', query.email?.toLowerCase()).metadata(query).created(query),
      ),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/customers/{id}/members',
    operationId: 'customer_members:create',
    summary: 'Add a member seat',
    description: "The e-mail must be unique among the customer's seats (422 at body.email).",
    tag: 'customer members',
    access: access.organization(...write),
    params: customerParams,
    body: CustomerMemberCreate,
    authorize: { resource: 'customer', policy: 'customers:write' },
    status: 201,
    response: CustomerMemberRead,
    handler: async ({ tx, params, body }) => {
      return tx.one(
        `insert into rowgate.customer_members (customer_id, email, name, role, metadata)
         values ($1, $2, $3, $4, coalesce($5::jsonb, '{}')) returning ${columns}`,
        [params.id, body.email, body.name ?? null, body.role ?? 'member', jsonOrNull(body.metadata)],
      );
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/customers/{id}/members/{member_id}',
    operationId: 'customer_members:get',
    explanation: explain.visible('customer_members', { id: 'customer_id', member_id: 'id' }),
    summary: 'Get a member seat',
    tag: 'customer members',
    access: access.organization(...read),
    params: seatParams,
    status: 200,
    response: CustomerMemberRead,
    handler: ({ tx, params }) => readSeat(tx, params.id, params.member_id),
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/customers/{id}/members/{member_id}',
    operationId: 'customer_members:update',
    explanation: explain.visible('customer_members', { id: 'customer_id', member_id: 'id' }, 'customers:write'),
    summary: 'Update a member seat',
    tag: 'customer members',
    access: access.organization(...write),
    params: seatParams,
    body: CustomerMemberUpdate,
    // the seat resolved (404) before the policy (403), as SPEC §5 orders them
    authorize: { resource: 'customer', policy: 'customers:write', resolve: (tx, params) => readSeat(tx, params.id, params.member_id) },
    status: 200,
    response: CustomerMemberRead,
    handler: async ({ tx, params, body }) => {
      return tx.one(
        `update rowgate.customer_members set
           email = coalesce($3, email),
           name = case when $4 then $5 else name end,
           role = coalesce($6, role),
           metadata = coalesce($7::jsonb, metadata)
         where id = $1 and customer_id = $2 returning ${columns}`,
        [params.member_id, params.id, body.email ?? null, 'name' in body, body.name ?? null, body.role ?? null, jsonOrNull(body.metadata)],
      );
    },
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/customers/{id}/members/{member_id}',
    operationId: 'customer_members:delete',
    explanation: explain.visible('customer_members', { id: 'customer_id', member_id: 'id' }, 'customers:write'),
    summary: 'Remove a member seat',
    description: 'A soft delete: the seat disappears from every API and its member sessions end at once.',
    tag: 'customer members',
    access: access.organization(...write),
    params: seatParams,
    status: 204,
    handler: async ({ tx, params }) => {
      await tx.one('select rowgate.delete_customer_member($1, $2)', [params.id, params.member_id]);
    },
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/members/',
    operationId: 'customer_members:list_all',
    exportedAs: 'members',
    explanation: explain.list,
    summary: 'List member seats',
    description: "The member seats of every customer of the subject's organizations.",
    tag: 'customer members',
    access: access.organization(...read),
    query: listQuery(seatList, {
      organization_id: organizationFilter,
      customer_id: multi(z.uuid(), 'Only seats of this customer (repeatable).', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
      email: emailFilter,
      metadata: metadataFilter,
      ...createdWindow,
    }),
    status: 200,
    response: CustomerMemberList,
    handler: ({ tx, query }) =>
      runList(
        tx,
        seatList,
        query,
        new Where()
          .organizations(query.organization_id)
          .anyOf('customer_id', query.customer_id, 'uuid')
          .equals('email', query.email?.toLowerCase())
          .metadata(query)
          .created(query),
      ),
  }),
];
