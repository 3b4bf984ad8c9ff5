// What GraphQL publishes of the rowgate schema: the RLS-guarded tables, the
// functions listed here, and nothing that holds or takes a token. PostGraphile
// reads this plugin when it builds the schema (src/graphql/preset.ts).
import type { ObjectStep, Step } from 'postgraphile/grafast';

/**
 * What GraphQL publishes of the rowgate schema beyond RLS-guarded tables is
 * decided here as well as in the database. The smart tags of the migrations
 * (`@behavior -*`, PostGraphile 5 honours them) hide token metadata and the
 * functions that take token hashes or serve only REST; on our side the token
 * tables are listed, and functions are published only when listed below, so a
 * lost comment or a new REST-only function cannot appear in GraphQL.
 */
const HIDDEN_TABLES = [
  'personal_access_tokens',
  'organization_access_tokens',
  'oauth2_clients',
  'webhook_endpoints',
  'webhook_attempts',
  // recorded denials (SPEC §20) and the request log (SPEC §25) are read through REST and analysts' SQL
  'denials',
  'request_log',
  // organizations' SQL logins (SPEC §24) are minted, listed and revoked through REST only
  'sql_credentials',
];
/** the rowgate functions GraphQL publishes (as mutations); every other one is hidden */
const GRAPHQL_FUNCTIONS = ['create_organization', 'add_member', 'create_account', 'create_order', 'create_refund'];
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

export const RowgateGraphqlPlugin: GraphileConfig.Plugin = {
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
        const { lambda, object, SafeError, trap, TRAP_INHIBITED } = build.grafast;
        const table = pgFieldResource?.name ?? 'the';
        const message = `No ${table} row was updated: it does not exist, or this credential may not change it`;
        return {
          ...field,
          plan(...args: Parameters<typeof plan>) {
            const $payload = plan(...args) as ObjectStep<{ result: Step }>;
            const $result = $payload.getStepForKey('result');
            // an id that is not this table's node id (not one at all, or another type's) inhibits the update
            // rather than failing it: without this the payload is null with no error
            const $updated = lambda(trap($result, TRAP_INHIBITED, { valueForInhibited: 'NULL' }), (row: unknown) => {
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
