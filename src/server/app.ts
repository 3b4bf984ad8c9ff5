// The Express application, one install step a line (createApp): Express's
// settings, what every request passes through before its route is matched, the
// route table (each API route through the pipeline of src/http/pipeline.ts),
// the mounts (GraphQL), then the 404 and the error answers.
import type { BlockList } from 'node:net';
import express, { type Request, type Response } from 'express';
import { proxyTrusted } from '../core/client-address.ts';
import type pg from 'pg';
import type { RecentCredentials } from '../auth/recent-credentials.ts';
import type { Mailer } from '../core/mail.ts';
import { requestRecord } from '../core/request-record.ts';
import type { Consistency } from '../db/consistency.ts';
import { Placement } from '../db/placement.ts';
import type { ReadReplicas } from '../db/read-replicas.ts';
import { poolStatements } from '../db/pool.ts';
import { corsMiddleware } from '../http/cors.ts';
import { nameNewestVersion, readVersion } from '../http/api-version.ts';
import { API_VERSIONS, type ApiVersions } from '../core/versions.ts';
import { takesIdempotencyKeys, withIdempotency } from '../http/idempotency.ts';
import { apiPipeline, noHooks, type PipelineHooks } from '../http/pipeline.ts';
import { errorAnswers, errorFormats, send, sendNoSuchRoute } from '../http/respond.ts';
import type { Route } from '../http/route-declaration.ts';
import { mountRoutes } from '../http/router.ts';
import { apiSecurityHeaders } from '../http/security-headers.ts';
import { logRequests } from '../operating/access-log.ts';
import type { Logger } from '../operating/logger.ts';
import type { Metrics } from '../operating/metrics.ts';
import type { RequestLog } from '../operating/request-log.ts';
import type { RateLimits } from '../operating/rate-limit.ts';
import { identifyRequests } from '../operating/request-id.ts';
import { limitRequests } from '../operating/request-limits.ts';
import { environmentMailer } from '../signin/mailer.ts';

/** What operators see of every request (SPEC §14): ids, the access log, metrics, rate limits. */
export interface OperatingOptions {
  /** the access log's logger; none: no access log */
  logger?: Logger;
  metrics?: Metrics;
  /** none: no rate limits */
  rateLimits?: RateLimits;
  /** ROWGATE_TRUST_PROXY */
  trustedProxies?: BlockList | null;
  /** the credentials this server has seen authenticate, shared with GraphQL (default: the limits' own) */
  recentCredentials?: RecentCredentials;
  /** the organizations' request log (SPEC §25); none: no rows */
  requestLog?: RequestLog;
}

export interface AppOptions {
  pool: pg.Pool;
  secret: string;
  routes: readonly Route[];
  /** check every response against its schema (the test suite turns this on) */
  validateResponses?: boolean;
  /** more handlers (GraphQL), mounted after the route table and before the 404 and error handlers */
  mounts?: ((app: express.Express) => void)[];
  log?: (line: string) => void;
  /** how mail (sign-in codes) is sent; default: SMTP_URL's server, or the log and the development outbox */
  mailer?: Mailer;
  /** the database URL SQL logins connect to (SPEC §24); default: the pool's own database */
  sqlLoginUrl?: string;
  /** read-your-writes across instances and standbys (src/db/consistency.ts); none: no Rowgate-Consistency */
  consistency?: Consistency;
  /** hot standbys for GET routes (src/db/read-replicas.ts); none: every read on the primary */
  reads?: ReadReplicas;
  /** the API routes' extension points (src/http/pipeline.ts) */
  hooks?: Partial<PipelineHooks>;
  /** origins whose browser apps may call the API (ROWGATE_CORS_ORIGINS; src/http/cors.ts) */
  corsOrigins?: readonly string[];
  /** request ids, rate limits, the access log and metrics; ids only when absent */
  operating?: OperatingOptions;
  /** the API versions (SPEC §23); default: src/core/versions.ts's */
  versions?: ApiVersions;
}

export function createApp(options: AppOptions): express.Express {
  const app = express();
  installExpressSettings(app, options.operating?.trustedProxies ?? null);
  installRequestMiddleware(app, options);
  installRoutes(app, options);
  for (const mount of options.mounts ?? []) mount(app);
  installErrorAnswers(app, options);
  return app;
}

function installExpressSettings(app: express.Express, trusted: BlockList | null) {
  app.disable('x-powered-by');
  // behind a proxy that ends TLS, X-Forwarded-Proto from ROWGATE_TRUST_PROXY's proxies makes req.secure true,
  // so the session and sign-in cookies go out Secure; nobody else's header is believed
  if (trusted) app.set('trust proxy', (address: string) => proxyTrusted(trusted, address));
  app.set('etag', false);
  app.set('query parser', 'simple'); // repeated parameters become arrays; nothing nested
  // `/V1/…` is no route: the checks that look at the path (rate limits, no-store) see what the router sees
  app.set('case sensitive routing', true);
}

/**
 * What every request passes through, in order, before its route is matched:
 * its id first (every answer carries it and logs a line, a CORS preflight's
 * too); the security headers before CORS answers a preflight, so that no cache
 * keeps that /v1 answer either (SPEC §14's no-store); CORS before the limits,
 * so that a browser app can read even a 429; the security headers before the
 * limits, so that a 429 is not stored either.
 */
function installRequestMiddleware(app: express.Express, options: AppOptions) {
  const operating = options.operating ?? {};
  app.use(identifyRequests(operating.trustedProxies ?? null));
  operating.requestLog?.use(options.pool);
  app.use(logRequests(operating));
  app.use(apiSecurityHeaders);
  app.use(nameNewestVersion(options.versions ?? API_VERSIONS));
  app.use(corsMiddleware(options.corsOrigins ?? []));
  // the version before anything that may refuse: a bad one is a 400 before authentication (SPEC §23)
  app.use(readVersion(options.versions ?? API_VERSIONS));
  if (operating.rateLimits) app.use(limitRequests({ ...operating, rateLimits: operating.rateLimits }));
}

/** The URL of the pool's database, without its user and password. */
function databaseOf(pool: pg.Pool): string {
  const url = new URL(
    (pool as unknown as { options: { connectionString?: string } }).options.connectionString ?? 'postgres://localhost/rowgate',
  );
  url.username = '';
  url.password = '';
  return url.toString();
}

/** The route table: an API route through the pipeline (a write that takes keys, with idempotency), a public one as it is. */
function installRoutes(app: express.Express, options: AppOptions) {
  const pipeline = {
    pool: options.pool,
    secret: options.secret,
    mailer: options.mailer ?? environmentMailer(options.log ?? console.log, options.secret),
    sqlLoginUrl: options.sqlLoginUrl ?? databaseOf(options.pool),
    placement: new Placement({ primary: options.pool, consistency: options.consistency, reads: options.reads }),
    validateResponses: options.validateResponses ?? false,
    hooks: { ...noHooks(), ...options.hooks },
    versions: options.versions ?? API_VERSIONS,
  };
  const writes = { ...pipeline, hooks: withIdempotency(options.secret, options.hooks) };
  mountRoutes(app, options.routes, (route) =>
    route.access === null
      ? async (req: Request, res: Response) => {
          requestRecord(req).route = route.path;
          send(route, res, await route.handler({ req, res }), false);
        }
      : apiPipeline(route, takesIdempotencyKeys(route) ? writes : pipeline),
  );
}

function installErrorAnswers(app: express.Express, options: AppOptions) {
  app.use(sendNoSuchRoute);
  app.use(errorAnswers(options.log, poolStatements(options.pool).statementTimeoutMs, errorFormats(options.routes)));
}
