// A GraphQL request's way through the server, around PostGraphile's own
// handling (src/graphql/preset.ts):
// 1. Express middleware (`requestHandlers`), before grafserv reads anything:
//    the body is checked as REST checks one (SPEC §7), and the credential is
//    read and authenticated exactly as REST does it (src/auth/authenticate.ts),
//    so that a malformed, unknown, expired or revoked one gets REST's 401 with
//    its WWW-Authenticate header before the document is planned. A query whose
//    credential this server authenticated lately sends its authentication in
//    its first read transaction instead (src/graphql/transport/deferred-authentication.ts).
//    Where the request runs is decided here too (src/db/placement.ts).
// 2. grafast's `context` callback (`requestContext`), which receives the
//    request: the request's transactions (src/graphql/transport/pg-client.ts),
//    given as the context's `withPgClient`, take the request's role and
//    settings, so RLS and the SQL functions (which trust the settings only when
//    session_user is rowgate_authenticator) decide what the subject sees and
//    may change. No credential → rowgate_anonymous, which is granted nothing.
// 3. grafserv's `processRequest` middleware (`AnswerAfterVerdict`): a deferred
//    authentication's answer waits for the verdict, and is REST's 401 in its
//    place when the credential authenticates nobody.
//
// What the middleware learns travels to the other two on the request itself,
// in one typed record (as src/core/request-record.ts keeps its own).
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type pg from 'pg';
import { acceptCredential, authenticateOnPool, unknownCredential } from '../auth/credential-checks.ts';
import { ANONYMOUS_SETTINGS, authenticationValues, type Settings } from '../auth/authenticate.ts';
import { credentialKey, type PresentedCredential, readCredential } from '../auth/credentials.ts';
import type { RecentCredentials } from '../auth/recent-credentials.ts';
import { requestOrigin } from '../core/client-address.ts';
import { ApiError, validationError } from '../core/errors.ts';
import { requestRecord } from '../core/request-record.ts';
import { databaseFailure } from '../core/sqlstate.ts';
import type { Place, Placement } from '../db/placement.ts';
import { jsonBody } from '../http/input.ts';
import { requestId } from '../operating/request-id.ts';
import { graphqlBodyIssues } from './errors.ts';
import { authenticatesNobody, DeferredAuthentication } from './transport/deferred-authentication.ts';
import { mutationClient, queryClient, ReadTransactions, type WithPgClient } from './transport/pg-client.ts';

export const GRAPHQL_PATH = '/graphql';

/**
 * The role and settings of a request's credential, as REST authenticates it
 * (src/auth/authenticate.ts; none: anonymous, without asking the database), or
 * the REST 401 or 403 (thrown to the error handler).
 */
export async function requestSettings(pool: pg.Pool, secret: string, req: Request): Promise<Settings> {
  const credential = presentedCredential(req);
  return credential ? authenticated(pool, secret, req, credential) : ANONYMOUS_SETTINGS;
}

async function authenticated(pool: pg.Pool, secret: string, req: Request, credential: PresentedCredential): Promise<Settings> {
  const found = await authenticateOnPool(pool, secret, credential, requestId(req), requestOrigin(req));
  if (!found) throw unknownCredential();
  return found.settings;
}

/**
 * The request's credential (none: anonymous), or the REST 401 or 403 (thrown)
 * before the database is asked: any kind, and any operation may be a mutation
 * (GraphQL takes only POST), so REST's rule for cookie-authenticated changes holds.
 */
const presentedCredential = (req: Request) => acceptCredential(req, { kinds: null, changes: true });

/**
 * May the document's authentication go in its first read transaction? Not a
 * mutation's (its transactions are its own), nor a subscription's, nor a
 * document's that may answer in parts (@stream, @defer: none is published
 * today). Read from the text, before parsing: a false alarm only keeps the
 * authentication first.
 */
const MAY_WRITE_OR_STREAM = /\b(?:mutation|subscription)\b|@\s*(?:stream|defer)\b/;

/** What the middleware found for a GraphQL request. */
interface GraphqlRequest {
  /** the subject's role and settings, or the authentication its first read transaction sends */
  authentication: Settings | DeferredAuthentication;
  /** where it runs; none: a deferred authentication's query, on the primary */
  place?: Place;
  /** a deferred authentication's outcome, for the answer: the subject it authenticated */
  accepted?: (subject: Settings) => void;
}

