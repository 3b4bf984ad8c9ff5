// Rate limits (SPEC §14), in this process's memory (docs/decisions.md: why not
// in PostgreSQL, and what N instances mean): per credential, and per client
// address for requests that carry no valid credential. Each is a window of one
// second holding `rate` requests, and a burst allowance of `rate` more per ten
// seconds (two of rate-limiter-flexible's in-memory limiters, composed as its
// BurstyRateLimiter composes them): a client may send twice its rate in one
// second, and its rate (plus a tenth) for ever.
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Count, SharedCounts } from './shared-counts.ts';

export interface RateLimitOptions {
  /** requests per second per credential (ROWGATE_RATE_LIMIT) */
  perCredential: number;
  /** requests per second per client address without a valid credential (ROWGATE_ANONYMOUS_RATE_LIMIT) */
  perAddress: number;
  /** wrong sign-in codes per client address per 15 minutes (10) */
  wrongCodesPerAddress?: number;
  /** a cluster's worker: its counts are added up with the other workers' (src/operating/shared-counts.ts) */
  shared?: SharedCounts;
}

/** The wrong sign-in codes' policy, and the window of its allowance */
export const WRONG_CODES_POLICY = 'sign_in_codes';
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

/** How far a cluster's worker may let a key's allowance go before the primary has counted it: a tenth, at least one */
const aheadAllowed = (quota: number) => Math.max(1, Math.floor(quota / 10));

/** How long the burst allowance takes to come back */
const BURST_WINDOW_SECONDS = 10;

class Limiter {
  readonly quota: number;
  readonly name: string;
  private readonly window: RateLimiterMemory;
  private readonly burst: RateLimiterMemory;

  private readonly shared?: SharedCounts;
  /** a worker lets this much of a key's allowance through before the primary has counted it, no more */
  readonly syncAt: number;

  constructor(name: string, quota: number, shared?: SharedCounts) {
    this.name = name;
    this.quota = quota;
    this.shared = shared;
    this.syncAt = aheadAllowed(quota);
    this.window = new RateLimiterMemory({ keyPrefix: `${name}:w`, points: quota, duration: 1 });
    this.burst = new RateLimiterMemory({ keyPrefix: `${name}:b`, points: quota, duration: BURST_WINDOW_SECONDS });
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
    const shared = this.shared;
    // this worker is as far ahead of the primary's count as it may be: decided once the primary has counted
    if (shared && shared.ahead(this.name, key) >= this.syncAt) return shared.counted().then(() => this.consume(key, points));
    if (shared) {
      // the cluster's count: past the allowance in sum, whatever this worker counted
      const until = shared.refusedUntil(this.name, key);
      if (until) {
        const reset = Math.max(1, Math.ceil((until - Date.now()) / 1000));
        return Promise.resolve({ allowed: false, policy: this.name, quota: this.quota, remaining: 0, reset });
      }
    }
    // counted as spent now, before the limiter answers: the requests decided meanwhile see it (ahead)
    shared?.spent(this.name, key, points, this.syncAt);
    // not spent after all (given back before any report: the limiter answers in microtasks)
    const notSpent = () => shared?.spent(this.name, key, -points);
    // BurstyRateLimiter's composition, with its `catch` folded into this `then` (a promise fewer a request):
    // the window first, and only past it the burst allowance. RateLimiterMemory answers through its promise,
    // never by throwing
    return this.window.consume(key, points).then(
      (spent) => this.allowed(key, spent),
      (overWindow: unknown) => {
        if (!(overWindow instanceof RateLimiterRes)) {
          notSpent();
          throw overWindow;
        }
        return this.burst.consume(key, points).then(
          (burst) => this.allowed(key, beyondWindow(overWindow, burst)),
          (overBurst: unknown) => {
            notSpent();
            if (overBurst instanceof RateLimiterRes) return this.decision(false, beyondWindow(overWindow, overBurst));
            throw overBurst;
          },
        );
      },
    );
  }

  /** An allowed request's decision: what is left here, or in the cluster's count when that is less */
  private allowed(key: string, spent: RateLimiterRes): RateLimitDecision {
    const decision = this.decision(true, spent);
    const left = this.shared?.remaining(this.name, key);
    if (left !== undefined && left < decision.remaining) decision.remaining = left;
    return decision;
  }

  /**
   * The primary's count of a cluster's workers (src/operating/shared-counts.ts):
   * points the workers already let through, so spent as that many requests one
   * by one would have been (the window's first, the rest from the burst
   * allowance), where BurstyRateLimiter's consume of them at once would take
   * them all from the burst allowance once the window cannot hold them all. The
   * key is refused while neither has anything left.
   */
  readonly count: Count = async (key, points) => {
    if (points < 1) return { remaining: this.quota, refusedUntil: 0, nearly: false };
    const windowed = await settled(this.window.consume(key, points));
    const beyond = Math.min(points, windowed.consumedPoints - this.quota);
    const burst = beyond > 0 ? await settled(this.burst.consume(key, beyond)) : await this.burst.get(key);
    const refused = windowed.remainingPoints <= 0 && burst !== null && burst.remainingPoints <= 0;
    return {
      remaining: Math.max(0, windowed.remainingPoints),
      // until the window or the burst allowance comes back, whichever first (as BurstyRateLimiter says)
      refusedUntil: refused ? Date.now() + Math.min(windowed.msBeforeNext, burst.msBeforeNext) : 0,
      nearly: windowed.consumedPoints * 2 > this.quota,
    };
  };
}

