// What the layers learn about a request as it passes through them, in one typed
// record on the request: its id, its client, the route that answered it, the
// subject its credential authenticated and the shape of its errors. The access
// log, the metrics, the rate limits and the error handler read it; nothing
// travels in `res.locals`.
import type { IncomingMessage } from 'node:http';

/** The error body of the OAuth2 protocol endpoints (RFC 6749) and of client registration (RFC 7591); SPEC §7's otherwise */
export type ErrorFormat = 'oauth2' | 'oauth2-registration';

export interface RequestRecord {
  /** X-Request-Id: the client's own when well-formed, else a new one; '' before it is assigned */
  id: string;
  /** the client as the rate limits count it (behind the trusted proxies) */
  clientAddress?: string;
  /** the route template (`/v1/orders/{id}`) the access log and the metrics report, never the path sent */
  route?: string;
  /** the role and settings the request's credential authenticated as */
  subject?: Readonly<Record<string, string>>;
  /** the shape of the request's error answers, set before its body is parsed */
  errorFormat?: ErrorFormat;
  /** the API version its Rowgate-Version header chose (SPEC §23); none: the credential's pinned one */
  apiVersion?: string;
}

/** A property of the request itself: nothing for the garbage collector to trace in a WeakMap */
const RECORD = Symbol('rowgate.request-record');

/** The request's record, made empty on first use. */
export function requestRecord(req: IncomingMessage): RequestRecord {
  const carrier = req as IncomingMessage & { [RECORD]?: RequestRecord };
  let record = carrier[RECORD];
  if (!record) carrier[RECORD] = record = { id: '' };
  return record;
}
