// The pipeline's extension points (src/http/pipeline.ts): each hook runs at its place
// in SPEC §5's order, sees what the steps before it established, and may refuse.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createApp } from '../src/server/app.ts';
import { ApiError } from '../src/core/errors.ts';
import type { PipelineHooks, RequestState } from '../src/http/pipeline.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let server: Server;
let url: string;
let user: TestUser;
let productId: string;
let organizationId: string;

/** What each hook saw, in the order they ran. */
let seen: { hook: string; credential: boolean; subject: string | null; tx: boolean; result?: unknown; asSubject?: string }[] = [];
/** A hook that refuses, by name, for the next request. */
let refuseAt: string | undefined;

function recorder(hook: string) {
  return async (state: RequestState, result?: unknown) => {
    const entry: (typeof seen)[number] = {
      hook,
      credential: state.credential !== null,
      subject: state.subject?.subjectId ?? null,
      tx: state.tx !== undefined,
    };
    if (hook === 'answered') entry.result = (result as { id?: string })?.id;
    // on a write, a hook after the authentication runs as the subject, in the request's transaction
    if (hook === 'authenticated' && state.tx && state.req.method === 'POST') {
      entry.asSubject = (await state.tx.one<{ id: string }>(`select current_setting('rowgate.subject_id') as id`))?.id;
    }
    seen.push(entry);
    if (refuseAt === hook) throw new ApiError(429, 'TooManyRequests', `refused by the ${hook} hook`, { 'Retry-After': '1' });
  };
}

beforeAll(async () => {
  app = await startTestApp();
  user = await app.user();
  organizationId = (await app.organization(user.id)).id;
  productId = await app.product(organizationId);
  const hooks: PipelineHooks = {
    received: [recorder('received')],
    accepted: [recorder('accepted')],
    authenticated: [recorder('authenticated')],
    answered: [recorder('answered')],
  };
  server = createApp({ pool: app.pool, secret: app.secret, routes: allRoutes(app.pool), hooks }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await app?.close();
});

async function call(method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  seen = [];
  const response = await fetch(url + path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response;
}

const session = () => ({ cookie: `rowgate_session=${user.session}` });

describe('the hooks run in SPEC §5 order, each seeing what the steps before it established', () => {
  test('a JSON read: received, accepted (credential read), authenticated (the subject), answered (the result)', async () => {
    refuseAt = undefined;
    const response = await call('GET', `/v1/products/${productId}`, session());
    expect(response.status).toBe(200);
    expect(seen).toEqual([
      { hook: 'received', credential: false, subject: null, tx: false },
      { hook: 'accepted', credential: true, subject: null, tx: false },
      { hook: 'authenticated', credential: true, subject: user.id, tx: true },
      { hook: 'answered', credential: true, subject: user.id, tx: true, result: productId },
    ]);
  });

  test('a write: the authenticated hook runs in the transaction as the subject', async () => {
    refuseAt = undefined;
    const response = await call('POST', '/v1/products/', session(), {
      organization_id: organizationId,
      name: 'Hooked',
      price_amount: 100,
      price_currency: 'usd',
    });
    expect(response.status).toBe(201);
    expect(seen.find((s) => s.hook === 'authenticated')?.asSubject).toBe(user.id);
  });

  test('a credential the database does not know: no hook after accepted runs (401)', async () => {
    refuseAt = undefined;
    const response = await call('GET', `/v1/products/${productId}`, {
      cookie: 'rowgate_session=rg_us_0000000000000000000000000000000000000000000',
    });
    expect(response.status).toBe(401);
    expect(seen.map((s) => s.hook)).toEqual(['received', 'accepted']);
  });
});

describe('a hook that throws an ApiError refuses the request with it, and nothing after it runs', () => {
  for (const hook of ['received', 'accepted', 'authenticated'] as const) {
    test(hook, async () => {
      refuseAt = hook;
      const before = (await app.sql<{ n: number }>('select count(*)::int as n from rowgate.products'))[0]!.n;
      const response = await call('POST', '/v1/products/', session(), {
        organization_id: organizationId,
        name: 'Refused',
        price_amount: 100,
        price_currency: 'usd',
      });
      refuseAt = undefined;
      expect(response.status).toBe(429);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(seen.at(-1)?.hook).toBe(hook);
      expect((await app.sql<{ n: number }>('select count(*)::int as n from rowgate.products'))[0]!.n).toBe(before);
    });
  }

  test('answered: the write is rolled back', async () => {
    refuseAt = 'answered';
    const response = await call('POST', '/v1/products/', session(), {
      organization_id: organizationId,
      name: 'Rolled back',
      price_amount: 100,
      price_currency: 'usd',
    });
    refuseAt = undefined;
    expect(response.status).toBe(429);
    expect(await app.sql(`select 1 from rowgate.products where name = 'Rolled back'`)).toEqual([]);
  });
});
