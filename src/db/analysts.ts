// Analysts (SPEC §8, §10, §15): LOGIN roles, members of rowgate_analyst, bound to a
// user in rowgate_private.analysts. Under such a role plain `psql` reads what
// that user reads through the API with the read scopes (the RLS helpers look the
// binding up by session_user), and nothing else.
//
// The roles are made and dropped by rowgate_sql_admin's security definer functions
// (rowgate_private.create_analyst_login, disable_analyst_login, drop_analyst_login),
// which only rowgate_owner, the role of DATABASE_URL, may call: no superuser and no
// CREATEROLE on this side. Those functions decide what a login may be named, its
// limits' bounds and which roles they refuse; this module draws the password, hands
// the database its SCRAM-SHA-256 verifier, and names the command's option in each
// refusal.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import pg from 'pg';

export class AnalystError extends Error {}

/**
 * The SCRAM-SHA-256 verifier of a password (RFC 5802/7677, as PostgreSQL stores
 * it): CREATE ROLE then carries no clear-text password that statement logging
 * could record, whatever `password_encryption` says.
 */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password.normalize('NFKC'), salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/** The URL an analyst hands to psql: the API database's host, port, name and options, as the analyst. */
export function analystUrl(ownerUrl: string, login: string, password: string): string {
  const url = new URL(ownerUrl);
  url.username = login;
  url.password = encodeURIComponent(password);
  return url.toString();
}

async function withClient<T>(connectionString: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** The command's option for each parameter the database names in a refusal's detail. */
const OPTIONS: Record<string, string> = {
  login: '--login',
  user_id: '--user-id',
  connection_limit: '--connection-limit',
  statement_timeout: '--statement-timeout',
  idle_in_transaction_timeout: '--idle-in-transaction-timeout',
};

/** A refusal of the analysts' functions (RG4xx) as bad usage, named by its option; anything else as it is. */
function refusal(error: unknown): unknown {
  const e = error as { code?: string; message?: string; detail?: string };
  if (typeof e?.code !== 'string' || !e.code.startsWith('RG4')) return error;
  const option = e.detail ? OPTIONS[e.detail] : undefined;
  return new AnalystError(option ? `${option}: ${e.message}` : (e.message ?? 'refused'));
}

/** An analyst's limits (SPEC §15): sessions at once, and how long a statement or an idle transaction may last. */
export interface AnalystLimits {
  connectionLimit: number;
  statementTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
}

/** rowgate_private.create_analyst_login's parameter for each limit; one left out takes the function's default. */
const LIMIT_PARAMETERS: Record<keyof AnalystLimits, string> = {
  connectionLimit: 'p_connection_limit',
  statementTimeoutMs: 'p_statement_timeout_ms',
  idleInTransactionTimeoutMs: 'p_idle_in_transaction_timeout_ms',
};

export interface GrantResult {
  login: string;
  password: string;
  database_url: string;
  user_id: string;
}

/**
 * Creates the LOGIN role `login`, member of rowgate_analyst, and binds it to
 * `userId` in the database of `ownerUrl`, in one transaction of
 * rowgate_private.create_analyst_login.
 */
export async function grantAnalyst(options: {
  ownerUrl: string;
  userId: string;
  login: string;
  limits?: Partial<AnalystLimits>;
}): Promise<GrantResult> {
  const password = randomBytes(24).toString('base64url');
  const values: unknown[] = [options.userId, options.login, scramVerifier(password)];
  const named = ['p_user_id => $1', 'p_login => $2', 'p_verifier => $3'];
  for (const [limit, parameter] of Object.entries(LIMIT_PARAMETERS)) {
    const value = options.limits?.[limit as keyof AnalystLimits];
    if (value === undefined) continue;
    values.push(value);
    named.push(`${parameter} => $${values.length}`);
  }
  return withClient(options.ownerUrl, async (owner) => {
    const { rows } = await owner
      .query<{ login: string; user_id: string }>(
        `select login::text as login, user_id from rowgate_private.create_analyst_login(${named.join(', ')})`,
        values,
      )
      .catch((error: unknown) => {
        throw refusal(error);
      });
    const { login, user_id } = rows[0]!;
    return { login, password, database_url: analystUrl(options.ownerUrl, login, password), user_id };
  });
}

export interface RevokeResult {
  login: string;
  user_id: string;
  role_dropped: boolean;
  sessions_terminated: number;
}

/**
 * Unbinds the analyst `login` of the database of `ownerUrl` and drops its role.
 * Only a bound analyst's login the functions made: any other role, the API's
 * roles included, is refused. The role can no longer log in first (committed on
 * its own), then its sessions end, then it is dropped, and the binding goes
 * last: until the role is gone, the binding holds it to its limits
 * (rowgate_private.enforce_analyst_limits finds analysts by it).
 */
export async function revokeAnalyst(options: { ownerUrl: string; login: string }): Promise<RevokeResult> {
  return withClient(options.ownerUrl, async (owner) => {
    await owner.query('select rowgate_private.disable_analyst_login($1)', [options.login]).catch((error: unknown) => {
      throw refusal(error);
    });
    try {
      const { rows } = await owner.query<RevokeResult>(
        'select login, user_id, role_dropped, sessions_terminated from rowgate_private.drop_analyst_login($1)',
        [options.login],
      );
      return rows[0]!;
    } catch (error) {
      const refused = refusal(error);
      if (refused !== error) throw refused;
      throw new AnalystError(
        `${options.login} can no longer log in and is still bound, but its role could not be dropped: ${(error as Error).message}`,
      );
    }
  });
}

export interface AnalystListing {
  login: string;
  user_id: string;
  created_at: string;
  role_exists: boolean;
  connection_limit: number;
  statement_timeout_ms: number;
  idle_in_transaction_timeout_ms: number;
}

/** The analysts bound in the database of `ownerUrl`, and whether each role still exists. */
export async function listAnalysts(ownerUrl: string): Promise<AnalystListing[]> {
  return withClient(ownerUrl, async (owner) => {
    const { rows } = await owner.query<AnalystListing>(
      `select a.login::text as login, a.user_id, a.created_at, exists (select 1 from pg_roles r where r.rolname = a.login) as role_exists,
         a.connection_limit, a.statement_timeout_ms, a.idle_in_transaction_timeout_ms
       from rowgate_private.analysts a order by a.login`,
    );
    return rows;
  });
}
