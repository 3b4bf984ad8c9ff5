// `npm start`: serve the API; Ctrl-C / SIGTERM stops the HTTP server, then the database.
import { ConfigError, loadConfig } from './config.ts';
import { startServer } from './http/server.ts';

try {
  const config = loadConfig();
  const running = await startServer(config);
  console.log(`rowgate listening on ${running.url} (API reference: ${running.url}/docs)`);
  const shutdown = (signal: string) => {
    console.log(`rowgate: ${signal} received, shutting down`);
    const force = setTimeout(() => {
      console.error('rowgate: shutdown took longer than 20 s, exiting');
      process.exit(1);
    }, 20_000);
    force.unref();
    running.stop().then(
      () => {
        console.log('rowgate: stopped');
        process.exit(0);
      },
      (error) => {
        console.error('rowgate: error while stopping:', error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : error instanceof Error ? error.message : error);
  process.exit(1);
}
