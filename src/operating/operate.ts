// What every request passes through for operators (SPEC §14): its id, its rate
// limit, and at its end one access log line and the metrics. Two middlewares in
// src/http/app.ts (requestMiddleware): `identify` first of all, `rateLimit`
// after CORS and the security headers, before any route is matched.
//
// Rate limits, before anything else is done for the request (no round trip, no
// transaction): a request presenting a credential this server has lately seen
// authenticate spends that credential's allowance only (keyed by the token's
// SHA-256, so a refusal needs no database: one token is one credential); one
// presenting a credential it has not seen spends its client address's allowance
// too, and is refused while the address is; any other /v1 or /graphql request
// spends its address's. So guessing tokens is throttled per address, and an
// anonymous flood from a shared address does not refuse the signed-in clients
// behind it. A wrong sign-in code costs the guesser's address a stricter
// allowance (10 per 15 minutes) and nothing else: the codes mailed to the
// address's owner keep working (migration 000007).
import type { BlockList } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { credentialKey, readCredential } from '../auth/credentials.ts';
import { RecentCredentials } from '../auth/recent-credentials.ts';
import { ApiError } from '../http/errors.ts';
import type { RequestState } from '../http/pipeline.ts';
import { accessLog } from './access-log.ts';
import { clientAddress } from './client-address.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import {
  policyField,
  type RateLimitDecision,
  type RateLimits,
  rateLimitHeaders,
  remainingField,
  WRONG_CODES_POLICY,
  WRONG_CODES_WINDOW_SECONDS,
} from './rate-limit.ts';
import { Refusals } from './refusals.ts';
import { whenCodeChecked } from './code-attempts.ts';
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
/** Where a wrong sign-in code is answered (src/signin/login-code.ts) */
const SIGN_IN_CODE_PATH = '/v1/login-code/authenticate';

/** The path as the router matches it (an absolute-form request target included) */
const limited = (path: string) => path.startsWith('/v1/') || path.startsWith('/graphql');
/** The router takes a path with or without its trailing slash as the same route */
const isSignInCode = (path: string) => path === SIGN_IN_CODE_PATH || path === `${SIGN_IN_CODE_PATH}/`;

