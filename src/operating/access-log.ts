// The access log (SPEC §14): one JSON line per request, written when its answer
// is finished or abandoned, and the request metrics beside it. Its fields are a
// fixed set that never holds a token, a code, a secret, a header, a query string
// or a body. The line is the server's pino logger's own (`logger.info(fields,
// msg)`), so every option of that logger (level, bindings of a child,
// formatters, redaction) applies to it as to any other line.
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { requestRecord } from '../core/request-record.ts';
import type { Metrics } from './metrics.ts';

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

/** The route template of a request no route matched (metrics' labels stay few) */
const UNMATCHED = '(unmatched)';

/**
 * Right after the request's id: at the end of every request (CORS preflights
 * and refusals included), its metrics and its access line, from what the
 * request record says of its route and subject.
 */
export function logRequests(options: { logger?: Logger; metrics?: Metrics }) {
  const { metrics } = options;
  const writeAccessLine = options.logger ? accessLog(options.logger) : undefined;
  return (req: Request, res: Response, next: NextFunction) => {
    if (!metrics && !writeAccessLine) return next();
    const started = performance.now();
    // 'close' comes once (answered or abandoned): `on`, without once's wrapper
    res.on('close', () => {
      const status = res.statusCode;
      const seconds = (performance.now() - started) / 1000;
      const record = requestRecord(req);
      const route = record.route ?? UNMATCHED;
      metrics?.observe(req.method, route, status, seconds);
      writeAccessLine?.({
        request_id: record.id,
        method: req.method,
        route,
        status,
        duration_ms: Math.round(seconds * 10_000) / 10,
        subject_kind: record.subject?.['rowgate.subject_kind'] ?? null,
        credential_id: record.subject?.['rowgate.credential_id'] ?? null,
        aborted: !res.writableFinished,
      });
    });
    next();
  };
}
