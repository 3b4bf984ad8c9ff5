// GraphQL at POST /graphql: PostGraphile 5 (Amber preset) over the `rowgate`
// schema, in the same Express app and on the same authenticator pool as REST.
//
// Per request: the credential is read and authenticated exactly as REST does it
// (src/auth/authenticate.ts: one statement resolves it into the subject's role and
// transaction-local settings), and every transaction PostGraphile opens for the
// request takes that role and those settings (src/graphql/pg-client.ts), so RLS
// and the SQL functions (which trust the settings only when session_user is
// rowgate_authenticator) decide what the subject sees and may change; token
// scopes and access classes bind there too. No credential → rowgate_anonymous,
// which is granted nothing. A malformed, unknown, expired or revoked credential
// → 401 with the body and WWW-Authenticate header of REST (SPEC §7).
//
// Before anything is planned, a document is bounded (src/graphql/limits.ts:
// tokens, depth, aliases, nodes, page arguments) and every collection returns
// at most a page (src/graphql/page-size.ts), SPEC §13.
import type { IncomingMessage } from 'node:http';
import type express from 'express';
import type { NextFunction, Request, Response } from 'express';
import type pg from 'pg';
// PostGraphile itself is loaded by createGraphql, once GRAPHILE_ENV is settled
import type { PostGraphileInstance } from 'postgraphile';
import type { ObjectStep, Step } from 'postgraphile/grafast';
import type { GraphQLError } from 'postgraphile/graphql';
import { jsonBody } from '../http/input.ts';
import { ANONYMOUS_SETTINGS, authenticate } from '../auth/authenticate.ts';
import { readCredential } from '../auth/credentials.ts';
import type { Consistency } from '../db/consistency.ts';
import { credentialKey } from '../http/cached-answers.ts';
import {
  ApiError,
  boundedText,
  fromDatabaseError,
  timeoutDetail,
  unauthorized,
  validationError,
  type ValidationIssue,
} from '../http/errors.ts';
import { BAD_USER_INPUT, makeParseAndValidate, pageArgumentErrors, TOO_COMPLEX, VALIDATION_FAILED } from './limits.ts';
import { DefaultPagePlugin } from './page-size.ts';
import { forQuery, makeWithPgClient, type Settings } from './pg-client.ts';
import { poolStatements, statementName } from '../db/pool.ts';
import { OmitArchivedPlugin } from './omit-archived.ts';
import { pageSecurityHeaders } from '../http/security-headers.ts';
import { rfc3339 } from '../db/timestamps.ts';
import type { Metrics } from '../operating/metrics.ts';
import { requestId } from '../operating/request-id.ts';

const GRAPHQL_PATH = '/graphql';
const GRAPHIQL_PATH = '/graphiql';
const GRAPHIQL_STATIC_PATH = '/graphiql-static/';

/**
 * What GraphQL publishes of the rowgate schema beyond RLS-guarded tables is
 * decided here as well as in the database. The smart tags of the migrations
 * (`@behavior -*`, PostGraphile 5 honours them) hide token metadata and the
 * functions that take token hashes or serve only REST; on our side the token
 * tables are listed, and functions are published only when listed below, so a
 * lost comment or a new REST-only function cannot appear in GraphQL.
 */
const HIDDEN_TABLES = ['personal_access_tokens', 'organization_access_tokens', 'oauth2_clients'];
/** the rowgate functions GraphQL publishes (as mutations); every other one is hidden */
const GRAPHQL_FUNCTIONS = ['create_organization', 'add_member', 'create_account', 'create_order'];
/**
 * Table operations GraphQL leaves out although a grant allows them:
 * - orders `insert`: `createOrder` is rowgate.create_order, as for POST /v1/orders
 *   (organization, amount and currency taken from the product); the table's own
 *   create mutation would clash with its name and let a client choose them;
 * - users `update` and payout_accounts `insert`: web sessions only, which the
 *   database enforces (migration 000003); REST offers them through its own
 *   endpoints, and GraphQL keeps its schema to what a token could use.
 */
const TABLE_BEHAVIORS: Record<string, string> = {
  orders: '-insert',
  users: '-update',
  payout_accounts: '-insert',
};

interface WithTags {
  extensions?: object;
}
function tagsOf(holder: WithTags): Record<string, unknown> {
  holder.extensions ??= {};
  const extensions = holder.extensions as { tags?: Record<string, unknown> };
  return (extensions.tags ??= {});
}
function addBehavior(holder: WithTags, behavior: string) {
  const tags = tagsOf(holder);
  const existing = tags.behavior as string | string[] | undefined;
  tags.behavior = [...(existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]), behavior];
}

