// /v1/customers/external/{external_id} (SPEC §18): a customer found by the
// merchant's own id. The id is unique among one organization's live customers,
// so a User reaching several organizations may have to name one.
import { z } from 'zod';
import { type Authorization, authorizeRequest } from '../auth/authorize.ts';
import type { Tx } from '../db/pool.ts';
import { invalidField, notFound } from '../core/errors.ts';
import { access, readScopes, route, writeScopes } from '../http/route-declaration.ts';
import { CustomerRead, CustomerUpdate, customerColumns, deleteCustomer, updateCustomer } from './customers.ts';
import { doc, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

const externalParams = z.object({
  external_id: doc(z.string().min(1).max(200), "The customer's external id (yours).", 'cus_8f2a61'),
});
const organizationQuery = z.strictObject({
  organization_id: uuid(
    'The organization of the customer: needed only when several of your organizations have a customer with this external id.',
  ).optional(),
});

/** The customers with this external id, as the subject sees them (RLS): at most two, enough to tell one from several. */
const BY_EXTERNAL_ID = (columns: string) =>
  `select ${columns} from rowgate.customers where external_id = $1 and ($2::uuid is null or organization_id = $2) limit 2`;

/** The one customer of the rows: 404 when none, 422 when several organizations have one. */
function theOne<T>(rows: T[]): T {
  if (!rows.length) throw notFound();
  if (rows.length > 1) {
    throw invalidField(
      ['query', 'organization_id'],
      'Customers of several of your organizations have this external id: name the organization',
    );
  }
  return rows[0]!;
}

/** The customer's id, then its policy asked as `PATCH /v1/customers/{id}` declares it. */
async function resolve(tx: Tx, externalId: string, organizationId: string | undefined, policy: Authorization): Promise<string> {
  const { id } = theOne(await tx.rows<{ id: string }>(BY_EXTERNAL_ID('id'), [externalId, organizationId ?? null]));
  await authorizeRequest(tx, policy, { id });
  return id;
}

const customersWrite: Authorization = { resource: 'customer', policy: 'customers:write' };

const common = {
  tag: 'customers',
  params: externalParams,
  query: organizationQuery,
};

export const externalCustomerRoutes = [
  route({
    ...common,
    method: 'get',
    effect: 'reads',
    path: '/v1/customers/external/{external_id}',
    operationId: 'customers:get_external',
    explanation: explain.visible('customers', { external_id: 'external_id' }),
    summary: 'Get a customer by external id',
    access: access.organization(...readScopes('customers')),
    status: 200,
    response: CustomerRead,
    // one statement (a JSON read sends it with the authentication): the rows RLS shows
    handler: async ({ tx, params, query }) =>
      theOne(await tx.rows(BY_EXTERNAL_ID(customerColumns), [params.external_id, query.organization_id ?? null])),
  }),
  route({
    ...common,
    method: 'patch',
    effect: 'writes',
    path: '/v1/customers/external/{external_id}',
    operationId: 'customers:update_external',
    explanation: explain.visible('customers', { external_id: 'external_id' }, 'customers:write'),
    summary: 'Update a customer by external id',
    description: 'As `PATCH /v1/customers/{id}`.',
    access: access.organization(...writeScopes('customers')),
    body: CustomerUpdate,
    status: 200,
    response: CustomerRead,
    handler: async ({ tx, params, query, body }) =>
      updateCustomer(tx, await resolve(tx, params.external_id, query.organization_id, customersWrite), body),
  }),
  route({
    ...common,
    method: 'delete',
    effect: 'writes',
    path: '/v1/customers/external/{external_id}',
    operationId: 'customers:delete_external',
    explanation: explain.visible('customers', { external_id: 'external_id' }, 'customers:write'),
    summary: 'Delete a customer by external id',
    description: 'As `DELETE /v1/customers/{id}`; the external id is free again afterwards.',
    access: access.organization(...writeScopes('customers')),
    status: 204,
    // rowgate.delete_resource asks the policy itself
    handler: async ({ tx, params, query }) => {
      const { id } = theOne(await tx.rows<{ id: string }>(BY_EXTERNAL_ID('id'), [params.external_id, query.organization_id ?? null]));
      await deleteCustomer(tx, id);
    },
  }),
];
