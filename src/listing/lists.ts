// The list conventions of SPEC §6, written once for every list: what a list
// accepts (page/limit, sorting with an allow-list, repeated-parameter filters,
// metadata and time windows) and the {items, pagination} envelope it answers.
// The SQL they become is src/listing/list-statement.ts.
import { z } from 'zod';
import { doc, instant, METADATA_KEY } from '../core/fields.ts';
import { boundedText } from '../core/errors.ts';
import { keysetVariants } from '../core/versions.ts';
import { type ListSpec, parseSorting } from './list-statement.ts';

const MAX_LIMIT = 100;

/**
 * A whole number written as plain digits (no `1e1`, `0x5` or spaces), within
 * bounds. The pattern only lets a sign or a fraction through to the bounds'
 * and integer's own clearer messages; the document says what is accepted: an
 * integer within bounds, with its default.
 */
export function wholeNumber(min: number, max: number, fallback: number) {
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

/** The query schema of a list: pagination, sorting over the list's sortable fields, and its filters. */
export function listQuery<F extends z.ZodRawShape>(list: Pick<ListSpec, 'sortable' | 'defaultSort'>, filters: F) {
  const sortable = Object.keys(list.sortable);
  const defaultSort = list.defaultSort ?? '-created_at';
  const keys = new Set(sortable);
  // parsed here, once, into the typed keys the statement orders by
  const sorting = z.union([z.string(), z.array(z.string())]).transform((value, ctx) => {
    const parsed = parseSorting(value);
    const seen = new Set<string>();
    for (const { field, descending } of parsed) {
      if (!keys.has(field)) {
        ctx.addIssue({
          code: 'custom',
          message: `Unknown sort field ${JSON.stringify(descending ? `-${field}` : field)}; sortable: ${sortable.join(', ')} (prefix - for descending)`,
        });
      } else if (seen.has(field)) {
        // each field once: the sort is the same, and every distinct statement is prepared on its connections
        ctx.addIssue({ code: 'custom', message: `Sort field ${JSON.stringify(field)} given more than once` });
      }
      seen.add(field);
    }
    return parsed;
  });
  const sortingParameter = doc(
    sorting.optional(),
    `Sort order: comma-separated or repeated fields of ${sortable.join(', ')}; a leading - sorts descending. Default ${defaultSort}; ties break on id.`,
    defaultSort,
  );
  const limit = doc(wholeNumber(1, MAX_LIMIT, 10), `Items per page, 1 to ${MAX_LIMIT}. Out-of-range values are refused, never capped.`, 10);
  const numbered = queryObject(
    { page: doc(wholeNumber(1, 1_000_000, 1), 'Page number, from 1.', 1), limit, sorting: sortingParameter, ...filters },
    'metadata' in filters,
  );
  const keyset = queryObject(
    {
      after: doc(
        z.string().min(1).max(1000).optional(),
        'The next_cursor of the previous page, sent with the same sorting and filters: the page after it. Absent: the first page.',
        'WyIyMDI2LTEyLTE1IDEwOjAwOjAwKzAwIiwiM2YyYiJd.c2lnbmF0dXJl',
      ),
      limit,
      sorting: sortingParameter,
      ...filters,
    },
    'metadata' in filters,
  );
  // `2026-12-15`'s query of this list: `after` instead of `page` (src/core/versions.ts)
  keysetVariants.set(numbered, keyset);
  return numbered;
}

/** A list's query object: strict, or with `metadata[<key>]` parameters when the list filters on metadata. */
function queryObject<S extends z.ZodRawShape>(shape: S, withMetadata: boolean) {
  if (!withMetadata) return z.strictObject(shape);
  // `metadata[<key>]=<value>` parameters: their names are not known in advance
  return z
    .object(shape)
    .catchall(z.union([z.string().max(500), z.array(z.string().max(500)).min(1).max(100)]))
    .superRefine((query, ctx) => {
      const keys = Object.keys(query).filter((name) => !(name in shape));
      for (const name of keys) {
        const key = /^metadata\[(.*)\]$/.exec(name)?.[1];
        if (key === undefined) ctx.addIssue({ code: 'custom', path: [name], message: `Unknown field "${boundedText(name)}"` });
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

const paginationSchema = z
  .object({
    total_count: doc(z.number().int().min(0), 'How many items match, over every page.', 42),
    max_page: doc(z.number().int().min(0), 'The last page: ceil(total_count / limit), 0 when nothing matches.', 5),
  })
  .meta({ id: 'Pagination', description: 'Totals of a list.' });

export function listSchema<T extends z.ZodType>(item: T, name: string) {
  const numbered = z
    .object({
      items: doc(z.array(item), 'The items of this page.', []),
      pagination: paginationSchema,
    })
    .meta({ id: `${name}List`, description: `A page of ${name} items.` });
  // `2026-12-15`'s answer of this list: `next_cursor` instead of `pagination` (src/core/versions.ts)
  keysetVariants.set(
    numbered,
    z
      .object({
        items: doc(z.array(item), 'The items of this page.', []),
        next_cursor: doc(
          z.string().nullable(),
          'Send it as `after` (with the same sorting and filters) for the next page; null on the page holding the last item.',
          'WyIyMDI2LTEyLTE1IDEwOjAwOjAwKzAwIiwiM2YyYiJd.c2lnbmF0dXJl',
        ),
      })
      .meta({ id: `${name}List`, description: `A page of ${name} items.` }),
  );
  return numbered;
}

/**
 * Time windows (SPEC §18): `created_after` keeps `created_at >= T`, `created_before`
 * keeps `created_at < T`; RFC 3339 with a time zone (`Z` or an offset), so no
 * instant depends on the server's zone. Spread into a list's filters.
 */
export const createdWindow = {
  created_after: doc(
    instant().optional(),
    'Only items created at or after this instant (RFC 3339 with a time zone).',
    '2026-11-01T00:00:00Z',
  ),
  created_before: doc(
    instant().optional(),
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
