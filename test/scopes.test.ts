// The scopes TypeScript names (src/auth/scopes.ts) are the database's
// (rowgate_private.scopes), and each write scope implies its read scope there as
// readScopes assumes.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { scopes } from '../src/auth/scopes.ts';
import { apiRoutes } from '../src/server/route-table.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
let database: { name: string; implies: string | null }[];
beforeAll(async () => {
  app = await startTestApp();
  database = await app.sql('select name, implies from rowgate_private.scopes');
});
afterAll(() => app?.close());

test('the same scopes, none missing on either side', () => {
  expect([...scopes].sort()).toEqual(database.map((s) => s.name).sort());
});

test('a `_write` scope implies its `_read` scope when both exist', () => {
  const names = new Set(database.map((s) => s.name));
  const pairs = database.filter((s) => s.name.endsWith('_write') && names.has(s.name.replace(/_write$/, '_read')));
  expect(pairs.length).toBeGreaterThan(5);
  for (const s of pairs) expect(s.implies).toBe(s.name.replace(/_write$/, '_read'));
});

test("every route's scopes are scopes the database knows", () => {
  const names = new Set(database.map((s) => s.name));
  for (const route of apiRoutes) for (const scope of route.access?.scopes ?? []) expect(names, route.operationId).toContain(scope);
});
