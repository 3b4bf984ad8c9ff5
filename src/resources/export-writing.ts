// How an export's answer is written (SPEC §24): the media type an `Accept` header asks for,
// a chunk's text in pieces (NDJSON lines as PostgreSQL wrote them; CSV cells neutralised
// against formulas, by a CSV library), and the waits and the cut end on its socket.
import type { ServerResponse } from 'node:http';
import type { Response } from 'express';
import { stringify } from 'csv-stringify/sync';
import type { KeysetChunk } from '../listing/list-page.ts';

export const NDJSON = 'application/x-ndjson';
export const CSV = 'text/csv';
/** The media types an export answers in. */
export type ExportFormat = typeof CSV | typeof NDJSON;

/** The media type answered for an `Accept` header: CSV unless NDJSON is named first; null: 406. */
export function exportFormat(accept: string | undefined): ExportFormat | null {
  if (!accept?.trim()) return CSV;
  for (const range of accept.split(',')) {
    const [type = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    if (parameters.some((p) => /^q=0(\.0*)?$/.test(p))) continue;
    if (type === NDJSON) return NDJSON;
    if (type === CSV || type === '*/*') return CSV;
  }
  return null;
}

/** A cell a spreadsheet would read as a formula (=, +, -, @, tab, carriage return) gets a leading '. */
export function neutralised(cell: string): string {
  return /^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell;
}

/** An item's value as its CSV cell: nested objects as JSON, null empty. */
function cellOf(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return neutralised(JSON.stringify(value));
  return neutralised(String(value));
}

/** Bytes (NDJSON) or characters (CSV) written at once: a few of the socket's own writes, few enough calls. */
const PIECE = 64 * 1024;

/**
 * A chunk's text (the CSV's header first, with the first chunk) in pieces of about PIECE:
 * NDJSON as views of the chunk's own bytes (`KeysetChunk.text`), CSV written from its items.
 */
export function* exportPieces(
  format: ExportFormat,
  fields: readonly string[],
  chunk: KeysetChunk,
  header: boolean,
): Generator<string | Buffer> {
  if (format === NDJSON) {
    // a piece may end inside a line: the client reads a stream of bytes
    for (let at = 0; at < chunk.text.length; at += PIECE) yield chunk.text.subarray(at, Math.min(at + PIECE, chunk.text.length));
    return;
  }
  let rows: string[][] = header ? [[...fields]] : [];
  let characters = 0;
  for (let i = 0; i < chunk.count; i++) {
    const line = chunk.line(i);
    const item = JSON.parse(line) as Record<string, unknown>;
    rows.push(fields.map((field) => cellOf(item[field])));
    characters += line.length;
    if (characters >= PIECE) {
      yield stringify(rows);
      rows = [];
      characters = 0;
    }
  }
  if (rows.length) yield stringify(rows);
}

/**
 * Resolves on the first of `event` and the answer's close (at once if it is closed), with every
 * listener taken off then: an export waits once a piece, and listeners left behind would pile up.
 * `start` runs once the listeners are on, and may settle the wait itself.
 */
function settledOn(res: ServerResponse, event: 'drain' | undefined, start?: (done: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      if (event) res.off(event, done);
      res.off('close', done);
      resolve();
    };
    if (event) res.on(event, done);
    res.on('close', done);
    start?.(done);
    if (res.destroyed) done();
  });
}

/**
 * Writes the last piece of a chunk and waits until the socket has taken it (and so every piece
 * before it), or the answer closed: the buffer the pieces are views of may then be written again.
 */
export const written = (res: ServerResponse, piece: string | Buffer) => settledOn(res, undefined, (done) => res.write(piece, done));

/** Waits until the socket has taken what it held, or the answer closed. */
export const drained = (res: ServerResponse) => settledOn(res, 'drain');

/**
 * Ends a chunked answer short: the socket sends what was written and closes, so the
 * answer's terminating zero-length chunk never goes out and the client sees a cut answer.
 */
export function endWithoutLastChunk(res: Response) {
  if (res.socket) res.socket.end();
  else res.destroy();
}
