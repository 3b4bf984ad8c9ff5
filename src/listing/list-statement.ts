// The statements of a list and running them (SPEC §6, §23): a numbered page
// and its exact total in one statement, written as JSON by PostgreSQL
// (`listStatement`, `2026-11-20`), a keyset page (`readPage`, `2026-12-15`),
// and `runList`, which answers the one its request's version asks for. The
// filters are src/listing/list-filters.ts; what a list accepts and how its
// answer is documented is src/listing/lists.ts.
import type { Tx } from '../db/pool.ts';
import { ChunkText } from './chunk-text.ts';
import { KeysetChunk, KeysetPage, ListPage, type ListRequest, listRequest } from './list-page.ts';
import { listFingerprint, openCursor, signCursor } from './list-cursor.ts';
import { type ListSpec, type ListStatement, orderKeys, parseSorting, type SortKey, Where } from './list-filters.ts';
import { inOrderDecision, type KeysetRead, keysetStatement } from './keyset-statement.ts';

export { type ListSpec, type ListStatement, parseSorting, type SortKey, Where } from './list-filters.ts';
export type { KeysetRead } from './keyset-statement.ts';

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

/** What a list's handler passes on: the page its request's version asks for (the query schema of src/listing/lists.ts). */
export type ListQuery = NumberedQuery | KeysetQuery;

const isNumbered = (query: ListQuery): query is NumberedQuery => typeof (query as NumberedQuery).page === 'number';

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

/**
 * Reads one keyset page of a list: the rows after `read.after` (a cursor this
 * server signed for the same sorting and filters, else a 422 at `query.after`),
 * in the list's order, and the cursor of the next page. Lists answer with it in
 * `2026-12-15`; anything that reads a whole list in chunks (exports) calls it
 * page after page with each `nextCursor`.
 */
export async function readPage(tx: Tx, spec: ListSpec, read: KeysetRead, where: Where = new Where()): Promise<KeysetPage | KeysetChunk> {
  const { keys, columns } = orderKeys(spec, read.sorting);
  const fingerprint = listFingerprint(spec.from, keys, where.conditions, where.params.values, where.organizationIds);
  const after = read.after === undefined ? null : openCursor(read.secret, fingerprint, read.after, columns.length);
  const decision = inOrderDecision(spec, read, where);
  const inOrder = decision ? (await tx.one<{ in_order: boolean }>(decision.text, decision.values))!.in_order : read.lines?.inOrder;
  const statement = keysetStatement(spec, decision ? { ...read, lines: { ...read.lines!, inOrder } } : read, where, after);
  if (read.lines) {
    // the lines kept, then, when more follow, a row without a line; the last line kept carries the cursor's key.
    // Each line goes into the chunk's buffer as it is parsed; its row holds where it starts.
    const text = read.lines.text?.reset() ?? new ChunkText();
    const rows = await tx.rows<{ n: number; line: number | null; key: (string | null)[] | null }>(
      statement.text,
      statement.values,
      text.parsers(),
    );
    const { bytes, starts } = text.inPlaces(rows.flatMap((row) => (row.line === null ? [] : [{ n: row.n, start: row.line }])));
    // the cursor's key is the last one in the page's order (a frontier's row comes after the last line's);
    // the last row says whether more follow
    const lastOf = (some: typeof rows) =>
      some.reduce<(typeof rows)[number] | undefined>((latest, row) => (latest && latest.n > row.n ? latest : row), undefined);
    const key = lastOf(rows.filter((row) => row.key !== null))?.key ?? null;
    const last = lastOf(rows);
    const followed = last !== undefined && last.line === null;
    // the row after a chunk ended at its frontier (`KeysetLines.spread`) is numbered past a full chunk's
    const atFrontier = last !== undefined && Number(last.n) === read.limit + 2;
    return new KeysetChunk(bytes, starts, followed && key ? signCursor(read.secret, fingerprint, key) : null, atFrontier, inOrder);
  }
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
export async function runList(
  tx: Tx,
  spec: ListSpec,
  query: ListQuery,
  where: Where = new Where(),
): Promise<ListPage | KeysetPage | KeysetChunk> {
  if (!isNumbered(query)) {
    const request = query[listRequest];
    if (!request) throw new Error(`${spec.from}: a keyset list read without its request (the pipeline sets it)`);
    return readPage(tx, spec, { ...query, secret: request.secret, countExact: request.countExact, lines: request.lines }, where);
  }
  const statement = listStatement(spec, query, where);
  const row = await tx.one<{ items: string; total_count: number }>(statement.text, statement.values);
  return new ListPage(row!.items, row!.total_count, query.limit);
}
