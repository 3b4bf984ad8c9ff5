// The route table: every endpoint of the API, in one list.
import type pg from 'pg';
import { accountRoutes } from './accounts.ts';
import { customerPortalRoutes } from './customer-portal.ts';
import { customerSessionRoutes } from './customer-sessions.ts';
import { customerRoutes } from './customers.ts';
import { orderRoutes } from './orders.ts';
import { payoutAccountRoutes } from './payout-accounts.ts';
import { productRoutes } from './products.ts';
import { transactionRoutes } from './transactions.ts';
import { serviceRoutes } from './health.ts';
import { impersonationRoutes } from './impersonations.ts';
import { loginCodeRoutes } from './login-code.ts';
import { oauth2Routes } from './oauth2.ts';
import { memberRoutes } from './members.ts';
import { organizationAccessTokenRoutes } from './organization-access-tokens.ts';
import { organizationRoutes } from './organizations.ts';
import { personalAccessTokenRoutes } from './personal-access-tokens.ts';
import type { Route } from './route.ts';
import { userRoutes } from './users.ts';

export const apiRoutes: readonly Route[] = [
  ...userRoutes,
  ...personalAccessTokenRoutes,
  ...organizationRoutes,
  ...memberRoutes,
  ...accountRoutes,
  ...organizationAccessTokenRoutes,
  ...impersonationRoutes,
  ...productRoutes,
  ...customerRoutes,
  ...orderRoutes,
  ...transactionRoutes,
  ...payoutAccountRoutes,
  ...customerSessionRoutes,
  ...customerPortalRoutes,
  ...loginCodeRoutes,
  ...oauth2Routes,
];

export function allRoutes(pool: pg.Pool): Route[] {
  return [...serviceRoutes(pool, () => apiRoutes), ...apiRoutes];
}
