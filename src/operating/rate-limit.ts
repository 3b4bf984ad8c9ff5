// Rate limits (SPEC §14), in this process's memory (docs/decisions.md: why not
// in PostgreSQL, and what N instances mean): per credential, and per client
// address for requests that carry no valid credential. Each is a window of one
// second holding `rate` requests, and a burst allowance of `rate` more per ten
// seconds (rate-limiter-flexible's BurstyRateLimiter): a client may send twice
// its rate in one second, and its rate (plus a tenth) for ever.
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

export interface RateLimitOptions {
  /** requests per second per credential (ROWGATE_RATE_LIMIT) */
  perCredential: number;
  /** requests per second per client address without a valid credential (ROWGATE_ANONYMOUS_RATE_LIMIT) */
  perAddress: number;
  /** wrong sign-in codes per client address per 15 minutes (10) */
  wrongCodesPerAddress?: number;
}

/** The window of the wrong sign-in codes' allowance */
export const WRONG_CODES_WINDOW_SECONDS = 15 * 60;

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
}

/** How long the burst allowance takes to come back */
const BURST_WINDOW_SECONDS = 10;

class Limiter {
  readonly quota: number;
  readonly name: string;
  private readonly limiter: BurstyRateLimiter;

  constructor(name: string, quota: number) {
    this.name = name;
    this.quota = quota;
    this.limiter = new BurstyRateLimiter(
      new RateLimiterMemory({ keyPrefix: `${name}:w`, points: quota, duration: 1 }),
      new RateLimiterMemory({ keyPrefix: `${name}:b`, points: quota, duration: BURST_WINDOW_SECONDS }),
    );
  }

  private decision(allowed: boolean, res: RateLimiterRes): RateLimitDecision {
    return {
      allowed,
      policy: this.name,
      quota: this.quota,
      remaining: Math.max(0, res.remainingPoints),
      reset: Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    };
  }

  /** Spends `points` of the key's allowance: the decision (one promise, no await: this is on every request's path). */
  consume(key: string, points = 1): Promise<RateLimitDecision> {
    // a promise whatever happens: its callers chain on it (src/operating/operate.ts)
    let spending: Promise<RateLimiterRes>;
    try {
      spending = this.limiter.consume(key, points);
    } catch (error) {
      return Promise.reject(error);
    }
    return spending.then(
      (spent) => this.decision(true, spent),
      (refusal: unknown) => {
        if (refusal instanceof RateLimiterRes) return this.decision(false, refusal);
        throw refusal;
      },
    );
  }
}

export class RateLimits {
  readonly credential: Limiter;
  readonly address: Limiter;
  /** wrong sign-in codes per address: a fixed window, no burst */
  readonly wrongCodes: RateLimiterMemory;

  constructor(options: RateLimitOptions) {
    this.credential = new Limiter('default', options.perCredential);
    this.address = new Limiter('anonymous', options.perAddress);
    this.wrongCodes = new RateLimiterMemory({
      keyPrefix: 'sign_in_codes',
      points: options.wrongCodesPerAddress ?? 10,
      duration: WRONG_CODES_WINDOW_SECONDS,
    });
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
