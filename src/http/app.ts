// The Express application, built from the route table. Per API request:
// credential → transaction { authenticate + switch role + settings (one statement)
// → scopes → validation → handler } → the status the table declares. An endpoint
// that takes no credential (access.anonymous) reads none and runs the same
// transaction as rowgate_anonymous, with no subject and no scope check.
import { hash } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import type pg from 'pg';
import type { z } from 'zod';
import { CHANGED_USERS, type AnswerCache } from '../auth/answer-cache.ts';
import { ANONYMOUS, authenticate, type Authenticated } from '../auth/authenticate.ts';
import { inTransaction } from '../db/pool.ts';
import { readCredential, type PresentedCredential } from '../auth/credentials.ts';
import {
  ApiError,
  asOAuth2Error,
  fromDatabaseError,
  insufficientScope,
  unauthorized,
  validationError,
  type ValidationIssue,
} from './errors.ts';
import { ListPage } from '../resources/lists.ts';
import { environmentMailer, type Mailer } from '../signin/mailer.ts';
import { isAnonymous, type ApiRoute, type BodyType, type Route } from './route.ts';
import { apiSecurityHeaders, pageSecurityHeaders } from './security-headers.ts';
import type { CredentialKind } from '../auth/tokens.ts';

export interface AppOptions {
  pool: pg.Pool;
  secret: string;
  routes: readonly Route[];
  /** check every response against its schema (the test suite turns this on) */
  validateResponses?: boolean;
  /** more handlers (GraphQL), mounted after the route table and before the 404 and error handlers */
  mounts?: ((app: express.Express) => void)[];
  log?: (line: string) => void;
  /** how mail (sign-in codes) is sent; default: SMTP_URL's server, or the log and the development outbox */
  mailer?: Mailer;
  /** answers of `cache: 'credential'` routes kept between requests (src/auth/answer-cache.ts); none: always asked */
  answerCache?: AnswerCache;
}

export const credentialNames: Record<CredentialKind, string> = {
  web_session: 'a web session cookie',
  personal_access_token: 'a personal access token',
  organization_access_token: 'an organization access token',
  oauth2_user_token: 'an OAuth2 user token',
  oauth2_organization_token: 'an OAuth2 organization token',
  customer_session: 'a customer session token',
  member_session: 'a member session token',
};

function acceptedCredentials(route: ApiRoute) {
  return `This endpoint accepts ${route.access.credentials.map((k) => credentialNames[k]).join(', ')}`;
}

