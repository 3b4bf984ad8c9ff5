// The OpenAPI 3.1 document, generated from the route table's own zod schemas,
// the same ones that validate requests (SPEC §9).
import { FIRST_VERSION } from '../core/versions.ts';
import { createDocument } from 'zod-openapi';
import { IDEMPOTENCY_HEADER, takesIdempotencyKeys } from './idempotency.ts';
import { z } from 'zod';
import { authorizationSentence } from '../auth/authorize.ts';
import { credentialNames } from '../auth/credentials.ts';
import { mediaTypes } from './input.ts';
import { isAnonymous, type Route } from './route-declaration.ts';
import { doc } from '../core/fields.ts';
import { addComponentExamples, type OpenApiDocument } from './openapi-examples.ts';
import {
  CLIENT_AUTHENTICATION_SENTENCE,
  clientAuthenticationRequirements,
  securityRequirements,
  securitySchemes,
} from './openapi-security.ts';

const ValidationIssue = z
  .object({
    type: doc(z.string(), 'Kind of problem.', 'too_small'),
    loc: doc(z.array(z.union([z.string(), z.number()])), 'Where: the source, then the path inside it.', ['body', 'email']),
    msg: doc(z.string(), 'What is wrong, for a person.', 'Invalid email address'),
    input: doc(z.unknown().optional(), 'The value that was refused, when there was one.', 'not-an-email'),
  })
  .meta({ id: 'ValidationIssue', description: 'One problem with the request.' });

const ErrorBody = z
  .object({
    error: doc(z.string(), 'The error name (SPEC §7).', 'ResourceNotFound'),
    detail: doc(z.union([z.string(), z.array(ValidationIssue)]), 'A sentence, or the list of validation problems.', 'Not found'),
  })
  .meta({ id: 'Error', description: 'The body of every error.' });

const OAuth2ErrorBody = z
  .object({
    error: doc(
      z.string(),
      'The RFC 6749 error code: invalid_request, invalid_client, invalid_grant, unsupported_grant_type, invalid_scope, server_error or temporarily_unavailable.',
      'invalid_grant',
    ),
    error_description: doc(z.string(), 'What went wrong, for the developer.', 'The authorization code has expired'),
  })
  .meta({ id: 'OAuth2Error', description: 'The body of an error of the OAuth2 protocol endpoints (RFC 6749 §5.2).' });