export function operatingMiddleware(options: OperatingOptions) {
  const { logger, metrics, rateLimits } = options;
  const writeAccessLine = logger ? accessLog(logger) : undefined;
  const trusted = options.trustedProxies ?? null;
  /** addresses refused until a time (ms): past their allowance */
  const addressRefused = new Refusals();
  /** the keys of credentials this server has lately seen authenticate (src/auth/credentials.ts: credentialKey) */
  const authenticated = options.recentCredentials ?? new RecentCredentials();

  const tooMany = (decision: RateLimitDecision, detail: string) => new ApiError(429, 'TooManyRequests', detail, rateLimitHeaders(decision));
  /** the route template of what the limits refused: before any route was matched */
  const RATE_LIMITED = '(rate limited)';

  /**
   * The allowance a request spends: its decision, a promise (and no more of
   * them than that: this is every request's path). Throws the 429 of an address
   * already refused.
   */
  function decide(req: Request, res: Response, rateLimits: RateLimits, address: string): Promise<RateLimitDecision> {
    const credential = readCredential(req);
    const key = credential && credential !== 'malformed' ? credentialKey(credential) : undefined;
    if (key === undefined) return spendAddress(rateLimits, address);
    res.locals.credentialKey = key;
    // a credential this server has seen authenticate: its own allowance only, whatever its address's neighbours do
    if (authenticated.has(key)) return rateLimits.credential.consume(key);
    // one it has not: it spends its address's allowance too, before the database is asked (inventing tokens
    // gets no more than the address's rate, however many are in flight)
    const until = addressRefused.get(address);
    if (until) {
      throw refusedUntil(
        { policy: rateLimits.address.name, quota: rateLimits.address.quota },
        until,
        'Too many requests from this address without a valid credential; try again later',
      );
    }
    // the fields name whichever of the two allowances has less left (a hostile review read "default" on the
    // way to an "anonymous" refusal)
    return spendAddress(rateLimits, address).then((byAddress) =>
      byAddress.allowed
        ? rateLimits.credential
            .consume(key)
            .then((byCredential) => (byCredential.allowed && byAddress.remaining < byCredential.remaining ? byAddress : byCredential))
        : byAddress,
    );
  }

  /** A sign-in code's attempt reserves a wrong code's point before the code is tried (charge() gives it back unless wrong). */
  function reserveCode(res: Response, rateLimits: RateLimits, address: string): Promise<void> {
    return rateLimits.reserveCode(address).then((until) => {
      if (until) throw codesTooMany(rateLimits, until);
      res.locals.codeReserved = true;
      // a right code gives the point back, whenever the database says so (the client may be gone by then)
      whenCodeChecked(res, (right) => {
        res.locals.codeReserved = false;
        if (right) rateLimits.refundCode(address);
      });
    });
  }

  function codesTooMany(rateLimits: RateLimits, until: number) {
    return refusedUntil(
      { policy: WRONG_CODES_POLICY, quota: rateLimits.wrongCodes.points, window: WRONG_CODES_WINDOW_SECONDS },
      until,
      'Too many wrong sign-in codes from this address; try again later',
    );
  }

  /** The 429 of a policy that refuses a key until a time (ms since the epoch), counted as a refusal. */
  function refusedUntil(policy: Pick<RateLimitDecision, 'policy' | 'quota' | 'window'>, until: number, detail: string) {
    metrics?.rateLimitRefusals.inc({ policy: policy.policy });
    const reset = Math.max(1, Math.ceil((until - Date.now()) / 1000));
    return tooMany({ ...policy, allowed: false, remaining: 0, reset }, detail);
  }

  function spendAddress(rateLimits: RateLimits, address: string): Promise<RateLimitDecision> {
    return rateLimits.address.consume(address).then((decision) => {
      if (!decision.allowed) addressRefused.set(address, Date.now() + decision.reset * 1000);
      return decision;
    });
  }

  /**
   * After the answer: a credential that authenticated is remembered (its next
   * requests spend only its own allowance), one that did not is forgotten, and
   * a sign-in code's attempt keeps its reserved point only if the code was wrong.
   */
  function charge(res: Response, status: number, settings: Record<string, string> | undefined) {
    if (!rateLimits) return;
    const key = res.locals.credentialKey as string | undefined;
    if (key !== undefined) {
      // a busy credential is never the one dropped (src/auth/recent-credentials.ts)
      if (settings?.['rowgate.credential_id']) authenticated.add(key);
      else if (status === 401) authenticated.delete(key);
    }
    // a sign-in code's attempt reserved a point (reserveCode) and was answered without its code being tried (a
    // malformed request): the point back. One whose client left before the answer keeps it: its code may
    // still be tried
    const address = res.locals.clientAddress as string | undefined;
    if (address && res.locals.codeReserved && res.writableFinished && status !== 401) {
      res.locals.codeReserved = false;
      rateLimits.refundCode(address);
    }
  }

  /** First of all: the request's id, and at its end its access line and metrics (CORS preflights included). */
  function identify(req: Request, res: Response, next: NextFunction) {
    const started = performance.now();
    const id = assignRequestId(req, res);
    // 'close' comes once (answered or abandoned): `on`, without once's wrapper
    res.on('close', () => {
      const status = res.statusCode;
      const seconds = (performance.now() - started) / 1000;
      const state = res.locals.pipeline as RequestState | undefined;
      const route = state?.route.path ?? (res.locals.route as string | undefined) ?? UNMATCHED;
      metrics?.observe(req.method, route, status, seconds);
      const settings = state?.subject?.settings ?? (res.locals.subjectSettings as Record<string, string> | undefined);
      charge(res, status, settings);
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
    let address: string;
    let decided: Promise<RateLimitDecision>;
    try {
      address = clientAddress(req, trusted);
      res.locals.clientAddress = address;
      decided = decide(req, res, rateLimits, address);
    } catch (refusal) {
      return refused(refusal);
    }
    // one `then` from the decision to the route (each costs every request a microtask)
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
      if (!isSignInCode(req.path)) return next();
      reserveCode(res, rateLimits, address).then(() => next(), refused);
    }, refused);
  }

  return { identify, rateLimit };
}
