// The route table: every endpoint of the API, in one list.
import type pg from 'pg';
import { serviceRoutes } from './health.ts';
import { personalAccessTokenRoutes } from './personal-access-tokens.ts';
import type { Route } from './route.ts';
import { userRoutes } from './users.ts';

export const apiRoutes: readonly Route[] = [...userRoutes, ...personalAccessTokenRoutes];

export function allRoutes(pool: pg.Pool): Route[] {
  return [...serviceRoutes(pool, () => apiRoutes), ...apiRoutes];
}
