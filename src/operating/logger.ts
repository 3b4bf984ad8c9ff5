// The server's log (SPEC §14): JSON lines on stdout through pino, one per
// request (src/operating/access-log.ts) and one per event worth an operator's
// attention. Human-readable in development when pino-pretty (a development
// dependency) is installed. What a line may hold is decided where it is
// written: never a token, a code, a secret, a header, a query string or a body.
// The access line (src/operating/access-log.ts) is written to this logger's
// destination directly, in its format: an option added here that changes what
// a line holds (redact, serializers, mixin, hooks, formatters.log, bindings)
// must be added there too.
import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger } from 'pino';
import { ChunkedDestination } from './log-chunks.ts';
import type { LineTarget } from './worker-log.ts';

export type { Logger };

export interface LoggerOptions {
  level?: string;
  /** human-readable lines (pino-pretty), when it is installed */
  pretty?: boolean;
  /** where lines go (the tests collect them); default: stdout, written asynchronously in 60 KiB chunks */
  destination?: DestinationStream;
  /** a cluster's worker: its id (src/http/cluster.ts) on every line */
  worker?: number;
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
/**
 * A write a chunk, off the main thread (a wake-up of libuv's thread pool and
 * its completion through the event loop): fewer is cheaper. Just under the
 * write limit sonic-boom is given, a pipe's default capacity.
 */
const CHUNK = 60 * 1024;
const MAX_WRITE = 64 * 1024;

export function createLogger(options: LoggerOptions = {}): Logger {
  const chosen = options.destination ?? (options.pretty ? prettyStream() : undefined);
  // buffered: a line costs an array push, not a write(2); written at least every FLUSH_MS, and on exit (flushLog)
  // (a cluster's worker: stdout is its own pipe to the primary, src/operating/worker-log.ts)
  const destination =
    chosen ?? new ChunkedDestination(pino.destination({ dest: 1, sync: false, minLength: CHUNK, maxWrite: MAX_WRITE }), CHUNK);
  const logger = pino(
    {
      level: options.level ?? 'info',
      // no pid or hostname on every line: the process's supervisor knows them; a cluster's worker says which it is
      base: options.worker === undefined ? undefined : { worker: options.worker },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  if (!chosen) setInterval(() => logger.flush(), FLUSH_MS).unref();
  return logger;
}

/** The `(line) => void` the older modules take (start-up, the answer cache, the mailer), at info or warn level. */
export function lineLogger(logger: Logger, level: 'info' | 'warn' = 'info'): (line: string) => void {
  return (line) => logger[level](line);
}

/**
 * Where a cluster's primary passes on its workers' lines: its own log's
 * destination, after its own buffered lines (another destination, as the
 * tests' are, gets a line a write, as pino writes to it).
 */
export function lineTarget(logger: Logger): LineTarget {
  const destination = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
  if (destination instanceof ChunkedDestination) return destination;
  return {
    passOn: (lines) => {
      for (const line of lines.split(/(?<=\n)/)) destination.write(line);
      return true;
    },
    drained: (resume) => resume(),
  };
}

/**
 * Writes everything buffered (before the process exits): the asynchronous
 * flush, then, once no write is in flight, the rest at once (sonic-boom's
 * flush calls back when at most a chunk's minimum is left).
 */
export function flushLog(logger: Logger): Promise<void> {
  const destination = (logger as unknown as Record<symbol, { flushSync?: () => void }>)[pino.symbols.streamSym];
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
