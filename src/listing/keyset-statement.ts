// The SQL of a keyset page (SPEC §23, `2026-12-15`): the rows after a
// cursor's key in `2026-11-20`'s order, one more to know whether a page
// follows, each row's item and key. Running it and signing its cursor is
// `readPage` in src/listing/list-statement.ts.
import type { CursorKey } from './list-cursor.ts';
import type { KeysetLines } from './list-page.ts';
import { type ListSpec, type ListStatement, orderKeys, type SortKey, type Where } from './list-filters.ts';

export type OrderColumn = { column: string; descending: boolean };

/**
 * The rows that come after a cursor's key in `2026-11-20`'s order (SPEC §23):
 * ascending puts nulls last, descending first (PostgreSQL's own defaults,
 * which the indexes keep), and the id, never null, breaks ties. With every key
 * in one direction and no null in the key, it is one row comparison, which a
 * `(sort column, id)` index serves as a range; otherwise one term per key.
 */
function afterKey(
  columns: readonly OrderColumn[],
  key: CursorKey,
  add: (value: unknown) => string,
  ref: (column: string) => string,
): string {
  const oneWay = columns.every((c) => c.descending === columns[0]!.descending);
  if (oneWay && key.every((value) => value !== null)) {
    const descending = columns[0]!.descending;
    const row = `(${columns.map((c) => ref(c.column)).join(', ')}) ${descending ? '<' : '>'} (${key.map((v) => add(v)).join(', ')})`;
    if (descending) return row;
    // ascending: rows whose key is null on some column come after every non-null value there
    const nullsAfter = columns
      .slice(0, -1)
      .map((c, i) => [...columns.slice(0, i).map((p, j) => `${ref(p.column)} = ${add(key[j])}`), `${ref(c.column)} is null`].join(' and '));
    return `(${[row, ...nullsAfter].join(' or ')})`;
  }
  const terms: string[] = [];
  columns.forEach((c, i) => {
    const value = key[i];
    const later =
      value === null
        ? c.descending
          ? `${ref(c.column)} is not null`
          : undefined
        : c.descending
          ? `${ref(c.column)} < ${add(value)}`
          : `(${ref(c.column)} > ${add(value)} or ${ref(c.column)} is null)`;
    if (later === undefined) return;
    const equal = columns.slice(0, i).map((p, j) => (key[j] === null ? `${ref(p.column)} is null` : `${ref(p.column)} = ${add(key[j])}`));
    terms.push([...equal, later].join(' and '));
  });
  return terms.length ? `(${terms.map((t) => `(${t})`).join(' or ')})` : 'false';
}

/**
 * An export's chunk over many organizations in the default order (`KeysetLines.spread`):
 * read a few rows of each organization up to a frontier, or the table in order (`inOrder`).
 */
function spreadChunk(spec: ListSpec, read: KeysetRead, where: Where, columns: readonly OrderColumn[]): boolean {
  return (
    spec.perOrganization !== undefined &&
    read.lines?.spread !== undefined &&
    !where.metadataDocuments.length &&
    columns.length === 2 &&
    columns[0]!.column === 'created_at' &&
    columns.every((c) => c.descending)
  );
}

/** The share of a table's rows, as 1 in this many, from which a chunk reads the table in order. */
const IN_ORDER_SHARE = 10;

/**
 * Whether an export's chunk reads the table's in-order index (`ListSpec.perOrganization.inOrderIndex`):
 * when the caller's organizations hold at least 1 in IN_ORDER_SHARE of the table's rows (their row
 * counts against the table's estimate in pg_class), one scan in order reads on average at most that
 * many index entries a row it keeps, where merging organizations rescans each of them every chunk
 * (below that share, merging is the cheaper). Only an unfiltered list (a filter by organization
 * aside): a filter that keeps few rows would have the scan walk the table to find them, where
 * merging reads them by their own index. Only a table whose policy is the organization's reach
 * alone (no `permission`), which the scan states through RLS.
 *
 * Decided once an export (`KeysetLines.inOrder` undefined: this statement decides; true: it only
 * sets the plan), in the chunk's own transaction, which the statement then keeps from sorting: the
 * planner cannot see how much of the table the caller reaches (the reachable ids are known only
 * when the statement runs) and would sort every row it reaches to keep a few thousand; with sorts
 * off, the index's order is the only plan that needs none. The setting ends with the transaction;
 * a PL/pgSQL function first planned in it (the policy's helpers) keeps a plan made without sorts,
 * which for their lookups by id is the plan they have anyway. Only chunks after the first
 * (`carry`): each runs in a transaction of its own. null: read by merging.
 */
