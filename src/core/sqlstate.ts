// What a database error means, said once: one table from SQLSTATE (and the
// driver's socket errors) to a kind of failure. REST's error answers
// (src/core/errors.ts), GraphQL's (src/graphql/errors.ts) and the standby
// reads' fall-back to the primary (src/db/read-replicas.ts) all read it.

/**
 * - `gone`: the database is not there right now (its connection failed, it is
 *   shutting down or starting, it has no connection left): a 503 to retry;
 * - `busy`: it is there but cannot take this now (a lock wait, a cancel that is
 *   not the statement timeout, a full NOTIFY queue): a 503 to retry;
 * - `timeout`: the statement timeout cancelled it: a 504 naming the limit;
 * - `collision`: it ended the transaction to let a concurrent one go on
 *   (deadlock, serialization): nothing was kept, a 503 to retry;
 * - `denied`, `notFound`, `scope`, `invalid`: our SQL's deliberate refusals
 *   (RG403, RG404, RGSCO, RG422);
 * - `constraint`: a unique value taken, a reference missing, a check broken;
 * - `integrity`: any other integrity violation (a null for a required column);
 * - `badValue`: a data exception (22…), a value not of its column's type;
 * - `privilege`: a grant is missing or row-level security refused a row;
 * - `nobody`: the credential authenticates nobody (a GraphQL query's statements after its verdict);
 * - `capped`: past a cap our SQL keeps (RG429: invitations), a 429;
 * - `refused`: a live credential refused where it was presented (RG401: a
 *   client address outside the token's allow-list), a 401 like `nobody`;
 * - `readOnly`: a write on a hot standby.
 */
export type DatabaseFailure =
  | 'gone'
  | 'busy'
  | 'timeout'
  | 'collision'
  | 'denied'
  | 'notFound'
  | 'scope'
  | 'invalid'
  | 'constraint'
  | 'integrity'
  | 'badValue'
  | 'privilege'
  | 'nobody'
  | 'refused'
  | 'capped'
  | 'readOnly';

export const SQLSTATE = {
  invalidAuthorization: '28000',
  queryCanceled: '57014',
  inFailedTransaction: '25P02',
  preparedStatementMissing: '26000',
} as const;

const BY_CODE: Readonly<Record<string, DatabaseFailure>> = {
  '57P01': 'gone', // admin_shutdown
  '57P02': 'gone', // crash_shutdown
  '57P03': 'gone', // cannot_connect_now
  '53300': 'gone', // too_many_connections
  ECONNREFUSED: 'gone',
  ECONNRESET: 'gone',
  ETIMEDOUT: 'gone',
  EPIPE: 'gone',
  ENOTFOUND: 'gone',
  '55P03': 'busy', // lock_not_available: a lock timeout
  '40P01': 'collision', // deadlock_detected
  '40001': 'collision', // serialization_failure
  RG401: 'refused',
  RG429: 'capped',
  RG403: 'denied',
  RG404: 'notFound',
  RGSCO: 'scope',
  RG422: 'invalid',
  '23505': 'constraint', // unique_violation
  '23503': 'constraint', // foreign_key_violation
  '23514': 'constraint', // check_violation
  '42501': 'privilege', // insufficient_privilege
  [SQLSTATE.invalidAuthorization]: 'nobody',
  '25006': 'readOnly', // read_only_sql_transaction
};

/** The driver's words for a connection that failed or was lost */
const CONNECTION_LOST = /Connection terminated|timeout exceeded when trying to connect|not queryable/i;

interface DatabaseErrorLike {
  code?: string;
  message?: string;
  syscall?: string;
}

/** What kind of failure a database error is; null: none the table knows (a bug of ours, a 500). */
export function databaseFailure(error: unknown): DatabaseFailure | null {
  const e = (error ?? {}) as DatabaseErrorLike;
  const code = typeof e.code === 'string' ? e.code : '';
  const known = BY_CODE[code];
  if (known) return known;
  if (code.startsWith('08')) return 'gone'; // connection_exception and its subclasses
  if (code === 'ENOENT' && e.syscall === 'connect') return 'gone'; // a Unix-domain socket that is gone
  if (code === SQLSTATE.queryCanceled) return /statement timeout/.test(e.message ?? '') ? 'timeout' : 'busy';
  // program_limit_exceeded at a write's commit: PostgreSQL's NOTIFY queue is full (a listener kept in an open transaction pins it)
  if (code === '54000' && /NOTIFY queue/.test(e.message ?? '')) return 'busy';
  if (code.startsWith('22')) return 'badValue'; // data_exception
  if (code.startsWith('23')) return 'integrity'; // integrity_constraint_violation
  if (CONNECTION_LOST.test(e.message ?? '')) return 'gone';
  return null;
}
