// PostGraphile's database access (its `withPgClient`), on the server's pool and
// in the server's way, instead of @dataplan/pg's default adaptor:
// - one write, not four round trips: BEGIN with the transaction-local timeouts,
//   the request's role and settings (from src/authentication.ts, exactly what
//   REST sets) and the first statement leave together, pipelined; a read's
//   commit is not waited for (its connection returns to the pool once done);
// - the statement timeouts of REST's transactions (`poolStatements(pool).begin`),
//   so a GraphQL statement is cancelled when a REST one would be;
// - prepared statements as the pool is configured (none behind an old
//   PgBouncer), at most PREPARED_PER_CONNECTION per connection: documents vary
//   without bound, and each prepared statement holds memory in its backend.
import type pg from 'pg';
import { corked, poolStatements } from '../database.ts';

interface PgQuery {
  text: string;
  values?: readonly unknown[];
  arrayMode?: boolean;
  name?: string;
}
interface PgResult<T> {
  rows: readonly T[];
  rowCount: number | null;
}
/** @dataplan/pg's PgClient, the part it calls */
export interface PgClient {
  rawClient: pg.PoolClient;
  query<T>(query: PgQuery): Promise<PgResult<T>>;
  withTransaction<T>(callback: (client: PgClient) => Promise<T>): Promise<T>;
}
export type WithPgClient = (<T>(settings: Record<string, string> | null | undefined, callback: (client: PgClient) => T | Promise<T>) => Promise<T>) & {
  release?(): void;
};

/** the settings of operations that write nothing (queries): their commit is not awaited */
const reads = new WeakSet<object>();
export function asRead<T extends object>(settings: T): T {
  reads.add(settings);
  return settings;
}

const APPLY_SETTINGS = 'select set_config(s.key, s.value, true) from json_each_text($1::json) s';
const PREPARED_PER_CONNECTION = 100;
const prepared = new WeakMap<pg.PoolClient, Map<string, true>>();

/** The name to prepare a statement under on this connection, least recently used ones deallocated. */
function preparedName(client: pg.PoolClient, name: string): string {
  let names = prepared.get(client);
  if (!names) prepared.set(client, (names = new Map()));
  names.delete(name);
  names.set(name, true);
  if (names.size > PREPARED_PER_CONNECTION) {
    const oldest = names.keys().next().value!;
    names.delete(oldest);
    // forgotten now, so a later use prepares it again after the deallocation (same pipeline, in order)
    const parsed = (client as unknown as { connection?: { parsedStatements?: Record<string, unknown> } }).connection?.parsedStatements;
    if (parsed) delete parsed[oldest];
    client.query(`deallocate ${client.escapeIdentifier(oldest)}`).catch(() => {});
  }
  return name;
}

function wrap(client: pg.PoolClient, named: boolean, depth: number): PgClient {
  return {
    rawClient: client,
    async query<T>({ text, values, arrayMode, name }: PgQuery) {
      const config: pg.QueryConfig & { rowMode?: 'array' } = { text, values: values as unknown[] };
      if (arrayMode) config.rowMode = 'array';
      if (named && name) config.name = preparedName(client, name);
      const { rows, rowCount } = await client.query(config as pg.QueryConfig);
      return { rows: rows as T[], rowCount };
    },
    async withTransaction(callback) {
      // always inside withPgClient's transaction when settings were given: a savepoint
      const savepoint = `tx${depth}`;
      await client.query(depth === 0 ? 'begin' : `savepoint ${savepoint}`);
      try {
        const result = await callback(wrap(client, named, depth + 1));
        await client.query(depth === 0 ? 'commit' : `release savepoint ${savepoint}`);
        return result;
      } catch (error) {
        await client.query(depth === 0 ? 'rollback' : `rollback to savepoint ${savepoint}`).catch(() => {});
        throw error;
      }
    },
  };
}

export function makeWithPgClient(pool: pg.Pool): WithPgClient {
  const { begin, named } = poolStatements(pool);
  return async (settings, callback) => {
    const client = await pool.connect();
    // without settings (PostGraphile's introspection at start-up): no transaction
    if (!settings || Object.keys(settings).length === 0) {
      try {
        return await callback(wrap(client, named, 0));
      } finally {
        client.release();
      }
    }
    const writes = corked(client);
    const begun = client.query(begin);
    const applied = client.query(APPLY_SETTINGS, [JSON.stringify(settings)]);
    begun.catch(() => {});
    applied.catch(() => {}); // awaited below; their failure fails the first statement too
    let result: Awaited<ReturnType<typeof callback>>;
    try {
      let working: ReturnType<typeof callback>;
      try {
        working = callback(wrap(client, named, 1));
      } finally {
        writes.release();
      }
      result = await working;
      await begun;
      await applied;
    } catch (error) {
      await client.query('rollback').then(
        () => client.release(),
        () => client.release(true),
      );
      throw error;
    }
    const committed = client.query('commit').then(
      () => client.release(),
      (error: unknown) => {
        client.release(true);
        throw error;
      },
    );
    if (reads.has(settings)) committed.catch(() => {});
    else await committed;
    return result;
  };
}
