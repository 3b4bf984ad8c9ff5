// The log's lines gathered into chunks before pino's destination (sonic-boom)
// sees them. sonic-boom appends each line to its last buffered string and then
// asks that string's UTF-8 length (`Buffer.byteLength(bufs[last])`), which
// flattens the whole concatenation: with 15 KiB chunks every line would copy
// ~7 KiB and leave it to the collector.
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

export class ChunkedDestination implements FlushableDestination {
  private lines: string[] = [];
  /** what is buffered, in UTF-16 units (a chunk's size within a factor the threshold does not care about) */
  private size = 0;
  private readonly target: FlushableDestination;
  private readonly chunkSize: number;

  /** A chunk is released once past `chunkSize` UTF-16 units. */
  constructor(target: FlushableDestination, chunkSize: number) {
    this.target = target;
    this.chunkSize = chunkSize;
    gathering.add(new WeakRef(this));
  }

  write(line: string): void {
    this.lines.push(line);
    this.size += line.length;
    if (this.size >= this.chunkSize) this.release();
  }

  /** What is gathered, handed to the target as one string */
  private release(): void {
    if (this.lines.length === 0) return;
    const chunk = this.lines.join('');
    this.lines = [];
    this.size = 0;
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
