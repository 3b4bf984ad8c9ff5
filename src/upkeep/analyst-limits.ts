// Holding analysts to their limits (SPEC §15) whatever their sessions SET:
// rowgate_private.enforce_analyst_limits (migration 000006) cancels statements
// past an analyst's statement timeout and ends sessions idle in a transaction
// past its idle timeout or holding an advisory lock. The server runs it every
// second; the migrations run it when their lock is taken (src/db/setup.ts).
import type pg from 'pg';
import { sweep } from './repeated-work.ts';

const ENFORCE_ANALYST_LIMITS = 'select cancelled, terminated from rowgate_private.enforce_analyst_limits()';

export interface AnalystWatch {
  stop(): void;
}

/** Runs the check on the pool every `intervalMs`; a failure is logged once until it works again. */
export function watchAnalysts(pool: pg.Pool, options: { intervalMs?: number; log?: (line: string) => void } = {}): AnalystWatch {
  return sweep(pool, ENFORCE_ANALYST_LIMITS, {
    intervalMs: options.intervalMs ?? 1000,
    log: options.log,
    failure: (message) => `analysts' limits: cannot enforce them (${message}); trying again every second`,
  });
}
