// Analysts' PostgreSQL logins (SPEC §15): granted, revoked and listed on the owner's
// connection (DATABASE_URL, or the embedded database's owner), through
// rowgate_sql_admin's functions: no superuser, no ROOT_DATABASE_URL.
// src/db/analysts.ts is loaded only when one of these runs.
import { type CommandSpec, count, type OptionSpec, type Options, seconds, userIdOption } from './command-spec.ts';

const analysts = () => import('../db/analysts.ts');

const loginOption: OptionSpec = { flags: '--login <name>', description: "the analyst's PostgreSQL login role", required: true };

/** SPEC §15's per-analyst bounds; those left out take rowgate_private.create_analyst_login's defaults (5 connections, 60 s, 60 s). */
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

export const analystCommands: Record<string, CommandSpec> = {
  'analysts grant': {
    description:
      'a LOGIN role bound to the user, reading what it reads: {login, password, database_url} (needs DATABASE_URL as rowgate_owner, or the embedded database)',
    options: [userIdOption, loginOption, ...analystLimitOptions],
    databaseOnly: true,
    run: async (_db, o, c, config) => {
      const { grantAnalyst, analystUrl } = await analysts();
      const { login, password, database_url } = await grantAnalyst({
        ownerUrl: c.ownerUrl,
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
    run: async (_db, o, c) => (await analysts()).revokeAnalyst({ ownerUrl: c.ownerUrl, login: o.login as string }),
  },
  'analysts list': {
    description: 'the analysts bound in this database',
    databaseOnly: true,
    run: async (_db, _o, c) => (await analysts()).listAnalysts(c.ownerUrl),
  },
};
