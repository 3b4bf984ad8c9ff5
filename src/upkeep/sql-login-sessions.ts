// Organizations' SQL logins lose their sessions within a second of being revoked or
// expiring (SPEC §24): on each database host that serves logins (the primary and every
// standby) every server runs rowgate_private.end_sql_login_sessions about twice a second.
// The database decides by its own clock which sessions end (revoked or expired logins,
// an organization's sessions past the 5 it shares, those past their limits); running
// it on every server is harmless, as it is idempotent.
import type pg from 'pg';
import { sweep } from './repeated-work.ts';

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
  const sweeps = pools.map((pool) =>
    sweep(pool, END_SQL_LOGIN_SESSIONS, {
      intervalMs: options.intervalMs ?? 400,
      log: options.log,
      failure: (message) => `SQL logins: cannot end revoked logins' sessions (${message}); trying again`,
    }),
  );
  return {
    stop: () => {
      for (const each of sweeps) each.stop();
    },
  };
}
