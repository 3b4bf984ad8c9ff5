// The request log's writer (SPEC §25): each /v1 answer about an organization
// becomes a row, queued in memory when the answer is done and written by this
// process in batches (one multi-row statement every FLUSH_MS, outside every
// request's transaction). The queue is bounded: when the database falls behind,
// new rows are dropped and counted (rowgate_request_log_dropped_total), and no
// answer ever waits for the log. The database keeps a row only where its caller
// reaches the organization (rowgate_private.record_requests).
import type pg from 'pg';
import type { Metrics } from './metrics.ts';
import { repeat } from '../upkeep/repeated-work.ts';

/** One request, as rowgate_private.record_requests reads it. */
export interface RequestLogRow {
  id: string;
  /** null: a refusal, placed where its denial was recorded */
  organization_id: string | null;
  subject_kind: string | null;
  subject_id: string | null;
  request_id: string;
  method: string;
  route: string;
  path: string;
  status: number;
  error: string | null;
  duration_ms: number;
  credential_kind: string | null;
  credential_id: string | null;
  client_ip: string | null;
  user_agent: string | null;
  api_version: string | null;
  idempotent_replayed: boolean;
  created_at: string;
}

const WRITE = 'select rowgate_private.record_requests($1::jsonb) as written';
const FLUSH_MS = 100;
const BATCH = 1_000;
const QUEUED = 20_000;

export interface RequestLogOptions {
  /** rows held at most while the database falls behind; past it rows are dropped */
  maxQueued?: number;
  flushMs?: number;
  batch?: number;
  metrics?: Metrics;
  log?: (line: string) => void;
}

export class RequestLog {
  private pool?: pg.Pool;
  private queue: RequestLogRow[] = [];
  private writing?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private readonly options: Required<Omit<RequestLogOptions, 'metrics' | 'log'>> & Pick<RequestLogOptions, 'metrics' | 'log'>;
  /** rows this process dropped, and wrote (the database may keep fewer: those out of reach) */
  dropped = 0;
  written = 0;

  constructor(options: RequestLogOptions = {}) {
    this.options = { maxQueued: QUEUED, flushMs: FLUSH_MS, batch: BATCH, ...options };
  }

  /** Writes through this pool (the server's, as the authenticator); the first call starts the flushes. */
  use(pool: pg.Pool): this {
    if (this.pool) return this;
    this.pool = pool;
    this.timer = setInterval(() => void this.flush(), this.options.flushMs);
    this.timer.unref();
    return this;
  }

  /** Queues a row; never waits. Past the bound it is dropped and counted. */
  push(row: RequestLogRow): void {
    if (this.queue.length >= this.options.maxQueued) {
      this.dropped++;
      this.options.metrics?.requestLogDropped.inc();
      return;
    }
    this.queue.push(row);
  }

  /**
   * Writes what is queued, a batch at a time, one write at a time. Rows that arrive while it
   * writes wait for the next flush unless a whole batch is waiting (a backlog): a busy server
   * writes a statement every FLUSH_MS, not one after another.
   */
  flush(): Promise<void> {
    if (this.writing || !this.pool || this.queue.length === 0) return this.writing ?? Promise.resolve();
    const pool = this.pool;
    this.writing = (async () => {
      try {
        for (let first = true; this.queue.length && (first || this.queue.length >= this.options.batch); first = false) {
          const rows = this.queue.splice(0, this.options.batch);
          try {
            await pool.query(WRITE, [JSON.stringify(rows)]);
            this.written += rows.length;
          } catch (error) {
            // lost with the batch: counted as dropped, as rows past the bound are
            this.dropped += rows.length;
            this.options.metrics?.requestLogDropped.inc(rows.length);
            this.options.log?.(`request log: ${rows.length} rows not written (${(error as Error).message})`);
            return;
          }
        }
      } finally {
        this.writing = undefined;
      }
    })();
    return this.writing;
  }

  /** Writes what is left, and stops. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.writing;
    while (this.queue.length) {
      const before = this.queue.length;
      await this.flush();
      // each write takes its batch off the queue, written or dropped: no progress means no pool
      if (this.queue.length >= before) break;
    }
  }
}

/**
 * The request log's day partitions made a week ahead and its days past 30
 * dropped (SPEC §25): at start, then hourly; a failure is logged and tried again.
 */
export function keepRequestLogPartitions(pool: pg.Pool, options: { log?: (line: string) => void } = {}): { stop(): Promise<void> } {
  return repeat(
    () =>
      pool.query('select rowgate_private.add_request_log_partitions(), rowgate_private.prune_request_log()').then(
        () => {},
        (error: Error) => options.log?.(`request log: partitions not kept (${error.message}); trying again in an hour`),
      ),
    { firstAfterMs: 0, everyMs: 3_600_000 },
  );
}
