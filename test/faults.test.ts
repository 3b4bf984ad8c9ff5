// Faults, the short versions `npm test` runs, each against a
// real server process (`node src/main.ts`) on its own embedded database: a 3 s
// database outage under load, SIGTERM under load, one slow query, a second
// SIGTERM while stopping.
// `npm run test:faults` runs the full ones (a 10 s outage, bigger data).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseOutage, sigtermUnderLoad, slowQueryDoesNotStarveThePool } from './faults/scenarios.ts';
import { databaseRunning, seed, startServerProcess, type Seeded, type ServerProcess } from './faults/server-process.ts';

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

test('a second SIGTERM while stopping does not cut the drain: every answered request is logged, the database stops, exit 0', async () => {
  const server = await startServerProcess({ ROWGATE_POOL_SIZE: '4' });
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
    const ids: string[] = [];
    const one = () =>
      new Promise<void>((resolve) => {
        const req = http.get(`${server.url}/healthz`, { agent }, (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) ids.push(String(res.headers['x-request-id']));
            resolve();
          });
        });
        req.on('error', () => resolve());
      });
    let sent = 0;
    const load = Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent++ < 4_000) await one();
      }),
    );
    await new Promise((r) => setTimeout(r, 300));
    server.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 50));
    server.child.kill('SIGTERM');
    server.child.kill('SIGINT');
    const exit = await server.exited;
    await load;
    agent.destroy();
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(ids.length).toBeGreaterThan(0);
    // the lines written before the exit are all read once the pipe closes
    await new Promise((r) => setTimeout(r, 200));
    const logged = new Set(server.lines.map((l) => /"request_id":"([^"]+)"/.exec(l.line)?.[1]));
    expect(ids.filter((id) => !logged.has(id))).toEqual([]);
    const said = server.lines.map((l) => l.line);
    expect(said.filter((l) => l.includes('received, shutting down'))).toHaveLength(1);
    expect(said.some((l) => l.includes('rowgate: stopped'))).toBe(true);
    expect(await databaseRunning(server.home)).toBe(false);
  } finally {
    await server.stop();
  }
}, 60_000);
