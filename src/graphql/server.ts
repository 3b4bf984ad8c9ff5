// GraphQL at POST /graphql: PostGraphile 5 (Amber preset) over the `rowgate`
// schema, in the same Express app and on the same authenticator pool as REST.
//
// Per request: the credential is read and authenticated exactly as REST does it
// (src/auth/authenticate.ts: one statement resolves it into the subject's role and
// transaction-local settings; a query sends it in its first transaction and its
// answer waits for the verdict: src/graphql/deferred-authentication.ts), and
// every transaction PostGraphile opens for the request takes that role and
// those settings (src/graphql/pg-client.ts), so RLS
// and the SQL functions (which trust the settings only when session_user is
// rowgate_authenticator) decide what the subject sees and may change; token
// scopes and access classes bind there too. No credential → rowgate_anonymous,
// which is granted nothing. A malformed, unknown, expired or revoked credential
// → 401 with the body and WWW-Authenticate header of REST (SPEC §7).
//
// What is published is decided in src/graphql/published-schema.ts. Before anything is
// planned, a document is bounded (src/graphql/limits.ts: tokens, depth,
// aliases, nodes; page-arguments.ts: first/last/offset with the variables; both
// run by limits-plugin.ts) and every collection returns at most a page
// (src/graphql/page-size.ts), SPEC §13. Errors: src/graphql/errors.ts.
import type { IncomingMessage } from 'node:http';
import type express from 'express';
import type { NextFunction, Request, Response } from 'express';
import type pg from 'pg';
// PostGraphile itself is loaded by createGraphql, once GRAPHILE_ENV is settled
import type { PostGraphileInstance } from 'postgraphile';
import { jsonBody } from '../http/input.ts';
import { ANONYMOUS_SETTINGS, authenticationValues, type Settings } from '../auth/authenticate.ts';
import { requestOrigin } from '../core/client-address.ts';
import { credentialKey, type PresentedCredential, readCredential } from '../auth/credentials.ts';
import type { Consistency } from '../db/consistency.ts';
import { type Place, Placement } from '../db/placement.ts';
import type { ReadReplicas } from '../db/read-replicas.ts';
import { acceptCredential, authenticateOnPool, unknownCredential } from '../auth/credential-checks.ts';
import { ApiError, validationError } from '../core/errors.ts';
import { graphqlBodyIssues, makeMaskError } from './errors.ts';
import { rowgateLimitsPlugin } from './limits-plugin.ts';
import { RowgateGraphqlPlugin } from './published-schema.ts';
import { DefaultPagePlugin } from './page-size.ts';
import { forMutation, forQuery, makeWithPgClient } from './pg-client.ts';
import { authenticatesNobody, DeferredAuthentication, holdAnswer } from './deferred-authentication.ts';
import { RecentCredentials } from '../auth/recent-credentials.ts';
import { errorAnswers } from '../http/respond.ts';
import { poolStatements } from '../db/pool.ts';
import { OmitArchivedPlugin } from './omit-archived.ts';
import { explainingPlugin } from './explaining.ts';
import type { Route } from '../http/route-declaration.ts';
import { CountedTotalPlugin } from './counted-total.ts';
import { OrganizationPagesPlugin } from './organization-pages.ts';
import { pageSecurityHeaders } from '../http/security-headers.ts';
import { rfc3339 } from '../db/timestamps.ts';
import type { Metrics } from '../operating/metrics.ts';
import { requestRecord } from '../core/request-record.ts';
import { databaseFailure } from '../core/sqlstate.ts';
import { requestId } from '../operating/request-id.ts';

const GRAPHQL_PATH = '/graphql';
const GRAPHIQL_PATH = '/graphiql';
const GRAPHIQL_STATIC_PATH = '/graphiql-static/';

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
 * requestSettings, or, for a query (`recent` given) whose credential this
 * server authenticated lately, the authentication to send in the query's first
 * transaction. A credential it has not seen authenticate is asked first, so that
 * made-up tokens get their 401 before the document is planned.
 */
async function requestAuthentication(
  pool: pg.Pool,
  secret: string,
  req: Request,
  recent: RecentCredentials | null,
): Promise<Settings | DeferredAuthentication> {
  const credential = presentedCredential(req);
  if (!credential) return ANONYMOUS_SETTINGS;
  if (recent?.has(credentialKey(credential)))
    return new DeferredAuthentication(pool, authenticationValues(secret, credential, requestId(req), requestOrigin(req)));
  const settings = await authenticated(pool, secret, req, credential);
  recent?.add(credentialKey(credential));
  return settings;
}

