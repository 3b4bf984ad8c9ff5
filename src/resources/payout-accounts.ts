// /v1/payout-accounts: where an organization's balance is paid out. Web payouts
// access classes (SPEC §4) plus the finance policies (SPEC §5).
import { z } from 'zod';
import { country, currency } from '../core/money.ts';
import { listQuery, listSchema, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { access, route } from '../http/route-declaration.ts';
import { doc, idParams, timestamps, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

const type = doc(z.enum(['bank_account', 'stripe', 'open_collective']), 'How the payout is made.', 'bank_account');

const PayoutAccountRead = z
  .object({
    id: uuid('The payout account id.'),
    organization_id: uuid('The organization it pays out for.'),
    type,
    country,
    currency,
    ...timestamps,
  })
  .meta({ id: 'PayoutAccount', description: "A destination for an organization's payouts." });

const PayoutAccountCreate = z
  .strictObject({ organization_id: uuid('The organization (the caller must be its account admin).'), type, country, currency })
  .meta({ id: 'PayoutAccountCreate', description: 'A new payout account.' });

const columns = 'id, organization_id, type, country, currency, created_at, updated_at';

const payoutAccountList: ListSpec = { from: 'rowgate.payout_accounts', columns, sortable: { created_at: 'created_at' } };

export const payoutAccountRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/payout-accounts/',
    operationId: 'payout_accounts:list',
    explanation: explain.list,
    summary: 'List payout accounts',
    description: 'Those of organizations whose account the user administers (finance-read policy).',
    tag: 'payout-accounts',
    access: access.webPayoutsRead,
    query: listQuery(payoutAccountList, { organization_id: organizationFilter }),
    status: 200,
    response: listSchema(PayoutAccountRead, 'PayoutAccount'),
    handler: ({ tx, query }) => runList(tx, payoutAccountList, query, new Where().organizations(query.organization_id)),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/payout-accounts/{id}',
    operationId: 'payout_accounts:get',
    summary: 'Get a payout account',
    tag: 'payout-accounts',
    access: access.webPayoutsRead,
    params: idParams,
    status: 200,
    response: PayoutAccountRead,
    authorize: { resource: 'payout_account', policy: 'finance_read' },
    handler: ({ tx, params }) => tx.one(`select ${columns} from rowgate.payout_accounts where id = $1`, [params.id]),
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/payout-accounts/',
    operationId: 'payout_accounts:create',
    explanation: explain.target('finance_write'),
    summary: 'Create a payout account',
    description: 'The account admin of the organization only (finance-write policy).',
    tag: 'payout-accounts',
    access: access.webPayoutsWrite,
    body: PayoutAccountCreate,
    status: 201,
    response: PayoutAccountRead,
    handler: ({ tx, body }) =>
      tx.one(
        `insert into rowgate.payout_accounts (organization_id, type, country, currency)
         values (rowgate_hidden.target_organization_id($1, 'finance_write'), $2, $3, $4) returning ${columns}`,
        [body.organization_id, body.type, body.country, body.currency],
      ),
  }),
  route({
    method: 'delete',
    effect: 'writes',
    path: '/v1/payout-accounts/{id}',
    operationId: 'payout_accounts:delete',
    summary: 'Delete a payout account',
    tag: 'payout-accounts',
    access: access.webPayoutsWrite,
    params: idParams,
    status: 204,
    authorize: { resource: 'payout_account', policy: 'finance_write', checkedBy: 'rowgate.delete_resource' },
    handler: async ({ tx, params }) => {
      await tx.one(`select rowgate.delete_resource('payout_account', $1)`, [params.id]);
    },
  }),
];
