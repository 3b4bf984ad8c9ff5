// Starting and stopping rowgate: the database (embedded or given), the roles and
// migrations, the pool, the HTTP server; stopping in the reverse order.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import pg from 'pg';
import { RecentCredentials } from '../auth/recent-credentials.ts';
import { createApp } from './app.ts';
import { listen } from './listen.ts';
import { setPublicUrl } from './public-url.ts';
import type { Config } from '../config.ts';
import { createPool } from '../db/pool.ts';
import { Consistency } from '../db/consistency.ts';
import { ReadReplicas } from '../db/read-replicas.ts';
import { connect } from '../db/connect.ts';
import { watchAnalysts } from '../db/analyst-limits.ts';
import { keepEvents } from '../db/event-retention.ts';
import { trustedProxies } from '../operating/client-address.ts';
import { type AccessLine, accessLog } from '../operating/access-log.ts';
import { createLogger, lineLogger, type Logger } from '../operating/logger.ts';
import { createMetricsServer, Metrics } from '../operating/metrics.ts';
import { RateLimits } from '../operating/rate-limit.ts';
import { DeploymentCounts } from '../operating/deployment-counts.ts';
import { createGraphql, type Graphql } from '../graphql/server.ts';
import { allRoutes } from './routes.ts';
import { WebhookWorker } from '../webhooks/worker.ts';

/**
 * Errors Node's HTTP parser answers before Express sees the request (headers
 * over 16 KiB, a malformed request line, a request that took too long) get
 * SPEC §7's body too, instead of Node's empty one. Found by the HTTP fuzzer
 * (test/fuzz): a 16 KiB query string was a bare `431` with no body.
 */
function answerClientErrors(server: Server, logAnswer?: (line: AccessLine) => void) {
  // the last response of each connection: once its headers are out and until it ends, an answer
  // written to the socket would land inside it (Node's own handler destroys the socket then too)
  const responses = new WeakMap<Duplex, ServerResponse>();
  server.on('request', (req: IncomingMessage, res: ServerResponse) => responses.set(req.socket, res));
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const inFlight = responses.get(socket);
    if (error.code === 'ECONNRESET' || !socket.writable || (inFlight?.headersSent && !inFlight.writableFinished)) {
      socket.destroy();
      return;
    }
    const [status, reason, name, detail] =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', 'RequestHeaderFieldsTooLarge', 'The request line and headers are larger than 16 KiB']
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', 'RequestTimeout', 'The request took too long to arrive']
          : [400, 'Bad Request', 'BadRequest', 'The request is not valid HTTP'];
    // an answer to HEAD has no body (the request line is at the start of the unparsed data)
    const head = /^HEAD /.test((error as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') ?? '');
    const body = head ? '' : JSON.stringify({ error: name, detail });
    // an id and a log line as every answer has (SPEC §14); the request's own id, if any, was never parsed
    const id = randomUUID();
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nX-Request-Id: ${id}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    logAnswer?.({
      request_id: id,
      method: '(unparsed)',
      route: UNPARSED,
      status,
      duration_ms: 0,
      subject_kind: null,
      credential_id: null,
      aborted: false,
    });
  });
}

/** The access log's route of a request Node's parser refused */
const UNPARSED = '(unparsed)';

/**
 * Idle and slow connections are closed (SPEC §14): an idle keep-alive
 * connection after 5 s; a connection whose request line and headers have not
 * all arrived within 10 s, or whose whole request (a body of up to 1 MiB)
 * within 30 s, gets a 408 (answerClientErrors); a socket on which nothing at
 * all moves for `idleMs` (at least two minutes, and twice the statement
 * timeout: a request waits on the database silently) is cut. Node checks the
 * first two every `connectionsCheckingInterval`. Before: a connection that sent
 * nothing stayed open for ever (still open after 100 s, issue 13).
 */
export const HTTP_TIMEOUTS = {
  keepAliveTimeout: 5_000,
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  connectionsCheckingInterval: 1_000,
};

