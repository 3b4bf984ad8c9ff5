// The API versions (SPEC §23) and, once each, the changes they make. A version
// is a date; a change says what it does to request validation, to answers, to
// the OpenAPI document (which follows from the schemas it swaps), to webhook
// bodies, and its changelog sentence. The route table declares the first
// version's shapes; a request in a later version sees them through the changes
// of every version up to its own, in order. Nothing else decides shapes by
// version: handlers are written once.
import { type ZodType, z } from 'zod';

/**
 * Each list's `2026-12-15` schemas, keyed by its `2026-11-20` ones: the keyset
 * query (`after` instead of `page`) and answer (`next_cursor` instead of
 * `pagination`). The list kit (src/listing/lists.ts) fills it as lists are
 * declared; `keysetLists` below is the change that uses it.
 */
export const keysetVariants = new WeakMap<ZodType, ZodType>();

/** One change of the API, declared once. */
export interface VersionChange {
  /** the changelog sentence (`GET /v1/versions`) */
  changelog: string;
  /** request validation: a route's query schema in this version (undefined: unchanged) */
  query?(schema: ZodType): ZodType | undefined;
  /** request validation: a route's body schema in this version (undefined: unchanged) */
  body?(schema: ZodType): ZodType | undefined;
  /** answers and the document: a route's success schema in this version (undefined: unchanged) */
  response?(schema: ZodType): ZodType | undefined;
  /** webhook bodies and events read: an event's `data`, stored once, as this version renders its resource */
  eventData?(type: string, data: Record<string, unknown>): Record<string, unknown>;
  /** the document: header fields of the routes whose query this change reshapes, sent (`request`) and answered on success */
  headers?: VersionHeaders;
}

/** Header fields a version adds to a route, for its OpenAPI document. */
export interface VersionHeaders {
  request?: Record<string, ZodType>;
  answer?: Record<string, ZodType>;
}

export interface ApiVersion {
  /** `YYYY-MM-DD` */
  version: string;
  /** RFC 3339 */
  released_at: string;
  changes: readonly VersionChange[];
  /**
   * When the version stops being served (RFC 3339): its answers carry
   * `Deprecation` (RFC 9745) from its successor's release and `Sunset`
   * (RFC 8594). A version is kept at least 24 months after its successor ships.
   */
  sunset_at?: string;
}

/** `2026-12-15`: keyset lists. */
export const keysetLists: VersionChange = {
  changelog:
    'Lists answer {items, next_cursor} and continue with after=<cursor> instead of page; Prefer: count=exact adds Rowgate-Total-Count.',
  query: (schema) => keysetVariants.get(schema),
  response: (schema) => keysetVariants.get(schema),
  headers: {
    request: {
      Prefer: z.literal('count=exact').optional().meta({
        description:
          '`count=exact`: the answer counts every item the filters match, in `Rowgate-Total-Count`. Without it nothing is counted.',
        example: 'count=exact',
      }),
    },
    answer: {
      'Rowgate-Total-Count': z
        .string()
        .optional()
        .meta({
          description: 'With `Prefer: count=exact`: how many items the filters match, over every page.',
          example: '1234',
          header: { id: 'Rowgate-Total-Count' },
        }),
      'Preference-Applied': z
        .string()
        .optional()
        .meta({
          description: 'With `Prefer: count=exact`: `count=exact`, the preference this answer applied (RFC 7240).',
          example: 'count=exact',
          header: { id: 'Preference-Applied' },
        }),
    },
  },
};

/** The versions of the API, oldest first. */
export const VERSIONS: readonly ApiVersion[] = [
  { version: '2026-11-20', released_at: '2026-11-20T00:00:00Z', changes: [] },
  { version: '2026-12-15', released_at: '2026-12-15T00:00:00Z', changes: [keysetLists] },
];

/** The first version: what existed before versions did is pinned to it. */
export const FIRST_VERSION = VERSIONS[0]!.version;

