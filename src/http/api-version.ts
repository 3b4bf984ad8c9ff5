// The version of a /v1 request (SPEC §23), read before anything else: the
// Rowgate-Version header when sent (an unknown or empty one is a 400 before
// authentication), else the one its credential is pinned to. Every /v1 answer
// names the version it was made in. The OAuth2 protocol endpoints and
// /.well-known are not versioned: they ignore the header.
import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from '../core/errors.ts';
import { requestRecord } from '../core/request-record.ts';
import type { CredentialKind } from '../auth/tokens.ts';
import type { ApiVersions } from '../core/versions.ts';
import type { ApiRoute } from './route-declaration.ts';

export const VERSION_HEADER = 'Rowgate-Version';

/** `/v1/oauth2/…` protocol endpoints (not the clients a user manages) */
const UNVERSIONED = /^\/v1\/oauth2\/(?!clients(\/|$))/;

/** Whether a route answers alike in every version and ignores the header. */
export const unversioned = (route: Pick<ApiRoute, 'path'>) => UNVERSIONED.test(route.path) || !route.path.startsWith('/v1/');

/** Names the version an answer is made in, with the retirement headers of a version that has a date. */
export function markVersion(res: Response, versions: ApiVersions, version: string) {
  res.setHeader(VERSION_HEADER, version);
  const retirement = versions.retirement(version);
  if (retirement) {
    // RFC 9745: `@` and the Unix time; RFC 8594: an HTTP date
    res.setHeader('Deprecation', `@${Math.floor(retirement.deprecation.getTime() / 1000)}`);
    res.setHeader('Sunset', retirement.sunset.toUTCString());
  }
}

/**
 * Credential kinds the database pins to no version (rowgate_private.credential_api_version
 * answers null): their requests are answered in the newest, known before they authenticate.
 */
export const UNPINNED_KINDS: readonly CredentialKind[] = ['web_session'];

/**
 * Names the newest version on every /v1 answer from the start, so that one made
 * before the header is read (a CORS preflight) names one too; readVersion and
 * the pipeline name the request's own once they know it.
 */
export function nameNewestVersion(versions: ApiVersions): RequestHandler {
  return (req: Request, res: Response, next) => {
    if (req.path.startsWith('/v1/')) res.setHeader(VERSION_HEADER, versions.newest);
    next();
  };
}

/**
 * The middleware that reads the header on /v1, before the credential, the rate
 * limits and the route. A version it accepts is the request's; without one the
 * answer names the newest until the pipeline settles on the credential's pin.
 */
export function readVersion(versions: ApiVersions): RequestHandler {
  return (req: Request, res: Response, next) => {
    if (!req.path.startsWith('/v1/') && req.path !== '/v1') return next();
    if (UNVERSIONED.test(req.path)) {
      res.setHeader(VERSION_HEADER, versions.newest);
      return next();
    }
    const sent = req.headers['rowgate-version'];
    if (sent === undefined) {
      markVersion(res, versions, versions.newest);
      return next();
    }
    const given = Array.isArray(sent) ? sent.join(', ') : sent.trim();
    if (!versions.has(given)) {
      res.setHeader(VERSION_HEADER, versions.newest);
      return next(
        new ApiError(
          400,
          'UnsupportedVersion',
          `Rowgate-Version ${JSON.stringify(given)} is not a version of this API; supported: ${versions.names.join(', ')}`,
        ),
      );
    }
    requestRecord(req).apiVersion = given;
    markVersion(res, versions, given);
    next();
  };
}

/**
 * The version a request is answered in, named on its answer: its header's,
 * else its credential's pin (the authentication statement's
 * `rowgate.api_version`), else the newest. A pin to a retired version is served
 * in the oldest version left, the nearest to it.
 */
export function settleVersion(
  res: Response,
  versions: ApiVersions,
  named: string | undefined,
  settings?: Readonly<Record<string, string>>,
) {
  const pinned = settings?.['rowgate.api_version'] || versions.newest;
  const version = named ?? (versions.has(pinned) ? pinned : versions.oldest);
  markVersion(res, versions, version);
  return version;
}

/** Whether the client asked for a list's total (`Prefer: count=exact`, RFC 7240). */
export function prefersExactCount(req: Request): boolean {
  const prefer = req.headers.prefer;
  if (prefer === undefined) return false;
  return (Array.isArray(prefer) ? prefer.join(',') : prefer)
    .split(',')
    .map((p) => p.split(';')[0]!.trim().toLowerCase())
    .includes('count=exact');
}

/** A route as a version shapes its request and answer (src/core/versions.ts): the same handler, other schemas. */
export function routeIn(route: ApiRoute, versions: ApiVersions, version: string): ApiRoute {
  if (unversioned(route)) return route;
  const query = versions.schema(version, 'query', route.query) as ApiRoute['query'];
  const body = versions.schema(version, 'body', route.body);
  const response = versions.schema(version, 'response', route.response);
  return query === route.query && body === route.body && response === route.response ? route : { ...route, query, body, response };
}
