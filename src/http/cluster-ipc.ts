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
  off(event: 'message', listener: MessageListener): unknown;
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

/** Sends a request of `type` with `fields`; resolves with the answer's value, or `undefined` after `timeoutMs` */
export function request(channel: Channel, type: string, fields: Record<string, unknown>, timeoutMs: number): Promise<unknown> {
  const requestId = ++nextRequest;
  return new Promise((resolve) => {
    const done = (value?: unknown) => {
      clearTimeout(timer);
      channel.off('message', receive);
      resolve(value);
    };
    const receive = (message: Answer) => {
      if (message?.type === 'rowgate:answer' && message.answerTo === requestId) done(message.value);
    };
    const timer = setTimeout(done, timeoutMs);
    channel.on('message', receive);
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
