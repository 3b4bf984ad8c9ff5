// The list conventions of SPEC §6, written once for every list: page/limit,
// sorting with an allow-list and an `id` tie-break, repeated-parameter filters,
// and the {items, pagination} envelope.
import { z } from 'zod';
import type { Tx } from './database.ts';
import { doc } from './schemas.ts';

export const MAX_LIMIT = 100;

/** A query parameter that may repeat: `?status=a&status=b`. */
export function multi<T extends z.ZodType>(item: T, description: string, example: unknown) {
  return doc(z.union([item, z.array(item).min(1).max(100)]), description, example).optional();
}

export const asArray = <T>(v: T | T[] | undefined): T[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

/** The query schema of a list: pagination, sorting over `sortable`, and the list's filters. */
export function listQuery<F extends z.ZodRawShape>(sortable: readonly string[], filters: F, defaultSort = '-created_at') {
  const keys = new Set(sortable);
  const sorting = z
    .union([z.string(), z.array(z.string())])
    .superRefine((value, ctx) => {
      for (const key of sortKeys(value)) {
        if (!keys.has(key.replace(/^-/, ''))) {
          ctx.addIssue({
            code: 'custom',
            message: `Unknown sort field ${JSON.stringify(key)}; sortable: ${sortable.join(', ')} (prefix - for descending)`,
          });
        }
      }
    });
  return z.strictObject({
    page: doc(z.coerce.number().int().min(1).max(1_000_000).default(1), 'Page number, from 1.', 1),
    limit: doc(
      z.coerce.number().int().min(1).max(MAX_LIMIT).default(10),
      `Items per page, 1 to ${MAX_LIMIT}. Out-of-range values are refused, never capped.`,
      10,
    ),
    sorting: doc(
      sorting.optional(),
      `Sort order: comma-separated or repeated fields of ${sortable.join(', ')}; a leading - sorts descending. Default ${defaultSort}; ties break on id.`,
      defaultSort,
    ),
    ...filters,
  });
}

function sortKeys(value: string | string[] | undefined): string[] {
  return (asArray(value) ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

export const paginationSchema = z
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
export class Params {
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

  /** case-insensitive substring search over some columns */
  search(columns: string[], text: string | undefined) {
    if (text !== undefined && text !== '') {
      const pattern = this.params.add(`%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      this.conditions.push(`(${columns.map((c) => `${c} ilike ${pattern}`).join(' or ')})`);
    }
    return this;
  }
}

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
}

export interface ListQuery {
  page: number;
  limit: number;
  sorting?: string | string[];
}

export interface ListPage<T> {
  items: T[];
  pagination: { total_count: number; max_page: number };
}

/** Runs a list: `conditions` are SQL predicates over `params` (RLS decides the rest). */
export async function runList<T extends object>(
  tx: Tx,
  spec: ListSpec,
  query: ListQuery,
  where: Where = new Where(),
): Promise<ListPage<T>> {
  const { conditions, params } = where;
  const keys = sortKeys(query.sorting);
  if (!keys.length) keys.push(spec.defaultSort ?? '-created_at');
  const order = keys.map((key) => {
    const descending = key.startsWith('-');
    return `${spec.sortable[key.replace(/^-/, '')]} ${descending ? 'desc' : 'asc'}`;
  });
  const lastDescending = keys[keys.length - 1]!.startsWith('-');
  order.push(`${spec.id ?? 'id'} ${lastDescending ? 'desc' : 'asc'}`);
  const filter = conditions.length ? `where ${conditions.join(' and ')}` : '';
  const values = [...params.values];
  const limit = `$${values.push(query.limit)}`;
  const offset = `$${values.push((query.page - 1) * query.limit)}`;
  const rows = await tx.rows<T & { _total_count: number }>(
    `select ${spec.columns}, (select count(*) from ${spec.from} ${filter}) as _total_count
     from ${spec.from} ${filter} order by ${order.join(', ')} limit ${limit} offset ${offset}`,
    values,
  );
  let total: number;
  if (rows.length) {
    total = rows[0]!._total_count;
  } else {
    // past the last page (or nothing matches): the true total still
    const counted = await tx.one<{ n: number }>(`select count(*) as n from ${spec.from} ${filter}`, params.values);
    total = counted?.n ?? 0;
  }
  const items = rows.map(({ _total_count, ...item }) => item as unknown as T);
  return { items, pagination: { total_count: total, max_page: Math.ceil(total / query.limit) } };
}