export function createHttpServer(
  listener: RequestListener,
  options: { statementTimeoutMs: number; timeouts?: Partial<typeof HTTP_TIMEOUTS>; logger?: Logger },
): Server {
  const timeouts = { ...HTTP_TIMEOUTS, ...options.timeouts };
  const server = createServer(timeouts, listener);
  server.keepAliveTimeout = timeouts.keepAliveTimeout;
  server.setTimeout(Math.max(120_000, 2 * options.statementTimeoutMs));
  answerClientErrors(server, options.logger ? accessLog(options.logger) : undefined);
  return server;
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
  let graphql: Graphql | undefined;
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
  // metrics only when they are served (SPEC §14: off when ROWGATE_METRICS_PORT is unset)
  const metrics =
    config.ROWGATE_METRICS_PORT === undefined ? undefined : new Metrics({ pool, ...(reads ? { standbys: () => reads.status() } : {}) });
  let metricsServer: Server | undefined;
  // the rate limits' counts, shared with every other server of the database, on a connection of their own: an
  // exchange never queues behind the requests it decides
  const countsPool = new pg.Pool({
    connectionString: connection.authenticatorUrl,
    max: 1,
    connectionTimeoutMillis: 3_000,
    statement_timeout: 5_000,
    application_name: 'rowgate-rate-limits',
  });
  // a connection lost while idle is replaced at the next exchange, not a crash
  countsPool.on('error', () => {});
  const counts = DeploymentCounts.inDatabase(countsPool, (error) =>
    log(`rowgate: rate-limit counts not exchanged: ${(error as Error).message}`),
  );
  const server = await (async () => {
    await reads?.start();
    const consistency = new Consistency({ primary: pool, holdMs: config.ROWGATE_READ_MAX_LAG_MS });
    // one memory of the credentials seen to authenticate, whichever of REST and GraphQL saw them
    const recentCredentials = new RecentCredentials();
    graphql = await createGraphql({
      recentCredentials,
      pool,
      secret: connection.secret,
      development: config.NODE_ENV === 'development',
      log,
      metrics,
      consistency,
      reads,
    });
    await counts.start();
    const operating = {
      logger,
      metrics,
      rateLimits: new RateLimits({
        perCredential: config.ROWGATE_RATE_LIMIT,
        perAddress: config.ROWGATE_ANONYMOUS_RATE_LIMIT,
        counts,
      }),
      trustedProxies: trustedProxies(config.ROWGATE_TRUST_PROXY),
      recentCredentials,
    };
    const app = createApp({
      pool,
      secret: connection.secret,
      routes: allRoutes(pool, reads),
      log,
      mounts: [graphql.mount],
      consistency,
      reads,
      corsOrigins: config.ROWGATE_CORS_ORIGINS,
      operating,
    });
    if (metrics && config.ROWGATE_METRICS_PORT !== undefined) {
      metricsServer = await listen(createMetricsServer(metrics), config.ROWGATE_METRICS_PORT, config.HOST);
    }
    const listening = await listen(
      createHttpServer(app, { statementTimeoutMs: config.ROWGATE_STATEMENT_TIMEOUT_MS, logger }),
      config.PORT,
      config.HOST,
    );
    const address = listening.address();
    setPublicUrl(
      app,
      config.ROWGATE_PUBLIC_URL ?? `http://${config.HOST}:${typeof address === 'object' && address ? address.port : config.PORT}`,
    );
    return listening;
  })().catch(async (error) => {
    await counts.stop();
    await countsPool.end();
    metricsServer?.close();
    await reads?.stop();
    await graphql?.release();
    await pool.end();
    await connection.embedded?.stop();
    throw error;
  });
  const analysts = watchAnalysts(pool, { log });
  const retention =
    config.ROWGATE_EVENT_RETENTION_DAYS === undefined ? undefined : keepEvents(pool, { days: config.ROWGATE_EVENT_RETENTION_DAYS, log });
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
  const drain = drainOnStop(server);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  let stopping: Promise<void> | undefined;
  return {
    server,
    pool,
    url: `http://${config.HOST}:${port}`,
    metricsUrl: metricsServer ? `http://${config.HOST}:${(metricsServer.address() as { port: number }).port}/metrics` : undefined,
    stop: () =>
      (stopping ??= (async () => {
        // no new connections; in-flight requests finish; then the pool; the database last
        // an attempt in flight ends within its 10 s timeout, while the requests drain
        await Promise.all([drain(), webhooks?.stop()]);
        metricsServer?.closeAllConnections();
        metricsServer?.close();
        analysts.stop();
        await counts.stop();
        await countsPool.end();
        await retention?.stop();
        await reads?.stop();
        await graphql?.release();
        await pool.end();
        await connection.embedded?.stop();
      })()),
  };
}

/** How long in-flight requests may take to finish once the server stops (main.ts gives up at 20 s). */
const DRAIN_MS = 15_000;

/**
 * The HTTP half of a graceful stop. `server.close()` refuses new connections
 * but waits for every open one, and a client that keeps its connection busy
 * (keep-alive under load) kept it open until main.ts gave up at 20 s, exiting 1
 * with the database still running (found by test/long/shutdown.process.long.ts).
 * So once stopping, every answer carries `Connection: close` (the connection
 * ends after the request in flight on it), idle connections are closed as they
 * appear, and after DRAIN_MS whatever is left is cut.
 */
function drainOnStop(server: Server): () => Promise<void> {
  let draining = false;
  server.prependListener('request', (_req, res) => {
    if (draining) res.setHeader('Connection', 'close');
  });
  return () =>
    new Promise<void>((resolve) => {
      draining = true;
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      const deadline = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
      server.close(() => {
        clearInterval(sweep);
        clearTimeout(deadline);
        resolve();
      });
      server.closeIdleConnections();
    });
}
