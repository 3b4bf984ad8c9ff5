// How `timestamptz` values travel from PostgreSQL to a response body.
//
// pg's default parser builds a Date from each value with a regular expression,
// and JSON.stringify turns it back into text: measured (bench/serve.ts, a page
// of 50 orders) that round trip was half the server's CPU per list request.
// The API writes RFC 3339 UTC with milliseconds ("2026-11-21T08:22:11.160Z",
// SPEC §6), so a value PostgreSQL already wrote in UTC
// ("2026-11-21 08:22:11.160123+00", the authenticator's session time zone,
// db/roles.sql) is rewritten as text, its fraction truncated to milliseconds as
// Date did. Anything else (another offset, infinity, years past 9999) takes
// pg's own parser, so the answer is the same either way.
import pg from 'pg';

const parseToDate = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (text: string) => Date | number;

/** PostgreSQL's text of a timestamptz → RFC 3339 UTC with milliseconds. */
export function rfc3339(text: string): string {
  const length = text.length;
  // "YYYY-MM-DD HH:MM:SS+00" (22) or with a fraction ".f" to ".ffffff" (24 to 29)
  if (text.charCodeAt(10) === 32 && text.endsWith('+00') && (length === 22 || (length >= 24 && text.charCodeAt(19) === 46))) {
    const fraction = length === 22 ? '000' : (text.slice(20, length - 3) + '00').slice(0, 3);
    return `${text.slice(0, 10)}T${text.slice(11, 19)}.${fraction}Z`;
  }
  const date = parseToDate(text);
  return date instanceof Date && !Number.isNaN(date.getTime()) ? date.toISOString() : text;
}
