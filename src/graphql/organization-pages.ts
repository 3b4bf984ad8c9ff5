// A page of an unfiltered root connection over orders (`Query.allOrders` with
// no argument but the page's and the order) read the way REST reads one
// (src/listing/list-statement.ts, `perOrganization`): each organization the
// subject reaches gives its own first rows from its `(organization_id, <sort
// column>, id)` index, and the page is taken from their merge, instead of
// sorting every visible row to keep a page (docs/performance.md, GraphQL).
//
// PostGraphile's query stays whole: this adds one condition to it, that the
// row is among those candidates,
//
//   <alias>.id = any(array(<the merge of each organization's first rows>))
//
// and PostGraphile's own RLS, cursor, order, limit and offset still apply on
// top. A mistake here can therefore only lose rows, never show one. Whether the
// merge holds every row the subject sees is the database's to say:
// rowgate_hidden.visible_by_organization (migrations), true for the roles whose
// rows the organizations' select policy alone decides; otherwise the
// candidates are the page PostGraphile would have read, under RLS (one branch
// runs, the other's one-time filter stops it).
//
// Covered, decided when the query runs: an order by one indexed column (the
// table's `(organization_id, column, id)` index) with or without the primary
// key in the same direction; first, last (reversed, as PostGraphile reverses
// it), offset, and after/before cursors of that order. Anything else (the
// default primary-key order, another order, first with last, a cursor this
// does not read) adds nothing, and the page is PostGraphile's alone.
// totalCount's copy of the query (mode `aggregate`) is left alone.
// Only types are imported: grafast and pg-sql2 come from `build`.
import type {} from 'postgraphile';
import type { PgSelectQueryBuilder, PgSelectStep } from 'postgraphile/@dataplan/pg';
import type { ConnectionStep, FieldArgs, FieldInfo, Step } from 'postgraphile/grafast';
import type { PgSQL, SQL } from 'postgraphile/pg-sql2';
import { LIMITS } from './limits.ts';
import { isUnfiltered } from './unfiltered-connection-check.ts';

/** the tables read this way, and each's sort columns with an `(organization_id, column, id)` index, by GraphQL order name */
const INDEXED_ORDERS: Readonly<Record<string, Readonly<Record<string, { column: string; type: string }>>>> = {
  orders: {
    CREATED_AT: { column: 'created_at', type: 'timestamptz' },
    AMOUNT: { column: 'amount', type: 'int8' },
  },
};

/** past this offset the condition is not added (ten default pages) */
const MAX_OFFSET = 10 * LIMITS.pageSize;

/** the primary key's order values (PostGraphile's, and the `id` column's own) */
const PRIMARY_KEY = new Set(['PRIMARY_KEY', 'ROW_ID', 'ID']);

interface Order {
  column: string;
  type: string;
  descending: boolean;
}

/** `[CREATED_AT_DESC]` or `[CREATED_AT_DESC, PRIMARY_KEY_DESC]`: the order; anything else: null */
function orderOf(table: string, orderBy: unknown): Order | null {
  const values = Array.isArray(orderBy) ? orderBy : [orderBy];
  if (values.length < 1 || values.length > 2 || !values.every((v) => typeof v === 'string')) return null;
  const [first, second] = (values as string[]).map((v) => /^(.+)_(ASC|DESC)$/.exec(v));
  if (!first) return null;
  const indexed = INDEXED_ORDERS[table]?.[first[1]!];
  if (!indexed) return null;
  const descending = first[2] === 'DESC';
  // PostGraphile makes the order unique with the primary key in the first column's direction
  if (values.length === 2 && !(second && PRIMARY_KEY.has(second[1]!) && second[2] === first[2])) return null;
  return { ...indexed, descending };
}

/** a cursor of this order, as @dataplan/pg writes one: base64 of `[digest, value, id]`; null: not one this reads */
function cursorValues(cursor: unknown): [string, string] | null {
  if (typeof cursor !== 'string' || cursor.length > 1_000) return null;
  try {
    const decoded: unknown = JSON.parse(Buffer.from(cursor, 'base64').toString('utf8'));
    if (!Array.isArray(decoded) || decoded.length !== 3) return null;
    const [, value, id] = decoded;
    return typeof value === 'string' && typeof id === 'string' ? [value, id] : null;
  } catch {
    return null;
  }
}

type PageArguments = readonly [first: unknown, last: unknown, offset: unknown, after: unknown, before: unknown, orderBy: unknown];

/**
 * The condition's builder for one request's arguments, or null to add none.
 * Without cursors it depends on nothing else, and is kept: building it again
 * for every request shows in a CPU profile.
 */
function narrowing(sql: PgSQL<never>, table: string, cache: Map<string, ReturnType<typeof conditionFor>>, args: PageArguments) {
  const [first, last, offset, after, before, orderBy] = args;
  if (after != null || before != null) return conditionFor(sql, table, args);
  const key = `${String(orderBy)} ${first} ${last} ${offset}`;
  let built = cache.get(key);
  if (built === undefined) {
    built = conditionFor(sql, table, args);
    if (cache.size >= BUILT_KEPT) cache.delete(cache.keys().next().value!);
    cache.set(key, built);
  }
  return built;
}

/** how many conditions without cursors are kept, per table (a client sends the same few pages) */
const BUILT_KEPT = 256;

