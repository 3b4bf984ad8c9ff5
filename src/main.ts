// `npm start`: serve the API; Ctrl-C / SIGTERM stops the HTTP server, then the database.
// Everything the server says is a JSON line on stdout (pino; human-readable in development).
// With ROWGATE_WORKERS > 1 this process is the primary of that many server
// processes (src/http/cluster.ts), and each of them runs this file as a worker.
import cluster from 'node:cluster';
import { ConfigError, loadConfig } from './config.ts';
import { createLogger, flushLog, type Logger } from './operating/logger.ts';

let logger: Logger | undefined;
const exit = (code: number) => (logger ? flushLog(logger) : Promise.resolve()).finally(() => process.exit(code));

/** How long a stop may take, from the first signal (a start that hangs included) */
const STOP_BOUND_MS = 20_000;

/** The signal that asked for a stop, from the first on: one during the start is acted on once started */
let signalled: string | undefined;
let stopOnSignal: ((signal: string) => void) | undefined;
// Handlers from the first moment, for every signal after the first too: a
// second Ctrl-C or SIGTERM while stopping must not kill the process before its
// workers have drained and its database has stopped; the bound holds instead
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (signalled) return;
    signalled = signal;
    const force = setTimeout(() => {
      logger?.error(`rowgate: the stop took longer than ${STOP_BOUND_MS / 1000} s, exiting`);
      void exit(1);
    }, STOP_BOUND_MS);
    force.unref();
    stopOnSignal?.(signal);
  });
}

try {
  const config = loadConfig();
  const worker = cluster.isWorker;
  // with workers, every process of the cluster writes to the same stdout
  logger = createLogger({
    level: config.LOG_LEVEL,
    pretty: config.NODE_ENV === 'development',
    sharedOutput: worker || config.ROWGATE_WORKERS > 1,
    worker: cluster.worker?.id,
  });
  const log = logger;
  // each process loads what it runs: a primary serves no requests, so it loads no server (a third less memory)
  const running = worker
    ? await (await import('./http/cluster-worker.ts')).startWorker(config, log)
    : config.ROWGATE_WORKERS > 1
      ? await (await import('./http/cluster.ts')).startPrimary(config, log)
      : await (await import('./http/server.ts')).startServer(config, log);
  // a worker is announced by its primary, which says it once for all of them
  if (!worker) {
    const workers = 'workers' in running ? running.workers : 1;
    log.info(
      { url: running.url, metrics: running.metricsUrl ?? null, workers },
      `rowgate listening on ${running.url} (API reference: ${running.url}/docs)${workers > 1 ? ` with ${workers} workers` : ''}`,
    );
  }
  await flushLog(log);
  stopOnSignal = (signal: string) => {
    if (!worker) log.info(`rowgate: ${signal} received, shutting down`);
    running.stop().then(
      () => {
        if (!worker) log.info('rowgate: stopped');
        void exit(0);
      },
      (error) => {
        log.error({ err: error }, 'rowgate: error while stopping');
        void exit(1);
      },
    );
  };
  if (signalled) stopOnSignal(signalled);
} catch (error) {
  // a configuration error (or a start that failed) is said plainly, on stderr
  console.error(error instanceof ConfigError ? error.message : error instanceof Error ? error.message : error);
  await exit(1);
}
