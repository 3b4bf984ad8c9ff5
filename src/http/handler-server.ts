// What a handler may ask of the server beside its own transaction: the database URL an
// organization's SQL login connects to (SPEC §24), the size of the primary's pool and its
// statement timeout, and a short transaction of its own after this one, authenticated
// again as the request's credential (a 401 once it is revoked): what a streamed export
// reads its next chunk in.
import type { Request } from 'express';
import type pg from 'pg';
import type { PresentedCredential } from '../auth/credentials.ts';
import { authenticateIn } from '../auth/credential-checks.ts';
import { requestOrigin } from '../core/client-address.ts';
import { inTransaction, poolStatements, type Tx } from '../db/pool.ts';
import { requestId } from '../operating/request-id.ts';

export interface HandlerServer {
  /** the database URL SQL logins connect to, without a user or password */
  sqlLoginUrl: string;
  /** the most connections the primary's pool opens */
  poolSize: number;
  /** the statement timeout of the pool's transactions: what an error after an export's first byte names */
  statementTimeoutMs: number | undefined;
  inNewTransaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
}

/** What the pipeline's options give it. */
export interface HandlerServerOptions {
  pool: pg.Pool;
  secret: string;
  /** the database URL SQL logins connect to (SPEC §24) */
  sqlLoginUrl: string;
}

export function handlerServer(
  options: HandlerServerOptions,
  state: { credential: PresentedCredential | null; req: Request },
): HandlerServer {
  return {
    sqlLoginUrl: options.sqlLoginUrl,
    poolSize: (options.pool as unknown as { options: { max?: number } }).options.max ?? 10,
    statementTimeoutMs: poolStatements(options.pool).statementTimeoutMs,
    inNewTransaction: (work) =>
      inTransaction(options.pool, async (tx) => {
        await authenticateIn(tx, options.secret, state.credential, requestId(state.req), requestOrigin(state.req));
        return work(tx);
      }),
  };
}
