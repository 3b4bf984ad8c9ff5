// Liveness, readiness, and the published documents.
import { createRequire } from 'node:module';
import path from 'node:path';
import type pg from 'pg';
import type { ReadReplicas } from '../db/read-replicas.ts';
import { ApiError } from '../core/errors.ts';
import { openApiDocument, tryItOutDocument } from './openapi.ts';
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

/** The published OpenAPI document: the API's routes and the health endpoints (load balancers are clients too). */
export const publishedDocument = (apiRoutes: readonly Route[]) => openApiDocument([...healthRoutes(null), ...apiRoutes]);

export function serviceRoutes(pool: pg.Pool, apiRoutes: () => readonly Route[], reads?: ReadReplicas): Route[] {
  let document: ReturnType<typeof openApiDocument> | undefined;
  const published = () => (document ??= publishedDocument(apiRoutes()));
  let reference: unknown;
  return [
    ...healthRoutes(pool, reads),
    publicRoute({
      method: 'get',
      path: '/v1/openapi.json',
      operationId: 'openapi',
      summary: 'The OpenAPI 3.1 document of this API',
      tag: 'documents',
      status: 200,
      handler: async () => published(),
    }),
    publicRoute({
      method: 'get',
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
        // the document as "Try it out" should start from: no optional filter filled in
        if (file === 'openapi.json') {
          res.json((reference ??= tryItOutDocument(published())));
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

/** Liveness and readiness; `pool` is null only for a document built without a server. */
function healthRoutes(pool: pg.Pool | null, reads?: ReadReplicas): Route[] {
  return [
    publicRoute({
      method: 'get',
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

const SWAGGER_FILES = ['swagger-ui.css', 'swagger-ui-bundle.js', 'oauth2-redirect.html', 'oauth2-redirect.js'];

// Swagger UI's Authorize dialog runs the authorization code flow with PKCE; a
// client registered with the redirect URI <origin>/docs/oauth2-redirect.html
// can sign the reference in.
const INIT_SCRIPT = `window.ui = SwaggerUIBundle({
  url: '/docs/openapi.json',
  dom_id: '#ui',
  oauth2RedirectUrl: new URL('/docs/oauth2-redirect.html', location.href).href,
});
window.ui.initOAuth({ usePkceWithAuthorizationCodeGrant: true });
`;

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rowgate API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="ui"></div><script src="/docs/swagger-ui-bundle.js"></script><script src="/docs/init.js"></script></body></html>`;