function zodIssues(error: z.ZodError, source: string, input: unknown): ValidationIssue[] {
  // an unknown field is reported at its own location
  const issues = error.issues.flatMap((issue): { code: string; path: PropertyKey[]; message: string }[] =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({ code: issue.code, path: [...issue.path, key], message: `Unknown field "${key}"` }))
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

/** The media types of each kind of body a route may take (the parsers mounted in createApp). */
export const mediaTypes: Record<BodyType, string[]> = {
  json: ['application/json', 'application/*+json'],
  form: ['application/x-www-form-urlencoded'],
};

/**
 * Text PostgreSQL cannot store: U+0000 in any string of the input, wherever it
 * is (a 422 at its location, not the database's "invalid byte sequence" 500;
 * found by the HTTP fuzzer in a token's scopes).
 */
function nulIssues(input: unknown, source: string): ValidationIssue[] {
  // depth-first, in document order, without recursion and with each location a
  // link to its parent's: JSON.parse reads arrays nested a hundred thousand
  // deep (found by the fuzzer, as a stack overflow)
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

/** The JSON body parser of the routes that take a body, and of GraphQL: bodies up to 1 MiB; errors in SPEC §7's shape. */
export const jsonBody = express.json({ limit: '1mb', type: mediaTypes.json });

function parseInput(route: ApiRoute, req: Request) {
  const issues: ValidationIssue[] = [];
  const parse = (schema: z.ZodType | undefined, source: string, input: unknown) => {
    if (!schema) return undefined;
    const nul = nulIssues(input, source);
    if (nul.length) {
      issues.push(...nul);
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
  if (issues.length) throw validationError(issues);
  return { params, query, body };
}

function send(route: Route, res: Response, result: unknown, validate: boolean) {
  if (res.headersSent) return; // the handler answered itself (documents, redirects)
  if (route.status === 302) {
    // a redirecting handler returns the Location: sent after its transaction committed
    res.redirect(302, String(result));
    return;
  }
  if (route.status === 204) {
    res.status(route.status).end();
    return;
  }
  if (validate) checkResponse(route, JSON.stringify(result ?? null));
  sendJson(res, route.status, result instanceof ListPage ? result.json() : (JSON.stringify(result) ?? ''));
}

/**
 * A JSON answer, written with Node's own writeHead and end (the headers set
 * before it are kept). Express's res.send parses and formats the Content-Type
 * and checks the request's freshness on every call: on the cached users/me that
 * was a fifth of the throughput (wrk, three 5 s runs each: 21,900–23,300 →
 * 27,900–29,900 req/s).
 */
function sendJson(res: Response, status: number, json: string) {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(json) }).end(json);
}

function checkResponse(route: Route, json: string) {
  const checked = route.response?.safeParse(JSON.parse(json));
  if (checked && !checked.success) {
    throw new Error(`response of ${route.operationId} does not match its schema: ${checked.error.message}`);
  }
}

function checkScopes(route: ApiRoute, scopes: ReadonlySet<string>) {
  if (!route.access.scopes.some((s) => scopes.has(s))) throw insufficientScope(route.access.scopes);
}

/** The credential of a request, when it is of a kind the route accepts; a 401 otherwise. */
function acceptedCredential(route: ApiRoute, req: Request): PresentedCredential {
  const credential = readCredential(req);
  if (credential === 'malformed') throw unauthorized('The credential is malformed', true);
  if (!credential) throw unauthorized(`Authentication required. ${acceptedCredentials(route)}`, false);
  if (!route.access.credentials.includes(credential.kind)) {
    throw unauthorized(`${acceptedCredentials(route)}; ${credentialNames[credential.kind]} was sent`, true);
  }
  return credential;
}

function apiHandler(route: ApiRoute, options: AppOptions, mailer: Mailer) {
  // an anonymous endpoint reads no credential: an Authorization header there is
  // not ours to judge (an OAuth2 client's HTTP Basic credentials)
  const anonymous = isAnonymous(route.access);
  // A JSON read does not wait for the authentication's answer to send its own
  // statements: they leave together (one write, one round trip; with Tx.last the
  // commit too). Until the authentication has switched the role they would run
  // as rowgate_authenticator, which may read nothing, so a bad credential only
  // makes them fail, and the answer is decided as for every route: the
  // credential, then the scopes, then the input, then the handler's result.
  const early = route.method === 'get' && route.responseType === undefined;
  if (route.cache && (route.method !== 'get' || anonymous || route.params || route.query)) {
    throw new Error(`${route.operationId}: only a GET without parameters that takes a credential may be cached`);
  }
  const cache = route.cache ? options.answerCache : undefined;
  // a write that changed a user or a session says so with its commit, and this
  // server forgets their answers before it answers (src/auth/answer-cache.ts)
  const announces = route.method !== 'get' && options.answerCache !== undefined;
  const validate = options.validateResponses ?? false;
  return async (req: Request, res: Response) => {
    const credential = anonymous ? null : acceptedCredential(route, req);
    // The cache's key: the token's SHA-256, which nobody can turn back into a
    // 256-bit random token, at a tenth of the HMAC's cost (0.3 µs against 2.4)
    const cacheKey = cache && credential ? hash('sha256', credential.token, 'base64') : undefined;
    const cached = cacheKey ? cache!.get(cacheKey) : undefined;
    if (cached) {
      checkScopes(route, cached.scopes);
      if (validate) checkResponse(route, cached.body);
      sendJson(res, route.status, cached.body);
      return;
    }
    const ticket = cacheKey ? cache!.ticket() : null;
    let subject: Authenticated | null = null;
    let changedUsers: string | null = null;
    const result = await inTransaction(
      options.pool,
      async (tx) => {
        const authenticated = credential
          ? authenticate((text, values) => tx.one(text, values), options.secret, credential)
          : tx.rows(ANONYMOUS).then(() => null);
        const run = () => {
          const { params, query, body } = parseInput(route, req);
          return route.handler({ tx, secret: options.secret, mailer, params: params as never, query: query as never, body, req, res });
        };
        let started: Promise<unknown> | undefined;
        if (early) {
          // now, not in a later tick: its first statement must join the authentication's write
          try {
            started = run();
          } catch (error) {
            started = Promise.reject(error);
          }
          started.catch(() => {}); // its failure is answered below, after the credential's and the scopes'
        }
        try {
          subject = await authenticated;
          if (credential) {
            if (!subject) throw unauthorized('The credential is unknown, expired or revoked', true);
            checkScopes(route, subject.scopes);
          }
        } catch (refusal) {
          // a read started early ends before its transaction does: nothing of it may
          // reach the connection once it is back in the pool
          await started?.catch(() => {});
          throw refusal;
        }
        const answer = await (started ?? run());
        if (announces && !tx.committed) changedUsers = (await tx.withCommit<{ users: string | null }>(CHANGED_USERS))?.users ?? null;
        return answer;
      },
      { deferCommit: route.method === 'get' },
    );
    // committed: what it changed is forgotten before anybody is answered
    options.answerCache?.forget(changedUsers);
    // a handler that *returns* an error has recorded something that must stay
    // (a failed attempt, a revoked token family): the transaction committed
    if (result instanceof ApiError) throw result;
    send(route, res, result, validate);
    const known = subject as Authenticated | null; // (assigned in the transaction)
    if (ticket !== null && known) {
      const body = JSON.stringify(result);
      cache!.put(
        ticket,
        cacheKey!,
        { userId: known.subjectId, scopes: known.scopes, body },
        known.expiresAt === null ? null : Date.parse(known.expiresAt),
      );
    }
  };
}

export const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

/** The router of an Express path's resource (`/v1/orders` for `/v1/orders/:id`), and the path within it. */
function resourceRouter(routers: Map<string, express.Router>, path: string) {
  const fixed = path.split('/').slice(1, 3);
  const parameter = fixed.findIndex((segment) => segment.includes(':'));
  const prefix = `/${(parameter < 0 ? fixed : fixed.slice(0, parameter)).join('/')}`;
  let router = routers.get(prefix);
  if (!router) routers.set(prefix, (router = express.Router()));
  return { router, rest: prefix === '/' ? path : path.slice(prefix.length) || '/' };
}

export function createApp(options: AppOptions) {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple'); // repeated parameters become arrays; nothing nested
  app.use(apiSecurityHeaders);
  // what a route needs before its handler, in its own chain (a request pays for
  // what its route needs, not for every route's): a page's headers; the error
  // shape, recorded before the body is parsed (a malformed body on an OAuth2
  // endpoint is answered in RFC 6749's shape too); the body parsers of a route
  // that takes a body
  const form = express.urlencoded({ limit: '1mb', extended: false });
  const before = (route: Route) => {
    const chain: express.RequestHandler[] = [];
    if (route.headers === 'page') chain.push(pageSecurityHeaders);
    if (route.errorFormat) {
      chain.push((_req, res, next) => {
        res.locals.errorFormat = route.errorFormat;
        next();
      });
    }
    if (route.access !== null && route.body) chain.push(jsonBody, form);
    return chain;
  };

  const mailer = options.mailer ?? environmentMailer(options.log ?? console.log);
  // One router per resource (a path's first two segments, `/v1/orders`): a
  // request is matched against its resource's routes, not against the whole
  // table (Express tries a router's layers one by one).
  const routers = new Map<string, express.Router>();
  const methodsByPath = new Map<string, string[]>();
  for (const route of options.routes) {
    const path = expressPath(route.path);
    const handler =
      route.access === null
        ? async (req: Request, res: Response) => send(route, res, await route.handler({ req, res }), false)
        : apiHandler(route, options, mailer);
    const { router, rest } = resourceRouter(routers, path);
    router[route.method](rest, ...before(route), handler);
    methodsByPath.set(path, [...(methodsByPath.get(path) ?? []), route.method.toUpperCase()]);
  }
  for (const [path, methods] of methodsByPath) {
    const { router, rest } = resourceRouter(routers, path);
    router.all(rest, (_req, res) => {
      res.setHeader('Allow', methods.join(', '));
      res.status(405).json({ error: 'MethodNotAllowed', detail: `Allowed: ${methods.join(', ')}` });
    });
  }
  for (const [prefix, router] of routers) app.use(prefix, router);
  for (const mount of options.mounts ?? []) mount(app);
  app.use((_req, res) => {
    res.status(404).json({ error: 'NotFound', detail: 'No such route' });
  });

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const apiError = res.locals.errorFormat === 'oauth2' ? asOAuth2Error(toApiError(error)) : toApiError(error);
    if (apiError.status >= 500 && apiError.status !== 503) {
      options.log?.(`error on ${req.method} ${req.originalUrl.split('?')[0]}: ${(error as Error)?.stack ?? String(error)}`);
    }
    if (res.headersSent) return;
    res.status(apiError.status).set(apiError.headers).json(apiError.body());
  });
  return app;
}

function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const e = error as { type?: string; status?: number; message?: string };
  if (e?.type === 'entity.too.large') return new ApiError(413, 'PayloadTooLarge', 'The request body is larger than 1 MiB');
  if (e?.type === 'entity.parse.failed') {
    return validationError([{ type: 'json_invalid', loc: ['body'], msg: `Invalid JSON: ${e.message}` }]);
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new ApiError(415, 'UnsupportedMediaType', e.message ?? 'Unsupported encoding');
  }
  if (e?.status && e.status >= 400 && e.status < 500) {
    return new ApiError(e.status, 'BadRequest', e.message ?? 'Bad request');
  }
  return fromDatabaseError(error) ?? new ApiError(500, 'InternalServerError', 'An unexpected error occurred');
}
