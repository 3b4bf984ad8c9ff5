// A cluster's workers write their log to the primary, each through its own
// pipe, and the primary passes their lines on to stdout. A pipe that several
// processes write to keeps their lines whole only in writes of PIPE_BUF (4 KiB,
// about fifteen access lines), and each write of a worker's went through
// libuv's thread pool: on the cached users/me that cost the default server a
// tenth of its throughput (docs/performance.md, "The workers' log writes").
// One writer a pipe writes chunks of any size; the primary, the only writer of
// stdout, cuts what it reads at the last line's end, so lines stay whole.
import type { Readable } from 'node:stream';

/** Where the lines go: each passing on says whether to go on (false: wait for `drained`) */
export interface LineTarget {
  passOn(lines: string): boolean;
  drained(resume: () => void): void;
}

/**
 * The most a line may hold while its end is awaited: past it, what was read is
 * passed on as a line (a worker's lines are far shorter; memory stays bounded
 * whatever it writes).
 */
export const LONGEST_LINE_BYTES = 1 << 20;

const NEWLINE = 0x0a;

/**
 * Passes a worker's output on to `target` in whole lines, pausing while the
 * target has too much to write. Resolves once the output has ended and all of
 * it was passed on (a last line without its end gets one).
 */
export function relayLines(source: Readable, target: LineTarget): Promise<void> {
  /** the start of a line whose end has not been read yet */
  let partial: Buffer | undefined;
  const pass = (lines: string) => {
    if (target.passOn(lines)) return;
    source.pause();
    target.drained(() => source.resume());
  };
  source.on('data', (data: Buffer) => {
    const read = partial ? Buffer.concat([partial, data]) : data;
    const end = read.lastIndexOf(NEWLINE);
    if (end === -1) {
      partial = read;
    } else {
      // a newline byte is never inside a UTF-8 sequence: what comes before it decodes whole
      partial = end + 1 < read.length ? Buffer.from(read.subarray(end + 1)) : undefined;
      pass(read.toString('utf8', 0, end + 1));
    }
    if (partial && partial.length > LONGEST_LINE_BYTES) {
      pass(`${partial.toString('utf8')}\n`);
      partial = undefined;
    }
  });
  return new Promise((resolve) => {
    const ended = () => {
      if (partial) pass(`${partial.toString('utf8')}\n`);
      partial = undefined;
      resolve();
    };
    source.once('end', ended);
    // a pipe broken rather than ended (the worker killed): what was read is still passed on
    source.once('error', ended);
  });
}
