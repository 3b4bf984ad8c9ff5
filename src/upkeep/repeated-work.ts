// Upkeep the servers do for the database now and then (event retention, the
// teams' timed rules): a statement run in batches until one comes back short,
// so that none holds many locks or runs long, and a job repeated on a timer,
// one run at a time, whose stop waits for the run in flight. Several servers
// doing the same upkeep at once skip each other's rows in the SQL.
import type pg from 'pg';

/** Runs `text` (whose one column `n` says how many rows it did) until it does fewer than `batch`: the rows in all. */
export async function inBatches(
  pool: pg.Pool,
  text: string,
  values: unknown[],
  batch: number,
  stopped: () => boolean = () => false,
): Promise<number> {
  let total = 0;
  while (!stopped()) {
    const { rows } = await pool.query<{ n: number }>(text, values);
    const done = rows[0]?.n ?? 0;
    total += done;
    if (done < batch) break;
  }
  return total;
}

/** Runs `job` `firstAfterMs` after start, then every `everyMs`, never two at once; stop waits for the run in flight. */
export function repeat(job: (stopped: () => boolean) => Promise<void>, times: { firstAfterMs: number; everyMs: number }) {
  let running: Promise<void> | undefined;
  let stopped = false;
  const run = () => {
    running ??= job(() => stopped).finally(() => {
      running = undefined;
    });
  };
  const first = setTimeout(run, times.firstAfterMs);
  const timer = setInterval(run, times.everyMs);
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

/**
 * Runs one statement on `pool` every `intervalMs`, never two at once: a sweep the
 * database decides by itself. A failure is logged once, until a run works again.
 */
export function sweep(
  pool: pg.Pool,
  text: string,
  options: { intervalMs: number; log?: (line: string) => void; failure: (message: string) => string },
): { stop(): void } {
  let failing = false;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    pool
      .query(text)
      .then(
        () => {
          failing = false;
        },
        (error: Error) => {
          if (!failing) options.log?.(options.failure(error.message));
          failing = true;
        },
      )
      .finally(() => {
        running = false;
      });
  }, options.intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
