// Where an export's chunk keeps its lines (SPEC §24): their bytes, each line
// followed by a newline, in one buffer outside the JavaScript heap that the
// export reuses chunk after chunk. A line is copied in as the driver parses it
// (a type parser for the statement's text column) and its string is dropped at
// once, so no chunk lives in the heap as thousands of strings that outlast the
// young generation and are copied into the old one.
import pg from 'pg';

/** Bytes a buffer starts with, unless told: a small chunk fits. */
const INITIAL_BYTES = 64 * 1024;

export class ChunkText {
  private buffer: Buffer;
  /** bytes written */
  private written = 0;

  /** `bytes`: what a chunk is expected to hold, allocated at once (a chunk that needs more doubles it). */
  constructor(bytes = INITIAL_BYTES) {
    this.buffer = Buffer.allocUnsafeSlow(bytes);
  }

  /** Forgets what was written: the buffer is written again from its start. */
  reset(): this {
    this.written = 0;
    return this;
  }

  /** Appends a line and its newline; answers where the line starts. */
  append(line: string): number {
    // UTF-8 takes at most three bytes for each UTF-16 unit of a string
    if (this.buffer.length - this.written < line.length * 3 + 1) this.grow(Buffer.byteLength(line) + 1);
    const start = this.written;
    this.written += this.buffer.write(line, start);
    this.buffer[this.written++] = 0x0a;
    return start;
  }

  /** The lines written so far (a view of the buffer, valid until the next `reset`). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.written);
  }

  /**
   * Type parsers for a statement whose one text column is the chunk's line: each line
   * is appended as it is parsed and the row holds where it starts; other columns as
   * the process parses them.
   */
  parsers(): pg.CustomTypesConfig {
    const appendLine = (line: string) => this.append(line);
    return {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === pg.types.builtins.TEXT ? appendLine : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
    };
  }

  /**
   * The lines written, in their places in the page (`n`): `lines` as they were written, each with
   * where it starts. Written in their places (the statement numbers its rows in the order it sends
   * them), they are the buffer as it is; otherwise they are laid out again in a buffer of their own.
   */
  inPlaces(lines: readonly { n: number; start: number }[]): { bytes: Buffer; starts: number[] } {
    const bytes = this.bytes();
    if (lines.every((line, i) => i === 0 || line.n > lines[i - 1]!.n)) return { bytes, starts: lines.map((line) => line.start) };
    const text = (i: number) => bytes.toString('utf8', lines[i]!.start, (lines[i + 1]?.start ?? bytes.length) - 1);
    const laid = new ChunkText(Math.max(bytes.length, 1));
    const starts = lines
      .map((line, i) => ({ n: line.n, text: text(i) }))
      .sort((a, b) => a.n - b.n)
      .map((line) => laid.append(line.text));
    return { bytes: laid.bytes(), starts };
  }

  private grow(needed: number) {
    let size = this.buffer.length * 2;
    while (size - this.written < needed) size *= 2;
    const larger = Buffer.allocUnsafeSlow(size);
    this.buffer.copy(larger, 0, 0, this.written);
    this.buffer = larger;
  }
}
