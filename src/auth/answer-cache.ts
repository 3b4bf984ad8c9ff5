// The server's memory of answers that depend on nothing but the credential
// (a route declaring `cache: 'credential'`: GET /v1/users/me). It keeps what
// the database answered for a credential — good until a time, with these
// scopes, for this user, and the answer's body — and forgets it when the
// database says the answer changed. The database says so from triggers, in the
// transaction that makes the change (migrations 000002, 000006): the user ids
// go to rowgate_private.user_changes and to a transaction-local setting that
// the server making the change reads with its commit (CHANGED_USERS) and
// applies before it answers; and a notification on `rowgate_user_changes`
// that names nothing (anybody may LISTEN, analysts included: SPEC §15) tells
// every server to read what changed from that table. Until it has, it serves
// nothing from memory.
//
// So a change made through this server holds for its next request, exactly; a
// change made elsewhere (another server, psql) once its notification arrives.
// An answer is kept until the credential expires and never longer than
// `maxAgeMs`; without the listening connection nothing is kept or served. Why
// and what it costs: docs/decisions.md ("The users/me cache").
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { parsePosition, type Position } from '../db/consistency.ts';

export const CHANGES_CHANNEL = 'rowgate_user_changes';

/** Read with a write's commit: the users whose answers the transaction changed ('*': everybody). */
export const CHANGED_USERS = `select current_setting('rowgate.changed_users', true) as users`;

/**
 * The changes of every transaction that had not ended at the last read (its
 * horizon; null: none, only the horizon), and the next horizon, read on the
 * listening connection (migration 000038: a change's id is taken when it is
 * inserted, not when it commits, so the ids read do not tell what may yet commit).
 */
const CHANGES_AFTER = 'select horizon::text, user_ids from rowgate_private.user_changes_after($1::xid8)';

export interface CachedAnswer {
  userId: string;
  scopes: ReadonlySet<string>;
  /** the answer's JSON text */
  body: string;
  /** the subject's settings, as the access log reports them (its kind, the credential's id) */
  settings?: Readonly<Record<string, string>>;
}

interface Entry extends CachedAnswer {
  /** Date.now() past which it is not served */
  until: number;
}

export interface AnswerCacheOptions {
  /** a direct connection (not a transaction-pooling PgBouncer: LISTEN needs its session) */
  connectionString: string;
  maxAgeMs: number;
  maxEntries?: number;
  /** how long to wait before listening again after the connection is lost */
  retryMs?: number;
  log?: (line: string) => void;
}

export class AnswerCache {
  private readonly entries = new Map<string, Entry>();
  /** moves on with every forgetting: an answer read before it may be stale */
  private generation = 0;
  private listener?: pg.Client;
  private listening = false;
  private stopped = false;
  private retry?: NodeJS.Timeout;
  private failures = 0;
  private readonly syncs = new Map<string, () => void>();
  /** every change committed at or before this WAL position has been applied here */
  private knownThrough: Position = 0n;
  /** the oldest transaction still running at the last read of rowgate_private.user_changes: its changes and later ones are read next */
  private horizon: string | null = null;
  /** notifications received, and those whose changes have been read and forgotten */
  private notifications = 0;
  private applied = 0;
  private reading = false;
  /** resolved once `applied` reaches their count (sync markers) */
  private waiting: { until: number; resolve: () => void }[] = [];
  private readonly options: Required<Omit<AnswerCacheOptions, 'log'>> & Pick<AnswerCacheOptions, 'log'>;

  constructor(options: AnswerCacheOptions) {
    this.options = { maxEntries: 10_000, retryMs: 1_000, ...options };
  }

  /** Starts listening; resolves once listening, or after the first failure (it keeps trying). */
  async start(): Promise<void> {
    await this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const listener = this.listener;
    this.lost(listener);
    await listener?.end().catch(() => {});
  }

  get size() {
    return this.entries.size;
  }

  /** listening for changes: only then is anything kept or served */
  get active() {
    return this.listening;
  }

  /** answers served from the cache so far */
  hits = 0;

