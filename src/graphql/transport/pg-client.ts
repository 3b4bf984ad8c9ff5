// PostGraphile's database access (its `withPgClient`), on the server's pool and
// in the server's way, instead of @dataplan/pg's default adaptor, which spends
// four awaited round trips on every statement (BEGIN, the settings, the
// statement, COMMIT), each on a connection of its own. Each request's comes
// in its GraphQL context (src/graphql/requests.ts); the adaptor's serves only
// the start-up introspection. This folder is the fence around what leans on
// the libraries' behaviour (test/graphql-transport.test.ts).
//
// A query's statements that grafast asks for together (a page and its
// totalCount) are one transaction, pipelined in one round trip: BEGIN with the
// timeouts, the request's role and settings (src/auth/authenticate.ts: exactly
// what REST sets; in a query's first transaction the authentication statement
// itself, which applies them: deferred-authentication.ts), the
// statements, COMMIT. A connection is held only while its statements run,
// never while grafast plans or writes the answer: a request that held its
// connection from authentication to answer made the pool the bound.
//
// A statement that fails aborts its transaction, and with it the statements
// behind it: those go again in the next one, so one refused statement (an
// anonymous request without a grant) fails alone. A mutation's statements run
// in their own awaited transactions (PostGraphile's savepoints inside).
//
// A query's transactions open on the pool its request was given: a hot
// standby's when one will do (src/db/read-replicas.ts, SPEC §19), from which a
// failure of the standby's moves the rest of the query to the primary.
//
// Prepared statements follow the pool's configuration (none behind an old
// PgBouncer), at most a hundred per connection (prepared-statements.ts).
import type pg from 'pg';
import type { Settings } from '../../auth/authenticate.ts';
import { commitAtPosition, poolStatements, statementName } from '../../db/pool.ts';
import { authenticatesNobody, type DeferredAuthentication } from './deferred-authentication.ts';
import { IN_FAILED_TRANSACTION, NOT_PREPARED, preparedName, retired } from './prepared-statements.ts';

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
interface PgClient {
  rawClient: pg.PoolClient;
  query<T>(query: PgQuery): Promise<PgResult<T>>;
  withTransaction<T>(callback: (client: PgClient) => Promise<T>): Promise<T>;
}
type FallBack = (error: unknown) => pg.Pool | null;
export type WithPgClient = (<T>(settings: Settings | null | undefined, callback: (client: PgClient) => T | Promise<T>) => Promise<T>) & {
  release?(): void;
};

/**
 * The statement that applies a request's settings: one `set_config` a key, the
 * keys in its text and the values as parameters, so that it is prepared once
 * per connection (the keys are the few sets authentication makes: anonymous,
 * and a subject's), not parsed and planned again in every transaction.
 */
const applyStatements = new Map<string, string>();
const APPLY_STATEMENTS_KEPT = 32;
function applySettings(client: pg.PoolClient, named: boolean, settings: Settings): Promise<unknown> {
  const keys = Object.keys(settings);
  const id = keys.join('\n');
  let text = applyStatements.get(id);
  if (!text) {
    text = `select ${keys.map((key, i) => `set_config(${client.escapeLiteral(key)}, $${i + 1}, true)`).join(', ')}`;
    if (applyStatements.size >= APPLY_STATEMENTS_KEPT) applyStatements.delete(applyStatements.keys().next().value!);
    applyStatements.set(id, text);
  }
  const values = keys.map((key) => settings[key]);
  return client.query(named ? { name: statementName(text), text, values } : { text, values });
}

/**
 * The parsers of a request's statements: none, every value as PostgreSQL wrote
 * it. @dataplan/pg casts what it selects to text where pg would parse it, and
 * takes timestamptz and bigint columns as they are (codecs.ts), so
 * PostgreSQL writes them out for the returned rows only; their text is then
 * exactly that of the `::text` casts, unparsed by the server's own parsers
 * (src/db/pool.ts: a bigint as a Number, a timestamptz in REST's shape).
 */
const AS_WRITTEN: pg.CustomTypesConfig = { getTypeParser: () => (value: string) => value };

