// Rate limits (SPEC §14), counted for the whole deployment
// (src/operating/deployment-counts.ts): per credential, and per client address
// for requests that carry no valid credential. Each is a window of one second
// holding `quota` requests, and a burst allowance of `quota` more per ten
// seconds, spent only once the second's window is: a client may send twice its
// rate in one second, and its rate (plus a tenth) for ever.
import type { Cell, DeploymentCounts } from './deployment-counts.ts';

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
  constructor(name: string, quota: number, counts: DeploymentCounts) {
    this.name = name;
    this.quota = quota;
    this.counts = counts;
  }

  /**
   * Spends a point of the key's allowance. Decided at once from what this
   * server knows, unless the key has spent its share unexchanged: then once
   * the next exchange has answered.
   */
  consume(key: string): Promise<RateLimitDecision> {
    const decided = this.decide(key);
    return decided instanceof Promise ? decided : Promise.resolve(decided);
  }

  private decide(key: string): RateLimitDecision | Promise<RateLimitDecision> {
    const now = Date.now();
    const share = this.counts.share(this.quota);
    const second = this.counts.cell(this.name, key, 1, now);
    const resetSecond = Math.max(1, Math.ceil((second.endsAt - now) / 1000));
    if (second.total < this.quota) {
      if (second.unexchanged >= share) return this.afterExchange(key);
      second.pending++;
      return this.decision(true, this.quota - second.total, resetSecond, [second]);
    }
    const burst = this.counts.cell(`${this.name}:burst`, key, BURST_WINDOW_SECONDS, now);
    if (burst.total < this.quota) {
      if (burst.unexchanged >= share || second.unexchanged >= share) return this.afterExchange(key);
      second.pending++;
      burst.pending++;
      return this.decision(true, 0, resetSecond, [second, burst]);
    }
    return this.decision(false, 0, Math.min(resetSecond, Math.max(1, Math.ceil((burst.endsAt - now) / 1000))));
  }

  /**
   * A key past its share: decided once the deployment's count is known again.
   * An exchange that does not answer in time refuses the request (Retry-After
   * 1) rather than letting the key past the bound: only a key busy enough to
   * spend its share between two exchanges is refused so.
   */
  private afterExchange(key: string): Promise<RateLimitDecision> {
    return this.counts.exchanged().then((answered) => (answered ? this.decide(key) : this.decision(false, 0, 1)));
  }

  /** Whether the key is refused now, as far as this server knows (no point spent) */
  refused(key: string): boolean {
    const now = Date.now();
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
    this.credential = new Limiter('default', options.perCredential, options.counts);
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
