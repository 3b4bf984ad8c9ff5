// The operator commands (SPEC §10): what each takes, checked before any database
// is reached, and what it does there. src/cli/main.ts turns them into the
// command line.
// The database's modules are imported by the commands that use them, when they
// run, so that the command line is checked before they load.
import { InvalidArgumentError } from 'commander';
import type pg from 'pg';
import { z } from 'zod';
import type { Config } from '../config.ts';
import type { Connection } from '../db/connect.ts';
import { UUID } from '../core/fields.ts';

import { generateToken, hashToken } from '../auth/tokens.ts';
import { embeddedUrl } from '../db/embedded.ts';

const analysts = () => import('../db/analysts.ts');

/** Bad usage the database revealed (an unknown user): exit code 2, like a parsing error. */
export class UsageError extends Error {}

export type Options = Record<string, unknown>;

interface OptionSpec {
  flags: string;
  description: string;
  required?: boolean;
  /** checks (and converts) the value when the command line is read, before any database */
  parse?: (value: string) => unknown;
}

export interface CommandSpec {
  description: string;
  options?: OptionSpec[];
  run: (db: pg.Client, options: Options, connection: Connection, config: Config) => Promise<unknown>;
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
  /** true: may create the embedded database (db init); every other command refuses a ROWGATE_HOME without one */
  createsDatabase?: boolean;
  /** true: the result is a list printed one JSON value a line (db lint's findings), nothing when empty */
  lines?: boolean;
}

const emailSchema = z.email().max(320);

function email(value: string): string {
  if (!emailSchema.safeParse(value).success) throw new InvalidArgumentError('Not an e-mail address.');
  return value.toLowerCase();
}

function uuid(value: string): string {
  if (!UUID.test(value)) throw new InvalidArgumentError('Not a uuid.');
  return value;
}

function scopeList(value: string): string[] {
  const scopes = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!scopes.length) throw new InvalidArgumentError('At least one scope is needed.');
  return scopes;
}

function nameList(value: string): string[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!names.length) throw new InvalidArgumentError('At least one name is needed.');
  return names;
}

function seconds(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(n) || n <= 0)
    throw new InvalidArgumentError('Not a positive whole number of seconds.');
  return n;
}

const userIdOption: OptionSpec = { flags: '--user-id <uuid>', description: 'the user', required: true, parse: uuid };
const loginOption: OptionSpec = { flags: '--login <name>', description: "the analyst's PostgreSQL login role", required: true };

function count(value: string): number {
  if (!/^[0-9]{1,9}$/.test(value) || Number(value) <= 0) throw new InvalidArgumentError('Not a positive whole number.');
  return Number(value);
}

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

