// SIGTERM under load, `npm run test:faults`: 32 keep-alive
// clients reading big pages of a tenant of 5,000 products and orders; after the
// signal no new connection, every request in flight completes, exit 0, the
// database stopped last (scenario: test/faults/scenarios.ts).
import { afterAll, beforeAll, test } from 'vitest';
import { sigtermUnderLoad } from '../faults/scenarios.ts';
import { seed, startServerProcess, type Seeded, type ServerProcess } from '../faults/server-process.ts';

let server: ServerProcess;
let data: Seeded;
beforeAll(async () => {
  server = await startServerProcess({ ROWGATE_POOL_SIZE: '10' });
  data = await seed(server, { products: 5_000, customers: 500, orders: 5_000 });
});
afterAll(() => server?.stop());

test('SIGTERM under load: no new connections, in-flight requests complete, the database closes last', async () => {
  await sigtermUnderLoad(server, data, { clients: 32, loadMs: 3_000 });
});
