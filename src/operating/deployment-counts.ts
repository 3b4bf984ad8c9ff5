// The rate limits' counts, shared by every server of the deployment through
// PostgreSQL (rowgate_private.exchange_rate_limit_counts). A request never
// waits on a write in the common case: a server decides from the sums it last
// read plus what it has let through since, and sends its points in one batch
// every EXCHANGE_MS, reading the deployment's sums back in the same statement
// (an idle server exchanges an empty batch: it is alive and learns how many
// servers there are).
//
// How far past an allowance the deployment may go is bounded by the share a
// server may let through unexchanged: a key's requests beyond its share wait
// for the next exchange, which they start at once. With N servers alive and a
// share of max(1, floor(q / (10 N))), the servers together let through at most
// q + N × share in a window: q plus a tenth, or q + N when q < 10 N
// (docs/decisions.md, "Rate limits"). A request waits on an exchange at most
// MAX_WAIT_MS; past it (the database is slow or gone), it is refused
// (src/operating/rate-limit.ts).
import { randomUUID } from 'node:crypto';
import type pg from 'pg';

/** One exchange with the database: this server's points in, the deployment's sums out. */
export type Exchange = (
  server: string,
  batch: readonly { policy: string; key: string; window: number; points: number; expiresIn: number }[],
) => Promise<{ sums: number[]; servers: number }>;

/** How often a server sends its points and reads the sums back */
const EXCHANGE_MS = 100;
/** How long a request may wait on an exchange before it is refused */
const MAX_WAIT_MS = 1_000;
/** How often the windows that are over are deleted (by every server: the work is shared by whoever comes first) */
const PRUNE_MS = 60_000;

/** Cells held before the first sweep of those whose window is over */
const SWEEP_AT_LEAST = 1_000;

class Cell {
  /** the deployment's sum at the last exchange, this server's exchanged points included */
  sum = 0;
  /** points in the exchange in flight */
  sending = 0;
  /** points since, not yet sent */
  pending = 0;
  /** asked for since the last exchange: only such cells are exchanged (an idle key's sum is refreshed when it is next asked) */
  touched = true;
  readonly policy: string;
  readonly key: string;
  /** the window's number: whole windows since the epoch */
  readonly window: number;
  /** when the window is over (ms since the epoch) */
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
}

/** The database's exchange, through the server's pool (as rowgate_authenticator) */
export function databaseExchange(pool: pg.Pool): Exchange {
  return async (server, batch) => {
    const { rows } = await pool.query<{ points: number; servers: number }>(
      'select points, servers from rowgate_private.exchange_rate_limit_counts($1, $2, $3, $4, $5, $6)',
      [
        server,
        batch.map((b) => b.policy),
        batch.map((b) => b.key),
        batch.map((b) => b.window),
        batch.map((b) => b.points),
        batch.map((b) => b.expiresIn),
      ],
    );
    // the last row has no key: it carries the number of servers alive
    return { sums: rows.slice(0, -1).map((r) => r.points), servers: rows.at(-1)?.servers ?? 0 };
  };
}

/** An exchange with no database: the sums are this process's own (tests of the decisions alone) */
export const localExchange: Exchange = async () => ({ sums: [], servers: 1 });

export class DeploymentCounts {
  private readonly cells = new Map<string, Cell>();
  private readonly id = randomUUID();
  private readonly exchangeWith: Exchange;
  private readonly prune?: () => Promise<unknown>;
  private readonly leave?: (server: string) => Promise<unknown>;
  private readonly onError: (error: unknown) => void;
  /** the servers alive at the last exchange, this one included */
  servers = 1;
  private inFlight: Promise<void> | undefined;
  private again: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastPrune = Date.now();
  private readonly local: boolean;
  private sweepAt = SWEEP_AT_LEAST;

  constructor(
    options: {
      exchange?: Exchange;
      prune?: () => Promise<unknown>;
      leave?: (server: string) => Promise<unknown>;
      onError?: (error: unknown) => void;
    } = {},
  ) {
    this.exchangeWith = options.exchange ?? localExchange;
    this.local = options.exchange === undefined;
    this.prune = options.prune;
    this.leave = options.leave;
    this.onError = options.onError ?? (() => {});
  }

