// The access log (SPEC §14): one JSON line per request, written when its answer
// is finished or abandoned, and the request metrics beside it. Its fields are a
// fixed set that never holds a token, a code, a secret, a header, a query string
// or a body. The line is the server's pino logger's own (`logger.info(fields,
// msg)`), so every option of that logger (level, bindings of a child,
// formatters, redaction) applies to it as to any other line.
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { requestRecord } from '../core/request-record.ts';
import type { RequestLog } from './request-log.ts';
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
export function logRequests(options: { logger?: Logger; metrics?: Metrics; requestLog?: RequestLog }) {
  const { metrics, requestLog } = options;
  const writeAccessLine = options.logger ? accessLog(options.logger) : undefined;
  return (req: Request, res: Response, next: NextFunction) => {
    if (!metrics && !writeAccessLine && !requestLog) return next();
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
      if (requestLog) logRequest(requestLog, req, res, seconds);
    });
    next();
  };
}

/**
 * The request log's row of a /v1 answer (SPEC §25): in the organization the request
 * resolved or named, or its subject's own; none when it names none. Never a body
 * or a query string.
 */
function logRequest(requestLog: RequestLog, req: Request, res: Response, seconds: number) {
  const record = requestRecord(req);
  if (!record.route?.startsWith('/v1/') || !record.logId) return;
  const subject = record.subject;
  const subjectKind = subject?.['rowgate.subject_kind'] || null;
  const subjectId = subject?.['rowgate.subject_id'] || null;
  const organizationId = record.organizationId ?? (subjectKind === 'organization' ? subjectId : null);
  // a 403 the server could not place is placed by the database: in the organization its denial was recorded in
  if (!organizationId && res.statusCode !== 403) return;
  requestLog.push({
    id: record.logId,
    organization_id: organizationId,
    subject_kind: subjectKind,
    subject_id: subjectId,
    request_id: record.id,
    method: req.method,
    route: record.route,
    path: req.originalUrl.split('?')[0]!.slice(0, 2000),
    status: res.statusCode,
    error: res.statusCode >= 400 ? (record.error ?? null) : null,
    duration_ms: Math.round(seconds * 1000),
    credential_kind: subject?.['rowgate.credential_kind'] || null,
    credential_id: subject?.['rowgate.credential_id'] || null,
    client_ip: record.clientAddress ?? null,
    user_agent: req.headers['user-agent']?.slice(0, 256) ?? null,
    api_version: (res.getHeader('rowgate-version') as string | undefined) ?? null,
    idempotent_replayed: res.getHeader('idempotent-replayed') === 'true',
    created_at: new Date().toISOString(),
  });
}
