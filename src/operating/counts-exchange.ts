// One exchange of the rate limits' counts with the database
// (rowgate_private.exchange_rate_limit_counts): a server's points in, the
// deployment's sums, the number of servers alive and the database's clock out.
import type pg from 'pg';

/** One exchange with the database: this server's points in, the deployment's sums and the database's clock out. */
export type Exchange = (
  server: string,
  batch: readonly { policy: string; key: string; window: number; points: number; expiresIn: number }[],
) => Promise<{ sums: number[]; servers: number /** the database's clock when it answered (ms since the epoch) */; clock?: number }>;

/** How long an exchange may take before its connection is destroyed and replaced */
export const REPLACE_MS = 2_000;

/**
 * The database's exchange, through `pool` (as rowgate_authenticator): the
 * database's clock is read after the exchange, in the same statement. A
 * statement that has not answered in REPLACE_MS loses its connection (the
 * statement timeout never fires on a frozen peer or a half-open socket).
 */
export function databaseExchange(pool: pg.Pool): Exchange {
  return async (server, batch) => {
    const client = await pool.connect();
    // a checked-out client whose socket dies emits 'error' (pg's documented rule): the failed query says it here
    const ignore = () => {};
    client.on('error', ignore);
    let timer: NodeJS.Timeout | undefined;
    try {
      const { rows } = await Promise.race([
        client.query<{ points: number; servers: number; clock: number }>(
          `select points, servers, extract(epoch from clock_timestamp())::float8 * 1000 as clock
             from rowgate_private.exchange_rate_limit_counts($1, $2, $3, $4, $5, $6)`,
          [
            server,
            batch.map((b) => b.policy),
            batch.map((b) => b.key),
            batch.map((b) => b.window),
            batch.map((b) => b.points),
            batch.map((b) => b.expiresIn),
          ],
        ),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the exchange did not answer within ${REPLACE_MS} ms`)), REPLACE_MS);
        }),
      ]);
      client.off('error', ignore);
      client.release();
      // the last row has no key: it carries the number of servers alive
      return { sums: rows.slice(0, -1).map((r) => r.points), servers: rows.at(-1)?.servers ?? 0, clock: rows.at(-1)?.clock };
    } catch (error) {
      // destroyed, not returned (its listener stays: the dying socket may still speak): the pool opens a new
      // connection for the next exchange
      client.release(error instanceof Error ? error : true);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  };
}

/** An exchange with no database: the sums are this process's own (tests of the decisions alone) */
export const localExchange: Exchange = async () => ({ sums: [], servers: 1 });
