// The Express application: what every request passes through, in order, then the
// route table (each API route through the pipeline of src/http/pipeline.ts), the
// mounts (GraphQL), the 404 and the error answers.
import express, { type Request, type Response } from 'express';
import type pg from 'pg';
import type { Consistency } from '../db/consistency.ts';
import type { ReadReplicas } from '../db/read-replicas.ts';
import { poolStatements } from '../db/pool.ts';
import type { Mailer } from '../core/mail.ts';
import { environmentMailer } from '../signin/mailer.ts';
import { apiPipeline, noHooks, type PipelineHooks } from './pipeline.ts';
import { errorAnswers, errorFormats, send, sendNoSuchRoute } from './respond.ts';
import type { Route } from './route.ts';
import { mountRoutes } from './router.ts';
import { corsMiddleware } from './cors.ts';
import { takesIdempotencyKeys, withIdempotency } from './idempotency.ts';
import { apiSecurityHeaders } from './security-headers.ts';
import { type OperatingOptions, operatingMiddleware } from '../operating/operate.ts';

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
  /** read-your-writes across instances and standbys (src/db/consistency.ts); none: no Rowgate-Consistency */
  consistency?: Consistency;
  /** hot standbys for GET routes (src/db/read-replicas.ts); none: every read on the primary */
  reads?: ReadReplicas;
  /** the API routes' extension points (src/http/pipeline.ts) */
  hooks?: Partial<PipelineHooks>;
  /** origins whose browser apps may call the API (ROWGATE_CORS_ORIGINS; src/http/cors.ts) */
  corsOrigins?: readonly string[];
  /** request ids, rate limits, the access log and metrics (src/operating/operate.ts); ids only when absent */
  operating?: OperatingOptions;
}

export function createApp(options: AppOptions) {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple'); // repeated parameters become arrays; nothing nested
  // `/V1/…` is no route: the checks that look at the path (rate limits, no-store) see what the router sees
  app.set('case sensitive routing', true);

  // what every request passes through, in order, before its route is matched: its id
  // first (every answer carries it and logs a line, a CORS preflight's too); the security
  // headers before CORS answers a preflight, so that no cache keeps that /v1 answer either
  // (SPEC §14's no-store); CORS before the limits, so that a browser app can read even a
  // 429; the security headers before the limits, so that a 429 is not stored either
  const operating = operatingMiddleware(options.operating ?? {});
  const requestMiddleware: express.RequestHandler[] = [
    operating.identify,
    apiSecurityHeaders,
    corsMiddleware(options.corsOrigins ?? []),
    operating.rateLimit,
  ];
  app.use(requestMiddleware);

  const pipeline = {
    pool: options.pool,
    secret: options.secret,
    mailer: options.mailer ?? environmentMailer(options.log ?? console.log),
    consistency: options.consistency,
    reads: options.reads,
    validateResponses: options.validateResponses ?? false,
    hooks: { ...noHooks(), ...options.hooks },
  };
  const writes = { ...pipeline, hooks: withIdempotency(options.secret, options.hooks) };
  mountRoutes(app, options.routes, (route) =>
    route.access === null
      ? async (req: Request, res: Response) => {
          res.locals.route = route.path; // the access log's route template
          send(route, res, await route.handler({ req, res }), false);
        }
      : apiPipeline(route, takesIdempotencyKeys(route) ? writes : pipeline),
  );
  for (const mount of options.mounts ?? []) mount(app);
  app.use(sendNoSuchRoute);
  app.use(errorAnswers(options.log, poolStatements(options.pool).statementTimeoutMs, errorFormats(options.routes)));
  return app;
}
