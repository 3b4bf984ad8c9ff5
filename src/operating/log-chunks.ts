// The log's lines gathered into chunks before pino's destination (sonic-boom)
// sees them. sonic-boom appends each line to its last buffered string and then
// asks that string's UTF-8 length (`Buffer.byteLength(bufs[last])`), which
// flattens the whole concatenation: with 15 KiB chunks every line copied ~7 KiB
// and left it to the collector: 4.6 % of the server's samples on the cached
// users/me, whose rate rose 1.06x without it (docs/performance.md, "The log's chunks").
// Here a line costs an array push; sonic-boom gets one string a chunk.
import type { DestinationStream } from 'pino';

/** The part of sonic-boom's interface pino and flushLog use */
export interface FlushableDestination extends DestinationStream {
  flush(callback?: (error?: Error) => void): void;
  flushSync(): void;
}

/** The destinations whose gathered lines the process writes as it exits (one listener, whatever their number) */
const gathering = new Set<WeakRef<ChunkedDestination>>();
// before pino's own exit handler flushes the targets synchronously
process.prependListener('exit', () => {
  for (const destination of gathering) {
    try {
      destination.deref()?.flushSync();
    } catch {
      // the target is closed or broken: nothing more can be written
    }
  }
});

/**
 * The most UTF-16 units a chunk may hold when several processes write to one
 * stdout (node:cluster workers): at most 3 bytes each, so a chunk stays within
 * PIPE_BUF (4,096 bytes), which a pipe writes whole, never interleaved with
 * another writer's bytes (and a file or a Unix socket alike, on Linux). A line
 * longer than that alone is written on its own.
 */
export const SHARED_OUTPUT_CHUNK_UNITS = Math.floor(4096 / 3);

export class ChunkedDestination implements FlushableDestination {
  private lines: string[] = [];
  /** UTF-16 units buffered: a chunk's size within a factor the threshold does not care about */
  private units = 0;
  private readonly target: FlushableDestination;
  private readonly chunkUnits: number;
  private readonly bounded: boolean;

  /** `bounded`: a chunk never grows past `chunkUnits` (lines shared with other writers); else it is released once past it */
  constructor(target: FlushableDestination, chunkUnits: number, options: { bounded?: boolean } = {}) {
    this.target = target;
    this.chunkUnits = chunkUnits;
    this.bounded = options.bounded ?? false;
    gathering.add(new WeakRef(this));
  }

  write(line: string): void {
    if (this.bounded && this.units + line.length > this.chunkUnits) this.release();
    this.lines.push(line);
    this.units += line.length;
    if (this.units >= this.chunkUnits) this.release();
  }

  /** What is gathered, handed to the target as one string */
  private release(): void {
    if (this.lines.length === 0) return;
    const chunk = this.lines.join('');
    this.lines = [];
    this.units = 0;
    this.target.write(chunk);
  }

  flush(callback?: (error?: Error) => void): void {
    this.release();
    this.target.flush(callback);
  }

  flushSync(): void {
    this.release();
    this.target.flushSync();
  }
}
