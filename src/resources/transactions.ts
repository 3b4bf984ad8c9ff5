// /v1/transactions: money movements, behind the finance:read permission filter.
import { z } from 'zod';
import { financeReadScopes } from '../auth/scopes.ts';
import { currency } from '../core/money.ts';
import { found } from '../core/errors.ts';
import { createdWindow, listQuery, listSchema, multi, organizationFilter } from '../listing/lists.ts';
import { type ListSpec, runList, Where } from '../listing/list-statement.ts';
import { access, route } from '../http/route-declaration.ts';
import { doc, idParams, timestamps, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

const type = doc(z.enum(['payment', 'refund']), 'payment when an order is paid, refund (negative) when refunded.', 'payment');

const TransactionRead = z
  .object({
    id: uuid('The transaction id.'),
    organization_id: uuid('The organization whose money moved.'),
    order_id: uuid('The order that caused it.'),
    type,
    amount: doc(z.number().int(), "Signed amount in the currency's minor unit (refunds are negative).", 2500),
    currency,
    ...timestamps,
  })
  .meta({ id: 'Transaction', description: 'A payment or refund.' });

const columns = 'id, organization_id, order_id, type, amount, currency, created_at, updated_at';
const permissionFilter =
  'Permission filter `finance:read`: a user sees the transactions of organizations where its role grants it (not the `member` role); an organization token sees all of its own.';

const transactionList: ListSpec = {
  from: 'rowgate.transactions',
  columns,
  sortable: { created_at: 'created_at', amount: 'amount' },
  // the same permission filter as the table's RLS policy
  perOrganization: { permission: 'finance:read', counter: 'transactions' },
};

export const transactionRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/transactions/',
    operationId: 'transactions:list',
    exportedAs: 'transactions',
    explanation: explain.list,
    summary: 'List transactions',
    description: permissionFilter,
    tag: 'transactions',
    access: access.organization(...financeReadScopes),
    query: listQuery(transactionList, {
      organization_id: organizationFilter,
      order_id: multi(z.uuid(), 'Only transactions of this order (repeatable).', '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b'),
      type: multi(type, 'Only transactions of this type (repeatable).', 'payment'),
      ...createdWindow,
    }),
    status: 200,
    response: listSchema(TransactionRead, 'Transaction'),
    handler: ({ tx, query }) =>
      runList(
        tx,
        transactionList,
        query,
        new Where().organizations(query.organization_id).anyOf('order_id', query.order_id, 'uuid').anyOf('type', query.type).created(query),
      ),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/transactions/{id}',
    operationId: 'transactions:get',
    explanation: explain.visible('transactions'),
    summary: 'Get a transaction',
    description: `${permissionFilter} A transaction outside it answers 404, as it is not in the subject's list.`,
    tag: 'transactions',
    access: access.organization(...financeReadScopes),
    params: idParams,
    status: 200,
    response: TransactionRead,
    // RLS is the list's: the row is found exactly when the list would show it
    handler: async ({ tx, params }) => found(await tx.one(`select ${columns} from rowgate.transactions where id = $1`, [params.id])),
  }),
];
