// `totalCount` of a connection over every row a subject may see
// (`Query.allOrders`, `Query.allCustomers`, asked with no argument that filters)
// reads the trigger-kept per-organization counters REST's lists read
// (src/listing/list-statement.ts), instead of `count(*)` over the visible rows.
//
// Who sees what stays in the database: rowgate_hidden.visible_row_count
// (migrations) answers from the counters only when they count exactly what the
// table's select policies let the transaction's role see, and null otherwise;
// the statement then counts under RLS as PostGraphile's plan did:
//
//   select coalesce(rowgate_hidden.visible_row_count('orders'),
//                   (select count(*) from rowgate.orders))
//
// (an uncorrelated subquery is an initPlan, run only when its value is read).
// Whether the connection filters is decided when the document is planned: any
// argument other than the page's (first, last, offset, before, after) and the
// order, given in the document or by a default, keeps PostGraphile's own plan.
// Only types are imported: grafast and @dataplan/pg come from `build`.
import type {} from 'postgraphile';
import type { PgExecutor } from 'postgraphile/@dataplan/pg';
import type { FieldArgs, FieldInfo, Step } from 'postgraphile/grafast';
import { isUnfiltered } from './unfiltered-connection-check.ts';

/** the tables with counters (rowgate_private.organization_row_counts), which name them as the table */
const COUNTED: ReadonlySet<string> = new Set(['orders', 'customers']);

/** the statement of each counted table, prepared under its name */
function countStatement(resource: string, table: string) {
  const text = `select coalesce(rowgate_hidden.visible_row_count('${resource}'), (select count(*) from ${table})) as total_count`;
  return { text, name: `rowgate_total_${resource}` };
}

interface Counted {
  executor: PgExecutor;
  resource: string;
}
/** connection steps whose totalCount may read the counters (decided when their field is planned) */
const countedConnections = new WeakMap<Step, Counted>();

interface PgClientLike {
  query<T>(query: { text: string; values?: readonly unknown[]; name?: string }): Promise<{ rows: readonly T[] }>;
}
const statements = new Map<string, { text: string; name: string }>();

/** one loader for every counted table (@dataplan/pg caches what it makes of a loader by its identity) */
async function loadTotals(client: PgClientLike, resources: readonly string[]): Promise<number[]> {
  return Promise.all(
    resources.map(async (resource) => {
      const statement = statements.get(resource)!;
      const { rows } = await client.query<{ total_count: number | string }>({ ...statement, values: [] });
      return Number(rows[0]!.total_count);
    }),
  );
}

export const CountedTotalPlugin: GraphileConfig.Plugin = {
  name: 'RowgateCountedTotalPlugin',
  description: "totalCount of an unfiltered root connection from the row counters REST's lists read, when the database says they apply",
  version: '1.0.0',
  after: ['PgConnectionTotalCountPlugin', 'RowgateDefaultPagePlugin'],
  schema: {
    hooks: {
      GraphQLObjectType_fields_field(field, build, context) {
        const { scope } = context;
        const plan = field.plan;
        if (!plan) return field;
        const { ConstantStep, constant } = build.grafast;
        // the root connection: remember whether its document filters it
        if (scope.isRootQuery && scope.isPgFieldConnection && scope.pgFieldResource) {
          const resource = scope.pgFieldResource as { name: string; executor: PgExecutor; from: unknown };
          if (!COUNTED.has(resource.name)) return field;
          const counter = resource.name;
          const table = `rowgate.${resource.name}`;
          statements.set(counter, countStatement(counter, table));
          return {
            ...field,
            plan($parent: Step, fieldArgs: FieldArgs, info: FieldInfo) {
              const $connection = (plan as (...a: unknown[]) => Step)($parent, fieldArgs, info);
              if (isUnfiltered(fieldArgs, info, ConstantStep))
                countedConnections.set($connection, { executor: resource.executor, resource: counter });
              return $connection;
            },
          };
        }
        // its totalCount
        if (scope.isPgConnectionTotalCountField) {
          const { loadOneWithPgClient } = build.dataplanPg;
          return {
            ...field,
            plan($connection: Step, fieldArgs: FieldArgs, info: FieldInfo) {
              const counted = countedConnections.get($connection);
              if (!counted) return (plan as (...a: unknown[]) => Step)($connection, fieldArgs, info);
              return loadOneWithPgClient(counted.executor, constant(counted.resource), loadTotals as never);
            },
          };
        }
        return field;
      },
    },
  },
};
