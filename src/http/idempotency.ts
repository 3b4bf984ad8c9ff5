// Idempotency keys (SPEC §17): a POST or PATCH under /v1 with `Idempotency-Key`
// runs once per key of its subject. The database keeps the keys and decides
// (rowgate.claim_idempotency_key, migration 000016); this module only carries
// the header there and the answer back, as two pipeline hooks: `authenticated`
// (inside the transaction, as the subject) asks what the key says, and
// `answered` (still inside it, before the commit) keeps a 2xx answer with the
// key, so the answer is stored exactly when the effect is committed.
import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { ApiError, invalidField } from './errors.ts';
import type { PipelineHooks, RequestState } from './pipeline.ts';
import { type ApiRoute, isAnonymous } from './route.ts';

const HEADER = 'idempotency-key';
/** 1 to 255 printable ASCII characters */
const WELL_FORMED = /^[\x20-\x7E]{1,255}$/;

/** A stored answer, sent again instead of running the request (it ends the transaction, which changed nothing). */
export class StoredAnswer {
  readonly status: number;
  readonly body: string;
  constructor(status: number, body: string) {
    this.status = status;
    this.body = body;
  }
}

interface Claimed {
  key: string;
  requestHash: Buffer;
}
const claims = new WeakMap<Request, Claimed>();

/** The routes that take keys: writes that answer JSON (or nothing) to a subject. */
export const takesIdempotencyKeys = (route: ApiRoute) =>
  (route.method === 'post' || route.method === 'patch') && !isAnonymous(route.access) && route.status !== 302;

export const IDEMPOTENCY_HEADER = HEADER;

/** The same request: the same method, path and body. */
const requestHash = (req: Request) =>
  createHash('sha256')
    .update(`${req.method} ${req.originalUrl.split('?')[0]}\n${JSON.stringify(req.body ?? null)}`)
    .digest();

async function claim(state: RequestState) {
  const sent = state.req.headers[HEADER];
  if (sent === undefined) return;
  if (typeof sent !== 'string' || !WELL_FORMED.test(sent)) {
    throw invalidField(['header', HEADER], 'An Idempotency-Key is 1 to 255 printable ASCII characters', String(sent));
  }
  const hash = requestHash(state.req);
  const row = await state.tx!.one<{ status: string; response_status: number | null; response_body: string | null }>(
    'select status, response_status, response_body from rowgate.claim_idempotency_key($1, $2)',
    [sent, hash],
  );
  switch (row!.status) {
    case 'in_use':
      throw new ApiError(409, 'IdempotencyKeyInUse', 'A request with this Idempotency-Key is still running; retry once it has answered');
    case 'reused':
      throw new ApiError(422, 'IdempotencyKeyReused', 'This Idempotency-Key was used for another request (method, path or body)');
    case 'replay':
      throw new StoredAnswer(row!.response_status!, row!.response_body!);
    default:
      claims.set(state.req, { key: sent, requestHash: hash });
  }
}

async function keep(state: RequestState, result: unknown) {
  const claimed = claims.get(state.req);
  // a handler that returns an error has committed something, but its answer is not a 2xx
  if (!claimed || result instanceof ApiError) return;
  const body = state.route.status === 204 ? '' : (JSON.stringify(result) ?? '');
  await state.tx!.one('select rowgate.store_idempotent_answer($1, $2, $3, $4)', [
    claimed.key,
    claimed.requestHash,
    state.route.status,
    body,
  ]);
}

/**
 * The hooks of a route that takes keys: claimed first once authenticated, kept
 * last once answered (other routes go without: a hook costs every request a tick).
 */
export function withIdempotency(hooks: Partial<PipelineHooks> = {}): PipelineHooks {
  return {
    received: hooks.received ?? [],
    accepted: hooks.accepted ?? [],
    authenticated: [claim, ...(hooks.authenticated ?? [])],
    answered: [...(hooks.answered ?? []), keep],
  };
}
