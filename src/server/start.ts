// The composition root: everything rowgate is made of, put together once, as
// one list of services (src/server/services.ts) around the API (src/server/api.ts).
// `npm start` runs it; the test harness starts its servers through it too, with
// its own database and without the upkeep timers.
import type { Server } from 'node:http';
import pg from 'pg';
import type { Config } from '../config.ts';
import { watchAnalysts } from '../upkeep/analyst-limits.ts';
import { watchSqlLogins } from '../upkeep/sql-login-sessions.ts';
import { connect, type Connection } from '../db/connect.ts';
import { Consistency } from '../db/consistency.ts';
import { keepEventPartitions } from '../upkeep/event-partitions.ts';
import { keepFeed } from '../upkeep/event-feed.ts';
import { watchOldestTransaction } from '../upkeep/oldest-transaction.ts';
import { keepEvents } from '../upkeep/event-retention.ts';
import { keepTeams } from '../upkeep/team-upkeep.ts';
import { createPool, silentPeerDeadlines } from '../db/pool.ts';
import { ReadReplicas } from '../db/read-replicas.ts';
import { trustedProxies } from '../core/client-address.ts';
import { REPLACE_MS as COUNTS_REPLACE_MS } from '../operating/counts-exchange.ts';
import { DeploymentCounts } from '../operating/deployment-counts.ts';
import { createLogger, lineLogger, type Logger } from '../operating/logger.ts';
import { createMetricsServer, Metrics } from '../operating/metrics.ts';
import { RateLimits } from '../operating/rate-limit.ts';
import { WebhookWorker } from '../webhooks/worker.ts';
import { MailSender } from '../signin/mail-sender.ts';
import { createMailer } from '../signin/mailer.ts';
import { keepRequestLogPartitions, RequestLog } from '../operating/request-log.ts';
import { serve, type ServeOptions, type Serving } from './api.ts';
import type { OperatingOptions } from './app.ts';
import { listen } from './listen.ts';
import { type Service, service, startServices, together } from './services.ts';

export interface Running {
  server: Server;
  pool: pg.Pool;
  url: string;
  /** where GET /metrics is served, when it is */
  metricsUrl?: string;
  stop(): Promise<void>;
}

/** The services of startServer's list that a caller may leave out: the upkeep on a clock. */
export type UpkeepName =
  | 'analysts-limits'
  | 'sql-logins'
  | 'oldest-transaction'
  | 'event-partitions'
  | 'event-feed'
  | 'event-retention'
  | 'team-upkeep'
  | 'request-log-partitions';

type Upkeep = [UpkeepName, () => { stop(): unknown }];

/** What a caller other than `npm start` (the test suite) chooses besides the configuration. */
export interface ServerChoices {
  /** where the server's lines go, and the access log (default: JSON lines on stdout) */
  logger?: Logger;
  /** the server's lines, one string each, and no access log (instead of `logger`) */
  log?: (line: string) => void;
  /** the database, when it is not the configuration's: opened before the other services, closed after them */
  database?: { open(): Promise<Connection>; close(): Promise<void> };
  /** upkeep left out (the suite's fixtures are not raced by timers) */
  without?: readonly UpkeepName[];
  /** rate-limit counts kept in this process, not exchanged through the database */
  localCounts?: boolean;
  /** what the API gets besides what the configuration says */
  serve?: Pick<ServeOptions, 'validateResponses' | 'mailer'> & { operating?: OperatingOptions };
}

/**
 * A running deployment's server: the database (embedded or given), its roles and
 * migrations, the pools, standbys, the rate limits' shared counts, metrics, the
 * upkeep on a clock, the webhook and mail senders and the API, as one list of
 * services started in its order and stopped in the reverse order.
 */
