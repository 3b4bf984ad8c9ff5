// The HTTP server's request and response objects made with the Express app's
// prototypes from the start. Express gives every request its own: its handler
// calls Object.setPrototypeOf on the request and on the response before any
// middleware runs. V8 treats a prototype swap on a live object as a change of
// its shape, so each request's objects left the shapes the property accesses of
// Node's HTTP code, Express and the routes had cached: on the cached users/me,
// one process served 1.06–1.17 times the requests with the objects born with
// the right prototype (docs/performance.md, "Born Express objects"). Express's
// swap is then a no-op (V8 returns early for the same prototype), and a
// mounted sub-app still swaps to its own as before.
import { IncomingMessage, type RequestListener, ServerResponse } from 'node:http';

export interface ServerClasses {
  IncomingMessage?: typeof IncomingMessage;
  ServerResponse?: typeof ServerResponse;
}

/** The `http.createServer` options that make `listener`'s objects, when it is an Express app; none otherwise. */
export function expressServerClasses(listener: RequestListener): ServerClasses {
  const { request, response } = listener as RequestListener & { request?: object; response?: object };
  // what Express's app has: prototypes above Node's own (instanceof holds for what is made with them)
  if (!request || !response || !IncomingMessage.prototype.isPrototypeOf(request) || !ServerResponse.prototype.isPrototypeOf(response)) {
    return {};
  }
  return {
    IncomingMessage: bornWith(IncomingMessage, request) as typeof IncomingMessage,
    ServerResponse: bornWith(ServerResponse, response) as typeof ServerResponse,
  };
}

/**
 * A constructor whose objects are `base`'s, made with `prototype` (which has
 * base.prototype up its chain: instanceof and Node's own methods hold). A
 * class cannot do it: its prototype property is fixed and would sit between.
 */
function bornWith(base: new (...args: never[]) => object, prototype: object): unknown {
  function Born(...args: unknown[]) {
    return Reflect.construct(base, args, Born);
  }
  Born.prototype = prototype;
  // the base's static methods too, as a subclass would inherit them
  Object.setPrototypeOf(Born, base);
  return Born;
}
