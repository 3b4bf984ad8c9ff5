// Starting and stopping rowgate: the database (embedded or given), the roles and
// migrations, the pool, the HTTP server; stopping in the reverse order.
import type { Server } from 'node:http';
import type pg from 'pg';
import { createApp } from './app.ts';
import type { Config } from './config.ts';
import { createPool } from './database.ts';
import { DATABASE_NAME, embeddedUrl, openEmbeddedDatabase, type EmbeddedDatabase } from './embedded-database.ts';
import { ensureDatabase, ensureRoles, migrateDatabase } from './database-setup.ts';
import { createGraphql, type Graphql } from './graphql.ts';
import { allRoutes } from './routes.ts';

export interface Connection {
  ownerUrl: string;
  authenticatorUrl: string;
  secret: string;
  embedded?: EmbeddedDatabase;
}

/** The database the configuration names, or the embedded one; roles and migrations applied. */
export async function connect(config: Config, options: { exclusive: boolean; log?: (l: string) => void }): Promise<Connection> {
  if (config.DATABASE_URL) {
    if (config.ROOT_DATABASE_URL) await ensureRoles(config.ROOT_DATABASE_URL, {});
    await migrateDatabase(config.DATABASE_URL);
    return { ownerUrl: config.DATABASE_URL, authenticatorUrl: config.AUTH_DATABASE_URL!, secret: config.ROWGATE_SECRET! };
  }
  const embedded = await openEmbeddedDatabase({
    home: config.ROWGATE_HOME,
    port: config.ROWGATE_DB_PORT,
    exclusive: options.exclusive,
    log: options.log,
  });
  try {
    const { state } = embedded;
    const superuser = embeddedUrl(state, 'superuser', 'postgres');
    await ensureRoles(superuser, { owner: state.ownerPassword, authenticator: state.authenticatorPassword });
    await ensureDatabase(superuser, DATABASE_NAME);
    await migrateDatabase(embeddedUrl(state, 'owner'));
    return {
      ownerUrl: embeddedUrl(state, 'owner'),
      authenticatorUrl: embeddedUrl(state, 'authenticator'),
      secret: config.ROWGATE_SECRET ?? state.secret,
      embedded,
    };
  } catch (error) {
    await embedded.stop();
    throw error;
  }
}

export interface Running {
  server: Server;
  pool: pg.Pool;
  url: string;
  stop(): Promise<void>;
}

export async function startServer(config: Config, log: (line: string) => void = console.log): Promise<Running> {
  const connection = await connect(config, { exclusive: true, log });
  const pool = createPool({
    connectionString: connection.authenticatorUrl,
    max: config.ROWGATE_POOL_SIZE,
    statementTimeoutMs: config.ROWGATE_STATEMENT_TIMEOUT_MS,
  });
  let graphql: Graphql | undefined;
  const server = await (async () => {
    graphql = await createGraphql({ pool, secret: connection.secret, development: config.NODE_ENV === 'development', log });
    const app = createApp({ pool, secret: connection.secret, routes: allRoutes(pool), log, mounts: [graphql.mount] });
    return new Promise<Server>((resolve, reject) => {
      const s = app.listen(config.PORT, config.HOST, (error?: Error) => (error ? reject(error) : resolve(s)));
    });
  })().catch(async (error) => {
    await graphql?.release();
    await pool.end();
    await connection.embedded?.stop();
    throw error;
  });
  server.keepAliveTimeout = 5_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  let stopping: Promise<void> | undefined;
  return {
    server,
    pool,
    url: `http://${config.HOST}:${port}`,
    stop: () =>
      (stopping ??= (async () => {
        // no new connections; in-flight requests finish; idle keep-alive sockets close
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await graphql?.release();
        await pool.end();
        await connection.embedded?.stop();
      })()),
  };
}
