// One error body everywhere (SPEC §7): {"error": "<Name>", "detail": <string or list>}.
// Database errors are turned into it here, after src/core/sqlstate.ts has said what they are.
import type { DatabaseError } from 'pg';
import { databaseFailure } from './sqlstate.ts';

export interface ValidationIssue {
  type: string;
  loc: (string | number)[];
  msg: string;
  input?: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly error: string;
  readonly detail: string | ValidationIssue[];
  readonly headers: Record<string, string>;

  constructor(status: number, error: string, detail: string | ValidationIssue[], headers: Record<string, string> = {}) {
    super(typeof detail === 'string' ? detail : error);
    this.status = status;
    this.error = error;
    this.detail = detail;
    this.headers = headers;
  }

  body(): Record<string, unknown> {
    return { error: this.error, detail: this.detail };
  }
}

/**
 * An error of the OAuth2 protocol endpoints (token, revocation, introspection,
 * metadata), whose body RFC 6749 §5.2 fixes: `{error, error_description}`. The
 * error handler renders it like any ApiError; the /v1 resources keep SPEC §7.
 */
export class OAuth2Error extends ApiError {
  constructor(status: number, error: string, description: string, headers: Record<string, string> = {}) {
    super(status, error, description, { 'Cache-Control': 'no-store', Pragma: 'no-cache', ...headers });
  }

  override body() {
    return { error: this.error, error_description: this.detail as string };
  }
}

export const oauth2InvalidRequest = (description: string) => new OAuth2Error(400, 'invalid_request', description);
/** RFC 6749 §5.2: a failed client authentication is a 401, with a challenge for HTTP Basic. */
export const oauth2InvalidClient = () =>
  new OAuth2Error(401, 'invalid_client', 'Client authentication failed', { 'WWW-Authenticate': 'Basic realm="rowgate"' });

/** Any error of an OAuth2 protocol endpoint in RFC 6749's shape. */
export function asOAuth2Error(error: ApiError): OAuth2Error {
  if (error instanceof OAuth2Error) return error;
  const description =
    typeof error.detail === 'string'
      ? error.detail
      : error.detail.map((issue) => `${issue.loc.slice(1).join('.') || issue.loc[0]}: ${issue.msg}`).join('; ');
  const { 'WWW-Authenticate': _challenge, ...headers } = error.headers;
  if (error.status === 503) return new OAuth2Error(503, 'temporarily_unavailable', description, headers);
  // over a rate limit: RFC 6749's word for a server that cannot take the request now, with its Retry-After
  if (error.status === 429) return new OAuth2Error(429, 'temporarily_unavailable', description, headers);
  if (error.status === 405) return new OAuth2Error(405, 'invalid_request', description, headers);
  if (error.status >= 500) return new OAuth2Error(error.status, 'server_error', description, headers);
  if (error.status === 401) return oauth2InvalidClient();
  // a bad body, path or query, and an unsupported or oversized body, are malformed requests
  return new OAuth2Error(error.status === 413 || error.status === 415 ? error.status : 400, 'invalid_request', description, headers);
}

/**
 * RFC 7591 §3.2.2: metadata a registration refuses is a 400 in RFC 6749's shape,
 * `invalid_redirect_uri` when a redirect URI is at fault, else
 * `invalid_client_metadata`. Other errors keep SPEC §7's shape.
 */
export function asRegistrationError(error: ApiError): ApiError {
  if (error.status !== 400 && error.status !== 422) return error;
  const issues = typeof error.detail === 'string' ? [] : error.detail;
  const redirect = issues.some((issue) => issue.loc[1] === 'redirect_uris');
  const description =
    typeof error.detail === 'string'
      ? error.detail
      : issues.map((issue) => `${issue.loc.slice(1).join('.') || issue.loc[0]}: ${issue.msg}`).join('; ');
  return new OAuth2Error(400, redirect ? 'invalid_redirect_uri' : 'invalid_client_metadata', description);
}

export const notFound = (detail = 'Not found') => new ApiError(404, 'ResourceNotFound', detail);
export const notPermitted = (reason: string) => new ApiError(403, 'NotPermitted', reason);
/** How much of a client's input an answer or a log line repeats (SPEC §14): characters of one string, issues of one 422. */
export const ECHOED_CHARACTERS = 200;
export const MAX_ISSUES = 50;

/** A client's text, at most ECHOED_CHARACTERS of it (the last an ellipsis when it was cut). */
export const boundedText = (text: string, max = ECHOED_CHARACTERS) => {
  if (text.length <= max) return text;
  // never half a surrogate pair (an emoji cut in two is no Unicode a strict JSON reader takes)
  const end = isHighSurrogate(text.charCodeAt(max - 2)) ? max - 2 : max - 1;
  return `${text.slice(0, end)}…`;
};
const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * The refused input echoed in a validation issue, bounded: a string of at most
 * 200 characters, at most 50 items or fields, at most 8 levels deep (deeper
 * parts become "…"): a JSON body nested 4,000 levels deep, echoed whole,
 * overflows the stack as the 422 is serialised, and Express answers with its
 * HTML error page and a stack trace.
 */
