// Middleware that every request passes through, run as one: each step calls the
// next, as Express would, without a router layer a step. Express's router
// spends about a microsecond a layer (matching, parameters, its tracing check),
// and every request paid it four times before any route was matched
// (docs/performance.md, "The request's way in").
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * The handlers in order, as one handler, with the router's rules for what a
 * step passes on: nothing, a falsy value or `'route'` goes on to the next step
 * (as to the next layer); `'router'` leaves the router; anything else is an
 * error, which skips the rest, to Express's error handling, as a step's throw
 * or its rejected promise does.
 */
export function inOrder(steps: readonly RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, done: NextFunction) => {
    let index = 0;
    const next = (error?: unknown) => {
      if (error && error !== 'route') return done(error);
      const step = steps[index++];
      if (!step) return done();
      try {
        const returned: unknown = step(req, res, next);
        if (returned instanceof Promise) returned.catch((rejected: unknown) => done(rejected || new Error('Rejected promise')));
      } catch (thrown) {
        done(thrown);
      }
    };
    next();
  };
}