/** A property of the request itself, as the request record is */
const GRAPHQL_REQUEST = Symbol('rowgate.graphql-request');
type Carrier = IncomingMessage & { [GRAPHQL_REQUEST]?: GraphqlRequest };
const graphqlRequest = (req: IncomingMessage): GraphqlRequest | undefined => (req as Carrier)[GRAPHQL_REQUEST];

export interface RequestOptions {
  pool: pg.Pool;
  secret: string;
  placement: Placement;
  /** hot standbys configured: a query's reads need its credential first (its writes' position) */
  standbys: boolean;
  recentCredentials: RecentCredentials;
}

/** The Express middleware in front of grafserv at POST /graphql. */
export function requestHandlers(options: RequestOptions) {
  const { pool, secret, placement, recentCredentials } = options;
  const named = (req: Request, _res: Response, next: NextFunction) => {
    requestRecord(req).route = GRAPHQL_PATH; // the access log's route template
    next();
  };

  // The body, checked as REST checks one (SPEC §7) before grafserv reads it:
  // grafserv's own refusals carry no extensions.code
  const checkBody = (req: Request, _res: Response, next: NextFunction) => {
    if (req.method !== 'POST') return next(new ApiError(405, 'MethodNotAllowed', 'Allowed: POST', { Allow: 'POST' }));
    // exactly application/json: the only request type of GraphQL over HTTP that grafserv takes
    if (!req.is('application/json')) {
      return next(new ApiError(415, 'UnsupportedMediaType', 'The request body must be application/json'));
    }
    const issues = graphqlBodyIssues(req.body);
    next(issues.length ? validationError(issues) : undefined);
  };

  const authenticate = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const carrier = req as Carrier;
      const credential = presentedCredential(req);
      const text = String(req.body?.query);
      if (!credential) {
        requestRecord(req).subject = ANONYMOUS_SETTINGS;
        carrier[GRAPHQL_REQUEST] = { authentication: ANONYMOUS_SETTINGS, place: placed(req, res, text) };
        return next();
      }
      const key = credentialKey(credential);
      // without standbys, whose reads need the credential first (its writes' position)
      const deferrable = !options.standbys && !MAY_WRITE_OR_STREAM.test(text);
      if (deferrable && recentCredentials.has(key)) {
        // a query's authentication in its first read transaction (the statement sets the request's id too)
        const authentication = new DeferredAuthentication(
          pool,
          authenticationValues(secret, credential, requestId(req), requestOrigin(req)),
        );
        const accepted = (subject: Settings) => {
          requestRecord(req).subject = subject;
          recentCredentials.add(key);
        };
        carrier[GRAPHQL_REQUEST] = { authentication, accepted };
        return next();
      }
      // a credential not seen to authenticate lately is asked first: a made-up token gets its 401 before planning
      const settings = await authenticated(pool, secret, req, credential);
      if (deferrable) recentCredentials.add(key);
      requestRecord(req).subject = settings; // what the access log reports (src/operating/access-log.ts)
      carrier[GRAPHQL_REQUEST] = { authentication: settings, place: placed(req, res, text) };
      next();
    } catch (error) {
      next(error);
    }
  };

  /** Where a request runs: read from the text, before parsing (a false alarm only places a query as a write, on the primary). */
  const placed = (req: Request, res: Response, text: string): Place => {
    const place = placement.place(
      /\bmutation\b/.test(text) ? 'writes' : 'reads',
      () => {
        const credential = readCredential(req);
        return credential && credential !== 'malformed' ? credentialKey(credential) : undefined;
      },
      req.headers['rowgate-consistency'],
    );
    // a mutation's commits are PostGraphile's: its credential's reads stay on the primary meanwhile
    if (place.effect === 'writes') place.hold(res);
    return place;
  };

  return [named, jsonBody, checkBody, authenticate];
}

/** What a request's GraphQL context adds to PostGraphile's (prefixed, as PostGraphile asks of its users' keys). */
export interface RowgateContext {
  /** the request's own transactions (src/graphql/transport/pg-client.ts) */
  withPgClient: WithPgClient;
  /** the subject: anonymous or not, and its settings (a deferred authentication's: once its verdict is in) */
  rowgateSubject: { anonymous: boolean; settings(): Settings | Promise<Settings> };
}

