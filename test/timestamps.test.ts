// src/db/timestamps.ts: a timestamptz from PostgreSQL's text to the API's form,
// which is PostgreSQL's own JSON in a UTC session (the form list pages are
// rendered in). Whatever the session's time zone and the value, the text is
// the one to_json writes in UTC.
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import '../src/db/pool.ts';
import { rfc3339 } from '../src/db/timestamps.ts';

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
  '1883-11-18 12:00:00+00', // before standard time: local mean time offsets with seconds
  '2026-03-29 01:30:00.5+00',
];

/** what PostgreSQL's JSON writes for each value in UTC, and the value's text in `zone` */
async function expected(zone: string) {
  await client.query(`set timezone = 'UTC'`);
  const { rows: json } = await client.query<{ json: string }>(`select to_json(v::timestamptz) #>> '{}' as json from unnest($1::text[]) v`, [
    VALUES,
  ]);
  await client.query(`set timezone = '${zone}'`);
  // the value itself, not the parsed form: text as PostgreSQL writes it in this zone
  const { rows: text } = await client.query<{ text: string }>(`select v::timestamptz::text as text from unnest($1::text[]) v`, [VALUES]);
  return text.map((r, i) => ({ text: r.text, json: json[i]!.json }));
}

for (const zone of ['UTC', 'Etc/UTC', 'Europe/Berlin', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Chatham', 'Europe/Amsterdam']) {
  test(`session time zone ${zone}: the text PostgreSQL's JSON writes in UTC`, async () => {
    for (const { text, json } of await expected(zone)) expect(rfc3339(text), text).toBe(json);
  });
}

test('200,000 random instants in UTC: the same text as to_json', async () => {
  await client.query(`set timezone = 'UTC'`);
  const { rows } = await client.query<{ text: string; json: string }>(
    `select t::text as text, to_json(t) #>> '{}' as json
     from (select timestamptz '2000-01-01' + random() * interval '40 years' as t from generate_series(1, 200000)) x`,
  );
  const wrong = rows.filter((r) => rfc3339(r.text) !== r.json);
  expect(wrong.slice(0, 5)).toEqual([]);
});

test('values without an instant come back as PostgreSQL wrote them', async () => {
  await client.query(`set timezone = 'UTC'`);
  const { rows } = await client.query<{ text: string }>(
    `select v::timestamptz::text as text from unnest(array['infinity', '-infinity']) v`,
  );
  expect(rows.map((r) => rfc3339(r.text))).toEqual(['infinity', '-infinity']);
});

test('rows read through pg arrive in the API form (the parser database.ts sets)', async () => {
  await client.query(`set timezone = 'Asia/Kolkata'`);
  const { rows } = await client.query<{ at: unknown }>(`select '2026-11-21 08:22:11.160123+00'::timestamptz as at`);
  expect(rows[0]!.at).toBe('2026-11-21T08:22:11.160123+00:00');
});
