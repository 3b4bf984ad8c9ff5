// Rate limits counted once for all of a cluster's workers (src/http/cluster.ts),
// so that a server's limits are the same with one process or several.
//
// Asking the primary on every request (rate-limiter-flexible's
// RateLimiterCluster) cost the cached users/me 38 % of its rate with two
// workers, 22 µs of the primary's CPU a request (docs/decisions.md). Instead
// a worker decides alone, on its own counts, as a single server does, and every
// SYNC_MS tells the primary what it let through. The primary adds every
// worker's to one count per key (the same limiters, in its memory), answers
// with the keys of the report that are refused or past half their window, and
// tells every worker of the keys its count refuses: a key past its allowance
// in sum is refused by every worker until the primary's count lets it through
// again. A worker lets no more than a tenth of a key's allowance through before
// the primary has counted it: past that, the key's requests wait for the
// primary's answer (a round trip, a millisecond or so) and are decided on it.
// So a client spread over N workers gets beyond its allowance at most N tenths
// of it, however fast it sends; a client within its rate waits a round trip at
// most, and only when it sends more than a tenth of its allowance at once. A
// primary that does not answer a report in time leaves the worker deciding
// alone, reporting nothing, until it answers again.

/** How often a worker tells the primary what it let through */
export const SYNC_MS = 50;
/** The most keys one report carries (the rest wait for the next): a flood of new keys costs the primary in slices */
export const MAX_REPORT = 2_000;

/** What a worker let through since its last sync: a policy, a key, and points */
export type Spent = [policy: string, key: string, points: number];
/** What the primary's count says of a key: what is left, and until when it is refused (ms since the epoch; 0: it is not) */
export type Standing = [policy: string, key: string, remaining: number, refusedUntil: number];

/** The primary's count of one policy: spends points of a key, and says where the key stands */
export type Count = (key: string, points: number) => Promise<{ remaining: number; refusedUntil: number; nearly: boolean }>;

interface Known {
  remaining: number;
  /** refused until (ms since the epoch); 0 when not refused */
  until: number;
  /** when the primary said so */
  at: number;
}

/** How long what the primary said of a key that is not refused is worth knowing (the limits' windows are 1 s) */
const FRESH_MS = 1_000;

/** A worker's side: what it spent since its last sync, and what the primary last said */
export class SharedCounts {
  private spentSince = new Map<string, Spent>();
  private readonly known = new Map<string, Known>();
  private syncing = false;
  /** a sync is due as soon as the one in flight is answered, or on the next turn of the event loop */
  private due = false;
  /** what the sync in flight reported, by key: spent, but not yet counted by the primary */
  private reported = new Map<string, number>();
  /** the requests waiting for the primary's answer */
  private waiting: (() => void)[] = [];
  private prunedAt = Date.now();
  private readonly timer: NodeJS.Timeout;
  private readonly exchange: (spent: Spent[]) => Promise<Standing[] | undefined>;

  /** `exchange` sends what was spent to the primary and resolves with its standings (undefined when it did not answer) */
  constructor(exchange: (spent: Spent[]) => Promise<Standing[] | undefined>) {
    this.exchange = exchange;
    this.timer = setInterval(() => void this.sync(), SYNC_MS);
    this.timer.unref();
  }

  /** the primary did not answer the last report in time: decide alone until it answers one */
  private unanswered = false;

  /** Points of the key this worker let through that the primary has not counted yet (0 while it does not answer) */
  ahead(policy: string, key: string): number {
    if (this.unanswered) return 0;
    const id = `${policy}\n${key}`;
    return (this.spentSince.get(id)?.[2] ?? 0) + (this.reported.get(id) ?? 0);
  }

