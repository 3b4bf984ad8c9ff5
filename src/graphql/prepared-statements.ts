// Prepared statements of GraphQL's reads and writes on a connection
// (src/graphql/pg-client.ts): PostGraphile names each statement it sends, and
// a connection prepares at most PREPARED_PER_CONNECTION of them, the least
// recently used deallocated (documents vary without bound, and each prepared
// statement holds memory in its backend).
import type pg from 'pg';

const PREPARED_PER_CONNECTION = 100;
interface Prepared {
  /** PostGraphile's name → the name prepared on this connection */
  names: Map<string, string>;
  generation: number;
  /** names to deallocate outside a transaction */
  evicted: string[];
}
const prepared = new WeakMap<pg.PoolClient, Prepared>();

/**
 * The name to prepare a statement under on this connection, the least recently
 * used ones deallocated. A statement prepared again after its eviction takes a
 * new name: the DEALLOCATE may fail (sent inside a transaction a failed
 * statement aborted), and the old name must then never be prepared twice
 * (found by the GraphQL fuzzer as "prepared statement … already exists").
 */
export function preparedName(client: pg.PoolClient, name: string): string {
  let state = prepared.get(client);
  if (!state) prepared.set(client, (state = { names: new Map(), generation: 0, evicted: [] }));
  let actual = state.names.get(name);
  if (actual) {
    state.names.delete(name); // most recently used last
  } else {
    actual = `${name.slice(0, 40)}_${(state.generation++).toString(36)}`;
  }
  state.names.set(name, actual);
  if (state.names.size > PREPARED_PER_CONNECTION) {
    const [oldest, oldestActual] = state.names.entries().next().value!;
    state.names.delete(oldest);
    const parsed = (client as unknown as { connection?: { parsedStatements?: Record<string, unknown> } }).connection?.parsedStatements;
    if (parsed) delete parsed[oldestActual];
    // not now: in a transaction, a DEALLOCATE that fails (its statement's Parse
    // failed) would abort it, and the statements behind it (found by the fuzzer)
    state.evicted.push(oldestActual);
  }
  return actual;
}

/** The evicted statements of a connection, deallocated before its next transaction begins */
export function deallocateEvicted(client: pg.PoolClient) {
  const state = prepared.get(client);
  if (!state?.evicted.length) return;
  for (const name of state.evicted.splice(0)) client.query(`deallocate ${client.escapeIdentifier(name)}`).catch(() => {});
}

/**
 * A statement sent as prepared that the backend does not have. pg sends a
 * statement's Parse once per connection and sends the statements behind it,
 * in the same write, without one; when that Parse fails (the transaction was
 * aborted by a refused statement before it), the copies behind it name a
 * statement that was never prepared (found by the GraphQL fuzzer: one field
 * twice behind a refused one). They did not run, like the statements behind
 * any failure, and go again in the next transaction.
 */
export const NOT_PREPARED = '26000';
/** an aborted transaction ignored the statement */
export const IN_FAILED_TRANSACTION = '25P02';

export function forgetPrepared(client: pg.PoolClient, name: string) {
  const connection = (client as unknown as { connection?: { parsedStatements?: Record<string, unknown> } }).connection;
  if (connection?.parsedStatements) delete connection.parsedStatements[name];
}
