// The filters and sort keys of a list (SPEC §6): the filters as parameterised
// predicates (`Where`), `sorting` parsed into keys, and what a list declares
// (`ListSpec`). The statements they become are src/listing/list-statement.ts
// (numbered pages) and src/listing/keyset-statement.ts (keyset pages).

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
    /**
     * The table has an index `(created_at, id, organization_id) where id >= nil`: in the
     * default order, an export's chunk of a caller whose organizations hold a large share of
     * the table reads that index in order (`inOrderDecision`) instead of merging organizations.
     */
    inOrderIndex?: boolean;
  };
}

export interface ListStatement {
  /** one row: `items`, the page as a JSON array, and `total_count` */
  text: string;
  values: unknown[];
}

/** A list's sort keys with the id that breaks ties last, as SQL columns: the id goes the way the last key goes. */
export function orderKeys(spec: ListSpec, sorting: readonly SortKey[] | undefined) {
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
