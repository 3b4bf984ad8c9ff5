// Analysts (SPEC §8, §10): LOGIN roles, members of rowgate_analyst, bound to a
// user in rowgate_private.analysts. Under such a role plain `psql` reads what
// that user reads through the API with the read scopes (the RLS helpers look the
// binding up by session_user), and nothing else.
//
// Roles are cluster-wide and only a role that may create roles can make them:
// the role DDL runs on a "root" connection (ROOT_DATABASE_URL, or the embedded
// superuser), the binding on the owner's connection to the API's database.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import pg from 'pg';

export class AnalystError extends Error {}

/** How long an analyst's transaction may last, idle or not, on PostgreSQL 17+ (the same in db/roles.sql). */
export const ANALYST_TRANSACTION_TIMEOUT = '15min';

/** The analyst role every analyst login is a member of (db/roles.sql). */
const ANALYST_ROLE = 'rowgate_analyst';

/**
 * A login name an operator may choose: a plain lower-case SQL identifier (no
 * quoting surprises in psql or in URLs), not in PostgreSQL's reserved `pg_`
 * namespace and not in the API's `rowgate_` one.
 */
function checkLogin(login: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(login)) {
    throw new AnalystError(
      `--login must be a lower-case identifier of 1 to 63 characters (a-z, 0-9, _; not starting with a digit), got ${JSON.stringify(login)}`,
    );
  }
  if (login.startsWith('pg_')) throw new AnalystError(`--login ${login}: names starting with pg_ are reserved by PostgreSQL`);
  if (login.startsWith('rowgate_') || login === 'rowgate') {
    throw new AnalystError(`--login ${login}: names starting with rowgate_ belong to the API's own roles`);
  }
  if (['public', 'none', 'current_user', 'current_role', 'session_user'].includes(login)) {
    throw new AnalystError(`--login ${login}: a reserved role name`);
  }
  return login;
}

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

interface RoleFacts {
  exists: boolean;
  analyst: boolean;
  superuser: boolean;
}

async function roleFacts(db: pg.Client, login: string): Promise<RoleFacts> {
  const { rows } = await db.query<{ analyst: boolean; superuser: boolean }>(
    `select exists (select 1 from pg_auth_members m where m.member = r.oid and m.roleid = $2::regrole) as analyst,
            r.rolsuper as superuser
     from pg_roles r where r.rolname = $1`,
    [login, ANALYST_ROLE],
  );
  return rows[0] ? { exists: true, ...rows[0] } : { exists: false, analyst: false, superuser: false };
}

/** An analyst's limits (SPEC §15): sessions at once, and how long a statement or an idle transaction may last. */
export interface AnalystLimits {
  connectionLimit: number;
  statementTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
}

export const DEFAULT_ANALYST_LIMITS: AnalystLimits = Object.freeze({
  connectionLimit: 5,
  statementTimeoutMs: 60_000,
  idleInTransactionTimeoutMs: 60_000,
});

/** The limits an operator chose, checked against the bounds the database keeps (migration 000006). */
export function checkLimits(limits: Partial<AnalystLimits>): AnalystLimits {
  const chosen = { ...DEFAULT_ANALYST_LIMITS, ...limits };
  const within = (value: number, min: number, max: number) => Number.isInteger(value) && value >= min && value <= max;
  if (!within(chosen.connectionLimit, 1, 1000)) throw new AnalystError('--connection-limit must be an integer from 1 to 1000');
  if (!within(chosen.statementTimeoutMs, 1000, 86_400_000) || chosen.statementTimeoutMs % 1000) {
    throw new AnalystError('--statement-timeout must be a whole number of seconds from 1 to 86400');
  }
  if (!within(chosen.idleInTransactionTimeoutMs, 1000, 86_400_000) || chosen.idleInTransactionTimeoutMs % 1000) {
    throw new AnalystError('--idle-in-transaction-timeout must be a whole number of seconds from 1 to 86400');
  }
  return chosen;
}

export interface GrantResult {
  login: string;
  password: string;
  database_url: string;
  user_id: string;
}

/**
 * Creates the LOGIN role `login`, member of rowgate_analyst, and binds it to
 * `userId` in the database of `ownerUrl`. The role's transaction commits only
 * after the binding did; a failure leaves neither behind.
 */
