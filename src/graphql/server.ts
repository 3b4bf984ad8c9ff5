// GraphQL at POST /graphql: PostGraphile 5 (Amber preset) over the `rowgate`
// schema, in the same Express app and on the same authenticator pool as REST.
// Its configuration is src/graphql/preset.ts; a request's way through it
// (authentication as REST's, its context, its answer) is src/graphql/requests.ts;
// its transactions are src/graphql/transport/.
import type express from 'express';
import type { NextFunction, Request, Response } from 'express';
import type pg from 'pg';
// PostGraphile itself is loaded by createGraphql, once GRAPHILE_ENV is settled
import type { PostGraphileInstance } from 'postgraphile';
import { RecentCredentials } from '../auth/recent-credentials.ts';
import type { Consistency } from '../db/consistency.ts';
import { poolStatements } from '../db/pool.ts';
import { Placement } from '../db/placement.ts';
import type { ReadReplicas } from '../db/read-replicas.ts';
import type { Route } from '../http/route-declaration.ts';
import { errorAnswer } from '../http/respond.ts';
import { pageSecurityHeaders } from '../http/security-headers.ts';
import type { Metrics } from '../operating/metrics.ts';
import { explainingPlugin } from './explaining.ts';
import { GRAPHIQL_PATH, GRAPHIQL_STATIC_PATH, graphqlPreset } from './preset.ts';
import { answerAfterVerdict, GRAPHQL_PATH, requestContext, requestHandlers } from './requests.ts';
import { textCodecsPlugin } from './transport/codecs.ts';
import { makeWithPgClient } from './transport/pg-client.ts';

export { requestSettings } from './requests.ts';

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
    ExplainingPlugin,
    TextCodecsPlugin,
  ] = await Promise.all([
    import('postgraphile'),
    import('postgraphile/adaptors/pg'),
    import('postgraphile/grafserv/express/v4'),
    import('postgraphile/presets/amber'),
    import('postgraphile/graphql'),
    import('postgraphile/grafast'),
    explainingPlugin(options.routes),
    textCodecsPlugin(),
  ]);
  const recentCredentials = options.recentCredentials ?? new RecentCredentials();
  const placement = new Placement({ primary: options.pool, consistency: options.consistency, reads: options.reads });
  // on the server's pool (PostGraphile does not end a pool it was given); no LISTEN
  // client. The adaptor's withPgClient serves the start-up introspection; each
  // request brings its own in its context (src/graphql/requests.ts)
  const basePgService = makePgService({ pool: options.pool, schemas: ['rowgate'], pubsub: false });
  const introspection = makeWithPgClient(options.pool);
  const pgService: typeof basePgService = {
    ...basePgService,
    adaptor: { ...basePgService.adaptor, createWithPgClient: () => introspection } as typeof basePgService.adaptor,
  };
  const contextOf = requestContext(options.pool);
  const preset = graphqlPreset({
    pool: options.pool,
    amber: PostGraphileAmberPreset,
    pgService,
    plugins: [
      ExplainingPlugin,
      TextCodecsPlugin,
      answerAfterVerdict(recentCredentials, errorAnswer(options.log, poolStatements(options.pool).statementTimeoutMs)),
    ],
    GraphQLError,
    isSafeError,
    context(request, args) {
      const query = getOperationAST(args.document, args.operationName)?.operation === 'query';
      const { req, res } = request.expressv4 ?? {};
      return contextOf(req, res, query) as unknown as Partial<Grafast.Context>;
    },
    development: options.development,
    log,
    metrics: options.metrics,
    preset: options.preset,
  });
  const instance = postgraphile(preset);
  const release = async () => {
    await instance.release(); // and the grafserv instance with it
    await pgService.release?.();
  };
  try {
    await instance.getSchema();
  } catch (error) {
    await release();
    throw error;
  }
  const serv = instance.createServ(grafserv);
  const handlers = requestHandlers({
    pool: options.pool,
    secret: options.secret,
    placement,
    standbys: Boolean(options.reads),
    recentCredentials,
  });

  let released: Promise<void> | undefined;
  return {
    instance,
    mount(app) {
      app.use(GRAPHQL_PATH, ...handlers);
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
