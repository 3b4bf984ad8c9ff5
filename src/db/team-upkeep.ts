// The upkeep of SPEC §21's timed rules, in the database's own functions: pending
// invitations past their 7 days become `expired` (an `invitation.expired` event each),
// and the client addresses and user agents of events older than 90 days are erased.
// Neither rule waits for it (an invitation past expires_at is answered as expired,
// and an address past 90 days is shown to no one); this makes them so in the rows.
// Every server runs it; concurrent runs skip each other's rows.
import type pg from 'pg';

const EVERY_MS = 600_000;
const FIRST_AFTER_MS = 10_000;

/** One round: expired invitations, then old client addresses, in batches; returns what changed. */
export async function teamUpkeep(pool: pg.Pool): Promise<{ expired: number; erased: number }> {
  let expired = 0;
  let erased = 0;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>('select rowgate_private.expire_invitations(1000) as n');
    expired += rows[0]?.n ?? 0;
    if ((rows[0]?.n ?? 0) < 1000) break;
  }
  for (;;) {
    const { rows } = await pool.query<{ n: number }>('select rowgate_private.erase_event_clients(5000) as n');
    erased += rows[0]?.n ?? 0;
    if ((rows[0]?.n ?? 0) < 5000) break;
  }
  return { expired, erased };
}

/** Runs shortly after start, then every ten minutes; a failure is logged and tried again at the next round. */
export function keepTeams(pool: pg.Pool, options: { log?: (line: string) => void } = {}): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const round = () => {
    running ??= teamUpkeep(pool)
      .then(
        () => {},
        (error: Error) => options.log?.(`team upkeep: failed (${error.message}); trying again in ten minutes`),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const first = setTimeout(round, FIRST_AFTER_MS);
  const timer = setInterval(round, EVERY_MS);
  first.unref();
  timer.unref();
  return {
    async stop() {
      clearTimeout(first);
      clearInterval(timer);
      await running;
    },
  };
}
