// The access log (SPEC §14): one JSON line per request, written when its answer
// is finished or abandoned (src/operating/operate.ts). Its fields are a fixed
// set that never holds a token, a code, a secret, a header, a query string or a
// body. The line goes to the server's pino destination at pino's levels, in
// pino's own format (`level`, `time`, the fields, `msg`), so that a reader of
// the log sees one kind of line.
//
// Why not `logger.info(line)`: the access line was the largest part of the
// operating layer's cost on the cached users/me, and about half of it was pino's
// generic serializer, which walks and escapes any object (docs/performance.md).
// This line's shape is known, so it is written by one template, each string
// value through JSON.stringify.
import pino, { type DestinationStream, type Logger } from 'pino';

export interface AccessLine {
  request_id: string;
  method: string;
  /** the route's template (`/v1/orders/{id}`), never the path the client sent */
  route: string;
  status: number;
  duration_ms: number;
  subject_kind: string | null;
  credential_id: string | null;
  /** the client went away before its answer was written */
  aborted: boolean;
}

/** characters JSON writes as they are: most values (ids, methods, templates) need no escaping, which costs more than this test */
const PLAIN = /^[\w.:\-/{}() ]*$/;
const text = (value: string | null) => (value === null ? 'null' : PLAIN.test(value) ? `"${value}"` : JSON.stringify(value));
/** pino writes a number that JSON cannot hold as null */
const number = (value: number) => (Number.isFinite(value) ? String(value) : 'null');

/** The line as pino would write it: 5xx answers at warn level ("request failed"), the others at info. */
export function formatAccessLine(line: AccessLine, time = new Date().toISOString(), bindings = ''): string {
  const [level, msg] = line.status >= 500 ? ['warn', '"request failed"'] : ['info', '"request"'];
  return (
    `{"level":"${level}","time":"${time}"${bindings},"request_id":${text(line.request_id)},"method":${text(line.method)}` +
    `,"route":${text(line.route)},"status":${number(line.status)},"duration_ms":${number(line.duration_ms)}` +
    `,"subject_kind":${text(line.subject_kind)},"credential_id":${text(line.credential_id)}` +
    `${line.aborted ? ',"aborted":true' : ''},"msg":${msg}}\n`
  );
}

/** Writes access lines to the logger's destination, when its level lets them through. */
export function accessLog(logger: Logger): (line: AccessLine) => void {
  const destination = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
  // the logger's own fields (a cluster's worker names itself), serialised by pino as `,"key":value`
  const bindings = (logger as unknown as Record<symbol, string | undefined>)[pino.symbols.chindingsSym] ?? '';
  return (line) => {
    if (logger.isLevelEnabled(line.status >= 500 ? 'warn' : 'info')) destination.write(formatAccessLine(line, isoNow(), bindings));
  };
}

// the time as pino writes it (ISO 8601, milliseconds), formatted once a millisecond: a busy server writes
// several lines in each, and the formatting cost as much as the rest of a line
let formattedAt = Number.NaN;
let formatted = '';
function isoNow(): string {
  const now = Date.now();
  if (now !== formattedAt) {
    formattedAt = now;
    formatted = new Date(now).toISOString();
  }
  return formatted;
}
