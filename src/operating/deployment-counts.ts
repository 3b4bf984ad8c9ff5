// The rate limits' counts, shared by every server of the deployment through
// PostgreSQL (rowgate_private.exchange_rate_limit_counts). A request never
// waits on a write in the common case: a server decides from the sums it last
// read plus what it has let through since, and sends its points in one batch
// every EXCHANGE_MS, reading the deployment's sums back in the same statement
// (an idle server exchanges an empty batch every HEARTBEAT_MS: it is alive and
// learns how many servers there are).
//
// How far past an allowance the deployment may go is bounded by the share a
// server may let through unexchanged: a key's requests beyond its share wait
// for the next exchange, which starts within MIN_GAP_MS. With N servers alive
// and a share of max(1, floor(q / (10 N))), the servers together let through
// at most q + N × share in a window: q plus a tenth, or q + N when q < 10 N
// (docs/decisions.md, "Rate limits").
//
// Windows are numbered on the database's clock, never on this machine's: every
// exchange reads the database's clock, and this server keeps its offset from
// the exchange with the shortest round trip of the last few, so servers whose
// clocks differ by seconds still share each window.
//
// When the store does not answer within STALL_MS (or fails), the server keeps
// serving: a key past its share is allowed a local q/N of each window (N: the
// servers it last knew), one warning is logged, and the time is counted. The
// connection of an exchange that has not answered in REPLACE_MS is destroyed
// and the next exchange opens another, so a failover or a half-open socket
// costs seconds, not TCP's retry timeout.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';

/** One exchange with the database: this server's points in, the deployment's sums and the database's clock out. */
export type Exchange = (
  server: string,
  batch: readonly { policy: string; key: string; window: number; points: number; expiresIn: number }[],
) => Promise<{ sums: number[]; servers: number /** the database's clock when it answered (ms since the epoch) */; clock?: number }>;

/** How often a server with points to send or keys asked for exchanges */
const EXCHANGE_MS = 100;
/** How often an idle server exchanges (it stays counted among the servers alive, and keeps its clock offset fresh) */
const HEARTBEAT_MS = 1_000;
/** The least time between the starts of two exchanges: requests waiting on one ride the same statement */
const MIN_GAP_MS = 20;
/** How long a decision waits on the store before the server decides alone */
const STALL_MS = 250;
/** How long an exchange may take before its connection is destroyed and replaced */
export const REPLACE_MS = 2_000;
/** How often the slice of counts whose windows are over is emptied (by every server: whoever comes first does it) */
const PRUNE_MS = 15_000;
/** How long an answered key counts as known: its next window's count is then known to start from this server's view */
const KNOWN_MS = 200;
/** The exchanges whose clock readings are kept; the one with the shortest round trip sets the offset */
const CLOCK_SAMPLES = 16;
/** An offset past this is logged once: the machine's clock wants fixing, though the limits do not depend on it */
const SKEW_WARNING_MS = 1_000;

/** Cells held before the first sweep of those whose window is over */
const SWEEP_AT_LEAST = 1_000;

class Cell {
  /** the deployment's sum at the last exchange, this server's exchanged points included */
  sum = 0;
  /** points in the exchange in flight */
  sending = 0;
  /** points since, not yet sent */
  pending = 0;
  /** points this server let through in the window: what its local allowance counts while the store is stalled */
  own = 0;
  /** whether an exchange has answered this cell's sum */
  answered = false;
  /** asked for since the last exchange: only such cells are exchanged (an idle key's sum is refreshed when it is next asked) */
  touched = true;
  readonly policy: string;
  readonly key: string;
  /** the window's number: whole windows since the epoch, on the database's clock */
  readonly window: number;
  /** when the window is over (ms since the epoch, on the database's clock) */
  readonly endsAt: number;
  constructor(policy: string, key: string, window: number, endsAt: number) {
    this.policy = policy;
    this.key = key;
    this.window = window;
    this.endsAt = endsAt;
  }
  get total() {
    return this.sum + this.sending + this.pending;
  }
  get unexchanged() {
    return this.sending + this.pending;
  }
  spend(points = 1) {
    this.pending += points;
    this.own += points;
  }
}

