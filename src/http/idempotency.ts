// Idempotency keys (SPEC §17): a POST or PATCH under /v1 with `Idempotency-Key`
// runs once per key of its subject. The database keeps the keys and decides
// (rowgate.claim_idempotency_key, migration 000016); this module only carries
// the header there and the answer back, as two pipeline hooks: `authenticated`
// (inside the transaction, as the subject) asks what the key says, and
// `answered` (still inside it, before the commit) keeps a 2xx answer with the
// key, so the answer is stored exactly when the effect is committed.
//
// A stored answer is sealed under the server secret (src/auth/at-rest-encryption.ts): the
// answers of token, session, client and webhook creation carry secrets that
// are shown once and otherwise kept only as keyed hashes (SPEC §2), and a copy
// of the database must not hold them in clear for the key's lifetime.
import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { open, seal } from '../auth/at-rest-encryption.ts';
import { ApiError, invalidField } from '../core/errors.ts';
import { requestRecord } from '../core/request-record.ts';
import { FIRST_VERSION } from '../core/versions.ts';
import type { PipelineHooks, RequestState } from './pipeline.ts';
import { Replay } from './respond.ts';
import { type ApiRoute, isAnonymous } from './route-declaration.ts';

const HEADER = 'idempotency-key';
/** 1 to 255 printable ASCII characters */
const WELL_FORMED = /^[\x20-\x7E]{1,255}$/;

interface Claimed {
  key: string;
  requestHash: Buffer;
}
const claims = new WeakMap<Request, Claimed>();

/** The routes that take keys: writes (a POST that only reads, a check, takes none) that answer JSON (or nothing) to a subject. */
export const takesIdempotencyKeys = (route: ApiRoute) =>
  (route.method === 'post' || route.method === 'patch') && route.effect === 'writes' && !isAnonymous(route.access) && route.status !== 302;

export const IDEMPOTENCY_HEADER = HEADER;

/**
 * The same request: the same method, target (path and query string) and body,
 * in the same API version (SPEC §23); for a route that acts on the presenting
 * credential itself (signing out), the same credential too. The first
 * version's requests hash as they did before versions existed, so a key
 * claimed by a server of the previous release still replays.
 */
function requestHash(state: RequestState): Buffer {
  const { req, route } = state;
  const credential = route.actsOnCredential ? (state.subject?.settings?.['rowgate.credential_id'] ?? '') : '';
  // the target as the router reads it: an absolute-form target (a proxy's) and the origin form are one
  // request, and so are a path with and without its trailing slash (one route either way)
  const target = new URL(req.originalUrl, 'http://target.invalid');
  const path = target.pathname.length > 1 ? target.pathname.replace(/\/+$/, '') : target.pathname;
  const apiVersion = requestRecord(req).apiVersion;
  const version = apiVersion === undefined || apiVersion === FIRST_VERSION ? '' : `${apiVersion}\n`;
  return createHash('sha256')
    .update(`${version}${req.method} ${path}${target.search}\n${credential}\n${canonicalJson(req.body ?? null)}`)
    .digest();
}

/**
 * JSON with every object's keys in one order: the same body sent again by a
 * client whose serializer orders keys otherwise is the same request (its
 * spacing never counted: the body is hashed as parsed). The body has passed
 * its schema (the key is claimed after step 4), so its depth is bounded.
 */
const canonicalJson = (body: unknown): string =>
  JSON.stringify(body, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((key) => [key, (value as Record<string, unknown>)[key]]),
        )
      : value,
  ) ?? 'null';

/** The stored answer's row (its subject, key and request): a sealed answer opens only there */
function rowOf(state: RequestState, key: string, hash: Buffer): string {
  const settings = state.subject?.settings;
  return `${settings?.['rowgate.subject_kind'] ?? ''} ${settings?.['rowgate.subject_id'] ?? ''}\n${key}\n${hash.toString('hex')}`;
}

