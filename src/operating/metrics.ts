// Prometheus metrics (SPEC §14), served at GET /metrics on ROWGATE_METRICS_PORT
// (off when unset), never on the API's port: what an operator scrapes is not
// for clients. Counted where it happens: requests and their durations by route
// template and status (the access log's middleware), the pool's connections at
// scrape time, refusals by the rate limits and by GraphQL's limits, and each
// hot standby's replay lag and whether reads go to it (SPEC §19), and the
// webhook delivery attempts this process made, by outcome (SPEC §17), and the
// age of the database server's oldest open transaction (src/upkeep/oldest-transaction.ts).
import { createServer, type Server } from 'node:http';
import type pg from 'pg';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { StandbyStatus } from '../db/read-replicas.ts';
import type { DeploymentCounts } from './deployment-counts.ts';

/** What the metrics count of one webhook delivery attempt (src/webhooks/post.ts's result) */
export interface WebhookAttempt {
  succeeded: boolean;
  durationMs: number;
}

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'rowgate_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly durations = new Histogram({
    name: 'rowgate_http_request_duration_seconds',
    help: 'Time from a request to its answer, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly rateLimitRefusals = new Counter({
    name: 'rowgate_rate_limit_refusals_total',
    help: 'Requests refused with 429 by a rate limit, by policy (default: per credential; anonymous: per address)',
    labelNames: ['policy'] as const,
    registers: [this.registry],
  });
  readonly graphqlRefusals = new Counter({
    name: 'rowgate_graphql_refusals_total',
    help: 'GraphQL requests refused by its limits, by extensions.code (QUERY_TOO_COMPLEX, BAD_USER_INPUT, TIMEOUT)',
    labelNames: ['code'] as const,
    registers: [this.registry],
  });
  readonly webhookAttempts = new Counter({
    name: 'rowgate_webhook_deliveries_total',
    help: 'Webhook delivery attempts made by this process, by outcome (succeeded: a 2xx within the timeout; failed: anything else, retried until the tenth)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly webhookDurations = new Histogram({
    name: 'rowgate_webhook_delivery_duration_seconds',
    help: 'Time from sending a webhook to its answer (or to giving up), by outcome',
    labelNames: ['outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly oldestTransaction = new Gauge({
    name: 'rowgate_oldest_transaction_seconds',
    help: "Age of the PostgreSQL server's oldest transaction holding an xid or a snapshot, in any database (0: none), as last read (every 10 s)",
    registers: [this.registry],
  });

  /** `standbys`: the read replicas' state at scrape time (src/db/read-replicas.ts) */
  constructor(options: { pool?: pg.Pool; standbys?: () => StandbyStatus[]; counts?: DeploymentCounts; processMetrics?: boolean } = {}) {
    const pool = options.pool;
    if (pool) {
      new Gauge({
        name: 'rowgate_pool_connections',
        help: "The server pool's connections to PostgreSQL: in use, idle, and requests waiting for one",
        labelNames: ['state'] as const,
        registers: [this.registry],
        collect() {
          this.set({ state: 'in_use' }, pool.totalCount - pool.idleCount);
          this.set({ state: 'idle' }, pool.idleCount);
          this.set({ state: 'waiting' }, pool.waitingCount);
        },
      });
    }
    const standbys = options.standbys;
    if (standbys) {
      new Gauge({
        name: 'rowgate_standby_replay_lag_seconds',
        help: "How far each hot standby's replay is behind the primary (absent while unknown: unreachable, or not yet probed)",
        labelNames: ['standby'] as const,
        registers: [this.registry],
        collect() {
          this.reset();
          for (const s of standbys()) if (s.lag_ms !== null) this.set({ standby: s.name }, s.lag_ms / 1000);
        },
      });
      new Gauge({
        name: 'rowgate_standby_available',
        help: 'Whether reads go to each hot standby now (1) or to the primary (0: lag past ROWGATE_READ_MAX_LAG_MS, or unreachable)',
        labelNames: ['standby'] as const,
        registers: [this.registry],
        collect() {
          for (const s of standbys()) this.set({ standby: s.name }, s.available ? 1 : 0);
        },
      });
    }
    const counts = options.counts;
    if (counts) {
      new Gauge({
        name: 'rowgate_clock_offset_seconds',
        help: "The database's clock minus this machine's, as the rate limits measure it (their windows follow the database's clock)",
        registers: [this.registry],
        collect() {
          this.set(counts.offsetMs / 1000);
        },
      });
      new Counter({
        name: 'rowgate_rate_limit_stalled_seconds_total',
        help: 'Time the shared rate-limit counts did not answer in time, each key held to a local share of its allowance meanwhile',
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc(counts.stalledSeconds);
        },
      });
    }
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'rowgate_' });
  }

  /** One recorded webhook attempt. */
  webhookAttempt(result: WebhookAttempt) {
    const labels = { outcome: result.succeeded ? 'succeeded' : 'failed' };
    this.webhookAttempts.inc(labels);
    this.webhookDurations.observe(labels, result.durationMs / 1000);
  }

  /** One answered request. */
  observe(method: string, route: string, status: number, seconds: number) {
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.durations.observe(labels, seconds);
  }
}

/** The metrics server: GET /metrics, nothing else. */
export function createMetricsServer(metrics: Metrics): Server {
  return createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found: GET /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType }).end(text),
      (error: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`${error.message}\n`),
    );
  });
}
