// Prepared statements of GraphQL's reads and writes on a connection
// (src/graphql/transport/pg-client.ts): PostGraphile names each statement it sends (a
// hash of its text), and a connection prepares at most
// PREPARED_PER_CONNECTION of them: documents vary without bound, and each
// prepared statement holds memory in its backend and in pg's client. Past
// that, a statement runs unnamed (parsed each time) and the connection is
// closed when it goes back to the pool, so that a new one prepares the
// statements in use now. pg has no API to forget a statement it prepared:
// after a DEALLOCATE it would skip the Parse of the next statement of that name.
import type pg from 'pg';
import { SQLSTATE } from '../../core/sqlstate.ts';

const PREPARED_PER_CONNECTION = 100;
const prepared = new WeakMap<pg.PoolClient, Set<string>>();
/** connections that have prepared their share and needed more */
const full = new WeakSet<pg.PoolClient>();

/** The name to run a statement under on this connection; undefined: unnamed (it has prepared its share). */
export function preparedName(client: pg.PoolClient, name: string): string | undefined {
  let names = prepared.get(client);
  if (!names) prepared.set(client, (names = new Set()));
  if (names.has(name)) return name;
  if (names.size >= PREPARED_PER_CONNECTION) {
    full.add(client);
    return undefined;
  }
  names.add(name);
  return name;
}

/** Whether the connection is to be closed rather than pooled again (pg-pool's `release(true)`). */
export const retired = (client: pg.PoolClient): boolean => full.has(client);

/**
 * A statement sent as prepared that the backend does not have. pg sends a
 * statement's Parse once per connection and sends the statements behind it,
 * in the same pipeline, without one; when that Parse fails (the transaction
 * was aborted by a refused statement before it), the copies behind it name a
 * statement that was never prepared (one field twice behind a refused one). They did not run, like the statements behind
 * any failure, and go again in the next transaction, where pg, which forgets a
 * statement whose Parse failed, sends the Parse again.
 */
export const NOT_PREPARED = SQLSTATE.preparedStatementMissing;
/** an aborted transaction ignored the statement */
export const IN_FAILED_TRANSACTION = SQLSTATE.inFailedTransaction;
