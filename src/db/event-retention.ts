// Event retention (SPEC §17): events are an audit trail, kept for good unless
// ROWGATE_EVENT_RETENTION_DAYS is set. Then each server prunes what is older,
// through rowgate_private.prune_events, in batches of BATCH rows so that no
// statement holds many locks or runs long; several servers pruning at once skip
// each other's rows. Which events may go (never one with a pending webhook
// delivery) is the database's rule, not this file's.
import type pg from 'pg';

const PRUNE = 'select rowgate_private.prune_events(make_interval(days => $1), $2) as pruned';
const BATCH = 5_000;
const EVERY_MS = 3_600_000;
const FIRST_AFTER_MS = 10_000;

/** Prunes every event older than `days` that may go; returns how many went. */
export async function pruneEvents(pool: pg.Pool, days: number, stopped = () => false): Promise<number> {
  let total = 0;
  while (!stopped()) {
    const { rows } = await pool.query<{ pruned: number }>(PRUNE, [days, BATCH]);
    const pruned = rows[0]?.pruned ?? 0;
    total += pruned;
    if (pruned < BATCH) break;
  }
  return total;
}

export interface EventRetention {
  stop(): Promise<void>;
}

/** Prunes shortly after start, then hourly; a failure is logged and tried again at the next hour. */
export function keepEvents(pool: pg.Pool, options: { days: number; log?: (line: string) => void }): EventRetention {
  let running: Promise<void> | undefined;
  let stopped = false;
  const prune = () => {
    running ??= pruneEvents(pool, options.days, () => stopped)
      .then(
        (pruned) => {
          if (pruned > 0) options.log?.(`event retention: ${pruned} events older than ${options.days} days pruned`);
        },
        (error: Error) => options.log?.(`event retention: pruning failed (${error.message}); trying again in an hour`),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const first = setTimeout(prune, FIRST_AFTER_MS);
  const timer = setInterval(prune, EVERY_MS);
  first.unref();
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearTimeout(first);
      clearInterval(timer);
      await running;
    },
  };
}
