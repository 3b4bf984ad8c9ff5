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
// (docs/fleet-bounds.md, "Rate limits").
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
import { ClockOffset } from './database-clock.ts';
import { databaseExchange, type Exchange, localExchange } from './counts-exchange.ts';

import { Cell } from './count-cell.ts';

/** How often a server with points to send or keys asked for exchanges */
const EXCHANGE_MS = 100;
/** How often an idle server exchanges (it stays counted among the servers alive, and keeps its clock offset fresh) */
const HEARTBEAT_MS = 1_000;
/** The least time between the starts of two exchanges: requests waiting on one ride the same statement */
const MIN_GAP_MS = 20;
/** How long a decision waits on the store before the server decides alone */
const STALL_MS = 250;
/** How often the slice of counts whose windows are over is emptied (by every server: whoever comes first does it) */
const PRUNE_MS = 15_000;
/** How long an answered key counts as known: its next window's count is then known to start from this server's view */
const KNOWN_MS = 200;

/** Cells held before the first sweep of those whose window is over */
const SWEEP_AT_LEAST = 1_000;

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
  private readonly clock = new ClockOffset((offsetMs) => this.events.onSkew?.(offsetMs));
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
    return this.localClock() + this.clock.offsetMs;
  }

  /** The database's clock minus this machine's (ms) */
  get offsetMs(): number {
    return this.clock.offsetMs;
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
        this.clock.read(clock, sentAt, answeredAt);
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
