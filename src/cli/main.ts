#!/usr/bin/env node
// `npx rowgate <command>`: operator commands (SPEC §10). JSON on stdout; works
// against DATABASE_URL or the embedded database of ROWGATE_HOME, running or not.
import { parseArgs } from 'node:util';
import pg from 'pg';
import { AnalystError, analystUrl, grantAnalyst, listAnalysts, revokeAnalyst } from '../db/analysts.ts';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { migrationStatus } from '../db/setup.ts';
import { embeddedUrl } from '../db/embedded.ts';
import { connect, type Connection } from '../db/connect.ts';
import { generateToken, hashToken } from '../auth/tokens.ts';
import { UUID } from '../resources/fields.ts';

type Options = Record<string, string | boolean | undefined>;
type Command = (db: pg.Client, options: Options, connection: Connection, config: Config) => Promise<unknown>;

interface CommandSpec {
  usage: string;
  run: Command;
  /** true: applies the migrations (db migrate); false: must not (db status reports on them); default: only the embedded database is migrated */
  migrate?: boolean;
  /** true: needs only DATABASE_URL (no AUTH_DATABASE_URL, no ROWGATE_SECRET): a DBA's command */
  databaseOnly?: boolean;
  /**
   * true: ROOT_DATABASE_URL is for the command itself (role DDL), so connecting
   * does not also rerun the roles script with it (cluster-wide ALTER ROLEs that
   * commands run side by side would race on)
   */
  ownsRoot?: boolean;
}

class UsageError extends Error {}

function required(options: Options, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || !value) throw new UsageError(`--${name} is required`);
  return value;
}

/** --user-id, checked before it reaches SQL (a malformed id is bad usage, not a database error) */
function userId(options: Options): string {
  const value = required(options, 'user-id');
  if (!UUID.test(value)) throw new UsageError(`--user-id must be a uuid, got ${JSON.stringify(value)}`);
  return value;
}