function boundedInput(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return boundedText(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= 8) return '…';
  if (Array.isArray(value)) return value.slice(0, 50).map((v) => boundedInput(v, depth + 1));
  return Object.fromEntries(
    Object.entries(value)
      .slice(0, 50)
      .map(([k, v]) => [boundedText(k), boundedInput(v, depth + 1)]),
  );
}

/**
 * One issue as answered: its location's names, its message and its input
 * bounded (each name of a large body of unknown fields is repeated in the
 * location and the message: the 422 would be several times the body).
 */
function boundedIssue(issue: ValidationIssue): ValidationIssue {
  const bounded: ValidationIssue = {
    type: issue.type,
    loc: issue.loc.map((part) => (typeof part === 'string' ? boundedText(part) : part)),
    msg: boundedText(issue.msg, 2 * ECHOED_CHARACTERS),
  };
  if ('input' in issue) bounded.input = boundedInput(issue.input);
  return bounded;
}

/** A 422 of at most MAX_ISSUES issues: past that, the last one says how many more there were. */
export function validationError(issues: ValidationIssue[]) {
  const kept = issues.length > MAX_ISSUES ? issues.slice(0, MAX_ISSUES - 1) : issues;
  const detail = kept.map(boundedIssue);
  if (issues.length > MAX_ISSUES) {
    detail.push({
      type: 'too_many_issues',
      loc: [issues[MAX_ISSUES - 1]!.loc[0] ?? 'body'],
      msg: `${issues.length - kept.length} more issues are not listed`,
    });
  }
  return new ApiError(422, 'RequestValidationError', detail);
}
export const invalidField = (loc: (string | number)[], msg: string, input?: unknown) =>
  validationError([{ type: 'value_error', loc, msg, ...(input === undefined ? {} : { input }) }]);

/** How a statement timeout is said: the limit, in seconds. */
export function timeoutDetail(timeoutMs: number) {
  const seconds = Number((timeoutMs / 1000).toFixed(3));
  return `The request took longer than ${seconds} second${seconds === 1 ? '' : 's'} and was cancelled`;
}

/** A statement ran past the statement timeout (SPEC §14): the database is there, the request was too slow. */
const statementTimeout = (timeoutMs: number) => new ApiError(504, 'Timeout', timeoutDetail(timeoutMs));

const serviceUnavailable = () =>
  new ApiError(503, 'ServiceUnavailable', 'The database is unavailable; try again shortly', { 'Retry-After': '2' });

/**
 * A transaction PostgreSQL ended to let a concurrent one go on: nothing of it
 * was kept, so the same request may be sent again, where a 500 would say the
 * server was at fault.
 */
export const isCollision = (error: unknown) => databaseFailure(error) === 'collision';
const collided = () =>
  new ApiError(503, 'ServiceUnavailable', 'The request collided with a concurrent change and was undone; try again', {
    'Retry-After': '1',
  });

const REALM = 'Bearer realm="rowgate"';

/** 401; `invalidToken`: the token sent authenticates nobody (RFC 6750 §3.1), which a client library takes as "discard or refresh it". */
export function unauthorized(detail: string, invalidToken: boolean) {
  return new ApiError(401, 'Unauthorized', detail, {
    'WWW-Authenticate': invalidToken ? `${REALM}, error="invalid_token"` : REALM,
  });
}

export function insufficientScope(anyOf: readonly string[]) {
  return new ApiError(403, 'InsufficientScope', `The token lacks the required scope: one of ${anyOf.join(', ')}`, {
    'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${anyOf.join(' ')}"`,
  });
}

/** Constraints whose violation is the client's mistake (unique values, references), and where it is. */
const constraintFields: Record<string, { loc: string[]; msg: string }> = {
  memberships_role_fkey: { loc: ['body', 'role'], msg: 'Unknown role' },
  organizations_slug_live: { loc: ['body', 'slug'], msg: 'An organization with this slug exists already' },
  customers_email_live: { loc: ['body', 'email'], msg: 'A customer with this e-mail exists already in the organization' },
  customers_external_id_live: { loc: ['body', 'external_id'], msg: 'A live customer of the organization has this external id already' },
  customer_members_email_live: { loc: ['body', 'email'], msg: 'The customer has a seat with this e-mail already' },
  users_email_live: { loc: ['body', 'email'], msg: 'A user with this e-mail exists already' },
  organizations_max_token_lifetime_days_check: { loc: ['body', 'max_token_lifetime_days'], msg: 'From 1 to 3650 days, or null' },
  ...Object.fromEntries(
    ['products', 'customers', 'orders', 'customer_members', 'refunds'].map((table) => [
      `${table}_metadata_valid`,
      { loc: ['body', 'metadata'], msg: 'The metadata breaks its rules (SPEC §18)' },
    ]),
  ),
};

