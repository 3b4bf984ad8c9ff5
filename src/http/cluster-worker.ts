// A worker of the cluster (src/http/cluster.ts): a whole server on the
// primary's port, with the primary's database connection and its share of the
// pool, its rate limits counted with the other workers' and its writes told to
// them. Imported only in a worker: the primary does not load the server.
import type { Config } from '../config.ts';
import type { Logger } from '../operating/logger.ts';
import { SharedCounts, type Standing } from '../operating/shared-counts.ts';
import { answer, request } from './cluster-ipc.ts';
import {
  type Listening,
  type News,
  type Peers,
  RATE_COUNTS,
  RATE_COUNTS_WAIT_MS,
  RATE_REFUSED,
  type Ready,
  type Setup,
  TELL,
  TELL_EVERYONE,
  TELL_WAIT_MS,
} from './cluster-messages.ts';
import { type Running, startServer } from './server.ts';

const workerPeers: Peers = {
  tell: async (news) => {
    await request(process, TELL_EVERYONE, { news }, 2 * TELL_WAIT_MS);
  },
  listen: (take) => answer(process, TELL, (message: { news: News }) => take(message.news)),
};

/** A worker's server: the primary's connection and its share of the pool; the primary is told once it listens. */
export async function startWorker(config: Config, logger: Logger): Promise<Running> {
  const setup = await new Promise<Setup>((resolve) => {
    const receive = (message: Setup) => {
      if (message?.type !== 'rowgate:setup') return;
      process.off('message', receive);
      resolve(message);
    };
    process.on('message', receive);
    process.send?.({ type: 'rowgate:ready' } satisfies Ready, undefined, {}, () => {});
  });
  const sharedCounts = new SharedCounts(
    (spent) => request(process, RATE_COUNTS, { spent }, RATE_COUNTS_WAIT_MS) as Promise<Standing[] | undefined>,
  );
  process.on('message', (message: { type?: string; refused?: Standing[] }) => {
    if (message?.type === RATE_REFUSED && Array.isArray(message.refused)) sharedCounts.learn(message.refused);
  });
  const running = await startServer({ ...config, ROWGATE_POOL_SIZE: setup.poolSize, PORT: setup.port }, logger, {
    connection: setup.connection,
    metricsForPrimary: config.ROWGATE_METRICS_PORT !== undefined,
    peers: workerPeers,
    sharedCounts,
  });
  process.send?.({ type: 'rowgate:listening', url: running.url } satisfies Listening, undefined, {}, () => {});
  return running;
}
