// The request middleware run as one handler (src/http/in-order.ts): in order,
// and a failing step (thrown, rejected, or passed on) goes to the error handler
// with the rest skipped, as Express's router does with separate layers.
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { inOrder } from '../src/http/in-order.ts';

let base = '';
let close = () => {};
const ran: string[] = [];

beforeAll(async () => {
  const app = express();
  const step = (name: string) => (req: Request, _res: Response, next: NextFunction) => {
    ran.push(name);
    if (req.query.fail === name) throw new Error(`thrown by ${name}`);
    if (req.query.reject === name) return Promise.reject(new Error(`rejected by ${name}`));
    if (req.query.pass === name) return next(new Error(`passed on by ${name}`));
    if (req.query.later === name) return void setTimeout(next, 1);
    if (req.query.null === name) return next(null);
    if (req.query.route === name) return next('route');
    next();
  };
  app.use(inOrder([step('a'), step('b'), step('c')]));
  app.get('/', (_req, res) => void res.json({ ran }));
  app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => void res.status(500).json({ error: error.message, ran }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () => server.close();
});
afterAll(() => close());

const get = async (query: string) => {
  ran.length = 0;
  const answer = await fetch(`${base}/?${query}`);
  return { status: answer.status, body: (await answer.json()) as { error?: string; ran: string[] } };
};

test('every step runs, in order, then the route (a step may go on later)', async () => {
  expect(await get('')).toEqual({ status: 200, body: { ran: ['a', 'b', 'c'] } });
  expect(await get('later=b')).toEqual({ status: 200, body: { ran: ['a', 'b', 'c'] } });
  // what the cors package passes on for an origin it does not allow, and what goes on to the next layer in Express
  expect(await get('null=b')).toEqual({ status: 200, body: { ran: ['a', 'b', 'c'] } });
  expect(await get('route=b')).toEqual({ status: 200, body: { ran: ['a', 'b', 'c'] } });
});

test.each([
  ['fail', 'thrown by b'],
  ['reject', 'rejected by b'],
  ['pass', 'passed on by b'],
])('a step that fails (%s) skips the rest, to the error handler', async (how, error) => {
  expect(await get(`${how}=b`)).toEqual({ status: 500, body: { error, ran: ['a', 'b'] } });
  // after a step that went on later: out of Express's own call, so only in-order.ts can catch it
  expect(await get(`later=a&${how}=b`)).toEqual({ status: 500, body: { error, ran: ['a', 'b'] } });
});
