// How `timestamptz` values travel from PostgreSQL to a response body.
//
// The API writes timestamps the way PostgreSQL's own JSON does in a UTC
// session: RFC 3339, UTC as "+00:00", the fraction of a second to the
// microsecond with trailing zeros left out ("2026-11-21T08:22:11.16+00:00",
// "2026-11-21T08:22:11+00:00"); docs/decisions.md says why. Lists are rendered
// to JSON by PostgreSQL (src/listing/list-statement.ts); single rows pass through here, so both
// write the same text for the same value. A value PostgreSQL wrote in UTC (the
// authenticator's session time zone, db/roles.sql), "2026-11-21
// 08:22:11.16+00", only changes shape; one written at another offset (any
// other session) is moved to UTC first, its fraction kept as written. No Date
// is built on the way: Dates nearly doubled the CPU of reading and serialising
// a page (docs/performance.md).

const ZONED = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?([+-])(\d{2})(?::(\d{2}))?(?::(\d{2}))?$/;

/** PostgreSQL's text of a timestamptz → what PostgreSQL's JSON writes for it in UTC. */
export function rfc3339(text: string): string {
  if (text.charCodeAt(10) === 32 && text.endsWith('+00') && text.length <= 29) {
    return `${text.slice(0, 10)}T${text.slice(11)}:00`;
  }
  const m = ZONED.exec(text);
  if (!m) return text; // infinity, BC or five-digit years: as PostgreSQL wrote them
  const sign = m[8] === '-' ? -1 : 1;
  const offsetSeconds = sign * (Number(m[9]) * 3600 + Number(m[10] ?? 0) * 60 + Number(m[11] ?? 0));
  const seconds = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) / 1000 - offsetSeconds;
  const utc = new Date(seconds * 1000).toISOString(); // "2026-11-21T08:22:11.000Z"
  return `${utc.slice(0, 19)}${m[7] ?? ''}+00:00`;
}
