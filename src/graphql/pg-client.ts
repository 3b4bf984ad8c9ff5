// PostGraphile's database access (its `withPgClient`), on the server's pool and
// in the server's way, instead of @dataplan/pg's default adaptor, which spends
// four awaited round trips on every statement (BEGIN, the settings, the
// statement, COMMIT) and a connection each.
//
// A GraphQL request is one transaction, as a REST request is: its connection is
// taken when the request is authenticated (BEGIN, the timeouts and the
// authentication statement leave in one write, src/authentication.ts), the
// statements of a query are sent on it as grafast asks for them (pipelined:
// the page and its totalCount travel together), and it commits once the
// response is computed, without being waited for when the operation only reads.
//
// A statement that fails aborts a PostgreSQL transaction, and with it the
// statements already pipelined behind it: the transaction goes back to the
// savepoint taken after the authentication and those are sent again, so one
// refused statement (an anonymous request without a grant) fails alone, on the
// request's one connection. A mutation commits the request's transaction before
// it runs, and its statements run in their own awaited transactions
// (PostGraphile's savepoints inside), one connection at a time.
//
// Prepared statements follow the pool's configuration (none behind an old
// PgBouncer), at most PREPARED_PER_CONNECTION per connection: documents vary
// without bound, and each prepared statement holds memory in its backend.
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
export type Settings = Readonly<Record<string, string>>;
export type WithPgClient = (<T>(settings: Settings | null | undefined, callback: (client: PgClient) => T | Promise<T>) => Promise<T>) & {
  release?(): void;
};

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

function runQuery<T>(client: pg.PoolClient, named: boolean, { text, values, arrayMode, name }: PgQuery): Promise<PgResult<T>> {
  const config: pg.QueryConfig & { rowMode?: 'array' } = { text, values: values as unknown[] };
  if (arrayMode) config.rowMode = 'array';
  if (named && name) config.name = preparedName(client, name);
  return client.query(config as pg.QueryConfig).then(({ rows, rowCount }) => ({ rows: rows as T[], rowCount }));
}