/** A set of versions, oldest first, and what each makes of the first version's shapes. */
export class ApiVersions {
  readonly list: readonly ApiVersion[];
  readonly #byName: ReadonlyMap<string, number>;
  constructor(list: readonly ApiVersion[] = VERSIONS) {
    this.list = list;
    this.#byName = new Map(list.map((v, i) => [v.version, i]));
  }

  get oldest(): string {
    return this.list[0]!.version;
  }

  get newest(): string {
    return this.list[this.list.length - 1]!.version;
  }

  /** the version names, newest first */
  get names(): string[] {
    return this.list.map((v) => v.version).reverse();
  }

  has(version: string): boolean {
    return this.#byName.has(version);
  }

  /** the changes from the first version up to `version`, in release order */
  changesUpTo(version: string): VersionChange[] {
    const index = this.#byName.get(version);
    if (index === undefined) throw new Error(`unknown API version ${version}`);
    return this.list.slice(0, index + 1).flatMap((v) => v.changes);
  }

  /** a schema as `version` has it, from the first version's, through one kind of change */
  schema(version: string, kind: 'query' | 'body' | 'response', schema: ZodType | undefined): ZodType | undefined {
    if (!schema) return schema;
    let shaped = schema;
    for (const change of this.changesUpTo(version)) shaped = change[kind]?.(shaped) ?? shaped;
    return shaped;
  }

  /** the header fields `version`'s changes add to a route whose query (the first version's) they reshape */
  headers(version: string, query: ZodType | undefined): Required<VersionHeaders> {
    const added: Required<VersionHeaders> = { request: {}, answer: {} };
    let shaped = query;
    for (const change of this.changesUpTo(version)) {
      const next = shaped && change.query?.(shaped);
      if (!next) continue;
      shaped = next;
      Object.assign(added.request, change.headers?.request);
      Object.assign(added.answer, change.headers?.answer);
    }
    return added;
  }

  /**
   * Whether some version renders an event's stored data otherwise than it is
   * stored: a route that answers event data then answers it per version.
   */
  get rendersSomeEventData(): boolean {
    return this.list.some((v) => v.changes.some((change) => change.eventData));
  }

  /** whether `version` renders an event's stored data otherwise than it is stored (else it passes through as stored) */
  rendersEventData(version: string): boolean {
    return this.changesUpTo(version).some((change) => change.eventData);
  }

  /** an event's stored `data` as `version` renders it */
  eventData(version: string, type: string, data: Record<string, unknown>): Record<string, unknown> {
    let rendered = data;
    for (const change of this.changesUpTo(version)) rendered = change.eventData?.(type, rendered) ?? rendered;
    return rendered;
  }

  /** `Deprecation` and `Sunset` of a version with a retirement date (RFC 9745, RFC 8594) */
  retirement(version: string): { deprecation: Date; sunset: Date } | undefined {
    const index = this.#byName.get(version);
    const entry = index === undefined ? undefined : this.list[index];
    if (!entry?.sunset_at) return undefined;
    const successor = this.list[index! + 1];
    return { deprecation: new Date(successor?.released_at ?? entry.released_at), sunset: new Date(entry.sunset_at) };
  }
}

export const API_VERSIONS = new ApiVersions();

/**
 * `api_version` of a create body (tokens, OAuth2 clients, webhook endpoints):
 * the version requests without Rowgate-Version use; absent, the newest.
 */
export const apiVersionField = (what: string, absent = 'the newest') =>
  z
    .enum(API_VERSIONS.names as [string, ...string[]])
    .optional()
    .meta({ description: `The API version ${what} (SPEC §23); absent: ${absent}.`, example: API_VERSIONS.newest });

/** `api_version` of a read schema */
export const apiVersionRead = (what: string) =>
  z.string().meta({ description: `The API version ${what} (SPEC §23).`, example: API_VERSIONS.newest });

/** The read column: rows made before versions existed, or by a server of the previous release, are pinned to the first. */
export const API_VERSION_COLUMN = `coalesce(api_version, '${FIRST_VERSION}') as api_version`;

/**
 * Pins what the transaction creates next to a version: a new row's
 * `api_version` defaults to this setting (migration part 200).
 */
export const PIN_API_VERSION = `select set_config('rowgate.api_version', $1, true)`;
