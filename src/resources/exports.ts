// GET /v1/exports/{resource} (SPEC §24): every row of a list the caller may read, streamed
// as CSV or NDJSON without pages. Each export is its list: the same access, filters,
// sorting and items, read by the list's own handler in keyset chunks (SPEC §23), each
// chunk in a short transaction of its own, authenticated again; between chunks the
// export holds no connection and no snapshot. PostgreSQL writes each chunk's items as
// NDJSON lines, copied as they arrive into one of the export's two buffers
// (src/listing/chunk-text.ts), which an NDJSON export sends as they are. The next chunk
// is read into one buffer while the client takes the last one from the other, and none
// after it until the client has taken that one (the socket drained): at most one chunk
// waits in memory. A credential runs at
// most 2 at once across the fleet (a lease in the database, rowgate_hidden.claim_export);
// a server gives exports at most a quarter of its own pool, the resource that bound protects.
import type { Request, Response } from 'express';
import { z } from 'zod';
import { ApiError, toApiError } from '../core/errors.ts';
import { METADATA_KEY } from '../core/fields.ts';
import { keysetVariants } from '../core/versions.ts';
import { ChunkText } from '../listing/chunk-text.ts';
import { type KeysetChunk, listRequest } from '../listing/list-page.ts';
import type { Tx } from '../db/pool.ts';
import type { HandlerServer } from '../http/handler-server.ts';
import type { ApiRoute, Route } from '../http/route-declaration.ts';
import { CSV, drained, endWithoutLastChunk, exportFormat, exportPieces, NDJSON, written } from './export-writing.ts';

/** Rows of the first chunk: small, so the first byte goes out soon. */
export const EXPORT_FIRST_ROWS = 500;
/** Rows of the second chunk; each later one reads up to twice the rows of the one before, within the bounds below. */
export const EXPORT_CHUNK_ROWS = 10_000;
/** What a chunk reads of each organization, in shares of its limit (`KeysetLines.spread`): at first twice its share. */
const FIRST_SPREAD = 2;
/** Past this, each organization is read up to the whole limit anyway. */
const MAX_SPREAD = 1_000_000;
/** The most rows a chunk reads: a per-organization list scans up to this many keys of each organization. */
const EXPORT_MAX_ROWS = 50_000;
/** A chunk ends at the item that passes this many bytes: what one chunk holds in memory, whatever its rows weigh. */
export const EXPORT_CHUNK_BYTES = 4 * 1024 * 1024;
/** Exports one credential runs at once, across every server. */
export const EXPORTS_PER_CREDENTIAL = 2;
/** What a later chunk's buffer holds beyond the chunk's bytes: the line that passes them. */
const LINE_BYTES = 256 * 1024;
/** How long an export's slot outlives its last chunk, should its server die. */
const LEASE_SECONDS = 60;

/** The fields of a list's items, in the read schema's order: the CSV's header row. */
function itemFields(list: ApiRoute): string[] {
  const response = list.response as z.ZodObject | undefined;
  const items = response?.shape.items as z.ZodArray<z.ZodObject> | undefined;
  return Object.keys(items?.element.shape ?? {});
}

/** The list's query without pages: `page`, `limit` and `after` are refused (422 at query). */
function exportQuery(list: ApiRoute): z.ZodType {
  const keyset = (list.query && keysetVariants.get(list.query)) as z.ZodObject | undefined;
  if (!keyset) throw new Error(`${list.operationId}: not a list`);
  const { after: _after, limit: _limit, ...shape } = keyset.shape;
  const withMetadata = 'metadata' in shape;
  return z
    .object(shape)
    .catchall(z.union([z.string().max(500), z.array(z.string().max(500)).min(1).max(100)]))
    .superRefine((query, ctx) => {
      for (const name of Object.keys(query).filter((key) => !(key in shape))) {
        const key = /^metadata\[(.*)\]$/.exec(name)?.[1];
        if (['page', 'limit', 'after'].includes(name))
          ctx.addIssue({ code: 'custom', path: [name], message: `An export streams every row: no ${name}` });
        else if (!withMetadata || key === undefined) ctx.addIssue({ code: 'custom', path: [name], message: 'Unknown field' });
        else if (!METADATA_KEY.test(key))
          ctx.addIssue({ code: 'custom', path: [name], message: 'A metadata key is 1 to 40 characters of A-Z, a-z, 0-9, _ and -' });
      }
    });
}

