// The SQL of a list (SPEC §6): the filters as parameterised predicates (`Where`),
// the page and its exact total in one statement, written as JSON by PostgreSQL
// (`listStatement`), and running it (`runList`). What a list accepts and how its
// answer is documented is src/listing/lists.ts.
import type { Tx } from '../db/pool.ts';
import { ListPage } from './list-page.ts';

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

export interface ListQuery {
  page: number;
  limit: number;
  /** the keys `sorting` was parsed into (src/listing/lists.ts); none: the list's default */
  sorting?: readonly SortKey[];
}

export interface ListStatement {
  /** one row: `items`, the page as a JSON array, and `total_count` */
  text: string;
  values: unknown[];
}

/** The SQL of one page of a list (exported for the benchmark's pgbench comparator). */
export function listStatement(spec: ListSpec, query: ListQuery, where: Where): ListStatement {
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

/** Runs a list: the filters of `where` and the sort of `query`; RLS decides the rest. */
export async function runList(tx: Tx, spec: ListSpec, query: ListQuery, where: Where = new Where()): Promise<ListPage> {
  const statement = listStatement(spec, query, where);
  const row = await tx.one<{ items: string; total_count: number }>(statement.text, statement.values);
  return new ListPage(row!.items, row!.total_count, query.limit);
}