interface TableLike {
  getAttributes(): { attname: string }[];
  getIndexes(): { indpred: string | null; getKeys(): ({ attname: string } | null | undefined)[] }[];
}
/**
 * Our soft-deleted tables are indexed with partial indexes `where deleted_at is
 * null`, and their select policies add that condition to every query, so those
 * indexes serve GraphQL's queries. PostGraphile counts only full indexes when it
 * decides which relations (Organization.productsByOrganizationId) and columns
 * (condition, orderBy) to expose; for soft-deleted tables the partial ones count.
 */
function indexedWithSoftDelete(table: TableLike, columns: string[], anyPosition = false): boolean {
  if (!table.getAttributes().some((a) => a.attname === 'deleted_at')) return false;
  return table.getIndexes().some((index) => {
    const keys = index.getKeys().map((k) => k?.attname);
    // like PostGraphile: a relation needs its columns first in the index; a column may sit anywhere (PG 18 skip scans)
    const usable = anyPosition ? keys : keys.slice(0, columns.length);
    return index.indpred !== null && columns.every((c) => usable.includes(c));
  });
}

const inRowgate = (entity: { getNamespace(): { nspname: string } | undefined }) => entity.getNamespace()?.nspname === 'rowgate';

const RowgateGraphqlPlugin: GraphileConfig.Plugin = {
  name: 'RowgateGraphqlPlugin',
  description: 'What rowgate publishes through GraphQL: no tokens or REST-only functions; soft-delete indexes count',
  version: '1.0.0',
  gather: {
    hooks: {
      pgCodecs_PgCodec(_info, { pgClass, pgCodec }) {
        if (pgClass && inRowgate(pgClass) && HIDDEN_TABLES.includes(pgClass.relname)) addBehavior(pgCodec, '-*');
      },
      pgTables_PgResourceOptions(_info, { pgClass, resourceOptions }) {
        if (!inRowgate(pgClass)) return;
        if (HIDDEN_TABLES.includes(pgClass.relname)) addBehavior(resourceOptions, '-*');
        const behavior = TABLE_BEHAVIORS[pgClass.relname];
        if (behavior) addBehavior(resourceOptions, behavior);
      },
      pgProcedures_PgResourceOptions(_info, { pgProc, resourceOptions }) {
        if (inRowgate(pgProc) && !GRAPHQL_FUNCTIONS.includes(pgProc.proname)) addBehavior(resourceOptions, '-*');
      },
      pgRelations_relation(_info, { pgConstraint, relation }) {
        if (!relation.isReferencee) return;
        const table = pgConstraint.getClass();
        const columns = pgConstraint.getAttributes()?.map((a) => a.attname) ?? [];
        if (table && inRowgate(table) && columns.length && indexedWithSoftDelete(table, columns)) {
          tagsOf(relation).isIndexed = true;
        }
      },
      pgCodecs_attribute(_info, { pgClass, pgAttribute, attribute }) {
        if (inRowgate(pgClass) && indexedWithSoftDelete(pgClass, [pgAttribute.attname], true)) tagsOf(attribute).isIndexed = true;
      },
    },
  },
  schema: {
    hooks: {
      // PostGraphile 5 answers an update that matched no row with a null payload; we
      // answer with an error, as REST does (404/403): the row does not exist, or RLS
      // (the subject's reach, its role's permission, the token's scopes) refused it.
      GraphQLObjectType_fields_field(field, build, context) {
        const { isPgUpdateMutation, pgFieldResource } = context.scope;
        const plan = field.plan;
        if (!isPgUpdateMutation || !plan) return field;
        const { lambda, object, SafeError } = build.grafast;
        const table = pgFieldResource?.name ?? 'the';
        const message = `No ${table} row was updated: it does not exist, or this credential may not change it`;
        return {
          ...field,
          plan(...args: Parameters<typeof plan>) {
            const $payload = plan(...args) as ObjectStep<{ result: Step }>;
            const $result = $payload.getStepForKey('result');
            const $updated = lambda($result, (row: unknown) => {
              if (row == null) throw new SafeError(message, { code: 'NotUpdated' });
              return true;
            });
            // the payload depends on the check, so it fails with it
            return object({ result: $result, updated: $updated });
          },
        };
      },
    },
  },
};

/**
 * The role and settings of a request's credential, as REST authenticates it
 * (src/auth/authenticate.ts; none: anonymous, without asking the database), or
 * the REST 401 (thrown to the error handler).
 */
export async function requestSettings(pool: pg.Pool, secret: string, req: Request): Promise<Settings> {
  const credential = readCredential(req);
  if (credential === 'malformed') throw unauthorized('The credential is malformed', true);
  if (!credential) return ANONYMOUS_SETTINGS;
  const named = poolStatements(pool).named;
  const run = async <T extends object>(text: string, values: unknown[]) =>
    (await pool.query<T>(named ? { name: statementName(text), text, values } : { text, values })).rows[0];
  const authenticated = await authenticate(run, secret, credential, requestId(req));
  if (!authenticated) throw unauthorized('The credential is unknown, expired or revoked', true);
  return authenticated.settings;
}

