// Reads on hot standbys (SPEC §19): ROWGATE_READ_DATABASE_URLS lists
// authenticator URLs of standbys; a read goes to one whose replay lag is under
// ROWGATE_READ_MAX_LAG_MS and that has replayed the position the request must
// see (src/db/consistency.ts), else to the primary. A standby that fails is
// skipped until it answers a probe again, and the read runs on the primary: a
// standby going away is never a 5xx.
//
// Lag is measured, not asked: every probe reads the primary's WAL position
// (kept with the time it was read) and then each standby's replay position. A
// standby's lag is how long ago the primary first had WAL the standby has not
// replayed: it grows while the standby is paused or cut off even when the
// primary is idle, and is 0 when it has replayed everything. Probes are
// PROBE_MS apart, so a standby is used only while its lag plus one probe
// interval is under the bound: the bound holds between probes too.
import type pg from 'pg';
import { parse as parseConnectionString } from 'pg-connection-string';
import { type Position, parsePosition, recordEnd } from './consistency.ts';
import { createPool, type PoolOptions } from './pool.ts';
import { databaseFailure } from '../core/sqlstate.ts';

const PROBE_MS = 100;
/** primary positions kept for measuring lag: enough for a minute of probes */
const SAMPLES = 600;

interface Standby {
  /** host:port/database, for readyz and logs (never the password) */
  name: string;
  pool: pg.Pool;
  replayed: Position | null;
  /** when `replayed` was read; null: never, or the standby failed since */
  probedAt: number | null;
  failure?: string;
  reads: number;
}

export interface StandbyStatus {
  name: string;
  available: boolean;
  lag_ms: number | null;
  reads: number;
}

/** Errors after which a read is run again on the primary: the standby is gone, refuses, or cannot do it. */
function retryOnPrimary(error: unknown): { standbyDown: boolean } | null {
  const failure = databaseFailure(error);
  if (failure === 'gone') return { standbyDown: true };
  // the read must write (a token's use to record), or a conflict with recovery cancelled it
  if (failure === 'readOnly' || failure === 'collision') return { standbyDown: false };
  // a credential that authenticates nobody here may be one the standby has not replayed yet (created a moment ago)
  if ((error as { status?: unknown })?.status === 401) return { standbyDown: false };
  return null;
}

/**
 * How a standby is named in /readyz, the metrics and the log: host (or socket
 * folder), port and database, never the password. Parsed as pg parses the URL,
 * so every form AUTH_DATABASE_URL takes works here too (a Unix socket as
 * `?host=/run/postgresql`, where `new URL` throws on the empty host).
 */
export function standbyName(url: string): string {
  const { host, port, database } = parseConnectionString(url);
  return `${host || 'localhost'}:${port || 5432}/${database ?? ''}`;
}

export class ReadReplicas {
  private readonly primary: pg.Pool;
  private readonly standbys: Standby[];
  private readonly maxLagMs: number;
  private readonly log?: (line: string) => void;
  /** the primary's positions, oldest first, with when they were read */
  private readonly samples: { at: number; position: Position }[] = [];
  private timer?: NodeJS.Timeout;
  private probing?: Promise<void>;
  private next = 0;
  /** reads served by the primary because no standby would do */
  primaryReads = 0;

  constructor(options: {
    primary: pg.Pool;
    urls: string[];
    maxLagMs: number;
    pool: Omit<PoolOptions, 'connectionString'>;
    log?: (line: string) => void;
  }) {
    this.primary = options.primary;
    this.maxLagMs = options.maxLagMs;
    this.log = options.log;
    this.standbys = options.urls.map((url) => {
      return {
        name: standbyName(url),
        pool: createPool({ ...options.pool, connectionString: url }),
        replayed: null,
        probedAt: null,
        reads: 0,
      };
    });
  }

  /** Each standby's pool (where the standby's own upkeep runs, such as ending SQL logins' sessions). */
  pools(): pg.Pool[] {
    return this.standbys.map((standby) => standby.pool);
  }

  /** Probes once (so the first reads can use the standbys), then every PROBE_MS. */
  async start(): Promise<void> {
    await this.probe();
    this.timer = setInterval(() => void this.probe(), PROBE_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.probing;
    await Promise.all(this.standbys.map((s) => s.pool.end()));
  }

  private probe(): Promise<void> {
    this.probing ??= (async () => {
      try {
        const { rows } = await this.primary.query<{ position: string }>('select pg_current_wal_insert_lsn()::text as position');
        const position = parsePosition(rows[0]?.position);
        if (position !== null) {
          this.samples.push({ at: Date.now(), position: recordEnd(position) });
          if (this.samples.length > SAMPLES) this.samples.shift();
        }
      } catch {
        // the primary is away: the standbys' lag grows from the last known position
      }
      await Promise.all(this.standbys.map((standby) => this.probeStandby(standby)));
    })().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  private async probeStandby(standby: Standby) {
    try {
      const { rows } = await standby.pool.query<{ replayed: string | null }>('select pg_last_wal_replay_lsn()::text as replayed');
      const replayed = parsePosition(rows[0]?.replayed);
      if (replayed === null) throw new Error('not a standby (pg_last_wal_replay_lsn() is null)');
      if (standby.failure) this.log?.(`read replicas: ${standby.name} answers again`);
      standby.replayed = replayed;
      standby.probedAt = Date.now();
      standby.failure = undefined;
    } catch (error) {
      this.down(standby, error);
    }
  }

  private down(standby: Standby, error: unknown) {
    const reason = (error as Error)?.message ?? String(error);
    if (!standby.failure) this.log?.(`read replicas: ${standby.name} skipped (${reason}); reads go elsewhere until it answers`);
    standby.failure = reason;
    standby.probedAt = null;
  }

  /** How far behind the standby is (ms); null: unknown, not to be used. */
  private lag(standby: Standby, now: number): number | null {
    if (standby.probedAt === null || standby.replayed === null) return null;
    const replayed = standby.replayed;
    const behind = this.samples.find((s) => s.position > replayed);
    return behind ? now - behind.at : 0;
  }

  /** A standby for a read that must see `position` (null: any), or undefined for the primary. */
  private choose(position: Position | null): Standby | undefined {
    const now = Date.now();
    for (let i = 0; i < this.standbys.length; i++) {
      const standby = this.standbys[(this.next + i) % this.standbys.length]!;
      const lag = this.lag(standby, now);
      if (lag === null || lag + PROBE_MS > this.maxLagMs) continue;
      if (position !== null && standby.replayed! < recordEnd(position)) continue;
      this.next = (this.next + i + 1) % this.standbys.length;
      return standby;
    }
    return undefined;
  }

  /**
   * Runs a read on a standby that will do, else on the primary; on the primary
   * again when the standby fails in a way the primary would not.
   */
  async read<T>(position: Position | null, run: (pool: pg.Pool) => Promise<T>): Promise<T> {
    const standby = this.choose(position);
    if (!standby) {
      this.primaryReads++;
      return run(this.primary);
    }
    try {
      const result = await run(standby.pool);
      standby.reads++;
      return result;
    } catch (error) {
      const retry = retryOnPrimary(error);
      if (!retry) throw error;
      if (retry.standbyDown) this.down(standby, error);
      this.primaryReads++;
      return run(this.primary);
    }
  }

  /**
   * Where a read made of several transactions runs (a GraphQL query's, whose
   * statements grafast sends as it goes): a standby that will do now, else the
   * primary. `fallBack` answers, for a failure on the standby, the primary to
   * run the failed read on again, or null when the failure is the read's own.
   */
  readPool(position: Position | null): { pool: pg.Pool; fallBack(error: unknown): pg.Pool | null } {
    const standby = this.choose(position);
    if (!standby) {
      this.primaryReads++;
      return { pool: this.primary, fallBack: () => null };
    }
    standby.reads++;
    return {
      pool: standby.pool,
      fallBack: (error) => {
        const retry = retryOnPrimary(error);
        if (!retry) return null;
        if (retry.standbyDown) this.down(standby, error);
        this.primaryReads++;
        return this.primary;
      },
    };
  }

  status(): StandbyStatus[] {
    const now = Date.now();
    return this.standbys.map((standby) => {
      const lag = this.lag(standby, now);
      return { name: standby.name, available: lag !== null && lag + PROBE_MS <= this.maxLagMs, lag_ms: lag, reads: standby.reads };
    });
  }
}
