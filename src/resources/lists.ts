// The list conventions of SPEC §6, written once for every list: page/limit,
// sorting with an allow-list and an `id` tie-break, repeated-parameter filters,
// and the {items, pagination} envelope.
import { z } from 'zod';
import type { Tx } from '../db/pool.ts';
import { doc, METADATA_KEY } from './fields.ts';

const MAX_LIMIT = 100;

/**
 * A whole number written as plain digits (no `1e1`, `0x5` or spaces), within
 * bounds. The pattern only lets a sign or a fraction through to the bounds'
 * and integer's own clearer messages; the document says what is accepted: an
 * integer within bounds, with its default.
 */
function wholeNumber(min: number, max: number, fallback: number) {
  return z
    .string()
    .regex(/^-?[0-9]{1,9}(\.[0-9]+)?$/, 'Expected a whole number written in digits')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .default(fallback)
    .meta({
      override: ({ jsonSchema }) => {
        delete jsonSchema.pattern;
        Object.assign(jsonSchema, { type: 'integer', minimum: min, maximum: max, default: fallback });
      },
    });
}

/** A query parameter that may repeat: `?status=a&status=b`. */
export function multi<T extends z.ZodType>(item: T, description: string, example: unknown) {
  return doc(z.union([item, z.array(item).min(1).max(100)]), description, example).optional();
}