/**
 * Points given back to a key within its window; none once the window is over
 * (a reward then would start the next window below zero: extra attempts).
 * Resolves with what the key has left.
 */
async function giveBack(limiter: RateLimiterMemory, key: string, points = 1): Promise<number> {
  const now = await limiter.get(key);
  if (!now || now.consumedPoints <= 0) return limiter.points;
  const back = await limiter.reward(key, Math.min(points, now.consumedPoints));
  return back.remainingPoints;
}

/**
 * A request past its window: what BurstyRateLimiter answers then, the window's
 * points (none left) and the sooner of the two resets.
 */
const beyondWindow = (window: RateLimiterRes, burst: RateLimiterRes): RateLimiterRes =>
  new RateLimiterRes(
    window.remainingPoints,
    Math.min(window.msBeforeNext, burst.msBeforeNext),
    window.consumedPoints,
    window.isFirstInDuration,
  );

/** A consume's answer, whether it was allowed or refused */
const settled = (spending: Promise<RateLimiterRes>): Promise<RateLimiterRes> =>
  spending.catch((refusal: unknown) => {
    if (refusal instanceof RateLimiterRes) return refusal;
    throw refusal;
  });

export class RateLimits {
  readonly credential: Limiter;
  readonly address: Limiter;
  /** wrong sign-in codes per address: a fixed window, no burst */
  readonly wrongCodes: RateLimiterMemory;

  /** a cluster's worker: what it spends is added up with the other workers' */
  readonly shared?: SharedCounts;

  /** a worker tries no more sign-in codes than this before the primary has counted them */
  readonly wrongCodesSyncAt: number;

  constructor(options: RateLimitOptions) {
    this.shared = options.shared;
    const wrongCodes = options.wrongCodesPerAddress ?? 10;
    this.wrongCodesSyncAt = aheadAllowed(wrongCodes);
    this.credential = new Limiter('default', options.perCredential, options.shared);
    this.address = new Limiter('anonymous', options.perAddress, options.shared);
    this.wrongCodes = new RateLimiterMemory({
      keyPrefix: WRONG_CODES_POLICY,
      points: wrongCodes,
      duration: WRONG_CODES_WINDOW_SECONDS,
    });
  }

  /**
   * A sign-in code's attempt reserves a point of its address's wrong codes
   * before it is tried, so that guesses sent at once are not all tried; the
   * answer gives it back unless the code was wrong (refundCode). Resolves with
   * until when the address is refused (ms since the epoch), or 0: reserved.
   */
  async reserveCode(address: string): Promise<number> {
    const shared = this.shared;
    // a cluster's worker tries no code the primary has not counted the address's earlier attempts for
    while (shared && shared.ahead(WRONG_CODES_POLICY, address) >= this.wrongCodesSyncAt) await shared.counted();
    const refusedByAll = shared?.refusedUntil(WRONG_CODES_POLICY, address);
    if (refusedByAll) return refusedByAll;
    // counted as spent now: the attempts decided meanwhile see it
    shared?.spent(WRONG_CODES_POLICY, address, 1, this.wrongCodesSyncAt);
    const spent = await settled(this.wrongCodes.consume(address));
    if (spent.consumedPoints > this.wrongCodes.points) {
      // refused attempts are not tried, so they cost nothing
      shared?.spent(WRONG_CODES_POLICY, address, -1);
      await this.wrongCodes.reward(address, 1);
      return Date.now() + spent.msBeforeNext;
    }
    return 0;
  }

  /** The attempt's point back: its code was right, or it was not tried (a malformed request) */
  refundCode(address: string): void {
    this.shared?.spent(WRONG_CODES_POLICY, address, -1);
    void giveBack(this.wrongCodes, address);
  }

  /** The counts a cluster's primary keeps for its workers, by policy */
  counts(): Record<string, Count> {
    // as one worker's: the attempt that reserves the allowance's last point was tried, the next is refused;
    // an attempt given back is negative points
    const wrongCodes: Count = async (key, points) => {
      if (points < 0) {
        // a right code's point back: the address may try again, which every worker is told (cluster.ts)
        const left = await giveBack(this.wrongCodes, key, -points);
        return { remaining: left, refusedUntil: 0, nearly: true };
      }
      return settled(this.wrongCodes.consume(key, points)).then((spent) => ({
        remaining: spent.remainingPoints,
        refusedUntil: spent.remainingPoints > 0 ? 0 : Date.now() + spent.msBeforeNext,
        nearly: spent.consumedPoints * 2 > this.wrongCodes.points,
      }));
    };
    return { [this.credential.name]: this.credential.count, [this.address.name]: this.address.count, [WRONG_CODES_POLICY]: wrongCodes };
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
