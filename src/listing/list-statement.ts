// The SQL of a list (SPEC §6): the filters as parameterised predicates (`Where`),
// the page and its exact total in one statement, written as JSON by PostgreSQL
// (`listStatement`), and running it (`runList`). What a list accepts and how its
// answer is documented is src/listing/lists.ts.
import type { Tx } from '../db/pool.ts';
import { KeysetPage, ListPage, type ListRequest, listRequest } from './list-page.ts';
import { type CursorKey, listFingerprint, openCursor, signCursor } from './list-cursor.ts';

const asArray = <T>(v: T | T[] | undefined): T[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

/** One key of a list's order: an API sort field, ascending or descending. */
export interface SortKey {
  field: string;
  descending: boolean;
}

/** `sorting` as sent (comma-separated or repeated fields, a leading `-` for descending): its keys, in order. */
export function parseSorting(value: string | readonly string[]): SortKey[] {
  return (typeof value === 'string' ? [value] : value)
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean)
    .map((key) => (key.startsWith('-') ? { field: key.slice(1), descending: true } : { field: key, descending: false }));
}

/** The JSON values a query string value stands for: itself, and the integer or boolean it spells. */
function metadataValues(value: string): unknown[] {
  const values: unknown[] = [value];
  if (/^-?[0-9]{1,16}$/.test(value) && Math.abs(Number(value)) <= Number.MAX_SAFE_INTEGER) values.push(Number(value));
  if (value === 'true' || value === 'false') values.push(value === 'true');
  return values;
}

/** Collects the values of a statement and hands out their placeholders. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown) {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** The filters of a list: SQL predicates over parameters. RLS decides the rest. */
export class Where {
  readonly params = new Params();
  readonly conditions: string[] = [];
  /** the `organization_id` narrowing, kept apart: per-organization lists use it to pick organizations */
  organizationIds?: string[];

  /** narrows to some organizations (SPEC §6); unreachable ones simply yield nothing */
  organizations(values: string | string[] | undefined) {
    this.organizationIds = asArray(values);
    return this;
  }

  /** `column = any(values)` when the filter was given (a repeatable parameter) */
  anyOf(column: string, values: string | string[] | undefined, type: 'uuid' | 'text' = 'text') {
    const list = asArray(values);
    if (list) this.conditions.push(`${column} = any(${this.params.add(list)}::${type}[])`);
    return this;
  }

  equals(column: string, value: unknown) {
    if (value !== undefined) this.conditions.push(`${column} = ${this.params.add(value)}`);
    return this;
  }

  /** the time window of `createdWindow`, over the list's `created_at` */
  created(window: { created_after?: string; created_before?: string }, column = 'created_at') {
    if (window.created_after !== undefined) this.conditions.push(`${column} >= ${this.params.add(window.created_after)}::timestamptz`);
    if (window.created_before !== undefined) this.conditions.push(`${column} < ${this.params.add(window.created_before)}::timestamptz`);
    return this;
  }

  /**
   * The metadata filter as documents, one array per key, for `rowgate_hidden.metadata_ids`:
   * a per-organization list finds the matching rows through the GIN index with it.
   */
  readonly metadataDocuments: Record<string, unknown>[][] = [];

  /** the `metadata[<key>]` parameters of a parsed query: each key any of its values, all keys (`@>`) */
  metadata(query: Record<string, unknown>, column = 'metadata') {
    for (const [name, given] of Object.entries(query)) {
      const key = /^metadata\[(.*)\]$/.exec(name)?.[1];
      if (key === undefined) continue;
      const documents = (asArray(given as string | string[]) ?? []).flatMap((v) => metadataValues(v).map((x) => ({ [key]: x })));
      this.metadataDocuments.push(documents);
      this.conditions.push(`${column} @> any(${this.params.add(documents.map((d) => JSON.stringify(d)))}::jsonb[])`);
    }
    return this;
  }

