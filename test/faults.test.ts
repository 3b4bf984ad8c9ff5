// Faults (issue 8, part 3), the short versions `npm test` runs, each against a
// real server process (`node src/main.ts`) on its own embedded database: a 3 s
// database outage under load, SIGTERM under load, one slow query.
// `npm run test:faults` runs the full ones (a 10 s outage, bigger data).
import { afterAll, beforeAll, describe, test } from 'vitest';
import { databaseOutage, sigtermUnderLoad, slowQueryDoesNotStarveThePool } from './faults/scenarios.ts';
import { seed, startServerProcess, type Seeded, type ServerProcess } from './faults/server-process.ts';

describe('a server process and its database', () => {
  let server: ServerProcess;
  let data: Seeded;
  beforeAll(async () => {
    server = await startServerProcess({ ROWGATE_POOL_SIZE: '4', ROWGATE_STATEMENT_TIMEOUT_MS: '1000' });
    data = await seed(server, { products: 1_000, customers: 100, orders: 1_000 });
  }, 180_000);
  afterAll(() => server?.stop());

  test('a 3 s database outage: 503 fast, recovery within 2 s, no acknowledged write lost', async () => {
    await databaseOutage(server, data, { outageMs: 3_000, afterMs: 3_000 });
  }, 60_000);

  test('a slow query ends at the statement timeout with a 504 Timeout and a warning line, and does not starve the pool', async () => {
    await slowQueryDoesNotStarveThePool(server, data);
  }, 60_000);

  test('SIGTERM under load: no new connections, in-flight requests complete, the database closes last', async () => {
    await sigtermUnderLoad(server, data, { clients: 16, loadMs: 1_500 });
  }, 60_000);
});
