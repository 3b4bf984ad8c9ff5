// The OpenAPI 3.1 document, generated from the route table's own zod schemas,
// the same ones that validate requests (SPEC §9).
import { FIRST_VERSION, type VersionHeaders } from '../core/versions.ts';
import { createDocument } from 'zod-openapi';
import { takesIdempotencyKeys } from './idempotency.ts';
import { z } from 'zod';
import { authorizationSentence } from '../auth/authorize.ts';
import { credentialNames } from '../auth/credentials.ts';
import { mediaTypes } from './input.ts';
import { isAnonymous, type Route } from './route-declaration.ts';
import { addComponentExamples, type OpenApiDocument } from './openapi-examples.ts';
import {
  anonymousErrorDescriptions,
  anonymousErrorExamples,
  authorizationErrorPageResponse,
  ErrorBody,
  errorDescriptions,
  errorExamples,
  OAuth2ErrorBody,
  oauth2ErrorDescriptions,
  oauth2ErrorExamples,
  registrationErrorResponse,
} from './openapi-errors.ts';
import { headers, idempotencyHeader, versionRequestHeader } from './openapi-headers.ts';
import { unversioned } from './api-version.ts';
import {
  CLIENT_AUTHENTICATION_SENTENCE,
  clientAuthenticationRequirements,
  securityRequirements,
  securitySchemes,
} from './openapi-security.ts';

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
export function openApiDocument(
  routes: readonly Route[],
  apiVersion = FIRST_VERSION,
  /** the header fields the version's changes add to a route (src/core/versions.ts) */
  versionHeaders: (route: Route) => VersionHeaders | undefined = () => undefined,
) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const api = route.access !== null;
    // answered in a version, named on the answer; an unknown one asked is 400 (SPEC §23)
    const versioned = !unversioned(route);
    const added = versionHeaders(route);
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
    if (versioned) statuses.add(400);
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
      if (versioned) fields['Rowgate-Version'] = headers.version;
      if (status === route.status) Object.assign(fields, added?.answer);
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
      const sent = {
        ...(versioned ? versionRequestHeader : {}),
        ...added?.request,
        ...(takesIdempotencyKeys(route) ? idempotencyHeader.shape : {}),
      };
      if (Object.keys(sent).length) requestParams.header = z.object(sent);
      if (Object.keys(requestParams).length) operation.requestParams = requestParams;
      if (route.body) {
        const types = (route.bodyTypes ?? ['json']).map((t) => mediaTypes[t][0]!);
        operation.requestBody = { required: true, content: Object.fromEntries(types.map((t) => [t, { schema: route.body }])) };
      }
    } else {
      if (route.description) operation.description = route.description;
      operation.security = [];
      if (versioned) operation.requestParams = { header: z.object(versionRequestHeader) };
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
