// The request pipeline of an API route: SPEC §5's order of checks, one step a line (`answer` below).
// Each check fails with its own status, and a request is answered by the first that fails, in this order:
//   1. accept credential: one of a kind the route accepts (401; `invalid_token` only when it is
//      no good either), and a cookie-authenticated write from this server's own pages (403)
//   2. authenticate: the database resolves it, and the transaction takes its role (401)
//   3. scopes: the route's, any of (403)
//   4. input: path, query and body through the route's schemas (415, 422)
//   5. authorize: the policy the route declares, asked of the database (404, 403)
//   6. run: the handler, in the same transaction
//   7. send: the status the route declares
//
// Extension points, in the order a request meets them:
// - Express middleware for every request, whatever its route (request ids, access logs,
//   CORS, per-address rate limits): `installRequestMiddleware` in src/server/app.ts, an ordered
//   list that runs before any route is matched (also before GraphQL and the 404).
// - `PipelineHooks` for API routes (AppOptions.hooks), each an ordered list of
//   functions given the request's `RequestState`; one may throw an ApiError to refuse:
//   - `received`: before the credential is read;
//   - `accepted`: the credential is read and of an accepted kind, not yet authenticated
//     (per-credential rate limits: `state.credential`);
//   - `authenticated`: the subject is known and holds the scopes, and the input is valid
//     (an idempotency key's claim hashes only a body its schema bounds); inside the
//     transaction, as the subject (`state.tx`), except on a JSON read, whose statement
//     has left with the authentication (its `tx` takes no statement). One may return
//     a Replay (an answer kept for an idempotency key): the request is answered with
//     it and the handler does not run;
//   - `answered`: the handler's result, before it is sent; inside the transaction
//     (a write's commit has not left yet: idempotency keys record the answer here).
//
// Speed lives here and in src/db/pool.ts, not in handlers: `begin`, the authentication
// and a JSON read's statements are pipelined (a JSON read's handler starts before
// the authentication has answered: until the role is switched its statements run as
// rowgate_authenticator, which may read nothing, so a bad credential only makes them
// fail, and the answer is still decided in the order above); a JSON read runs one
// statement, which carries the commit (Tx.lastStatementNext), and its answer does not
// wait for the commit. Handlers only use tx.one/rows/count.
//
// Where a request runs is the route's declared effect (`effect`: a GET reads, any other
// method writes unless it says `reads`), placed by src/db/placement.ts as GraphQL's are:
// a read on a standby that will do, a write on the primary, its answer with Rowgate-Consistency.
import type { Request, RequestHandler, Response } from 'express';
import type pg from 'pg';
import type { Authenticated } from '../auth/authenticate.ts';
import { credentialKey, type PresentedCredential } from '../auth/credentials.ts';
import { askedBeforeHandler, authorizeRequest } from '../auth/authorize.ts';
import type { Placement } from '../db/placement.ts';
import { inTransaction, type Tx } from '../db/pool.ts';
import type { Mailer } from '../core/mail.ts';
import {
  acceptCredential,
  authenticateIn,
  authenticationRequired,
  CredentialOfAnotherKind,
  otherKindRefusal,
  requireScopes,
} from '../auth/credential-checks.ts';
import { ApiError, notFound } from '../core/errors.ts';
import { type DenialFacts, keepDenial } from './denials.ts';
import { type Input, namedOrganization, parseInput } from './input.ts';
import { Replay, send, sendReplay } from './respond.ts';
import { type HandlerServer, type HandlerServerOptions, handlerServer } from './handler-server.ts';
import { type ApiRoute, isAnonymous, type Subject } from './route-declaration.ts';
import { requestRecord } from '../core/request-record.ts';
import { requestId } from '../operating/request-id.ts';
import { requestOrigin } from '../core/client-address.ts';
import { listRequest } from '../listing/list-page.ts';
import type { ApiVersions } from '../core/versions.ts';
import { prefersExactCount, routeIn, settleVersion, UNPINNED_KINDS } from './api-version.ts';

/** What the hooks see of a request, filled in as the pipeline goes. */
export interface RequestState {
  readonly route: ApiRoute;
  readonly req: Request;
  readonly res: Response;
  /** from `accepted` on: the credential presented; null on an endpoint that takes none */
  credential: PresentedCredential | null;
  /** from `authenticated` on: whom it authenticates; null without a credential */
  subject:
    | (Pick<Authenticated, 'subjectId' | 'subjectKind' | 'credentialKind' | 'scopes'> & Partial<Pick<Authenticated, 'settings'>>)
    | null;
  /** the request's transaction, from `authenticated` on (see the extension points above) */
  tx?: Tx;
}

type Hook = (state: RequestState) => void | Promise<void>;
/** An `authenticated` hook: a Replay it returns is the answer */
// biome-ignore lint/suspicious/noConfusingVoidType: most hooks answer nothing and return nothing
type AuthenticatedHook = (state: RequestState) => void | Replay | Promise<void | Replay>;
type AnsweredHook = (state: RequestState, result: unknown) => void | Promise<void>;

