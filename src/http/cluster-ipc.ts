// Requests between a cluster's primary and its workers (src/http/cluster.ts)
// over node:cluster's IPC channel, each answered once, or given up on after a
// time: a worker that is starting, stuck or dying must not hold the scrape or
// the write that asked it.

// biome-ignore lint/suspicious/noExplicitAny: Node types a Worker's and a process's message listeners apart; both take this
type MessageListener = (message: any) => void;

/** The side of an IPC channel a message goes through: a Worker in the primary, `process` in a worker */
export interface Channel {
  send?(message: unknown, sendHandle: undefined, options: object, callback: (error: Error | null) => void): unknown;
  on(event: 'message', listener: MessageListener): unknown;
}

interface Request {
  type: string;
  requestId: number;
}
interface Answer {
  type: 'rowgate:answer';
  answerTo: number;
  value?: unknown;
}

let nextRequest = 0;
/** The requests awaiting an answer on each channel, and the one listener that settles them */
const awaiting = new WeakMap<Channel, Map<number, (value?: unknown) => void>>();

function pendingOn(channel: Channel): Map<number, (value?: unknown) => void> {
  let pending = awaiting.get(channel);
  if (!pending) {
    const requests = new Map<number, (value?: unknown) => void>();
    pending = requests;
    awaiting.set(channel, requests);
    channel.on('message', (message: Answer) => {
      if (message?.type === 'rowgate:answer') requests.get(message.answerTo)?.(message.value);
    });
  }
  return pending;
}

/** Sends a request of `type` with `fields`; resolves with the answer's value, or `undefined` after `timeoutMs` */
export function request(channel: Channel, type: string, fields: Record<string, unknown>, timeoutMs: number): Promise<unknown> {
  const requestId = ++nextRequest;
  const pending = pendingOn(channel);
  return new Promise((resolve) => {
    const done = (value?: unknown) => {
      clearTimeout(timer);
      pending.delete(requestId);
      resolve(value);
    };
    const timer = setTimeout(done, timeoutMs);
    pending.set(requestId, done);
    // a closed channel (the other side is gone) is reported here, not thrown
    const sent = channel.send?.({ ...fields, type, requestId } satisfies Request, undefined, {}, (error) => error && done());
    if (sent === undefined) done();
  });
}

/** Answers the requests of `type` arriving on `channel` with what `handler` returns (nothing when it fails) */
export function answer<T extends object>(channel: Channel, type: string, handler: (message: T) => unknown): void {
  channel.on('message', (message: T & Request) => {
    if (message?.type !== type) return;
    Promise.resolve()
      .then(() => handler(message))
      .then(
        (value) => value,
        () => undefined,
      )
      // the asker may be gone: nothing to do then
      .then((value) =>
        channel.send?.({ type: 'rowgate:answer', answerTo: message.requestId, value } satisfies Answer, undefined, {}, () => {}),
      );
  });
}
