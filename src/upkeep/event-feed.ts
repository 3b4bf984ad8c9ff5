// The event feed's sequencer (SPEC §17): events are written without a feed
// position, and rowgate_private.place_events numbers those whose transactions
// have committed, in one short transaction, one run at a time across every
// server (an advisory lock; a server that finds it taken skips its turn). Every
// server runs it several times a second, so an event is placed, and its webhook
// deliveries taken into their endpoints' lanes, well within a second of its
// commit, whatever other transactions stay open. A backlog is placed in
// batches, one after another, until a run comes back short.
import type pg from 'pg';
import { inBatches, repeat } from './repeated-work.ts';

const PLACE = 'select rowgate_private.place_events($1) as n';
const BATCH = 1_000;
export const FEED_EVERY_MS = 200;

/** Places the committed events not placed yet, in batches; how many it placed (0 when another run holds the lock). */
export function placeEvents(pool: pg.Pool, stopped = () => false): Promise<number> {
  return inBatches(pool, PLACE, [BATCH], BATCH, stopped);
}

/** Runs the sequencer every `everyMs`; a failure is logged once until a run works again. */
export function keepFeed(pool: pg.Pool, options: { everyMs?: number; log?: (line: string) => void } = {}): { stop(): Promise<void> } {
  let failing = false;
  return repeat(
    (stopped) =>
      placeEvents(pool, stopped).then(
        () => {
          failing = false;
        },
        (error: Error) => {
          if (!failing) options.log?.(`event feed: placing events failed (${error.message}); trying again on every run`);
          failing = true;
        },
      ),
    { firstAfterMs: 0, everyMs: options.everyMs ?? FEED_EVERY_MS },
  );
}