/**
 * The request's credential (none: anonymous), or the REST 401 or 403 (thrown)
 * before the database is asked: any kind, and any operation may be a mutation
 * (GraphQL takes only POST), so REST's rule for cookie-authenticated changes holds.
 */
const presentedCredential = (req: Request) => acceptCredential(req, { kinds: null, changes: true });

/**
 * May the document's authentication go in its first read transaction
 * (src/graphql/deferred-authentication.ts)? Not a mutation's (its transactions
 * are its own), nor a subscription's, nor a document's that may answer in parts
 * (@stream, @defer: none is published today). Read from the text, before
 * parsing: a false alarm only keeps the authentication first.
 */
const MAY_WRITE_OR_STREAM = /\b(?:mutation|subscription)\b|@\s*(?:stream|defer)\b/;

/** How many operations' plans grafast keeps (a client sends the same few documents) */
const OPERATION_PLANS_KEPT = 50;

/** How long grafast may plan one request (synchronously) before it is refused */
const PLANNING_TIMEOUT_MS = 1_000;

export interface GraphqlOptions {
  pool: pg.Pool;
  secret: string;
  /** serves Ruru, the GraphQL explorer, at GET /graphiql */
  development: boolean;
  log?: (line: string) => void;
  /** counts the requests GraphQL's limits refuse */
  metrics?: Metrics;
  /** more configuration on top of ours (the tests turn simple lists on with it, or one of our plugins off) */
  preset?: GraphileConfig.Preset;
  /** a mutation answers with Rowgate-Consistency and keeps its credential's REST reads on the primary for the standbys' lag bound (src/db/consistency.ts) */
  consistency?: Consistency;
  /** hot standbys: a query (no mutation) reads on one that will do, as a REST GET does (SPEC §19) */
  reads?: ReadReplicas;
  /** the credentials this server has seen authenticate, shared with the rate limits (default: GraphQL's own) */
  recentCredentials?: RecentCredentials;
  /** the route table whose operations checkAuthorization may name (SPEC §20; REST's 422 for others) */
  routes?: () => readonly Route[];
}

export interface Graphql {
  /** for AppOptions.mounts: synchronous, after the route table, before the 404 and error handlers */
  mount(app: express.Express): void;
  instance: PostGraphileInstance;
  release(): Promise<void>;
}

/**
 * Timestamps and bigints leave PostgreSQL as the column's values, written out
 * by PostgreSQL as its text (unparsed: src/graphql/pg-client.ts), instead of
 * @dataplan/pg's `to_char(…)` or `::text` in the query. PostgreSQL computes a
 * query's select list below its sort, so a sorted page would format the values
 * of every row it considers, most of them dropped (a page of 50 orders formats
 * thirty times as many values as it returns). A column's text on the wire is the text of its
 * `::text` cast, for the returned rows only. Timestamps then take REST's shape
 * in Node (src/db/timestamps.ts), so GraphQL also writes what REST writes
 * ("…T08:22:11.16+00:00"); one already in that shape passes through. The
 * codecs are @dataplan/pg's shared objects, adjusted in place so every column
 * keeps its GraphQL type; `verbatim` is @dataplan/pg's own cast of text and uuid.
 */
function castsAfterTheSort(types: { timestamptz: unknown; bigint: unknown }) {
  const verbatim = (fragment: unknown) => fragment;
  const timestamptz = types.timestamptz as { castFromPg?: unknown; fromPg: (value: string) => unknown };
  timestamptz.castFromPg = verbatim;
  // "YYYY-MM-DDT…": converted already
  timestamptz.fromPg = (value: string) => (value.charCodeAt(10) === 84 ? value : rfc3339(value));
  (types.bigint as { castFromPg?: unknown }).castFromPg = verbatim;
}

