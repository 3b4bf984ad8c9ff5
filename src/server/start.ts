// The composition root: everything rowgate is made of, put together once.
// `serve` builds the API on a pool (GraphQL, the Express app, the HTTP server)
// and listens; the test harness calls it as `startServer` does. `startServer`
// adds what a running deployment has around it: the database (embedded or
// given), the roles and migrations, the pools, standbys, metrics, the rate
// limits' shared counts, the webhook worker and the background jobs; it stops
// them in the reverse order.
import type { Server } from 'node:http';
import type { Express } from 'express';
import pg from 'pg';
import { RecentCredentials } from '../auth/recent-credentials.ts';
import type { Config } from '../config.ts';
import type { Mailer } from '../core/mail.ts';
import { setPublicUrl } from '../core/public-url.ts';
import { watchAnalysts } from '../db/analyst-limits.ts';
import { watchSqlLogins } from '../db/sql-logins.ts';
import { connect } from '../db/connect.ts';
import { Consistency } from '../db/consistency.ts';
import { keepEventPartitions } from '../db/event-partitions.ts';
import { keepFeed } from '../db/event-feed.ts';
import { watchOldestTransaction } from '../db/oldest-transaction.ts';
import { keepEvents } from '../db/event-retention.ts';
import { keepTeams } from '../db/team-upkeep.ts';
import { createPool, poolStatements } from '../db/pool.ts';
import { ReadReplicas } from '../db/read-replicas.ts';
import { createGraphql, type Graphql } from '../graphql/server.ts';
import type { PipelineHooks } from '../http/pipeline.ts';
import type { Route } from '../http/route-declaration.ts';
import { trustedProxies } from '../core/client-address.ts';
import { REPLACE_MS as COUNTS_REPLACE_MS } from '../operating/counts-exchange.ts';
import { DeploymentCounts } from '../operating/deployment-counts.ts';
import { createLogger, lineLogger, type Logger } from '../operating/logger.ts';
import { createMetricsServer, Metrics } from '../operating/metrics.ts';
import { RateLimits } from '../operating/rate-limit.ts';
import { WebhookWorker } from '../webhooks/worker.ts';
import { MailSender } from '../signin/mail-sender.ts';
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

/** The database URL SQL logins are given: the analysts' host when set, else the primary's, without user or password. */
function sqlLoginBase(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  url.username = '';
  url.password = '';
  return url.toString();
}

export interface Running {
  server: Server;
  pool: pg.Pool;
  url: string;
  /** where GET /metrics is served, when it is */
  metricsUrl?: string;
  stop(): Promise<void>;
}