  /** rows of the subject's live customers with these external ids (found past the customers' RLS, within its reach) */
  externalCustomers(values: string | string[] | undefined, column = 'customer_id') {
    const list = asArray(values);
    if (list) {
      this.conditions.push(
        `${column} = any((select rowgate_hidden.customer_ids_by_external_id(${this.params.add(list)}::text[]))::uuid[])`,
      );
    }
    return this;
  }

  /** case-insensitive substring search over some columns */
  search(columns: string[], text: string | undefined) {
    if (text !== undefined && text !== '') {
      const pattern = this.params.add(`%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      this.conditions.push(`(${columns.map((c) => `${c} ilike ${pattern}`).join(' or ')})`);
    }
    return this;
  }
}

export interface ListSpec {
  /** `rowgate.products` */
  from: string;
  /** the columns of the read schema */
  columns: string;
  /** API sort field → SQL column */
  sortable: Record<string, string>;
  /** the unique column that breaks ties (default `id`) */
  id?: string;
  defaultSort?: string;
  /**
   * A tenant table with an `(organization_id, sort column, id)` index per sortable
   * field: the page is the merge of each reachable organization's own top rows
   * (one short index range scan each) instead of sorting every visible row.
   * `permission` names the permission filter of the table's RLS policy, so that
   * only organizations whose rows the subject may see are scanned.
   */
  perOrganization?: {
    permission?: string;
    /**
     * The resource name of the table's per-organization row counts (kept by
     * triggers): an unfiltered list's total is their sum, not a count of rows.
     */
    counter?: string;
  };
}

/** A numbered page (`2026-11-20`). */
export interface NumberedQuery {
  page: number;
  limit: number;
  /** the keys `sorting` was parsed into (src/listing/lists.ts); none: the list's default */
  sorting?: readonly SortKey[];
}

/** A keyset page (`2026-12-15`): the page after a cursor, or the first. */
export interface KeysetQuery {
  after?: string;
  limit: number;
  sorting?: readonly SortKey[];
  /** set by the pipeline (src/http/pipeline.ts) */
  [listRequest]?: ListRequest;
}

/** What a list's handler passes on: the page its request's version asks for (the query schema of src/resources/lists.ts). */
export type ListQuery = NumberedQuery | KeysetQuery;

const isNumbered = (query: ListQuery): query is NumberedQuery => typeof (query as NumberedQuery).page === 'number';

export interface ListStatement {
  /** one row: `items`, the page as a JSON array, and `total_count` */
  text: string;
  values: unknown[];
}

/** The SQL of one page of a list (exported for the benchmark's pgbench comparator). */
export function listStatement(spec: ListSpec, query: NumberedQuery, where: Where): ListStatement {
  const keys = query.sorting?.length ? query.sorting : parseSorting(spec.defaultSort ?? '-created_at');
  const lastDescending = keys[keys.length - 1]!.descending;
  const orderOf = (column: (key: string) => string) =>
    [
      ...keys.map((key) => `${column(spec.sortable[key.field]!)} ${key.descending ? 'desc' : 'asc'}`),
      `${column(spec.id ?? 'id')} ${lastDescending ? 'desc' : 'asc'}`,
    ].join(', ');
  const values = [...where.params.values];
  const conditions = [...where.conditions];
  // The page's rows, in order, become one JSON array: json_agg keeps the order
  // of its sorted subquery. Columns are named as the read schema's fields.
  const items = (page: string) => `coalesce((select json_agg(page) from (${page}) page), '[]')::text as items`;
  if (spec.perOrganization) {
    const permission = spec.perOrganization.permission ? `'${spec.perOrganization.permission}'` : '';
    const reachable = `rowgate_hidden.current_organization_ids(${permission})`;
    const scope = where.organizationIds
      ? `array(select unnest(${reachable}) intersect select unnest($${values.push(where.organizationIds)}::uuid[]))`
      : reachable;
    const filter = ['organization_id = any((select ids from scope)::uuid[])', ...conditions].join(' and ');
    const limit = `$${values.push(query.limit)}`;
    const offset = `$${values.push((query.page - 1) * query.limit)}`;
    const count =
      spec.perOrganization.counter && !conditions.length
        ? `rowgate_hidden.organization_row_count('${spec.perOrganization.counter}', (select ids from scope)::uuid[])`
        : `(select count(*) from ${spec.from} where ${filter})`;
    const page = `select top.* from unnest((select ids from scope)::uuid[]) as organization(id)
      cross join lateral (
        select ${spec.columns} from ${spec.from}
        where ${['organization_id = organization.id', ...conditions].join(' and ')}
        order by ${orderOf((c) => c)} limit ${limit}::bigint + ${offset}::bigint
      ) top`;
    if (!where.metadataDocuments.length) {
      const text = `with scope as (select ${scope} as ids)
        select ${items(`${page} order by ${orderOf((c) => `top.${c}`)} limit ${limit} offset ${offset}`)}, ${count} as total_count`;
      return { text, values };
    }
    // A metadata filter: `@>` is not leakproof, so under RLS the GIN
    // index cannot serve it. rowgate_hidden.metadata_ids finds the matching rows
    // through it past RLS, within the subject's organizations, and the page is
    // those rows (`id = any(…)`, the primary key; the filter and the policies
    // still apply). Past its limit it answers null and the page is the
    // per-organization scan testing each row's metadata: one branch
    // or the other runs, the other's one-time filter stops it.
    const table = spec.from.replace(/^rowgate\./, '');
    const matched = `matched as (select rowgate_hidden.metadata_ids('${table}', $${values.push(JSON.stringify(where.metadataDocuments))}::jsonb) as ids)`;
    const byIds = ['id = any((select ids from matched)::uuid[])', filter].join(' and ');
    const fallback = `(select ids from matched) is null and ${filter}`;
    const pages = `select top.* from (
        (select ${spec.columns} from ${spec.from} where ${byIds} order by ${orderOf((c) => c)} limit ${limit} offset ${offset})
        union all
        (${page} where (select ids from matched) is null order by ${orderOf((c) => `top.${c}`)} limit ${limit} offset ${offset})
      ) top order by ${orderOf((c) => `top.${c}`)}`;
    const counts = `((select count(*) from ${spec.from} where ${byIds}) + (select count(*) from ${spec.from} where ${fallback}))`;
    return { text: `with scope as (select ${scope} as ids), ${matched} select ${items(pages)}, ${counts} as total_count`, values };
  }
  if (where.organizationIds) conditions.push(`organization_id = any($${values.push(where.organizationIds)}::uuid[])`);
  const filter = conditions.length ? `where ${conditions.join(' and ')}` : '';
  const limit = `$${values.push(query.limit)}`;
  const offset = `$${values.push((query.page - 1) * query.limit)}`;
  const page = `select ${spec.columns} from ${spec.from} ${filter} order by ${orderOf((c) => c)} limit ${limit} offset ${offset}`;
  return { text: `select ${items(page)}, (select count(*) from ${spec.from} ${filter}) as total_count`, values };
}

/** A list's sort keys with the id that breaks ties last, as SQL columns: the id goes the way the last key goes. */
function orderKeys(spec: ListSpec, sorting: readonly SortKey[] | undefined) {
  const keys = sorting?.length ? sorting : parseSorting(spec.defaultSort ?? '-created_at');
  const lastDescending = keys[keys.length - 1]!.descending;
  return {
    keys,
    columns: [
      ...keys.map((key) => ({ column: spec.sortable[key.field]!, descending: key.descending })),
      { column: spec.id ?? 'id', descending: lastDescending },
    ],
  };
}

type OrderColumn = { column: string; descending: boolean };

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

/** What a keyset page is asked for: the continuation, the size, the sorting, and whether to count. */
export interface KeysetRead {
  after?: string;
  limit: number;
  sorting?: readonly SortKey[];
  /** the server secret cursors are signed with */
  secret: string;
  countExact?: boolean;
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
  // the read schema's JSON of a row, written by the same composite-to-JSON as a numbered page's json_agg
  const selected = `(select row_to_json(c) from (select ${spec.columns}) c) as item, ${columns.map((c, i) => `${c.column} as s${i}`).join(', ')}`;
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
    const perOrganization = `select top.* from unnest((select ids from scope)::uuid[]) as organization(id)
      cross join lateral (
        select ${selected} from ${spec.from}
        where ${['organization_id = organization.id', ...conditions, ...later((c) => c)].join(' and ')}
        order by ${orderOf((c) => c)} limit ${fetched}
      ) top`;
    if (!where.metadataDocuments.length) {
      page = `${perOrganization} order by ${outer} limit ${fetched}`;
    } else {
      // as a numbered page does: the rows the metadata index finds, else the per-organization scan
      const table = spec.from.replace(/^rowgate\./, '');
      scope += `matched as (select rowgate_hidden.metadata_ids('${table}', ${add(JSON.stringify(where.metadataDocuments))}::jsonb) as ids), `;
      const byIds = ['id = any((select ids from matched)::uuid[])', filter].join(' and ');
      const fallback = `(select ids from matched) is null and ${filter}`;
      page = `select top.* from (
          (select ${selected} from ${spec.from} where ${[byIds, ...later((c) => c)].join(' and ')} order by ${orderOf((c) => c)} limit ${fetched})
          union all
          (${perOrganization} where (select ids from matched) is null order by ${outer} limit ${fetched})
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
  const text = `with ${scope}page_rows as materialized (select top.item, ${key} as key, row_number() over () as n from (${page}) top)
    select coalesce((select json_agg(item order by n) from page_rows where n <= ${limit}), '[]')::text as items,
      (select key from page_rows where n = ${limit} and exists (select from page_rows where n > ${limit})) as next_key
      ${read.countExact ? `, ${count} as total_count` : ''}`;
  return { text, values };
}

/**
 * Reads one keyset page of a list: the rows after `read.after` (a cursor this
 * server signed for the same sorting and filters, else a 422 at `query.after`),
 * in the list's order, and the cursor of the next page. Lists answer with it in
 * `2026-12-15`; anything that reads a whole list in chunks (exports) calls it
 * page after page with each `nextCursor`.
 */
export async function readPage(tx: Tx, spec: ListSpec, read: KeysetRead, where: Where = new Where()): Promise<KeysetPage> {
  const { keys, columns } = orderKeys(spec, read.sorting);
  const fingerprint = listFingerprint(spec.from, keys, where.conditions, where.params.values, where.organizationIds);
  const after = read.after === undefined ? null : openCursor(read.secret, fingerprint, read.after, columns.length);
  const statement = keysetStatement(spec, read, where, after);
  const row = await tx.one<{ items: string; next_key: (string | null)[] | null; total_count?: string | number }>(
    statement.text,
    statement.values,
  );
  const next = row!.next_key ? signCursor(read.secret, fingerprint, row!.next_key) : null;
  return new KeysetPage(row!.items, next, row!.total_count === undefined ? undefined : Number(row!.total_count));
}

/**
 * Runs a list: the filters of `where` and the sort of `query`; RLS decides the
 * rest. A numbered page in `2026-11-20`, a keyset page in `2026-12-15` (the
 * query the request's version parsed says which).
 */
export async function runList(tx: Tx, spec: ListSpec, query: ListQuery, where: Where = new Where()): Promise<ListPage | KeysetPage> {
  if (!isNumbered(query)) {
    const request = query[listRequest];
    if (!request) throw new Error(`${spec.from}: a keyset list read without its request (the pipeline sets it)`);
    return readPage(tx, spec, { ...query, secret: request.secret, countExact: request.countExact }, where);
  }
  const statement = listStatement(spec, query, where);
  const row = await tx.one<{ items: string; total_count: number }>(statement.text, statement.values);
  return new ListPage(row!.items, row!.total_count, query.limit);
}
