// GraphQL's prepared statements on a connection (src/graphql/transport/prepared-statements.ts):
// at most a hundred; past them a statement runs unnamed and the connection is
// closed when it goes back to the pool, through pg's own API only.
import type pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createPool } from '../src/db/pool.ts';
import { preparedName, retired } from '../src/graphql/transport/prepared-statements.ts';
import { startTestApp, type TestApp } from './harness.ts';

let app: TestApp;
let pool: pg.Pool;
beforeAll(async () => {
  app = await startTestApp();
  pool = createPool({ connectionString: app.authenticatorUrl, max: 1, statementTimeoutMs: 10_000 });
});
afterAll(async () => {
  await pool?.end();
  await app?.close();
});

const backend = async (client: pg.PoolClient) => (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;

test('a hundred prepared a connection; the rest unnamed, and the connection closed once released', async () => {
  const client = await pool.connect();
  const first = await backend(client);
  for (let i = 0; i < 110; i++) {
    const name = preparedName(client, `graphql_${i}`);
    expect(name).toBe(i < 100 ? `graphql_${i}` : undefined);
    const { rows } = await client.query<{ n: number }>({ ...(name ? { name } : {}), text: `select ${i}::int as n`, values: [] });
    expect(rows[0]!.n).toBe(i);
  }
  // a statement prepared before stays prepared
  expect(preparedName(client, 'graphql_3')).toBe('graphql_3');
  expect((await client.query({ name: 'graphql_3', text: 'select 3::int as n', values: [] })).rows[0]).toEqual({ n: 3 });
  const { rows } = await client.query<{ n: number }>("select count(*)::int as n from pg_prepared_statements where name like 'graphql\\_%'");
  expect(rows[0]!.n).toBe(100);
  expect(retired(client)).toBe(true);
  client.release(retired(client));
  // the pool's one connection is a new one, which prepares afresh
  const next = await pool.connect();
  try {
    expect(await backend(next)).not.toBe(first);
    expect(retired(next)).toBe(false);
    expect(preparedName(next, 'graphql_105')).toBe('graphql_105');
  } finally {
    next.release();
  }
});
