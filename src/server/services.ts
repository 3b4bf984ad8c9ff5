// A running server is a list of services, each with a start and a stop. They
// start in the list's order, each on what the ones before it started, and stop
// in the reverse order, so a service never outlives what it runs on: the
// database is first in and last out, the HTTP server last in and first out.

export interface Service {
  /** what the service is, in a failure's message */
  readonly name: string;
  start(): unknown;
  stop(): unknown;
}

/** A service whose start `open`s something and whose stop `close`s what was opened (once opened). */
export function service<T>(name: string, open: () => T | Promise<T>, close: (opened: T) => unknown): Service {
  let opened: { value: T } | undefined;
  return {
    name,
    start: async () => {
      opened = { value: await open() };
    },
    stop: () => (opened ? close(opened.value) : undefined),
  };
}

/**
 * Services started one after another and stopped all at once: what must wind down
 * side by side within one bound (the requests draining while the deliveries in
 * flight end), where one after another would add their times up.
 */
export function together(name: string, services: readonly Service[]): Service {
  let started: Service[] = [];
  return {
    name,
    start: async () => {
      started = [];
      try {
        for (const each of services) {
          await each.start();
          started.push(each);
        }
      } catch (error) {
        await Promise.allSettled(started.map((each) => each.stop()));
        throw error;
      }
    },
    stop: async () => {
      const results = await Promise.allSettled(started.map((each) => each.stop()));
      const failed = results.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}

export interface Started {
  /** Stops every service started, in the reverse order; once, however often it is called. */
  stop(): Promise<void>;
}

/**
 * Starts the services in order. A start that fails stops those already started,
 * in the reverse order, and the failure is thrown. A stop that fails does not
 * keep the services below it running: every stop is tried, and the first failure
 * is thrown at the end.
 */
export async function startServices(services: readonly Service[]): Promise<Started> {
  const started: Service[] = [];
  const stopAll = async () => {
    let failure: { error: unknown } | undefined;
    for (const each of started.toReversed()) {
      try {
        await each.stop();
      } catch (error) {
        failure ??= { error: new Error(`${each.name}: ${(error as Error)?.message ?? error}`, { cause: error }) };
      }
    }
    if (failure) throw failure.error;
  };
  try {
    for (const each of services) {
      await each.start();
      started.push(each);
    }
  } catch (error) {
    await stopAll().catch(() => {});
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return { stop: () => (stopping ??= stopAll()) };
}
