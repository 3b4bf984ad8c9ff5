// The answer of a list: REST sends its items as PostgreSQL wrote them.
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
