// Liveness, readiness, and the published documents.
import { createRequire } from 'node:module';
import path from 'node:path';
import type pg from 'pg';
import type { ReadReplicas } from '../db/read-replicas.ts';
import { ApiError } from './errors.ts';
import { openApiDocument } from './openapi.ts';
import { publicRoute, type Route } from './route.ts';
import { z } from 'zod';
import { doc } from '../resources/fields.ts';

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

export function serviceRoutes(pool: pg.Pool, apiRoutes: () => readonly Route[], reads?: ReadReplicas): Route[] {
  let document: unknown;
  return [
    publicRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'health:live',
      summary: 'Liveness: the process answers',
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
      tag: 'health',
      status: 200,
      response: Readiness,
      errors: [503],
      handler: async () => {
        try {
          await pool.query('select 1');
        } catch {
          throw new ApiError(503, 'ServiceUnavailable', 'The database is unavailable');
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
    publicRoute({
      method: 'get',
      path: '/v1/openapi.json',
      operationId: 'openapi',
      summary: 'The OpenAPI 3.1 document of this API',
      tag: 'documents',
      status: 200,
      handler: async () => (document ??= openApiDocument(apiRoutes())),
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
          res.type('js').send(`window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#ui' });`);
          return;
        }
        if (!['swagger-ui.css', 'swagger-ui-bundle.js'].includes(file)) throw new ApiError(404, 'NotFound', 'No such file');
        await new Promise<void>((resolve, reject) =>
          res.sendFile(path.join(swaggerDir, file), (error) => (error ? reject(error) : resolve())),
        );
      },
    }),
  ];
}

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const DOCS_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rowgate API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="ui"></div><script src="/docs/swagger-ui-bundle.js"></script><script src="/docs/init.js"></script></body></html>`;
