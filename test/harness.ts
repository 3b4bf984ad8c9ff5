// A rowgate app on its own database (cloned from the migrated template) for one
// test file, with fixtures made the way the operator CLI makes them.
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { ensureDatabase } from '../src/db/setup.ts';
import type { Mailer } from '../src/core/mail.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { startServer } from '../src/server/start.ts';
import { loadConfig } from '../src/config.ts';
import type { OperatingOptions } from '../src/server/app.ts';
import { generateToken, hashToken, type CredentialKind } from '../src/auth/tokens.ts';
import { withDatabase } from './database-server.ts';

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

export interface RequestOptions {
  token?: string;
  session?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  /**
   * The Rowgate-Version header (SPEC §23). By default the suite speaks
   * 2026-11-20, the shapes its tests were written in; a test of another
   * version names it, and a test of pinning sends none (null).
   */
  version?: string | null;
}

/** The version a test request is made in unless it says otherwise. */
export const TEST_VERSION = '2026-11-20';

export interface TestUser {
  id: string;
  email: string;
  session: string;
}

export class TestApp {
  readonly url: string;
  readonly owner: pg.Pool;
  readonly pool: pg.Pool;
  readonly secret: string;
  readonly ownerUrl: string;
  readonly authenticatorUrl: string;
  readonly database: string;
  /** the authenticator, never through PgBouncer: where a LISTEN goes (the webhook worker's) */
  readonly listenUrl: string;
  private readonly close_: () => Promise<void>;

  constructor(fields: {
    url: string;
    owner: pg.Pool;
    pool: pg.Pool;
    secret: string;
    ownerUrl: string;
    authenticatorUrl: string;
    database: string;
    listenUrl: string;
    close: () => Promise<void>;
  }) {
    this.url = fields.url;
    this.owner = fields.owner;
    this.pool = fields.pool;
    this.secret = fields.secret;
    this.ownerUrl = fields.ownerUrl;
    this.authenticatorUrl = fields.authenticatorUrl;
    this.database = fields.database;
    this.listenUrl = fields.listenUrl;
    this.close_ = fields.close;
  }