/** Exports running in this process, by pool: at most a quarter of it. */
const running = new WeakMap<object, number>();

interface ExportContext {
  tx: Tx;
  secret: string;
  query: Record<string, unknown>;
  req: Request;
  res: Response;
  server: HandlerServer;
  /** the request's version: an item is rendered as the list renders it in that version (events' data, SPEC §23) */
  version: string;
}

/** The export routes: one for each list route that declares `exportedAs`, made from it. */
export function exportRoutes(routes: readonly Route[]): Route[] {
  const lists = routes.filter((r): r is ApiRoute => 'exportedAs' in r && r.exportedAs !== undefined && 'access' in r && r.access !== null);
  return lists.map((list) => {
    const resource = list.exportedAs!;
    const fields = itemFields(list);
    return {
      method: 'get',
      effect: 'reads',
      path: `/v1/exports/${resource}`,
      operationId: `exports:${resource}`,
      summary: `Export ${resource}`,
      description: `Every item of \`GET ${list.path}\` the caller may read (its scopes, permission filter, filters and sorting), without pages: \`text/csv\` (a header row; nested objects as JSON in their cell; a cell beginning with =, +, -, @, a tab or a carriage return gets a leading ') or, with \`Accept: application/x-ndjson\`, one item a line exactly as the list renders it. \`page\`, \`limit\` and \`after\` are refused (422). At most ${EXPORTS_PER_CREDENTIAL} exports run at once per credential, and a quarter of a server's connections in all (429). An error after the first byte ends the answer without its final chunk (NDJSON: a last line \`{"error": …}\`).`,
      tag: 'exports',
      access: list.access,
      ...(list.explanation ? { explanation: list.explanation } : {}),
      query: exportQuery(list),
      status: 200,
      responseType: 'export',
      errors: [406, 429],
      handler: (context: ExportContext) => streamExport(list, fields, context),
    } as unknown as Route;
  });
}

