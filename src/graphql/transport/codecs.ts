// Timestamps and bigints leave PostgreSQL as the column's values, written out by
// PostgreSQL as its text (unparsed: src/graphql/transport/pg-client.ts), instead
// of @dataplan/pg's `to_char(…)` or `::text` in the query. PostgreSQL computes a
// query's select list below its sort, so a sorted page would format the values
// of every row it considers, most of them dropped (a page of 50 orders formats
// many times as many values as it returns). A column's text on the wire is the
// text of its `::text` cast, for the returned rows only. Timestamps then take
// REST's shape in Node (src/db/timestamps.ts), so GraphQL also writes what REST
// writes ("…T08:22:11.16+00:00"); one already in that shape passes through.
//
// The codecs are our own copies of @dataplan/pg's, supplied for the
// pg_catalog types through the `pgCodecs_findPgCodec` gather hook (the hook
// graphile-build-pg names for adding codecs) and given the GraphQL types of the
// originals in the schema's `init` hook (as graphile-build-pg asks for codecs it has no type for); the library's shared codecs stay as
// they are. `verbatim` is @dataplan/pg's own cast of text and uuid.
import { rfc3339 } from '../../db/timestamps.ts';

/** The plugin; @dataplan/pg is loaded by createGraphql once GRAPHILE_ENV is settled, hence async. */
export async function textCodecsPlugin(): Promise<GraphileConfig.Plugin> {
  const { TYPES } = await import('postgraphile/@dataplan/pg');
  type Codec = typeof TYPES.timestamptz;
  const verbatim = (fragment: Parameters<NonNullable<Codec['castFromPg']>>[0]) => fragment;
  const timestamptz: Codec = {
    ...TYPES.timestamptz,
    castFromPg: verbatim,
    // "YYYY-MM-DDT…": converted already
    fromPg: (value: string) => (value.charCodeAt(10) === 84 ? value : rfc3339(value)),
  };
  const bigint: typeof TYPES.bigint = { ...TYPES.bigint, castFromPg: verbatim };
  const ours = new Map<unknown, unknown>([
    [TYPES.timestamptz, timestamptz],
    [TYPES.bigint, bigint],
  ]);
  return {
    name: 'RowgateTextCodecsPlugin',
    version: '1.0.0',
    description: 'timestamptz and bigint selected as they are, written out by PostgreSQL for the returned rows only',
    gather: {
      hooks: {
        pgCodecs_findPgCodec: {
          after: ['PgCodecsPlugin'],
          callback(_info, event) {
            const own = ours.get(event.pgCodec);
            if (own) event.pgCodec = own as typeof event.pgCodec;
          },
        },
      },
    },
    schema: {
      hooks: {
        // before graphile-build-pg's own init walks the codecs and would give ours no type
        init: {
          before: ['PgCodecsPlugin'],
          callback(init, build) {
            build.setGraphQLTypeForPgCodec(timestamptz, ['input', 'output'], build.inflection.builtin('Datetime'));
            build.setGraphQLTypeForPgCodec(bigint, ['input', 'output'], build.inflection.builtin('BigInt'));
            return init;
          },
        },
      },
    },
  };
}