const PURPOSE = 'rowgate idempotent answers v1';
/** Marks a sealed answer (base64 of src/auth/at-rest-encryption.ts's bytes): every answer is stored so */
const SEALED = 'sealed:v1:';

/** What is sealed: the body as sent, and the cookies the answer set (the only header a 2xx write sets itself) */
interface Kept {
  body: string;
  set_cookie?: string[];
}

const sealAnswer = (kept: Kept, secret: string, row: string) =>
  SEALED + seal(JSON.stringify(kept), secret, PURPOSE, row).toString('base64');

function openAnswer(stored: string, secret: string, row: string): Kept {
  try {
    if (!stored.startsWith(SEALED)) throw new Error('not a sealed answer');
    return JSON.parse(open(Buffer.from(stored.slice(SEALED.length), 'base64'), secret, PURPOSE, row)) as Kept;
  } catch {
    // not sealed, sealed under another server secret, or for another row: the answer cannot be given again, and the
    // request must not run twice
    throw new ApiError(422, 'IdempotencyKeyReused', 'The answer kept for this Idempotency-Key can no longer be read; use a new key');
  }
}

/** Claims the request's key: nothing more when it is new (its answer is kept once given), a Replay of a kept answer. */
async function claim(state: RequestState, secret: string): Promise<Replay | undefined> {
  const sent = state.req.headers[HEADER];
  if (sent === undefined) return;
  // Node joins a header sent twice with ", ": two keys are not one key
  if ((state.req.headersDistinct[HEADER]?.length ?? 0) > 1) {
    throw invalidField(['header', HEADER], 'Send one Idempotency-Key', String(sent));
  }
  if (typeof sent !== 'string' || !WELL_FORMED.test(sent)) {
    throw invalidField(['header', HEADER], 'An Idempotency-Key is 1 to 255 printable ASCII characters', String(sent));
  }
  const hash = requestHash(state);
  const row = await state.tx!.one<{ status: string; response_status: number | null; response_body: string | null }>(
    'select status, response_status, response_body from rowgate.claim_idempotency_key($1, $2)',
    [sent, hash],
  );
  switch (row!.status) {
    case 'in_use':
      throw new ApiError(409, 'IdempotencyKeyInUse', 'A request with this Idempotency-Key is still running; retry once it has answered');
    case 'reused':
      throw new ApiError(422, 'IdempotencyKeyReused', 'This Idempotency-Key was used for another request (method, path or body)');
    case 'replay': {
      const kept = openAnswer(row!.response_body!, secret, rowOf(state, sent, hash));
      return new Replay(row!.response_status!, kept.body, kept.set_cookie);
    }
    default:
      claims.set(state.req, { key: sent, requestHash: hash });
  }
}

async function keep(state: RequestState, result: unknown, secret: string) {
  const claimed = claims.get(state.req);
  // a handler that returns an error has committed something, but its answer is not a 2xx
  if (!claimed || result instanceof ApiError) return;
  const body = state.route.status === 204 ? '' : (JSON.stringify(result) ?? '');
  const cookies = state.res.getHeader('set-cookie');
  const kept: Kept = cookies === undefined ? { body } : { body, set_cookie: [cookies].flat().map(String) };
  await state.tx!.one('select rowgate.store_idempotent_answer($1, $2, $3, $4)', [
    claimed.key,
    claimed.requestHash,
    state.route.status,
    sealAnswer(kept, secret, rowOf(state, claimed.key, claimed.requestHash)),
  ]);
}

/**
 * The hooks of a route that takes keys: claimed first once authenticated, kept
 * last once answered (other routes go without: a hook costs every request a tick).
 */
export function withIdempotency(secret: string, hooks: Partial<PipelineHooks> = {}): PipelineHooks {
  return {
    received: hooks.received ?? [],
    accepted: hooks.accepted ?? [],
    authenticated: [(state) => claim(state, secret), ...(hooks.authenticated ?? [])],
    answered: [...(hooks.answered ?? []), (state, result) => keep(state, result, secret)],
  };
}