  close() {
    return this.close_();
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    const version = options.version === undefined ? TEST_VERSION : options.version;
    if (version !== null && !Object.keys(headers).some((h) => h.toLowerCase() === 'rowgate-version')) headers['rowgate-version'] = version;
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.session) headers.cookie = `rowgate_session=${options.session}`;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(this.url + path, { method, headers, body, redirect: 'manual' });
    const text = await response.text();
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed };
  }

  get = (path: string, options?: RequestOptions) => this.request('GET', path, options);
  post = (path: string, body: unknown, options?: RequestOptions) => this.request('POST', path, { ...options, body });
  patch = (path: string, body: unknown, options?: RequestOptions) => this.request('PATCH', path, { ...options, body });
  delete = (path: string, options?: RequestOptions) => this.request('DELETE', path, options);

  async sql<T extends object = any>(text: string, values: unknown[] = []): Promise<T[]> {
    return (await this.owner.query<T>(text, values)).rows;
  }

  async user(options: { email?: string; name?: string; admin?: boolean } = {}): Promise<TestUser> {
    const email = options.email ?? `user-${randomUUID().slice(0, 8)}@example.com`;
    // a platform admin is a row of rowgate_private.platform_admins, as `users create --admin` makes it
    const [row] = await this.sql<{ id: string }>(
      `with u as (insert into rowgate.users (email, name) values ($1, $2) returning id),
         a as (insert into rowgate_private.platform_admins (user_id) select id from u where $3::boolean)
       select id from u`,
      [email, options.name ?? null, options.admin ?? false],
    );
    return { id: row!.id, email, session: await this.session(row!.id) };
  }

  async session(userId: string, options: { lifetime?: string; impersonatorId?: string } = {}): Promise<string> {
    const token = generateToken('web_session');
    await this.sql('select rowgate_private.issue_user_session($1, $2, $3::interval, $4)', [
      userId,
      this.hash(token),
      options.lifetime ?? '31 days',
      options.impersonatorId ?? null,
    ]);
    return token;
  }

  async pat(userId: string, scopes: string[], options: { expiresAt?: Date } = {}): Promise<string> {
    const token = generateToken('personal_access_token');
    await this.sql('select rowgate_private.issue_personal_access_token($1, $2, $3, $4, $5)', [
      userId,
      'test',
      scopes,
      options.expiresAt ?? null,
      this.hash(token),
    ]);
    return token;
  }

  async oauthUserToken(userId: string, scopes: string[], options: { expiresAt?: Date } = {}): Promise<string> {
    const token = generateToken('oauth2_user_token');
    await this.sql(
      `insert into rowgate_private.oauth2_access_tokens (token_hash, client_id, user_id, scopes, expires_at)
       values ($1, 'test-client', $2, $3, coalesce($4, now() + interval '1 hour'))`,
      [this.hash(token), userId, scopes, options.expiresAt ?? null],
    );
    return token;
  }

  async oauthOrganizationToken(userId: string, organizationId: string, scopes: string[], options: { expiresAt?: Date } = {}) {
    const token = generateToken('oauth2_organization_token');
    await this.sql(
      `insert into rowgate_private.oauth2_access_tokens (token_hash, client_id, user_id, organization_id, scopes, expires_at)
       values ($1, 'test-client', $2, $3, $4, coalesce($5, now() + interval '1 hour'))`,
      [this.hash(token), userId, organizationId, scopes, options.expiresAt ?? null],
    );
    return token;
  }

  /** An organization access token, stored the way the API stores one. */
  async oat(organizationId: string, scopes: string[], options: { expiresAt?: Date } = {}): Promise<string> {
    const token = generateToken('organization_access_token');
    await this.sql(
      `with t as (
         insert into rowgate.organization_access_tokens (organization_id, comment, scopes, expires_at)
         values ($1, 'test', $2, $3) returning id)
       insert into rowgate_private.access_token_hashes (token_hash, organization_access_token_id) select $4, id from t`,
      [organizationId, scopes, options.expiresAt ?? null, this.hash(token)],
    );
    return token;
  }

  async customerSession(customerId: string, options: { lifetime?: string } = {}): Promise<string> {
    const token = generateToken('customer_session');
    await this.sql(
      `insert into rowgate_private.sessions (token_hash, kind, customer_id, expires_at) values ($1, 'customer', $2, now() + $3::interval)`,
      [this.hash(token), customerId, options.lifetime ?? '1 hour'],
    );
    return token;
  }

  async memberSession(memberId: string, options: { lifetime?: string } = {}): Promise<string> {
    const token = generateToken('member_session');
    await this.sql(
      `insert into rowgate_private.sessions (token_hash, kind, member_id, expires_at) values ($1, 'member', $2, now() + $3::interval)`,
      [this.hash(token), memberId, options.lifetime ?? '1 hour'],
    );
    return token;
  }

  /** An organization whose admin is `adminId`. */
  async organization(adminId: string, options: { name?: string; slug?: string } = {}): Promise<{ id: string; slug: string }> {
    const slug = options.slug ?? `org-${randomUUID().slice(0, 8)}`;
    const [row] = await this.sql<{ id: string }>('insert into rowgate.organizations (name, slug) values ($1, $2) returning id', [
      options.name ?? slug,
      slug,
    ]);
    await this.membership(row!.id, adminId, 'admin');
    return { id: row!.id, slug };
  }

  async membership(organizationId: string, userId: string, role: string) {
    await this.sql('insert into rowgate.memberships (organization_id, user_id, role) values ($1, $2, $3)', [organizationId, userId, role]);
  }

  /** The organization's account, administered by `adminId`. */
  async account(organizationId: string, adminId: string): Promise<string> {
    const [row] = await this.sql<{ id: string }>(
      `insert into rowgate.accounts (organization_id, admin_id, country, currency) values ($1, $2, 'US', 'usd') returning id`,
      [organizationId, adminId],
    );
    await this.sql('update rowgate.organizations set account_id = $2 where id = $1', [organizationId, row!.id]);
    return row!.id;
  }

  async product(organizationId: string, fields: { name?: string; price_amount?: number; is_archived?: boolean } = {}): Promise<string> {
    const [row] = await this.sql<{ id: string }>(
      `insert into rowgate.products (organization_id, name, price_amount, price_currency, is_archived)
       values ($1, $2, $3, 'usd', $4) returning id`,
      [organizationId, fields.name ?? 'Product', fields.price_amount ?? 1000, fields.is_archived ?? false],
    );
    return row!.id;
  }

  async customer(organizationId: string, fields: { email?: string; status?: string } = {}): Promise<string> {
    const [row] = await this.sql<{ id: string }>(
      'insert into rowgate.customers (organization_id, email, status) values ($1, $2, $3) returning id',
      [organizationId, fields.email ?? `c-${randomUUID().slice(0, 8)}@example.com`, fields.status ?? 'pending'],
    );
    return row!.id;
  }

  /** A member seat of a (business) customer. */
  async customerMember(customerId: string): Promise<string> {
    const [row] = await this.sql<{ id: string }>(
      `insert into rowgate.customer_members (organization_id, customer_id, email)
       select organization_id, id, $2 from rowgate.customers where id = $1 returning id`,
      [customerId, `m-${randomUUID().slice(0, 8)}@example.com`],
    );
    return row!.id;
  }

  async order(productId: string, customerId: string, status = 'pending'): Promise<string> {
    const [row] = await this.sql<{ id: string }>(
      `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status)
       select p.organization_id, $2, p.id, p.price_amount, p.price_currency, $3 from rowgate.products p where p.id = $1 returning id`,
      [productId, customerId, status],
    );
    return row!.id;
  }

  /** The development outbox (test apps never send mail), newest first. */
  async outbox(to?: string): Promise<{ to: string; subject: string; text: string; created_at: Date }[]> {
    return this.sql(
      `select recipient as "to", subject, body as text, created_at from rowgate_private.mail_outbox
       where body is not null and ($1::text is null or recipient = lower($1)) order by created_at desc, id`,
      [to ?? null],
    );
  }

  hash(token: string) {
    return hashToken(this.secret, token);
  }
}

