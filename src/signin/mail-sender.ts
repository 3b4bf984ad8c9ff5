// The mail sender (SPEC §14): in each API server when SMTP_URL is set. Mail is
// recorded in the transaction of the change it tells about (mailer.ts); the
// sender leases due messages (rowgate_private.claim_mail: one statement,
// committed), sends them through the mail server with no transaction open, and
// records each outcome in a second short statement with its lease: sent (its
// seal erased), or due again after a backoff, or given up. A sender that dies
// mid-send leaves its lease to run out, and the message is claimed again (at
// least once). A request that records mail wakes this process's senders once
// it commits, so a code leaves at once; they also look every second for mail
// other processes recorded. A mail server that is slow or away holds a sender's
// slots and its own short timeouts, never a request, a pool connection or the
// event feed.
import type pg from 'pg';
import { open } from '../auth/at-rest-encryption.ts';
import { createBackgroundPool } from '../db/pool.ts';
import type { Mail } from '../core/mail.ts';

/** What a sealed message is sealed for: a key of its own under the server secret */
export const MAIL_PURPOSE = 'rowgate.mail_outbox';

export interface SmtpTimeouts {
  /** to connect (DNS and TCP) */
  connectionMs: number;
  /** for the server's greeting once connected */
  greetingMs: number;
  /** of silence once talking */
  socketMs: number;
  /** for one message, whatever the server does (a slow drip included) */
  messageMs: number;
}

/** Short, explicit: nodemailer's own defaults wait minutes for a server that accepts and never answers. */
export const SMTP_TIMEOUTS: SmtpTimeouts = { connectionMs: 5_000, greetingMs: 5_000, socketMs: 10_000, messageMs: 20_000 };

export interface MailSenderOptions {
  /** the authenticator, as the server's pool connects */
  connectionString: string;
  /** the server secret, which seals the messages */
  secret: string;
  /** `smtp://user:password@host:port` or `smtps://…` */
  smtpUrl: string;
  /** MAIL_FROM */
  from: string;
  /** messages this process has in flight at once (each holds no database connection while it waits) */
  concurrency?: number;
  /** the sleep between two looks when not woken */
  pollMs?: number;
  /** how long a claimed message is this sender's; past it another sender sends it again */
  leaseMs?: number;
  timeouts?: Partial<SmtpTimeouts>;
  /** the wait after the n-th failed attempt */
  retryDelayMs?: (attempt: number) => number;
  /** attempts before a message is given up (and erased) */
  attemptsAllowed?: number;
  log: (line: string) => void;
}

/** 5 s, 15 s, 45 s, … ×3 each time, at most an hour: 8 attempts span about 1.5 hours (a sign-in code lives 15 minutes). */
export const defaultMailRetryDelayMs = (attempt: number) => Math.min(5_000 * 3 ** (attempt - 1), 3_600_000);
export const DEFAULT_MAIL_ATTEMPTS = 8;
export const DEFAULT_MAIL_LEASE_MS = 60_000;

const CLAIM = `select id, lease, attempts, sealed_body from rowgate_private.claim_mail($1, make_interval(secs => $2::double precision / 1000))`;
const RECORD = `select rowgate_private.record_mail_attempt($1, $2, $3, $4, make_interval(secs => $5::double precision / 1000), $6) as recorded`;

interface Claimed {
  id: string;
  lease: string;
  attempts: number;
  sealed_body: Buffer;
}

type Transport = { sendMail(message: object): Promise<unknown> };

/** The senders of this process, woken when a transaction that recorded mail commits */
const senders = new Set<MailSender>();

export function wakeMailSenders(): void {
  for (const sender of senders) sender.wake();
}

export class MailSender {
  private readonly options: MailSenderOptions;
  private readonly pool: pg.Pool;
  private readonly timeouts: SmtpTimeouts;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private transport?: Promise<Transport>;
  private running = false;
  private loop?: Promise<void>;
  private readonly inFlight = new Set<Promise<void>>();
  private woken = false;
  private sleeping?: () => void;

  constructor(options: MailSenderOptions) {
    this.options = options;
    this.timeouts = { ...SMTP_TIMEOUTS, ...options.timeouts };
    this.leaseMs = options.leaseMs ?? DEFAULT_MAIL_LEASE_MS;
    // the lease outlasts a message and its record by a margin: a sender that is merely slow keeps it
    if (this.leaseMs < this.timeouts.messageMs + 2_000)
      throw new Error(`the lease (${this.leaseMs} ms) must outlast a message's timeout by 2 s at least`);
    this.concurrency = options.concurrency ?? 4;
    // connections only to claim and to record, never while a message is sent
    this.pool = createBackgroundPool({ connectionString: options.connectionString, max: 2, applicationName: 'rowgate-mail' });
  }

