// Writing answers: a route's result with the status its entry declares, and every
// error in SPEC §7's shape (RFC 6749's on the OAuth2 protocol endpoints).
import type { NextFunction, Request, Response } from 'express';
import { KeysetPage, ListPage } from '../listing/list-page.ts';
import { type ApiError, asOAuth2Error, asRegistrationError, isCollision, toApiError } from '../core/errors.ts';
import { requestRecord } from '../core/request-record.ts';
import type { Route } from './route-declaration.ts';

/** Sends a handler's result as its route declares: a redirect to it (302), nothing (204), or it as JSON. */
export function send(route: Route, res: Response, result: unknown, validate: boolean) {
  if (res.headersSent) return; // the handler answered itself (documents, redirects)
  if (route.status === 302) {
    // a redirecting handler returns the Location: sent after its transaction committed
    res.redirect(302, String(result));
    return;
  }
  if (route.status === 204) {
    res.status(route.status).end();
    return;
  }
  if (validate) checkResponse(route, JSON.stringify(result ?? null));
  if (result instanceof KeysetPage && result.totalCount !== undefined) {
    // asked with Prefer: count=exact (SPEC §23)
    res.setHeader('Rowgate-Total-Count', String(result.totalCount));
    res.setHeader('Preference-Applied', 'count=exact');
  }
  sendJson(res, route.status, result instanceof ListPage || result instanceof KeysetPage ? result.json() : (JSON.stringify(result) ?? ''));
}

/**
 * An answer kept for an idempotency key, given again instead of running the
 * request (SPEC §17): the pipeline returns it, and it is sent byte for byte.
 */
export class Replay {
  readonly status: number;
  readonly body: string;
  /** the first answer's cookies (an impersonation's session), set again with it */
  readonly setCookie: readonly string[];
  constructor(status: number, body: string, setCookie: readonly string[] = []) {
    this.status = status;
    this.body = body;
    this.setCookie = setCookie;
  }
}

/** Sends a Replay: the first answer again, marked as replayed. */
export function sendReplay(res: Response, replay: Replay) {
  res.setHeader('Idempotent-Replayed', 'true');
  if (replay.setCookie.length) res.setHeader('Set-Cookie', [...replay.setCookie]);
  if (replay.status === 204) res.status(204).end();
  else sendJson(res, replay.status, replay.body);
}

/**
 * A JSON answer, written with Node's own writeHead and end (the headers set
 * before it are kept). Express's res.send parses and formats the Content-Type
 * and checks the request's freshness on every call, a cost every answer would
 * pay for nothing an API answer needs.
 */
export function sendJson(res: Response, status: number, json: string) {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(json) }).end(json);
}

/** With `validateResponses` (the test suite): an answer that does not match its route's schema is a bug, a 500. */
function checkResponse(route: Route, json: string) {
  const checked = route.response?.safeParse(JSON.parse(json));
  if (checked && !checked.success) {
    throw new Error(`response of ${route.operationId} does not match its schema: ${checked.error.message}`);
  }
}

/** The answer to a path no route has. */
export function sendNoSuchRoute(_req: Request, res: Response) {
  res.status(404).json({ error: 'NotFound', detail: 'No such route' });
}

/**
 * The shape of a path's errors when none of its routes ran (a rate limit
 * refuses before routes are matched; a method the path lacks is a 405): the
 * OAuth2 protocol endpoints answer in RFC 6749's, with or without a trailing
 * slash, as the router matches them.
 */
export function errorFormats(routes: readonly Route[]): (path: string) => Route['errorFormat'] {
  const formats = new Map(routes.filter((r) => r.errorFormat === 'oauth2').map((r) => [r.path, r.errorFormat]));
  return (path) => formats.get(path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
}

/**
 * The error handler: every error in its one body shape; only the unexpected ones
 * are logged, and statement timeouts (a 504 naming the limit: SPEC §14).
 */
export function errorAnswers(
  log: ((line: string) => void) | undefined,
  statementTimeoutMs?: number,
  formatOf: (path: string) => Route['errorFormat'] = () => undefined,
) {
  const answer = errorAnswer(log, statementTimeoutMs, formatOf);
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const apiError = answer(error, req);
    if (res.headersSent) return;
    res.status(apiError.status).set(apiError.headers).json(apiError.body());
  };
}

/** The ApiError the error handler answers an error with, logged as it logs it: also for answers another library writes (GraphQL's). */
export function errorAnswer(
  log: ((line: string) => void) | undefined,
  statementTimeoutMs?: number,
  formatOf: (path: string) => Route['errorFormat'] = () => undefined,
) {
  return (error: unknown, req: Request): ApiError => {
    const found = toApiError(error, statementTimeoutMs);
    const format = requestRecord(req).errorFormat ?? formatOf(req.path);
    const apiError = format === 'oauth2' ? asOAuth2Error(found) : format === 'oauth2-registration' ? asRegistrationError(found) : found;
    if (found.status === 504) {
      log?.(`timeout on ${req.method} ${req.originalUrl.split('?')[0]}: ${found.detail}`);
    } else if (isCollision(error)) {
      // answered 503 to be sent again, and told: a deadlock is the code's to look into
      log?.(`conflict on ${req.method} ${req.originalUrl.split('?')[0]}: ${(error as Error).message}`);
    } else if (apiError.status >= 500 && apiError.status !== 503) {
      log?.(`error on ${req.method} ${req.originalUrl.split('?')[0]}: ${(error as Error)?.stack ?? String(error)}`);
    }
    return apiError;
  };
}
