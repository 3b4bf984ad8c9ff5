// Cross-origin requests from browser apps (SPEC §16), with the `cors` package.
// Origins listed in ROWGATE_CORS_ORIGINS may call the API with a bearer token
// (/v1, which holds the token, revocation and introspection endpoints) and
// /graphql: their preflights are answered 204 and their answers name the
// origin. Never with credentials: no Access-Control-Allow-Credentials, so a
// browser sends no cookie cross-origin and lets no page read an answer made
// with one. The authorization server's metadata is public: `*`, to anyone.
// Any other origin gets no CORS header (and a preflight is that path's 405).
import cors from 'cors';
import type { RequestHandler } from 'express';
import { requestRecord } from '../core/request-record.ts';

const API_PATH = /^\/(?:v1\/|graphql$)/;
const METADATA_PATH = '/.well-known/oauth-authorization-server';
/** The access log's route of a CORS preflight */
const PREFLIGHT = '(preflight)';

export function corsMiddleware(origins: readonly string[]): RequestHandler {
  const allowed = new Set(origins);
  const api = cors({
    origin: (origin, callback) => callback(null, origin !== undefined && allowed.has(origin) ? origin : false),
    methods: ['GET', 'POST', 'PATCH', 'DELETE'],
    // Rowgate-Consistency both ways: a write's answer carries it, a later read sends it (SPEC §19);
    // Rowgate-Version picks the API version and Prefer asks for a list's total (SPEC §23)
    allowedHeaders: [
      'Authorization',
      'Content-Type',
      'Idempotency-Key',
      'X-Request-Id',
      'Rowgate-Consistency',
      'Rowgate-Version',
      'Prefer',
    ],
    exposedHeaders: [
      'WWW-Authenticate',
      'Retry-After',
      'X-Request-Id',
      'RateLimit',
      'RateLimit-Policy',
      'Location',
      'Idempotent-Replayed',
      'Rowgate-Consistency',
      'Rowgate-Version',
      'Rowgate-Total-Count',
      'Preference-Applied',
      'Deprecation',
      'Sunset',
    ],
    credentials: false,
    maxAge: 600,
    optionsSuccessStatus: 204,
  });
  const metadata = cors({ origin: '*', methods: ['GET'], maxAge: 600, optionsSuccessStatus: 204 });
  return (req, res, next) => {
    // a preflight answered here is logged under one label, not its path (metrics' labels stay few)
    if (req.method === 'OPTIONS' && req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined) {
      requestRecord(req).route = PREFLIGHT;
    }
    if (req.path === METADATA_PATH) return metadata(req, res, next);
    if (allowed.size && API_PATH.test(req.path)) return api(req, res, next);
    next();
  };
}