/**
 * The database's exchange, through `pool` (as rowgate_authenticator): the
 * database's clock is read after the exchange, in the same statement. A
 * statement that has not answered in REPLACE_MS loses its connection (the
 * statement timeout never fires on a frozen peer or a half-open socket).
 */
export function databaseExchange(pool: pg.Pool): Exchange {
  return async (server, batch) => {
    const client = await pool.connect();
    let timer: NodeJS.Timeout | undefined;
    try {
      const { rows } = await Promise.race([
        client.query<{ points: number; servers: number; clock: number }>(
          `select points, servers, extract(epoch from clock_timestamp())::float8 * 1000 as clock
             from rowgate_private.exchange_rate_limit_counts($1, $2, $3, $4, $5, $6)`,
          [
            server,
            batch.map((b) => b.policy),
            batch.map((b) => b.key),
            batch.map((b) => b.window),
            batch.map((b) => b.points),
            batch.map((b) => b.expiresIn),
          ],
        ),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the exchange did not answer within ${REPLACE_MS} ms`)), REPLACE_MS);
        }),
      ]);
      client.release();
      // the last row has no key: it carries the number of servers alive
      return { sums: rows.slice(0, -1).map((r) => r.points), servers: rows.at(-1)?.servers ?? 0, clock: rows.at(-1)?.clock };
    } catch (error) {
      // destroyed, not returned: the pool opens a new connection for the next exchange
      client.release(error instanceof Error ? error : true);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** An exchange with no database: the sums are this process's own (tests of the decisions alone) */
export const localExchange: Exchange = async () => ({ sums: [], servers: 1 });

/** What a server tells its operator about the shared counts (src/operating/metrics.ts, the log) */
export interface CountsEvents {
  /** an exchange failed (the error), or did not answer in time */
  onError?: (error: unknown) => void;
  /** the store stopped answering in time (true) or answers again (false): logged once each way */
  onStall?: (stalled: boolean) => void;
  /** this machine's clock is more than a second off the database's (ms, database minus local) */
  onSkew?: (offsetMs: number) => void;
}

export class DeploymentCounts {
  private readonly cells = new Map<string, Cell>();
  /** keys (policy and key) whose sums an exchange answered, with when */
  private readonly known = new Map<string, number>();
  private readonly id = randomUUID();
  private readonly exchangeWith: Exchange;
  private readonly prune?: () => Promise<unknown>;
  private readonly leave?: (server: string) => Promise<unknown>;
  private readonly events: CountsEvents;
  /** this machine's clock (ms since the epoch): a test gives a skewed one */
  private readonly localClock: () => number;
  /** the servers alive at the last exchange, this one included */
  servers = 1;
  /** the database's clock minus this machine's, as measured by the exchange with the shortest round trip */
  offsetMs = 0;
  private readonly samples: { offset: number; roundTrip: number }[] = [];
  private skewTold = false;
  /** since when the store has not answered in time; undefined while it does */
  private stalledSince: number | undefined;
  /** the time spent stalled before stalledSince (ms) */
  private stalledBefore = 0;
  private errorTold = false;
  private inFlight: Promise<void> | undefined;
  private again: Promise<void> | undefined;
  private lastStart = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastPrune: number;
  private readonly local: boolean;
  private sweepAt = SWEEP_AT_LEAST;

  constructor(
    options: {
      exchange?: Exchange;
      prune?: () => Promise<unknown>;
      leave?: (server: string) => Promise<unknown>;
      clock?: () => number;
    } & CountsEvents = {},
  ) {
    this.exchangeWith = options.exchange ?? localExchange;
    this.local = options.exchange === undefined;
    this.prune = options.prune;
    this.leave = options.leave;
    this.events = { onError: options.onError, onStall: options.onStall, onSkew: options.onSkew };
    this.localClock = options.clock ?? Date.now;
    this.lastPrune = this.localClock();
  }

  /** The database's counts, through `pool` */
  static inDatabase(pool: pg.Pool, events: CountsEvents & { clock?: () => number } = {}): DeploymentCounts {
    return new DeploymentCounts({
      exchange: databaseExchange(pool),
      prune: () => pool.query('select rowgate_private.prune_rate_limit_counts()'),
      leave: (server) => pool.query('select rowgate_private.leave_rate_limit_counts($1)', [server]),
      ...events,
    });
  }

  /** Now on the deployment's clock (the database's), in ms since the epoch */
  now(): number {
    return this.localClock() + this.offsetMs;
  }

  /** Whether the store has not answered within STALL_MS: decisions are then this server's alone */
  get stalled(): boolean {
    return this.stalledSince !== undefined;
  }

  /** The time spent stalled since the server started (seconds) */
  get stalledSeconds(): number {
    return (this.stalledBefore + (this.stalledSince === undefined ? 0 : this.localClock() - this.stalledSince)) / 1000;
  }

  /** Registers this server with the others and exchanges from now on */
  async start(): Promise<void> {
    if (this.local) return;
    await this.exchange().catch(() => {});
    let lastExchange = this.localClock();
    this.timer = setInterval(() => {
      const now = this.localClock();
      // an idle server exchanges too, less often: the others count it among those sharing an allowance
      if ((this.busy() && now - this.lastStart >= MIN_GAP_MS) || now - lastExchange >= HEARTBEAT_MS) {
        lastExchange = now;
        void this.exchange().catch(() => {});
      }
      if (this.prune && now - this.lastPrune >= PRUNE_MS) {
        this.lastPrune = now;
        this.prune().catch((error: unknown) => this.events.onError?.(error));
      }
    }, EXCHANGE_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.local) return;
    // the points let through since the last exchange still count for the others, and this server no more
    await this.exchange().catch(() => {});
    await this.leave?.(this.id).catch((error: unknown) => this.events.onError?.(error));
  }

  /** How much of an allowance of `quota` this server may let through unexchanged */
  share(quota: number): number {
    return Math.max(1, Math.floor(quota / (10 * this.servers)));
  }

  /** How much of an allowance of `quota` this server lets through alone while the store is stalled */
  localShare(quota: number): number {
    return Math.max(1, Math.floor(quota / this.servers));
  }

  /** The key's count in its current window of `seconds` */
  cell(policy: string, key: string, seconds: number, now = this.now()): Cell {
    const length = seconds * 1000;
    const window = Math.floor(now / length);
    const id = `${policy}\u0000${window}\u0000${key}`;
    let cell = this.cells.get(id);
    if (cell) cell.touched = true;
    else {
      cell = new Cell(policy, key, window, (window + 1) * length);
      // a key answered lately starts its next window from this server's view: nobody else can have counted much in it yet
      const knownAt = this.known.get(`${policy}\u0000${key}`);
      if (this.local || (knownAt !== undefined && this.localClock() - knownAt <= KNOWN_MS)) cell.answered = true;
      this.cells.set(id, cell);
      // without exchanges (or between them, under a flood of new keys) the windows that are over go here
      if (this.cells.size >= this.sweepAt) {
        for (const [other, c] of this.cells) if (c.endsAt <= now && c.unexchanged === 0) this.cells.delete(other);
        this.forgetKnown();
        this.sweepAt = Math.max(SWEEP_AT_LEAST, this.cells.size * 2);
      }
    }
    return cell;
  }

  /** Gives a point back to a cell, if its window is not over (a point given back later would start the next one short) */
  giveBack(cell: Cell, points = 1, now = this.now()): void {
    if (cell.endsAt > now) {
      cell.pending -= points;
      cell.own -= points;
    }
  }

  /**
   * Resolves once an exchange that started after this call has answered
   * (true), or after STALL_MS or a failed exchange (false). The exchange
   * starts within MIN_GAP_MS, so the requests that wait share it.
   */
  exchanged(): Promise<boolean> {
    if (this.local) return Promise.resolve(true);
    const next = this.inFlight ? (this.again ??= this.inFlight.then(() => this.soon())) : this.soon();
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), STALL_MS);
    });
    const answered = next.then(
      () => true,
      () => false,
    );
    return Promise.race([answered, waited]).finally(() => clearTimeout(timer));
  }

  /** Whether any key was asked for or has points to send */
  private busy(): boolean {
    for (const cell of this.cells.values()) if (cell.touched || cell.pending !== 0) return true;
    return false;
  }

  /** An exchange that starts no sooner than MIN_GAP_MS after the last one started */
  private soon(): Promise<void> {
    const wait = this.lastStart + MIN_GAP_MS - this.localClock();
    if (wait <= 0) return this.exchange();
    return new Promise<void>((resolve) => setTimeout(resolve, wait)).then(() => this.exchange());
  }

  private forgetKnown(): void {
    const now = this.localClock();
    for (const [key, at] of this.known) if (now - at > KNOWN_MS) this.known.delete(key);
  }

  private stall(): void {
    if (this.stalledSince !== undefined) return;
    this.stalledSince = this.localClock();
    this.events.onStall?.(true);
  }

  private unstall(): void {
    if (this.stalledSince === undefined) return;
    this.stalledBefore += this.localClock() - this.stalledSince;
    this.stalledSince = undefined;
    this.errorTold = false;
    this.events.onStall?.(false);
  }

  /** Keeps the clock reading of an exchange, and the offset of the one with the shortest round trip */
  private readClock(clock: number | undefined, sentAt: number, answeredAt: number): void {
    if (clock === undefined || !Number.isFinite(clock)) return;
    this.samples.push({ offset: clock - (sentAt + answeredAt) / 2, roundTrip: answeredAt - sentAt });
    if (this.samples.length > CLOCK_SAMPLES) this.samples.shift();
    let best = this.samples[0]!;
    for (const sample of this.samples) if (sample.roundTrip < best.roundTrip) best = sample;
    this.offsetMs = best.offset;
    const skewed = Math.abs(this.offsetMs) > SKEW_WARNING_MS;
    if (skewed && !this.skewTold) this.events.onSkew?.(this.offsetMs);
    this.skewTold = skewed;
  }

  /** Sends every pending point, and reads back the sums of the keys asked for since the last exchange */
  private exchange(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const sentAt = this.localClock();
    this.lastStart = sentAt;
    const now = this.now();
    const batch: Cell[] = [];
    for (const [id, cell] of this.cells) {
      // a window that is over is forgotten (its unsent points with it: they can refuse nobody any more)
      if (cell.endsAt <= now) this.cells.delete(id);
      else if (cell.touched || cell.pending !== 0) {
        cell.touched = false;
        batch.push(cell);
      }
    }
    this.forgetKnown();
    for (const cell of batch) {
      cell.sending = cell.pending;
      cell.pending = 0;
    }
    const stallTimer = setTimeout(() => this.stall(), STALL_MS);
    const sent = this.exchangeWith(
      this.id,
      batch.map((c) => ({
        policy: c.policy,
        key: c.key,
        window: c.window,
        points: c.sending,
        expiresIn: Math.ceil((c.endsAt - now) / 1000) + 1,
      })),
    ).then(
      ({ sums, servers, clock }) => {
        const answeredAt = this.localClock();
        batch.forEach((cell, i) => {
          cell.sum = sums[i] ?? cell.sum + cell.sending;
          cell.sending = 0;
          cell.answered = true;
          this.known.set(`${cell.policy}\u0000${cell.key}`, answeredAt);
        });
        this.servers = Math.max(1, servers);
        this.readClock(clock, sentAt, answeredAt);
        this.unstall();
      },
      (error: unknown) => {
        // not counted: sent again with the next exchange
        for (const cell of batch) {
          cell.pending += cell.sending;
          cell.sending = 0;
        }
        // told once a stall, not at every retry
        if (!this.errorTold) this.events.onError?.(error);
        this.errorTold = true;
        this.stall();
        throw error;
      },
    );
    this.inFlight = sent.finally(() => {
      clearTimeout(stallTimer);
      this.inFlight = undefined;
      this.again = undefined;
    });
    return this.inFlight;
  }
}

export type { Cell };
