// Faults, `npm run test:faults`, against a real server process
// on its own embedded database (scenarios: test/faults/scenarios.ts):
//  1. the database stops for 10 s while requests flow: 503 fast, recovery within
//     2 s of its return, no crash, no acknowledged write lost;
//  2. one slow query (held up by a lock) ends at the statement timeout with a
//     504 Timeout (SPEC §14) and does not starve the pool; nor should it hold up its own token's
//     other requests.
// SIGTERM under load: test/long/shutdown.process.long.ts.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseOutage, slowQuery, slowQueryDoesNotStarveThePool } from '../faults/scenarios.ts';
import { percentile, seed, startServerProcess, type Seeded, type ServerProcess } from '../faults/server-process.ts';

describe('the database stops for 10 s under load', () => {
  let server: ServerProcess;
  let data: Seeded;
  beforeAll(async () => {
    server = await startServerProcess({ ROWGATE_POOL_SIZE: '10', ROWGATE_STATEMENT_TIMEOUT_MS: '5000' });
    data = await seed(server, { products: 200, customers: 50, orders: 200 });
  });
  afterAll(() => server?.stop());

  test('503 fast while it is away, recovery within 2 s, no crash, no acknowledged write lost', async () => {
    await databaseOutage(server, data, { outageMs: 10_000, afterMs: 8_000 });
  });
});

describe('one slow query', () => {
  let server: ServerProcess;
  let data: Seeded;
  beforeAll(async () => {
    // a pool of 4 and a 1 s statement timeout make the effect visible quickly
    server = await startServerProcess({ ROWGATE_POOL_SIZE: '4', ROWGATE_STATEMENT_TIMEOUT_MS: '1000' });
    data = await seed(server, { products: 20, customers: 20, orders: 20 });
  });
  afterAll(() => server?.stop());

  test('ends at the statement timeout with a 504 Timeout and does not starve the pool', async () => {
    await slowQueryDoesNotStarveThePool(server, data);
  });

  test('does not hold up the other requests of its own token', async () => {
    // rowgate_private.authenticate records a token's last use (at most once a minute) with an
    // UPDATE inside the request's transaction: while a slow request holds that row lock, every
    // other request of the same token waits for it, up to the statement timeout
    const owner = new pg.Client({ connectionString: server.ownerUrl });
    await owner.connect();
    await owner.query(`update rowgate.personal_access_tokens set last_used_at = now() - interval '2 minutes'`);
    await owner.end();
    const { othersDone, report } = await slowQuery(server, data, data.token);
    console.log(`slow query, the same token: ${JSON.stringify(report)}`);
    expect(othersDone.map((o) => o.status)).toEqual(othersDone.map(() => 200));
    expect(
      percentile(
        othersDone.map((o) => o.end - o.start),
        99,
      ),
    ).toBeLessThan(500);
  });
});
