// `npm start`: serve the API; Ctrl-C / SIGTERM stops the HTTP server, then the database.
// Everything the server says is a JSON line on stdout (pino; human-readable in development).
// One process; more capacity is more instances on the same database
// (docs/operations.md): nothing passes between them.
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
// requests have drained and its database has stopped; the bound holds instead
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
  logger = createLogger({ level: config.LOG_LEVEL, pretty: config.NODE_ENV === 'development' });
  const log = logger;
  const running = await (await import('./server/start.ts')).startServer(config, { logger: log });
  log.info(
    { url: running.url, metrics: running.metricsUrl ?? null },
    `rowgate listening on ${running.url} (API reference: ${running.url}/docs)`,
  );
  await flushLog(log);
  stopOnSignal = (signal: string) => {
    log.info(`rowgate: ${signal} received, shutting down`);
    running.stop().then(
      () => {
        log.info('rowgate: stopped');
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