/**
 * What the server itself checks before grafast plans a request: the document's
 * size (parse and validation, cached by text) and its page arguments with this
 * request's variables. Refusals are ordinary GraphQL errors with their codes.
 */
const rowgateLimitsPlugin = (refused: (code: string) => void = () => {}): GraphileConfig.Plugin => ({
  name: 'RowgateLimitsPlugin',
  description: 'Bounds every GraphQL request before it is planned (SPEC §13)',
  version: '1.0.0',
  grafserv: {
    middleware: {
      setPreset(next, event) {
        const original = event.getExecutionConfig;
        // one parse-and-validate (and its cache) per schema
        let ours: { schema: object; parseAndValidate: ReturnType<typeof makeParseAndValidate> } | undefined;
        event.getExecutionConfig = async function (this: ThisParameterType<typeof original>, ctx) {
          const config = await original.call(this, ctx);
          if (ours?.schema !== config.schema) {
            const parseAndValidate = makeParseAndValidate(config.schema);
            // refusals counted for the metrics (SPEC §14)
            const counting: typeof parseAndValidate = (query) => {
              const result = parseAndValidate(query);
              for (const error of ('errors' in result ? result.errors : undefined) ?? []) {
                if (error.extensions?.code === TOO_COMPLEX) refused(TOO_COMPLEX);
              }
              return result;
            };
            ours = { schema: config.schema, parseAndValidate: counting };
          }
          return { ...config, parseAndValidate: ours.parseAndValidate };
        };
        return next();
      },
    },
  },
  grafast: {
    middleware: {
      execute(next, { args }) {
        const errors = pageArgumentErrors(args.document, args.operationName, args.variableValues as Record<string, unknown>);
        if (errors.length) refused(BAD_USER_INPUT);
        return errors.length ? { errors } : next();
      },
    },
  },
});

/** GraphQL errors the client may read: our SQL's deliberate errors, as REST words them; the rest is masked. */
function makeMaskError(
  GraphQLErrorClass: typeof GraphQLError,
  isSafeError: (e: Error) => boolean,
  log: (line: string) => void,
  options: { statementTimeoutMs?: number; development: boolean; refused?: (code: string) => void },
) {
  const mask = (error: GraphQLError): GraphQLError => {
    const original = error.originalError as (Error & { code?: string; extensions?: Record<string, unknown> }) | undefined;
    if (!original || original instanceof GraphQLErrorClass) {
      // graphql-js's own: a variable of the wrong type, an unknown operation name
      if (error.extensions.code) return error;
      const code = error.nodes?.length ? BAD_USER_INPUT : VALIDATION_FAILED;
      return new GraphQLErrorClass(error.message, {
        nodes: error.nodes,
        source: error.source,
        positions: error.positions,
        path: error.path,
        extensions: { ...error.extensions, code },
      });
    }
    if (isSafeError(original)) {
      // meant for the client: ours (an update that changed nothing), and grafast's
      // about the request itself (a cursor from another ordering), which carry no code
      return new GraphQLErrorClass(original.message, {
        nodes: error.nodes,
        source: error.source,
        positions: error.positions,
        path: error.path,
        originalError: original,
        extensions: { code: BAD_USER_INPUT, ...original.extensions },
      });
    }
    const copy = (message: string, code: string) =>
      new GraphQLErrorClass(message, {
        nodes: error.nodes,
        source: error.source,
        positions: error.positions,
        path: error.path,
        originalError: original,
        extensions: { code },
      });
    // insufficient_privilege: a grant is missing (an anonymous request) or RLS refused a row
    if (original.code === '42501') return copy(original.message, 'NotPermitted');
    // query_canceled: the statement timeout (SPEC §13), said with a warning (SPEC §14)
    if (original.code === '57014') {
      const message = options.statementTimeoutMs
        ? timeoutDetail(options.statementTimeoutMs)
        : 'The request took longer than the statement timeout and was cancelled';
      log(`timeout on POST ${GRAPHQL_PATH} at ${error.path?.join('.') ?? '(request)'}: ${message}`);
      return copy(message, 'TIMEOUT');
    }
    const apiError = fromDatabaseError(original);
    if (apiError && apiError.status !== 500) {
      const detail = apiError.detail;
      const message = typeof detail === 'string' ? detail : detail.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; ');
      return copy(message, apiError.error);
    }
    // data exceptions and integrity violations come from the input: a NUL in a
    // string, a null for a required column (found by the GraphQL fuzzer)
    if (/^2[23]/.test(original.code ?? '')) return copy(original.message, BAD_USER_INPUT);
    // the message may repeat the client's input (a malformed node id): bounded, and the stack in development only
    const path = boundedText(error.path?.join('.') ?? '(request)');
    log(`graphql error at ${path}: ${options.development ? (original.stack ?? String(original)) : boundedText(String(original))}`);
    return copy('An unexpected error occurred', 'InternalServerError');
  };
  // statement timeouts, as metrics count them beside the limits' refusals (SPEC §14)
  return (error: GraphQLError): GraphQLError => {
    const masked = mask(error);
    if (masked.extensions?.code === 'TIMEOUT') options.refused?.('TIMEOUT');
    return masked;
  };
}