export async function startServer(config: Config, logger: Logger = createLogger()): Promise<Running> {
  const log = lineLogger(logger);
  const connection = await connect(config, { exclusive: true, log });
  const pool = createPool({
    connectionString: connection.authenticatorUrl,
    max: config.ROWGATE_POOL_SIZE,
    statementTimeoutMs: config.ROWGATE_STATEMENT_TIMEOUT_MS,
    statements: config.ROWGATE_PREPARED_STATEMENTS,
  });
  // PostGraphile's own statement cache follows the same choice
  if (config.ROWGATE_PREPARED_STATEMENTS === 'unnamed') process.env.DATAPLAN_PG_PREPARED_STATEMENT_CACHE_SIZE ??= '0';
  const reads = config.ROWGATE_READ_DATABASE_URLS.length
    ? new ReadReplicas({
        primary: pool,
        urls: config.ROWGATE_READ_DATABASE_URLS,
        maxLagMs: config.ROWGATE_READ_MAX_LAG_MS,
        pool: {
          max: config.ROWGATE_POOL_SIZE,
          statementTimeoutMs: config.ROWGATE_STATEMENT_TIMEOUT_MS,
          statements: config.ROWGATE_PREPARED_STATEMENTS,
        },
        log,
      })
    : undefined;
  let metricsServer: Server | undefined;
  // the rate limits' counts, shared with every other server of the database, on a connection of their own: an
  // exchange never queues behind the requests it decides
  const countsPool = new pg.Pool({
    connectionString: connection.authenticatorUrl,
    max: 1,
    connectionTimeoutMillis: COUNTS_REPLACE_MS,
    // a peer gone without a word (a failover, a half-open socket) is noticed by TCP too, not only by the exchange's deadline
    keepAlive: true,
    keepAliveInitialDelayMillis: 1_000,
    statement_timeout: COUNTS_REPLACE_MS,
    application_name: 'rowgate-rate-limits',
  });
  // a connection lost while idle is replaced at the next exchange, not a crash
  countsPool.on('error', () => {});
  const warn = lineLogger(logger, 'warn');
  const counts = DeploymentCounts.inDatabase(countsPool, {
    onError: (error) => warn(`rowgate: rate-limit counts not exchanged: ${(error as Error).message}`),
    onStall: (stalled) =>
      (stalled ? warn : log)(
        stalled
          ? 'rowgate: the shared rate-limit counts do not answer: each key gets a local share of its allowance until they do'
          : 'rowgate: the shared rate-limit counts answer again',
      ),
    onSkew: (offsetMs) =>
      warn(
        `rowgate: this machine's clock is ${(-offsetMs / 1000).toFixed(1)} s off the database's; rate-limit windows follow the database's clock`,
      ),
  });
  // metrics only when they are served (SPEC §14: off when ROWGATE_METRICS_PORT is unset)
  const metrics =
    config.ROWGATE_METRICS_PORT === undefined
      ? undefined
      : new Metrics({ pool, counts, ...(reads ? { standbys: () => reads.status() } : {}) });
  const serving = await (async () => {
    await reads?.start();
    await counts.start();
    if (metrics && config.ROWGATE_METRICS_PORT !== undefined) {
      metricsServer = await listen(createMetricsServer(metrics), config.ROWGATE_METRICS_PORT, config.HOST);
    }
    return serve({
      pool,
      secret: connection.secret,
      host: config.HOST,
      port: config.PORT,
      publicUrl: config.ROWGATE_PUBLIC_URL,
      development: config.NODE_ENV === 'development',
      log,
      consistency: new Consistency({ primary: pool, holdMs: config.ROWGATE_READ_MAX_LAG_MS }),
      reads,
      corsOrigins: config.ROWGATE_CORS_ORIGINS,
      sqlLoginUrl: sqlLoginBase(config.ROWGATE_ANALYST_DATABASE_URL ?? connection.ownerUrl),
      operating: {
        logger,
        metrics,
        rateLimits: new RateLimits({
          perCredential: config.ROWGATE_RATE_LIMIT,
          perAddress: config.ROWGATE_ANONYMOUS_RATE_LIMIT,
          counts,
        }),
        trustedProxies: trustedProxies(config.ROWGATE_TRUST_PROXY),
      },
    });
  })().catch(async (error) => {
    await counts.stop();
    await countsPool.end();
    metricsServer?.close();
    await reads?.stop();
    await pool.end();
    await connection.embedded?.stop();
    throw error;
  });
  const analysts = watchAnalysts(pool, { log });
  // revoked or expired SQL logins lose their sessions within a second on every host that serves them
  const sqlLogins = watchSqlLogins([pool, ...(reads?.pools() ?? [])], { log });
  // a transaction left open anywhere on the database server is seen (a gauge) and told (a warning)
  const oldest = watchOldestTransaction(pool, { log, report: metrics ? (seconds) => metrics.oldestTransaction.set(seconds) : undefined });
  // the days ahead get their partitions of events, whether or not retention prunes
  const partitions = keepEventPartitions(pool, { log });
  // committed events get their feed positions (and their deliveries a lane) within a second
  const feed = keepFeed(pool, { log });
  const retention =
    config.ROWGATE_EVENT_RETENTION_DAYS === undefined ? undefined : keepEvents(pool, { days: config.ROWGATE_EVENT_RETENTION_DAYS, log });
  // expired invitations marked, the audit trail's client addresses erased when due
  const teams = keepTeams(pool, { log });
  // deliveries go out from every server process unless turned off (then `rowgate webhooks work` sends them)
  const webhooks =
    config.ROWGATE_WEBHOOKS === 'on'
      ? new WebhookWorker({
          connectionString: connection.authenticatorUrl,
          secret: connection.secret,
          allowLoopback: config.ROWGATE_WEBHOOKS_ALLOW_LOOPBACK === '1',
          leaseMs: config.ROWGATE_WEBHOOKS_LEASE_SECONDS * 1000,
          log,
          onAttempt: metrics ? (result) => metrics.webhookAttempt(result) : undefined,
        })
      : undefined;
  await webhooks?.start();
  // with a mail server, every server process sends what any of them recorded, after its commit
  const mail = config.SMTP_URL
    ? new MailSender({
        connectionString: connection.authenticatorUrl,
        secret: connection.secret,
        smtpUrl: config.SMTP_URL,
        from: config.MAIL_FROM,
        log,
      })
    : undefined;
  await mail?.start();
  let stopping: Promise<void> | undefined;
  return {
    server: serving.server,
    pool,
    url: serving.url,
    metricsUrl: metricsServer ? `http://${config.HOST}:${(metricsServer.address() as { port: number }).port}/metrics` : undefined,
    stop: () =>
      (stopping ??= (async () => {
        // no new connections; in-flight requests finish; then the pool; the database last
        // an attempt in flight ends within its 10 s timeout, a message within its 20 s, while the requests drain
        await Promise.all([serving.close(), webhooks?.stop(), mail?.stop()]);
        metricsServer?.closeAllConnections();
        metricsServer?.close();
        analysts.stop();
        sqlLogins.stop();
        oldest.stop();
        await counts.stop();
        await countsPool.end();
        await partitions.stop();
        await feed.stop();
        await retention?.stop();
        await teams.stop();
        await reads?.stop();
        await pool.end();
        await connection.embedded?.stop();
      })()),
  };
}