/** Builds the PostGraphile instance and its schema (so a broken schema fails the start, not the first request). */
export async function createGraphql(options: GraphqlOptions): Promise<Graphql> {
  const log = options.log ?? (() => {});
  // Grafast reads its mode once, when loaded: development checks with the explorer, none otherwise
  process.env.GRAPHILE_ENV ??= options.development ? 'development' : 'production';
  const [
    { postgraphile },
    { makePgService },
    { grafserv },
    { PostGraphileAmberPreset },
    { GraphQLError, getOperationAST },
    { isSafeError },
    { TYPES },
    ExplainingPlugin,
  ] = await Promise.all([
    import('postgraphile'),
    import('postgraphile/adaptors/pg'),
    import('postgraphile/grafserv/express/v4'),
    import('postgraphile/presets/amber'),
    import('postgraphile/graphql'),
    import('postgraphile/grafast'),
    import('postgraphile/@dataplan/pg'),
    explainingPlugin(options.routes),
  ]);
  castsAfterTheSort(TYPES);
  const settings = new WeakMap<IncomingMessage, Settings | DeferredAuthentication>();
  /** where the request runs (src/db/placement.ts): a query reads, a mutation writes; none: the primary */
  const places = new WeakMap<IncomingMessage, { place: Place; answer: Response }>();
  const placement = new Placement({ primary: options.pool, consistency: options.consistency, reads: options.reads });
  // on the server's pool (PostGraphile does not end a pool it was given); no LISTEN
  // client; its transactions are ours (src/graphql/pg-client.ts)
  const basePgService = makePgService({ pool: options.pool, schemas: ['rowgate'], pubsub: false });
  const withPgClient = makeWithPgClient(options.pool);
  const pgService: typeof basePgService = {
    ...basePgService,
    adaptor: { ...basePgService.adaptor, createWithPgClient: () => withPgClient } as typeof basePgService.adaptor,
  };
  const preset: GraphileConfig.Preset = {
    extends: [PostGraphileAmberPreset, ...(options.preset ? [options.preset] : [])],
    // a preset's disablePlugins reaches only the presets it extends, not the plugins added here
    plugins: [
      RowgateGraphqlPlugin,
      OmitArchivedPlugin,
      DefaultPagePlugin,
      CountedTotalPlugin,
      OrganizationPagesPlugin,
      ExplainingPlugin,
      rowgateLimitsPlugin((code) => options.metrics?.graphqlRefusals.inc({ code })),
    ].filter((plugin) => !options.preset?.disablePlugins?.includes(plugin.name)),
    pgServices: [pgService],
    grafserv: {
      graphqlPath: GRAPHQL_PATH,
      graphiql: options.development,
      graphiqlOnGraphQLGET: false,
      graphiqlPath: GRAPHIQL_PATH,
      graphiqlStaticPath: GRAPHIQL_STATIC_PATH,
      graphqlOverGET: false,
      watch: false,
      websockets: false,
      maxRequestLength: 1024 * 1024,
      // grafast writes the answer's JSON as it walks the result, with no object tree to stringify again
      outputDataAsString: true,
      maskError: makeMaskError(GraphQLError, isSafeError, log, {
        statementTimeoutMs: poolStatements(options.pool).statementTimeoutMs,
        development: options.development,
        refused: (code) => options.metrics?.graphqlRefusals.inc({ code }),
      }),
    },
    grafast: {
      explain: false,
      // Planning is synchronous: a document within the limits plans in
      // milliseconds, and one that does not is cancelled rather than holding
      // every other request (execution is bounded by the statement timeout)
      timeouts: { planning: PLANNING_TIMEOUT_MS },
      // the settings the authentication middleware found for this request (none:
      // anonymous); a query's statements share transactions (src/graphql/pg-client.ts)
      context(requestContext, args) {
        const req = requestContext.expressv4?.req ?? requestContext.node?.req;
        const known = req ? settings.get(req) : undefined;
        const query = getOperationAST(args.document, args.operationName)?.operation === 'query';
        if (known instanceof DeferredAuthentication) {
          // a query's authentication in its first transaction (the statement sets the request's id too)
          if (query) return { pgSettings: forQuery(options.pool, { 'rowgate.request_id': requestId(req!) }, undefined, known) };
          // not reached (every other operation names itself in the text, MAY_WRITE_OR_STREAM); were it
          // reached, the operation would run with the verdict's settings, never with the request id alone
          return known.verdict().then((subject) => {
            if (!subject) throw authenticatesNobody();
            return { pgSettings: { ...subject } };
          });
        }
        // the request's id joins the settings every transaction of the request applies (SPEC §14)
        const found = req ? { ...(known ?? ANONYMOUS_SETTINGS), 'rowgate.request_id': requestId(req) } : ANONYMOUS_SETTINGS;
        const { place, answer } = (req && places.get(req)) || {};
        if (!query) {
          // each commit's position on the answer, as a REST write's (the later commit's last)
          const committed =
            place?.effect === 'writes' && place.positioned ? (position: string | null) => place.committed(answer!, position) : undefined;
          return { pgSettings: committed ? forMutation(found, committed) : { ...found } };
        }
        if (place?.effect !== 'reads') return { pgSettings: forQuery(options.pool, found) };
        const { pool, fallBack } = place.pools();
        return { pgSettings: forQuery(pool, found, fallBack) };
      },
    },
  };
  const instance = postgraphile(preset);
  const release = async () => {
    await instance.release(); // and the grafserv instance with it
    await pgService.release?.();
  };
  try {
    const schema = await instance.getSchema();
    // grafast keeps the plans of the last operations it planned, 500 by default:
    // a plan can take megabytes, and 500 distinct documents outgrow the heap
    // npm start gives the server
    const grafastExtensions = ((schema.extensions as Record<string, unknown>).grafast ??= Object.create(null)) as Record<string, unknown>;
    grafastExtensions.operationsCacheMaxLength = OPERATION_PLANS_KEPT;
  } catch (error) {
    await release();
    throw error;
  }
  const serv = instance.createServ(grafserv);

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

  const recentCredentials = options.recentCredentials ?? new RecentCredentials();
  // a deferred refusal is written in place of the held answer, once (the error handler's way, not through next)
  const answerError = errorAnswers(options.log, poolStatements(options.pool).statementTimeoutMs);
  const authenticateRequest = async (req: Request, res: Response, next: NextFunction) => {
    try {
      // without standbys, whose reads need the credential first (its writes' position)
      const query = !options.reads && !MAY_WRITE_OR_STREAM.test(String(req.body?.query));
      const found = await requestAuthentication(options.pool, options.secret, req, query ? recentCredentials : null);
      settings.set(req, found);
      if (found instanceof DeferredAuthentication) {
        // the answer waits for the credential's verdict: REST's 401 when it authenticates nobody
        const key = credentialKey(readCredential(req) as PresentedCredential);
        const accepted = (subject: Settings) => {
          requestRecord(req).subject = subject;
          recentCredentials.add(key);
        };
        const refuse = (error: unknown) => {
          const failure = databaseFailure(error);
          const nobody = failure === 'nobody';
          // refused from this client address (RG401, SPEC §22): a 401 as well, with its own detail
          if (nobody || failure === 'refused') recentCredentials.delete(key);
          answerError(nobody ? unknownCredential() : error, req, res, () => {});
        };
        holdAnswer(res, found, accepted, refuse);
        return next();
      }
      requestRecord(req).subject = found; // what the access log reports (src/operating/access-log.ts)
      // read from the text, before parsing: a false alarm only places a query as a write (on the primary)
      const effect = /\bmutation\b/.test(String(req.body?.query)) ? 'writes' : 'reads';
      const place = placement.place(
        effect,
        () => {
          const credential = readCredential(req);
          return credential && credential !== 'malformed' ? credentialKey(credential) : undefined;
        },
        req.headers['rowgate-consistency'],
      );
      // a mutation's commits are PostGraphile's: its credential's reads stay on the primary meanwhile
      if (place.effect === 'writes') place.hold(res);
      places.set(req, { place, answer: res });
      next();
    } catch (error) {
      next(error);
    }
  };

  let released: Promise<void> | undefined;
  return {
    instance,
    mount(app) {
      // the body is read as the REST routes read theirs (a malformed one: SPEC §7's 422)
      const named = (req: Request, _res: Response, next: NextFunction) => {
        requestRecord(req).route = GRAPHQL_PATH; // the access log's route template
        next();
      };
      app.use(GRAPHQL_PATH, named, jsonBody, checkBody, authenticateRequest);
      if (options.development) {
        // a page: helmet's headers, but Ruru's page runs inline scripts, which
        // helmet's Content-Security-Policy forbids
        const allowExplorer = (_req: Request, res: Response, next: NextFunction) => {
          res.removeHeader('Content-Security-Policy');
          next();
        };
        app.use(GRAPHIQL_PATH, pageSecurityHeaders, allowExplorer);
        app.use(GRAPHIQL_STATIC_PATH, pageSecurityHeaders, allowExplorer);
      }
      // without websockets, addTo mounts its handler synchronously and has nothing left to await
      serv.addTo(app, null, false).catch((error: unknown) => log(`graphql: ${String(error)}`));
    },
    release: () => (released ??= release()),
  };
}
