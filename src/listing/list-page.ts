// The answer of a list: REST sends its items as PostgreSQL wrote them.
import { ChunkText } from './chunk-text.ts';
/**
 * A page of a list as PostgreSQL wrote it: the items already JSON (`json_agg` of
 * the page's rows, so the server neither parses 50 rows nor serialises them
 * again), and the totals. `toJSON` for anything that serialises it as a value.
 */
export class ListPage {
  readonly itemsJson: string;
  readonly pagination: { total_count: number; max_page: number };
  readonly #limit: number;
  constructor(itemsJson: string, totalCount: number, limit: number) {
    this.itemsJson = itemsJson;
    this.pagination = { total_count: totalCount, max_page: Math.ceil(totalCount / limit) };
    this.#limit = limit;
  }

  /** the same page with its items written anew (events' data in the request's version) */
  withItems(itemsJson: string): ListPage {
    return new ListPage(itemsJson, this.pagination.total_count, this.#limit);
  }

  /** the response body */
  json(): string {
    return `{"items":${this.itemsJson},"pagination":${JSON.stringify(this.pagination)}}`;
  }

  toJSON() {
    return { items: JSON.parse(this.itemsJson) as unknown[], pagination: this.pagination };
  }
}

/**
 * A keyset page (SPEC §23, `2026-12-15`): the items as PostgreSQL wrote them,
 * the cursor that continues after them (null on the page holding the last
 * item), and the total only when it was asked for (`Prefer: count=exact`).
 */
export class KeysetPage {
  readonly itemsJson: string;
  readonly nextCursor: string | null;
  readonly totalCount: number | undefined;
  constructor(itemsJson: string, nextCursor: string | null, totalCount?: number) {
    this.itemsJson = itemsJson;
    this.nextCursor = nextCursor;
    this.totalCount = totalCount;
  }

  /** the same page with its items written anew (events' data in the request's version) */
  withItems(itemsJson: string): KeysetPage {
    return new KeysetPage(itemsJson, this.nextCursor, this.totalCount);
  }

  /** the response body */
  json(): string {
    return `{"items":${this.itemsJson},"next_cursor":${JSON.stringify(this.nextCursor)}}`;
  }

  toJSON() {
    return { items: JSON.parse(this.itemsJson) as unknown[], next_cursor: this.nextCursor };
  }
}

/**
 * A keyset page read as an export's chunk (`KeysetLines`): its items as
 * PostgreSQL wrote them, each followed by a newline, in one buffer (`ChunkText`,
 * outside the heap), and the cursor that continues after them (null on the
 * chunk holding the last item).
 */
export class KeysetChunk {
  /** the items' lines, each ending in a newline: NDJSON as it is sent */
  readonly text: Buffer;
  /** where each item's line starts in `text`, in the list's order */
  readonly starts: readonly number[];
  readonly nextCursor: string | null;
  /** the chunk ended at its frontier (`KeysetLines.spread`), not at its rows or bytes */
  readonly atFrontier: boolean;
  /** how the chunk was read, once decided (`KeysetLines.inOrder`): the export's next chunk reads the same way */
  readonly inOrder: boolean | undefined;
  constructor(text: Buffer, starts: readonly number[], nextCursor: string | null, atFrontier = false, inOrder?: boolean) {
    this.text = text;
    this.starts = starts;
    this.nextCursor = nextCursor;
    this.atFrontier = atFrontier;
    this.inOrder = inOrder;
  }

  /** how many items the chunk holds */
  get count(): number {
    return this.starts.length;
  }

  /** the i-th item's line, without its newline */
  line(i: number): string {
    const end = i + 1 < this.starts.length ? this.starts[i + 1]! : this.text.length;
    return this.text.toString('utf8', this.starts[i], end - 1);
  }

  /** the same chunk with each item written anew (events' data in the request's version), in a buffer of its own */
  mapItems<T>(render: (item: T) => T): KeysetChunk {
    const text = new ChunkText();
    const starts = this.starts.map((_, i) => text.append(JSON.stringify(render(JSON.parse(this.line(i)) as T))));
    return new KeysetChunk(text.bytes(), starts, this.nextCursor, this.atFrontier, this.inOrder);
  }
}

/**
 * What a keyset list needs of its request beside its query: the secret its
 * cursors are signed with, and whether the client asked for the total
 * (`Prefer: count=exact`). The pipeline puts it on the parsed query under this key.
 */
export const listRequest = Symbol('list request');

export interface ListRequest {
  secret: string;
  countExact: boolean;
  /** an export reads its chunks as lines */
  lines?: KeysetLines;
}

/**
 * A keyset page read as an export's chunk (SPEC §24, `KeysetChunk`): each item
 * as PostgreSQL writes it (so the server writes it without parsing it), the
 * chunk ending at the item that passes `bytes` (at least one item, at most `limit`).
 * With `carry`, each row a per-organization list scans carries its item's
 * columns from the scan that found it: a large chunk keeps most rows it scans.
 * Without, the rows kept are looked up again by id, as a page of the list does:
 * a small chunk over many organizations keeps few of them.
 */
export interface KeysetLines {
  bytes: number;
  carry: boolean;
  /**
   * In the default order, a per-organization chunk reads from each organization `spread` times
   * its share of the limit (never more than the limit), not the limit: a chunk over many
   * organizations reads about the rows it keeps. It keeps the rows up to its frontier, the
   * first in order of the last rows of the organizations that have more, and may end there.
   */
  spread?: number;
  /**
   * The chunk reads the table's in-order index (`inOrderDecision`): undefined, the chunk decides
   * (an export's first chunk after its first page); then what the chunk before decided.
   */
  inOrder?: boolean;
  /** where the chunk's lines are written (an export reuses its buffers); a buffer of its own when absent */
  text?: ChunkText;
}
