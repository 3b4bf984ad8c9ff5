// The pool of authenticator connections and the per-request transaction.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { rfc3339 } from './timestamps.ts';

// timestamps come back as RFC 3339 UTC text (src/db/timestamps.ts);
// bigint (count(*)) as a JS number: our counts stay far below 2^53
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, rfc3339);
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export interface PoolOptions {
  connectionString: string;
  max: number;
  statementTimeoutMs: number;
  /**
   * 'named' (the default): each statement is prepared once per connection and
   * reused. 'unnamed': parsed on every use, for a transaction-pooling PgBouncer
   * older than 1.21, which cannot carry named prepared statements from one
   * transaction to the next (scripts/test-pgbouncer.ts).
   */
  statements?: 'named' | 'unnamed';
}

export interface PoolSettings {
  /** what opens a transaction: BEGIN and the transaction-local timeouts, one simple query */
  begin: string;
  named: boolean;
  /** the statement timeout its transactions run under (a 504 names it) */
  statementTimeoutMs?: number;
}
const poolSettings = new WeakMap<pg.Pool, PoolSettings>();

/**
 * A peer that stops answering without closing (a failover that moves the
 * database's address, a half-open socket, a frozen host) never trips the
 * server's statement timeout, and TCP gives up only after many minutes. A query
 * unanswered this long past the server's own timeout fails on the client, which
 * drops the connection (pg destroys a pipelined connection whose sent query
 * times out); keepalive probes find a dead idle connection before it is used.
 */
export function silentPeerDeadlines(statementTimeoutMs: number) {
  return { query_timeout: statementTimeoutMs + 2_000, keepAlive: true, keepAliveInitialDelayMillis: 5_000 } as const;
}

/**
 * A pool for work in the background (webhook and mail senders): a few
 * connections that claim and record, which a lost server or a silent peer must
 * neither crash nor hold for ever.
 */
export function createBackgroundPool(options: { connectionString: string; max: number; applicationName: string }): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    application_name: options.applicationName,
    statement_timeout: BACKGROUND_STATEMENT_TIMEOUT_MS,
    ...silentPeerDeadlines(BACKGROUND_STATEMENT_TIMEOUT_MS),
  });
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}
/** a claim or a record is one short statement */
const BACKGROUND_STATEMENT_TIMEOUT_MS = 10_000;

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
    ...silentPeerDeadlines(options.statementTimeoutMs),
    application_name: 'rowgate',
    // queries queued on a connection go out without waiting for the previous
    // answer: `begin` and the authentication travel together (one round trip)
    pipeline: true,
  });
  // an idle client losing its server must not crash the process
  pool.on('error', () => {});
  // Nor may a checked-out one. pg-pool removes its own error listener from a
  // client while it is checked out, so a FATAL from the server (an admin
  // shutdown, 57P01, a restart, a terminated backend) arriving between two
  // statements of a transaction, ours or PostGraphile's, would be an unhandled
  // 'error' event that kills the process. With a listener the client is only marked unusable:
  // its queries fail (a 503) and the pool drops it when it comes back.
  pool.on('connect', (client) => client.on('error', () => {}));
  // The timeouts above are startup parameters, which a transaction-pooling
  // PgBouncer does not pass on (1.18 refuses them unless told to ignore them):
  // each transaction sets them again, transaction-locally, with its BEGIN.
  const timeout = Math.trunc(options.statementTimeoutMs);
  poolSettings.set(pool, {
    begin: `begin; set local statement_timeout = ${timeout}; set local idle_in_transaction_session_timeout = ${timeout * 2}`,
    named: (options.statements ?? 'named') === 'named',
    statementTimeoutMs: timeout,
  });
  return pool;
}

/** How the pool's transactions begin, and whether its statements are prepared (named). */
export function poolStatements(pool: pg.Pool): PoolSettings {
  return poolSettings.get(pool) ?? { begin: 'begin', named: true };
}