const asArray = <T>(v: T | T[] | undefined): T[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

/** The query schema of a list: pagination, sorting over the list's sortable fields, and its filters. */
export function listQuery<F extends z.ZodRawShape>(list: Pick<ListSpec, 'sortable' | 'defaultSort'>, filters: F) {
  const sortable = Object.keys(list.sortable);
  const defaultSort = list.defaultSort ?? '-created_at';
  const keys = new Set(sortable);
  const sorting = z.union([z.string(), z.array(z.string())]).superRefine((value, ctx) => {
    const seen = new Set<string>();
    for (const key of sortKeys(value)) {
      const field = key.replace(/^-/, '');
      if (!keys.has(field)) {
        ctx.addIssue({
          code: 'custom',
          message: `Unknown sort field ${JSON.stringify(key)}; sortable: ${sortable.join(', ')} (prefix - for descending)`,
        });
      } else if (seen.has(field)) {
        // each field once: the sort is the same, and every distinct statement is prepared on its connections
        ctx.addIssue({ code: 'custom', message: `Sort field ${JSON.stringify(field)} given more than once` });
      }
      seen.add(field);
    }
  });
  const shape = {
    page: doc(wholeNumber(1, 1_000_000, 1), 'Page number, from 1.', 1),
    limit: doc(wholeNumber(1, MAX_LIMIT, 10), `Items per page, 1 to ${MAX_LIMIT}. Out-of-range values are refused, never capped.`, 10),
    sorting: doc(
      sorting.optional(),
      `Sort order: comma-separated or repeated fields of ${sortable.join(', ')}; a leading - sorts descending. Default ${defaultSort}; ties break on id.`,
      defaultSort,
    ),
    ...filters,
  };
  if (!('metadata' in filters)) return z.strictObject(shape);
  // `metadata[<key>]=<value>` parameters: their names are not known in advance
  return z
    .object(shape)
    .catchall(z.union([z.string().max(500), z.array(z.string().max(500)).min(1).max(100)]))
    .superRefine((query, ctx) => {
      const keys = Object.keys(query).filter((name) => !(name in shape));
      for (const name of keys) {
        const key = /^metadata\[(.*)\]$/.exec(name)?.[1];
        if (key === undefined) ctx.addIssue({ code: 'custom', path: [name], message: `Unknown field "${name}"` });
        else if (!METADATA_KEY.test(key))
          ctx.addIssue({ code: 'custom', path: [name], message: 'A metadata key is 1 to 40 characters of A-Z, a-z, 0-9, _ and -' });
      }
      if (keys.length > MAX_METADATA_FILTERS)
        ctx.addIssue({ code: 'custom', path: [keys[MAX_METADATA_FILTERS]!], message: `At most ${MAX_METADATA_FILTERS} metadata keys` });
    });
}

const MAX_METADATA_FILTERS = 20;

/**
 * The documented `metadata` filter of a list (SPEC §18): sent as
 * `metadata[<key>]=<value>`; a repeated key matches any of its values, several
 * keys all of them. Naming it among a list's filters turns the parameters on.
 */
export const metadataFilter = z
  .record(z.string().regex(METADATA_KEY), z.union([z.string(), z.array(z.string())]))
  .optional()
  .meta({
    description:
      'Only items whose metadata holds these values, sent as `metadata[<key>]=<value>` (deepObject): repeating a key matches any of its values, several keys must all match. A value also matches the integer or boolean it spells (`metadata[priority]=2`, `metadata[vip]=true`).',
    example: { erp_id: 'INV-1001' },
    param: { style: 'deepObject', explode: true },
  });

/** The JSON values a query string value stands for: itself, and the integer or boolean it spells. */
function metadataValues(value: string): unknown[] {
  const values: unknown[] = [value];
  if (/^-?[0-9]{1,16}$/.test(value) && Math.abs(Number(value)) <= Number.MAX_SAFE_INTEGER) values.push(Number(value));
  if (value === 'true' || value === 'false') values.push(value === 'true');
  return values;
}

function sortKeys(value: string | string[] | undefined): string[] {
  return (asArray(value) ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

const paginationSchema = z
  .object({
    total_count: doc(z.number().int().min(0), 'How many items match, over every page.', 42),
    max_page: doc(z.number().int().min(0), 'The last page: ceil(total_count / limit), 0 when nothing matches.', 5),
  })
  .meta({ id: 'Pagination', description: 'Totals of a list.' });

export function listSchema<T extends z.ZodType>(item: T, name: string) {
  return z
    .object({
      items: doc(z.array(item), 'The items of this page.', []),
      pagination: paginationSchema,
    })
    .meta({ id: `${name}List`, description: `A page of ${name} items.` });
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

  /** the `metadata[<key>]` parameters of a parsed query: each key any of its values, all keys (GIN, `@>`) */
  metadata(query: Record<string, unknown>, column = 'metadata') {
    for (const [name, given] of Object.entries(query)) {
      const key = /^metadata\[(.*)\]$/.exec(name)?.[1];
      if (key === undefined) continue;
      const documents = (asArray(given as string | string[]) ?? []).flatMap((v) =>
        metadataValues(v).map((x) => JSON.stringify({ [key]: x })),
      );
      this.conditions.push(`${column} @> any(${this.params.add(documents)}::jsonb[])`);
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

/**
 * Time windows (SPEC §18): `created_after` keeps `created_at >= T`, `created_before`
 * keeps `created_at < T`; RFC 3339 with a time zone (`Z` or an offset), so no
 * instant depends on the server's zone. Spread into a list's filters.
 */
export const createdWindow = {
  created_after: doc(
    z.iso.datetime({ offset: true }).optional(),
    'Only items created at or after this instant (RFC 3339 with a time zone).',
    '2026-11-01T00:00:00Z',
  ),
  created_before: doc(
    z.iso.datetime({ offset: true }).optional(),
    'Only items created before this instant (RFC 3339 with a time zone).',
    '2026-12-01T00:00:00+01:00',
  ),
};

/** `organization_id` narrowing of lists that User subjects call (SPEC §6). */
export const organizationFilter = multi(
  z.uuid(),
  'Only these organizations (repeatable). An organization out of reach yields no rows, not an error.',
  '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b',
);

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
  sorting?: string | string[];
}

/**
 * A page of a list as PostgreSQL wrote it: the items already JSON (`json_agg` of
 * the page's rows, so the server neither parses 50 rows nor serialises them
 * again), and the totals. `toJSON` for anything that serialises it as a value.
 */
export class ListPage {
  readonly itemsJson: string;
  readonly pagination: { total_count: number; max_page: number };
  constructor(itemsJson: string, totalCount: number, limit: number) {
    this.itemsJson = itemsJson;
    this.pagination = { total_count: totalCount, max_page: Math.ceil(totalCount / limit) };
  }

  /** the response body */
  json(): string {
    return `{"items":${this.itemsJson},"pagination":${JSON.stringify(this.pagination)}}`;
  }

  toJSON() {
    return { items: JSON.parse(this.itemsJson) as unknown[], pagination: this.pagination };
  }
}

export interface ListStatement {
  /** one row: `items`, the page as a JSON array, and `total_count` */
  text: string;
  values: unknown[];
}

/** The SQL of one page of a list (exported for the benchmark's pgbench comparator). */
export function listStatement(spec: ListSpec, query: ListQuery, where: Where): ListStatement {
  const keys = sortKeys(query.sorting);
  if (!keys.length) keys.push(spec.defaultSort ?? '-created_at');
  const lastDescending = keys[keys.length - 1]!.startsWith('-');
  const orderOf = (column: (key: string) => string) =>
    [
      ...keys.map((key) => `${column(spec.sortable[key.replace(/^-/, '')]!)} ${key.startsWith('-') ? 'desc' : 'asc'}`),
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
      ) top
      order by ${orderOf((c) => `top.${c}`)} limit ${limit} offset ${offset}`;
    return { text: `with scope as (select ${scope} as ids) select ${items(page)}, ${count} as total_count`, values };
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
