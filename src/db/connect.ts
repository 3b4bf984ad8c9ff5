// Reaching the database the configuration names, or the embedded one: its
// roles and migrations made ready. The server and the CLI both start here.
import type { Config } from '../config.ts';
import { DATABASE_NAME, embeddedUrl, openEmbeddedDatabase, type EmbeddedDatabase } from './embedded.ts';
import { ensureDatabase, ensureRoles, hardenDatabase, migrateDatabase } from './setup.ts';

export interface Connection {
  ownerUrl: string;
  authenticatorUrl: string;
  secret: string;
  embedded?: EmbeddedDatabase;
}

/**
 * The database the configuration names, or the embedded one, with its roles and
 * (unless `migrate` is false) the committed migrations applied.
 */
export async function connect(
  config: Config,
  options: { exclusive: boolean; migrate?: boolean; log?: (l: string) => void; create?: boolean },
): Promise<Connection> {
  const migrate = options.migrate ?? true;
  if (config.DATABASE_URL) {
    if (config.ROOT_DATABASE_URL) {
      await ensureRoles(config.ROOT_DATABASE_URL, {});
      await hardenDatabase(config.ROOT_DATABASE_URL, new URL(config.DATABASE_URL).pathname.slice(1));
    }
    if (migrate) await migrateDatabase(config.DATABASE_URL);
    return { ownerUrl: config.DATABASE_URL, authenticatorUrl: config.AUTH_DATABASE_URL ?? '', secret: config.ROWGATE_SECRET ?? '' };
  }
  const embedded = await openEmbeddedDatabase({
    home: config.ROWGATE_HOME,
    port: config.ROWGATE_DB_PORT,
    exclusive: options.exclusive,
    log: options.log,
    create: options.create,
  });
  try {
    const { state } = embedded;
    const superuser = embeddedUrl(state, 'superuser', 'postgres');
    await ensureRoles(superuser, { owner: state.ownerPassword, authenticator: state.authenticatorPassword });
    await ensureDatabase(superuser, DATABASE_NAME);
    await hardenDatabase(superuser, DATABASE_NAME);
    if (migrate) await migrateDatabase(embeddedUrl(state, 'owner'));
    return {
      ownerUrl: embeddedUrl(state, 'owner'),
      // the server's own connections go through the socket when there is one
      authenticatorUrl: embeddedUrl(state, 'authenticator', DATABASE_NAME, embedded.socketDir),
      secret: config.ROWGATE_SECRET ?? state.secret,
      embedded,
    };
  } catch (error) {
    await embedded.stop();
    throw error;
  }
}