function conditionFor(sql: PgSQL<never>, table: string, [first, last, offset, after, before, orderBy]: PageArguments) {
  const order = orderOf(table, orderBy);
  if (!order) return null;
  const hasFirst = typeof first === 'number';
  const hasLast = typeof last === 'number';
  if (hasFirst && hasLast) return null;
  const skipped = typeof offset === 'number' ? offset : 0;
  // far into the list the candidates would be most of the visible rows, held in one array: PostGraphile's sort instead
  if (skipped > MAX_OFFSET) return null;
  // the page as PostGraphile reads it (src/graphql/page-size.ts: first 100 by default), and one more for hasNextPage
  const page = hasFirst ? (first as number) : hasLast ? (last as number) : LIMITS.pageSize;
  const limit = page + skipped + 1;
  // `last` alone: PostGraphile reads the order reversed, then reverses the rows
  const descending = hasLast && !hasFirst ? !order.descending : order.descending;
  const bounds: { values: [string, string]; above: boolean }[] = [];
  for (const [cursor, isAfter] of [
    [after, true],
    [before, false],
  ] as const) {
    if (cursor == null) continue;
    const values = cursorValues(cursor);
    if (!values) return null;
    // after: the rows past the cursor in the connection's own order
    bounds.push({ values, above: isAfter !== order.descending });
  }
  const column = sql.identifier(order.column);
  const type = sql.identifier(order.type);
  const direction = descending ? sql`desc` : sql`asc`;
  const tableSql = sql.identifier('rowgate', table);
  const resource = sql.literal(table);
  const rowsOf = (alias: SQL) => {
    const conditions = bounds.map(
      ({ values: [value, id], above }) =>
        sql`(${alias}.${column}, ${alias}.id) ${above ? sql`>` : sql`<`} (${sql.value(value)}::${type}, ${sql.value(id)}::uuid)`,
    );
    // the limit a literal, as PostGraphile writes its own: a first page's
    // statement then has no parameter, and its prepared plan serves every
    // execution. With the limit a parameter the page measured 0.89x of
    // PostGraphile's own, with the literal 1.07x (bench/pair.ts, 6 rounds)
    return {
      where: conditions.length ? sql` and ${sql.join(conditions, ' and ')}` : sql.blank,
      orderBy: sql`order by ${alias}.${column} ${direction}, ${alias}.id ${direction} limit ${sql.literal(limit)}`,
    };
  };
  const row = sql.identifier(Symbol('row'));
  const organization = sql.identifier(Symbol('organization'));
  const top = sql.identifier(Symbol('top'));
  const merged = sql.identifier(Symbol('merged'));
  const own = rowsOf(row);
  const candidates = sql`array(
  select ${merged}.id from (
    (select ${top}.id, ${top}.${column}
      from unnest((select rowgate_hidden.current_organization_ids())) as ${organization}(id)
      cross join lateral (
        select ${row}.id, ${row}.${column} from ${tableSql} as ${row}
        where ${row}.organization_id = ${organization}.id${own.where}
        ${own.orderBy}
      ) as ${top}
      where (select rowgate_hidden.visible_by_organization(${resource})))
    union all
    (select ${row}.id, ${row}.${column} from ${tableSql} as ${row}
      where not (select rowgate_hidden.visible_by_organization(${resource}))${own.where}
      ${own.orderBy})
  ) as ${merged}
  ${rowsOf(merged).orderBy})`;
  return (qb: PgSelectQueryBuilder) => {
    // totalCount's copy counts every row: it keeps PostGraphile's query (or counted-total.ts's)
    if (qb.mode !== 'normal') return;
    qb.where(sql`${qb.alias}.id = any(${candidates})`);
  };
}

export const OrganizationPagesPlugin: GraphileConfig.Plugin = {
  name: 'RowgateOrganizationPagesPlugin',
  description: "A page of an unfiltered root connection over orders from each organization's first rows, as REST reads a list",
  version: '1.0.0',
  after: ['RowgateDefaultPagePlugin', 'RowgateCountedTotalPlugin'],
  schema: {
    hooks: {
      GraphQLObjectType_fields_field(field, build, context) {
        const { scope } = context;
        const plan = field.plan;
        if (!plan || !scope.isRootQuery || !scope.isPgFieldConnection || !scope.pgFieldResource) return field;
        const table = (scope.pgFieldResource as { name: string }).name;
        if (!INDEXED_ORDERS[table]) return field;
        const { ConstantStep, constant, lambda } = build.grafast;
        const { sql } = build;
        const built = new Map<string, ReturnType<typeof conditionFor>>();
        const narrowingOf = (args: PageArguments) => narrowing(sql, table, built, args);
        return {
          ...field,
          plan($parent: Step, fieldArgs: FieldArgs, info: FieldInfo) {
            // biome-ignore lint/suspicious/noExplicitAny: any connection's step; only its subplan is used
            const $connection = (plan as (...a: unknown[]) => ConnectionStep<any, any, any, any>)($parent, fieldArgs, info);
            if (!isUnfiltered(fieldArgs, info, ConstantStep)) return $connection;
            const names = new Set(info.field.args.map((a) => a.name));
            const arg = (name: string) => (names.has(name) ? fieldArgs.getRaw(name) : constant(undefined));
            const $arguments = [arg('first'), arg('last'), arg('offset'), arg('after'), arg('before'), arg('orderBy')];
            ($connection.getSubplan() as PgSelectStep).apply(lambda($arguments, narrowingOf as never, true));
            return $connection;
          },
        };
      },
    },
  },
};
