// The access log (SPEC §14): one JSON line per request, written when its answer
// is finished or abandoned (src/operating/operate.ts). Its fields are a fixed
// set that never holds a token, a code, a secret, a header, a query string or a
// body. The line is the server's pino logger's own (`logger.info(fields, msg)`),
// so every option of that logger (level, bindings of a child, formatters,
// redaction) applies to it as to any other line.
import type { Logger } from 'pino';

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

/** Writes access lines to the logger: 5xx answers (a 504 timeout among them) at warn ("request failed"), the others at info. */
export function accessLog(logger: Logger): (line: AccessLine) => void {
  return ({ aborted, ...fields }) => {
    // `aborted` only when true: most lines never need it
    const line = aborted ? { ...fields, aborted } : fields;
    if (fields.status >= 500) logger.warn(line, 'request failed');
    else logger.info(line, 'request');
  };
}
