// The rate limits as every request meets them (SPEC §14), after CORS and the
// security headers (a refusal carries both) and before any route is matched.
// The limits are counted for the whole deployment (src/operating/rate-limit.ts).
//
// A request presenting a credential seen lately to authenticate spends that
// credential's allowance only (keyed by the token's SHA-256, so a refusal needs
// no database); one presenting a credential not seen yet spends its client
// address's allowance too, and gets that point back once the credential turns
// out good, so a valid credential never spends its address's allowance; any
// other /v1 or /graphql request spends its address's. So inventing tokens is
// throttled per address, and an anonymous flood from a shared address does not
// refuse the signed-in clients behind it. While an address is refused, one
// request a second with a credential not seen yet is let through to have its
// credential checked: a new valid credential behind a busy address is served
// (at worst after one Retry-After), and the database checks at most one
// invented token a second for that address.
//
// Sign-in codes need nothing here: the database bounds the codes a client asks
// for and the wrong codes of each attempt (src/signin/login-code.ts).
import type { NextFunction, Request, Response } from 'express';
import { credentialKey, readCredential } from '../auth/credentials.ts';
import { RecentCredentials } from '../auth/recent-credentials.ts';
import { ApiError } from '../core/errors.ts';
import { requestRecord } from '../core/request-record.ts';
import type { Metrics } from './metrics.ts';
import { policyField, type RateLimitDecision, type RateLimits, rateLimitHeaders, remainingField } from './rate-limit.ts';

export interface RequestLimitOptions {
  rateLimits: RateLimits;
  metrics?: Metrics;
  /** the credentials this server has seen authenticate, shared with GraphQL (default: the limits' own) */
  recentCredentials?: RecentCredentials;
}

/** the route template of what the limits refused: before any route was matched */
const RATE_LIMITED = '(rate limited)';

/** The path as the router matches it (an absolute-form request target included) */
const limited = (path: string) => path.startsWith('/v1/') || path.startsWith('/graphql');

/** What a request's allowance left to settle once it is answered */
interface Spent {
  /** the key of the credential presented, if well-formed */
  key?: string;
  /** the address's point an unseen credential spent: given back if the credential is good */
  addressSpent?: RateLimitDecision;
  /** the refused address whose one unseen credential this request checks */
  probing?: string;
}

export function limitRequests(options: RequestLimitOptions) {
  const { rateLimits, metrics } = options;
  /** the keys of credentials this server has lately seen authenticate (src/auth/credentials.ts: credentialKey) */
  const authenticated = options.recentCredentials ?? new RecentCredentials();
  /** refused addresses that had an unseen credential checked lately */
  const probed = new Probes();

  const tooMany = (decision: RateLimitDecision, detail: string) => new ApiError(429, 'TooManyRequests', detail, rateLimitHeaders(decision));
  const refusedAddress = () =>
    tooMany(
      { allowed: false, policy: rateLimits.address.name, quota: rateLimits.address.quota, remaining: 0, reset: 1 },
      'Too many requests from this address without a valid credential; try again later',
    );

  /** Spends the request's allowance and says whether it is allowed. Throws the 429 of an address already refused. */
  function spendAllowance(req: Request, spent: Spent, address: string): Promise<RateLimitDecision> {
    const credential = readCredential(req);
    const key = credential && credential !== 'malformed' ? credentialKey(credential) : undefined;
    if (key === undefined) return rateLimits.address.consume(address);
    spent.key = key;
    // a credential seen to authenticate: its own allowance only, whatever its address's neighbours do
    if (authenticated.has(key)) return rateLimits.credential.consume(key);
    if (rateLimits.address.refused(address)) {
      if (!probed.take(address)) throw refusedAddress();
      spent.probing = address;
      return rateLimits.credential.consume(key);
    }
    // one not seen yet spends its address's allowance too, before the database is asked (inventing tokens gets
    // no more than the address's rate); the fields name whichever of the two has less left
    return rateLimits.address.consume(address).then((byAddress) => {
      if (!byAddress.allowed) return byAddress;
      spent.addressSpent = byAddress;
      return rateLimits.credential
        .consume(key)
        .then((byCredential) => (byCredential.allowed && byAddress.remaining < byCredential.remaining ? byAddress : byCredential));
    });
  }

  /**
   * After the answer: a credential that authenticated is remembered (its next
   * requests spend only its own allowance) and gets its address's point back;
   * one that did not is forgotten, and its address pays.
   */
  function settleAllowance(spent: Spent, address: string, status: number, subject: Readonly<Record<string, string>> | undefined) {
    if (spent.key === undefined) return;
    if (subject?.['rowgate.credential_id']) {
      // a busy credential is never the one dropped (src/auth/recent-credentials.ts)
      authenticated.add(spent.key);
      if (spent.addressSpent) rateLimits.address.giveBack(spent.addressSpent);
    } else if (status === 401) {
      authenticated.delete(spent.key);
      if (spent.probing !== undefined) void rateLimits.address.consume(address);
    }
  }

  return (req: Request, res: Response, next: NextFunction) => {
    if (!limited(req.path)) return next();
    const record = requestRecord(req);
    const address = record.clientAddress ?? req.socket.remoteAddress ?? 'unknown';
    const refused = (error: unknown) => {
      record.route = RATE_LIMITED;
      next(error);
    };
    const spent: Spent = {};
    res.on('close', () => settleAllowance(spent, address, res.statusCode, record.subject));
    let decided: Promise<RateLimitDecision>;
    try {
      decided = spendAllowance(req, spent, address);
    } catch (refusal) {
      metrics?.rateLimitRefusals.inc({ policy: rateLimits.address.name });
      return refused(refusal);
    }
    decided.then((decision) => {
      try {
        if (!decision.allowed) {
          metrics?.rateLimitRefusals.inc({ policy: decision.policy });
          throw tooMany(decision, `More than ${decision.quota} requests per second; try again in ${decision.reset} s`);
        }
        res.setHeader('RateLimit-Policy', policyField(decision));
        res.setHeader('RateLimit', remainingField(decision));
      } catch (error) {
        return refused(error);
      }
      next();
    }, refused);
  };
}

/** How long after one check of an unseen credential from a refused address the next may be made */
const PROBE_EVERY_MS = 1_000;

/**
 * Refused addresses whose unseen credential was checked lately. Swept of the
 * expired whenever the map has doubled since the last sweep, so memory follows
 * the addresses checked in the last second (an attacker has as many IPv6
 * addresses as it likes, but each is a /64 here).
 */
class Probes {
  private readonly until = new Map<string, number>();
  private sweepAt = 1_000;

  /** Whether the address may have a credential checked now (and if so, none other for a second) */
  take(address: string, now = Date.now()): boolean {
    const until = this.until.get(address);
    if (until !== undefined && until > now) return false;
    this.until.set(address, now + PROBE_EVERY_MS);
    if (this.until.size >= this.sweepAt) {
      for (const [a, t] of this.until) if (t <= now) this.until.delete(a);
      this.sweepAt = Math.max(1_000, this.until.size * 2);
    }
    return true;
  }
}