export interface PipelineHooks {
  received: Hook[];
  accepted: Hook[];
  authenticated: AuthenticatedHook[];
  answered: AnsweredHook[];
}

export interface PipelineOptions extends HandlerServerOptions {
  pool: pg.Pool;
  secret: string;
  mailer: Mailer;
  /** where a read or a write runs and what its answer carries (Rowgate-Consistency) */
  placement: Placement;
  /** check every response against its schema (the test suite turns this on) */
  validateResponses: boolean;
  hooks: PipelineHooks;
  /** the API versions (SPEC §23) */
  versions: ApiVersions;
}

export const noHooks = (): PipelineHooks => ({ received: [], accepted: [], authenticated: [], answered: [] });

/** The Express handler of an API route (one that names its credentials, or none: access.anonymous). */
export function apiPipeline(route: ApiRoute, options: PipelineOptions): RequestHandler {
  const { hooks, validateResponses, versions } = options;
  const shapes = new Map(versions.list.map(({ version }) => [version, routeIn(route, versions, version)]));
  // a route every version shapes (and renders event data for) alike reads its input before the version is settled
  const uniform = new Set(shapes.values()).size === 1 && !(route.rendersEventData && versions.rendersSomeEventData);
  // an anonymous endpoint reads no credential: an Authorization header there is
  // not ours to judge (an OAuth2 client's HTTP Basic credentials)
  const anonymous = isAnonymous(route.access);
  // a browser sends any POST cross-site, whatever it does: the rule for cookies follows the method
  const credentialRule = { kinds: route.access.credentials, changes: route.method !== 'get' };
  const effect = route.effect;
  // one statement carrying the commit: what a GET answering JSON is written to send
  const startsEarly = route.method === 'get' && route.responseType === undefined;
  // the SQL that asks a policy itself (rowgate.delete_resource) is not asked twice
  const authorization = route.authorize && askedBeforeHandler(route.authorize) ? route.authorize : undefined;
  if (startsEarly && authorization?.resolve)
    throw new Error(`${route.operationId}: a JSON read sends its statements at once; it cannot resolve first`);

  return async function answer(req, res) {
    const state: RequestState = { route, req, res, credential: null, subject: null };
    const record = requestRecord(req);
    record.route = route.path;
    if (hooks.received.length) await run(hooks.received, state);
    try {
      state.credential = anonymous
        ? null
        : (acceptCredential(req, credentialRule) ?? refuse(authenticationRequired(credentialRule.kinds!))); // 1.
    } catch (refusal) {
      throw refusal instanceof CredentialOfAnotherKind ? await otherKindRefusal(options.pool, options.secret, refusal) : refusal;
    }
    if (hooks.accepted.length) await run(hooks.accepted, state);
    const credential = state.credential;
    // the header's version; else the credential's pin (SPEC §23): the newest for a kind pinned to none, else known once it authenticates
    const named = (record.apiVersion ??= credential && UNPINNED_KINDS.includes(credential.kind) ? versions.newest : undefined);
    let shaped = named !== undefined ? shapes.get(named) : anonymous ? shapes.get(versions.newest) : uniform ? route : undefined;
    const place = options.placement.place(
      effect,
      () => (credential ? credentialKey(credential) : undefined),
      req.headers['rowgate-consistency'],
    );
    // what a 403 is recorded with (SPEC §20), filled in as the checks pass
    const denial: DenialFacts = {};
    const transaction = (pool: pg.Pool) =>
      inTransaction(
        pool,
        async (tx) => {
          state.tx = tx;
          const origin = { ...requestOrigin(req), apiVersion: named }; // 2. sent now, awaited in its turn
          const subject = authenticateIn(tx, options.secret, state.credential, requestId(req), origin);
          const read = (as: ApiRoute) => {
            const input = attempt(() => parseInput(as, req)); // read now, refused in its turn (4.)
            // a scope refusal is recorded where its input resolves, when it is valid; the request log (SPEC §25) takes what it names
            if (input.ok) record.organizationId = namedOrganization(as, (denial.input = input.value));
            return { input, context: input.ok ? new HandlerContext(tx, options, input.value, state) : undefined };
          };
          let { input, context } = shaped ? read(shaped) : { input: undefined, context: undefined };
          // a JSON read sends everything now, in the authentication's write: the policy's question, then its one statement with the commit
          const asked = startsEarly && context && authorization ? quietly(authorizeRequest(tx, authorization, context.params)) : undefined;
          const early = startsEarly && context ? quietly(startHandler(context, tx)) : undefined;
          try {
            state.subject = await subject; // 2.
            record.subject = state.subject?.settings;
            const version = (record.apiVersion = settleVersion(res, versions, named, state.subject?.settings));
            if (!input) ({ input, context } = read((shaped = shapes.get(version)!)));
            requireScopes(route.access.scopes, state.subject); // 3.
            input.take(); // 4.
            if (hooks.authenticated.length) {
              const replay = await replayOf(hooks.authenticated, state);
              if (replay) return replay;
            }
            if (authorization) {
              const organizationId = await (asked ?? authorizeRequest(tx, authorization, context!.params)); // 5.
              if (typeof organizationId === 'string') denial.organizationId = organizationId;
            }
          } catch (refusal) {
            // a read started early ends before its transaction does: nothing of it
            // may reach the connection once it is back in the pool
            await early?.catch(() => {});
            throw refusal;
          }
          HandlerContext.open(context!);
          const result = await (early ?? startHandler(context!, tx)); // 6.
          // a row authorized but no longer reached (a request at once ended the membership): 404, never an empty 200
          if ((result === undefined || result === null) && route.response) throw notFound();
          for (const hook of hooks.answered) await hook(state, result);
          return result;
        },
        // a write's commit brings back the WAL position its answer carries
        { deferCommit: place.effect === 'reads', position: place.effect === 'writes' && place.positioned },
      );
    let result: unknown;
    try {
      result = await place.run(transaction);
    } catch (error) {
      if (state.subject?.settings) await keepDenial(options.pool, route.operationId, state.subject.settings, error, denial);
      throw error;
    }
    // a replayed write: what its client must see to read it, as after the write itself (SPEC §19)
    if (place.effect === 'writes') await place.committed(res, result instanceof Replay ? undefined : state.tx?.position);
    if (result instanceof Replay) return sendReplay(res, result);
    // a handler that *returns* an error has recorded something that must stay
    // (a failed attempt, a revoked token family): the transaction committed
    if (result instanceof ApiError) {
      if (state.subject?.settings) await keepDenial(options.pool, route.operationId, state.subject.settings, result, denial);
      throw result;
    }
    send(shaped!, res, result, validateResponses); // 7.
  };

  /** The handler, started now: its first statement joins what is queued on the connection. */
  function startHandler(context: HandlerContext, tx: Tx): Promise<unknown> {
    if (startsEarly) tx.lastStatementNext();
    try {
      return route.handler(context as never);
    } catch (error) {
      return Promise.reject(error);
    }
  }
}