/** What is wrong with a GraphQL request body (GraphQL over HTTP: query, variables, operationName, extensions) */
function graphqlBodyIssues(body: unknown): ValidationIssue[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return [{ type: 'object_type', loc: ['body'], msg: 'The body must be a JSON object with a "query"' }];
  }
  const fields = body as Record<string, unknown>;
  const issues: ValidationIssue[] = [];
  const isObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (typeof fields.query !== 'string') issues.push({ type: 'string_type', loc: ['body', 'query'], msg: 'The document must be a string' });
  if (fields.operationName != null && typeof fields.operationName !== 'string') {
    issues.push({ type: 'string_type', loc: ['body', 'operationName'], msg: 'The operation name must be a string or null' });
  }
  for (const key of ['variables', 'extensions'] as const) {
    if (fields[key] != null && !isObject(fields[key]))
      issues.push({ type: 'object_type', loc: ['body', key], msg: `${key} must be an object or null` });
  }
  return issues;
}

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
  /** more configuration on top of ours (the tests turn simple lists on with it) */
  preset?: GraphileConfig.Preset;
  /** a mutation keeps its credential's REST reads on the primary for the standbys' lag bound (src/db/consistency.ts) */
  consistency?: Consistency;
}

export interface Graphql {
  /** for AppOptions.mounts: synchronous, after the route table, before the 404 and error handlers */
  mount(app: express.Express): void;
  instance: PostGraphileInstance;
  release(): Promise<void>;
}

/**
 * Timestamps leave PostgreSQL as its own text and take REST's shape here
 * (src/db/timestamps.ts), instead of @dataplan/pg's `to_char(…)` in the query:
 * PostgreSQL computes a query's select list before its sort, so a sorted page
 * formatted the timestamps of every row it considered, most of them dropped
 * (docs/performance.md, GraphQL); its own text output runs for the rows
 * returned only. GraphQL then writes what REST writes
 * ("…T08:22:11.16+00:00"). The codec is @dataplan/pg's shared object, adjusted
 * in place so every column keeps its GraphQL type.
 */
function timestampsAsRest(codec: { castFromPg?: unknown; fromPg: (value: string) => unknown }) {
  codec.castFromPg = undefined;
  codec.fromPg = rfc3339;
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
  ] = await Promise.all([
    import('postgraphile'),
    import('postgraphile/adaptors/pg'),
    import('postgraphile/grafserv/express/v4'),
    import('postgraphile/presets/amber'),
    import('postgraphile/graphql'),
    import('postgraphile/grafast'),
    import('postgraphile/@dataplan/pg'),
  ]);
  timestampsAsRest(TYPES.timestamptz);
  const settings = new WeakMap<IncomingMessage, Settings>();
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
    plugins: [
      RowgateGraphqlPlugin,
      OmitArchivedPlugin,
      DefaultPagePlugin,
      rowgateLimitsPlugin((code) => options.metrics?.graphqlRefusals.inc({ code })),
    ],
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
        // the request's id joins the settings every transaction of the request applies (SPEC §14)
        const found = req ? { ...(settings.get(req) ?? ANONYMOUS_SETTINGS), 'rowgate.request_id': requestId(req) } : ANONYMOUS_SETTINGS;
        const query = getOperationAST(args.document, args.operationName)?.operation === 'query';
        return { pgSettings: query ? forQuery(options.pool, found) : { ...found } };
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
    // a plan can take megabytes, and 500 distinct documents grew the heap by
    // 1.4 GB (the GraphQL fuzzer's long run; npm start gives the heap 512 MB)
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

  const authenticateRequest = async (req: Request, res: Response, next: NextFunction) => {
    try {
      const found = await requestSettings(options.pool, options.secret, req);
      settings.set(req, found);
      res.locals.subjectSettings = found; // what the access log reports (src/operating/access-log.ts)
      const credential = options.consistency && /\bmutation\b/.test(String(req.body?.query)) ? readCredential(req) : null;
      if (credential && credential !== 'malformed') {
        const key = credentialKey(credential);
        options.consistency!.hold(key);
        res.on('finish', () => options.consistency!.hold(key));
      }
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
      const named = (_req: Request, res: Response, next: NextFunction) => {
        res.locals.route = GRAPHQL_PATH; // the access log's route template
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
