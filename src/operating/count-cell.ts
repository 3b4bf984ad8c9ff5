// One key's count in one window of a rate-limit policy, as a server knows it:
// the deployment's sum at the last exchange, and what this server let through
// since (src/operating/deployment-counts.ts).

export class Cell {
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