function runQuery<T>(client: pg.PoolClient, named: boolean, { text, values, arrayMode, name }: PgQuery, raw = true): Promise<PgResult<T>> {
  const config: pg.QueryConfig & { rowMode?: 'array' } = { text, values: values as unknown[] };
  if (raw) config.types = AS_WRITTEN;
  if (arrayMode) config.rowMode = 'array';
  if (named && name) config.name = preparedName(client, name);
  return client.query(config as pg.QueryConfig).then(({ rows, rowCount }) => ({ rows: rows as T[], rowCount }));
}

/** A client in a transaction already; withTransaction nests savepoints. */
function wrap(
  client: pg.PoolClient,
  named: boolean,
  depth: number,
  raw = true,
  query = (q: PgQuery) => runQuery(client, named, q, raw),
): PgClient {
  return {
    rawClient: client,
    query: query as PgClient['query'],
    async withTransaction(callback) {
      const savepoint = `tx${depth}`;
      await client.query(depth === 0 ? 'begin' : `savepoint ${savepoint}`);
      try {
        const result = await callback(wrap(client, named, depth + 1, raw));
        await client.query(depth === 0 ? 'commit' : `release savepoint ${savepoint}`);
        return result;
      } catch (error) {
        await client.query(depth === 0 ? 'rollback' : `rollback to savepoint ${savepoint}`).catch(() => {});
        throw error;
      }
    },
  };
}

/** how often a statement is sent again after other statements' failures */
const MAX_RETRIES = 20;

/**
 * The statements of one query (a GraphQL operation that only reads). Those
 * asked for in one turn of the event loop share a transaction, pipelined in
 * one round trip: BEGIN (with the timeouts), the settings, the statements, COMMIT.
 * Statements asked for later take the next such transaction; under READ
 * COMMITTED each statement reads its own snapshot in any case.
 */
export class ReadTransactions {
  readonly settings: Settings;
  private pool: pg.Pool;
  private fallBack?: FallBack;
  private authentication?: DeferredAuthentication;
  private current: Promise<pg.PoolClient> | null = null;

  /**
   * `fallBack`: on a standby, the primary to go on with after a failure of the
   * standby's (src/db/read-replicas.ts). `authentication`: the credential's, to
   * be sent in the first transaction (deferred-authentication.ts);
   * the settings then are its.
   */
  constructor(pool: pg.Pool, settings: Settings, fallBack?: FallBack, authentication?: DeferredAuthentication) {
    this.pool = pool;
    this.settings = settings;
    this.fallBack = fallBack;
    this.authentication = authentication;
  }

  query<T>(query: PgQuery, retries = 0): Promise<PgResult<T>> {
    const { named } = poolStatements(this.pool);
    // a credential that authenticates nobody: nothing more is read (its answer is a 401)
    if (this.authentication?.settings === null) return Promise.reject(authenticatesNobody());
    return (this.current ??= this.open())
      .then((client) => runQuery<T>(client, named, query))
      .catch((error: unknown) => {
        // sent behind another statement's failure, which aborted the transaction
        // (or failed the Parse this one relied on): this one did not run, and goes in the next transaction
        const code = (error as { code?: string })?.code;
        if ((code === IN_FAILED_TRANSACTION || code === NOT_PREPARED) && retries < MAX_RETRIES) return this.query<T>(query, retries + 1);
        // the standby went away or cannot run it: this read and the rest of the query go to the primary
        const primary = this.fallBack?.(error);
        if (primary) {
          this.pool = primary;
          this.fallBack = undefined;
          return this.query<T>(query, retries + 1);
        }
        throw error;
      });
  }

  /** The settings of a transaction of the query's own (withTransaction): the verdict's, when the authentication was deferred. */
  async ownSettings(): Promise<Settings> {
    if (!this.authentication) return this.settings;
    const settings = await this.authentication.verdict();
    if (!settings) throw authenticatesNobody();
    return settings;
  }

