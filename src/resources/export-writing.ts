// How an export's answer is written (SPEC §24): the media type an `Accept` header asks for,
// a chunk's text in pieces (NDJSON lines as PostgreSQL wrote them; CSV cells neutralised
// against formulas, by a CSV library), and the waits and the cut end on its socket.
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

/** Characters written at once: small enough to stay out of the heap's large objects, large enough for few writes. */
const PIECE = 32 * 1024;

/** A chunk's text (the CSV's header first, with the first chunk) in pieces of about PIECE characters. */
export function* exportPieces(format: ExportFormat, fields: readonly string[], chunk: KeysetChunk, header: boolean): Generator<string> {
  if (format === NDJSON) {
    // each piece joined once from the lines as PostgreSQL wrote them: no copy of a line, no string built up
    let lines: string[] = [];
    let characters = 0;
    for (const line of chunk.lines) {
      lines.push(line);
      characters += line.length + 1;
      if (characters >= PIECE) {
        lines.push('');
        yield lines.join('\n');
        lines = [];
        characters = 0;
      }
    }
    if (lines.length) {
      lines.push('');
      yield lines.join('\n');
    }
    return;
  }
  let rows: string[][] = header ? [[...fields]] : [];
  let characters = 0;
  for (const line of chunk.lines) {
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
 * Waits until the socket has taken what it held, or the answer closed. Both listeners are
 * taken off at once: an export waits once a piece, and listeners left behind would pile up.
 */
export function drained(res: Response): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
    if (res.destroyed) done();
  });
}

/**
 * Ends a chunked answer short: the socket sends what was written and closes, so the
 * answer's terminating zero-length chunk never goes out and the client sees a cut answer.
 */
export function endWithoutLastChunk(res: Response) {
  if (res.socket) res.socket.end();
  else res.destroy();
}
