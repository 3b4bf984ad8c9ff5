// The route table: every endpoint of the API, in one list, and the service
// routes (health, documents) that describe it.
import type pg from 'pg';
import type { ReadReplicas } from '../db/read-replicas.ts';
import { accountRoutes } from '../resources/accounts.ts';
import { authorizationRoutes } from '../resources/authorization.ts';
import { denialRoutes } from '../resources/denials.ts';
import { requestLogRoutes } from '../resources/request-log.ts';
import { customerPortalRoutes } from '../resources/customer-portal.ts';
import { customerSessionRoutes } from '../resources/customer-sessions.ts';
import { customerRoutes } from '../resources/customers.ts';
import { eventRoutes } from '../resources/events.ts';
import { webhookEndpointRoutes } from '../resources/webhook-endpoints.ts';
import { customerMemberRoutes } from '../resources/customer-members.ts';
import { externalCustomerRoutes } from '../resources/customers-external.ts';
import { orderRoutes } from '../resources/orders.ts';
import { payoutAccountRoutes } from '../resources/payout-accounts.ts';
import { productRoutes } from '../resources/products.ts';
import { refundRoutes } from '../resources/refunds.ts';
import { transactionRoutes } from '../resources/transactions.ts';
import { serviceRoutes } from '../http/service-routes.ts';
import { impersonationRoutes } from '../resources/impersonations.ts';
import { loginCodeRoutes } from '../signin/login-code.ts';
import { oauth2Routes } from '../oauth2/routes.ts';
import { memberRoutes } from '../resources/members.ts';
import { invitationRoutes } from '../resources/invitations.ts';
import { leaveRoutes } from '../resources/leaving.ts';
import { roleRoutes } from '../resources/roles.ts';
import { organizationAccessTokenRoutes } from '../resources/organization-access-tokens.ts';
import { organizationRoutes } from '../resources/organizations.ts';
import { personalAccessTokenRoutes } from '../resources/personal-access-tokens.ts';
import { reportedCredentialRoutes } from '../resources/reported-credentials.ts';
import { sqlCredentialRoutes } from '../resources/sql-credentials.ts';
import { exportRoutes } from '../resources/exports.ts';
import type { Route } from '../http/route-declaration.ts';
import { userRoutes } from '../resources/users.ts';
import { sessionRoutes } from '../resources/sessions.ts';
import { oauth2GrantRoutes } from '../resources/oauth2-grants.ts';

/** Every endpoint of the API but the exports, which are made from the lists that declare one. */
const declaredRoutes: readonly Route[] = [
  ...userRoutes,
  ...sessionRoutes,
  ...personalAccessTokenRoutes,
  ...organizationRoutes,
  ...leaveRoutes,
  ...memberRoutes,
  ...roleRoutes,
  ...invitationRoutes,
  ...accountRoutes,
  ...organizationAccessTokenRoutes,
  ...oauth2GrantRoutes,
  ...sqlCredentialRoutes,
  ...impersonationRoutes,
  ...productRoutes,
  ...externalCustomerRoutes,
  ...customerRoutes,
  ...customerMemberRoutes,
  ...orderRoutes,
  ...refundRoutes,
  ...transactionRoutes,
  ...payoutAccountRoutes,
  ...eventRoutes,
  ...webhookEndpointRoutes,
  ...customerSessionRoutes,
  ...customerPortalRoutes,
  ...loginCodeRoutes,
  ...reportedCredentialRoutes,
  ...oauth2Routes,
  ...authorizationRoutes(() => apiRoutes),
  ...denialRoutes,
  ...requestLogRoutes,
];

export const apiRoutes: readonly Route[] = [...declaredRoutes, ...exportRoutes(declaredRoutes)];

export function allRoutes(pool: pg.Pool, reads?: ReadReplicas): Route[] {
  return [...serviceRoutes(pool, () => apiRoutes, reads), ...apiRoutes];
}