export async function grantAnalyst(options: {
  ownerUrl: string;
  rootUrl: string;
  userId: string;
  login: string;
  limits?: Partial<AnalystLimits>;
}): Promise<GrantResult> {
  const login = checkLogin(options.login);
  const limits = checkLimits(options.limits ?? {});
  const password = randomBytes(24).toString('base64url');
  return withClient(options.ownerUrl, (owner) =>
    withClient(options.rootUrl, async (root) => {
      const { rowCount } = await owner.query('select 1 from rowgate.users where id = $1 and deleted_at is null', [options.userId]);
      if (!rowCount) throw new AnalystError(`user ${options.userId} not found`);
      const bound = await owner.query('select 1 from rowgate_private.analysts where login = $1', [login]);
      if (bound.rowCount) throw new AnalystError(`${login} is bound as an analyst already; revoke it first to rebind it`);

      await root.query('begin');
      try {
        // one grant at a time per login name, across processes
        await root.query(`select pg_advisory_xact_lock(hashtext('rowgate analyst ' || $1))`, [login]);
        const facts = await roleFacts(root, login);
        if (facts.exists) {
          throw new AnalystError(
            facts.analyst
              ? `role ${login} is an analyst already; revoke it first to rebind it`
              : `role ${login} exists and is not an analyst; choose another --login`,
          );
        }
        const role = pg.escapeIdentifier(login);
        await root.query(
          `create role ${role} login inherit nosuperuser nocreatedb nocreaterole noreplication nobypassrls
             connection limit ${limits.connectionLimit}
             password ${pg.escapeLiteral(scramVerifier(password))} in role ${pg.escapeIdentifier(ANALYST_ROLE)}`,
        );
        // the session's defaults; a session may SET others, and
        // rowgate_private.enforce_analyst_limits holds it to these anyway
        await root.query(`alter role ${role} set statement_timeout = ${limits.statementTimeoutMs}`);
        await root.query(`alter role ${role} set idle_in_transaction_session_timeout = ${limits.idleInTransactionTimeoutMs}`);
        // a whole transaction is bounded too where PostgreSQL can (17+), as db/roles.sql sets it
        const { rows } = await root.query<{ version: number }>(`select current_setting('server_version_num')::int as version`);
        if (rows[0]!.version >= 170000) await root.query(`alter role ${role} set transaction_timeout = '${ANALYST_TRANSACTION_TIMEOUT}'`);
        await owner.query(
          `insert into rowgate_private.analysts (login, user_id, connection_limit, statement_timeout_ms, idle_in_transaction_timeout_ms)
           values ($1, $2, $3, $4, $5)`,
          [login, options.userId, limits.connectionLimit, limits.statementTimeoutMs, limits.idleInTransactionTimeoutMs],
        );
        try {
          await root.query('commit');
        } catch (error) {
          await owner.query('delete from rowgate_private.analysts where login = $1', [login]);
          throw error;
        }
      } catch (error) {
        await root.query('rollback').catch(() => {});
        throw error;
      }
      return { login, password, database_url: analystUrl(options.ownerUrl, login, password), user_id: options.userId };
    }),
  );
}

export interface RevokeResult {
  login: string;
  user_id: string;
  role_dropped: boolean;
  sessions_terminated: number;
}

/** The root URL, on the API's database (DROP OWNED works database by database). */
function onDatabaseOf(rootUrl: string, ownerUrl: string): string {
  const url = new URL(rootUrl);
  url.pathname = new URL(ownerUrl).pathname;
  return url.toString();
}

/**
 * Unbinds the analyst `login` of the database of `ownerUrl` and drops its role.
 * Only a bound analyst: any other role, the API's roles included, is refused.
 * The role can no longer log in first, then its sessions end, then it is
 * dropped, and the binding goes last: until the role is gone, the binding holds
 * it to its limits (rowgate_private.enforce_analyst_limits finds analysts by it).
 */
export async function revokeAnalyst(options: { ownerUrl: string; rootUrl: string; login: string }): Promise<RevokeResult> {
  const login = checkLogin(options.login);
  return withClient(options.ownerUrl, (owner) =>
    withClient(onDatabaseOf(options.rootUrl, options.ownerUrl), async (root) => {
      const facts = await roleFacts(root, login);
      if (facts.exists && (!facts.analyst || facts.superuser)) {
        throw new AnalystError(`role ${login} is not an analyst; only analysts' roles are revoked here`);
      }
      const { rows } = await owner.query<{ user_id: string }>('select user_id from rowgate_private.analysts where login = $1', [login]);
      if (!rows[0]) throw new AnalystError(`${login} is not an analyst of this database`);
      let terminated = 0;
      if (facts.exists) {
        // first it can no longer log in, so that its sessions, ended next, cannot come back: a session that
        // reconnects at once can keep a temporary table in another database, which makes the role's drop fail
        // after the binding is gone (a login with no limits left)
        await root.query(`alter role ${pg.escapeIdentifier(login)} nologin`);
        terminated = await endSessions(root, login);
        // whatever it came to own or be granted here goes with it (nothing, unless a DBA granted it more)
        await root.query('begin');
        try {
          await root.query(`drop owned by ${pg.escapeIdentifier(login)}`);
          await root.query(`drop role ${pg.escapeIdentifier(login)}`);
          await root.query('commit');
        } catch (error) {
          await root.query('rollback').catch(() => {});
          throw new AnalystError(
            `${login} can no longer log in and is still bound, but its role could not be dropped: ${(error as Error).message}`,
          );
        }
      }
      await owner.query('delete from rowgate_private.analysts where login = $1', [login]);
      return { login, user_id: rows[0].user_id, role_dropped: facts.exists, sessions_terminated: terminated };
    }),
  );
}

/**
 * Ends the login's sessions in every database and waits (5 s at most) until
 * they are gone: a session's temporary tables go with its process, after the
 * signal, and until then the role cannot be dropped. The number it signalled.
 */
async function endSessions(root: pg.Client, login: string): Promise<number> {
  const signalled = await root
    .query<{ n: number }>('select count(*) filter (where pg_terminate_backend(pid))::int as n from pg_stat_activity where usename = $1', [
      login,
    ])
    .then((r) => r.rows[0]?.n ?? 0)
    .catch(() => 0); // best effort: needs pg_signal_backend or a superuser
  for (const until = Date.now() + 5_000; Date.now() < until; ) {
    const { rows } = await root.query('select 1 from pg_stat_activity where usename = $1', [login]);
    if (!rows.length) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return signalled;
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
