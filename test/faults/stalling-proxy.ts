// A TCP proxy that a test can stall, slow down or point elsewhere, as a
// database link of a real fleet misbehaves:
// - stalled, a connection forwards nothing in either direction and closes
//   nothing, as a frozen peer, or a half-open socket after a failover, looks to
//   a client; new connections still go through (a replaced connection reaches
//   a healthy server);
// - with a latency, every chunk waits that long before it is forwarded, in
//   order, in both directions (this machine's kernel has no `netem` qdisc);
// - retargeted, new connections reach another server (a failover's address
//   moving to the promoted standby) while open ones stay where they are.
// Each connection is tagged with the application_name its PostgreSQL startup
// message names, so a test can stall one kind of connection only.
import net from 'node:net';

interface Pair {
  client: net.Socket;
  server: net.Socket;
  stalled: boolean;
  /** the startup message's application_name, once seen */
  application?: string;
}

export interface StallingProxy {
  /** where clients connect */
  port: number;
  /** stops forwarding on the connections open now (new ones still pass); only those of `application` when named */
  stallOpenConnections(application?: string): void;
  /** forwards again on every connection */
  resume(): void;
  /** added to each chunk's way, in both directions, from now on */
  setLatency(ms: number): void;
  /** where new connections go from now on */
  retarget(target: { host: string; port: number }): void;
  /** connections opened through the proxy so far, in all and by application_name */
  readonly opened: number;
  openedBy(application: string): number;
  close(): Promise<void>;
}

/** The application_name of a PostgreSQL startup message (protocol 3.0), when `chunk` holds one. */
function startupApplication(chunk: Buffer): string | undefined {
  if (chunk.length < 8 || chunk.readInt32BE(4) !== 196608) return undefined;
  const fields = chunk.subarray(8, chunk.readInt32BE(0)).toString('utf8').split('\0');
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'application_name') return fields[i + 1];
  return undefined;
}

export async function startStallingProxy(
  initialTarget: { host: string; port: number },
  options: { listenHost?: string } = {},
): Promise<StallingProxy> {
  const pairs = new Set<Pair>();
  const openedBy = new Map<string, number>();
  let target = initialTarget;
  let latencyMs = 0;
  let opened = 0;
  const proxy = net.createServer((client) => {
    opened++;
    const server = net.connect(target.port, target.host);
    const pair: Pair = { client, server, stalled: false };
    pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket, fromClient: boolean) => {
      // chunks leave in the order they came, each after the latency in force when it came
      let last = Promise.resolve();
      from.on('data', (chunk: Buffer) => {
        if (fromClient && pair.application === undefined) {
          pair.application = startupApplication(chunk);
          if (pair.application !== undefined) openedBy.set(pair.application, (openedBy.get(pair.application) ?? 0) + 1);
        }
        if (pair.stalled) return;
        const delay = latencyMs;
        if (delay === 0) {
          last = last.then(() => {
            if (!pair.stalled) to.write(chunk);
          });
          return;
        }
        const due = Date.now() + delay;
        last = last.then(
          () =>
            new Promise<void>((resolve) =>
              setTimeout(
                () => {
                  if (!pair.stalled) to.write(chunk);
                  resolve();
                },
                Math.max(0, due - Date.now()),
              ),
            ),
        );
      });
    };
    forward(client, server, true);
    forward(server, client, false);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      server.destroy();
    };
    client.on('close', end).on('error', end);
    server.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => proxy.listen(0, options.listenHost ?? '127.0.0.1', resolve));
  const port = (proxy.address() as net.AddressInfo).port;
  return {
    port,
    get opened() {
      return opened;
    },
    openedBy: (application) => openedBy.get(application) ?? 0,
    stallOpenConnections(application) {
      for (const pair of pairs) if (application === undefined || pair.application === application) pair.stalled = true;
    },
    resume() {
      for (const pair of pairs) pair.stalled = false;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    retarget(next) {
      target = next;
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