/** A client in a transaction already; withTransaction nests savepoints. */
function wrap(client: pg.PoolClient, named: boolean, depth: number, query = (q: PgQuery) => runQuery(client, named, q)): PgClient {
  return {
    rawClient: client,
    query: query as PgClient['query'],
    async withTransaction(callback) {
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

/** The transaction of one GraphQL request, opened by its authentication. */
export class RequestTransaction {
  readonly settings: Settings;
  /** an operation that writes nothing: its commit is not awaited */
  read = false;
  private client: pg.PoolClient | null;
  private readonly named: boolean;
  /** a statement failed and aborted the transaction: back to the savepoint before the next one */
  private recovering: Promise<unknown> | null = null;
  private ended: Promise<void> | null = null;

  constructor(client: pg.PoolClient, settings: Settings, named: boolean) {
    this.client = client;
    this.settings = settings;
    this.named = named;
  }

  get rawClient(): pg.PoolClient | null {
    return this.client;
  }

  /** Sends a statement in this transaction, or null once it has ended. */
  query<T>(query: PgQuery, retried = false): Promise<PgResult<T>> | null {
    const client = this.client;
    if (!client || this.ended) return null;
    const send = () => runQuery<T>(client, this.named, query);
    const sent = this.recovering ? this.recovering.then(send) : send();
    return sent.catch((error: unknown) => {
      // the transaction is aborted: the savepoint taken after the authentication
      // undoes the failure and keeps the settings (and the token's recorded use)
      this.recovering ??= client.query('rollback to savepoint authenticated').finally(() => (this.recovering = null));
      // sent behind the failure, this statement did not run: send it again once
      if ((error as { code?: string })?.code === '25P02' && !retried) {
        const again = this.query<T>(query, true);
        if (again) return again;
      }
      throw error;
    });
  }

  /** Commits and returns the connection; awaited unless the operation only read. */
  end(): Promise<void> {
    if (this.ended) return this.read ? Promise.resolve() : this.ended;
    const client = this.client!;
    this.client = null;
    const done = (this.recovering ?? Promise.resolve())
      .catch(() => {})
      .then(() => client.query('commit'))
      .then(
        () => client.release(),
        (error: unknown) => {
          client.release(true);
          throw error;
        },
      );
    this.ended = done;
    if (this.read) {
      done.catch(() => {}); // a read's commit failing loses nothing
      return Promise.resolve();
    }
    return done;
  }
}

const requestTransactions = new WeakMap<object, RequestTransaction>();

/**
 * Opens the request's transaction and authenticates in it: `authenticate`
 * sends its statement on the client (it leaves with BEGIN, in one write) and
 * answers the request's settings, or null (then the transaction is ended and
 * nothing is returned).
 */
export async function openRequestTransaction(
  pool: pg.Pool,
  authenticate: (client: pg.PoolClient) => Promise<Settings | null>,
): Promise<RequestTransaction | null> {
  const { begin, named } = poolStatements(pool);
  const client = await pool.connect();
  let settings: Settings | null;
  try {
    const writes = corked(client);
    let begun: Promise<unknown>;
    let authenticated: Promise<Settings | null>;
    try {
      begun = client.query(begin);
      begun.catch(() => {});
      authenticated = authenticate(client);
      // what a failed statement of the request rolls back to (RequestTransaction.query)
      client.query('savepoint authenticated').catch(() => {});
    } finally {
      writes.release();
    }
    settings = await authenticated;
    await begun;
  } catch (error) {
    await client.query('rollback').then(() => client.release(), () => client.release(true));
    throw error;
  }
  if (!settings) {
    await client.query('rollback').then(() => client.release(), () => client.release(true));
    return null;
  }
  // a copy per request: PostGraphile hands it back to withPgClient, which finds the transaction by it
  const transaction = new RequestTransaction(client, { ...settings }, named);
  requestTransactions.set(transaction.settings, transaction);
  return transaction;
}

/** A transaction of its own: BEGIN, the settings and the first statement in one write. */
async function inOwnTransaction<T>(pool: pg.Pool, settings: Settings, callback: (client: PgClient) => T | Promise<T>, awaitCommit: boolean): Promise<T> {
  const { begin, named } = poolStatements(pool);
  const client = await pool.connect();
  const writes = corked(client);
  const begun = client.query(begin);
  const applied = client.query(APPLY_SETTINGS, [JSON.stringify(settings)]);
  begun.catch(() => {});
  applied.catch(() => {}); // awaited below; their failure fails the first statement too
  let result: T;
  try {
    let working: T | Promise<T>;
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
  if (awaitCommit) await committed;
  else committed.catch(() => {});
  return result;
}

export function makeWithPgClient(pool: pg.Pool): WithPgClient {
  const { named } = poolStatements(pool);
  return async (settings, callback) => {
    // without settings (PostGraphile's introspection at start-up): no transaction
    if (!settings || Object.keys(settings).length === 0) {
      const client = await pool.connect();
      try {
        return await callback(wrap(client, named, 0));
      } finally {
        client.release();
      }
    }
    const request = requestTransactions.get(settings);
    const client = request?.read ? request.rawClient : null;
    // a mutation, or a request whose transaction has ended: a transaction of its own
    if (!request || !client) return inOwnTransaction(pool, settings, callback, true);
    const query = <T>(q: PgQuery): Promise<PgResult<T>> =>
      request.query<T>(q) ?? inOwnTransaction(pool, settings, (own) => own.query<T>(q), false);
    return callback({
      rawClient: client,
      query,
      withTransaction: (work) => inOwnTransaction(pool, settings, (own) => own.withTransaction(work), true),
    });
  };
}

/** The request transaction a settings object belongs to */
export const requestTransactionOf = (settings: object | undefined) => (settings ? requestTransactions.get(settings) : undefined);