  /** Resolves once the primary has answered a report of what was spent until now (or did not answer in time) */
  counted(): Promise<void> {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      if (!this.syncing && !this.due) {
        this.due = true;
        setImmediate(() => void this.sync());
      }
    });
  }

  /** Points of a key's allowance this worker let through; once `syncAt` of them are unsynced, the primary is told at once */
  spent(policy: string, key: string, points: number, syncAt = Number.POSITIVE_INFINITY): void {
    const id = `${policy}\n${key}`;
    let entry = this.spentSince.get(id);
    if (entry) entry[2] += points;
    else this.spentSince.set(id, (entry = [policy, key, points]));
    if (points > 0 && entry[2] >= syncAt && !this.due) {
      this.due = true;
      if (!this.syncing) setImmediate(() => void this.sync());
    }
  }

  /** Until when the cluster refuses the key (ms since the epoch), or 0 */
  refusedUntil(policy: string, key: string, now = Date.now()): number {
    const known = this.known.get(`${policy}\n${key}`);
    return known && known.until > now ? known.until : 0;
  }

  /** What the cluster leaves of the key's allowance, less what this worker spent since; undefined when the primary said nothing lately */
  remaining(policy: string, key: string, now = Date.now()): number | undefined {
    const id = `${policy}\n${key}`;
    const known = this.known.get(id);
    if (!known || now - known.at > FRESH_MS) return undefined;
    return Math.max(0, known.remaining - (this.spentSince.get(id)?.[2] ?? 0));
  }

  /** Tells the primary what was spent, and learns where those keys stand; one sync at a time */
  async sync(): Promise<void> {
    if (this.syncing) return;
    if (this.spentSince.size === 0 && !this.unanswered) {
      this.due = false;
      for (const resolve of this.waiting.splice(0)) resolve();
      return;
    }
    const spent: Spent[] = [];
    const waiting = this.waiting.splice(0);
    // the primary silent: this worker decides alone, as one server would, and asks only whether it is back.
    // What it spends meanwhile is not reported: counted late and at once, it would refuse clients within
    // their rate once the primary answers (a hostile review saw 13 such refusals after a 6 s stall)
    if (this.unanswered) this.spentSince.clear();
    for (const [id, entry] of this.spentSince) {
      if (spent.length === MAX_REPORT) break;
      if (entry[2] !== 0) spent.push(entry);
      this.spentSince.delete(id);
      this.reported.set(id, entry[2]);
      // the primary answers for a key only when it is refused or nearly: no answer is news too
      const known = this.known.get(id);
      if (known && known.until <= Date.now()) this.known.delete(id);
    }
    this.syncing = true;
    this.due = this.spentSince.size > 0;
    try {
      const standings = await this.exchange(spent);
      this.unanswered = standings === undefined;
      this.learn(standings ?? []);
    } finally {
      this.reported.clear();
      this.syncing = false;
      // silent: nobody waits for it any more (ahead() is 0 until it answers)
      for (const resolve of this.unanswered ? [...waiting, ...this.waiting.splice(0)] : waiting) resolve();
      if (this.due || this.waiting.length) void this.sync();
    }
  }

  /** What the primary says of keys: in answer to a sync, or of keys a worker's spending refused */
  learn(standings: Standing[], now = Date.now()): void {
    // what is no longer refused nor fresh is forgotten (once a while: memory follows the keys in use)
    if (now - this.prunedAt > FRESH_MS) {
      this.prunedAt = now;
      for (const [id, known] of this.known) if (known.until <= now && now - known.at > FRESH_MS) this.known.delete(id);
    }
    for (const [policy, key, remaining, until] of standings) {
      this.known.set(`${policy}\n${key}`, { remaining, until: until > now ? until : 0, at: now });
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * The primary's side: every worker's spending added to one count per policy
 * and key. The answer names the keys refused or past half their window (what a
 * worker's RateLimit field and refusals need); the others have room.
 */
export function countSpending(counts: Record<string, Count>) {
  return async (spent: Spent[]): Promise<Standing[]> => {
    const standings: Standing[] = [];
    for (const entry of (Array.isArray(spent) ? spent : []).slice(0, MAX_REPORT)) {
      const [policy, key, points] = Array.isArray(entry) ? entry : [];
      const count = typeof policy === 'string' ? counts[policy] : undefined;
      // negative points: an attempt given back (a sign-in code that was right)
      if (!count || typeof key !== 'string' || !Number.isInteger(points) || points === 0) continue;
      const { remaining, refusedUntil, nearly } = await count(key, points as number);
      if (refusedUntil > 0 || nearly) standings.push([policy as string, key, remaining, refusedUntil]);
    }
    return standings;
  };
}