  /** The answer kept for a credential's key, while it holds. */
  get(key: string): CachedAnswer | undefined {
    // nothing is served while a change announced is not read yet
    if (!this.listening || this.applied !== this.notifications) return undefined;
    const entry = this.entries.get(key);
    if (entry && entry.until <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    if (entry) this.hits++;
    return entry;
  }

  /**
   * Taken before asking the database: an answer may be kept only if nothing
   * was forgotten between the ticket and the answer. Null: not keeping anything now.
   */
  ticket(): number | null {
    return this.listening ? this.generation : null;
  }

  /** Keeps an answer read under `ticket`, until `expiresAt` (the credential's, ms; null: none) or the maximum age. */
  put(ticket: number, key: string, answer: CachedAnswer, expiresAt: number | null) {
    if (!this.listening || ticket !== this.generation) return;
    const until = Math.min(expiresAt ?? Infinity, Date.now() + this.options.maxAgeMs);
    if (until <= Date.now()) return;
    this.entries.delete(key);
    if (this.entries.size >= this.options.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { ...answer, until });
  }

  /** Forgets the answers of these users: a space-separated list of ids, or '*' for everybody. */
  forget(users: string | null | undefined) {
    if (!users) return;
    this.generation++;
    if (users === '*') {
      this.entries.clear();
      return;
    }
    // a scan: changes to users and sessions are rare next to reads, and the
    // cache holds at most maxEntries answers
    const changed = new Set(users.split(' '));
    for (const [key, entry] of this.entries) if (changed.has(entry.userId)) this.entries.delete(key);
  }

  /**
   * Resolves once every notification committed before it has been applied
   * (notifications arrive in commit order): after a change made in SQL,
   * the next request is answered knowing it.
   */
  async sync(pool: pg.Pool | pg.Client): Promise<void> {
    const listener = this.listener;
    if (!this.listening) return;
    const marker = `sync:${randomUUID()}`;
    const seen = new Promise<void>((resolve) => this.syncs.set(marker, resolve));
    // the position is read in the marker's transaction: every commit before it
    // queued its notification before the marker's
    let rows: { position: string }[];
    try {
      ({ rows } = await pool.query<{ position: string }>('select pg_notify($1, $2), pg_current_wal_insert_lsn()::text as position', [
        CHANGES_CHANNEL,
        marker,
      ]));
    } catch (error) {
      // nothing waits for this marker (one that arrives all the same is ignored)
      this.syncs.delete(marker);
      throw error;
    }
    await seen;
    const position = parsePosition(rows[0]?.position);
    if (position !== null && position > this.knownThrough && this.listening && this.listener === listener) this.knownThrough = position;
  }

  /**
   * Resolves once every change committed at or before `position` (a write's
   * `Rowgate-Consistency`, src/db/consistency.ts) has been applied here: a
   * write made through another instance holds for the next request that sends
   * its token. One round trip, only when the position is past what is known.
   */
  async catchUp(position: Position, pool: pg.Pool): Promise<void> {
    if (this.behind(position)) await this.sync(pool);
  }

  /** Whether a change committed at `position` may not have been applied here yet */
  behind(position: Position): boolean {
    return this.listening && position > this.knownThrough;
  }

  protected notified(payload: string | undefined) {
    if (payload?.startsWith('sync:')) {
      const resolve = this.syncs.get(payload);
      this.syncs.delete(payload);
      if (!resolve) return;
      if (this.applied === this.notifications) resolve();
      else this.waiting.push({ until: this.notifications, resolve });
      return;
    }
    // whatever the payload (anybody may notify): read what changed
    this.notifications++;
    this.generation++; // an answer being read now may be stale
    void this.readChanges();
  }

  /** Reads the changes announced so far, one read at a time, and forgets their users' answers. */
  private async readChanges() {
    const listener = this.listener;
    if (this.reading || !listener) return;
    this.reading = true;
    try {
      while (this.applied !== this.notifications && this.listener === listener) {
        const target = this.notifications;
        try {
          const { rows } = await listener.query<{ horizon: string; user_ids: string | null }>(CHANGES_AFTER, [this.horizon]);
          if (this.listener !== listener) return;
          this.horizon = rows[0]?.horizon ?? this.horizon;
          this.forget(rows[0]?.user_ids);
        } catch {
          if (this.listener !== listener) return;
          this.forget('*');
        }
        this.applied = target;
        const done = this.waiting.filter((w) => w.until <= this.applied);
        this.waiting = this.waiting.filter((w) => w.until > this.applied);
        for (const w of done) w.resolve();
      }
    } finally {
      this.reading = false;
    }
  }

  private async listen() {
    if (this.stopped) return;
    const listener = new pg.Client({
      connectionString: this.options.connectionString,
      application_name: 'rowgate listener',
      keepAlive: true,
    });
    this.listener = listener;
    listener.on('notification', (message) => this.notified(message.payload));
    listener.on('error', () => this.lost(listener));
    listener.on('end', () => this.lost(listener));
    try {
      await listener.connect();
      await listener.query(`listen ${CHANGES_CHANNEL}`);
      const { rows } = await listener.query<{ horizon: string }>(CHANGES_AFTER, [null]);
      this.horizon = rows[0]?.horizon ?? null;
      this.notifications = this.applied = 0;
    } catch (error) {
      // said once an outage, not at every retry
      if (this.failures++ === 0) {
        this.options.log?.(
          `answer cache: cannot listen for changes (${(error as Error).message}); answering from the database until it can`,
        );
      }
      this.lost(listener);
      await listener.end().catch(() => {});
      return;
    }
    if (this.listener !== listener) return; // lost meanwhile
    if (this.failures > 0) this.options.log?.('answer cache: listening for changes again');
    this.failures = 0;
    // whatever was read before listening may have missed a change
    this.generation++;
    this.listening = true;
  }

  /** The listening connection is gone: nothing kept may be trusted, nothing is served until it is back. */
  private lost(listener: pg.Client | undefined) {
    if (!listener || this.listener !== listener) return;
    if (this.listening && !this.stopped) {
      this.options.log?.('answer cache: the listening connection was lost; answering from the database until it listens again');
      this.failures = 1;
    }
    this.listener = undefined;
    this.listening = false;
    this.knownThrough = 0n;
    this.forget('*');
    for (const resolve of this.syncs.values()) resolve();
    this.syncs.clear();
    for (const w of this.waiting) w.resolve();
    this.waiting = [];
    this.notifications = this.applied = 0;
    if (!this.stopped) {
      this.retry = setTimeout(() => void this.listen(), this.options.retryMs);
      this.retry.unref();
    }
  }
}
