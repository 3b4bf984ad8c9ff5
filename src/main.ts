// `npm start`: serve the API; Ctrl-C / SIGTERM stops the HTTP server, then the database.
// Everything the server says is a JSON line on stdout (pino; human-readable in development).
import { ConfigError, loadConfig } from './config.ts';
import { startServer } from './http/server.ts';
import { createLogger, flushLog, type Logger } from './operating/logger.ts';

let logger: Logger | undefined;
const exit = (code: number) => (logger ? flushLog(logger) : Promise.resolve()).finally(() => process.exit(code));

try {
  const config = loadConfig();
  logger = createLogger({ level: config.LOG_LEVEL, pretty: config.NODE_ENV === 'development' });
  const log = logger;
  const running = await startServer(config, log);
  log.info(
    { url: running.url, metrics: running.metricsUrl ?? null },
    `rowgate listening on ${running.url} (API reference: ${running.url}/docs)`,
  );
  await flushLog(log);
  const shutdown = (signal: string) => {
    log.info(`rowgate: ${signal} received, shutting down`);
    const force = setTimeout(() => {
      log.error('rowgate: shutdown took longer than 20 s, exiting');
      void exit(1);
    }, 20_000);
    force.unref();
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
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
} catch (error) {
  // a configuration error (or a start that failed) is said plainly, on stderr
  console.error(error instanceof ConfigError ? error.message : error instanceof Error ? error.message : error);
  await exit(1);
}
