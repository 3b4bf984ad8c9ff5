// The answer of a list: REST sends its items as PostgreSQL wrote them.
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
 * What a keyset list needs of its request beside its query: the secret its
 * cursors are signed with, and whether the client asked for the total
 * (`Prefer: count=exact`). The pipeline puts it on the parsed query under this key.
 */
export const listRequest = Symbol('list request');

export interface ListRequest {
  secret: string;
  countExact: boolean;
}