/**
 * TEST_PGBOUNCER_PORT (scripts/test-pgbouncer.sh): the app's authenticator
 * connections go through the PgBouncer listening there on 127.0.0.1 (transaction
 * pooling), in front of the suite's server; the owner and superuser connections do not.
 */
function throughPgBouncer(url: string): string {
  const port = process.env.TEST_PGBOUNCER_PORT;
  if (!port) return url;
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = port;
  return u.toString();
}

export interface TestAppOptions {
  /** the pool's statement timeout (10 s by default) */
  statementTimeoutMs?: number;
  /** where the server's log lines go (default: stderr) */
  log?: (line: string) => void;
  /**
   * request ids, rate limits, access log, metrics (src/server/app.ts). By
   * default limits so high that the suite is never refused (but every request
   * passes through them), and no access log.
   */
  operating?: OperatingOptions;
  /** rate limits counted in the test's database, as a server counts them (default: UNREFUSED, counted in memory) */
  limits?: { perCredential: number; perAddress: number };
  /** ROWGATE_CORS_ORIGINS */
  corsOrigins?: string[];
  /** ROWGATE_PUBLIC_URL (default: the app's own URL) */
  publicUrl?: string;
  /** how the app records mail, given its server secret (default: the development outbox) */
  mailer?: (secret: string) => Mailer;
}

/** The limits of a test app unless a test sets its own: every request counted, none refused. */
export const UNREFUSED = { perCredential: 1_000_000_000, perAddress: 1_000_000_000 };

/** A fresh database from the template and an app on a free port. */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const superuserUrl = inject('superuserUrl');
  const database = `rowgate_test_${randomBytes(6).toString('hex')}`;
  const ownerUrl = withDatabase(superuserUrl, database, { name: 'rowgate_owner', password: inject('ownerPassword') });
  const directAuthenticatorUrl = withDatabase(superuserUrl, database, {
    name: 'rowgate_authenticator',
    password: inject('authenticatorPassword'),
  });
  const authenticatorUrl = throughPgBouncer(directAuthenticatorUrl);
  const owner = new pg.Pool({ connectionString: ownerUrl, max: 2 });
  owner.on('error', () => {}); // the database is dropped at close while a client may still be closing
  const secret = randomBytes(32).toString('base64url');
  const limits = options.limits ?? UNREFUSED;
  // the server production starts (src/server/start.ts), with the suite's choices
  const running = await startServer(
    {
      ...loadConfig({ HOST: '127.0.0.1', PORT: '0', NODE_ENV: 'test', ROWGATE_WEBHOOKS: 'off' }),
      ROWGATE_POOL_SIZE: 4,
      ROWGATE_STATEMENT_TIMEOUT_MS: options.statementTimeoutMs ?? 10_000,
      // through PgBouncer 1.18 (scripts/test-pgbouncer.ts), named prepared statements cannot be shared
      ROWGATE_PREPARED_STATEMENTS: process.env.TEST_PGBOUNCER_STATEMENTS === 'unnamed' ? 'unnamed' : 'named',
      ROWGATE_RATE_LIMIT: limits.perCredential,
      ROWGATE_ANONYMOUS_RATE_LIMIT: limits.perAddress,
      ROWGATE_CORS_ORIGINS: options.corsOrigins ?? [],
      ROWGATE_PUBLIC_URL: options.publicUrl,
    },
    {
      log: options.log ?? ((l: string) => console.error(l)),
      // a clone of the migrated template, dropped at the end
      database: {
        open: async () => {
          await ensureDatabase(superuserUrl, database, inject('template'));
          return { ownerUrl, authenticatorUrl, secret };
        },
        close: async () => {
          await owner.end();
          const admin = new pg.Client({ connectionString: superuserUrl });
          await admin.connect();
          await admin.query(`drop database if exists ${database} with (force)`);
          await admin.end();
        },
      },
      // the event feed runs, as on every server; the rest of the upkeep would race the fixtures tests make
      without: ['analysts-limits', 'oldest-transaction', 'event-partitions', 'event-retention', 'team-upkeep'],
      // counted as a server counts them (in the database) only when a test sets its limits
      localCounts: !options.limits,
      serve: {
        validateResponses: true,
        mailer: options.mailer?.(secret) ?? outboxMailer(() => {}),
        operating: options.operating,
      },
    },
  );
  return new TestApp({
    url: running.url,
    owner,
    pool: running.pool,
    secret,
    ownerUrl,
    authenticatorUrl,
    database,
    listenUrl: directAuthenticatorUrl,
    close: async () => {
      running.server.closeAllConnections();
      await running.stop();
    },
  });
}

export type { CredentialKind };