async function streamExport(list: ApiRoute, fields: string[], context: ExportContext): Promise<void> {
  const format = exportFormat(context.req.headers.accept);
  if (!format) throw new ApiError(406, 'NotAcceptable', `This endpoint answers in ${CSV} or ${NDJSON}`);
  const pool = context.res.app ?? context.res;
  const inUse = running.get(pool) ?? 0;
  if (inUse >= Math.max(1, Math.floor(context.server.poolSize / 4))) {
    throw new ApiError(429, 'TooManyRequests', 'Too many exports are running on this server; try again shortly', { 'Retry-After': '1' });
  }
  running.set(pool, inUse + 1);
  // the slot is claimed and committed at once, so that whatever ends this export (even before the
  // request's own transaction commits) finds it to give back
  const lease = await context.server
    .inNewTransaction((tx) =>
      tx.one<{ id: string }>('select rowgate_hidden.claim_export($1, $2) as id', [EXPORTS_PER_CREDENTIAL, LEASE_SECONDS]),
    )
    .catch((error: unknown) => {
      running.set(pool, (running.get(pool) ?? 1) - 1);
      throw error;
    });
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    running.set(pool, (running.get(pool) ?? 1) - 1);
    await context.server.inNewTransaction((tx) => tx.one('select rowgate_hidden.end_export($1)', [lease!.id])).catch(() => {});
  };
  // Later chunks' two buffers, taken in turns, made when first needed: a chunk is read into one while the
  // one before is written from the other, and into a buffer only once every byte written from it has gone
  // to the socket. The first chunk, small, has a small buffer of its own.
  const buffers: ChunkText[] = [];
  let reads = 0;
  const read = (tx: Tx, after: string | undefined, limit: number, spread: number, inOrder?: boolean) => {
    const query = { ...context.query, limit, ...(after ? { after } : {}) } as Record<string | symbol, unknown>;
    // the first chunk, small, looks its rows up as a page does; later ones carry the rows they scan
    let text: ChunkText | undefined;
    if (after !== undefined) {
      text = buffers[reads % 2] ??= new ChunkText(EXPORT_CHUNK_BYTES + LINE_BYTES);
      reads++;
    }
    const lines = { bytes: EXPORT_CHUNK_BYTES, carry: after !== undefined, spread, inOrder, text };
    query[listRequest] = { secret: context.secret, countExact: false, lines };
    // the version is named: a spread copies the context's own fields, not its getters
    return list.handler({ ...context, version: context.version, tx, query } as never) as Promise<KeysetChunk>;
  };
  let first: KeysetChunk;
  try {
    first = await read(context.tx, undefined, EXPORT_FIRST_ROWS, FIRST_SPREAD);
  } catch (error) {
    await release();
    throw error;
  }
  const { res } = context;
  res.status(200);
  res.setHeader('Content-Type', format === CSV ? 'text/csv; charset=utf-8' : `${NDJSON}; charset=utf-8`);
  res.setHeader('Content-Disposition', `attachment; filename="${list.operationId.split(':')[0]}.${format === CSV ? 'csv' : 'ndjson'}"`);
  /**
   * Writes a chunk a piece at a time, each once the client has taken what the socket held (so
   * that no more than a piece waits in the server's memory beside the chunk itself).
   */
  const write = async (chunk: KeysetChunk) => {
    let last: string | Buffer | undefined;
    for (const piece of exportPieces(format, fields, chunk, false)) {
      if (res.destroyed) return;
      if (last !== undefined && !res.write(last)) await drained(res);
      last = piece;
    }
    if (last !== undefined && !res.destroyed) await written(res, last);
  };
  // the first chunk (and the CSV's header) goes out at once, with the answer's head
  for (const piece of exportPieces(format, fields, first, true)) res.write(piece);
  // the rest after this transaction commits, each chunk in its own
  const chunk = (after: string, limit: number, spread: number, inOrder: boolean | undefined) => {
    // the lease's renewal and the chunk's statement leave together (one round trip)
    const page = context.server.inNewTransaction(async (tx) => {
      const [, chunkRead] = await Promise.all([
        tx.one('select rowgate_hidden.renew_export($1, $2)', [lease!.id, LEASE_SECONDS]),
        read(tx, after, limit, spread, inOrder),
      ]);
      return chunkRead;
    });
    page.catch(() => {}); // awaited in turn, possibly after the client took the chunk before it
    return page;
  };
  void (async () => {
    try {
      let limit = EXPORT_CHUNK_ROWS;
      let spread = nextSpread(FIRST_SPREAD, first, EXPORT_FIRST_ROWS);
      let next = first.nextCursor === null ? null : chunk(first.nextCursor, limit, spread, undefined);
      while (next) {
        const page = await next;
        if (res.destroyed) return;
        // the next chunk is read while the client takes this one
        spread = nextSpread(spread, page, limit);
        limit = nextLimit(limit, page);
        next = page.nextCursor === null ? null : chunk(page.nextCursor, limit, spread, page.inOrder);
        await write(page);
        if (res.destroyed) return;
      }
      // the slot is given back before the last byte, so the client's next export finds it free
      await release();
      res.end();
    } catch (error) {
      // never a file that looks complete: NDJSON says why on a last line, then the connection ends
      // without the chunked answer's terminating chunk
      if (!res.destroyed) {
        if (format === NDJSON) {
          const failure = toApiError(error, context.server.statementTimeoutMs);
          res.write(`${JSON.stringify({ error: failure.error, detail: failure.detail })}\n`);
        }
        endWithoutLastChunk(res);
      }
    } finally {
      await release();
    }
  })();
}

/**
 * The rows the chunk after `chunk` reads: twice the last chunk's limit, at most what
 * fills a chunk's bytes at the last chunk's bytes a line (so few rows are read
 * past the bytes only to be dropped), and within EXPORT_MAX_ROWS.
 */
function nextLimit(limit: number, chunk: KeysetChunk): number {
  const fits = chunk.count ? Math.ceil(EXPORT_CHUNK_BYTES / (chunk.text.length / chunk.count)) + 1 : EXPORT_MAX_ROWS;
  return Math.max(1, Math.min(2 * limit, fits, EXPORT_MAX_ROWS));
}

/**
 * The spread (`KeysetLines.spread`) of the chunk after `chunk`, read with `spread` for `limit`
 * rows: four times wider when it ended at its frontier with fewer than half its rows (rows
 * bunched in few organizations), half as wide, down to the first, when it filled up.
 */
function nextSpread(spread: number, chunk: KeysetChunk, limit: number): number {
  if (chunk.atFrontier && chunk.count < limit / 2) return Math.min(spread * 4, MAX_SPREAD);
  return chunk.atFrontier ? spread : Math.max(spread / 2, FIRST_SPREAD);
}