export function inOrderDecision(spec: ListSpec, read: KeysetRead, where: Where): ListStatement | null {
  const counter = spec.perOrganization?.counter;
  if (!spec.perOrganization?.inOrderIndex || spec.perOrganization.permission || !counter) return null;
  if (!read.lines?.carry || read.lines.inOrder === false || where.conditions.length) return null;
  if (!spreadChunk(spec, read, where, orderKeys(spec, read.sorting).columns)) return null;
  const plan = `set_config('enable_sort', 'off', true)`;
  if (read.lines.inOrder) return { text: `select true as in_order, ${plan} as planned`, values: [] };
  const values: unknown[] = [counter, IN_ORDER_SHARE, spec.from];
  const ids = where.organizationIds ? `$${values.push(where.organizationIds)}::uuid[]` : 'rowgate_hidden.current_organization_ids()';
  return {
    text: `select d.in_order, case when d.in_order then ${plan} end as planned
      from (select coalesce(rowgate_hidden.organization_row_count($1, ${ids}) * $2::bigint
          >= nullif(greatest(c.reltuples, 0), 0), false) as in_order
        from pg_catalog.pg_class c where c.oid = $3::regclass) d`,
    values,
  };
}

/** What a keyset page is asked for: the continuation, the size, the sorting, and whether to count. */
export interface KeysetRead {
  after?: string;
  limit: number;
  sorting?: readonly SortKey[];
  /** the server secret cursors are signed with */
  secret: string;
  countExact?: boolean;
  /** an export's chunk: its items as lines (`KeysetLines`) instead of a JSON array */
  lines?: KeysetLines;
}

/**
 * The SQL of one keyset page: `limit + 1` rows after the cursor's key (the one
 * more says whether a next page exists), each row's item as the read schema's
 * JSON and its key; the page's items as one JSON array, the key of its last row
 * when more follow, and the total only when asked.
 */
