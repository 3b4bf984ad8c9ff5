// A TCP proxy on loopback that a test can stall: while stalled it forwards
// nothing in either direction and closes nothing, as a frozen peer or a
// half-open socket after a failover looks to a client. New connections go
// through as soon as the proxy is told to let them (a replaced connection
// reaches a healthy server).
import net from 'node:net';

export interface StallingProxy {
  /** where clients connect */
  port: number;
  /** stops forwarding on the connections open now (new ones still pass) */
  stallOpenConnections(): void;
  /** forwards again on every connection */
  resume(): void;
  /** connections opened through the proxy so far */
  readonly opened: number;
  close(): Promise<void>;
}

export async function startStallingProxy(target: { host: string; port: number }): Promise<StallingProxy> {
  const pairs = new Set<{ client: net.Socket; server: net.Socket; stalled: boolean }>();
  let opened = 0;
  const proxy = net.createServer((client) => {
    opened++;
    const server = net.connect(target.port, target.host);
    const pair = { client, server, stalled: false };
    pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket) =>
      from.on('data', (chunk) => {
        if (!pair.stalled) to.write(chunk);
      });
    forward(client, server);
    forward(server, client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      server.destroy();
    };
    client.on('close', end).on('error', end);
    server.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as net.AddressInfo).port;
  return {
    port,
    get opened() {
      return opened;
    },
    stallOpenConnections() {
      for (const pair of pairs) pair.stalled = true;
    },
    resume() {
      for (const pair of pairs) pair.stalled = false;
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.server.destroy();
      }
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}