async function one<T extends object>(db: pg.Client, text: string, values: unknown[], missing: string): Promise<T> {
  const { rows } = await db.query<T>(text, values);
  if (!rows[0]) throw new UsageError(missing);
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

const noSuchUser = (o: Options) => `no user ${o.userId}`;

export const groups: Record<string, string> = {
  users: 'users of the API',
  sessions: 'web sessions',
  tokens: 'personal access tokens',
  analysts: "analysts' PostgreSQL logins (SPEC §15)",
  mail: 'the development outbox',
  db: 'the database: create, migrate, inspect',
  webhooks: 'webhook delivery (SPEC §17)',
};

export const commands: Record<string, CommandSpec> = {
  // the platform-admin flag is the row of rowgate_private.platform_admins (migration 000003)
  'users create': {
    description: 'create a user',
    options: [
      { flags: '--email <address>', description: 'the e-mail address it signs in with', required: true, parse: email },
      { flags: '--name <name>', description: 'its display name' },
      { flags: '--admin', description: 'a platform admin' },
    ],
    run: (db, o) =>
      one(
        db,
        `with u as (insert into rowgate.users (email, name) values ($1, $2) returning id, email, name),
           a as (insert into rowgate_private.platform_admins (user_id) select id from u where $3::boolean)
         select id, email, name, $3::boolean as is_admin from u`,
        [o.email, o.name ?? null, o.admin === true],
        'not created',
      ),
  },
  'users set-admin': {
    description: 'make a user a platform admin',
    options: [userIdOption],
    run: (db, o) =>
      one(
        db,
        `with u as (select id from rowgate.users where id = $1 and deleted_at is null),
           a as (insert into rowgate_private.platform_admins (user_id) select id from u on conflict (user_id) do nothing)
         select id, true as is_admin from u`,
        [o.userId],
        noSuchUser(o),
      ),
  },
  'sessions create': {
    description: 'create a web session for a user, lasting what signing in gives: {token, expires_at}',
    options: [userIdOption],
    run: async (db, o, c) => {
      const token = generateToken('web_session');
      const session = await one<{ expires_at: string }>(
        db,
        `select s.expires_at from rowgate.users u,
           rowgate_private.issue_web_session(u.id, $2) s
         where u.id = $1 and u.deleted_at is null`,
        [o.userId, hashToken(c.secret, token)],
        noSuchUser(o),
      );
      return { token, expires_at: session.expires_at };
    },
  },
  'tokens create': {
    description: 'create a personal access token for a user',
    options: [
      userIdOption,
      { flags: '--scopes <a,b>', description: 'its scopes, comma-separated', required: true, parse: scopeList },
      { flags: '--comment <text>', description: 'what it is for' },
      { flags: '--expires-in <seconds>', description: 'its lifetime (default: none)', parse: seconds },
    ],
    run: async (db, o, c) => {
      const token = generateToken('personal_access_token');
      const row = await one<object>(
        db,
        `select t.id, t.comment, t.scopes, t.expires_at from rowgate.users u,
           rowgate_private.issue_personal_access_token(u.id, $2, $3, now() + make_interval(secs => $4), $5) t
         where u.id = $1 and u.deleted_at is null`,
        [o.userId, o.comment ?? 'created by the operator CLI', o.scopes, o.expiresIn ?? null, hashToken(c.secret, token)],
        noSuchUser(o),
      );
      return { ...row, token };
    },
  },
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
  'mail outbox': {
    description: 'the latest messages of the development outbox (kept when no SMTP_URL is set)',
    options: [{ flags: '--to <address>', description: 'only those to this address', parse: email }],
    run: async (db, o, _c, config) => {
      if (config.SMTP_URL) throw new UsageError('SMTP_URL is set: mail goes to that server, and the development outbox stays empty');
      // the readable messages only: what was recorded for a mail server is sealed, and erased once sent
      const { rows } = await db.query(
        `select recipient as "to", subject, body as text, created_at from rowgate_private.mail_outbox
         where body is not null and ($1::text is null or recipient = $1) order by created_at desc, id limit 20`,
        [o.to ?? null],
      );
      return rows;
    },
  },
  'db init': {
    description: 'create the embedded database in ROWGATE_HOME (or bring it up to date), as npm start does',
    createsDatabase: true,
    run: async (_db, _o, c) => {
      if (!c.embedded) throw new UsageError('DATABASE_URL is set: db init creates the embedded database; use db migrate');
      return { ROWGATE_HOME: c.embedded.home, migrated: true };
    },
  },
  'db migrate': {
    description: 'apply the committed migrations (start-up does it too)',
    databaseOnly: true,
    migrate: true,
    run: async () => ({ migrated: true }),
  },
  'db status': {
    description: 'pending migrations; exit code 1 when some are pending or migrations/current/ is not empty',
    migrate: false,
    databaseOnly: true,
    run: async (_db, _o, c) => {
      // graphile-migrate's status insists on a shadow database URL, though it never connects to it
      if (!process.env.SHADOW_DATABASE_URL) {
        const shadow = new URL(c.ownerUrl);
        shadow.pathname = `${shadow.pathname}_shadow`;
        process.env.SHADOW_DATABASE_URL = shadow.toString();
      }
      const { migrationStatus } = await import('../db/setup.ts');
      const status = await migrationStatus(c.ownerUrl);
      const pending = status.remainingMigrations ?? [];
      if (pending.length || status.hasCurrentMigration) process.exitCode = 1;
      return { pending_migrations: pending, current_migration_not_empty: status.hasCurrentMigration };
    },
  },
  'db lint': {
    description:
      "the schema read as a reviewer would (SPEC §20): one JSON line a finding, exit code 1 when there are any; waive one with `@lint-allow <rule>: <reason>` in the object's comment",
    databaseOnly: true,
    lines: true,
    options: [{ flags: '--schema <names>', description: "the schemas to read, comma-separated (default the project's)", parse: nameList }],
    run: async (db, o) => {
      const { lintSchema } = await import('../db/lint.ts');
      const findings = await lintSchema(db, (o.schema as string[] | undefined) ?? undefined);
      if (findings.length) process.exitCode = 1;
      return findings;
    },
  },
  'db verify': {
    description:
      'the invariants the data must always hold (an admin per organization with members, defined roles, no event without its organization, …): one JSON line a violating row, exit code 1 when there are any',
    databaseOnly: true,
    lines: true,
    run: async (db) => {
      const { verifyData } = await import('../db/verify.ts');
      const violations = await verifyData(db);
      if (violations.length) process.exitCode = 1;
      return violations;
    },
  },
  // the deployment's senders, apart from its API servers (ROWGATE_WEBHOOKS=off on those): any number of
  // them on any machines share the work through their leases in the database
  'webhooks work': {
    description: 'send webhook deliveries until SIGINT or SIGTERM, without the HTTP API; logs on stderr, {attempts} on stdout at the end',
    options: [
      { flags: '--concurrency <n>', description: 'attempts in flight at once (default 16)', parse: count },
      { flags: '--poll-ms <n>', description: 'the sleep between two looks at the queue when idle (default 250)', parse: count },
    ],
    run: async (_db, o, c, config) => {
      const { WebhookWorker } = await import('../webhooks/worker.ts');
      const { createMailer } = await import('../signin/mailer.ts');
      let attempts = 0;
      const worker = new WebhookWorker({
        connectionString: c.authenticatorUrl,
        secret: c.secret,
        allowLoopback: config.ROWGATE_WEBHOOKS_ALLOW_LOOPBACK === '1',
        leaseMs: config.ROWGATE_WEBHOOKS_LEASE_SECONDS * 1000,
        concurrency: o.concurrency as number | undefined,
        pollMs: o.pollMs as number | undefined,
        log: (line) => process.stderr.write(`${line}\n`),
        onAttempt: () => attempts++,
        mailer: createMailer(config, (line) => process.stderr.write(`${line}\n`), c.secret),
      });
      await worker.start();
      process.stderr.write(`${JSON.stringify({ level: 'info', msg: 'webhooks: sending', pid: process.pid })}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await worker.stop();
      return { attempts };
    },
  },
  'db urls': {
    description: "the database's connection URLs, for graphile-migrate and psql in development",
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
