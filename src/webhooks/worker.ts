// The webhook sender (SPEC §17): in each API server unless ROWGATE_WEBHOOKS=off,
// or alone as `npx rowgate webhooks work`. It leases due attempts
// (rowgate_private.claim_webhook_deliveries: one statement, committed, which
// first runs the feed's sequencer, so that a sender alone takes new deliveries
// into their lanes as the servers do: src/upkeep/event-feed.ts), sends
// them with no transaction open, and records each answer in a second short
// statement with its lease. Endpoints are lanes of their own in the database:
// at most one attempt per endpoint is in flight across every sender, first
// attempts in feed order, and a failing endpoint is tried at its retry times
// only (its breaker), so a slow or failing endpoint holds one of a sender's
// slots at most and delays no other endpoint.
//
// A sender that dies mid-attempt leaves its lease to run out; the next claim
// records that attempt as lost and makes it again with the same webhook-id
// (at least once). Senders find work by polling the lanes' due index, a short
// sleep apart when idle: nothing is notified on the write path (a notifying
// commit serializes with every other; bench/webhooks.ts measures it), and
// polling works through a transaction-pooling PgBouncer.
import type pg from 'pg';
import { createBackgroundPool } from '../db/pool.ts';
import { Webhook } from 'standardwebhooks';
import { rfc3339 } from '../db/timestamps.ts';
import { DELIVERY_TIMEOUT_MS, postWebhook, type AttemptResult } from './post.ts';
import { openSecret } from './secrets.ts';
import { API_VERSIONS, type ApiVersions, FIRST_VERSION } from '../core/versions.ts';

export interface WorkerOptions {
  /** the authenticator, as the server's pool connects (a transaction-pooling PgBouncer is fine) */
  connectionString: string;
  /** the server secret, which seals the signing secrets */
  secret: string;
  allowLoopback: boolean;
  /** attempts this process has in flight at once (each holds no connection while it waits) */
  concurrency?: number;
  /** the sleep between two looks at the lanes when nothing was due */
  pollMs?: number;
  /** how long a claimed attempt is this sender's; past it another sender makes it again */
  leaseMs?: number;
  /** the wait after the n-th failed attempt (of a delivery; of an endpoint in a row, for its breaker) */
  retryDelayMs?: (attempt: number) => number;
  timeoutMs?: number;
  log: (line: string) => void;
  /** told of every attempt once it is recorded (the metrics count them) */
  onAttempt?: (result: AttemptResult) => void;
  /** the API versions a body may be rendered in (default: src/core/versions.ts's) */
  versions?: ApiVersions;
}

/** 5 s, 15 s, 45 s, … ×3 each time, at most 6 hours: 10 attempts span about 14 hours. */
export const defaultRetryDelayMs = (attempt: number) => Math.min(5_000 * 3 ** (attempt - 1), 6 * 3_600_000);
export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_POLL_MS = 250;
export const DEFAULT_CONCURRENCY = 16;

interface Claimed {
  delivery_id: string;
  lease: string;
  attempt: number;
  failures: number;
  organization_id: string;
  endpoint_id: string;
  url: string;
  sealed_secret: Buffer;
  event_id: string;
  type: string;
  resource_id: string;
  data: unknown;
  actor: unknown;
  request_id: string | null;
  created_at: string;
  previous: unknown;
}

const CLAIM = `select delivery_id, lease, attempt, failures, organization_id, endpoint_id, url, sealed_secret, event_id, type,
  resource_id, data, actor, request_id, created_at::text as created_at, previous
  from rowgate_private.claim_webhook_deliveries($1, make_interval(secs => $2::double precision / 1000))`;
const ENDPOINT_VERSIONS = 'select endpoint_id, api_version from rowgate_private.webhook_endpoint_versions($1::uuid[])';
const RECORD = `select rowgate_private.record_webhook_attempt($1, $2, $3, $4, $5, $6, $7, $8,
  make_interval(secs => $9::double precision / 1000), make_interval(secs => $10::double precision / 1000),
  make_interval(secs => $11::double precision / 1000)) as recorded`;

/**
 * The request body: `{type, timestamp, data}`, data being the event as GET
 * /v1/events/{id} answers it, its resource (`data`, `previous`) rendered as the
 * endpoint's API version renders it (SPEC §23; stored once, in the first version's shape).
 */
export function webhookBody(
  row: Omit<Claimed, 'lease' | 'failures' | 'endpoint_id' | 'delivery_id' | 'attempt'>,
  version = FIRST_VERSION,
  versions: ApiVersions = API_VERSIONS,
): string {
  const createdAt = rfc3339(row.created_at);
  const render = (resource: unknown) =>
    resource !== null && typeof resource === 'object'
      ? versions.eventData(version, row.type, resource as Record<string, unknown>)
      : resource;
  const event = {
    id: row.event_id,
    organization_id: row.organization_id,
    type: row.type,
    resource_id: row.resource_id,
    data: render(row.data),
    previous: render(row.previous ?? null),
    actor: row.actor,
    request_id: row.request_id,
    created_at: createdAt,
  };
  return JSON.stringify({ type: row.type, timestamp: createdAt, data: event });
}

