// Organizations' SQL logins (SPEC §24): what the server adds to what the database decides.
// It draws the login's name and password, hands the database only the password's
// SCRAM-SHA-256 verifier (rowgate.create_sql_credential makes the role), builds the URL
// the merchant hands to psql or a BI tool, and on each database host that serves logins
// runs rowgate_private.end_sql_login_sessions about twice a second, which ends the sessions
// of revoked or expired logins (and those past their organization's share) by the
// database's clock. Every server runs it: it is idempotent.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { scramVerifier } from './analysts.ts';

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** `rg_sql_` and 20 random base32 characters (100 bits), lower case: a plain SQL identifier. */
export function newLoginName(): string {
  const bytes = randomBytes(20);
  let name = 'rg_sql_';
  for (const byte of bytes) name += BASE32[byte & 31];
  return name;
}

export interface NewLogin {
  login: string;
  password: string;
  /** what the database stores; the password itself never reaches SQL */
  verifier: string;
}

export function newLogin(): NewLogin {
  const login = newLoginName();
  const password = randomBytes(24).toString('base64url');
  return { login, password, verifier: scramVerifier(password) };
}

/**
 * The URL a login connects with: the analysts' host when one is configured (a standby may
 * serve them), else the database the server uses, with the login's name and password.
 * A server reached over a Unix socket is named by its socket folder as `host`, as psql reads it.
 */
export function loginUrl(base: string, login: string, password: string): string {
  const url = new URL(base);
  url.username = login;
  url.password = encodeURIComponent(password);
  return url.toString();
}

export const END_SQL_LOGIN_SESSIONS = 'select cancelled, terminated, dropped from rowgate_private.end_sql_login_sessions()';

export interface SqlLoginWatch {
  stop(): void;
}

/**
 * Runs the sweep on each pool (the primary's and every standby's) every `intervalMs`;
 * a failure is logged once until it works again. A database migrated before the logins
 * existed has no function yet: that is a failure too, logged once.
 */
export function watchSqlLogins(
  pools: readonly pg.Pool[],
  options: { intervalMs?: number; log?: (line: string) => void } = {},
): SqlLoginWatch {
  const timers = pools.map((pool) => {
    let failing = false;
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      pool
        .query(END_SQL_LOGIN_SESSIONS)
        .then(
          () => {
            failing = false;
          },
          (error: Error) => {
            if (!failing) options.log?.(`SQL logins: cannot end revoked logins' sessions (${error.message}); trying again`);
            failing = true;
          },
        )
        .finally(() => {
          running = false;
        });
    }, options.intervalMs ?? 400);
    timer.unref();
    return timer;
  });
  return {
    stop: () => {
      for (const timer of timers) clearInterval(timer);
    },
  };
}
