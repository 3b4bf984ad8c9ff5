// Streamed exports (SPEC §24): every row of a list the caller may read, as CSV or NDJSON,
// each item exactly as the list renders it, read in keyset chunks; formula cells
// neutralised; page/limit/after refused; Accept negotiated; at most 2 per credential.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { exportFormat, neutralised } from '../src/resources/export-writing.ts';
import { EXPORT_CHUNK_ROWS, EXPORT_FIRST_ROWS } from '../src/resources/exports.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

let app: TestApp;
let admin: TestUser;
let org: string;
let other: string;
let token: string;

const ROWS = EXPORT_FIRST_ROWS + EXPORT_CHUNK_ROWS + 317;

async function exported(path: string, accept: string, credential = token) {
  const response = await fetch(app.url + path, { headers: { authorization: `Bearer ${credential}`, accept } });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

/** Every item of a list, page by page (2026-11-20's numbered pages). */
async function listAll(path: string): Promise<unknown[]> {
  const items: unknown[] = [];
  for (let page = 1; ; page++) {
    const res = await app.get(`${path}${path.includes('?') ? '&' : '?'}limit=100&page=${page}`, { token });
    expect(res.status).toBe(200);
    items.push(...res.body.items);
    if (page >= res.body.pagination.max_page) return items;
  }
}

beforeAll(async () => {
  app = await startTestApp();
  admin = await app.user();
  org = (await app.organization(admin.id)).id;
  other = (await app.organization(admin.id)).id;
  await app.sql(
    `insert into rowgate.products (organization_id, name, price_amount, price_currency, metadata)
     select $1, 'product ' || n || case when n % 3 = 0 then ' é€😀' else '' end, n, 'usd', jsonb_build_object('n', n)
     from generate_series(1, $2) n`,
    [org, ROWS],
  );
  await app.product(other);
  await app.sql(`update rowgate.products set name = '=HYPERLINK("x")' where organization_id = $1 and price_amount = 1`, [org]);
  token = await app.oat(org, ['products_read']);
}, 120_000);

afterAll(async () => {
  await app?.close();
});

describe('GET /v1/exports/{resource} (SPEC §24)', () => {
  test('NDJSON: every item exactly as the list renders it, in the list’s order, across chunks', async () => {
    const res = await exported('/v1/exports/products', 'application/x-ndjson');
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^application\/x-ndjson/);
    const lines = res.text.trimEnd().split('\n');
    expect(lines.length).toBe(ROWS);
    const items = lines.map((line) => JSON.parse(line));
    // every item, names of several UTF-8 widths among them, through chunks written into reused buffers
    expect(items).toEqual(await listAll('/v1/products/?sorting=-created_at'));
    expect(new Set(items.map((i) => i.id)).size).toBe(ROWS);
    expect(items.every((i) => i.organization_id === org)).toBe(true);
  });

  test('the list’s filters and sorting apply', async () => {
    const res = await exported('/v1/exports/products?sorting=price_amount&created_before=2999-01-01T00:00:00Z', 'application/x-ndjson');
    const prices = res.text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line).price_amount);
    expect(prices).toEqual([...prices].sort((a, b) => a - b));
    expect(prices.length).toBe(ROWS);
  });

  test('CSV: a header row, nested objects as JSON, formula cells neutralised', async () => {
    const res = await exported('/v1/exports/products?sorting=price_amount', 'text/csv');
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/csv/);
    const lines = res.text.trimEnd().split('\n');
    expect(lines[0]).toBe('id,organization_id,name,description,price_amount,price_currency,is_archived,metadata,created_at,updated_at');
    expect(lines.length).toBe(ROWS + 1);
    expect(lines[1]).toContain(`"'=HYPERLINK(""x"")"`);
    expect(lines[1]).toContain('"{""n"":1}"');
    // no Accept, or */*: CSV
    expect((await exported('/v1/exports/products', '*/*')).type).toMatch(/^text\/csv/);
  });

  test('page, limit and after are 422 at query; another Accept is 406; the list’s scopes apply', async () => {
    for (const name of ['page=1', 'limit=10', 'after=x']) {
      const res = await exported(`/v1/exports/products?${name}`, 'text/csv');
      expect(res.status, name).toBe(422);
      expect(JSON.parse(res.text).detail[0].loc.slice(0, 1)).toEqual(['query']);
    }
    const xml = await exported('/v1/exports/products', 'application/xml');
    expect(xml.status).toBe(406);
    expect(JSON.parse(xml.text).error).toBe('NotAcceptable');
    const ordersOnly = await app.oat(org, ['orders_read']);
    expect((await exported('/v1/exports/products', 'text/csv', ordersOnly)).status).toBe(403);
    expect((await exported('/v1/exports/nothing', 'text/csv')).status).toBe(404);
  });

  test('at most 2 exports at once per credential, counted in the database (429)', async () => {
    const [credential] = await app.sql<{ id: string }>(
      `select id from rowgate.organization_access_tokens where organization_id = $1 and scopes = '{products_read}' order by created_at limit 1`,
      [org],
    );
    await app.sql(
      `insert into rowgate_private.export_leases (credential_id, expires_at) values ($1, now() + interval '1 minute'), ($1, now() + interval '1 minute')`,
      [credential!.id],
    );
    const refused = await exported('/v1/exports/products', 'text/csv');
    expect(refused.status).toBe(429);
    await app.sql('delete from rowgate_private.export_leases where credential_id = $1', [credential!.id]);
    expect((await exported('/v1/exports/products', 'text/csv')).status).toBe(200);
    // a finished export gives its slot back
    expect(await app.sql('select 1 from rowgate_private.export_leases where credential_id = $1', [credential!.id])).toEqual([]);
  });

  test('every resource exports, as its list answers (a web session, CSV and NDJSON)', async () => {
    const customer = await app.customer(other);
    await app.order(await app.product(other), customer, 'paid');
    const lists: Record<string, string> = {
      products: '/v1/products/',
      customers: '/v1/customers/',
      orders: '/v1/orders/',
      members: '/v1/members/',
      transactions: '/v1/transactions/',
      refunds: '/v1/refunds/',
      events: '/v1/events/',
    };
    for (const [resource, list] of Object.entries(lists)) {
      const res = await fetch(`${app.url}/v1/exports/${resource}?organization_id=${other}`, {
        headers: { cookie: `rowgate_session=${admin.session}`, accept: 'application/x-ndjson' },
      });
      expect(res.status, resource).toBe(200);
      const items = (await res.text())
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
      const page = await app.get(`${list}?organization_id=${other}&limit=100`, { session: admin.session });
      expect(items, resource).toEqual(page.body.items);
      const csv = await fetch(`${app.url}/v1/exports/${resource}?organization_id=${other}`, {
        headers: { cookie: `rowgate_session=${admin.session}` },
      });
      expect(csv.status, resource).toBe(200);
      expect((await csv.text()).trimEnd().split('\n').length, resource).toBe(items.length + 1);
    }
  });

  test('over organizations of very different sizes, with rows of one instant: the keyset pages, in order', async () => {
    // one organization past the first chunk's share of each (its frontier), three far below it with rows
    // both newer and older than all of its rows; each statement's rows share their created_at, so ids
    // alone order them
    const user = await app.user();
    const sizes = [EXPORT_FIRST_ROWS + 40, 30, 7, 0];
    const organizations: string[] = [];
    for (const _ of sizes) organizations.push((await app.organization(user.id)).id);
    const insert = (organization: string, rows: number) =>
      app.sql(
        `insert into rowgate.products (organization_id, name, price_amount, price_currency)
         select $1, 'p ' || n, n, 'usd' from generate_series(1, $2) n`,
        [organization, rows],
      );
    for (const [i, size] of sizes.entries()) if (i > 0) await insert(organizations[i]!, Math.floor(size / 2));
    await insert(organizations[0]!, sizes[0]!);
    for (const [i, size] of sizes.entries()) if (i > 0) await insert(organizations[i]!, size - Math.floor(size / 2));
    const res = await fetch(`${app.url}/v1/exports/products`, {
      headers: { cookie: `rowgate_session=${user.session}`, accept: 'application/x-ndjson' },
    });
    expect(res.status).toBe(200);
    const exportedIds = (await res.text())
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line).id);
    const pagedIds: string[] = [];
    for (let after: string | null = null; ; ) {
      const page = await app.get(`/v1/products/?limit=100${after ? `&after=${after}` : ''}`, {
        session: user.session,
        version: '2026-12-15',
      });
      expect(page.status).toBe(200);
      pagedIds.push(...page.body.items.map((item: { id: string }) => item.id));
      after = page.body.next_cursor;
      if (!after) break;
    }
    expect(pagedIds.length).toBe(sizes.reduce((a, b) => a + b));
    expect(exportedIds).toEqual(pagedIds);
  });

  test("orders of a caller who reaches nearly all of them: read in the in-order index's order, the keyset pages exactly", async () => {
    // the caller's organizations hold nearly every order, so the chunks after the first read the
    // in-order index rather than merging organizations; the rows of each statement share their
    // created_at (ids alone order them), and a stranger's orders come between the caller's
    const user = await app.user();
    // past the first chunk and the second, so that a chunk read in order follows another
    const sizes = [EXPORT_FIRST_ROWS + EXPORT_CHUNK_ROWS + 700, 40, 9];
    const organizations: string[] = [];
    for (const _ of sizes) organizations.push((await app.organization(user.id)).id);
    const stranger = (await app.organization((await app.user()).id)).id;
    const insert = async (organization: string, rows: number) =>
      app.sql(
        `insert into rowgate.orders (organization_id, customer_id, product_id, amount, currency, status)
         select $1, $2, $3, n, 'usd', 'paid' from generate_series(1, $4) n`,
        [organization, await app.customer(organization), await app.product(organization), rows],
      );
    for (const [i, size] of sizes.entries()) if (i > 0) await insert(organizations[i]!, Math.floor(size / 2));
    await insert(stranger, 5);
    await insert(organizations[0]!, sizes[0]!);
    for (const [i, size] of sizes.entries()) if (i > 0) await insert(organizations[i]!, size - Math.floor(size / 2));
    // the table's row estimate, which the choice weighs the caller's share against
    await app.sql('analyze rowgate.orders');
    const scans = async () =>
      Number(
        (
          await app.sql<{ n: string }>(
            `select coalesce(sum(idx_scan), 0) as n from pg_stat_user_indexes where indexrelname = 'orders_in_order'`,
          )
        )[0]!.n,
      );
    const before = await scans();
    const exportedIds = async (query: string) => {
      const res = await fetch(`${app.url}/v1/exports/orders${query}`, {
        headers: { cookie: `rowgate_session=${user.session}`, accept: 'application/x-ndjson' },
      });
      expect(res.status).toBe(200);
      return (await res.text())
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line).id);
    };
    const pagedIds = async (query: string) => {
      const ids: string[] = [];
      for (let after: string | null = null; ; ) {
        const page = await app.get(`/v1/orders/?limit=100${query}${after ? `&after=${after}` : ''}`, {
          session: user.session,
          version: '2026-12-15',
        });
        expect(page.status).toBe(200);
        ids.push(...page.body.items.map((item: { id: string }) => item.id));
        after = page.body.next_cursor;
        if (!after) return ids;
      }
    };
    const all = await pagedIds('');
    expect(all.length).toBe(sizes.reduce((a, b) => a + b));
    expect(await exportedIds('')).toEqual(all);
    // a filter by organization keeps the index's order
    const two = `organization_id=${organizations[0]}&organization_id=${organizations[2]}`;
    const paged = await pagedIds(`&${two}`);
    expect(paged.length).toBe(sizes[0]! + sizes[2]!);
    expect(await exportedIds(`?${two}`)).toEqual(paged);
    // the server's connections report their index scans when idle: the in-order index was read
    const deadline = Date.now() + 15_000;
    while ((await scans()) === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await scans()).toBeGreaterThan(before);
  });

  test('Accept negotiation and neutralising, as functions', () => {
    expect(exportFormat(undefined)).toBe('text/csv');
    expect(exportFormat('application/x-ndjson')).toBe('application/x-ndjson');
    expect(exportFormat('application/json')).toBeNull();
    expect(exportFormat('text/html, */*;q=0.1')).toBe('text/csv');
    expect(['=1', '+1', '-1', '@a', '\tx', '\rx', 'ok'].map(neutralised)).toEqual(["'=1", "'+1", "'-1", "'@a", "'\tx", "'\rx", 'ok']);
  });
});
