// The error answers of the OpenAPI document (src/http/openapi.ts): SPEC §7's body,
// RFC 6749's for the OAuth2 protocol endpoints, and what each status means and
// looks like, so that a reader (and Swagger UI) sees the body a status carries.
import { z } from 'zod';
import { doc } from '../core/fields.ts';

const ValidationIssue = z
  .object({
    type: doc(z.string(), 'Kind of problem.', 'too_small'),
    loc: doc(z.array(z.union([z.string(), z.number()])), 'Where: the source, then the path inside it.', ['body', 'email']),
    msg: doc(z.string(), 'What is wrong, for a person.', 'Invalid email address'),
    input: doc(z.unknown().optional(), 'The value that was refused, when there was one.', 'not-an-email'),
  })
  .meta({ id: 'ValidationIssue', description: 'One problem with the request.' });

export const ErrorBody = z
  .object({
    error: doc(z.string(), 'The error name (SPEC §7).', 'ResourceNotFound'),
    detail: doc(z.union([z.string(), z.array(ValidationIssue)]), 'A sentence, or the list of validation problems.', 'Not found'),
  })
  .meta({ id: 'Error', description: 'The body of every error.' });

export const OAuth2ErrorBody = z
  .object({
    error: doc(
      z.string(),
      'The RFC 6749 error code: invalid_request, invalid_client, invalid_grant, unsupported_grant_type, invalid_scope, server_error or temporarily_unavailable.',
      'invalid_grant',
    ),
    error_description: doc(z.string(), 'What went wrong, for the developer.', 'The authorization code has expired'),
  })
  .meta({ id: 'OAuth2Error', description: 'The body of an error of the OAuth2 protocol endpoints (RFC 6749 §5.2).' });

export const errorDescriptions: Record<number, string> = {
  400: 'The `Rowgate-Version` header names no version of this API (`UnsupportedVersion`; the detail lists the supported ones).',
  401: 'No valid credential of a kind this endpoint accepts (`Unauthorized`).',
  403: 'The token lacks the scope (`InsufficientScope`), or a policy denies (`NotPermitted`, detail = the reason).',
  404: 'Not found, or out of reach (`ResourceNotFound`).',
  409: 'A request with the same `Idempotency-Key` is still running (`IdempotencyKeyInUse`).',
  410: 'The feed cursor is older than what retention kept (`CursorExpired`): poll again without `after`.',
  413: 'The body is larger than 1 MiB (`PayloadTooLarge`).',
  415: 'The body is not of a media type this endpoint takes (`UnsupportedMediaType`).',
  406: 'The `Accept` header names no media type this endpoint answers in (`NotAcceptable`).',
  422: 'The body, path or query is invalid (`RequestValidationError`), or the `Idempotency-Key` answered another request (`IdempotencyKeyReused`).',
  429: 'Too many requests (`TooManyRequests`): past the rate limit of the credential, or of the address when no valid credential is sent (SPEC §14); try again after `Retry-After` seconds.',
  503: 'The database is unavailable (`ServiceUnavailable`).',
  504: 'A statement took longer than the statement timeout and was cancelled (`Timeout`): the same request is likely to take as long again.',
};

/** an endpoint without a credential answers 401 only for what its body proves (a sign-in code) */
export const anonymousErrorDescriptions: Record<number, string> = {
  ...errorDescriptions,
  401: 'What the body presents does not authenticate: a wrong, used or expired code (`Unauthorized`).',
};

/** the errors of the OAuth2 protocol endpoints (RFC 6749 §5.2) */
export const oauth2ErrorDescriptions: Record<number, string> = {
  400: 'A malformed request (`invalid_request`), or a grant or scope refused (`invalid_grant`, `invalid_scope`, `unsupported_grant_type`).',
  401: 'Client authentication failed (`invalid_client`).',
  413: 'The body is larger than 1 MiB (`invalid_request`).',
  415: 'The body is not of a media type this endpoint takes (`invalid_request`).',
  429: 'Too many requests from this address (`temporarily_unavailable`); try again after `Retry-After` seconds.',
  503: 'The database is unavailable (`temporarily_unavailable`).',
  504: 'A statement took longer than the statement timeout and was cancelled (`server_error`).',
};

