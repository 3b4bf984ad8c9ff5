// Liveness, readiness, and the published documents.
import { createRequire } from 'node:module';
import path from 'node:path';
import type pg from 'pg';
import { ApiError } from './errors.ts';
import { openApiDocument } from './openapi.ts';
import { publicRoute, type Route } from './route.ts';
import { z } from 'zod';
import { doc } from '../resources/fields.ts';

const Health = z
  .object({ status: doc(z.string(), 'Always "ok" when the process answers.', 'ok') })
  .meta({ id: 'Health', description: 'Health state.' });

export function serviceRoutes(pool: pg.Pool, apiRoutes: () => readonly Route[]): Route[] {
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
      response: Health,
      errors: [503],
      handler: async () => {
        try {
          await pool.query('select 1');
        } catch {
          throw new ApiError(503, 'ServiceUnavailable', 'The database is unavailable');
        }
        return { status: 'ok' };
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
