// Between the sign-in code route (src/signin/login-code.ts) and the rate limits
// (src/operating/operate.ts): an attempt reserves one of its address's wrong
// codes before its code is tried, and gets it back only once the route says the
// code was right. The route says so when the database has answered, not when
// the client has: a client that drops its connection still had its code tried.
import type { Response } from 'express';

type Listener = (right: boolean) => void;

/** The route: the database has checked the attempt's code */
export function codeChecked(res: Response, right: boolean): void {
  (res.locals.codeChecked as Listener | undefined)?.(right);
}

/** The rate limits: what to do once the attempt's code is checked */
export function whenCodeChecked(res: Response, listener: Listener): void {
  res.locals.codeChecked = listener;
}
