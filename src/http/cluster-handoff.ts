// The connections node:cluster's primary hands to a worker (its round robin,
// src/http/cluster.ts), followed until the worker says it took each one.
//
// The primary accepts every connection and sends it to a worker over IPC,
// keeping its own copy open until the worker answers: took it (the primary
// closes its copy) or not (its server is closed: the primary hands it to
// another worker). Two answers never come right:
// - A worker that dies (killed, crashed, or exits at the end of its stop)
//   before it answers never answers: the connection stayed open in the primary,
//   unread, until the client gave up, and its socket was never closed (one per
//   death: measured, every kill -9 under load left one, CLOSE-WAIT for ever).
// - A worker that closed its server while a connection was on its way hands it
//   back; when every other worker had closed its server by then, Node queued it
//   on a listener it had already closed, where nothing reads it (measured: 1-2
//   connections made at a SIGTERM waited the whole drain, 15 s, then were reset).
// So the hand-offs to each worker are counted here (Node's own messages on the
// IPC channel: `newconn` out, its `ack` back). When the worker's channel closes
// with some unanswered, each is answered for it; an answer "not taken" sends the
// connection to another worker; when no other worker's server takes
// connections (at a stop, once every one is closed), "taken" instead, which
// makes Node close it at once: the client is refused rather than left waiting.
// This leans on node:cluster's internal messages (cmd NODE_CLUSTER, act
// newconn, seq, ack, accepted), unchanged since Node 0.12; test/cluster.test.ts
// holds them to it (a kill under load: no connection waits).
import type { Worker } from 'node:cluster';

interface ClusterMessage {
  cmd?: string;
  act?: string;
  seq?: number;
  ack?: number;
  accepted?: boolean;
}

/**
 * Follows the connections handed to `worker`. `elsewhere()` says whether
 * another worker still serves (takes connections); `serving` is kept here from
 * the workers' own messages (a worker's server listening, then closed).
 */
export function followHandOffs(worker: Worker, serving: Set<Worker>, elsewhere: () => boolean): void {
  const child = worker.process as unknown as NodeJS.EventEmitter & { connected: boolean; send: (...args: unknown[]) => boolean };
  const unanswered = new Set<number>();
  const send = child.send;
  child.send = function (this: unknown, ...args: unknown[]) {
    const message = args[0] as ClusterMessage | undefined;
    if (message?.cmd === 'NODE_CLUSTER' && message.act === 'newconn' && typeof message.seq === 'number') unanswered.add(message.seq);
    return send.apply(this, args);
  };
  // before node:cluster's own listener, which acts on the answer
  child.prependListener('internalMessage', (message: ClusterMessage) => {
    if (message?.cmd !== 'NODE_CLUSTER') return;
    if (message.act === 'listening') serving.add(worker);
    // the worker's server is closed (it has one: the API's)
    if (message.act === 'close') serving.delete(worker);
    if (message.ack === undefined || !unanswered.delete(message.ack)) return;
    // handed back with nobody left to take it: closed (a refusal), not queued where nothing reads
    if (message.accepted === false && !elsewhere()) message.accepted = true;
  });
  // once node:cluster has taken the worker out of the round robin: at its exit once its channel is closed, or at the
  // channel's close (these run after node:cluster's own listeners). A channel with a connection on its way is not
  // closed at the worker's death (Node waits for the worker to acknowledge the handle): then only its exit comes.
  const settle = () => {
    if (child.connected) return;
    serving.delete(worker);
    for (const ack of [...unanswered]) {
      child.emit('internalMessage', { cmd: 'NODE_CLUSTER', ack, accepted: !elsewhere() } satisfies ClusterMessage);
    }
  };
  child.once('exit', settle);
  child.once('disconnect', settle);
}
