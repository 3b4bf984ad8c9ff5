// The delivery worker (SPEC §17), running in every server process: it claims
// due deliveries with FOR UPDATE SKIP LOCKED (rowgate_private.claim_webhook_delivery),
// so several servers never make the same attempt, and holds the claim while the
// attempt is made; a server killed mid-attempt releases it with its connection,
// and the delivery is made again (at least once; `webhook-id` lets receivers
// drop duplicates). It wakes on NOTIFY rowgate_webhooks (a notification naming
// nothing) and polls as well: behind a transaction-pooling PgBouncer there is
// no LISTEN, and retries fall due without any notification.
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { rfc3339 } from '../db/timestamps.ts';
import { postWebhook, type AttemptResult } from './post.ts';
import { openSecret } from './secrets.ts';

export interface WorkerOptions {
  /** the authenticator, as the server's pool connects */
  connectionString: string;
  /** a direct (not transaction-pooled) authenticator URL to LISTEN on; none: polling only */
  listenConnectionString?: string;
  /** the server secret, which seals the signing secrets */
  secret: string;
  allowLoopback: boolean;
  /** attempts made at once by this process */
  concurrency?: number;
  /** the longest sleep between two looks at the queue */
  pollMs?: number;
  /** the wait after the n-th failed attempt */
  retryDelayMs?: (attempt: number) => number;
  timeoutMs?: number;
  log: (line: string) => void;
  /** told of every attempt once it is recorded (the metrics count them) */
  onAttempt?: (result: AttemptResult) => void;
}

/** 5 s, 15 s, 45 s, … ×3 each time, at most 6 hours: 10 attempts span about 14 hours. */
export const defaultRetryDelayMs = (attempt: number) => Math.min(5_000 * 3 ** (attempt - 1), 6 * 3_600_000);

interface Claimed {
  delivery_id: string;
  attempt: number;
  url: string;
  sealed_secret: Buffer;
  event_id: string;
  organization_id: string;
  type: string;
  resource_id: string;
  data: unknown;
  actor: unknown;
  request_id: string | null;
  created_at: string;
  previous: unknown;
}

const CLAIM = `select delivery_id, attempt, url, sealed_secret, event_id, organization_id, type, resource_id, data, actor, request_id,
  created_at::text as created_at, previous from rowgate_private.claim_webhook_delivery()`;
const RECORD = 'select rowgate_private.record_webhook_attempt($1, $2, $3, $4, $5, make_interval(secs => $6::double precision / 1000))';

/** The request body: `{type, timestamp, data}`, data being the event as GET /v1/events/{id} answers it. */
export function webhookBody(row: Claimed): string {
  const createdAt = rfc3339(row.created_at);
  const event = {
    id: row.event_id,
    organization_id: row.organization_id,
    type: row.type,
    resource_id: row.resource_id,
    data: row.data,
    previous: row.previous ?? null,
    actor: row.actor,
    request_id: row.request_id,
    created_at: createdAt,
  };
  return JSON.stringify({ type: row.type, timestamp: createdAt, data: event });
}

export class WebhookWorker {
  private readonly options: WorkerOptions;
  private readonly pool: pg.Pool;
  private listener?: pg.Client;
  private running = false;
  private lanes: Promise<void>[] = [];
  private wakers = new Set<() => void>();
  private timeoutMs: number;

  constructor(options: WorkerOptions) {
    this.options = options;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    const concurrency = options.concurrency ?? 2;
    this.pool = new pg.Pool({ connectionString: options.connectionString, max: concurrency, application_name: 'rowgate-webhooks' });
    this.pool.on('error', () => {});
    this.pool.on('connect', (client) => client.on('error', () => {}));
  }

  async start(): Promise<void> {
    this.running = true;
    if (this.options.listenConnectionString) await this.listen();
    for (let i = 0; i < (this.options.concurrency ?? 2); i++) this.lanes.push(this.lane());
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await Promise.all(this.lanes);
    this.lanes = [];
    await this.listener?.end().catch(() => {});
    await this.pool.end();
  }

  private wake() {
    for (const wake of this.wakers) wake();
    this.wakers.clear();
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.options.listenConnectionString, application_name: 'rowgate-webhooks-listen' });
    client.on('notification', () => this.wake());
    client.on('error', () => {
      this.listener = undefined;
      // polling goes on meanwhile; listen again shortly
      if (this.running) setTimeout(() => this.running && this.listen().catch(() => {}), 1_000).unref();
    });
    try {
      await client.connect();
      await client.query('listen rowgate_webhooks');
      this.listener = client;
    } catch (error) {
      client.end().catch(() => {});
      this.options.log(JSON.stringify({ level: 'warn', msg: 'webhooks: cannot LISTEN, polling only', error: String(error) }));
    }
  }

  private async lane(): Promise<void> {
    while (this.running) {
      let worked = false;
      try {
        worked = await this.attemptOne();
      } catch (error) {
        this.options.log(JSON.stringify({ level: 'warn', msg: 'webhooks: delivery loop error', error: String(error) }));
      }
      if (!worked && this.running) await this.idle();
    }
  }

  /** Sleeps until notified, until the next delivery falls due, or for the poll interval. */
  private async idle(): Promise<void> {
    const pollMs = this.options.pollMs ?? 5_000;
    let waitMs = pollMs;
    try {
      const { rows } = await this.pool.query<{ at: Date | null }>('select rowgate_private.next_webhook_delivery_at() as at');
      if (rows[0]?.at) waitMs = Math.max(20, Math.min(pollMs, new Date(rows[0].at).getTime() - Date.now() + 10));
    } catch {
      // the database is away: wait the poll interval
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, waitMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakers.add(done);
    });
  }

  /** Claims one due delivery and makes its attempt; false when nothing was due. */
  private async attemptOne(): Promise<boolean> {
    const client = await this.pool.connect();
    let healthy = true;
    try {
      // the claim is held for the attempt (at most the timeout), then recorded
      await client.query(
        `begin; set local statement_timeout = 10000; set local idle_in_transaction_session_timeout = ${this.timeoutMs + 30_000}`,
      );
      const { rows } = await client.query<Claimed>(CLAIM);
      const row = rows[0];
      if (!row) {
        await client.query('commit');
        return false;
      }
      const result = await this.post(row);
      const delay = result.succeeded ? 0 : (this.options.retryDelayMs ?? defaultRetryDelayMs)(row.attempt);
      await client.query(RECORD, [row.delivery_id, result.succeeded, result.responseCode, result.durationMs, result.error, delay]);
      await client.query('commit');
      this.options.onAttempt?.(result);
      return true;
    } catch (error) {
      healthy = false;
      throw error;
    } finally {
      if (!healthy) await client.query('rollback').catch(() => {});
      client.release(!healthy);
    }
  }

  private async post(row: Claimed): Promise<AttemptResult> {
    const body = webhookBody(row);
    let secret: string;
    try {
      secret = openSecret(row.sealed_secret, this.options.secret);
    } catch {
      return {
        succeeded: false,
        responseCode: null,
        durationMs: 0,
        error: 'The signing secret cannot be opened (was the server secret changed?)',
      };
    }
    // one instant for the signature and its header (two clock readings could fall either side of a second)
    const now = new Date();
    const signature = new Webhook(secret).sign(row.event_id, now, body);
    const timestamp = String(Math.floor(now.getTime() / 1000));
    return postWebhook(row.url, { 'webhook-id': row.event_id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }, body, {
      allowLoopback: this.options.allowLoopback,
      timeoutMs: this.timeoutMs,
    });
  }
}