export function keysetStatement(spec: ListSpec, read: KeysetRead, where: Where, after: CursorKey | null): ListStatement {
  const { columns } = orderKeys(spec, read.sorting);
  const values = [...where.params.values];
  const add = (value: unknown) => `$${values.push(value)}`;
  const conditions = [...where.conditions];
  const orderOf = (ref: (column: string, i: number) => string) =>
    columns.map((c, i) => `${ref(c.column, i)} ${c.descending ? 'desc' : 'asc'}`).join(', ');
  const keys = columns.map((c, i) => `${c.column} as s${i}`).join(', ');
  // the read schema's JSON of a row, written by the same composite-to-JSON as a numbered page's json_agg;
  // a per-organization list reads it for the page's rows only, by id (the last key), once they are merged;
  // an export's large chunk, which keeps most rows it scans, carries each row's columns from its scan instead
  const carried = spec.perOrganization && read.lines?.carry;
  // an export's chunk over many organizations in the default order reads a few rows of each (`KeysetLines.spread`),
  // or, as `inOrderDecision` decided, the table's in-order index
  const inOrder = spreadChunk(spec, read, where, columns) && read.lines?.inOrder === true;
  const frontier = spreadChunk(spec, read, where, columns) && !inOrder;
  const selected = carried
    ? `(select c from (select ${spec.columns}) c) as item_columns, ${keys}`
    : spec.perOrganization
      ? keys
      : `(select row_to_json(c) from (select ${spec.columns}) c) as item, ${keys}`;
  const item = carried
    ? 'row_to_json(top.item_columns)'
    : spec.perOrganization
      ? `(select row_to_json(c) from (select ${spec.columns} from ${spec.from} where ${spec.id ?? 'id'} = top.s${columns.length - 1}) c)`
      : 'top.item';
  const limit = `$${values.push(read.limit)}::bigint`;
  const fetched = `${limit} + 1`;
  const later = (ref: (column: string) => string) => (after ? [afterKey(columns, after, add, ref)] : []);
  const outer = orderOf((_, i) => `top.s${i}`);
  let page: string;
  let count: string;
  let scope = '';
  if (spec.perOrganization) {
    const permission = spec.perOrganization.permission ? `'${spec.perOrganization.permission}'` : '';
    const reachable = `rowgate_hidden.current_organization_ids(${permission})`;
    const ids = where.organizationIds
      ? `array(select unnest(${reachable}) intersect select unnest(${add(where.organizationIds)}::uuid[]))`
      : reachable;
    scope = `scope as (select ${ids} as ids), `;
    const filter = ['organization_id = any((select ids from scope)::uuid[])', ...conditions].join(' and ');
    count =
      spec.perOrganization.counter && !conditions.length
        ? `rowgate_hidden.organization_row_count('${spec.perOrganization.counter}', (select ids from scope)::uuid[])`
        : `(select count(*) from ${spec.from} where ${filter})`;
    // one organization's next rows, up to `rows`; written when used: its cursor's values become parameters
    const scanOf = (rows: string) => `select ${selected} from ${spec.from}
        where ${['organization_id = organization.id', ...conditions, ...later((c) => c)].join(' and ')}
        order by ${orderOf((c) => c)} limit ${rows}`;
    const perOrganization = () => `select top.* from unnest((select ids from scope)::uuid[]) as organization(id)
      cross join lateral (${scanOf(fetched)}) top`;
    if (inOrder) {
      // one scan of the in-order index, `(created_at, id, organization_id) where id >= nil`: the predicate
      // stated, as no other statement states it, is what lets this one use it (the policy keeps the rows
      // to the caller's organizations: only a filter by organization is stated; PostgreSQL 17 and later
      // skip other organizations' entries inside the index, 16 reads their rows to drop them)
      const inOrderIndex = `${spec.id ?? 'id'} >= '00000000-0000-0000-0000-000000000000'`;
      const stated = where.organizationIds ? [filter] : conditions;
      page = `select ${selected} from ${spec.from} where ${[...stated, inOrderIndex, ...later((c) => c)].join(' and ')}
        order by ${orderOf((c) => c)} limit ${fetched}`;
    } else if (frontier) {
      // Each organization's next rows, `spread` times its share of the limit: the rows that surely come
      // first are those up to the frontier, the first in order of the last rows of the organizations
      // that have more (read all `each`); a chunk that ends there continues after it.
      const each = `least(${fetched}, ceil(${add(read.lines!.spread)}::double precision * ${limit}
        / greatest(cardinality((select ids from scope)::uuid[]), 1))::bigint + 1)`;
      scope += `merged as materialized (select top.* from unnest((select ids from scope)::uuid[]) as organization(id)
        cross join lateral (
          select read.*, row_number() over () as read_n, count(*) over () as read_rows from (${scanOf(each)}) read
        ) top),
      frontier as (select s0, s1 from merged where read_rows = ${each} and read_n = read_rows order by s0 desc, s1 desc limit 1), `;
      const kept = `${carried ? 'top.item_columns, ' : ''}top.s0, top.s1`;
      page = `select ${kept} from merged top where not exists (select from frontier f where (top.s0, top.s1) < (f.s0, f.s1))
        order by ${outer} limit ${fetched}`;
    } else if (!where.metadataDocuments.length) {
      page = `${perOrganization()} order by ${outer} limit ${fetched}`;
    } else {
      // as a numbered page does: the rows the metadata index finds, else the per-organization scan
      const table = spec.from.replace(/^rowgate\./, '');
      scope += `matched as (select rowgate_hidden.metadata_ids('${table}', ${add(JSON.stringify(where.metadataDocuments))}::jsonb) as ids), `;
      const byIds = ['id = any((select ids from matched)::uuid[])', filter].join(' and ');
      const fallback = `(select ids from matched) is null and ${filter}`;
      page = `select top.* from (
          (select ${selected} from ${spec.from} where ${[byIds, ...later((c) => c)].join(' and ')} order by ${orderOf((c) => c)} limit ${fetched})
          union all
          (${perOrganization()} where (select ids from matched) is null order by ${outer} limit ${fetched})
        ) top order by ${outer} limit ${fetched}`;
      count = `((select count(*) from ${spec.from} where ${byIds}) + (select count(*) from ${spec.from} where ${fallback}))`;
    }
  } else {
    if (where.organizationIds) conditions.push(`organization_id = any(${add(where.organizationIds)}::uuid[])`);
    const filter = conditions.length ? `where ${conditions.join(' and ')}` : '';
    count = `(select count(*) from ${spec.from} ${filter})`;
    const all = [...conditions, ...later((c) => c)];
    page = `select ${selected} from ${spec.from} ${all.length ? `where ${all.join(' and ')}` : ''} order by ${orderOf((c) => c)} limit ${fetched}`;
  }
  const key = `array[${columns.map((_, i) => `top.s${i}::text`).join(', ')}]`;
  const total = read.countExact ? `, ${count} as total_count` : '';
  if (read.lines) {
    // One pass over the page's rows in their order, none held (one window): each line with the bytes up
    // to its end and the bytes of the line before. A line is kept when the lines before it stay within the
    // budget; the rows answered are the lines kept and the row after the last of them (without its
    // line: it says that more follow). The last line kept is the one at the limit or the budget, and
    // it carries its key, the cursor. `offset 0` keeps each line computed once (a subquery pulled up
    // would compute it again for each use). Each row says its place (n), rather than a sort of the
    // whole chunk again: rows arrive in the page's order, which readPage checks (and sorts if not).
    const bytes = `$${values.push(read.lines.bytes)}::bigint`;
    const sorted = columns.map((_, i) => `s${i}`).join(', ');
    const within = (n: string, before: string) => `(${n} <= ${limit} and (${n} = 1 or ${before} < ${bytes}))`;
    const text = `with ${scope}lines as (select line, ${sorted}, n, upto,
          ${within('n', 'upto - octet_length(line) - 1')} as kept,
          ${within('n - 1', 'upto - octet_length(line) - 1 - coalesce(previous_bytes, 0)')} as previous_kept
        from (select line, ${sorted}, row_number() over w as n, sum(octet_length(line) + 1) over w as upto,
            lag(octet_length(line) + 1) over w as previous_bytes
          from (select ${item}::text as line, ${sorted} from (${page}) top offset 0) chunk window w as (rows unbounded preceding)) numbered)
    select n, case when kept then line end as line,
      case when kept and (n = ${limit} or upto >= ${bytes}) then ${key.replaceAll('top.', 'lines.')} end as key
    from lines where kept or previous_kept${
      // every row up to the frontier kept: the next chunk continues after it (a row after the lines, without a line)
      frontier
        ? `
    union all select ${limit} + 2, null, array[f.s0::text, f.s1::text] from frontier f
      where not exists (select from lines where not kept)`
        : ''
    }`;
    return { text, values };
  }
  const text = `with ${scope}page_rows as materialized (select ${item} as item, ${key} as key, row_number() over () as n from (${page}) top)
    select coalesce((select json_agg(item order by n) from page_rows where n <= ${limit}), '[]')::text as items,
      (select key from page_rows where n = ${limit} and exists (select from page_rows where n > ${limit})) as next_key
      ${total}`;
  return { text, values };
}
