// Security headers, by kind of answer. An API answer (JSON, and every error)
// gets the set the OWASP REST Security Cheat Sheet asks of an API, in one call;
// the HTML pages (the API reference, the OAuth2 consent page, GraphiQL) get
// helmet's defaults for documents, which replace the API's where both set one.
// Why not helmet everywhere: its thirteen headers on every answer cost the API
// measurable throughput, mostly for headers only documents use (measured in
// docs/performance.md; decided in docs/decisions.md, "Security headers").
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';

const API_HEADERS: readonly (readonly [string, string])[] = [
  // nothing may load from, or frame, an API answer
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'"],
  ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'],
  ['X-Content-Type-Options', 'nosniff'],
  ['X-Frame-Options', 'DENY'],
  // no other site may embed an answer (a no-cors request from another origin)
  ['Cross-Origin-Resource-Policy', 'same-origin'],
  ['Referrer-Policy', 'no-referrer'],
];

/**
 * What no cache (a browser's, a proxy's) may keep: every /v1 answer (tokens,
 * client secrets, personal data, errors included: SPEC §14) and GraphQL's.
 */
const STORED_NOWHERE: typeof API_HEADERS = [...API_HEADERS, ['Cache-Control', 'no-store']];
const storedNowhere = (path: string) => path.startsWith('/v1/') || path === '/v1' || path.startsWith('/graphql');

export function apiSecurityHeaders(req: Request, res: Response, next: NextFunction) {
  // the path as the router matches it (an absolute-form request target included)
  // one setHeader each (res.setHeaders takes a Map, whose iteration makes an entry array a header)
  for (const [name, value] of storedNowhere(req.path) ? STORED_NOWHERE : API_HEADERS) res.setHeader(name, value);
  next();
}

// Without `upgrade-insecure-requests`: over plain HTTP under any name but
// localhost (a LAN address, a container's name) it sent the browser to https
// for the page's own CSS and JS, and the reference rendered blank. Pages over
// HTTPS load their files over HTTPS anyway (they are all same-origin).
export const pageSecurityHeaders = helmet({ contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } });
