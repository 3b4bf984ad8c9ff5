// The oldest open transaction of the PostgreSQL server (SPEC §14): one holding
// an xid or a snapshot, in any database, or prepared for two-phase commit,
// holds back what vacuum may remove everywhere. Every server reads its age
// (rowgate_private.oldest_transaction, which sees every role's sessions) every
// ten seconds, one cheap read of pg_stat_activity, exports it as a gauge and
// logs a warning, once per transaction, while it is older than a bound.
import type pg from 'pg';

const OLDEST = 'select age_seconds, pid, database, role, application_name, state from rowgate_private.oldest_transaction()';
export const OLDEST_TRANSACTION_EVERY_MS = 10_000;
/** Past this age an open transaction is worth an operator's look (the API's own end within their timeouts). */
export const OLDEST_TRANSACTION_WARN_SECONDS = 300;

export interface OldestTransaction {
  age_seconds: number;
  pid: number | null;
  database: string | null;
  role: string | null;
  application_name: string | null;
  state: string | null;
}

/** The oldest transaction holding an xid or a snapshot, or undefined when none is open. */
export async function oldestTransaction(pool: pg.Pool): Promise<OldestTransaction | undefined> {
  const { rows } = await pool.query<OldestTransaction>(OLDEST);
  return rows[0];
}

/** Reads it every `everyMs`; `report` gets the age in seconds (0: none); a warning is logged once per old transaction. */
export function watchOldestTransaction(
  pool: pg.Pool,
  options: { report?: (seconds: number) => void; log?: (line: string) => void; everyMs?: number; warnSeconds?: number },
): { stop(): void } {
  const warnSeconds = options.warnSeconds ?? OLDEST_TRANSACTION_WARN_SECONDS;
  let warned: string | undefined;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    oldestTransaction(pool)
      .then(
        (oldest) => {
          options.report?.(oldest?.age_seconds ?? 0);
          if (!oldest || oldest.age_seconds < warnSeconds) return;
          // one warning per transaction: its backend (or prepared gid) and when it began
          const key = `${oldest.pid ?? oldest.state}@${Math.round(Date.now() / 1000 - oldest.age_seconds)}`;
          if (key === warned) return;
          warned = key;
          options.log?.(
            JSON.stringify({
              level: 'warn',
              msg: 'a transaction has been open for long: it holds back what vacuum may remove in every database',
              age_seconds: Math.round(oldest.age_seconds),
              pid: oldest.pid,
              database: oldest.database,
              role: oldest.role,
              application_name: oldest.application_name,
              state: oldest.state,
            }),
          );
        },
        () => {},
      )
      .finally(() => {
        running = false;
      });
  }, options.everyMs ?? OLDEST_TRANSACTION_EVERY_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
