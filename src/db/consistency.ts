// Read-your-writes past one server (SPEC §19). A write's answer carries
// `Rowgate-Consistency`: the primary's WAL position read after its commit (in
// the commit's own round trip: src/db/pool.ts), so at or past the commit record. A later request that sends it back (to any
// instance), or that comes with the same credential to the same instance (which
// remembers the last position per credential, as a convenience), is answered
// from data at least that recent: a standby is used only once it has replayed
// past it (src/db/read-replicas.ts).
import type pg from 'pg';

export const CONSISTENCY_HEADER = 'Rowgate-Consistency';

/** A WAL position (pg_lsn) as a number: `16/B374D848` → 0x16B374D848. */
export type Position = bigint;

/** The position a pg_lsn's text names, or null for anything else (a client's header is only a hint). */
export function parsePosition(text: unknown): Position | null {
  if (typeof text !== 'string') return null;
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text.trim());
  return match ? (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`) : null;
}

export function formatPosition(position: Position): string {
  return `${(position >> 32n).toString(16).toUpperCase()}/${(position & 0xffffffffn).toString(16).toUpperCase()}`;
}

/**
 * The end of the last record at or before an insert position. Where a record
 * ends on a page boundary, pg_current_wal_insert_lsn() points past the next
 * page's header (24 bytes; 40 at the start of a 16 MiB segment), while a
 * standby that has replayed that record reports the boundary: without this an
 * idle primary could look forever one header ahead of its standbys.
 */
export function recordEnd(position: Position): Position {
  if (position % 0x1000000n === 40n) return position - 40n;
  if (position % 8192n === 24n) return position - 24n;
  return position;
}

/** The primary's WAL position now (inserted, not necessarily flushed: at or past every commit it has acknowledged). */
const CURRENT_POSITION = 'select pg_current_wal_insert_lsn()::text as position';

export class Consistency {
  /** credential key (the token's SHA-256) → the position of its last write through this instance */
  private readonly remembered = new Map<string, Position>();
  /** credential key → until when (Date.now()) its reads stay on the primary (a GraphQL mutation's) */
  private readonly held = new Map<string, number>();
  private readonly primary: pg.Pool;
  private readonly maxEntries: number;
  private readonly holdMs: number;

  /**
   * `holdMs`: the standbys' lag bound (ROWGATE_READ_MAX_LAG_MS): past it, an
   * eligible standby has replayed a write.
   */
  constructor(options: { primary: pg.Pool; maxEntries?: number; holdMs?: number }) {
    this.primary = options.primary;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.holdMs = options.holdMs ?? 0;
  }

  /**
   * A write whose position is not known (a GraphQL mutation: PostGraphile commits
   * it): the credential's reads stay on the primary until the lag bound has
   * passed since (called at its start and once it is answered).
   */
  hold(credentialKey: string) {
    this.held.delete(credentialKey);
    if (this.held.size >= this.maxEntries) this.held.delete(this.held.keys().next().value!);
    this.held.set(credentialKey, Date.now() + this.holdMs);
  }

  /** Must the credential's reads run on the primary now? */
  onPrimary(credentialKey: string | undefined): boolean {
    if (credentialKey === undefined) return false;
    const until = this.held.get(credentialKey);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.held.delete(credentialKey);
    return false;
  }

  /**
   * After a write committed: the token its answer carries, remembered for the
   * credential. `committedAt`: the position its commit brought back (src/db/pool.ts,
   * inTransaction's `position`); without it the primary is asked. Undefined
   * when the primary cannot say (the write stands; only the token is missing).
   */
  async written(credentialKey: string | undefined, committedAt?: string | null): Promise<string | undefined> {
    let position: Position | null = parsePosition(committedAt);
    try {
      position ??= parsePosition((await this.primary.query<{ position: string }>(CURRENT_POSITION)).rows[0]?.position);
    } catch {
      return undefined;
    }
    if (position === null) return undefined;
    if (credentialKey !== undefined) this.remember(credentialKey, position);
    return formatPosition(position);
  }

  private remember(credentialKey: string, position: Position) {
    // a later position only (a concurrent write's answer may come after this one's)
    const known = this.remembered.get(credentialKey);
    if (known !== undefined && known > position) position = known;
    // most recent last: the oldest is dropped first when full
    this.remembered.delete(credentialKey);
    if (this.remembered.size >= this.maxEntries) this.remembered.delete(this.remembered.keys().next().value!);
    this.remembered.set(credentialKey, position);
  }

  /** The position a request must see at least: the later of its header and its credential's last write here; null: any. */
  required(credentialKey: string | undefined, header: unknown): Position | null {
    const sent = parsePosition(Array.isArray(header) ? header[0] : header);
    const known = credentialKey === undefined ? undefined : this.remembered.get(credentialKey);
    if (known === undefined) return sent;
    return sent === null || known > sent ? known : sent;
  }
}
