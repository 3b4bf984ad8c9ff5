// The credentials (their keys: src/auth/credentials.ts) this server has lately
// seen authenticate somebody, most recent last, a bounded number of them. GraphQL
// lets only theirs wait for a query's first transaction (a credential seen for
// the first time is asked before its document is planned, so a client inventing
// tokens gets each one's 401 before anything of it is planned); the rate limits
// let only theirs go past a refused address (src/operating/operate.ts).
export class RecentCredentials {
  private readonly keys = new Map<string, true>();
  has(key: string): boolean {
    return this.keys.has(key);
  }
  add(key: string): void {
    this.keys.delete(key);
    this.keys.set(key, true);
    if (this.keys.size > RECENT_CREDENTIALS_KEPT) this.keys.delete(this.keys.keys().next().value!);
  }
  delete(key: string): void {
    this.keys.delete(key);
  }
}

/** a key is a SHA-256 in base64 (44 characters) */
const RECENT_CREDENTIALS_KEPT = 10_000;
