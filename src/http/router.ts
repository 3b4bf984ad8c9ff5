// The route table mounted on Express: one router per resource, each route behind
// only the middleware it needs, and a 405 naming the allowed methods of a known path.
import express from 'express';
import { ApiError } from '../core/errors.ts';
import { formBody, jsonBody } from './input.ts';
import type { Route } from './route-declaration.ts';
import { requestRecord } from '../core/request-record.ts';
import { pageSecurityHeaders } from './security-headers.ts';

/** `/v1/products/{id}` → `/v1/products/:id` */
const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

/**
 * What a route needs before its handler, in its own chain (a request pays for
 * what its route needs, not for every route's): a page's headers; the error
 * shape, recorded before the body is parsed (a malformed body on an OAuth2
 * endpoint is answered in RFC 6749's shape too); the body parsers of a route
 * that takes a body.
 */
function routeMiddleware(route: Route): express.RequestHandler[] {
  const chain: express.RequestHandler[] = [];
  if (route.headers === 'page') chain.push(pageSecurityHeaders);
  if (route.errorFormat) {
    const errorFormat = route.errorFormat;
    chain.push((req, _res, next) => {
      requestRecord(req).errorFormat = errorFormat;
      next();
    });
  }
  if (route.access !== null && route.body) chain.push(jsonBody, formBody);
  return chain;
}

/**
 * Mounts every route with its handler. One router per resource (a path's first
 * two segments, `/v1/orders`): a request is matched against its resource's
 * routes, not against the whole table (Express tries a router's layers one by one).
 */
export function mountRoutes(app: express.Express, routes: readonly Route[], handlerOf: (route: Route) => express.RequestHandler) {
  const routers = new Map<string, express.Router>();
  const methodsByPath = new Map<string, { template: string; methods: string[] }>();
  for (const route of routes) {
    const path = expressPath(route.path);
    methodsByPath.set(path, { template: route.path, methods: [...(methodsByPath.get(path)?.methods ?? []), route.method.toUpperCase()] });
  }
  const guarded = new Set<string>();
  for (const route of routes) {
    const path = expressPath(route.path);
    const { router, rest } = resourceRouter(routers, path);
    // a path's other methods are a 405, guarded where the path first appears: before the routes
    // of a templated sibling listed after it (`/members/me` before `/members/{user_id}`)
    if (!guarded.has(path)) {
      guarded.add(path);
      const { template, methods } = methodsByPath.get(path)!;
      router.all(rest, (req, _res, next) => {
        if (methods.includes(req.method) || (req.method === 'HEAD' && methods.includes('GET'))) return next();
        requestRecord(req).route = template; // the access log's route: the path has routes, not this method
        // in the shape of the path's errors (errorFormats: an OAuth2 protocol endpoint's are RFC 6749's)
        next(new ApiError(405, 'MethodNotAllowed', `Allowed: ${methods.join(', ')}`, { Allow: methods.join(', ') }));
      });
    }
    router[route.method](rest, ...routeMiddleware(route), handlerOf(route));
  }
  for (const [prefix, router] of routers) app.use(prefix, router);
}

/** The router of an Express path's resource (`/v1/orders` for `/v1/orders/:id`), and the path within it. */
function resourceRouter(routers: Map<string, express.Router>, path: string) {
  const fixed = path.split('/').slice(1, 3);
  const parameter = fixed.findIndex((segment) => segment.includes(':'));
  const prefix = `/${(parameter < 0 ? fixed : fixed.slice(0, parameter)).join('/')}`;
  let router = routers.get(prefix);
  if (!router) routers.set(prefix, (router = express.Router({ caseSensitive: true })));
  return { router, rest: prefix === '/' ? path : path.slice(prefix.length) || '/' };
}
