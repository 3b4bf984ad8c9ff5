// Schema pieces every resource uses. Every field carries a description and an
// example: the OpenAPI document is generated from these and a test checks it.
import { z } from 'zod';

/** Adds the description and example the published document needs. */
export function doc<T extends z.ZodType>(schema: T, description: string, example: unknown): T {
  return schema.meta({ description, example }) as T;
}

/** A UUID's text, any version (where no zod schema reads it: CLI options, OAuth2 parameters). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const uuid = (description: string, example = '3f2b1c9e-8a4d-4e5f-9b6a-1c2d3e4f5a6b') => doc(z.uuid(), description, example);

/** An RFC 3339 instant as z.iso.datetime takes it: up to its seconds, its fraction, its zone (`Z` or an offset) */
const INSTANT = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?)(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The instant written with `Z` when its offset is one PostgreSQL cannot read:
 * RFC 3339 allows offsets up to ±23:59, `timestamptz` up to ±15:59 ("time zone
 * displacement out of range"). The fraction is kept as sent (an offset is
 * whole minutes).
 */
function readableOffset(value: string): string {
  const parts = INSTANT.exec(value);
  if (!parts || parts[3] === 'Z' || Math.abs(Number(parts[3]!.slice(0, 3))) < 16) return value;
  const utc = new Date(Date.parse(`${parts[1]}${parts[3]}`)).toISOString();
  return `${utc.slice(0, 19)}${parts[2] === undefined ? '' : `.${parts[2]}`}Z`;
}

/**
 * An instant a client sends: RFC 3339 with a time zone, from year 1 on (year 0000
 * is valid RFC 3339 but no PostgreSQL timestamp: the database would refuse it),
 * with at most 9 fractional digits (PostgreSQL keeps microseconds, and refuses a
 * fraction of ~130 digits).
 */
export const instant = () =>
  z.iso
    .datetime({ offset: true })
    .refine((value) => !value.startsWith('0000') && withinYears(value), 'The instant must fall in the years 0001 to 9999 (UTC)')
    .refine((value) => (INSTANT.exec(value)?.[2]?.length ?? 0) <= 9, 'At most 9 fractional digits')
    .transform(readableOffset);

/** In UTC too: `0001-01-01T00:00:00+01:00` is in year 0, which no timestamp holds (a value of another form is the format's issue) */
function withinYears(value: string): boolean {
  if (!INSTANT.test(value)) return true;
  const year = new Date(Date.parse(value)).getUTCFullYear();
  return year >= 1 && year <= 9999;
}

export const timestamp = (description: string) => doc(z.iso.datetime({ offset: true }), description, '2026-11-21T09:30:00.123456+00:00');

export const nullableTimestamp = (description: string) =>
  doc(z.iso.datetime({ offset: true }).nullable(), description, '2026-12-21T09:30:00.123456+00:00');

export const timestamps = {
  created_at: timestamp('When it was created (RFC 3339, UTC).'),
  updated_at: timestamp('When it last changed (RFC 3339, UTC).'),
};

export const idParams = z.object({ id: uuid('The resource id.') });

/** An empty object for endpoints without a body, kept strict so extra fields are reported. */
export const scopeList = (description: string) =>
  doc(
    z
      .array(doc(z.string().min(1).max(100), 'A scope (SPEC §3).', 'products_read'))
      .min(1)
      .max(50),
    description,
    ['products_read', 'orders_read'],
  );

export const expiresIn = doc(
  z
    .number()
    .int()
    .min(60)
    .max(10 * 366 * 24 * 3600)
    .nullable()
    .optional(),
  'Lifetime in seconds from now (at least 60, at most ten years); omitted or null for a token that does not expire.',
  2592000,
);

export const tokenField = (prefix: string) =>
  doc(
    z.string(),
    'The token itself. Shown once, in this answer only: store it now.',
    `${prefix}Xb3kR9mQ2vLw7tYp4nZs8cVf1hJd6gUe0aKoPiMlNqS`,
  );

/** SPEC §18: the database checks the same rule (rowgate_hidden.metadata_is_valid). */
export const METADATA_KEY = /^[A-Za-z0-9_-]{1,40}$/;
const metadataValue = z.union([
  z.string().max(500),
  z
    .number()
    .int()
    .min(-(2 ** 53 - 1))
    .max(2 ** 53 - 1),
  z.boolean(),
]);
export const metadata = doc(
  z
    .record(z.string().regex(METADATA_KEY, 'Keys are 1 to 40 characters of A-Z, a-z, 0-9, _ and -'), metadataValue)
    .refine((m) => Object.keys(m).length <= 50, 'At most 50 keys'),
  'Your own key-value pairs: at most 50 keys of 1 to 40 characters of A-Z, a-z, 0-9, _ and -; values strings of at most 500 characters, integers or booleans. An update replaces the whole object.',
  { erp_id: 'INV-1001', priority: 2, vip: true },
);

/** a JSON column's parameter: the value as JSON text, or null when not sent */
export const jsonOrNull = (value: unknown) => (value === undefined ? null : JSON.stringify(value));