  private open(): Promise<pg.PoolClient> {
    const { begin, named } = poolStatements(this.pool);
    const ready = this.pool.connect().then((client) => {
      const authentication = this.authentication;
      if (authentication?.settings === null) {
        // found to authenticate nobody while this connection was awaited: nothing runs
        client.release();
        throw authenticatesNobody();
      }
      client.query(begin).catch(() => {}); // a failure fails the statements behind it
      if (authentication && authentication.settings === undefined) authentication.sendOn(client, named);
      else applySettings(client, named, authentication?.settings ?? this.settings).catch(() => {});
      // the statements waiting for the connection, and those asked for in this
      // turn, join the pipeline; then COMMIT (ROLLBACK after a failure) closes it
      setImmediate(() => {
        if (this.current === ready) this.current = null;
        client.query('commit').then(
          () => client.release(retired(client)),
          () => client.release(true),
        );
      });
      return client;
    });
    ready.catch(() => {
      if (this.current === ready) this.current = null;
    });
    return ready;
  }
}

/** What a mutation's commits tell: the WAL position after each (src/db/consistency.ts), awaited before the mutation's result */
type Committed = (position: string | null) => Promise<void>;

/**
 * A query's `withPgClient`, given in its GraphQL context (src/graphql/requests.ts):
 * its statements share transactions (ReadTransactions); a transaction of its own
 * (withTransaction) runs on `primary` with the subject's settings.
 */
export function queryClient(reads: ReadTransactions, primary: pg.Pool): WithPgClient {
  return async (_settings, callback) =>
    callback({
      get rawClient(): pg.PoolClient {
        throw new Error('a query statement has no connection of its own');
      },
      query: (query) => reads.query(query),
      withTransaction: async (work) => inOwnTransaction(primary, await reads.ownSettings(), (own) => own.withTransaction(work)),
    });
}

/** A mutation's `withPgClient`: each call a transaction of its own with `settings`, whose commit tells `committed` its WAL position. */
export function mutationClient(pool: pg.Pool, settings: Settings, committed?: Committed): WithPgClient {
  return (_settings, callback) => inOwnTransaction(pool, settings, callback, committed);
}

/**
 * A mutation's transaction: BEGIN, the settings and the first statement
 * pipelined; committed before the answer, the WAL position after the commit
 * read in the commit's round trip when `committed` wants it.
 */
async function inOwnTransaction<T>(
  pool: pg.Pool,
  settings: Settings,
  callback: (client: PgClient) => T | Promise<T>,
  committed?: Committed,
): Promise<T> {
  const { begin, named } = poolStatements(pool);
  const client = await pool.connect();
  const begun = client.query(begin);
  const applied = applySettings(client, named, settings);
  begun.catch(() => {});
  applied.catch(() => {}); // awaited below; their failure fails the first statement too
  let result: T;
  try {
    result = await callback(wrap(client, named, 1));
    await begun;
    await applied;
  } catch (error) {
    await client.query('rollback').then(
      () => client.release(retired(client)),
      () => client.release(true),
    );
    throw error;
  }
  let position: string | null = null;
  try {
    if (committed) position = await commitAtPosition(client);
    else await client.query('commit');
  } catch (error) {
    client.release(true);
    throw error;
  }
  client.release(retired(client));
  await committed?.(position);
  return result;
}

/** How long one statement of PostGraphile's start-up introspection may run */
export const STARTUP_STATEMENT_TIMEOUT_MS = 60_000;

/**
 * The adaptor's `withPgClient` (src/graphql/preset.ts): PostGraphile's
 * introspection at start-up, in a transaction of its own under the start-up
 * timeout. The pool's timeout is the per-request one, which a busy machine's
 * first introspection (cold catalog caches) can exceed with a short
 * ROWGATE_STATEMENT_TIMEOUT_MS. Requests run on the `withPgClient` of their own
 * context (queryClient, mutationClient).
 */
export function makeWithPgClient(pool: pg.Pool): WithPgClient {
  const { named } = poolStatements(pool);
  return async (settings, callback) => {
    // settings are a request's, which has a withPgClient of its own: not reached
    if (settings && Object.keys(settings).length > 0) return inOwnTransaction(pool, settings, callback);
    const client = await pool.connect();
    try {
      await client.query(`begin; set local statement_timeout = ${STARTUP_STATEMENT_TIMEOUT_MS}`);
      // (PostGraphile's introspection: pg's parsers, as its own adaptor has them)
      const result = await callback(wrap(client, named, 0, false));
      await client.query('commit');
      client.release(retired(client));
      return result;
    } catch (error) {
      client.release(true);
      throw error;
    }
  };
}