/** An example of each error status, so that a reader (and Swagger UI) sees the body that status carries. */
export const errorExamples: Record<number, { error: string; detail: unknown }> = {
  400: {
    error: 'UnsupportedVersion',
    detail: 'Rowgate-Version "2020-01-01" is not a version of this API; supported: 2026-12-15, 2026-11-20',
  },
  401: { error: 'Unauthorized', detail: 'No credential was sent' },
  403: { error: 'InsufficientScope', detail: 'The token lacks the required scope: one of products_read, products_write' },
  404: { error: 'ResourceNotFound', detail: 'Not found' },
  409: {
    error: 'IdempotencyKeyInUse',
    detail: 'A request with this Idempotency-Key is still running; retry once it has answered',
  },
  410: { error: 'CursorExpired', detail: 'Events after this cursor may have been pruned; poll again without `after`' },
  413: { error: 'PayloadTooLarge', detail: 'The request body is larger than 1 MiB' },
  415: { error: 'UnsupportedMediaType', detail: 'The request body must be application/json' },
  406: { error: 'NotAcceptable', detail: 'This endpoint answers in text/csv or application/x-ndjson' },
  422: {
    error: 'RequestValidationError',
    detail: [{ type: 'too_big', loc: ['query', 'limit'], msg: 'Too big: expected number to be <=100', input: '500' }],
  },
  429: { error: 'TooManyRequests', detail: 'More than 100 requests per second; try again in 1 s' },
  503: { error: 'ServiceUnavailable', detail: 'The database is unavailable; try again shortly' },
  504: { error: 'Timeout', detail: 'The request took longer than 10 seconds and was cancelled' },
};
export const anonymousErrorExamples: Record<number, { error: string; detail: unknown }> = {
  ...errorExamples,
  401: { error: 'Unauthorized', detail: 'The code is wrong, used or expired' },
};
export const oauth2ErrorExamples: Record<number, { error: string; error_description: string }> = {
  400: { error: 'invalid_grant', error_description: 'The authorization code has expired' },
  401: { error: 'invalid_client', error_description: 'Client authentication failed' },
  413: { error: 'invalid_request', error_description: 'The request body is larger than 1 MiB' },
  415: { error: 'invalid_request', error_description: 'The request body must be application/x-www-form-urlencoded or application/json' },
  429: {
    error: 'temporarily_unavailable',
    error_description: 'Too many requests from this address without a valid credential; try again later',
  },
  503: { error: 'temporarily_unavailable', error_description: 'The database is unavailable; try again shortly' },
  504: { error: 'server_error', error_description: 'The request took longer than 10 seconds and was cancelled' },
};

/** The authorization endpoint's error page (RFC 9700 §4.11.2), for a request its client got wrong. */
export const authorizationErrorPageResponse = {
  description:
    'A request the client got wrong (not an unknown client or redirect URI): an HTML page telling the user, whose link back to the client carries `error`, `error_description`, `state` and `iss`.',
  content: { 'text/html': { schema: { type: 'string', description: 'An HTML page.', example: '<!doctype html>…' } } },
};

/** RFC 7591 §3.2.2's error of a client registration. */
export const registrationErrorResponse = {
  description: 'Refused client metadata (RFC 7591): `invalid_redirect_uri` (a redirect URI), or `invalid_client_metadata` (anything else).',
  content: {
    'application/json': {
      schema: OAuth2ErrorBody,
      example: {
        error: 'invalid_redirect_uri',
        error_description: 'redirect_uris.0: A redirect URI must use https (or http on a loopback address)',
      },
    },
  },
};