const statementNames = new Map<string, string>();
export function statementName(text: string) {
  let name = statementNames.get(text);
  if (!name) {
    name = `rg_${createHash('sha1').update(text).digest('base64url').slice(0, 20)}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * A write's commit and the primary's WAL position after it, in one simple
 * query: one round trip, and the position is at or past the commit record
 * (src/db/consistency.ts). The select runs in a transaction of its own, after
 * the commit; a commit that fails fails the query and the select never runs.
 */
const COMMIT_AT_POSITION = 'commit; select pg_current_wal_insert_lsn()::text as position';

/** Commits the client's transaction and answers the WAL position after the commit (null if the primary did not say). */
export function commitAtPosition(client: pg.ClientBase): Promise<string | null> {
  // several statements in one simple query: pg answers with one result a statement
  return client.query(COMMIT_AT_POSITION).then((results: unknown) => {
    const rows = Array.isArray(results) ? (results[1] as pg.QueryResult<{ position: string }> | undefined)?.rows : undefined;
    return rows?.[0]?.position ?? null;
  });
}

/** A transaction's queries: every one parameterised and prepared once per connection. */
export class Tx {
  readonly client: pg.PoolClient;
  private readonly named: boolean;
  /** a read: its commit may leave with its last statement */
  private readonly read: boolean;
  /** the next statement is the last: in a read, the commit leaves with it */
  private commitWithNext = false;
  /** that commit, once sent */
  committed?: Promise<unknown>;
  /** its commit reads the WAL position after it (inTransaction's `position`) */
  private readonly positioned: boolean;
  /** the primary's WAL position after the commit, once committed, when asked for; null if it could not say */
  position?: string | null;
  constructor(client: pg.PoolClient, named = true, read = false, positioned = false) {
    this.client = client;
    this.named = named;
    this.read = read;
    this.positioned = positioned;
  }

  /** Sends the commit (with the position after it, when asked for). */
  commit(): Promise<unknown> {
    if (!this.positioned) return this.client.query('commit');
    return commitAtPosition(this.client).then((position) => {
      this.position = position;
    });
  }

  /** set when the transaction ends: a statement after it is a bug, never sent */
  ended = false;

  /** what runs once the commit succeeded (a rollback drops it): work that must not hold the transaction, such as sending mail */
  readonly afterCommitted: (() => void)[] = [];

  /** Runs `task` after the transaction commits, never if it rolls back. */
  afterCommit(task: () => void) {
    this.afterCommitted.push(task);
  }

  private query<T extends object>(text: string, values: unknown[], types?: pg.CustomTypesConfig) {
    if (this.committed || this.ended) throw new Error('a statement after the last statement of its transaction');
    if (this.commitWithNext) return this.sendWithCommit<T>(text, values, types);
    return this.send<T>(text, values, types);
  }

  private send<T extends object>(text: string, values: unknown[], types?: pg.CustomTypesConfig) {
    const config: pg.QueryConfig = this.named ? { name: statementName(text), text, values } : { text, values };
    if (types) config.types = types;
    return this.client.query<T>(config);
  }

  /** The statement's rows; `types` parses its columns instead of the process's parsers. */
  async rows<T extends object = Record<string, unknown>>(text: string, values: unknown[] = [], types?: pg.CustomTypesConfig): Promise<T[]> {
    return (await this.query<T>(text, values, types)).rows;
  }

  /** the number of rows a statement touched */
  async count(text: string, values: unknown[] = []): Promise<number> {
    return (await this.query(text, values)).rowCount ?? 0;
  }

  async one<T extends object = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T | undefined> {
    return (await this.rows<T>(text, values))[0];
  }

  /**
   * Declares the next statement the transaction's last. In a read its commit
   * is pipelined right behind it instead of sent after its answer (one round
   * trip less), and nothing may follow it; in a write nothing changes. The
   * pipeline declares it before a JSON read's handler runs.
   */
  lastStatementNext() {
    if (this.read) this.commitWithNext = true;
  }

  private sendWithCommit<T extends object>(text: string, values: unknown[], types?: pg.CustomTypesConfig): Promise<pg.QueryResult<T>> {
    const answer = this.send<T>(text, values, types);
    this.commitWithNext = false;
    this.committed = this.commit();
    this.committed.catch(() => {}); // settled by inTransaction
    return answer;
  }
}

/**
 * Runs `work` in one transaction on a pooled connection; rolls back on any error.
 * `begin` is pipelined with the first statement of `work`: they leave without
 * waiting for each other's answers. With `deferCommit` (reads), the answer does
 * not wait for the commit: the connection goes back to the pool once the commit
 * is done, and what follows on it queues behind; and a read's last statement
 * may carry the commit with it (`Tx.lastStatementNext`). With `position`
 * (writes), the commit reads the primary's WAL position after it, in the same
 * round trip (`Tx.position`).
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (tx: Tx) => Promise<T>,
  options: { deferCommit?: boolean; position?: boolean } = {},
): Promise<T> {
  const client = await pool.connect();
  const settings = poolSettings.get(pool);
  const tx = new Tx(client, settings?.named ?? true, options.deferCommit ?? false, options.position ?? false);
  const begun = client.query(settings?.begin ?? 'begin');
  begun.catch(() => {}); // awaited below; its failure also fails the first statement
  let result: T;
  try {
    result = await work(tx);
    await begun;
  } catch (error) {
    tx.ended = true;
    await client.query('rollback').then(
      () => client.release(),
      () => client.release(true),
    );
    throw error;
  }
  tx.ended = true;
  const committed = (tx.committed ?? tx.commit()).then(
    () => {
      client.release();
      for (const task of tx.afterCommitted) task();
    },
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