  /** The database's counts, through `pool` */
  static inDatabase(pool: pg.Pool, onError?: (error: unknown) => void): DeploymentCounts {
    return new DeploymentCounts({
      exchange: databaseExchange(pool),
      prune: () => pool.query('select rowgate_private.prune_rate_limit_counts()'),
      leave: (server) => pool.query('select rowgate_private.leave_rate_limit_counts($1)', [server]),
      onError,
    });
  }

  /** Registers this server with the others and exchanges every EXCHANGE_MS from now on */
  async start(): Promise<void> {
    if (this.local) return;
    await this.exchange().catch(this.onError);
    this.timer = setInterval(() => {
      const now = Date.now();
      // an idle server exchanges too: the others count it among those sharing an allowance, and it knows how many they are
      void this.exchange().catch(this.onError);
      if (this.prune && now - this.lastPrune >= PRUNE_MS) {
        this.lastPrune = now;
        this.prune().catch(this.onError);
      }
    }, EXCHANGE_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.local) return;
    // the points let through since the last exchange still count for the others, and this server no more
    await this.exchange().catch(this.onError);
    await this.leave?.(this.id).catch(this.onError);
  }

  /** How much of an allowance of `quota` this server may let through unexchanged */
  share(quota: number): number {
    return Math.max(1, Math.floor(quota / (10 * this.servers)));
  }

  /** The key's count in its current window of `seconds` */
  cell(policy: string, key: string, seconds: number, now = Date.now()): Cell {
    const length = seconds * 1000;
    const window = Math.floor(now / length);
    const id = `${policy}\u0000${window}\u0000${key}`;
    let cell = this.cells.get(id);
    if (cell) cell.touched = true;
    else {
      cell = new Cell(policy, key, window, (window + 1) * length);
      this.cells.set(id, cell);
      // without exchanges (or between them, under a flood of new keys) the windows that are over go here
      if (this.cells.size >= this.sweepAt) {
        for (const [other, c] of this.cells) if (c.endsAt <= now && c.unexchanged === 0) this.cells.delete(other);
        this.sweepAt = Math.max(SWEEP_AT_LEAST, this.cells.size * 2);
      }
    }
    return cell;
  }

  /** Gives a point back to a cell, if its window is not over (a point given back later would start the next one short) */
  giveBack(cell: Cell, points = 1, now = Date.now()): void {
    if (cell.endsAt > now) cell.pending -= points;
  }

  /**
   * Resolves once an exchange that started after this call has answered
   * (true), or after MAX_WAIT_MS or a failed exchange (false).
   */
  exchanged(): Promise<boolean> {
    if (this.local) return Promise.resolve(true);
    const next = this.inFlight ? (this.again ??= this.inFlight.then(() => this.exchange())) : this.exchange();
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), MAX_WAIT_MS);
    });
    const answered = next.then(
      () => true,
      (error: unknown) => {
        this.onError(error);
        return false;
      },
    );
    return Promise.race([answered, waited]).finally(() => clearTimeout(timer));
  }

  /** Sends every pending point, and reads back the sums of the keys asked for since the last exchange */
  private exchange(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    const now = Date.now();
    const batch: Cell[] = [];
    for (const [id, cell] of this.cells) {
      // a window that is over is forgotten (its unsent points with it: they can refuse nobody any more)
      if (cell.endsAt <= now) this.cells.delete(id);
      else if (cell.touched || cell.pending !== 0) {
        cell.touched = false;
        batch.push(cell);
      }
    }
    for (const cell of batch) {
      cell.sending = cell.pending;
      cell.pending = 0;
    }
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
      ({ sums, servers }) => {
        batch.forEach((cell, i) => {
          cell.sum = sums[i] ?? cell.sum + cell.sending;
          cell.sending = 0;
        });
        this.servers = Math.max(1, servers);
      },
      (error: unknown) => {
        // not counted: sent again with the next exchange
        for (const cell of batch) {
          cell.pending += cell.sending;
          cell.sending = 0;
        }
        throw error;
      },
    );
    this.inFlight = sent.finally(() => {
      this.inFlight = undefined;
      this.again = undefined;
    });
    return this.inFlight;
  }
}

export type { Cell };