  async start(): Promise<void> {
    this.running = true;
    senders.add(this);
    this.loop = this.run();
  }

  /** No new claims; the messages in flight end (within their timeout) and are recorded. */
  async stop(): Promise<void> {
    if (!this.loop) return;
    senders.delete(this);
    this.running = false;
    this.wake();
    await this.loop;
    this.loop = undefined;
    await Promise.all(this.inFlight);
    await this.pool.end();
  }

  /** Looks for due mail now (a transaction that recorded some has committed). */
  wake(): void {
    this.woken = true;
    this.sleeping?.();
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.woken = false;
      const free = this.concurrency - this.inFlight.size;
      let claimed = 0;
      if (free > 0) {
        try {
          claimed = await this.claim(free);
        } catch (error) {
          this.options.log(JSON.stringify({ level: 'warn', msg: 'mail: claim failed', error: String(error) }));
        }
      }
      if (claimed > 0 && claimed === free) continue;
      if (!this.running) break;
      // woken while claiming: what committed meanwhile may not have been seen
      if (this.woken) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.options.pollMs ?? 1_000);
        const self = this;
        function done() {
          clearTimeout(timer);
          if (self.sleeping === done) self.sleeping = undefined;
          resolve();
        }
        this.sleeping = done;
      });
    }
  }

  private async claim(free: number): Promise<number> {
    const { rows } = await this.pool.query<Claimed>(CLAIM, [free, this.leaseMs]);
    for (const row of rows) {
      const sending: Promise<void> = this.attempt(row).finally(() => {
        this.inFlight.delete(sending);
        this.wake(); // a slot is free
      });
      this.inFlight.add(sending);
    }
    return rows.length;
  }

  private async attempt(row: Claimed): Promise<void> {
    const error = await this.send(row);
    const retryDelay = error === null ? 0 : (this.options.retryDelayMs ?? defaultMailRetryDelayMs)(row.attempts);
    const values = [row.id, row.lease, error === null, error, retryDelay, this.options.attemptsAllowed ?? DEFAULT_MAIL_ATTEMPTS];
    if (error !== null)
      this.options.log(JSON.stringify({ level: 'warn', msg: 'mail: not sent', mail: row.id, attempt: row.attempts, error }));
    // recorded within the lease; a database away meanwhile: tried again, else the lease runs out and
    // another sender sends the message again (a duplicate, never a loss)
    const deadline = Date.now() + this.leaseMs - this.timeouts.messageMs - 1_000;
    for (let wait = 100; ; wait *= 2) {
      try {
        await this.pool.query(RECORD, values);
        return;
      } catch (recordError) {
        if (Date.now() + wait > deadline) {
          this.options.log(
            JSON.stringify({ level: 'warn', msg: 'mail: an outcome could not be recorded', mail: row.id, error: String(recordError) }),
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /** null once the mail server took the message, else why not */
  private async send(row: Claimed): Promise<string | null> {
    let mail: Mail;
    try {
      mail = JSON.parse(open(row.sealed_body, this.options.secret, MAIL_PURPOSE, row.id)) as Mail;
    } catch {
      return 'The message cannot be opened (was the server secret changed?)';
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const transport = await this.transportOf();
      const sent = transport.sendMail({ from: this.options.from, to: mail.to, subject: mail.subject, text: mail.text });
      sent.catch(() => {}); // past the deadline its failure is no longer awaited
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${this.timeouts.messageMs} ms`)), this.timeouts.messageMs);
      });
      await Promise.race([sent, deadline]);
      return null;
    } catch (error) {
      return String(error instanceof Error ? error.message : error).slice(0, 500);
    } finally {
      clearTimeout(timer);
    }
  }

  /** nodemailer, loaded on first use: a server without SMTP_URL never loads it */
  private transportOf(): Promise<Transport> {
    this.transport ??= import('nodemailer').then((nodemailer) =>
      nodemailer.createTransport({
        url: this.options.smtpUrl,
        connectionTimeout: this.timeouts.connectionMs,
        greetingTimeout: this.timeouts.greetingMs,
        socketTimeout: this.timeouts.socketMs,
      } as never),
    );
    return this.transport;
  }
}
