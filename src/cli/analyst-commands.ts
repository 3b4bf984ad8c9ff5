// Analysts' PostgreSQL logins (SPEC §15): granted, revoked and listed. The role DDL
// runs on a connection that may create roles; src/db/analysts.ts is loaded only
// when one of these runs.
import type { Config } from '../config.ts';
import type { Connection } from '../db/connect.ts';
import { embeddedUrl } from '../db/embedded.ts';
import { type CommandSpec, count, type OptionSpec, type Options, seconds, UsageError, userIdOption } from './command-spec.ts';

const analysts = () => import('../db/analysts.ts');

const loginOption: OptionSpec = { flags: '--login <name>', description: "the analyst's PostgreSQL login role", required: true };

/** SPEC §15's per-analyst bounds; those left out take grantAnalyst's defaults (5 connections, 60 s, 60 s). */
const analystLimitOptions: OptionSpec[] = [
  { flags: '--connection-limit <n>', description: 'connections the analyst may hold at once (default 5)', parse: count },
  { flags: '--statement-timeout <seconds>', description: "the analyst's statement timeout (default 60)", parse: seconds },
  {
    flags: '--idle-in-transaction-timeout <seconds>',
    description: 'how long a session of the analyst may idle inside a transaction (default 60)',
    parse: seconds,
  },
];

function analystLimits(o: Options) {
  const limits = {
    connectionLimit: o.connectionLimit as number | undefined,
    statementTimeoutMs: o.statementTimeout === undefined ? undefined : (o.statementTimeout as number) * 1000,
    idleInTransactionTimeoutMs: o.idleInTransactionTimeout === undefined ? undefined : (o.idleInTransactionTimeout as number) * 1000,
  };
  return Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined));
}

/**
 * A connection that may create roles, for the analysts' LOGIN roles:
 * ROOT_DATABASE_URL, else the embedded database's superuser.
 */
function rootUrl(connection: Connection, config: Config): string {
  if (config.ROOT_DATABASE_URL) return config.ROOT_DATABASE_URL;
  if (connection.embedded) return embeddedUrl(connection.embedded.state, 'superuser', 'postgres');
  throw new UsageError(
    'analysts commands create and drop LOGIN roles: set ROOT_DATABASE_URL to a superuser ' +
      '(or a role with CREATEROLE and ADMIN OPTION on rowgate_analyst) of the DATABASE_URL server',
  );
}

export const analystCommands: Record<string, CommandSpec> = {
  'analysts grant': {
    description:
      'a LOGIN role bound to the user, reading what it reads: {login, password, database_url} (needs ROOT_DATABASE_URL or the embedded database)',
    options: [userIdOption, loginOption, ...analystLimitOptions],
    databaseOnly: true,
    ownsRoot: true,
    run: async (_db, o, c, config) => {
      const { grantAnalyst, analystUrl } = await analysts();
      const { login, password, database_url } = await grantAnalyst({
        ownerUrl: c.ownerUrl,
        rootUrl: rootUrl(c, config),
        userId: o.userId as string,
        login: o.login as string,
        limits: analystLimits(o),
      });
      // the same login reads a hot standby too (roles and bindings replicate): one URL per standby
      const standby_database_urls = config.ROWGATE_READ_DATABASE_URLS.map((url) => analystUrl(url, login, password));
      return { login, password, database_url, ...(standby_database_urls.length ? { standby_database_urls } : {}) };
    },
  },
  'analysts revoke': {
    description: 'unbind an analyst and drop its role',
    options: [loginOption],
    databaseOnly: true,
    ownsRoot: true,
    run: async (_db, o, c, config) =>
      (await analysts()).revokeAnalyst({ ownerUrl: c.ownerUrl, rootUrl: rootUrl(c, config), login: o.login as string }),
  },
  'analysts list': {
    description: 'the analysts bound in this database',
    databaseOnly: true,
    run: async (_db, _o, c) => (await analysts()).listAnalysts(c.ownerUrl),
  },
};
