// Rate limits (SPEC §14), counted for the whole deployment
// (src/operating/deployment-counts.ts): per credential, and per client address
// for requests that carry no valid credential. Each is a window of one second
// holding `quota` requests, and a burst allowance of `quota` more per ten
// seconds, spent only once the second's window is: a client may send twice its
// rate in one second, and its rate (plus a tenth) for ever.
import type { Cell } from './count-cell.ts';
import type { DeploymentCounts } from './deployment-counts.ts';

/** What a request is told: the IETF RateLimit fields, and whether it may go on. */
export interface RateLimitDecision {
  allowed: boolean;
  /** the policy's name and quota */
  policy: string;
  quota: number;
  remaining: number;
  /** seconds until the window resets */
  reset: number;
  /** the policy's window in seconds (default 1) */
  window?: number;
  /** the counts it was charged to, for giving the point back (src/operating/request-limits.ts) */
  spent?: readonly Cell[];
}

/** How long the burst allowance takes to come back */
const BURST_WINDOW_SECONDS = 10;

export class Limiter {
  readonly name: string;
  readonly quota: number;
  private readonly counts: DeploymentCounts;
  /** whether a key's first answer waits for the deployment's count (credentials), or may report this server's (client addresses) */
  private readonly firstContact: boolean;
  constructor(name: string, quota: number, counts: DeploymentCounts, options: { firstContact?: boolean } = {}) {
    this.name = name;
    this.quota = quota;
    this.counts = counts;
    this.firstContact = options.firstContact ?? false;
  }

  /**
   * Spends a point of the key's allowance. Decided at once from what this
   * server knows, unless the key has spent its share unexchanged, or is new
   * to this server and reports the deployment's count: then once the next
   * exchange has answered. While the store does not answer, decided from
   * this server's local allowance.
   */
  consume(key: string): Promise<RateLimitDecision> {
    const decided = this.decide(key, false);
    return decided instanceof Promise ? decided : Promise.resolve(decided);
  }

  private decide(key: string, waited: boolean): RateLimitDecision | Promise<RateLimitDecision> {
    const counts = this.counts;
    if (counts.stalled) return this.decideAlone(key);
    const now = counts.now();
    const share = counts.share(this.quota);
    const second = counts.cell(this.name, key, 1, now);
    if (this.firstContact && !second.answered && !waited) return this.afterExchange(key);
    const resetSecond = Math.max(1, Math.ceil((second.endsAt - now) / 1000));
    if (second.total < this.quota) {
      if (second.unexchanged >= share) return this.afterExchange(key);
      second.spend();
      return this.decision(true, this.quota - second.total, resetSecond, [second]);
    }
    const burst = counts.cell(`${this.name}:burst`, key, BURST_WINDOW_SECONDS, now);
    if (burst.total < this.quota) {
      if (burst.unexchanged >= share || second.unexchanged >= share) return this.afterExchange(key);
      second.spend();
      burst.spend();
      return this.decision(true, 0, resetSecond, [second, burst]);
    }
    return this.decision(false, 0, Math.min(resetSecond, Math.max(1, Math.ceil((burst.endsAt - now) / 1000))));
  }

  /**
   * A key past its share, or new: decided once the deployment's count is
   * known again. An exchange that does not answer within the store's stall
   * time leaves the decision to this server's local allowance.
   */
  private afterExchange(key: string): Promise<RateLimitDecision> {
    return this.counts.exchanged().then((answered) => (answered ? this.decide(key, true) : this.decideAlone(key)));
  }

  /**
   * The store is stalled: this server lets a key through q/N of each window
   * (N: the servers it last knew), within what it last knew of the
   * deployment's count, so the fleet together stays near the allowance.
   */
  private decideAlone(key: string): RateLimitDecision {
    const counts = this.counts;
    const now = counts.now();
    const local = counts.localShare(this.quota);
    const second = counts.cell(this.name, key, 1, now);
    const resetSecond = Math.max(1, Math.ceil((second.endsAt - now) / 1000));
    if (second.total < this.quota && second.own < local) {
      second.spend();
      return this.decision(true, Math.min(this.quota - second.total, local - second.own), resetSecond, [second]);
    }
    const burst = counts.cell(`${this.name}:burst`, key, BURST_WINDOW_SECONDS, now);
    if (burst.total < this.quota && burst.own < local) {
      second.spend();
      burst.spend();
      return this.decision(true, 0, resetSecond, [second, burst]);
    }
    return this.decision(false, 0, Math.min(resetSecond, Math.max(1, Math.ceil((burst.endsAt - now) / 1000))));
  }

  /** Whether the key is refused now, as far as this server knows (no point spent) */
  refused(key: string): boolean {
    const now = this.counts.now();
    return (
      this.counts.cell(this.name, key, 1, now).total >= this.quota &&
      this.counts.cell(`${this.name}:burst`, key, BURST_WINDOW_SECONDS, now).total >= this.quota
    );
  }

  /** A point back: the request turned out not to be this key's to pay */
  giveBack(decision: RateLimitDecision): void {
    for (const cell of decision.spent ?? []) this.counts.giveBack(cell);
  }

  private decision(allowed: boolean, remaining: number, reset: number, spent?: Cell[]): RateLimitDecision {
    return { allowed, policy: this.name, quota: this.quota, remaining: Math.max(0, remaining), reset, spent };
  }
}

export interface RateLimitOptions {
  /** requests per second per credential (ROWGATE_RATE_LIMIT) */
  perCredential: number;
  /** requests per second per client address without a valid credential (ROWGATE_ANONYMOUS_RATE_LIMIT) */
  perAddress: number;
  /** where the counts are shared (DeploymentCounts.inDatabase); without, this process's own */
  counts: DeploymentCounts;
}

export class RateLimits {
  readonly credential: Limiter;
  readonly address: Limiter;
  readonly counts: DeploymentCounts;

  constructor(options: RateLimitOptions) {
    this.counts = options.counts;
    this.credential = new Limiter('default', options.perCredential, options.counts, { firstContact: true });
    this.address = new Limiter('anonymous', options.perAddress, options.counts);
  }
}

/** The IETF fields (draft-ietf-httpapi-ratelimit-headers, structured fields), and Retry-After on a refusal. */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  const headers: Record<string, string> = { 'RateLimit-Policy': policyField(decision), RateLimit: remainingField(decision) };
  if (!decision.allowed) headers['Retry-After'] = String(decision.reset);
  return headers;
}

/** `RateLimit-Policy`: the policy's name, quota and window */
export const policyField = (decision: RateLimitDecision): string => `"${decision.policy}";q=${decision.quota};w=${decision.window ?? 1}`;

/** `RateLimit`: what is left of the policy's window, and when it resets */
export const remainingField = (decision: RateLimitDecision): string => `"${decision.policy}";r=${decision.remaining};t=${decision.reset}`;