export class WebhookWorker {
  private readonly options: WorkerOptions;
  private readonly pool: pg.Pool;
  private readonly concurrency: number;
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readonly retryDelayMs: (attempt: number) => number;
  private readonly giveUpAfterMs: number;
  private running = false;
  private loop?: Promise<void>;
  private inFlight = new Set<Promise<void>>();
  private wake?: () => void;

  constructor(options: WorkerOptions) {
    this.options = options;
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    // the lease outlasts the attempt and its record by a margin: a sender that is merely slow keeps it
    if (this.leaseMs < this.timeoutMs + 2_000) throw new Error(`the lease (${this.leaseMs} ms) must outlast the timeout by 2 s at least`);
    this.concurrency = options.concurrency ?? DEFAULT_CONCURRENCY;
    this.retryDelayMs = options.retryDelayMs ?? defaultRetryDelayMs;
    // a delivery's whole retry schedule: past it, deliveries behind an endpoint that stays down fail
    this.giveUpAfterMs = Array.from({ length: 9 }, (_, i) => this.retryDelayMs(i + 1)).reduce((a, b) => a + b, 0);
    // connections only to claim and to record: a few serve many attempts in flight
    this.pool = createBackgroundPool({ connectionString: options.connectionString, max: 2, applicationName: 'rowgate-webhooks' });
  }

  async start(): Promise<void> {
    this.running = true;
    this.loop = this.run();
  }

  /** No new claims; the attempts in flight end (within their timeout) and are recorded. */
  async stop(): Promise<void> {
    if (!this.loop) return;
    this.running = false;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
    await Promise.all(this.inFlight);
    await this.pool.end();
  }

  private async run(): Promise<void> {
    while (this.running) {
      const free = this.concurrency - this.inFlight.size;
      let claimed = 0;
      if (free > 0) {
        try {
          claimed = await this.claim(free);
        } catch (error) {
          this.options.log(JSON.stringify({ level: 'warn', msg: 'webhooks: claim failed', error: String(error) }));
        }
      }
      // all slots busy, or more may be due: look again as soon as a slot frees (or at once)
      if (claimed > 0 && claimed === free) continue;
      if (!this.running) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.options.pollMs ?? DEFAULT_POLL_MS);
        const self = this;
        function done() {
          clearTimeout(timer);
          if (self.wake === done) self.wake = undefined;
          resolve();
        }
        this.wake = done;
      });
    }
  }

  /** Leases up to `free` attempts and starts them; how many. */
  private async claim(free: number): Promise<number> {
    const { rows } = await this.pool.query<Claimed>(CLAIM, [free, this.leaseMs]);
    const versions = rows.length ? await this.endpointVersions(rows) : new Map<string, string>();
    for (const row of rows) {
      const attempt: Promise<void> = this.attempt(row, versions.get(row.endpoint_id) ?? FIRST_VERSION).finally(() => {
        this.inFlight.delete(attempt);
        // a slot is free, and the endpoint's next delivery may be due at once
        this.wake?.();
      });
      this.inFlight.add(attempt);
    }
    return rows.length;
  }

  /** The version each claimed endpoint's bodies are rendered in; the claim holds the leases, so a failure here only delays them. */
  private async endpointVersions(rows: Claimed[]): Promise<Map<string, string>> {
    const ids = [...new Set(rows.map((r) => r.endpoint_id))];
    const { rows: found } = await this.pool.query<{ endpoint_id: string; api_version: string }>(ENDPOINT_VERSIONS, [ids]);
    return new Map(found.map((r) => [r.endpoint_id, r.api_version]));
  }

  private async attempt(row: Claimed, version: string): Promise<void> {
    const result = await this.post(row, version);
    const retryDelay = result.succeeded ? 0 : this.retryDelayMs(row.attempt);
    // the breaker opens at the third failure in a row (rowgate_private.record_webhook_attempt): its first wait is
    // the first retry's, then each grows as a delivery's retries do
    const breakerDelay = result.succeeded ? 0 : this.retryDelayMs(Math.max(1, row.failures - 1));
    const values = [
      row.organization_id,
      row.endpoint_id,
      row.delivery_id,
      row.lease,
      result.succeeded,
      result.responseCode,
      result.durationMs,
      result.error,
      retryDelay,
      breakerDelay,
      this.giveUpAfterMs,
    ];
    // recorded within the lease; a database away meanwhile: tried again, else the lease runs out and
    // another sender makes the attempt again (a duplicate, never a loss)
    const deadline = Date.now() + this.leaseMs - this.timeoutMs - 1_000;
    for (let wait = 100; ; wait *= 2) {
      try {
        const { rows } = await this.pool.query<{ recorded: boolean }>(RECORD, values);
        if (rows[0]?.recorded) this.options.onAttempt?.(result);
        return;
      } catch (error) {
        if (Date.now() + wait > deadline) {
          this.options.log(
            JSON.stringify({
              level: 'warn',
              msg: 'webhooks: an answer could not be recorded',
              delivery: row.delivery_id,
              error: String(error),
            }),
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  private async post(row: Claimed, version: string): Promise<AttemptResult> {
    const versions = this.options.versions ?? API_VERSIONS;
    // an endpoint pinned to a version this server no longer serves gets the oldest it serves
    const body = webhookBody(row, versions.has(version) ? version : versions.oldest, versions);
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