async function one<T extends object>(db: pg.Client, text: string, values: unknown[]): Promise<T> {
  const { rows } = await db.query<T>(text, values);
  if (!rows[0]) throw new UsageError('not found');
  return rows[0];
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

const commands: Record<string, CommandSpec> = {
  // the platform-admin flag is the row of rowgate_private.platform_admins (migration 000003)
  'users create': {
    usage: '--email E [--name N] [--admin]',
    run: (db, o) =>
      one(
        db,
        `with u as (insert into rowgate.users (email, name) values (lower($1), $2) returning id, email, name),
           a as (insert into rowgate_private.platform_admins (user_id) select id from u where $3::boolean)
         select id, email, name, $3::boolean as is_admin from u`,
        [required(o, 'email'), o.name ?? null, o.admin === true],
      ),
  },
  'users set-admin': {
    usage: '--user-id U',
    run: (db, o) =>
      one(
        db,
        `with u as (select id from rowgate.users where id = $1 and deleted_at is null),
           a as (insert into rowgate_private.platform_admins (user_id) select id from u on conflict (user_id) do nothing)
         select id, true as is_admin from u`,
        [userId(o)],
      ),
  },
  'sessions create': {
    usage: '--user-id U',
    run: async (db, o, c) => {
      const token = generateToken('web_session');
      const session = await one<{ expires_at: string }>(
        db,
        `select s.expires_at from rowgate.users u,
           rowgate_private.issue_user_session(u.id, $2, interval '31 days') s
         where u.id = $1 and u.deleted_at is null`,
        [userId(o), hashToken(c.secret, token)],
      );
      return { token, expires_at: session.expires_at };
    },
  },
  'tokens create': {
    usage: '--user-id U --scopes a,b [--comment C] [--expires-in SECONDS]',
    run: async (db, o, c) => {
      const token = generateToken('personal_access_token');
      const scopes = required(o, 'scopes')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      if (!scopes.length) throw new UsageError('--scopes needs at least one scope');
      const expiresIn = o['expires-in'] === undefined ? null : Number(o['expires-in']);
      if (expiresIn !== null && !(Number.isInteger(expiresIn) && expiresIn > 0))
        throw new UsageError('--expires-in must be a positive integer');
      const row = await one<object>(
        db,
        `select t.id, t.comment, t.scopes, t.expires_at from rowgate.users u,
           rowgate_private.issue_personal_access_token(u.id, $2, $3, now() + make_interval(secs => $4), $5) t
         where u.id = $1 and u.deleted_at is null`,
        [userId(o), (o.comment as string) ?? 'created by the operator CLI', scopes, expiresIn, hashToken(c.secret, token)],
      );
      return { ...row, token };
    },
  },
  'analysts grant': {
    usage:
      '--user-id U --login NAME (a LOGIN role bound to the user, reading what it reads; needs ROOT_DATABASE_URL or the embedded database)',
    databaseOnly: true,
    ownsRoot: true,
    run: async (_db, o, c, config) => {
      const { login, password, database_url } = await grantAnalyst({
        ownerUrl: c.ownerUrl,
        rootUrl: rootUrl(c, config),
        userId: userId(o),
        login: required(o, 'login'),
      });
      // the same login reads a hot standby too (roles and bindings replicate): one URL per standby
      const standby_database_urls = config.ROWGATE_READ_DATABASE_URLS.map((url) => analystUrl(url, login, password));
      return { login, password, database_url, ...(standby_database_urls.length ? { standby_database_urls } : {}) };
    },
  },
  'analysts revoke': {
    usage: '--login NAME (unbinds the analyst and drops its role)',
    databaseOnly: true,
    ownsRoot: true,
    run: (_db, o, c, config) => revokeAnalyst({ ownerUrl: c.ownerUrl, rootUrl: rootUrl(c, config), login: required(o, 'login') }),
  },
  'analysts list': {
    usage: '(the analysts bound in this database)',
    databaseOnly: true,
    run: (_db, _o, c) => listAnalysts(c.ownerUrl),
  },
  'mail outbox': {
    usage: '[--to EMAIL] (the latest messages of the development outbox, kept when no SMTP_URL is set)',
    run: async (db, o, _c, config) => {
      if (config.SMTP_URL) throw new UsageError('SMTP_URL is set: mail goes to that server, and the development outbox stays empty');
      const to = typeof o.to === 'string' ? o.to : null;
      const { rows } = await db.query(
        `select recipient as "to", subject, body as text, created_at from rowgate_private.mail_outbox
         where $1::text is null or recipient = lower($1) order by created_at desc, id limit 20`,
        [to],
      );
      return rows;
    },
  },
  'db migrate': {
    usage: '(applies the committed migrations; start-up does it too)',
    databaseOnly: true,
    migrate: true,
    run: async () => ({ migrated: true }),
  },
  'db status': {
    usage: '(exit code 1 when migrations are pending or migrations/current/ is not empty)',
    migrate: false,
    databaseOnly: true,
    run: async (_db, _o, c) => {
      // graphile-migrate's status insists on a shadow database URL, though it never connects to it
      if (!process.env.SHADOW_DATABASE_URL) {
        const shadow = new URL(c.ownerUrl);
        shadow.pathname = `${shadow.pathname}_shadow`;
        process.env.SHADOW_DATABASE_URL = shadow.toString();
      }
      const status = await migrationStatus(c.ownerUrl);
      const pending = status.remainingMigrations ?? [];
      if (pending.length || status.hasCurrentMigration) process.exitCode = 1;
      return { pending_migrations: pending, current_migration_not_empty: status.hasCurrentMigration };
    },
  },
  'db urls': {
    usage: "(the embedded database's connection URLs, for graphile-migrate and psql in development)",
    run: async (_db, _o, c) => {
      if (!c.embedded) return { DATABASE_URL: c.ownerUrl, AUTH_DATABASE_URL: c.authenticatorUrl };
      const { state } = c.embedded;
      return {
        DATABASE_URL: c.ownerUrl,
        AUTH_DATABASE_URL: c.authenticatorUrl,
        SHADOW_DATABASE_URL: embeddedUrl(state, 'owner', 'rowgate_shadow'),
        ROOT_DATABASE_URL: embeddedUrl(state, 'superuser', 'postgres'),
      };
    },
  },
};

function help() {
  return ['usage: rowgate <command> [options]', ...Object.entries(commands).map(([name, c]) => `  ${name} ${c.usage}`)].join('\n');
}

/**
 * The configuration; a DBA's commands (migrations, analysts) need only
 * DATABASE_URL, not the server's AUTH_DATABASE_URL and ROWGATE_SECRET.
 */
function commandConfig(command: CommandSpec): Config {
  const env = process.env;
  if (!command.databaseOnly || !env.DATABASE_URL) return loadConfig(env);
  const config = loadConfig({
    ...env,
    AUTH_DATABASE_URL: env.AUTH_DATABASE_URL || env.DATABASE_URL,
    ROWGATE_SECRET: env.ROWGATE_SECRET || 'x'.repeat(32),
  });
  return { ...config, AUTH_DATABASE_URL: env.AUTH_DATABASE_URL || undefined, ROWGATE_SECRET: env.ROWGATE_SECRET || undefined };
}

async function main(argv: string[]) {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      email: { type: 'string' },
      name: { type: 'string' },
      admin: { type: 'boolean' },
      'user-id': { type: 'string' },
      scopes: { type: 'string' },
      comment: { type: 'string' },
      'expires-in': { type: 'string' },
      login: { type: 'string' },
      to: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const name = positionals.slice(0, 2).join(' ');
  const command = commands[name];
  if (!command || values.help) {
    console.error(help());
    process.exitCode = command || values.help ? 0 : 2;
    return;
  }
  if (positionals.length > 2) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[2])}`);
  const config = commandConfig(command);
  const connectConfig = command.ownsRoot ? { ...config, ROOT_DATABASE_URL: undefined } : config;
  // The embedded database is brought up to date by any command (a newcomer's
  // convenience); a given DATABASE_URL only by `db migrate`: deploying the schema
  // is the operator's explicit step, never a side effect.
  const migrate = command.migrate ?? !config.DATABASE_URL;
  const connection = await connect(connectConfig, { exclusive: false, migrate });
  const db = new pg.Client({ connectionString: connection.ownerUrl });
  try {
    await db.connect();
    const result = await command.run(db, values, connection, config);
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await db.end();
    if (connection.embedded?.startedHere) await connection.embedded.stop();
  }
}

main(process.argv.slice(2)).catch((error) => {
  const code = (error as { code?: string } | null)?.code;
  // RG422: the database refused a value the operator gave (an unknown scope): bad usage too
  if (
    error instanceof UsageError ||
    error instanceof AnalystError ||
    error instanceof ConfigError ||
    code?.startsWith('ERR_PARSE_ARGS') ||
    code === 'RG422'
  ) {
    console.error(error instanceof ConfigError ? error.message : `rowgate: ${error.message}`);
    process.exitCode = 2;
  } else {
    const e = error as { message?: string; detail?: string };
    console.error(`rowgate: ${e.message ?? error}${e.detail ? ` (${e.detail})` : ''}`);
    process.exitCode = 1;
  }
});
