// The server's log (SPEC §14): JSON lines on stdout through pino, one per
// request (src/operating/access-log.ts) and one per event worth an operator's
// attention. Human-readable in development when pino-pretty (a development
// dependency) is installed. What a line may hold is decided where it is
// written: never a token, a code, a secret, a header, a query string or a body.
import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger } from 'pino';
import { ChunkedDestination } from './log-chunks.ts';

export type { Logger };

export interface LoggerOptions {
  level?: string;
  /** human-readable lines (pino-pretty), when it is installed */
  pretty?: boolean;
  /** where lines go (the tests collect them); default: stdout, written asynchronously in 15 KiB chunks */
  destination?: DestinationStream;
}

function prettyStream(): DestinationStream | undefined {
  try {
    const pretty = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream;
    return pretty({ colorize: process.stdout.isTTY, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
  } catch {
    return undefined; // a production install has no development dependencies: JSON it is
  }
}

/** How long a buffered line may wait before it is written */
const FLUSH_MS = 500;
/** Chunks just under sonic-boom's 16 KiB write limit: a write a chunk, off the main thread, so fewer is cheaper */
const CHUNK = 15 * 1024;

export function createLogger(options: LoggerOptions = {}): Logger {
  const chosen = options.destination ?? (options.pretty ? prettyStream() : undefined);
  // buffered: a line costs an array push, not a write(2); written at least every FLUSH_MS, and on exit (flushLog)
  const buffered = chosen ? undefined : new ChunkedDestination(pino.destination({ dest: 1, sync: false, minLength: CHUNK }), CHUNK);
  const logger = pino(
    {
      level: options.level ?? 'info',
      // no pid or hostname on every line: the process's supervisor knows them
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    chosen ?? buffered!,
  );
  // the destination's own flush, without a callback: pino's logger.flush() hands sonic-boom one, and each such
  // flush while a write is stuck (a reader that stopped reading) added a 'drain' and an 'error' listener and an
  // fsync to come, every half second, without bound
  if (buffered) setInterval(() => buffered.flush(), FLUSH_MS).unref();
  destinations.set(logger, chosen ?? buffered!);
  return logger;
}

/** Each logger's destination, for flushLog: pino's API has no way back from a logger to it */
const destinations = new WeakMap<Logger, DestinationStream & { flushSync?: () => void }>();

/** The `(line) => void` the older modules take (start-up, the mailer), at info or warn level. */
export function lineLogger(logger: Logger, level: 'info' | 'warn' = 'info'): (line: string) => void {
  return (line) => logger[level](line);
}

/**
 * Writes everything buffered (before the process exits): the asynchronous
 * flush, then, once no write is in flight, the rest at once (sonic-boom's
 * flush calls back when at most a chunk's minimum is left).
 */
export function flushLog(logger: Logger): Promise<void> {
  const destination = destinations.get(logger);
  return new Promise((resolve) =>
    logger.flush(() => {
      try {
        destination?.flushSync?.();
      } catch {
        // a destination that is not a file (the tests' streams) or is closed: nothing more to write
      }
      resolve();
    }),
  );
}
