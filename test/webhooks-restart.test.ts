// At least once (SPEC §17): a server killed (SIGKILL) in the middle of a
// delivery loses nothing. Its lease runs out, and the next server on the same
// database makes the delivery again.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { expect, test } from 'vitest';
import { seed, startServerProcess, type ServerProcess } from './faults/server-process.ts';

test('a server killed mid-delivery: the restarted server delivers the event again', async () => {
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  let arrived: () => void = () => {};
  // the first request is never answered: the server is killed while it waits
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      arrived();
      if (received.length > 1) res.writeHead(204).end();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const env = { ROWGATE_WEBHOOKS_ALLOW_LOOPBACK: '1', ROWGATE_WEBHOOKS_LEASE_SECONDS: '12' };
  const first = await startServerProcess(env);
  let second: ServerProcess | undefined;
  try {
    const { token, organizationId } = await seed(first, { products: 0, customers: 0, orders: 0 });
    const call = (server: ServerProcess, path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const response = await call(first, '/v1/webhook-endpoints/', {
      organization_id: organizationId,
      url: receiverUrl,
      event_types: ['product.created'],
    });
    const created = await response.json();
    expect(response.status, JSON.stringify(created)).toBe(201);
    const firstArrival = new Promise<void>((resolve) => (arrived = resolve));
    const product = await call(first, '/v1/products/', {
      organization_id: organizationId,
      name: 'Kill',
      price_amount: 1,
      price_currency: 'usd',
    });
    expect(product.status).toBe(201);
    await firstArrival;

    first.child.kill('SIGKILL');
    await first.exited;
    const secondArrival = new Promise<void>((resolve) => (arrived = resolve));
    second = await startServerProcess(env, { home: first.home });
    await secondArrival;

    expect(received).toHaveLength(2);
    expect(received[1]!.headers['webhook-id']).toBe(received[0]!.headers['webhook-id']);
    const wh = new Webhook(created.secret);
    const payload = wh.verify(received[1]!.body, received[1]!.headers as Record<string, string>) as { type: string };
    expect(payload.type).toBe('product.created');
  } finally {
    receiver.closeAllConnections();
    receiver.close();
    if (second) await second.stop();
    else await first.stop();
  }
}, 180_000);
