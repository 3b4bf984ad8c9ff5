// Request ids (SPEC §14): every answer carries `X-Request-Id`, the client's own
// when it is well-formed, otherwise a new one. The id is set in the request's
// database transaction as `rowgate.request_id` with the other settings (REST:
// src/auth/authenticate.ts; GraphQL: src/graphql/requests.ts), and it is the
// access log line's `request_id`. The same first step records the client's
// address, which the rate limits and sign-in count.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BlockList } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import { requestRecord } from '../core/request-record.ts';
import { clientAddress } from '../core/client-address.ts';

const REQUEST_ID_HEADER = 'X-Request-Id';
const WELL_FORMED = /^[A-Za-z0-9._:-]{1,128}$/;

/** Gives the request its id and puts it on the answer. */
export function assignRequestId(req: IncomingMessage, res: ServerResponse): string {
  const sent = req.headers['x-request-id'];
  const id = typeof sent === 'string' && WELL_FORMED.test(sent) ? sent : randomUUID();
  requestRecord(req).id = id;
  res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

/** The request's id ('' for a request that did not pass through assignRequestId: none is invented here). */
export const requestId = (req: IncomingMessage): string => requestRecord(req).id;

/** The first middleware of all: the request's id, and its client's address (ROWGATE_TRUST_PROXY: `trusted`). */
export function identifyRequests(trusted: BlockList | null) {
  return (req: Request, res: Response, next: NextFunction) => {
    assignRequestId(req, res);
    requestRecord(req).clientAddress = clientAddress(req, trusted);
    next();
  };
}
