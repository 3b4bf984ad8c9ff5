// The API on a pool: GraphQL, the Express app and the HTTP server, listening.
// startServer (src/server/start.ts) starts it last among a deployment's services.
import type { Server } from 'node:http';
import type { Express } from 'express';
import type pg from 'pg';
import { RecentCredentials } from '../auth/recent-credentials.ts';
import type { Mailer } from '../core/mail.ts';
import { setPublicUrl } from '../core/public-url.ts';
import type { Consistency } from '../db/consistency.ts';
import { poolStatements } from '../db/pool.ts';
import type { ReadReplicas } from '../db/read-replicas.ts';
import { createGraphql, type Graphql } from '../graphql/server.ts';
import type { PipelineHooks } from '../http/pipeline.ts';
import type { Route } from '../http/route-declaration.ts';
import { createApp, type OperatingOptions } from './app.ts';
import { createHttpServer, drainOnStop, type HTTP_TIMEOUTS } from './http-server.ts';
import { listen } from './listen.ts';
import { allRoutes } from './route-table.ts';

export interface ServeOptions {
  /** the authenticator pool every request runs on */
  pool: pg.Pool;
  secret: string;
  host: string;
  /** 0: any free port */
  port: number;
  /** ROWGATE_PUBLIC_URL; default: http://host:port, as bound */
  publicUrl?: string;
  /** serves GraphQL's explorer at /graphiql */
  development: boolean;
  log: (line: string) => void;
  /** read-your-writes across instances and standbys (src/db/consistency.ts) */
  consistency: Consistency;
  reads?: ReadReplicas;
  /** request ids, the access log (and Node's parser-level refusals), metrics, rate limits */
  operating?: OperatingOptions;
  corsOrigins?: readonly string[];
  /** default: SMTP_URL's server, or the development outbox */
  mailer?: Mailer;
  /** the database URL SQL logins connect to (SPEC §24); default: the pool's own database */
  sqlLoginUrl?: string;
  /** check every response against its schema (the test suite turns this on) */
  validateResponses?: boolean;
  /** the API routes' extension points (src/http/pipeline.ts) */
  hooks?: Partial<PipelineHooks>;
  /** default: the whole route table */
  routes?: readonly Route[];
  timeouts?: Partial<typeof HTTP_TIMEOUTS>;
}

export interface Serving {
  app: Express;
  server: Server;
  graphql: Graphql;
  /** where the server listens */
  url: string;
  /** no new connections; the requests in flight finish; then GraphQL lets go of the pool */
  close(): Promise<void>;
}

/** The API on a pool: GraphQL, the app, the HTTP server, listening. */
export async function serve(options: ServeOptions): Promise<Serving> {
  const { pool, reads, consistency } = options;
  // one memory of the credentials seen to authenticate, whichever of REST and GraphQL saw them
  const operating = { recentCredentials: new RecentCredentials(), ...options.operating };
  const routes = options.routes ?? allRoutes(pool, reads);
  const graphql = await createGraphql({
    pool,
    routes: () => routes,
    secret: options.secret,
    development: options.development,
    log: options.log,
    metrics: operating.metrics,
    consistency,
    reads,
    recentCredentials: operating.recentCredentials,
  });
  try {
    const app = createApp({
      pool,
      secret: options.secret,
      routes,
      validateResponses: options.validateResponses,
      log: options.log,
      mailer: options.mailer,
      sqlLoginUrl: options.sqlLoginUrl,
      mounts: [graphql.mount],
      consistency,
      reads,
      hooks: options.hooks,
      corsOrigins: options.corsOrigins,
      operating,
    });
    const statementTimeoutMs = poolStatements(pool).statementTimeoutMs ?? 0;
    const httpServer = createHttpServer(app, { statementTimeoutMs, timeouts: options.timeouts, logger: operating.logger });
    const server = await listen(httpServer, options.port, options.host);
    const address = server.address();
    const url = `http://${options.host}:${typeof address === 'object' && address ? address.port : options.port}`;
    setPublicUrl(app, options.publicUrl ?? url);
    const drain = drainOnStop(server);
    let closing: Promise<void> | undefined;
    return { app, server, graphql, url, close: () => (closing ??= drain().then(() => graphql.release())) };
  } catch (error) {
    await graphql.release();
    throw error;
  }
}
