// What every request passes through for operators (SPEC §14): its id, its rate
// limit, and at its end one access log line and the metrics. Two middlewares in
// src/http/app.ts (requestMiddleware): `identify` first of all, `rateLimit`
// after CORS and the security headers, before any route is matched.
//
// Rate limits are counted for the whole deployment (src/operating/rate-limit.ts).
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
import type { BlockList } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { credentialKey, readCredential } from '../auth/credentials.ts';
import { RecentCredentials } from '../auth/recent-credentials.ts';
import { ApiError } from '../core/errors.ts';
import type { RequestState } from '../http/pipeline.ts';
import { accessLog } from './access-log.ts';
import { clientAddress } from './client-address.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import { policyField, type RateLimitDecision, type RateLimits, rateLimitHeaders, remainingField } from './rate-limit.ts';
import { assignRequestId } from './request-id.ts';

export interface OperatingOptions {
  logger?: Logger;
  metrics?: Metrics;
  rateLimits?: RateLimits;
  /** ROWGATE_TRUST_PROXY */
  trustedProxies?: BlockList | null;
  /** the credentials this server has seen authenticate, shared with GraphQL (default: the limits' own) */
  recentCredentials?: RecentCredentials;
}

/** The route template of a request no route matched (metrics' labels stay few) */
const UNMATCHED = '(unmatched)';
/** the route template of what the limits refused: before any route was matched */
const RATE_LIMITED = '(rate limited)';

/** The path as the router matches it (an absolute-form request target included) */
const limited = (path: string) => path.startsWith('/v1/') || path.startsWith('/graphql');

/** What the rate limit left for the end of a request (charge) */
interface Charged {
  /** the key of the credential presented, if well-formed */
  key?: string;
  /** the address's point an unseen credential spent: given back if the credential is good */
  addressSpent?: RateLimitDecision;
  /** the refused address whose one unseen credential this request checks */
  probing?: string;
}

export function operatingMiddleware(options: OperatingOptions) {
  const { logger, metrics, rateLimits } = options;
  const writeAccessLine = logger ? accessLog(logger) : undefined;
  const trusted = options.trustedProxies ?? null;
  /** the keys of credentials this server has lately seen authenticate (src/auth/credentials.ts: credentialKey) */
  const authenticated = options.recentCredentials ?? new RecentCredentials();
  /** refused addresses that had an unseen credential checked lately, and until when no other is (ms) */
  const probed = new Probes();

  const tooMany = (decision: RateLimitDecision, detail: string) => new ApiError(429, 'TooManyRequests', detail, rateLimitHeaders(decision));
  const refusedAddress = (limits: RateLimits) =>
    tooMany(
      { allowed: false, policy: limits.address.name, quota: limits.address.quota, remaining: 0, reset: 1 },
      'Too many requests from this address without a valid credential; try again later',
    );

  /** The allowance a request spends: its decision. Throws the 429 of an address already refused. */
  function decide(req: Request, charged: Charged, limits: RateLimits, address: string): Promise<RateLimitDecision> {
    const credential = readCredential(req);
    const key = credential && credential !== 'malformed' ? credentialKey(credential) : undefined;
    if (key === undefined) return limits.address.consume(address);
    charged.key = key;
    // a credential seen to authenticate: its own allowance only, whatever its address's neighbours do
    if (authenticated.has(key)) return limits.credential.consume(key);
    if (limits.address.refused(address)) {
      if (!probed.take(address)) throw refusedAddress(limits);
      charged.probing = address;
      return limits.credential.consume(key);
    }
    // one not seen yet spends its address's allowance too, before the database is asked (inventing tokens gets
    // no more than the address's rate); the fields name whichever of the two has less left
    return limits.address.consume(address).then((byAddress) => {
      if (!byAddress.allowed) return byAddress;
      charged.addressSpent = byAddress;
      return limits.credential
        .consume(key)
        .then((byCredential) => (byCredential.allowed && byAddress.remaining < byCredential.remaining ? byAddress : byCredential));
    });
  }

  /**
   * After the answer: a credential that authenticated is remembered (its next
   * requests spend only its own allowance) and gets its address's point back;
   * one that did not is forgotten, and its address pays.
   */
  function charge(charged: Charged, address: string | undefined, status: number, settings: Record<string, string> | undefined) {
    if (!rateLimits || charged.key === undefined) return;
    if (settings?.['rowgate.credential_id']) {
      // a busy credential is never the one dropped (src/auth/recent-credentials.ts)
      authenticated.add(charged.key);
      if (charged.addressSpent) rateLimits.address.giveBack(charged.addressSpent);
    } else if (status === 401) {
      authenticated.delete(charged.key);
      if (charged.probing !== undefined && address !== undefined) void rateLimits.address.consume(address);
    }
  }

  /** First of all: the request's id and client, and at its end its access line and metrics (CORS preflights included). */
  function identify(req: Request, res: Response, next: NextFunction) {
    const started = performance.now();
    const id = assignRequestId(req, res);
    res.locals.clientAddress = clientAddress(req, trusted);
    // 'close' comes once (answered or abandoned): `on`, without once's wrapper
    res.on('close', () => {
      const status = res.statusCode;
      const seconds = (performance.now() - started) / 1000;
      const state = res.locals.pipeline as RequestState | undefined;
      const route = state?.route.path ?? (res.locals.route as string | undefined) ?? UNMATCHED;
      metrics?.observe(req.method, route, status, seconds);
      const settings = state?.subject?.settings ?? (res.locals.subjectSettings as Record<string, string> | undefined);
      const charged = res.locals.rateCharged as Charged | undefined;
      if (charged) charge(charged, res.locals.clientAddress as string, status, settings);
      if (!writeAccessLine) return;
      writeAccessLine({
        request_id: id,
        method: req.method,
        route,
        status,
        duration_ms: Math.round(seconds * 10_000) / 10,
        subject_kind: settings?.['rowgate.subject_kind'] ?? null,
        credential_id: settings?.['rowgate.credential_id'] ?? null,
        aborted: !res.writableFinished,
      });
    });
    next();
  }

  /** After CORS and the security headers (a refusal carries both): the rate limit. */
  function rateLimit(req: Request, res: Response, next: NextFunction) {
    if (!rateLimits || !limited(req.path)) return next();
    const refused = (error: unknown) => {
      res.locals.route = RATE_LIMITED;
      next(error);
    };
    const charged: Charged = {};
    res.locals.rateCharged = charged;
    let decided: Promise<RateLimitDecision>;
    try {
      decided = decide(req, charged, rateLimits, res.locals.clientAddress as string);
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
  }

  return { identify, rateLimit };
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
