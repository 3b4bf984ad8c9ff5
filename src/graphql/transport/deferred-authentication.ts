// A GraphQL query's authentication, sent in its first read transaction instead
// of a round trip of its own before it, as REST sends it in its request's
// transaction (docs/performance.md, GraphQL): one round trip less.
//
// The read transaction is BEGIN, the authentication statement (which applies
// the role and settings itself: src/auth/authenticate.ts), the statements,
// COMMIT, pipelined. When the credential authenticates nobody, the
// statements behind it run as rowgate_authenticator, which reads nothing, and
// their answer is never sent: the answer waits for the credential's verdict
// (src/graphql/requests.ts, grafserv's processRequest middleware) and a
// credential that authenticates nobody gets REST's 401,
// exactly as when it was asked first. A query that reads nothing asks for the
// verdict on its own before its answer. Later transactions of the request
// apply the settings the verdict gave.
//
// Mutations (their transactions are their own), documents that may stream an
// answer in parts, and reads on standbys (which need the credential's writes
// first) keep the authentication before the request (src/graphql/requests.ts).
import { SQLSTATE } from '../../core/sqlstate.ts';
import type pg from 'pg';
import { AUTHENTICATE, type AuthenticatedRow, authenticatedFrom, type Settings } from '../../auth/authenticate.ts';
import { poolStatements, statementName } from '../../db/pool.ts';

/** What a statement of a request whose credential authenticates nobody fails with (never sent: its answer is a 401) */
export const authenticatesNobody = () =>
  Object.assign(new Error('The credential is unknown, expired or revoked'), { code: SQLSTATE.invalidAuthorization });

export class DeferredAuthentication {
  private readonly values: unknown[];
  private readonly pool: pg.Pool;
  /** undefined: not known yet; null: the credential authenticates nobody */
  private known: Settings | null | undefined;
  /** every statement sent: the first row to arrive says it (a later statement's failure does not undo an earlier answer) */
  private readonly sent: Promise<unknown>[] = [];

  /** `values`: the statement's parameters (authenticationValues) */
  constructor(pool: pg.Pool, values: unknown[]) {
    this.pool = pool;
    this.values = values;
  }

  /** the subject's role and settings once known; null: nobody; undefined: not known yet */
  get settings(): Settings | null | undefined {
    return this.known;
  }

  /** Sends the statement on a client in a transaction (its role and settings then apply to the statements behind it). */
  sendOn(client: pg.PoolClient | pg.Pool, named: boolean): void {
    const text = AUTHENTICATE;
    const asked = client
      .query<AuthenticatedRow>(named ? { name: statementName(text), text, values: this.values } : { text, values: this.values })
      .then(({ rows }) => {
        this.known ??= authenticatedFrom(rows[0])?.settings ?? null;
      });
    asked.catch(() => {}); // a failure fails the statements behind it, and the verdict if nothing else says it
    this.sent.push(asked);
  }

  /** The settings the credential gives, null for nobody: from a transaction that carried the statement, or asked now. */
  async verdict(): Promise<Settings | null> {
    if (this.known !== undefined) return this.known;
    if (!this.sent.length) this.sendOn(this.pool, poolStatements(this.pool).named);
    const outcomes = await Promise.allSettled(this.sent);
    if (this.known !== undefined) return this.known;
    // every statement failed (the database could not say): the request fails as REST's would
    throw (outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason;
  }
}
