// Events, their client addresses and webhook attempts live in daily partitions
// (so that retention drops whole days), which the database makes only when asked:
// the servers' role may not create tables, so it calls
// rowgate_private.add_event_partitions, which makes them up to a week ahead as
// their owner. Every server asks at start and hourly; concurrent asks wait for
// each other and find the work done. An insert past the partitions made lands in
// a default partition and moves to its day's partition when that is made.
import type pg from 'pg';
import { repeat } from './repeated-work.ts';

const ADD = 'select rowgate_private.add_event_partitions() as n';
const EVERY_MS = 3_600_000;

/** Makes the partitions due up to a week ahead; returns how many it made. */
export async function addEventPartitions(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(ADD);
  return rows[0]?.n ?? 0;
}

/** Runs at start, then hourly; a failure is logged and tried again at the next hour. */
export function keepEventPartitions(pool: pg.Pool, options: { log?: (line: string) => void } = {}): { stop(): Promise<void> } {
  return repeat(
    () =>
      addEventPartitions(pool).then(
        () => {},
        (error: Error) => options.log?.(`event partitions: making them failed (${error.message}); trying again in an hour`),
      ),
    { firstAfterMs: 0, everyMs: EVERY_MS },
  );
}
