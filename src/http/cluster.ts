// Several server processes on one port (ROWGATE_WORKERS > 1, node:cluster).
// One Node process runs JavaScript on one core: a GraphQL page costs the
// server more than the database (docs/performance.md), so one process left a
// core idle. The primary makes the database ready once (the embedded one
// started, the migrations applied), forks the workers and hands each the
// connection over IPC (the secret in no environment), serves the metrics of
// them all, starts another when one dies, and on SIGTERM stops them (each
// drains its requests as a single server does) before it stops the database.
// The rate limits are counted once for all workers (src/operating/shared-counts.ts),
// and a write through one is told to the others (docs/decisions.md, "Workers").
// The workers' side: src/http/cluster-worker.ts.
import cluster, { type Worker } from 'node:cluster';
import type { Server } from 'node:http';
import type { Config } from '../config.ts';
import { connect } from '../db/connect.ts';
import { freePort } from '../db/embedded.ts';
import { lineLogger, type Logger } from '../operating/logger.ts';
import { ClusterMetrics, createClusterMetricsServer } from '../operating/metrics.ts';
import { RateLimits, WRONG_CODES_POLICY } from '../operating/rate-limit.ts';
import { countSpending, type Spent } from '../operating/shared-counts.ts';
import { followHandOffs } from './cluster-handoff.ts';
import { answer, request } from './cluster-ipc.ts';
import {
  type Listening,
  type News,
  RATE_COUNTS,
  RATE_REFUSED,
  type Ready,
  type Setup,
  TELL,
  TELL_EVERYONE,
  TELL_WAIT_MS,
} from './cluster-messages.ts';
import { listen } from './listen.ts';

export interface RunningCluster {
  url: string;
  metricsUrl?: string;
  workers: number;
  stop(): Promise<void>;
}

/** How long after a worker's death its replacement is forked; doubled while replacements fail to start, up to the most */
const RESTART_DELAY_MS = 1_000;
const RESTART_DELAY_MAX_MS = 30_000;
/** A worker that neither listens nor exits by then is stopped (and, once the cluster runs, replaced) */
const WORKER_START_MS = 60_000;

/** The pool each worker opens: ROWGATE_POOL_SIZE shared out among them (the configuration keeps it at least 1 each) */
export const workerPoolSize = (config: Config) => Math.max(1, Math.floor(config.ROWGATE_POOL_SIZE / config.ROWGATE_WORKERS));

const exitOf = (worker: Worker) => new Promise<void>((resolve) => (worker.isDead() ? resolve() : worker.once('exit', () => resolve())));

