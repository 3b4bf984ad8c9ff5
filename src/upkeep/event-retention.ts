// Event retention (SPEC §17): events are an audit trail, kept for good unless
// ROWGATE_EVENT_RETENTION_DAYS is set. Then each server prunes what is older,
// through rowgate_private.prune_events: whole days of events are dropped (they
// are daily partitions), and what no whole day takes goes in batches of BATCH
// rows so that no statement holds many locks or runs long; several servers
// pruning at once skip each other's rows. Which events may go (never one with a
// pending webhook delivery) is the database's rule, not this file's.
import type pg from 'pg';
import { inBatches, repeat } from './repeated-work.ts';

const PRUNE = 'select rowgate_private.prune_events(make_interval(days => $1), $2) as n';
const BATCH = 5_000;
const EVERY_MS = 3_600_000;
const FIRST_AFTER_MS = 10_000;

/** Prunes every event older than `days` that may go; returns how many went. */
export function pruneEvents(pool: pg.Pool, days: number, stopped = () => false): Promise<number> {
  return inBatches(pool, PRUNE, [days, BATCH], BATCH, stopped);
}

export interface EventRetention {
  stop(): Promise<void>;
}

/** Prunes shortly after start, then hourly; a failure is logged and tried again at the next hour. */
export function keepEvents(pool: pg.Pool, options: { days: number; log?: (line: string) => void }): EventRetention {
  return repeat(
    (stopped) =>
      pruneEvents(pool, options.days, stopped).then(
        (pruned) => {
          if (pruned > 0) options.log?.(`event retention: ${pruned} events older than ${options.days} days pruned`);
        },
        (error: Error) => options.log?.(`event retention: pruning failed (${error.message}); trying again in an hour`),
      ),
    { firstAfterMs: FIRST_AFTER_MS, everyMs: EVERY_MS },
  );
}
