// Liveness, readiness, and the published documents.
import { createRequire } from 'node:module';
import path from 'node:path';
import type pg from 'pg';
import type { ReadReplicas } from '../db/read-replicas.ts';
import { ApiError } from '../core/errors.ts';
import type { Request } from 'express';
import { API_VERSIONS, type VersionHeaders } from '../core/versions.ts';
import { requestRecord } from '../core/request-record.ts';
import { routeIn } from './api-version.ts';
import { openApiDocument } from './openapi.ts';
import { tryItOutDocument } from './openapi-examples.ts';
import { publicRoute, type Route } from './route-declaration.ts';
import { z } from 'zod';
import { doc } from '../core/fields.ts';

const Health = z
  .object({ status: doc(z.string(), 'Always "ok" when the process answers.', 'ok') })
  .meta({ id: 'Health', description: 'Health state.' });

const Standby = z
  .object({
    standby: doc(z.number().int(), 'Its place in ROWGATE_READ_DATABASE_URLS, from 1.', 1),
    available: doc(z.boolean(), 'Whether reads may go to it now: it answers, and its lag is under the bound.', true),
    lag_ms: doc(
      z.number().int().nullable(),
      'How long ago the primary first had WAL it has not replayed (0: none); null when it does not answer.',
      0,
    ),
    reads: doc(z.number().int(), 'Reads it has served since the server started.', 1200),
  })
  .meta({ id: 'Standby', description: 'A hot standby that serves reads (SPEC §19).' });

const Readiness = Health.extend({
  standbys: doc(z.array(Standby), 'The read replicas, when ROWGATE_READ_DATABASE_URLS names any.', []).optional(),
  primary_reads: doc(z.number().int(), 'Reads the primary served because no standby would do.', 3).optional(),
}).meta({ id: 'Readiness', description: 'Readiness: the primary answers; the standbys as they are.' });

/**
 * The published OpenAPI document of an API version (default the newest): the
 * API's routes as that version shapes them, and the health endpoints (load
 * balancers are clients too).
 */
export function publishedDocument(apiRoutes: readonly Route[], version = API_VERSIONS.newest) {
  const added = new Map<Route, VersionHeaders>();
  const shaped = apiRoutes.map((route) => {
    if (route.access === null) return route;
    const inVersion = routeIn(route, API_VERSIONS, version);
    added.set(inVersion, API_VERSIONS.headers(version, route.query));
    return inVersion;
  });
  return openApiDocument([...healthRoutes(null), ...versionRoutes(null), ...shaped], version, (route) => added.get(route));
}

const VersionRead = z
  .object({
    version: doc(z.string(), 'The version, a date: send it as the Rowgate-Version header.', '2026-12-15'),
    released_at: doc(z.string(), 'When it was released (RFC 3339).', '2026-12-15T00:00:00Z'),
    changes: doc(z.array(z.string()), 'What it changes from the version before, one sentence per change.', [
      'Lists answer {items, next_cursor}.',
    ]),
  })
  .meta({ id: 'ApiVersion', description: 'A version of this API (SPEC §23).' });

const VersionList = z
  .object({ items: doc(z.array(VersionRead), 'Every supported version, newest first.', []) })
  .meta({ id: 'ApiVersionList', description: 'The versions of this API.' });

/** The version a document is asked in: `?version=`, else the Rowgate-Version header, else the newest. */
function documentVersion(req: Request): string {
  const asked = req.query.version;
  if (asked === undefined) return requestRecord(req).apiVersion ?? API_VERSIONS.newest;
  const version = String(asked);
  if (!API_VERSIONS.has(version)) {
    throw new ApiError(
      400,
      'UnsupportedVersion',
      `${JSON.stringify(version)} is not a version of this API; supported: ${API_VERSIONS.names.join(', ')}`,
    );
  }
  return version;
}

export function serviceRoutes(pool: pg.Pool, apiRoutes: () => readonly Route[], reads?: ReadReplicas): Route[] {
  const documents = new Map<string, ReturnType<typeof openApiDocument>>();
  const published = (version: string) => {
    let document = documents.get(version);
    if (!document) documents.set(version, (document = publishedDocument(apiRoutes(), version)));
    return document;
  };
  const references = new Map<string, unknown>();
  return [
    ...healthRoutes(pool, reads),
    ...versionRoutes(published),
    publicRoute({
      method: 'get',
      effect: 'reads',
      path: '/docs',
      operationId: 'docs',
      summary: 'The API reference, rendered',
      tag: 'documents',
      headers: 'page',
      status: 200,
      handler: async ({ res }) => {
        res.type('html').send(DOCS_PAGE);
      },
    }),
    publicRoute({
      method: 'get',
      effect: 'reads',
      path: '/docs/{file}',
      operationId: 'docs:assets',
      summary: 'Files of the rendered reference',
      tag: 'documents',
      headers: 'page',
      status: 200,
      handler: async ({ req, res }) => {
        const file = String(req.params.file);
        if (file === 'init.js') {
          res.type('js').send(INIT_SCRIPT);
          return;
        }
        // the document as "Try it out" should start from: no optional filter filled in; one per version
        const version =
          /^openapi-([0-9]{4}-[0-9]{2}-[0-9]{2})\.json$/.exec(file)?.[1] ?? (file === 'openapi.json' ? API_VERSIONS.newest : undefined);
        if (version !== undefined && API_VERSIONS.has(version)) {
          let reference = references.get(version);
          if (!reference) references.set(version, (reference = tryItOutDocument(published(version))));
          res.json(reference);
          return;
        }
        if (!SWAGGER_FILES.includes(file)) throw new ApiError(404, 'NotFound', 'No such file');
        await new Promise<void>((resolve, reject) =>
          res.sendFile(path.join(swaggerDir, file), (error) => (error ? reject(error) : resolve())),
        );
      },
    }),
  ];
}

