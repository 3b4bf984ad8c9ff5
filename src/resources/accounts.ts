// Accounts: an organization's financial identity (SPEC §5 finance policies, §9, §11).
// GET /v1/organizations/{id}/account, POST /v1/accounts/, GET/PATCH /v1/accounts/{id}.
import { z } from 'zod';
import { financeReadScopes, type Scope } from '../auth/scopes.ts';
import { country, currency } from '../core/money.ts';
import { notFound } from '../core/errors.ts';
import { access, route, writeScopes, type Access } from '../http/route-declaration.ts';
import { doc, idParams, timestamps, uuid } from '../core/fields.ts';
import { explain } from '../http/explanation.ts';

const financeWriteScopes: Scope[] = ['transactions_write', 'payouts_write'];

const AccountRead = z
  .object({
    id: uuid('The account id.'),
    organization_id: uuid('The organization the account belongs to.'),
    admin_id: uuid('The one user who may see and manage the financial information.'),
    country,
    currency,
    status: doc(z.enum(['pending', 'active', 'disabled']), 'Onboarding state; set by the platform.', 'pending'),
    ...timestamps,
  })
  .meta({ id: 'Account', description: "The account that receives an organization's money." });

const AccountCreate = z
  .strictObject({ organization_id: uuid('The organization to create the account for.'), country, currency })
  .meta({ id: 'AccountCreate', description: 'A new account; the creating user becomes its admin.' });
const AccountUpdate = z
  .strictObject({ country: country.optional(), currency: currency.optional() })
  .meta({ id: 'AccountUpdate', description: 'Fields to change; only the fields sent change.' });

const columns = 'id, organization_id, admin_id, country, currency, status, created_at, updated_at';
const financeRead: Access = access.organization(...financeReadScopes);

export const accountRoutes = [
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/organizations/{id}/account',
    operationId: 'organizations:get_account',
    summary: "Get an organization's account",
    description:
      'Finance-read policy: organization tokens, or the account admin. A user on an organization without account gets 403 `Organization has no account`; an organization token gets 404.',
    tag: 'accounts',
    access: financeRead,
    params: idParams,
    status: 200,
    response: AccountRead,
    authorize: { resource: 'organization', policy: 'finance_read' },
    handler: async ({ tx, params }) => {
      const account = await tx.one(`select ${columns} from rowgate.accounts where organization_id = $1`, [params.id]);
      if (!account) throw notFound();
      return account;
    },
  }),
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/accounts/',
    operationId: 'accounts:create',
    explanation: explain.target('organization:manage'),
    summary: 'Create an account',
    description: 'Users with `organization:manage` on the organization; the creator becomes the account admin.',
    tag: 'accounts',
    access: access.organizationUser(...writeScopes('organizations')),
    body: AccountCreate,
    status: 201,
    response: AccountRead,
    handler: ({ tx, body }) =>
      tx.one(`select ${columns} from rowgate.create_account($1, $2, $3)`, [body.organization_id, body.country, body.currency]),
  }),
  route({
    method: 'get',
    effect: 'reads',
    path: '/v1/accounts/{id}',
    operationId: 'accounts:get',
    summary: 'Get an account',
    tag: 'accounts',
    access: financeRead,
    params: idParams,
    status: 200,
    response: AccountRead,
    authorize: { resource: 'account', policy: 'finance_read' },
    handler: ({ tx, params }) => tx.one(`select ${columns} from rowgate.accounts where id = $1`, [params.id]),
  }),
  route({
    method: 'patch',
    effect: 'writes',
    path: '/v1/accounts/{id}',
    operationId: 'accounts:update',
    summary: 'Update an account',
    tag: 'accounts',
    access: access.organization(...financeWriteScopes),
    params: idParams,
    body: AccountUpdate,
    status: 200,
    response: AccountRead,
    authorize: { resource: 'account', policy: 'finance_write' },
    handler: ({ tx, params, body }) =>
      tx.one(
        `update rowgate.accounts set country = coalesce($2, country), currency = coalesce($3, currency)
         where id = $1 returning ${columns}`,
        [params.id, body.country ?? null, body.currency ?? null],
      ),
  }),
];
