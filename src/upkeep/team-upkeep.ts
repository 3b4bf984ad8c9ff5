// The upkeep of SPEC §21's timed rules, in the database's own functions: pending
// invitations past their 7 days become `expired` (an `invitation.expired` event each),
// and the client addresses and user agents of events older than 90 days are erased.
// Neither rule waits for it (an invitation past expires_at is answered as expired,
// and an address past 90 days is shown to no one); this makes them so in the rows.
// Every server runs it; concurrent runs skip each other's rows.
import type pg from 'pg';
import { inBatches, repeat } from './repeated-work.ts';

const EVERY_MS = 600_000;
const FIRST_AFTER_MS = 10_000;

/** One round: expired invitations, then old client addresses, in batches; returns what changed. */
export async function teamUpkeep(pool: pg.Pool): Promise<{ expired: number; erased: number }> {
  const expired = await inBatches(pool, 'select rowgate_private.expire_invitations($1) as n', [1000], 1000);
  const erased = await inBatches(pool, 'select rowgate_private.erase_event_clients($1) as n', [5000], 5000);
  return { expired, erased };
}

/** Runs shortly after start, then every ten minutes; a failure is logged and tried again at the next round. */
export function keepTeams(pool: pg.Pool, options: { log?: (line: string) => void } = {}): { stop(): Promise<void> } {
  return repeat(
    () =>
      teamUpkeep(pool).then(
        () => {},
        (error: Error) => options.log?.(`team upkeep: failed (${error.message}); trying again in ten minutes`),
      ),
    { firstAfterMs: FIRST_AFTER_MS, everyMs: EVERY_MS },
  );
}