/** The versions and the document of each; `published` is null only for a document built without a server. */
function versionRoutes(published: ((version: string) => unknown) | null): Route[] {
  return [
    publicRoute({
      method: 'get',
      effect: 'reads',
      path: '/v1/openapi.json',
      operationId: 'openapi',
      summary: 'The OpenAPI 3.1 document of this API',
      description: "The newest version's document; `?version=` or the Rowgate-Version header picks another.",
      tag: 'documents',
      status: 200,
      handler: async ({ req, res }) => {
        const version = documentVersion(req);
        res.setHeader('Rowgate-Version', version);
        return published!(version);
      },
    }),
    publicRoute({
      method: 'get',
      effect: 'reads',
      path: '/v1/versions',
      operationId: 'versions:list',
      summary: 'The versions of this API',
      description: 'Every supported version, newest first, with what each changes (SPEC §23). Takes no credential.',
      tag: 'documents',
      status: 200,
      response: VersionList,
      handler: async () => ({
        items: [...API_VERSIONS.list].reverse().map((v) => ({
          version: v.version,
          released_at: v.released_at,
          changes: v.changes.map((c) => c.changelog),
        })),
      }),
    }),
  ];
}

/** Liveness and readiness; `pool` is null only for a document built without a server. */
function healthRoutes(pool: pg.Pool | null, reads?: ReadReplicas): Route[] {
  return [
    publicRoute({
      method: 'get',
      effect: 'reads',
      path: '/healthz',
      operationId: 'health:live',
      summary: 'Liveness: the process answers',
      description: 'Answers 200 while the process runs, whatever the database does: restart the process when it stops answering.',
      tag: 'health',
      status: 200,
      response: Health,
      handler: async () => ({ status: 'ok' }),
    }),
    publicRoute({
      method: 'get',
      effect: 'reads',
      path: '/readyz',
      operationId: 'health:ready',
      summary: 'Readiness: the database answers',
      description: 'Answers 200 when a statement reaches the database, 503 when it cannot: send no traffic to this process meanwhile.',
      tag: 'health',
      status: 200,
      response: Readiness,
      errors: [503],
      handler: async () => {
        try {
          await pool!.query('select 1');
        } catch {
          throw new ApiError(503, 'ServiceUnavailable', 'The database is unavailable', { 'Retry-After': '2' });
        }
        if (!reads) return { status: 'ok' };
        const standbys = reads.status().map(({ available, lag_ms, reads: served }, i) => ({
          standby: i + 1,
          available,
          lag_ms: lag_ms === null ? null : Math.round(lag_ms),
          reads: served,
        }));
        return { status: 'ok', standbys, primary_reads: reads.primaryReads };
      },
    }),
  ];
}

const SWAGGER_FILES = [
  'swagger-ui.css',
  'swagger-ui-bundle.js',
  'swagger-ui-standalone-preset.js',
  'oauth2-redirect.html',
  'oauth2-redirect.js',
];

// Swagger UI's Authorize dialog runs the authorization code flow with PKCE; a
// client registered with the redirect URI <origin>/docs/oauth2-redirect.html
// can sign the reference in.
// The top bar offers each API version's document, the newest first.
const INIT_SCRIPT = `window.ui = SwaggerUIBundle({
  urls: ${JSON.stringify(API_VERSIONS.names.map((version) => ({ url: `/docs/openapi-${version}.json`, name: `API version ${version}` })))},
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
  dom_id: '#ui',
  oauth2RedirectUrl: new URL('/docs/oauth2-redirect.html', location.href).href,
});
window.ui.initOAuth({ usePkceWithAuthorizationCodeGrant: true });
`;

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rowgate API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="ui"></div><script src="/docs/swagger-ui-bundle.js"></script><script src="/docs/swagger-ui-standalone-preset.js"></script><script src="/docs/init.js"></script></body></html>`;
