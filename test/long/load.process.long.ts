// Load, `npm run test:load`: 64 connections for 60 s on the
// main list and get endpoints of a real server process (`node src/main.ts`, its
// own embedded database, default pool) with a tenant of 10,000 products, 2,000
// customers and 10,000 orders. Zero errors and zero non-2xx answers; the
// latency percentiles are printed, overall and per endpoint.
// LOAD_DURATION (seconds) and LOAD_CONNECTIONS override the defaults.
import autocannon from 'autocannon';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { percentile, seed, startServerProcess, type Seeded, type ServerProcess } from '../faults/server-process.ts';

const DURATION = Number(process.env.LOAD_DURATION ?? 60);
const CONNECTIONS = Number(process.env.LOAD_CONNECTIONS ?? 64);

let server: ServerProcess;
let data: Seeded;
beforeAll(async () => {
  server = await startServerProcess({});
  data = await seed(server, { products: 10_000, customers: 2_000, orders: 10_000 });
});
afterAll(() => server?.stop());

test(`${CONNECTIONS} connections for ${DURATION} s on the list and get endpoints: zero errors, p99 reported`, async () => {
  const pick = (ids: string[]) => ids[Math.floor(Math.random() * ids.length)]!;
  const endpoints: { name: string; path: () => string }[] = [
    { name: 'GET /v1/products/', path: () => '/v1/products/?limit=20' },
    { name: 'GET /v1/products/{id}', path: () => `/v1/products/${pick(data.productIds)}` },
    { name: 'GET /v1/orders/', path: () => '/v1/orders/?limit=20' },
    { name: 'GET /v1/orders/{id}', path: () => `/v1/orders/${pick(data.orderIds)}` },
    { name: 'GET /v1/customers/', path: () => '/v1/customers/?limit=20' },
    { name: 'GET /v1/customers/{id}', path: () => `/v1/customers/${pick(data.customerIds)}` },
    { name: 'GET /v1/organizations/', path: () => '/v1/organizations/' },
    { name: 'GET /v1/organizations/{id}', path: () => `/v1/organizations/${data.organizationId}` },
  ];
  // each connection goes round the endpoints in order: its n-th answer is endpoint n mod 8
  const perEndpoint = endpoints.map(() => [] as number[]);
  const seen = new WeakMap<object, number>();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: server.url,
        connections: CONNECTIONS,
        duration: DURATION,
        headers: { authorization: `Bearer ${data.token}` },
        requests: endpoints.map((e) => ({ method: 'GET', setupRequest: (req: autocannon.Request) => ({ ...req, path: e.path() }) })),
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('response', (client: object, _status: number, _bytes: number, time: number) => {
      const n = seen.get(client) ?? 0;
      seen.set(client, n + 1);
      perEndpoint[n % endpoints.length]!.push(time);
    });
  });
  const report = {
    connections: CONNECTIONS,
    duration_s: DURATION,
    requests: result.requests.total,
    requests_per_s: result.requests.average,
    latency_ms: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statuses: { '2xx': result['2xx'], '4xx': result['4xx'], '5xx': result['5xx'] },
    per_endpoint_ms: Object.fromEntries(
      endpoints.map((e, i) => [
        e.name,
        { n: perEndpoint[i]!.length, p50: percentile(perEndpoint[i]!, 50), p99: percentile(perEndpoint[i]!, 99) },
      ]),
    ),
  };
  console.log(`load: ${JSON.stringify(report, null, 2)}`);
  expect(result.requests.total).toBeGreaterThan(0);
  expect(result.errors).toBe(0);
  expect(result.timeouts).toBe(0);
  expect(result.non2xx).toBe(0);
  expect(server.alive()).toBe(true);
});
