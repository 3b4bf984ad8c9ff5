// What a cluster's primary (src/http/cluster.ts) and its workers
// (src/http/cluster-worker.ts) say to each other over node:cluster's IPC channel.
import type { ConsistencyNews } from '../db/consistency.ts';
import type { Connection } from '../db/connect.ts';

/** A worker is ready for its setup (it listens for messages: one sent before would be lost) */
export interface Ready {
  type: 'rowgate:ready';
}

/** What the primary sends a worker once it is ready */
export interface Setup {
  type: 'rowgate:setup';
  connection: Omit<Connection, 'embedded'>;
  poolSize: number;
  /** the port every worker listens on: PORT, or for PORT=0 one the primary chose, so that replacements take it too */
  port: number;
}

/** What a worker tells its primary once it listens */
export interface Listening {
  type: 'rowgate:listening';
  url: string;
}

/**
 * What one worker's write changed, told to the others before it is answered,
 * through the primary: a client's next request may reach any of them.
 * - The users it changed, whose users/me answers the others forget: they would
 *   learn of it from PostgreSQL's announcement, which a client's next request
 *   on another connection can beat (a busy machine delays it: a hostile review
 *   saw 3 to 15 of 150-200 immediate re-reads stale).
 * - With standbys, the credential's write position, or its GraphQL mutation's
 *   hold: its next read through another worker waits for (or goes to) data
 *   that recent, as through this one (src/db/consistency.ts).
 * - The keys of credentials it saw authenticate, or saw refused with a 401
 *   (src/auth/recent-credentials.ts): told in batches, nothing waits for them.
 * Each worker gets TELL_WAIT_MS (one starting or stuck holds no write for longer).
 */
export type News = { forget: string } | { credentials: { remembered: string[]; forgotten: string[] } } | ConsistencyNews;

export interface Peers {
  /** the other workers take the news in; resolves once they have (or the wait is over) */
  tell(news: News): Promise<void>;
  /** what this worker does with what another tells */
  listen(take: (news: News) => void): void;
}
export const TELL_EVERYONE = 'rowgate:tell-everyone';
export const TELL = 'rowgate:tell';
export const TELL_WAIT_MS = 250;

/** A worker's rate-limit spending since its last sync, answered with where those keys stand (src/operating/shared-counts.ts) */
export const RATE_COUNTS = 'rowgate:rate-counts';
/** A worker waits that long for the primary's answer to a report (the primary counts it whenever it comes) */
export const RATE_COUNTS_WAIT_MS = 1_000;
/** The keys one worker's spending took past their allowance, told to the others */
export const RATE_REFUSED = 'rowgate:rate-refused';

/** How long credentials' keys gather before they are told, and the most one telling carries of each kind */
export const CREDENTIALS_BATCH_MS = 20;
export const CREDENTIALS_BATCH_KEYS = 1_000;

/**
 * Keys in one at a time, told in batches every CREDENTIALS_BATCH_MS: a burst
 * of them costs the primary one message a batch, not one a key. What the
 * others do not learn (a batch past its bound, a telling that fails) costs
 * what a key never seen costs: its next request there spends its address's
 * allowance too (or, for a key a 401 ended, its credential's allowance until
 * that worker sees its own 401).
 */
export function tellInBatches(tell: (news: { remembered: string[]; forgotten: string[] }) => Promise<void>) {
  let batch = { remembered: [] as string[], forgotten: [] as string[] };
  let scheduled = false;
  const add = (list: 'remembered' | 'forgotten') => (key: string) => {
    if (batch[list].length < CREDENTIALS_BATCH_KEYS) batch[list].push(key);
    if (scheduled) return;
    scheduled = true;
    setTimeout(() => {
      scheduled = false;
      const told = batch;
      batch = { remembered: [], forgotten: [] };
      tell(told).catch(() => {});
    }, CREDENTIALS_BATCH_MS).unref();
  };
  return { remembered: add('remembered'), forgotten: add('forgotten') };
}
