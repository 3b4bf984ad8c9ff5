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

/** Runs `work` in one transaction on a pooled connection; rolls back on any error. */
export async function inTransaction<T>(pool: pg.Pool, work: (tx: Tx) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  try {
    await client.query('begin');
    const result = await work(new Tx(client));
    await client.query('commit');
    return result;
  } catch (error) {
    try {
      await client.query('rollback');
    } catch {
      broken = true;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}
