// src/timestamps.ts: a timestamptz from PostgreSQL's text to the API's RFC 3339
// UTC with milliseconds, without building a Date when the value is already in
// UTC. Whatever the session's time zone and the value, the answer is the one
// pg's Date parser and Date#toISOString give.
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import '../src/database.ts';
import { rfc3339 } from '../src/timestamps.ts';

let client: pg.Client;
beforeAll(async () => {
  client = new pg.Client({ connectionString: inject('superuserUrl') });
  await client.connect();
});
afterAll(() => client.end());

const VALUES = [
  '2026-11-21 08:22:11.160123+00',
  '2026-11-21 08:22:11.16+00',
  '2026-11-21 08:22:11.1+00',
  '2026-11-21 08:22:11.999999+00',
  '2026-11-21 08:22:11+00',
  '2026-11-21 08:22:11.000001+00',
  '1999-12-31 23:59:59.9995+00',
  '1970-01-01 00:00:00+00',
  '2026-03-29 01:30:00.5+00',
];

for (const zone of ['UTC', 'Etc/UTC', 'Europe/Berlin', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Chatham']) {
  test(`session time zone ${zone}: the same instant, in the API's format, as through a Date`, async () => {
    await client.query(`set timezone = '${zone}'`);
    const { rows } = await client.query<{ text: string; epoch_ms: string }>(
      `select v::timestamptz::text as text, floor(extract(epoch from v::timestamptz) * 1000)::bigint::text as epoch_ms
       from unnest($1::text[]) v`,
      [VALUES],
    );
    for (const row of rows) {
      const answer = rfc3339(row.text);
      expect(answer, row.text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(answer, row.text).toBe(new Date(Number(row.epoch_ms)).toISOString());
    }
  });
}

test('values a Date cannot hold come back as PostgreSQL wrote them', async () => {
  await client.query(`set timezone = 'UTC'`);
  const { rows } = await client.query<{ text: string }>(`select v::timestamptz::text as text from unnest(array['infinity', '-infinity']) v`);
  expect(rows.map((r) => rfc3339(r.text))).toEqual(['infinity', '-infinity']);
});

test('rows read through the pool arrive in the API format (the parser is the one database.ts sets)', async () => {
  await client.query(`set timezone = 'Asia/Kolkata'`);
  const { rows } = await client.query<{ at: unknown }>(`select '2026-11-21 08:22:11.160123+00'::timestamptz as at`);
  expect(rows[0]!.at).toBe('2026-11-21T08:22:11.160Z');
});