export async function startPrimary(config: Config, logger: Logger): Promise<RunningCluster> {
  const log = lineLogger(logger);
  const connection = await connect(config, { exclusive: true, log });
  const { ownerUrl, authenticatorUrl, secret } = connection;
  const setup: Setup = {
    type: 'rowgate:setup',
    connection: { ownerUrl, authenticatorUrl, secret },
    poolSize: workerPoolSize(config),
    port: config.PORT === 0 ? await freePort() : config.PORT,
  };
  // the workers' rate limits, counted once for the whole server
  const countSpent = countSpending(
    new RateLimits({ perCredential: config.ROWGATE_RATE_LIMIT, perAddress: config.ROWGATE_ANONYMOUS_RATE_LIMIT }).counts(),
  );
  const live = new Set<Worker>();
  /** the workers that listen and are connected: those a scrape asks */
  const listening = new Set<Worker>();
  const metrics = new ClusterMetrics(() => [...listening].filter((worker) => worker.isConnected()));
  let stopping = false;
  /** the workers whose server takes connections (node:cluster's round robin hands them one) */
  const serving = new Set<Worker>();

  const fork = () =>
    new Promise<{ url: string; pid?: number }>((resolve, reject) => {
      const worker = cluster.fork();
      live.add(worker);
      // a connection handed to a worker that dies, or handed back when none serves, is given to another or closed, never left waiting
      followHandOffs(worker, serving, () => [...serving].some((other) => other !== worker && other.isConnected()));
      let started = false;
      const timer = setTimeout(() => {
        logger.error({ pid: worker.process.pid }, `rowgate: a worker did not listen within ${WORKER_START_MS / 1000} s; stopping it`);
        worker.process.kill('SIGKILL');
      }, WORKER_START_MS);
      // a message to a worker whose channel has just closed is an 'error' on it, not an exception where it was sent
      worker.on('error', () => {});
      worker.on('disconnect', () => listening.delete(worker));
      // a worker's write: the others take in what it changed before it answers
      answer(worker, TELL_EVERYONE, (message: { news: News }) =>
        Promise.all(
          [...listening]
            .filter((other) => other !== worker && other.isConnected())
            .map((other) => request(other, TELL, { news: message.news }, TELL_WAIT_MS)),
        ),
      );
      answer(worker, RATE_COUNTS, async (message: { spent: Spent[] }) => {
        const standings = await countSpent(message.spent);
        // told to every worker (this one too: its answer may come after its request's deadline): a key this
        // spending took past its allowance, refused from now on, and the wrong codes' standings whatever they
        // say (a right code's point back lifts a refusal)
        const told = standings.filter(([policy, , , refusedUntil]) => refusedUntil > 0 || policy === WRONG_CODES_POLICY);
        if (told.length) {
          for (const each of listening) if (each.isConnected()) each.send({ type: RATE_REFUSED, refused: told }, () => {});
        }
        return standings;
      });
      worker.on('message', (message: Ready | Listening) => {
        if (message?.type === 'rowgate:ready') worker.send(setup, () => {});
        if (message?.type !== 'rowgate:listening') return;
        started = true;
        clearTimeout(timer);
        listening.add(worker);
        resolve({ url: message.url, pid: worker.process.pid });
      });
      worker.once('exit', (code, signal) => {
        clearTimeout(timer);
        live.delete(worker);
        listening.delete(worker);
        metrics.retire(worker.id);
        if (!started) {
          reject(new Error(`a worker exited (${signal ?? code}) before it listened`));
          return;
        }
        if (stopping) return;
        logger.error({ pid: worker.process.pid, code, signal }, 'rowgate: a worker exited; starting another');
        replace(RESTART_DELAY_MS);
      });
    });

  /** A replacement, after `delay`; one that fails to start (the database full, a kill while it starts) is tried again, later */
  const replace = (delay: number) => {
    setTimeout(() => {
      if (stopping) return;
      fork().then(
        ({ pid }) => logger.info({ pid }, 'rowgate: the replacement worker listens'),
        (error: unknown) => {
          if (stopping) return;
          const next = Math.min(2 * delay, RESTART_DELAY_MAX_MS);
          logger.error({ err: error, retry_ms: next }, 'rowgate: the replacement worker did not start; trying again');
          replace(next);
        },
      );
    }, delay).unref();
  };

  const stopWorkers = async () => {
    stopping = true;
    const exits = [...live].map(exitOf);
    for (const worker of live) worker.process.kill('SIGTERM');
    await Promise.all(exits);
  };

  let metricsServer: Server | undefined;
  try {
    const urls = (await Promise.all(Array.from({ length: config.ROWGATE_WORKERS }, fork))).map((w) => w.url);
    if (config.ROWGATE_METRICS_PORT !== undefined) {
      metricsServer = await listen(createClusterMetricsServer(metrics), config.ROWGATE_METRICS_PORT, config.HOST);
    }
    let stopped: Promise<void> | undefined;
    return {
      url: urls[0]!,
      metricsUrl: metricsServer ? `http://${config.HOST}:${(metricsServer.address() as { port: number }).port}/metrics` : undefined,
      workers: urls.length,
      stop: () =>
        (stopped ??= (async () => {
          metricsServer?.closeAllConnections();
          metricsServer?.close();
          await stopWorkers();
          await connection.embedded?.stop();
        })()),
    };
  } catch (error) {
    metricsServer?.close();
    await stopWorkers();
    await connection.embedded?.stop();
    throw error;
  }
}
