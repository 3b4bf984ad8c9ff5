// A request's input (SPEC §5's fourth check): the body parsers, and the path, query and
// body read through the route's own zod schemas, with every problem reported at its
// location in SPEC §7's 422.
import express, { type Request } from 'express';
import type { z } from 'zod';
import { ApiError, boundedText, validationError, type ValidationIssue } from '../core/errors.ts';
import type { ApiRoute, BodyType } from './route-declaration.ts';

/** The media types of each kind of body a route may take. */
export const mediaTypes: Record<BodyType, string[]> = {
  json: ['application/json', 'application/*+json'],
  form: ['application/x-www-form-urlencoded'],
};

/** The JSON body parser of the routes that take a body, and of GraphQL: bodies up to 1 MiB; errors in SPEC §7's shape. */
export const jsonBody = express.json({ limit: '1mb', type: mediaTypes.json });
export const formBody = express.urlencoded({ limit: '1mb', extended: false });

export interface Input {
  params: unknown;
  query: unknown;
  body: unknown;
}

/** The input of a request as its route's schemas read it; a 415 or a 422 otherwise. */
export function parseInput(route: ApiRoute, req: Request): Input {
  const issues: ValidationIssue[] = [];
  const parse = (schema: z.ZodType | undefined, source: string, input: unknown) => {
    if (!schema) return undefined;
    const unkept = textIssues(input, source);
    if (unkept.length) {
      issues.push(...unkept);
      return undefined;
    }
    const result = schema.safeParse(input);
    if (!result.success) issues.push(...zodIssues(result.error, source, input));
    return result.data;
  };
  const params = parse(route.params, 'path', req.params);
  const query = parse(route.query, 'query', req.query ?? {});
  let body: unknown;
  if (route.body) {
    // a body was sent (with a length, or chunked) that no parser read, or of a type the route does not take
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    const accepted = route.bodyTypes ?? ['json'];
    if (hasBody && (req.body === undefined || !req.is(accepted.flatMap((t) => mediaTypes[t])))) {
      throw new ApiError(415, 'UnsupportedMediaType', `The request body must be ${accepted.map((t) => mediaTypes[t][0]).join(' or ')}`);
    }
    body = parse(route.body, 'body', req.body ?? {});
  }
  if (issues.length) throw validationError(route.secretInput ? issues.map(({ input: _secret, ...issue }) => issue) : issues);
  return { params, query, body };
}

function zodIssues(error: z.ZodError, source: string, input: unknown): ValidationIssue[] {
  // an unknown field is reported at its own location
  const issues = error.issues.flatMap((issue): { code: string; path: PropertyKey[]; message: string }[] =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ code: issue.code, path: [...issue.path, key], message: `Unknown field "${boundedText(key)}"` }))
      : [issue],
  );
  return issues.map((issue) => {
    let value: unknown = input;
    for (const key of issue.path) value = value == null ? undefined : (value as Record<PropertyKey, unknown>)[key as PropertyKey];
    return {
      type: issue.code,
      loc: [source, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
      msg: issue.message,
      ...(value === undefined ? {} : { input: value }),
    };
  });
}

/**
 * Text that would not be kept as sent, wherever it is in the input (a 422 at
 * its location): U+0000 in a string or a field's name, which PostgreSQL cannot
 * store (the database would answer "invalid byte sequence"); and a field
 * named `__proto__`, which zod's objects and records skip without a word, as
 * many JavaScript readers of our JSON would: a metadata key REST dropped and
 * GraphQL stored.
 */
function textIssues(input: unknown, source: string): ValidationIssue[] {
  // depth-first, in document order, without recursion and with each location a
  // link to its parent's: JSON.parse reads arrays nested a hundred thousand
  // deep, which recursion would meet with a stack overflow
  interface Where {
    key: string | number;
    parent?: Where;
  }
  const loc = (where: Where) => {
    const path: (string | number)[] = [];
    for (let w: Where | undefined = where; w; w = w.parent) path.push(w.key);
    return path.reverse();
  };
  const issues: ValidationIssue[] = [];
  const pending: { value: unknown; where: Where }[] = [{ value: input, where: { key: source } }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const { value, where } = next;
    // a field's name is checked as its value is reached: its issue comes first
    if (typeof where.key === 'string' && where.parent && where.key.includes('\u0000')) {
      issues.push({ type: 'string_nul', loc: loc(where), msg: 'A field name may not contain the NUL character (U+0000)' });
    }
    if (where.key === '__proto__' && where.parent) {
      issues.push({ type: 'reserved_key', loc: loc(where), msg: 'No field may be named "__proto__"' });
    }
    if (typeof value === 'string') {
      if (value.includes('\u0000'))
        issues.push({ type: 'string_nul', loc: loc(where), msg: 'Text may not contain the NUL character (U+0000)', input: value });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push({ value: value[i], where: { key: i, parent: where } });
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value).reverse()) pending.push({ value: item, where: { key, parent: where } });
    }
  }
  return issues;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The organization a request names, for the request log (SPEC §25): the path's
 * organization, else one `organization_id` of its body or query. The database
 * keeps the row only if the caller reaches it.
 */
export function namedOrganization(route: ApiRoute, input: Input): string | undefined {
  const params = input.params as Record<string, unknown> | undefined;
  const named = [
    route.path.startsWith('/v1/organizations/{id}') ? params?.id : undefined,
    (input.body as { organization_id?: unknown } | null | undefined)?.organization_id,
    (input.query as { organization_id?: unknown } | null | undefined)?.organization_id,
  ].find((value) => typeof value === 'string' && UUID.test(value));
  return named as string | undefined;
}
