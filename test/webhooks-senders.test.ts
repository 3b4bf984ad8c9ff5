// Senders apart from the API (SPEC §17): API servers with ROWGATE_WEBHOOKS=off
// send nothing, `npx rowgate webhooks work` sends; a sender killed (SIGKILL) in
// the middle of a POST loses nothing: once its lease runs out another sender
// makes the attempt again, with the same webhook-id.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { expect, test } from 'vitest';
import { projectRoot } from '../src/db/setup.ts';
import { seed, startServerProcess } from './faults/server-process.ts';

const LEASE_SECONDS = 12;

/** `rowgate webhooks work` on the server's home, once it says it is sending */
async function sender(home: string): Promise<{ child: ChildProcess; exited: Promise<unknown>; stderr: string[] }> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k, v]) => v !== undefined && !/^(DATABASE_URL|AUTH_DATABASE_URL|ROOT_DATABASE_URL|ROWGATE_.*)$/.test(k),
    ),
  ) as Record<string, string>;
  const child = spawn(process.execPath, [path.join(projectRoot, 'src', 'cli', 'main.ts'), 'webhooks', 'work', '--poll-ms', '100'], {
    cwd: projectRoot,
    env: { ...base, ROWGATE_HOME: home, ROWGATE_WEBHOOKS_ALLOW_LOOPBACK: '1', ROWGATE_WEBHOOKS_LEASE_SECONDS: String(LEASE_SECONDS) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stderr: string[] = [];
  const exited = once(child, 'exit');
  const sending = new Promise<void>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr.push(chunk);
      if (chunk.includes('webhooks: sending')) resolve();
    });
    exited.then(() => reject(new Error(`the sender exited:\n${stderr.join('')}`)));
  });
  await sending;
  return { child, exited, stderr };
}

test('API servers off, `rowgate webhooks work` delivers; killed mid-POST, the next sender delivers after the lease with the same webhook-id', async () => {
  const received: { headers: http.IncomingHttpHeaders; body: string; at: number }[] = [];
  let arrived: () => void = () => {};
  // the first request is never answered: its sender is killed while it waits
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body, at: Date.now() });
      arrived();
      if (received.length > 1) res.writeHead(204).end();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const server = await startServerProcess({ ROWGATE_WEBHOOKS: 'off', ROWGATE_WEBHOOKS_ALLOW_LOOPBACK: '1' });
  const senders: ChildProcess[] = [];
  try {
    const { token, organizationId } = await seed(server, { products: 0, customers: 0, orders: 0 });
    const call = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const response = await call('/v1/webhook-endpoints/', {
      organization_id: organizationId,
      url: receiverUrl,
      event_types: ['product.created'],
    });
    const created = await response.json();
    expect(response.status, JSON.stringify(created)).toBe(201);
    const product = (name: string) =>
      call('/v1/products/', { organization_id: organizationId, name, price_amount: 1, price_currency: 'usd' });
    expect((await product('Kill')).status).toBe(201);
    // the API server sends nothing
    await new Promise((r) => setTimeout(r, 1_500));
    expect(received).toEqual([]);

    const firstArrival = new Promise<void>((resolve) => (arrived = resolve));
    const first = await sender(server.home);
    senders.push(first.child);
    await firstArrival;
    first.child.kill('SIGKILL');
    await first.exited;

    const secondArrival = new Promise<void>((resolve) => (arrived = resolve));
    const second = await sender(server.home);
    senders.push(second.child);
    await secondArrival;
    expect(received).toHaveLength(2);
    expect(received[1]!.headers['webhook-id']).toBe(received[0]!.headers['webhook-id']);
    // made again once the lease ran out, not before
    expect(received[1]!.at - received[0]!.at).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - 1_000);
    const payload = new Webhook(created.secret).verify(received[1]!.body, received[1]!.headers as Record<string, string>) as {
      type: string;
    };
    expect(payload.type).toBe('product.created');

    // and the sender goes on delivering what the API writes
    const thirdArrival = new Promise<void>((resolve) => (arrived = resolve));
    expect((await product('After')).status).toBe(201);
    await thirdArrival;
    expect(received).toHaveLength(3);
    second.child.kill('SIGTERM');
    await second.exited;
    expect(second.child.exitCode).toBe(0);
  } finally {
    for (const child of senders) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    receiver.closeAllConnections();
    receiver.close();
    await server.stop();
  }
}, 180_000);
