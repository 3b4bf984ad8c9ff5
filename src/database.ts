// The pool of authenticator connections and the per-request transaction.
import { createHash } from 'node:crypto';
import pg from 'pg';

// timestamps come back as Date and are serialised as RFC 3339 UTC by JSON.stringify;
// bigint (count(*)) as a JS number: our counts stay far below 2^53
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export interface PoolOptions {
  connectionString: string;
  max: number;
  statementTimeoutMs: number;
}

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    // a request waits at most this long for a connection, then gets a 503
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: 30_000,
    // one slow query cannot hold a connection for ever
    statement_timeout: options.statementTimeoutMs,
    idle_in_transaction_session_timeout: options.statementTimeoutMs * 2,
    application_name: 'rowgate',
    // queries queued on a connection go out without waiting for the previous
    // answer: `begin` and the authentication travel together (one round trip)
    pipeline: true,
  });
  // an idle client losing its server must not crash the process
  pool.on('error', () => {});
  return pool;
}

const statementNames = new Map<string, string>();
function statementName(text: string) {
  let name = statementNames.get(text);
  if (!name) {
    name = 'rg_' + createHash('sha1').update(text).digest('base64url').slice(0, 20);
    statementNames.set(text, name);
  }
  return name;
}

/** A transaction's queries: every one parameterised and prepared once per connection. */
export class Tx {
  readonly client: pg.PoolClient;
  constructor(client: pg.PoolClient) {
    this.client = client;
  }

  async rows<T extends object = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> {
    const result = await this.client.query<T>({ name: statementName(text), text, values });
    return result.rows;
  }

  /** the number of rows a statement touched */
  async count(text: string, values: unknown[] = []): Promise<number> {
    const result = await this.client.query({ name: statementName(text), text, values });
    return result.rowCount ?? 0;
  }

  async one<T extends object = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T | undefined> {
    return (await this.rows<T>(text, values))[0];
  }
}

/**
 * Runs `work` in one transaction on a pooled connection; rolls back on any error.
 * `begin` is pipelined with the first statement of `work`. With `deferCommit`
 * (reads), the answer does not wait for the commit: the connection goes back
 * to the pool once the commit is done, and what follows on it queues behind.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (tx: Tx) => Promise<T>,
  options: { deferCommit?: boolean } = {},
): Promise<T> {
  const client = await pool.connect();
  const begun = client.query('begin');
  begun.catch(() => {}); // awaited below; its failure also fails the first statement
  let result: T;
  try {
    result = await work(new Tx(client));
    await begun;
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
  if (options.deferCommit) {
    committed.catch(() => {}); // a read's commit failing loses nothing
  } else {
    await committed;
  }
  return result;
}
