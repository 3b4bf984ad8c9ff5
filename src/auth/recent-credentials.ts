// The credentials (their keys: src/auth/credentials.ts) this server has lately
// seen authenticate somebody, a bounded number of them. GraphQL lets only
// theirs wait for a query's first transaction (a credential seen for the first
// time is asked before its document is planned, so a client inventing tokens
// gets each one's 401 before anything of it is planned); the rate limits let
// only theirs go past a refused address (src/operating/operate.ts).
//
// Two generations instead of an exact LRU order: every authenticated request
// adds its key, and moving a key to the end of one Map costs a delete and a set
// each time, where a key already in the current generation costs one lookup.
// A key seen at least once while `kept` others arrive is never dropped (as with
// an exact order); the older generation goes whole once the current one holds
// `kept`, so at most twice that many are held.
//
// A cluster's workers tell each other what they learn (src/http/server.ts): a
// client's next connection may reach another worker, which would otherwise
// take its credential for one never seen, and refuse it while its address is
// refused. A key is told when it enters the current generation (first seen, or
// seen again after a generation went by: a worker that dropped it learns it
// back), and when a 401 ends it (the others stop sparing its address). News
// crosses news: a worker's "seen" told just before another's 401 may arrive
// after it, so a key a 401 ended is not learned back from others for a second
// (its own worker's next authentication would bring it back at once).
export class RecentCredentials {
  private current = new Map<string, true>();
  private previous = new Map<string, true>();
  private readonly generationSize: number;
  /** told of a key entering the current generation */
  onRemembered?: (key: string) => void;
  /** told of a held key a 401 ended */
  onForgotten?: (key: string) => void;
  /** held keys a 401 ended lately, and when (ms): what others said of them before they knew is stale */
  private readonly ended = new Map<string, number>();

  constructor(kept = RECENT_CREDENTIALS_KEPT) {
    this.generationSize = Math.max(1, kept);
  }

  has(key: string): boolean {
    return this.current.has(key) || this.previous.has(key);
  }

  /** A credential that authenticated */
  add(key: string): void {
    if (this.current.has(key)) return;
    if (this.ended.size) this.ended.delete(key);
    this.previous.delete(key);
    this.keep(key);
    this.onRemembered?.(key);
  }

  /** A credential that did not (a 401) */
  delete(key: string): void {
    if (this.forget(key)) this.onForgotten?.(key);
  }

  /** What another worker told: held or dropped as if seen here, and not told again */
  learn(remembered: readonly string[], forgotten: readonly string[] = [], now = Date.now()): void {
    for (const key of remembered) {
      if (this.current.has(key)) continue;
      const ended = this.ended.get(key);
      if (ended !== undefined && now - ended < STALE_NEWS_MS) continue;
      this.previous.delete(key);
      this.keep(key);
    }
    // marked even when not held here: another worker's stale "seen" may still be on its way
    for (const key of forgotten) if (!this.forget(key, now)) this.markEnded(key, now);
  }

  private keep(key: string): void {
    this.current.set(key, true);
    if (this.current.size >= this.generationSize) {
      this.previous = this.current;
      this.current = new Map();
    }
  }

  private forget(key: string, now = Date.now()): boolean {
    const held = this.previous.delete(key) || this.current.delete(key);
    if (held) this.markEnded(key, now);
    return held;
  }

  /** Remembers when a 401 ended the key, oldest first (Map order), at most a generation of them */
  private markEnded(key: string, now: number): void {
    this.ended.delete(key);
    // the oldest go first: the stale ones, then, if a flood keeps the map full, the oldest of the fresh
    for (const [other, at] of this.ended) {
      if (this.ended.size < this.generationSize && now - at < STALE_NEWS_MS) break;
      this.ended.delete(other);
    }
    this.ended.set(key, now);
  }
}

/** How long news from other workers of a key a 401 ended is taken for stale: theirs is told within tens of milliseconds */
const STALE_NEWS_MS = 1_000;

/** a key is a SHA-256 in base64 (44 characters) */
const RECENT_CREDENTIALS_KEPT = 10_000;
