// The published OpenAPI document (SPEC §6, §9): OpenAPI 3.1, every route of the
// table in it, and every schema, property and parameter described, with an example.
import { authorizationSentence } from '../src/auth/authorize.ts';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { z } from 'zod';
import type { ApiRoute } from '../src/http/route.ts';
import { apiRoutes } from '../src/http/routes.ts';
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
    expect(Object.keys(document.components.securitySchemes).sort()).toEqual(['bearer', 'session']);
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
    expect(documented.sort()).toEqual(apiRoutes.map((r) => `${r.method.toUpperCase()} ${r.path}`).sort());
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
      const expected = [
        ...(credentials.some((k) => k !== 'web_session') ? [{ bearer: [...scopes] }] : []),
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
    test('its responses: the success status, 401, 403, 422, each error with the Error schema', () => {
      const responses = operation().responses as Json;
      const expected = [String(route.status), ...(anonymous ? [] : ['401', '403']), oauth2 ? '400' : '422'];
      expect(Object.keys(responses)).toEqual(expect.arrayContaining(expected));
      for (const [status, response] of Object.entries<Json>(responses)) {
        expect(hasDescription(response), status).toBe(true);
        const schema = `#/components/schemas/${oauth2 ? 'OAuth2Error' : 'Error'}`;
        if (Number(status) >= 400) expect(response.content['application/json'].schema).toEqual({ $ref: schema });
      }
      if (route.status === 204) expect(responses['204'].content).toBeUndefined();
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
    expect(init.body).toContain('/v1/openapi.json');
  });

  const assets: [file: string, type: RegExp][] = [
    ['swagger-ui.css', /^text\/css/],
    ['swagger-ui-bundle.js', /javascript/],
    ['init.js', /javascript/],
  ];
  test.each(assets)('GET /docs/%s → 200 %s', async (file, type) => {
    const res = await app.get(`/docs/${file}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(type);
    expect(String(res.body).length).toBeGreaterThan(10);
  });

  test.each([['nope.js'], ['..%2Fpackage.json'], ['index.html']])('GET /docs/%s → 404', async (file) => {
    const res = await app.get(`/docs/${file}`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'NotFound', detail: expect.any(String) });
  });
});