export async function startServer(config: Config, choices: ServerChoices = {}): Promise<Running> {
  const logger = choices.log ? undefined : (choices.logger ?? createLogger());
  const log = choices.log ?? lineLogger(logger ?? createLogger());
  const warn = choices.log ?? lineLogger(logger ?? createLogger(), 'warn');
  // the database is reached before the list is made, since every other service is made on its connection
  const connection = await (choices.database?.open() ?? connect(config, { exclusive: true, log }));
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
  const counts: { counts: DeploymentCounts; pool?: pg.Pool } = choices.localCounts
    ? { counts: new DeploymentCounts() }
    : sharedCounts(connection, warn, log);
  // metrics only when they are served (SPEC §14: off when ROWGATE_METRICS_PORT is unset)
  const metricsPort = config.ROWGATE_METRICS_PORT;
  const metrics =
    metricsPort === undefined
      ? undefined
      : new Metrics({ pool, counts: counts.counts, ...(reads ? { standbys: () => reads.status() } : {}) });
  const retentionDays = config.ROWGATE_EVENT_RETENTION_DAYS;
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
          mailer: choices.serve?.mailer ?? createMailer(config, log, connection.secret),
        })
      : undefined;
  // the organizations' request logs (SPEC §25): written in batches after the answers, 30 days in day partitions
  const requestLog = config.ROWGATE_REQUEST_LOG === 'on' ? new RequestLog({ metrics, log }) : undefined;
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
  let metricsServer: Server | undefined;
  let serving: Serving | undefined;
  const upkeep: Upkeep[] = [
    ['analysts-limits', () => watchAnalysts(pool, { log })],
    // revoked or expired SQL logins lose their sessions within a second on every host that serves them
    ['sql-logins', () => watchSqlLogins([pool, ...(reads?.pools() ?? [])], { log })],
    // a transaction left open anywhere on the database server is seen (a gauge) and told (a warning)
    [
      'oldest-transaction',
      () => watchOldestTransaction(pool, { log, report: metrics ? (seconds) => metrics.oldestTransaction.set(seconds) : undefined }),
    ],
    // the days ahead get their partitions of events, whether or not retention prunes
    ['event-partitions', () => keepEventPartitions(pool, { log })],
    // committed events get their feed positions (and their deliveries a lane) within a second
    ['event-feed', () => keepFeed(pool, { log })],
    ...(retentionDays === undefined ? [] : [['event-retention', () => keepEvents(pool, { days: retentionDays, log })] satisfies Upkeep]),
    // expired invitations marked, the audit trail's client addresses erased when due
    ['team-upkeep', () => keepTeams(pool, { log })],
    // the request log's days: a week ahead made, past 30 dropped
    ['request-log-partitions', () => keepRequestLogPartitions(pool, { log })],
  ];
  const services: Service[] = [
    service(
      'database',
      () => connection,
      () => (choices.database ? choices.database.close() : connection.embedded?.stop()),
    ),
    service(
      'pool',
      () => pool,
      () => pool.end(),
    ),
    ...(reads
      ? [
          service(
            'standbys',
            () => reads.start(),
            () => reads.stop(),
          ),
        ]
      : []),
    service(
      'rate-limit counts',
      () => counts.counts.start(),
      async () => {
        await counts.counts.stop();
        await counts.pool?.end();
      },
    ),
    ...(metrics && metricsPort !== undefined
      ? [
          service(
            'metrics',
            async () => (metricsServer = await listen(createMetricsServer(metrics), metricsPort, config.HOST)),
            (server) => {
              server.closeAllConnections();
              server.close();
            },
          ),
        ]
      : []),
    ...upkeep.filter(([name]) => !choices.without?.includes(name)).map(([name, run]) => service(name, run, (job) => job.stop())),
    // stopped after the requests drained: what they queued is written
    ...(requestLog
      ? [
          service(
            'request log',
            () => requestLog.use(pool),
            (log) => log.stop(),
          ),
        ]
      : []),
    // the requests drain while the deliveries and messages in flight end (within their 10 s and 20 s)
    together('requests and senders', [
      ...(webhooks
        ? [
            service(
              'webhooks',
              () => webhooks.start(),
              () => webhooks.stop(),
            ),
          ]
        : []),
      ...(mail
        ? [
            service(
              'mail',
              () => mail.start(),
              () => mail.stop(),
            ),
          ]
        : []),
      service(
        'api',
        async () =>
          (serving = await serve({
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
            sqlLoginUrl: withoutUser(config.ROWGATE_ANALYST_DATABASE_URL ?? connection.ownerUrl),
            mailer: choices.serve?.mailer,
            validateResponses: choices.serve?.validateResponses,
            operating: {
              logger,
              metrics,
              rateLimits: new RateLimits({
                perCredential: config.ROWGATE_RATE_LIMIT,
                perAddress: config.ROWGATE_ANONYMOUS_RATE_LIMIT,
                counts: counts.counts,
              }),
              trustedProxies: trustedProxies(config.ROWGATE_TRUST_PROXY),
              requestLog,
              ...choices.serve?.operating,
            },
          })),
        // no new connections; the requests in flight finish; then GraphQL lets go of the pool
        (api) => api.close(),
      ),
    ]),
  ];
  const started = await startServices(services);
  // the API starts last: once the list has started, it listens
  const api = serving as Serving;
  return {
    server: api.server,
    pool,
    url: api.url,
    metricsUrl: metricsServer ? `http://${config.HOST}:${(metricsServer.address() as { port: number }).port}/metrics` : undefined,
    stop: () => started.stop(),
  };
}

/**
 * The rate limits' counts, shared with every other server of the database, on a
 * connection of their own: an exchange never queues behind the requests it decides.
 */
function sharedCounts(connection: Connection, warn: (line: string) => void, log: (line: string) => void) {
  const pool = new pg.Pool({
    connectionString: connection.authenticatorUrl,
    max: 1,
    connectionTimeoutMillis: COUNTS_REPLACE_MS,
    statement_timeout: COUNTS_REPLACE_MS,
    // A peer gone without a word (a failover, a half-open socket) must not keep the one
    // connection: the exchange has its own deadline, and pruning and leaving theirs
    ...silentPeerDeadlines(COUNTS_REPLACE_MS),
    keepAliveInitialDelayMillis: 1_000,
    application_name: 'rowgate-rate-limits',
  });
  // a connection lost while idle is replaced at the next exchange, not a crash
  pool.on('error', () => {});
  const counts = DeploymentCounts.inDatabase(pool, {
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
  return { counts, pool };
}

/** The database URL SQL logins are given (the analysts' host when set, else the primary's), without a user or password. */
function withoutUser(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  url.username = '';
  url.password = '';
  return url.toString();
}