/**
 * grafast's `context` callback: the request's transactions. A query's
 * statements share transactions, on the pool its place gives; a mutation's
 * each run in a transaction of their own, whose commits put their position on
 * the answer as a REST write's (the later commit's last).
 */
export function requestContext(primary: pg.Pool) {
  return (req: IncomingMessage | undefined, res: Response | undefined, query: boolean): RowgateContext => {
    const found = req && graphqlRequest(req);
    const authentication = found?.authentication ?? ANONYMOUS_SETTINGS;
    const id = req ? requestId(req) : '';
    if (authentication instanceof DeferredAuthentication) {
      if (query) {
        const reads = new ReadTransactions(primary, { 'rowgate.request_id': id }, undefined, authentication);
        return { withPgClient: queryClient(reads, primary), rowgateSubject: { anonymous: false, settings: () => reads.ownSettings() } };
      }
      // not reached (every other operation names itself in the text, MAY_WRITE_OR_STREAM); were it
      // reached, the operation would run with the verdict's settings, never with the request id alone
      const subject = () =>
        authentication.verdict().then((settings) => {
          if (!settings) throw authenticatesNobody();
          return { ...settings, 'rowgate.request_id': id };
        });
      return {
        withPgClient: async (_settings, callback) => mutationClient(primary, await subject())(null, callback),
        rowgateSubject: { anonymous: false, settings: subject },
      };
    }
    // the request's id joins the settings every transaction of the request applies (SPEC §14)
    const settings: Settings = { ...authentication, 'rowgate.request_id': id };
    const rowgateSubject = { anonymous: authentication.role === ANONYMOUS_SETTINGS.role, settings: () => settings };
    const place = found?.place;
    if (!query) {
      const committed =
        place?.effect === 'writes' && place.positioned && res ? (position: string | null) => place.committed(res, position) : undefined;
      return { withPgClient: mutationClient(primary, settings, committed), rowgateSubject };
    }
    const { pool, fallBack } = place?.effect === 'reads' ? place.pools() : { pool: primary, fallBack: undefined };
    return { withPgClient: queryClient(new ReadTransactions(pool, settings, fallBack), primary), rowgateSubject };
  };
}

/** The error handler's answer to an error (src/http/respond.ts, errorAnswer) */
export type ErrorAnswer = (error: unknown, req: Request) => ApiError;

/**
 * grafserv middleware: the answer of a request whose authentication went in its
 * first read transaction waits for the credential's verdict; sent as it is
 * when the credential authenticates a subject, otherwise replaced by the
 * refusal (REST's 401 for nobody; the failure when the database could not say).
 */
export function answerAfterVerdict(recentCredentials: RecentCredentials, errorAnswer: ErrorAnswer): GraphileConfig.Plugin {
  return {
    name: 'RowgateAnswerAfterVerdictPlugin',
    version: '1.0.0',
    grafserv: {
      middleware: {
        async processRequest(next, event) {
          const req = event.requestDigest.requestContext.expressv4?.req;
          const found = req && graphqlRequest(req);
          const authentication = found?.authentication;
          if (!(authentication instanceof DeferredAuthentication)) return next();
          const result = await next();
          try {
            const subject = await authentication.verdict();
            if (!subject) throw authenticatesNobody();
            found?.accepted?.(subject);
            return result;
          } catch (error) {
            const failure = databaseFailure(error);
            const nobody = failure === 'nobody';
            // refused from this client address (RG401, SPEC §22): a 401 as well, with its own detail
            if (nobody || failure === 'refused') {
              const credential = readCredential(req as Request);
              if (credential && credential !== 'malformed') recentCredentials.delete(credentialKey(credential));
            }
            const answer = errorAnswer(nobody ? unknownCredential() : error, req as Request);
            return {
              type: 'buffer',
              statusCode: answer.status,
              headers: { ...answer.headers, 'content-type': 'application/json; charset=utf-8' },
              buffer: Buffer.from(JSON.stringify(answer.body())),
            };
          }
        },
      },
    },
  };
}
