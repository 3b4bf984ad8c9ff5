// PostGraphile's configuration: the Amber preset over the `rowgate` schema with
// our plugins, grafserv's HTTP options and grafast's bounds. What is published
// is decided in src/graphql/published-schema.ts. Before anything is planned, a
// document is bounded (src/graphql/limits.ts: tokens, depth, aliases, nodes;
// page-arguments.ts: first/last/offset with the variables; both run by
// limits-plugin.ts) and every collection returns at most a page
// (src/graphql/page-size.ts), SPEC §13. Errors: src/graphql/errors.ts. Each
// request's context comes from src/graphql/requests.ts.
import type pg from 'pg';
import type { PostGraphileAmberPreset as AmberPreset } from 'postgraphile/presets/amber';
import type { GraphQLError } from 'postgraphile/graphql';
import { poolStatements } from '../db/pool.ts';
import type { Metrics } from '../operating/metrics.ts';
import { CountedTotalPlugin } from './counted-total.ts';
import { makeMaskError } from './errors.ts';
import { rowgateLimitsPlugin } from './limits-plugin.ts';
import { OmitArchivedPlugin } from './omit-archived.ts';
import { OrganizationPagesPlugin } from './organization-pages.ts';
import { DefaultPagePlugin } from './page-size.ts';
import { RowgateGraphqlPlugin } from './published-schema.ts';
import { GRAPHQL_PATH } from './requests.ts';

export const GRAPHIQL_PATH = '/graphiql';
export const GRAPHIQL_STATIC_PATH = '/graphiql-static/';

/** How long grafast may plan one request (synchronously) before it is refused */
const PLANNING_TIMEOUT_MS = 1_000;

/** How many operations' plans grafast keeps (a client sends the same few documents) */
export const OPERATION_PLANS_KEPT = 50;

/**
 * grafast keeps the plans of the last operations it planned, 500 unless the schema's
 * `extensions.grafast.operationsCacheMaxLength` says otherwise: a plan can take
 * megabytes, and 500 distinct documents outgrow the heap npm start gives the server.
 * The schema is built with the bound, through graphile-build's GraphQLSchema hook.
 */
const OperationPlansKeptPlugin: GraphileConfig.Plugin = {
  name: 'RowgateOperationPlansKeptPlugin',
  description: 'grafast keeps the plans of at most OPERATION_PLANS_KEPT operations',
  version: '1.0.0',
  schema: {
    hooks: {
      GraphQLSchema(config) {
        const extensions = config.extensions ?? {};
        return {
          ...config,
          extensions: { ...extensions, grafast: { ...extensions.grafast, operationsCacheMaxLength: OPERATION_PLANS_KEPT } },
        };
      },
    },
  },
};

export interface PresetParts {
  pool: pg.Pool;
  amber: typeof AmberPreset;
  pgService: GraphileConfig.PgServiceConfiguration;
  /** our plugins loaded with PostGraphile (the explanations, the codecs, the answer after the verdict) */
  plugins: GraphileConfig.Plugin[];
  GraphQLError: typeof GraphQLError;
  isSafeError: (error: Error) => boolean;
  context: NonNullable<GraphileConfig.GrafastOptions['context']>;
  development: boolean;
  log: (line: string) => void;
  metrics?: Metrics;
  /** more configuration on top of ours (the tests turn simple lists on with it, or one of our plugins off) */
  preset?: GraphileConfig.Preset;
}

export function graphqlPreset(parts: PresetParts): GraphileConfig.Preset {
  const { preset, metrics } = parts;
  return {
    extends: [parts.amber, ...(preset ? [preset] : [])],
    // a preset's disablePlugins reaches only the presets it extends, not the plugins added here
    plugins: [
      RowgateGraphqlPlugin,
      OmitArchivedPlugin,
      DefaultPagePlugin,
      CountedTotalPlugin,
      OrganizationPagesPlugin,
      OperationPlansKeptPlugin,
      ...parts.plugins,
      rowgateLimitsPlugin((code) => metrics?.graphqlRefusals.inc({ code })),
    ].filter((plugin) => !preset?.disablePlugins?.includes(plugin.name)),
    pgServices: [parts.pgService],
    grafserv: {
      graphqlPath: GRAPHQL_PATH,
      graphiql: parts.development,
      graphiqlOnGraphQLGET: false,
      graphiqlPath: GRAPHIQL_PATH,
      graphiqlStaticPath: GRAPHIQL_STATIC_PATH,
      graphqlOverGET: false,
      watch: false,
      websockets: false,
      maxRequestLength: 1024 * 1024,
      // grafast writes the answer's JSON as it walks the result, with no object tree to stringify again
      outputDataAsString: true,
      maskError: makeMaskError(parts.GraphQLError, parts.isSafeError, parts.log, {
        statementTimeoutMs: poolStatements(parts.pool).statementTimeoutMs,
        development: parts.development,
        refused: (code) => metrics?.graphqlRefusals.inc({ code }),
      }),
    },
    grafast: {
      explain: false,
      // Planning is synchronous: a document within the limits plans in
      // milliseconds, and one that does not is cancelled rather than holding
      // every other request (execution is bounded by the statement timeout)
      timeouts: { planning: PLANNING_TIMEOUT_MS },
      context: parts.context,
    },
  };
}