const errorDescriptions: Record<number, string> = {
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
const anonymousErrorDescriptions: Record<number, string> = {
  ...errorDescriptions,
  401: 'What the body presents does not authenticate: a wrong, used or expired code (`Unauthorized`).',
};

/** the errors of the OAuth2 protocol endpoints (RFC 6749 §5.2) */
const oauth2ErrorDescriptions: Record<number, string> = {
  400: 'A malformed request (`invalid_request`), or a grant or scope refused (`invalid_grant`, `invalid_scope`, `unsupported_grant_type`).',
  401: 'Client authentication failed (`invalid_client`).',
  413: 'The body is larger than 1 MiB (`invalid_request`).',
  415: 'The body is not of a media type this endpoint takes (`invalid_request`).',
  429: 'Too many requests from this address (`temporarily_unavailable`); try again after `Retry-After` seconds.',
  503: 'The database is unavailable (`temporarily_unavailable`).',
  504: 'A statement took longer than the statement timeout and was cancelled (`server_error`).',
};

/** An example of each error status, so that a reader (and Swagger UI) sees the body that status carries. */
const errorExamples: Record<number, { error: string; detail: unknown }> = {
  400: { error: 'BadRequest', detail: 'Bad request' },
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
const anonymousErrorExamples: Record<number, { error: string; detail: unknown }> = {
  ...errorExamples,
  401: { error: 'Unauthorized', detail: 'The code is wrong, used or expired' },
};
const oauth2ErrorExamples: Record<number, { error: string; error_description: string }> = {
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
const authorizationErrorPageResponse = {
  description:
    'A request the client got wrong (not an unknown client or redirect URI): an HTML page telling the user, whose link back to the client carries `error`, `error_description`, `state` and `iss`.',
  content: { 'text/html': { schema: { type: 'string', description: 'An HTML page.', example: '<!doctype html>…' } } },
};

/** The header fields answers carry (SPEC §14, §17, §19), each described once in components.headers. */
const header = (id: string, description: string, example: string) => z.string().meta({ description, example, header: { id } });
const headers = {
  requestId: header(
    'X-Request-Id',
    "The request's id: the client's own `X-Request-Id` when it matches `^[A-Za-z0-9._:-]{1,128}$`, otherwise a new one. It is in the access log's line and in the events the request wrote.",
    '8e0f6c1e-3b1f-4a53-9a35-3f1f1f7c9d10',
  ),
  rateLimitPolicy: header(
    'RateLimit-Policy',
    'The rate limit this request counted against (draft-ietf-httpapi-ratelimit-headers): its name, quota (`q`) and window in seconds (`w`).',
    '"default";q=100;w=1',
  ),
  rateLimit: header('RateLimit', "What is left of that limit's window (`r`) and the seconds until it resets (`t`).", '"default";r=57;t=1'),
  retryAfter: header('Retry-After', 'Seconds to wait before trying again.', '2'),
  idempotentReplayed: header(
    'Idempotent-Replayed',
    '`true` on the stored answer of an earlier request with this `Idempotency-Key` (SPEC §17).',
    'true',
  ),
  consistency: header(
    'Rowgate-Consistency',
    'After a write: a token a later request may send back so that it never reads data older than this write, on any server or standby (SPEC §19).',
    '0/1FD7F88',
  ),
};

/** The header of a write that may be retried safely (SPEC §17). */
const idempotencyHeader = z.object({
  [IDEMPOTENCY_HEADER]: z.string().min(1).max(255).optional().meta({
    description:
      'Makes the request safe to retry: the first 2xx answer is stored with its effect and a retry with the same key (and the same method, path and body) gets it again, byte for byte, with `Idempotent-Replayed: true`. The same key with another request: 422 `IdempotencyKeyReused`; while the first runs: 409 `IdempotencyKeyInUse`. Keys belong to the subject and are kept 24 hours.',
    example: '8e0f6c1e-3b1f-4a53-9a35-3f1f1f7c9d10',
  }),
});

/** RFC 7591 §3.2.2's error of a client registration. */
const registrationErrorResponse = {
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

/** What each tag groups, for the reference's sections. */
const tagDescriptions: Record<string, string> = {
  health: 'Liveness and readiness, for load balancers and orchestrators.',
  users: 'The signed-in user.',
  'sign-in': 'Sign-in with a code sent by e-mail, and sign-out.',
  oauth2: 'OAuth2 authorization server: clients, consent, tokens (RFC 6749, 7009, 7591, 7662, 8414).',
  'customer-portal': "A customer's own view, with a customer or member session.",
};
const describeTag = (tag: string) => tagDescriptions[tag] ?? `Operations on ${tag.replaceAll('-', ' ')}.`;

const successDescriptions: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No content',
  302: 'Redirect',
};

/** The OpenAPI document of `routes` as `apiVersion` shapes them (the route table's own shapes are the first version's). */
export function openApiDocument(routes: readonly Route[], apiVersion = FIRST_VERSION) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const api = route.access !== null;
    // an endpoint that takes no credential never answers 401/403 for one (only when its route says so)
    const credentialed = api && !isAnonymous(route.access);
    const oauth2 = route.errorFormat === 'oauth2';
    // RFC 7591: refused client metadata is a 400 in RFC 6749's shape; the rest SPEC §7's
    const registration = route.errorFormat === 'oauth2-registration';
    const statuses = new Set<number>(route.errors ?? []);
    if (credentialed) for (const s of [401, 403]) statuses.add(s);
    // every /v1 request counts against a rate limit (SPEC §14; not the metadata, a probe or the reference)
    const limited = route.path.startsWith('/v1/');
    if (api) for (const s of [oauth2 || registration ? 400 : 422, 503, 504]) statuses.add(s);
    if (api && limited) statuses.add(429);
    if (credentialed && (route.params || route.method !== 'get')) statuses.add(404);
    if (api && takesIdempotencyKeys(route)) statuses.add(409);
    if (api && route.body) for (const s of [413, 415]) statuses.add(s);
    if (route.responseType === 'export') statuses.add(406);
    const content = route.response
      ? { 'application/json': { schema: route.response } }
      : route.responseType === 'text/html'
        ? { 'text/html': { schema: { type: 'string', description: 'An HTML page.', example: '<!doctype html>…' } } }
        : route.responseType === 'export'
          ? {
              'text/csv': {
                schema: {
                  type: 'string',
                  description: 'A header row, then one row an item; nested objects as JSON in their cell.',
                  example: 'id,name\n…',
                },
              },
              'application/x-ndjson': {
                schema: { type: 'string', description: 'One item a line, exactly as the list renders it.', example: '{"id":"…"}\n' },
              },
            }
          : undefined;
    // the header fields of an answer: its id always; on /v1, the rate limit's; when to come back; and, only
    // sometimes (optional), a write's replay mark (a replay's) and consistency token (when the position is known)
    const headersOf = (status: number) => {
      const fields: Record<string, z.ZodType> = { 'X-Request-Id': headers.requestId };
      if (api && limited) Object.assign(fields, { 'RateLimit-Policy': headers.rateLimitPolicy, RateLimit: headers.rateLimit });
      if (status === 429 || status === 503) fields['Retry-After'] = headers.retryAfter;
      if (status === route.status && api && takesIdempotencyKeys(route))
        fields['Idempotent-Replayed'] = headers.idempotentReplayed.optional();
      if (status === route.status && api && route.effect === 'writes') fields['Rowgate-Consistency'] = headers.consistency.optional();
      return z.object(fields);
    };
    const responses: Record<string, unknown> = {
      [route.status]: { description: successDescriptions[route.status], headers: headersOf(route.status), ...(content ? { content } : {}) },
    };
    for (const status of [...statuses].sort()) {
      if (registration && status === 400) {
        responses[status] = { ...registrationErrorResponse, headers: headersOf(status) };
        continue;
      }
      if (route.responseType === 'text/html' && status === 400) {
        responses[status] = { ...authorizationErrorPageResponse, headers: headersOf(status) };
        continue;
      }
      const example = (oauth2 ? oauth2ErrorExamples : credentialed ? errorExamples : anonymousErrorExamples)[status];
      responses[status] = {
        description: (oauth2 ? oauth2ErrorDescriptions : credentialed ? errorDescriptions : anonymousErrorDescriptions)[status] ?? 'Error',
        headers: headersOf(status),
        content: { 'application/json': { schema: oauth2 ? OAuth2ErrorBody : ErrorBody, ...(example ? { example } : {}) } },
      };
    }
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      responses,
    };
    if (route.access) {
      const accepts = route.access.credentials.map((k) => credentialNames[k]).join(', ');
      operation.description = [
        route.description,
        credentialed
          ? `**Credentials:** ${accepts}. **Scopes (any of):** ${route.access.scopes.map((s) => `\`${s}\``).join(', ')}.`
          : route.clientAuthentication
            ? CLIENT_AUTHENTICATION_SENTENCE
            : '**Credentials:** none.',
        route.authorize ? authorizationSentence(route.authorize) : undefined,
      ]
        .filter(Boolean)
        .join('\n\n');
      operation.security = route.clientAuthentication ? clientAuthenticationRequirements() : securityRequirements(route.access);
      const requestParams: Record<string, unknown> = {};
      if (route.params) requestParams.path = route.params;
      if (route.query) requestParams.query = route.query;
      if (takesIdempotencyKeys(route)) requestParams.header = idempotencyHeader;
      if (Object.keys(requestParams).length) operation.requestParams = requestParams;
      if (route.body) {
        const types = (route.bodyTypes ?? ['json']).map((t) => mediaTypes[t][0]!);
        operation.requestBody = { required: true, content: Object.fromEntries(types.map((t) => [t, { schema: route.body }])) };
      }
    } else {
      if (route.description) operation.description = route.description;
      operation.security = [];
    }
    (paths[route.path] ??= {})[route.method] = operation;
  }
  const tags = [...new Set(routes.map((r) => r.tag))].sort().map((name) => ({ name, description: describeTag(name) }));
  const document = createDocument({
    openapi: '3.1.0',
    info: {
      title: 'rowgate',
      version: apiVersion,
      license: { name: 'MIT', identifier: 'MIT' },
      contact: { name: 'The operators of this rowgate server' },
      description: `A versioned REST API whose authorization lives in PostgreSQL. This document describes API version ${apiVersion}: send it as the Rowgate-Version header (GET /v1/versions lists every version; /v1/openapi.json?version= gives each one's document). Errors have the shape \`{error, detail}\`, except on the OAuth2 protocol endpoints (token, revocation, introspection, metadata), which answer RFC 6749's \`{error, error_description}\`, as client registration does for refused metadata (RFC 7591).`,
    },
    servers: [{ url: '/', description: 'This server' }],
    tags,
    components: { securitySchemes: securitySchemes(routes) as never },
    paths: paths as never,
  });
  addComponentExamples(document as OpenApiDocument);
  return document;
}
