// Configuration from the environment, validated once at start with one clear
// message per bad value (SPEC §1).
import { availableParallelism } from 'node:os';
import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65535);
const url = z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL');

/** `https://app.example.com` or `http://127.0.0.1:3000`: what a browser sends as `Origin` */
function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === value;
  } catch {
    return false;
  }
}

const schema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: url.optional().describe('the owner role (rowgate_owner): runs the migrations'),
  AUTH_DATABASE_URL: url.optional().describe('the authenticator role the server connects as'),
  ROOT_DATABASE_URL: url.optional().describe('a superuser, to create the roles (optional)'),
  ROWGATE_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  ROWGATE_HOME: z.string().min(1).default('.rowgate'),
  ROWGATE_DB_PORT: port.optional(),
  // Sized for the machine: twice its cores, at least 4. More connections only
  // queue in the kernel's scheduler, with a longer tail and less throughput
  // (docs/performance.md). A database on another machine: set it for that one.
  ROWGATE_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .default(Math.max(4, 2 * availableParallelism())),
  // hot standbys for reads (SPEC §19, src/db/read-replicas.ts): authenticator URLs, comma-separated
  ROWGATE_READ_DATABASE_URLS: z
    .string()
    .optional()
    .transform((v, ctx) => {
      const urls = (v ?? '')
        .split(',')
        .map((u) => u.trim())
        .filter(Boolean);
      for (const u of urls) {
        if (!/^postgres(ql)?:\/\/[^\s]+$/.test(u))
          ctx.addIssue({ code: 'custom', message: 'must be postgres:// URLs separated by commas' });
      }
      return urls;
    }),
  // where organizations' SQL logins and analysts connect (SPEC §24: a standby may serve them); unset: the primary
  ROWGATE_ANALYST_DATABASE_URL: url.optional(),
  ROWGATE_READ_MAX_LAG_MS: z.coerce.number().int().min(1).max(3_600_000).default(500),
  // at least a second: what a busy machine's ordinary statement may take (and a
  // 504 names it in seconds); at most ten minutes
  ROWGATE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(10_000),
  // Prometheus metrics at GET /metrics on this port (HOST's address), never on the API's; unset: none (SPEC §14)
  ROWGATE_METRICS_PORT: port.optional(),
  // requests per second per credential (bursts up to twice that), and per client address without one (SPEC §14)
  ROWGATE_RATE_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(100),
  ROWGATE_ANONYMOUS_RATE_LIMIT: z.coerce.number().int().min(1).max(1_000_000).default(20),
  // the proxies whose X-Forwarded-For names the client: comma-separated addresses or CIDRs
  ROWGATE_TRUST_PROXY: z
    .string()
    .regex(/^\s*[0-9a-fA-F.:/]+(\s*,\s*[0-9a-fA-F.:/]+)*\s*$/, 'must be comma-separated IP addresses or CIDRs (10.0.0.0/8, ::1)')
    .optional(),
  // pino's levels: trace, debug, info, warn, error, fatal, silent
  LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  // 'unnamed' for a transaction-pooling PgBouncer older than 1.21 (docs/operations.md)
  ROWGATE_PREPARED_STATEMENTS: z.enum(['named', 'unnamed']).default('named'),
  // the webhook delivery worker of this process (SPEC §17); off: this process delivers nothing (others may)
  ROWGATE_WEBHOOKS: z.enum(['on', 'off']).default('on'),
  // the organizations' request log (SPEC §25); off: this process writes no rows (the bench's comparison)
  ROWGATE_REQUEST_LOG: z.enum(['on', 'off']).default('on'),
  // how long a sender's claim on an attempt lasts; past it, another sender makes the attempt again.
  // It outlasts the 10 s timeout and the answer's record (docs/operations.md)
  ROWGATE_WEBHOOKS_LEASE_SECONDS: z.coerce.number().int().min(12).max(3_600).default(30),
  // events older than this many days are pruned (SPEC §17); unset: kept for good, an audit trail
  ROWGATE_EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
  // 1: webhook URLs may name loopback addresses, over http too (development and tests; never in production)
  ROWGATE_WEBHOOKS_ALLOW_LOOPBACK: z.enum(['0', '1']).default('0'),
  // production unless told otherwise: the GraphQL explorer and development checks only on request (SPEC §13)
  NODE_ENV: z.string().default('production'),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\/[^\s/]+/, 'must be an smtp:// or smtps:// URL (smtp://user:password@host:587)')
    .optional()
    .describe(
      'the mail server for sign-in codes, invitations and revocation notices (sent after the commit); unset: the development outbox',
    ),
  // browser apps' origins that may call the API cross-origin (SPEC §16; src/http/cors.ts): comma-separated, none by default
  ROWGATE_CORS_ORIGINS: z
    .string()
    .default('')
    .transform((value) =>
      value
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .refine(
      (origins) => origins.every(isOrigin),
      'must be comma-separated origins: scheme://host[:port], no path (https://app.example.com)',
    ),
  // the issuer and every URL of the OAuth2 metadata; unset: http://HOST:PORT (the Host header never changes them)
  ROWGATE_PUBLIC_URL: z
    .string()
    .refine(
      (value) => isOrigin(value.replace(/\/$/, '')),
      'must be an http(s) origin: scheme://host[:port], no path (https://api.example.com)',
    )
    .transform((value) => value.replace(/\/$/, ''))
    .optional(),
  MAIL_FROM: z
    .string()
    .regex(/^(?:[^<>]*<[^@\s<>]+@[^@\s<>]+>|[^@\s<>]+@[^@\s<>]+)$/, 'must be an address, or "Name <address>"')
    .default('rowgate <no-reply@rowgate.localhost>'),
});

export type Config = z.infer<typeof schema>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`rowgate: invalid configuration:\n${lines.join('\n')}`);
  }
  const config = parsed.data;
  if (config.DATABASE_URL && (!config.AUTH_DATABASE_URL || !config.ROWGATE_SECRET)) {
    throw new ConfigError(
      'rowgate: invalid configuration:\n  with DATABASE_URL set, AUTH_DATABASE_URL (the authenticator) and ROWGATE_SECRET are required too',
    );
  }
  return config;
}
