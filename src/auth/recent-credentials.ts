// The credentials (their keys: src/auth/credentials.ts) this server has lately
// seen authenticate somebody, a bounded number of them. GraphQL lets only
// theirs wait for a query's first transaction (a credential seen for the first
// time is asked before its document is planned, so a client inventing tokens
// gets each one's 401 before anything of it is planned); the rate limits let
// only theirs go past a refused address (src/operating/request-limits.ts).
//
// Two generations instead of an exact LRU order: every authenticated request
// adds its key, and moving a key to the end of one Map costs a delete and a set
// each time, where a key already in the current generation costs one lookup.
// A key seen at least once while `kept` others arrive is never dropped (as with
// an exact order); the older generation goes whole once the current one holds
// `kept`, so at most twice that many are held.
export class RecentCredentials {
  private current = new Map<string, true>();
  private previous = new Map<string, true>();
  private readonly generationSize: number;

  constructor(kept = RECENT_CREDENTIALS_KEPT) {
    this.generationSize = Math.max(1, kept);
  }

  has(key: string): boolean {
    return this.current.has(key) || this.previous.has(key);
  }

  /** A credential that authenticated */
  add(key: string): void {
    if (this.current.has(key)) return;
    this.previous.delete(key);
    this.current.set(key, true);
    if (this.current.size >= this.generationSize) {
      this.previous = this.current;
      this.current = new Map();
    }
  }

  /** A credential that did not (a 401) */
  delete(key: string): void {
    if (!this.previous.delete(key)) this.current.delete(key);
  }
}

/** a key is a SHA-256 in base64 (44 characters) */
const RECENT_CREDENTIALS_KEPT = 10_000;
