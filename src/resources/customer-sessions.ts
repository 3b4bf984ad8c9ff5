// POST /v1/customer-sessions/: a 1-hour portal session for a customer (or one of
// its member seats), made by the organization's users or tokens.
import { z } from 'zod';
import { access, route } from '../http/route-declaration.ts';
import { doc, timestamp, tokenField, uuid } from '../core/fields.ts';
import { generateToken, hashToken } from '../auth/tokens.ts';
import { explain } from '../http/explanation.ts';

const CustomerSessionCreate = z
  .strictObject({
    customer_id: uuid('The customer the session acts as.'),
    member_id: doc(
      z.uuid().optional(),
      'A member seat of the customer: the session is then a member session (rg_mst_), read-only.',
      '5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8d',
    ),
  })
  .meta({ id: 'CustomerSessionCreate', description: 'Whom the portal session is for.' });

const CustomerSession = z
  .object({
    token: tokenField('rg_cst_'),
    customer_id: uuid('The customer.'),
    member_id: doc(z.uuid().nullable(), 'The member seat, for a member session; null otherwise.', null),
    expires_at: timestamp('When the session ends (1 hour).'),
  })
  .meta({ id: 'CustomerSession', description: 'A customer portal session; hand the token to the customer.' });

export const customerSessionRoutes = [
  route({
    method: 'post',
    effect: 'writes',
    path: '/v1/customer-sessions/',
    operationId: 'customer_sessions:create',
    explanation: explain.target('customers:write'),
    summary: 'Create a customer portal session',
    authorize: { resource: 'customer', policy: 'customers:write', field: 'customer_id' },
    tag: 'customer-sessions',
    access: access.organization('customer_sessions_write'),
    body: CustomerSessionCreate,
    status: 201,
    response: CustomerSession,
    handler: async ({ tx, body, secret }) => {
      const token = generateToken(body.member_id ? 'member_session' : 'customer_session');
      const session = await tx.one('select customer_id, member_id, expires_at from rowgate.create_customer_session($1, $2, $3)', [
        body.customer_id,
        body.member_id ?? null,
        hashToken(secret, token),
      ]);
      return { token, ...session };
    },
  }),
];