/**
 * A database error as the API answers it (src/core/sqlstate.ts says what it
 * is): RG401, a live credential refused where it was presented (message =
 * why: a client address outside the token's allow-list), answered as any
 * credential that authenticates nobody; RG403, a policy denied (message = the reason); RG404, not found or out
 * of reach; RG422, bad input (detail = the field's location, dotted:
 * `body.email`); RGSCO, the credential lacks a scope (detail = the scope); RG429,
 * past a cap (message = which; detail = the seconds until it allows one more,
 * when known).
 */
export function fromDatabaseError(error: unknown, statementTimeoutMs?: number): ApiError | null {
  const e = error as Partial<DatabaseError>;
  switch (databaseFailure(error)) {
    case 'timeout':
      return statementTimeoutMs === undefined ? serviceUnavailable() : statementTimeout(statementTimeoutMs);
    case 'gone':
    case 'busy':
      return serviceUnavailable();
    case 'collision':
      return collided();
    case 'denied':
      return notPermitted(e.message ?? 'Not permitted');
    case 'notFound':
      return notFound();
    case 'scope':
      return insufficientScope([e.detail ?? 'unknown']);
    case 'refused':
      return unauthorized(e.message ?? 'The credential is refused', true);
    case 'capped':
      return new ApiError(
        429,
        'TooManyRequests',
        e.message ?? 'Too many requests',
        /^\d+$/.test(e.detail ?? '') ? { 'Retry-After': e.detail! } : {},
      );
    case 'invalid':
      // an index in the location is a number, as in the schemas' own issues (`body.allowed_ips.1`)
      return invalidField(
        (e.detail ?? 'body').split('.').map((part) => (/^\d+$/.test(part) ? Number(part) : part)),
        e.message ?? 'Invalid value',
      );
    case 'constraint': {
      const at = constraintFields[e.constraint ?? ''];
      // a check the client's input can break (the metadata's rules) is a 422; any other is the server's own bug
      if (e.code === '23514' && !at) return null;
      return invalidField(
        at?.loc ?? ['body'],
        at?.msg ?? (e.code === '23505' ? 'This value is taken already' : 'A referenced resource does not exist'),
      );
    }
    case 'badValue':
      return validationError([{ type: 'value_error', loc: ['body'], msg: e.message ?? 'Invalid value' }]);
    default:
      return null;
  }
}

/** The row, or a 404 when the database returned none (invisible or absent). */
export function found<T>(row: T | undefined | null): T {
  if (row === undefined || row === null) throw notFound();
  return row;
}

/** Any error as the API answers it: ours as they are, the body parsers' and the database's mapped, the rest a 500. */
export function toApiError(error: unknown, statementTimeoutMs?: number): ApiError {
  if (error instanceof ApiError) return error;
  const e = error as { type?: string; status?: number; message?: string };
  if (e?.type === 'entity.too.large') return new ApiError(413, 'PayloadTooLarge', 'The request body is larger than 1 MiB');
  if (e?.type === 'entity.parse.failed') {
    return validationError([{ type: 'json_invalid', loc: ['body'], msg: `Invalid JSON: ${boundedText(e.message ?? '')}` }]);
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    // its message names the header's value, whatever its length
    return new ApiError(415, 'UnsupportedMediaType', boundedText(e.message ?? 'Unsupported encoding'));
  }
  if (e?.status === 400 && error instanceof URIError) return undecodablePath(e.message ?? '');
  if (e?.status === 400 && !e.type && typeof (error as { errno?: unknown }).errno === 'number') {
    // zlib's or brotli's error, reading a body whose Content-Encoding it does not match: a malformed body
    return validationError([
      {
        type: 'body_encoding',
        loc: ['body'],
        msg: `The body does not decode as its Content-Encoding says: ${boundedText(e.message ?? '')}`,
      },
    ]);
  }
  if (e?.status && e.status >= 400 && e.status < 500) {
    return new ApiError(e.status, 'BadRequest', boundedText(e.message ?? 'Bad request'));
  }
  return fromDatabaseError(error, statementTimeoutMs) ?? new ApiError(500, 'InternalServerError', 'An unexpected error occurred');
}

/**
 * A path parameter whose percent-encoding is not UTF-8 (`%ff`): the router
 * (its decodeParam) refuses it before any route runs, with a 400 naming the
 * whole segment. It is a bad path: SPEC §7's 422, the segment echoed bounded.
 */
function undecodablePath(message: string): ApiError {
  const quoted = /^Failed to decode param '([\s\S]*)'$/.exec(message);
  return validationError([
    {
      type: 'path_encoding',
      loc: ['path'],
      msg: 'The path is not percent-encoded UTF-8',
      ...(quoted ? { input: quoted[1] } : {}),
    },
  ]);
}
