// Archived rows are omitted from GraphQL collections unless the query asks for
// them: the behaviour of @graphile-contrib/pg-omit-archived, written here for
// PostGraphile 5 because no published release of it works with 5.1 (see
// docs/decisions.md). Every connection and list over a table with a boolean
// `is_archived` column (Query.allProducts, Organization.productsByOrganizationId,
// …) gains `includeArchived: IncludeArchivedOption = NO`:
//   NO          archived rows are left out (the default);
//   YES         archived rows are included;
//   EXCLUSIVELY only archived rows.
// Single-row fields (productByRowId, Order.productByProductId) are not filtered: a
// row named by its key is returned whatever its state, like REST's GET /{id}.
// Only types are imported: grafast and pg-sql2 come from `build` (as graphile
// recommends), so loading this module loads neither.
import type {} from 'postgraphile';
import type { PgSelectQueryBuilder, PgSelectStep } from 'postgraphile/@dataplan/pg';
import type { ConnectionStep, FieldArg } from 'postgraphile/grafast';
import type { PgSQL } from 'postgraphile/pg-sql2';

const ARCHIVED_COLUMN = 'is_archived';
const INCLUDE_ARCHIVED_ARGUMENT = 'includeArchived';
const INCLUDE_ARCHIVED_TYPE = 'IncludeArchivedOption';

type IncludeArchivedOption = 'NO' | 'YES' | 'EXCLUSIVELY';

/** The condition an option puts on the collection's query (none for YES). */
function archivedCondition(sql: PgSQL<never>, option: IncludeArchivedOption | null | undefined) {
  // an explicit null means the default
  const wanted = option === 'YES' ? null : option === 'EXCLUSIVELY' ? sql.true : sql.false;
  if (wanted === null) return null;
  return (qb: PgSelectQueryBuilder) => {
    qb.where(sql`${qb.alias}.${sql.identifier(ARCHIVED_COLUMN)} is ${wanted}`);
  };
}

interface AttributesCodec {
  attributes?: Record<string, { codec: { name: string } }>;
}

/** Does the codec have a boolean `is_archived` column? */
function hasArchivedColumn(codec: AttributesCodec | undefined | null): boolean {
  return codec?.attributes?.[ARCHIVED_COLUMN]?.codec.name === 'bool';
}

export const OmitArchivedPlugin: GraphileConfig.Plugin = {
  name: 'RowgateOmitArchivedPlugin',
  description: 'Omits archived rows from collections unless `includeArchived` asks for them (pg-omit-archived for PostGraphile 5)',
  version: '1.0.0',
  schema: {
    hooks: {
      init(_, build) {
        build.registerEnumType(
          INCLUDE_ARCHIVED_TYPE,
          {},
          () => ({
            description: 'Whether archived rows are included in a collection.',
            values: {
              NO: { value: 'NO', description: 'Leave archived rows out (the default).' },
              YES: { value: 'YES', description: 'Include archived rows.' },
              EXCLUSIVELY: { value: 'EXCLUSIVELY', description: 'Only archived rows.' },
            },
          }),
          'Registering the includeArchived option (RowgateOmitArchivedPlugin)',
        );
        return _;
      },
      GraphQLObjectType_fields_field_args(args, build, context) {
        const { scope, Self } = context;
        const { fieldName, isPgFieldConnection, isPgFieldSimpleCollection, pgFieldResource, pgFieldCodec } = scope;
        if (!isPgFieldConnection && !isPgFieldSimpleCollection) return args;
        const codec = pgFieldCodec ?? pgFieldResource?.codec;
        if (!hasArchivedColumn(codec as AttributesCodec | undefined)) return args;
        const OptionType = build.getTypeByName(INCLUDE_ARCHIVED_TYPE);
        if (!OptionType || !build.graphql.isInputType(OptionType)) return args;
        const { sql } = build;
        const { lambda } = build.grafast;
        // the option is read when the query runs (it may be a variable), and becomes a where clause or none
        const applyToSelect = ($select: PgSelectStep, $option: ReturnType<FieldArg['getRaw']>) =>
          $select.apply(lambda($option, (option: IncludeArchivedOption | null) => archivedCondition(sql, option), true));
        return build.extend(
          args,
          {
            [INCLUDE_ARCHIVED_ARGUMENT]: {
              description: build.wrapDescription(
                'Whether archived rows are included: NO (the default) leaves them out, YES includes them, EXCLUSIVELY returns only them.',
                'arg',
              ),
              type: OptionType,
              defaultValue: 'NO',
              applyPlan: isPgFieldConnection
                ? // biome-ignore lint/suspicious/noExplicitAny: any connection's step; only its subplan is used
                  (_$parent: unknown, $connection: ConnectionStep<any, any, any, any>, arg) =>
                    applyToSelect($connection.getSubplan() as PgSelectStep, arg.getRaw())
                : (_$parent: unknown, $select: PgSelectStep, arg) => applyToSelect($select, arg.getRaw()),
            },
          },
          `Adding '${INCLUDE_ARCHIVED_ARGUMENT}' to the collection '${fieldName}' of '${Self.name}'`,
        );
      },
    },
  },
};
