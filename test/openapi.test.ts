// The published OpenAPI document (SPEC §6, §9): OpenAPI 3.1, every route of the
// table in it, and every schema, property and parameter described, with an example.
import http from 'node:http';
import { authorizationSentence } from '../src/auth/authorize.ts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { z } from 'zod';
import type { ApiRoute } from '../src/http/route-declaration.ts';
import { apiRoutes } from '../src/server/route-table.ts';
import { startTestApp, type TestApp } from './harness.ts';

type Json = Record<string, any>;

let app: TestApp;
let document: Json;
beforeAll(async () => {
  app = await startTestApp();
  const res = await app.get('/v1/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  document = res.body;
});
afterAll(async () => app?.close());

/** A GET with a Host header of our choosing (fetch does not let one set it). */
function getWithHost(pathname: string, host: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${app.url}${pathname}`, { headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    request.on('error', reject);
  });
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Follows a local `$ref` ("#/components/schemas/User"). */
function resolve(doc: Json, ref: string): Json | undefined {
  if (!ref.startsWith('#/')) return undefined;
  let node: any = doc;
  for (const part of ref.slice(2).split('/')) node = node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return node;
}

const hasExample = (node: Json | undefined) =>
  !!node &&
  ('example' in node || (Array.isArray(node.examples) ? node.examples.length > 0 : node.examples && Object.keys(node.examples).length > 0));
const hasDescription = (node: Json | undefined) => typeof node?.description === 'string' && node.description.trim().length > 0;

/**
 * Every problem with the document's documentation: a named schema, a property
 * (inline or inside a component, at any depth) or a parameter without a
 * description or without an example. A property that is a `$ref` is documented
 * by what it refers to. Returns readable locations, e.g. `User.properties.email: example`.
 */
function undocumented(doc: Json): string[] {
  const problems: string[] = [];
  const visited = new Set<object>();

  const documented = (node: Json, where: string) => {
    const target = typeof node.$ref === 'string' ? resolve(doc, node.$ref) : undefined;
    if (typeof node.$ref === 'string' && !target) problems.push(`${where}: unresolvable ${node.$ref}`);
    if (!hasDescription(node) && !hasDescription(target)) problems.push(`${where}: description`);
    if (!hasExample(node) && !hasExample(target)) problems.push(`${where}: example`);
  };

  const schema = (node: unknown, where: string) => {
    if (!node || typeof node !== 'object' || visited.has(node)) return;
    visited.add(node);
    const s = node as Json;
    if (typeof s.$ref === 'string') {
      const target = resolve(doc, s.$ref);
      if (!target) problems.push(`${where}: unresolvable ${s.$ref}`);
      // a component is reported under its own name
      schema(target, s.$ref.replace('#/components/schemas/', ''));
    }
    for (const [name, property] of Object.entries<Json>(s.properties ?? {})) {
      documented(property, `${where}.properties.${name}`);
      schema(property, `${where}.properties.${name}`);
    }
    for (const [name, property] of Object.entries<Json>(s.patternProperties ?? {})) schema(property, `${where}.patternProperties.${name}`);
    for (const key of ['items', 'additionalProperties', 'not', 'contains', 'propertyNames', 'if', 'then', 'else']) {
      if (s[key] && typeof s[key] === 'object') schema(s[key], `${where}.${key}`);
    }
    for (const key of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) {
      for (const [i, sub] of ((s[key] ?? []) as unknown[]).entries()) schema(sub, `${where}.${key}[${i}]`);
    }
  };

  const parameter = (node: Json, where: string) => {
    const p = typeof node.$ref === 'string' ? (resolve(doc, node.$ref) ?? {}) : node;
    const at = `${where} parameter ${p.in}:${p.name}`;
    if (!hasDescription(p) && !hasDescription(p.schema)) problems.push(`${at}: description`);
    if (!hasExample(p) && !hasExample(p.schema)) problems.push(`${at}: example`);
    schema(p.schema, at);
  };

  const content = (node: Json | undefined, where: string) => {
    for (const [type, media] of Object.entries<Json>(node?.content ?? {})) schema(media.schema, `${where} ${type}`);
  };

  for (const [name, s] of Object.entries<Json>(doc.components?.schemas ?? {})) {
    documented(s, name);
    schema(s, name);
  }
  for (const [name, p] of Object.entries<Json>(doc.components?.parameters ?? {})) parameter(p, `components.parameters.${name}`);
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const p of item.parameters ?? []) parameter(p, path);
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const where = `${method.toUpperCase()} ${path}`;
      for (const p of op.parameters ?? []) parameter(p, where);
      const body = typeof op.requestBody?.$ref === 'string' ? resolve(doc, op.requestBody.$ref) : op.requestBody;
      content(body, `${where} requestBody`);
      for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
        content(typeof response.$ref === 'string' ? resolve(doc, response.$ref) : response, `${where} ${status}`);
      }
    }
  }
  return problems;
}

describe('the walker finds what is missing (so that an empty list means something)', () => {
  const broken: Json = {
    openapi: '3.1.0',
    components: {
      schemas: {
        Good: { type: 'object', description: 'd', example: {}, properties: { a: { type: 'string', description: 'd', example: 'x' } } },
        NoExample: { type: 'object', description: 'd', properties: {} },
        Nested: {
          type: 'object',
          description: 'd',
          example: {},
          properties: {
            list: {
              type: 'array',
              description: 'd',
              example: [],
              items: { type: 'object', properties: { deep: { type: 'string', description: 'd' } } },
            },
            either: {
              description: 'd',
              examples: [1],
              anyOf: [{ type: 'object', properties: { inner: { type: 'string', example: 'x' } } }, { type: 'null' }],
            },
            ref: { $ref: '#/components/schemas/Good' },
            badRef: { $ref: '#/components/schemas/NoExample' },
          },
        },
      },
    },
    paths: {
      '/things/{id}': {
        get: {
          parameters: [
            { in: 'path', name: 'id', schema: { type: 'string', description: 'd', example: 'x' } },
            { in: 'query', name: 'q', description: 'd', schema: { type: 'string' } },
          ],
          responses: {
            200: {
              description: 'OK',
              content: {
                'application/json': { schema: { type: 'object', properties: { inline: { type: 'integer', example: 1 } } } },
              },
            },
          },
        },
      },
    },
  };

  test('it lists every gap, at every depth, in schemas, properties and parameters', () => {
    expect(undocumented(broken).sort()).toEqual(
      [
        'NoExample: example',
        'Nested.properties.list.items.properties.deep: example',
        'Nested.properties.either.anyOf[0].properties.inner: description',
        'Nested.properties.badRef: example',
        'GET /things/{id} parameter query:q: example',
        'GET /things/{id} 200 application/json.properties.inline: description',
      ].sort(),
    );
  });

  test('a document without gaps passes', () => {
    const good = structuredClone(broken);
    good.components.schemas = { Good: broken.components.schemas.Good };
    good.paths = {};
    expect(undocumented(good)).toEqual([]);
  });
});

describe('GET /v1/openapi.json', () => {
  test('is OpenAPI 3.1.x with info, paths and components', () => {
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(Object.keys(document.paths).length).toBeGreaterThan(0);
    expect(Object.keys(document.components.schemas).length).toBeGreaterThan(0);
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['bearer', 'oauth2', 'oauth2Client', 'session']);
  });

  test('every schema, property and parameter has a description and an example', () => {
    expect(undocumented(document)).toEqual([]);
  });

  test('the walker saw the schemas it should (it is not walking an empty document)', () => {
    const names = Object.keys(document.components.schemas);
    expect(names).toEqual(expect.arrayContaining(['User', 'UserUpdate', 'PersonalAccessToken', 'Pagination', 'Error', 'ValidationIssue']));
  });

  test('every $ref resolves', () => {
    const refs = JSON.stringify(document).match(/"\$ref":"[^"]+"/g) ?? [];
    expect(refs.length).toBeGreaterThan(0);
    const broken = refs.map((r) => r.slice(8, -1)).filter((ref) => !resolve(document, ref));
    expect(broken).toEqual([]);
  });

  test('operation ids are unique', () => {
    const ids = Object.values<Json>(document.paths).flatMap((item) => METHODS.filter((m) => item[m]).map((m) => item[m].operationId));
    expect(ids.length).toBe(new Set(ids).size);
  });

  const routes = apiRoutes.filter((r): r is ApiRoute => r.access !== null);
  test('documents exactly the routes of the table', () => {
    const documented = Object.entries<Json>(document.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(
      [
        ...apiRoutes.map((r) => `${r.method.toUpperCase()} ${r.path}`),
        'GET /healthz',
        'GET /readyz',
        'GET /v1/openapi.json',
        'GET /v1/versions',
      ].sort(),
    );
  });

  test('the oauth2 scheme: authorization code (PKCE) with its URLs, and every scope a client may ask for, described', async () => {
    const scheme = document.components.securitySchemes.oauth2;
    expect(scheme.type).toBe('oauth2');
    expect(scheme.description).toContain('PKCE');
    const flow = scheme.flows.authorizationCode;
    expect(flow).toMatchObject({ authorizationUrl: '/v1/oauth2/authorize', tokenUrl: '/v1/oauth2/token', refreshUrl: '/v1/oauth2/token' });
    expect(Object.keys(scheme.flows)).toEqual(['authorizationCode']);
    // exactly the scopes the server lets clients ask for (its metadata's scopes_supported)
    const [row] = await app.sql<{ scopes: string[] }>('select rowgate.oauth2_scopes_supported() as scopes');
    expect(Object.keys(flow.scopes).sort()).toEqual([...row!.scopes].sort());
    for (const [scope, description] of Object.entries(flow.scopes)) {
      expect(typeof description === 'string' && description.length > 10, scope).toBe(true);
    }
    // and every scope an operation names is one of them
    const named = Object.values<Json>(document.paths).flatMap((item) =>
      METHODS.flatMap((m) => (item[m]?.security ?? []).flatMap((r: Json) => r.oauth2 ?? [])),
    );
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((s) => !(s in flow.scopes))).toEqual([]);
  });

  test('integer query parameters are integers with their bounds (page, limit), never digit patterns', () => {
    const query = Object.values<Json>(document.paths).flatMap((item) =>
      METHODS.flatMap((m) => (item[m]?.parameters ?? []).filter((p: Json) => p.in === 'query')),
    );
    const pages = query.filter((p) => p.name === 'page');
    // the event feed's poll takes up to 100 by default (SPEC §17); every list's page 10
    const feed = document.paths['/v1/events/feed'].get.parameters.find((p: Json) => p.name === 'limit');
    expect(feed.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 100 });
    const limits = query.filter((p) => p.name === 'limit' && p !== feed);
    expect(pages.length).toBeGreaterThan(10);
    for (const p of pages) expect(p.schema).toMatchObject({ type: 'integer', minimum: 1, default: 1 });
    for (const p of limits) expect(p.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 10 });
    expect(query.filter((p) => /\[0-9\]/.test(p.schema?.pattern ?? '')).map((p) => p.name)).toEqual([]);
  });

  test("the OAuth2 client's own credentials: HTTP Basic offered at the three endpoints that authenticate it, and only there", () => {
    expect(document.components.securitySchemes.oauth2Client).toMatchObject({ type: 'http', scheme: 'basic' });
    const offering = Object.entries(document.paths as Record<string, Json>).flatMap(([path, item]) =>
      METHODS.filter((m) => (item[m]?.security ?? []).some((r: Json) => 'oauth2Client' in r)).map((m) => `${m} ${path}`),
    );
    expect(offering.sort()).toEqual(['post /v1/oauth2/introspect', 'post /v1/oauth2/revoke', 'post /v1/oauth2/token']);
    for (const path of ['/v1/oauth2/token', '/v1/oauth2/revoke', '/v1/oauth2/introspect']) {
      expect(document.paths[path].post.security).toEqual([{ oauth2Client: [] }, {}]);
      expect(document.paths[path].post.description).toContain('only the way it registered');
    }
  });

  test('the health endpoints are documented, without credentials', () => {
    expect(document.paths['/healthz'].get).toMatchObject({ security: [], responses: { 200: expect.any(Object) } });
    expect(document.paths['/readyz'].get).toMatchObject({ security: [], responses: { 200: expect.any(Object), 503: expect.any(Object) } });
  });

  // each error status shows the body it carries (an example that matches it, not one example for all)
  const errorNames: Record<string, string[]> = {
    400: [
      'UnsupportedVersion',
      'invalid_request',
      'invalid_grant',
      'invalid_scope',
      'unsupported_grant_type',
      'invalid_redirect_uri',
      'invalid_client_metadata',
    ],
    401: ['Unauthorized', 'invalid_client'],
    403: ['InsufficientScope', 'NotPermitted'],
    404: ['ResourceNotFound'],
    406: ['NotAcceptable'],
    409: ['IdempotencyKeyInUse'],
    410: ['CursorExpired'],
    413: ['PayloadTooLarge', 'invalid_request'],
    415: ['UnsupportedMediaType', 'invalid_request'],
    422: ['RequestValidationError'],
    429: ['TooManyRequests', 'temporarily_unavailable'],
    503: ['ServiceUnavailable', 'temporarily_unavailable'],
    504: ['Timeout', 'server_error'],
  };
  test('every error response has an example of its own status', () => {
    const wrong: string[] = [];
    for (const [path, item] of Object.entries<Json>(document.paths)) {
      for (const method of METHODS.filter((m) => item[m])) {
        for (const [status, response] of Object.entries<Json>(item[method].responses)) {
          if (Number(status) < 400) continue;
          // the authorization endpoint's error page is HTML (its own test: test/oauth2.test.ts)
          if (response.content?.['text/html']) continue;
          const example = response.content?.['application/json']?.example;
          if (!errorNames[status]?.includes(example?.error)) wrong.push(`${method} ${path} ${status}: ${JSON.stringify(example)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  describe.each(routes.map((route) => ({ route, name: `${route.method.toUpperCase()} ${route.path}` })))('$name', ({ route }) => {
    const operation = () => document.paths[route.path]?.[route.method] as Json;

    test('appears with its method, operation id, summary and tag', () => {
      expect(operation()).toMatchObject({ operationId: route.operationId, summary: route.summary, tags: [route.tag] });
    });

    test('declares its path parameters, required', () => {
      const names = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const declared = (operation().parameters ?? []).filter((p: Json) => p.in === 'path');
      expect(declared.map((p: Json) => p.name).sort()).toEqual(names.sort());
      for (const p of declared) expect(p.required).toBe(true);
    });

    test('its security and description follow the declared access', () => {
      const op = operation();
      const { credentials, scopes } = route.access;
      // any one of the scopes will do: one OAuth2 requirement per scope (one listing them all would ask for all)
      const oauth2 = credentials.some((k) => k.startsWith('oauth2_'));
      const expected = route.clientAuthentication
        ? // the OAuth2 client's own: HTTP Basic, or nothing in a header (the body carries it)
          [{ oauth2Client: [] }, {}]
        : [
            // no scope named (SPEC §20's explanations): an OAuth2 token with any scope
            ...(oauth2 ? (scopes.length ? scopes.map((s) => ({ oauth2: [s] })) : [{ oauth2: [] }]) : []),
            ...(credentials.some((k) => k !== 'web_session') ? [{ bearer: [] }] : []),
            ...(credentials.includes('web_session') ? [{ session: [] }] : []),
          ];
      expect(op.security).toEqual(expected);
      for (const scope of scopes) expect(op.description).toContain(`\`${scope}\``);
    });

    test('its description says the policy its entry declares, and no other', () => {
      const sentence = /\*\*Authorization:\*\* [^\n]*/.exec(operation().description ?? '')?.[0];
      expect(sentence).toBe(route.authorize ? authorizationSentence(route.authorize) : undefined);
    });

    // an endpoint that takes no credential has no 401/403 for one; the OAuth2 protocol
    // endpoints answer RFC 6749's errors: 400, with the OAuth2Error schema
    const anonymous = route.access.credentials.length === 0;
    const oauth2 = route.errorFormat === 'oauth2';
    // RFC 7591: a registration's refused metadata is a 400 of RFC 6749's shape, its other errors SPEC §7's
    const registration = route.errorFormat === 'oauth2-registration';
    test('its responses: the success status, 401, 403, 422, 429, 503, 504, each error with the Error schema and its header fields', () => {
      const responses = operation().responses as Json;
      // a rate limit counts /v1's requests (not the metadata's)
      const limited = route.path.startsWith('/v1/');
      const expected = [
        String(route.status),
        ...(anonymous ? [] : ['401', '403']),
        oauth2 || registration ? '400' : '422',
        ...(limited ? ['429'] : []),
        '503',
        '504',
      ];
      expect(Object.keys(responses)).toEqual(expect.arrayContaining(expected));
      if (registration) expect(Object.keys(responses)).not.toContain('422');
      for (const [status, response] of Object.entries<Json>(responses)) {
        expect(hasDescription(response), status).toBe(true);
        const schema = `#/components/schemas/${oauth2 || (registration && status === '400') ? 'OAuth2Error' : 'Error'}`;
        // the authorization endpoint's error page is HTML
        if (Number(status) >= 400 && !response.content['text/html'])
          expect(response.content['application/json'].schema).toEqual({ $ref: schema });
        // SPEC §14: every answer carries its id and the rate limit's fields; a refusal says when to come back
        const fields = Object.keys(response.headers ?? {});
        expect(fields, status).toEqual(expect.arrayContaining(['X-Request-Id', ...(limited ? ['RateLimit-Policy', 'RateLimit'] : [])]));
        if (!limited) expect(fields).not.toContain('RateLimit');
        if (status === '429' || status === '503') expect(fields).toContain('Retry-After');
        // sent only sometimes: never required (a field given by reference is read where it is described)
        for (const sometimes of ['Idempotent-Replayed', 'Rowgate-Consistency']) {
          const field = response.headers?.[sometimes];
          const described = field?.$ref ? document.components.headers[field.$ref.split('/').pop()] : field;
          expect(described?.required ?? false, `${status} ${sometimes}`).toBe(false);
        }
      }
      if (route.status === 204) expect(responses['204'].content).toBeUndefined();
      // a write's answer names them (so the rule above has something to read); a read's, a POST's too, does not
      if (route.path.startsWith('/v1/') && route.access)
        expect(Object.keys(responses[String(route.status)].headers ?? {}).includes('Rowgate-Consistency')).toBe(route.effect === 'writes');
    });

    test('its request body, when it takes one, is required JSON', () => {
      const body = operation().requestBody;
      if (route.body) expect(body).toMatchObject({ required: true, content: { 'application/json': { schema: expect.any(Object) } } });
      else expect(body).toBeUndefined();
    });

    test('the examples of its body and response pass the schemas that validate them', () => {
      const op = operation();
      const check = (zodSchema: z.ZodType | undefined, node: Json | undefined) => {
        if (!zodSchema) return;
        const s = typeof node?.$ref === 'string' ? resolve(document, node.$ref) : node;
        expect(hasExample(s)).toBe(true);
        const result = zodSchema.safeParse(s!.example ?? s!.examples?.[0]);
        expect(result.success, result.error?.message).toBe(true);
      };
      check(route.body, op.requestBody?.content?.['application/json']?.schema);
      check(route.response, op.responses[String(route.status)]?.content?.['application/json']?.schema);
    });
  });
});

describe('the rendered reference', () => {
  test('GET /docs is an HTML page that loads the document', async () => {
    const res = await app.get('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.body).toMatch(/^<!doctype html>/i);
    expect(res.body).toContain('swagger-ui-bundle.js');
    const init = await app.get('/docs/init.js');
    expect(init.status).toBe(200);
    // one document per API version, the newest first (SPEC §23)
    expect(init.body).toContain('"url":"/docs/openapi-2026-12-15.json"');
    expect(init.body.indexOf('openapi-2026-12-15.json')).toBeLessThan(init.body.indexOf('openapi-2026-11-20.json'));
    expect(init.body).toContain('usePkceWithAuthorizationCodeGrant: true');
  });

  // Reached by another name than localhost over plain HTTP (a LAN address, a container's
  // name), `upgrade-insecure-requests` sent the browser to https for the CSS and JS: a blank page.
  test.each([['/docs'], ['/docs/init.js'], ['/docs/oauth2-redirect.html']])(
    'GET %s under another host name: a CSP that loads its own files over the same scheme',
    async (pathname) => {
      const res = await getWithHost(pathname, 'rowgate.internal:8080');
      expect(res.status).toBe(200);
      const csp = String(res.headers['content-security-policy']);
      expect(csp).not.toContain('upgrade-insecure-requests');
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("default-src 'self'");
      // every file a page loads is named by path, so it comes from wherever the page came from
      const links = res.body.match(/(?:src|href)="[^"]*"/g) ?? [];
      if (pathname.endsWith('.js')) expect(links).toEqual([]);
      else
        expect(
          links.filter((a) => !a.startsWith('src="/docs/') && !a.startsWith('href="/docs/') && a !== 'src="oauth2-redirect.js"'),
        ).toEqual([]);
      if (!pathname.endsWith('.js')) expect(links.length).toBeGreaterThan(0);
    },
  );

  test("the reference's copy of the document pre-fills no optional filter; the published one keeps every example", async () => {
    const res = await app.get('/docs/openapi.json');
    expect(res.status).toBe(200);
    const parameters = (doc: Json) =>
      Object.values<Json>(doc.paths).flatMap((item) => METHODS.flatMap((m) => (item[m]?.parameters ?? []) as Json[]));
    const optional = parameters(res.body).filter((p) => p.in === 'query' && !p.required);
    expect(optional.length).toBeGreaterThan(20);
    expect(optional.filter((p) => hasExample(p) || hasExample(p.schema)).map((p) => p.name)).toEqual([]);
    // the example is still shown to the reader, in the description
    expect(optional.find((p) => p.name === 'organization_id')?.description).toMatch(/Example: `[0-9a-f-]{36}`/);
    // required parameters (a path's id) keep theirs, and the published document keeps all
    expect(
      parameters(res.body)
        .filter((p) => p.in === 'path')
        .every((p) => hasExample(p) || hasExample(p.schema)),
    ).toBe(true);
    expect(
      parameters(document)
        .filter((p) => p.in === 'query')
        .every((p) => hasExample(p) || hasExample(p.schema)),
    ).toBe(true);
  });

  const assets: [file: string, type: RegExp][] = [
    ['swagger-ui.css', /^text\/css/],
    ['swagger-ui-bundle.js', /javascript/],
    ['init.js', /javascript/],
    ['oauth2-redirect.html', /^text\/html/],
    ['oauth2-redirect.js', /javascript/],
    ['openapi.json', /^application\/json/],
  ];
  test.each(assets)('GET /docs/%s → 200 %s', async (file, type) => {
    const res = await app.get(`/docs/${file}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(type);
    expect(JSON.stringify(res.body).length).toBeGreaterThan(10);
  });

  test.each([['nope.js'], ['..%2Fpackage.json'], ['index.html']])('GET /docs/%s → 404', async (file) => {
    const res = await app.get(`/docs/${file}`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'NotFound', detail: expect.any(String) });
  });
});
