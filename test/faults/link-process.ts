// A stalling proxy (./stalling-proxy.ts) in a process of its own, driven over
// IPC: the database traffic of a fleet's servers then never waits on the test
// process's event loop, which is busy sending the load the servers answer.
// `startLinkProcess` forks this file; the child runs the proxy and obeys.
import { fork } from 'node:child_process';
import { type StallingProxy, startStallingProxy } from './stalling-proxy.ts';

type Command =
  | { op: 'stall'; application?: string }
  | { op: 'resume' }
  | { op: 'latency'; ms: number }
  | { op: 'retarget'; host: string; port: number }
  | { op: 'opened'; application?: string };

/** The proxy's controls, each answered once the child has applied it. */
export interface LinkProcess {
  port: number;
  stallOpenConnections(application?: string): Promise<void>;
  resume(): Promise<void>;
  setLatency(ms: number): Promise<void>;
  retarget(target: { host: string; port: number }): Promise<void>;
  /** connections opened so far, in all or by application_name */
  opened(application?: string): Promise<number>;
  close(): Promise<void>;
}

export async function startLinkProcess(target: { host: string; port: number }, listenHost: string): Promise<LinkProcess> {
  const child = fork(import.meta.filename, [JSON.stringify({ target, listenHost })], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [],
  });
  const answers: ((value: unknown) => void)[] = [];
  child.on('message', (message) => answers.shift()?.(message));
  const ask = (command: Command | { op: 'port' }) =>
    new Promise<unknown>((resolve, reject) => {
      answers.push(resolve);
      child.send(command, (error) => error && reject(error));
    });
  const port = (await ask({ op: 'port' })) as number;
  return {
    port,
    stallOpenConnections: async (application) => void (await ask({ op: 'stall', ...(application ? { application } : {}) })),
    resume: async () => void (await ask({ op: 'resume' })),
    setLatency: async (ms) => void (await ask({ op: 'latency', ms })),
    retarget: async ({ host, port: to }) => void (await ask({ op: 'retarget', host, port: to })),
    opened: async (application) => (await ask({ op: 'opened', ...(application ? { application } : {}) })) as number,
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

// the child: `node link-process.ts '{"target":…,"listenHost":…}'`
if (process.send && process.argv[2]?.startsWith('{')) {
  const { target, listenHost } = JSON.parse(process.argv[2]) as { target: { host: string; port: number }; listenHost: string };
  const proxy: StallingProxy = await startStallingProxy(target, { listenHost });
  process.on('message', (command: Command | { op: 'port' }) => {
    switch (command.op) {
      case 'port':
        return process.send!(proxy.port);
      case 'stall':
        proxy.stallOpenConnections(command.application);
        return process.send!(true);
      case 'resume':
        proxy.resume();
        return process.send!(true);
      case 'latency':
        proxy.setLatency(command.ms);
        return process.send!(true);
      case 'retarget':
        proxy.retarget({ host: command.host, port: command.port });
        return process.send!(true);
      case 'opened':
        return process.send!(command.application === undefined ? proxy.opened : proxy.openedBy(command.application));
    }
  });
  // the test's end, or its crash, ends the link
  process.on('disconnect', () => process.exit(0));
}
