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
// A cluster's workers tell each other the keys they see for the first time
// (src/http/server.ts): a client's next connection may reach another worker,
// which would otherwise take its credential for one never seen, and refuse it
// while its address is refused.
export class RecentCredentials {
  private current = new Map<string, true>();
  private previous = new Map<string, true>();
  private readonly generationSize: number;
  /** told of each key added that was not held (the other workers learn it) */
  onNew?: (key: string) => void;

  constructor(kept = RECENT_CREDENTIALS_KEPT) {
    this.generationSize = Math.max(1, kept);
  }

  has(key: string): boolean {
    return this.current.has(key) || this.previous.has(key);
  }

  add(key: string): void {
    if (this.current.has(key)) return;
    const known = this.previous.delete(key);
    this.keep(key);
    if (!known) this.onNew?.(key);
  }

  /** Keys another worker saw authenticate: held as if seen here, and not told again */
  learn(keys: readonly string[]): void {
    for (const key of keys) if (!this.current.has(key)) this.previous.delete(key), this.keep(key);
  }

  private keep(key: string): void {
    this.current.set(key, true);
    if (this.current.size >= this.generationSize) {
      this.previous = this.current;
      this.current = new Map();
    }
  }

  delete(key: string): void {
    this.current.delete(key);
    this.previous.delete(key);
  }
}

/** a key is a SHA-256 in base64 (44 characters) */
const RECENT_CREDENTIALS_KEPT = 10_000;
