// Client addresses refused until a time (src/operating/operate.ts): past their
// allowance, or past their wrong sign-in codes. An address that never comes
// back must not stay in memory for ever (an attacker has as many IPv6
// addresses as it likes), so the expired ones are swept whenever the map has
// doubled since the last sweep: memory follows the addresses refused now.
export class Refusals {
  private readonly until = new Map<string, number>();
  private sweepAt: number;
  private readonly minimum: number;

  constructor(minimum = 1_000) {
    this.minimum = minimum;
    this.sweepAt = minimum;
  }

  /** Until when the address is refused (ms since the epoch), or 0. */
  get(address: string, now = Date.now()): number {
    const until = this.until.get(address);
    if (until === undefined) return 0;
    if (until > now) return until;
    this.until.delete(address);
    return 0;
  }

  set(address: string, until: number, now = Date.now()) {
    this.until.set(address, until);
    if (this.until.size < this.sweepAt) return;
    for (const [a, t] of this.until) if (t <= now) this.until.delete(a);
    this.sweepAt = Math.max(this.minimum, this.until.size * 2);
  }

  get size() {
    return this.until.size;
  }
}
