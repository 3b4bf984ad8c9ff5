// Request ids (SPEC §14): every answer carries `X-Request-Id`, the client's own
// when it is well-formed, otherwise a new one. The id is set in the request's
// database transaction as `rowgate.request_id` with the other settings (REST:
// src/auth/authenticate.ts; GraphQL: src/graphql/server.ts), and it is the
// access log line's `request_id`.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

const REQUEST_ID_HEADER = 'X-Request-Id';
const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

/** the request's own property: no WeakMap entry a request for the garbage collector to trace */
const ID = Symbol('rowgate.request-id');
type Identified = IncomingMessage & { [ID]?: string };

/** Gives the request its id and puts it on the answer. */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  const sent = req.headers['x-request-id'];
  const id = typeof sent === 'string' && WELL_FORMED.test(sent) ? sent : randomUUID();
  (req as Identified)[ID] = id;
  res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

/** The request's id ('' for a request that did not pass through assignRequestId: none is invented here). */
export const requestId = (req: IncomingMessage): string => (req as Identified)[ID] ?? '';