const refuse = (error: unknown): never => {
  throw error;
};

/** Started before the checks: its failure is answered in its turn, after theirs. */
function quietly<T>(started: Promise<T>): Promise<T> {
  started.catch(() => {});
  return started;
}

/** What a handler gets. A JSON read's handler starts before the checks: it may touch the response only once they passed. */
class HandlerContext {
  readonly tx: Tx;
  readonly secret: string;
  readonly mailer: Mailer;
  readonly server: HandlerServer;
  readonly versions: ApiVersions;
  readonly params: Record<string, unknown>;
  readonly query: unknown;
  readonly body: unknown;
  readonly req: Request;
  readonly #res: Response;
  readonly #state: RequestState;
  readonly #operationId: string;
  #open = false;
  constructor(tx: Tx, options: PipelineOptions, input: Input, state: RequestState) {
    [this.tx, this.secret] = [tx, options.secret];
    [this.mailer, this.server, this.versions] = [options.mailer, handlerServer(options, state), options.versions];
    this.params = input.params as Record<string, unknown>;
    this.query = input.query;
    // a keyset list signs its cursors and counts only when asked (src/listing/list-statement.ts)
    if (typeof input.query === 'object' && input.query !== null) {
      (input.query as Record<symbol, unknown>)[listRequest] = { secret: options.secret, countExact: prefersExactCount(state.req) };
    }
    this.body = input.body;
    this.req = state.req;
    this.#res = state.res;
    this.#state = state;
    this.#operationId = state.route.operationId;
  }

  /** whom the request authenticates: known once the authentication answered (a JSON read's handler starts before) */
  get subject(): Subject {
    const subject = this.#state.subject;
    if (!subject) throw new Error(`${this.#operationId}: its handler read the subject before the authentication answered, or has none`);
    return { kind: subject.subjectKind, id: subject.subjectId, credentialKind: subject.credentialKind, scopes: subject.scopes };
  }

  /** the header's version, else the one settled with the authentication (the request record holds it) */
  get version(): string {
    return requestRecord(this.req).apiVersion ?? refuse(new Error(`${this.#operationId}: read the version before it was settled`));
  }

  /** the checks passed */
  static open(context: HandlerContext) {
    context.#open = true;
  }

  get res(): Response {
    if (!this.#open) throw new Error(`${this.#operationId}: its handler touched the response before the checks passed`);
    return this.#res;
  }
}

/** Runs an extension point's hooks in order (called only when there are some: an await costs the hot path a tick). */
async function run(list: Hook[], state: RequestState): Promise<void> {
  for (const hook of list) await hook(state);
}

/** Runs the `authenticated` hooks in order, up to the first that answers with a Replay. */
async function replayOf(list: AuthenticatedHook[], state: RequestState): Promise<Replay | undefined> {
  for (const hook of list) {
    const replay = await hook(state);
    if (replay) return replay;
  }
  return undefined;
}

/** A step's outcome, taken later: its failure is answered in its turn, not when it happens. */
function attempt<T>(step: () => T): { ok: true; value: T; take(): T } | { ok: false; take(): never } {
  try {
    const value = step();
    return { ok: true, value, take: () => value };
  } catch (error) {
    return { ok: false, take: () => refuse(error) };
  }
}
