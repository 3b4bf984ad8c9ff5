// Events read in the reader's version (SPEC §23): an event's `data` is stored once and
// rendered as the request's version renders its resource, in the feed, the list, the get
// and the events export alike (webhook bodies: test/webhooks.test.ts). A test-only
// version after the newest renames a product's `name` in event data.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ApiVersion, ApiVersions, VERSIONS } from '../src/core/versions.ts';
import { createApp } from '../src/server/app.ts';
import { allRoutes } from '../src/server/route-table.ts';
import { outboxMailer } from '../src/signin/mailer.ts';
import { startTestApp, type TestApp, type TestUser } from './harness.ts';

const NEWEST = '2026-12-15';
const RENAMED = '2099-01-01';

/** a version registered only here: its one change names a product's `name` `title` in event data */
const renamed: ApiVersion = {
  version: RENAMED,
  released_at: '2099-01-01T00:00:00Z',
  changes: [
    {
      changelog: 'Products in event data name their name `title`.',
      eventData: (type, data) => {
        if (!type.startsWith('product.') || !('name' in data)) return data;
        const { name, ...rest } = data;
        return { ...rest, title: name };
      },
    },
  ],
};

let app: TestApp;
let user: TestUser;
let org: string;
let server: Server;
let base: string;
let productId: string;

/** A GET on the server with the test-only version; `version` null: none sent (the credential's pin). */
async function get(path: string, version: string | null, auth: { session?: string; token?: string } = { session: user.session }) {
  const headers: Record<string, string> = { accept: path.startsWith('/v1/exports/') ? 'application/x-ndjson' : 'application/json' };
  if (version !== null) headers['rowgate-version'] = version;
  if (auth.session) headers.cookie = `rowgate_session=${auth.session}`;
  if (auth.token) headers.authorization = `Bearer ${auth.token}`;
  const response = await fetch(base + path, { headers });
  const text = await response.text();
  expect(response.status, text).toBe(200);
  return { text, version: response.headers.get('rowgate-version') };
}

beforeAll(async () => {
  app = await startTestApp();
  user = await app.user();
  org = (await app.organization(user.id)).id;
  server = createApp({
    pool: app.pool,
    secret: app.secret,
    routes: allRoutes(app.pool),
    mailer: outboxMailer(() => {}),
    validateResponses: true,
    versions: new ApiVersions([...VERSIONS, renamed]),
  }).listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const created = await app.post(
    '/v1/products/',
    { organization_id: org, name: 'Versioned', price_amount: 100, price_currency: 'usd' },
    { session: user.session },
  );
  expect(created.status).toBe(201);
  productId = created.body.id;
  const renaming = await app.patch(`/v1/products/${productId}`, { name: 'Renamed' }, { session: user.session });
  expect(renaming.status).toBe(200);
  // the feed hands out an event once the sequencer placed it
  for (let polls = 0; ; polls++) {
    const feed = await app.get(`/v1/events/feed?type=product.created&type=product.updated&organization_id=${org}`, {
      session: user.session,
    });
    if (feed.body.items.length === 2) break;
    if (polls > 100) throw new Error('the feed did not place the product’s events');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await app?.close();
});

type Event = { id: string; type: string; data: Record<string, unknown>; previous: Record<string, unknown> | null };

/** the product's events as each read answers them in `version` */
async function reads(version: string): Promise<Record<string, Event[]>> {
  const filter = `type=product.created&type=product.updated&organization_id=${org}`;
  const feed = JSON.parse((await get(`/v1/events/feed?${filter}`, version)).text).items as Event[];
  const listed = JSON.parse((await get(`/v1/events/?${filter}&resource_id=${productId}&sorting=created_at`, version)).text)
    .items as Event[];
  const got = await Promise.all(listed.map(async (e) => JSON.parse((await get(`/v1/events/${e.id}`, version)).text) as Event));
  const exported = (await get(`/v1/exports/events?${filter}&resource_id=${productId}&sorting=created_at`, version)).text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Event);
  return { feed, listed, got, exported };
}

describe('event data in the reader’s version (SPEC §23)', () => {
  test('the feed, the list, the get and the export render data and previous in the request’s version', async () => {
    for (const [version, shown, hidden] of [
      [RENAMED, 'title', 'name'],
      [NEWEST, 'name', 'title'],
    ] as const) {
      for (const [read, events] of Object.entries(await reads(version))) {
        const what = `${read} in ${version}`;
        expect(
          events.map((e) => e.type),
          what,
        ).toEqual(['product.created', 'product.updated']);
        const [created, updated] = events as [Event, Event];
        expect(created.data, what).toMatchObject({ id: productId, [shown]: 'Versioned' });
        expect(updated.data, what).toMatchObject({ id: productId, [shown]: 'Renamed' });
        expect(updated.previous, what).toEqual({ [shown]: 'Versioned' });
        for (const data of [created.data, updated.data, updated.previous]) expect(data, what).not.toHaveProperty(hidden);
      }
    }
  });

  test('the list, the get and the export of each version render alike', async () => {
    for (const version of [RENAMED, NEWEST]) {
      const { feed, listed, got, exported } = await reads(version);
      expect(got).toEqual(listed);
      expect(exported).toEqual(listed);
      expect(feed).toEqual(listed);
    }
  });

  test('a version that renders data as stored sends the list as PostgreSQL wrote it', async () => {
    // jsonb's text (`"name": "…"`) is in the answer: the page was not parsed and written again
    const stored = await get(`/v1/events/?type=product.created&resource_id=${productId}`, NEWEST);
    expect(stored.text).toContain('"name": "Versioned"');
    const rendered = await get(`/v1/events/?type=product.created&resource_id=${productId}`, RENAMED);
    expect(rendered.text).toContain('"title":"Versioned"');
  });

  test("without Rowgate-Version, a web session's reads start with its authentication and render in the newest", async () => {
    // a web session is pinned to none: its version is known before it authenticates, and a handler
    // that renders event data may read it before the authentication has answered
    const [created] = JSON.parse((await get(`/v1/events/?type=product.created&resource_id=${productId}`, RENAMED)).text).items as Event[];
    const paths = [
      `/v1/events/?type=product.created&resource_id=${productId}`,
      `/v1/events/${created!.id}`,
      `/v1/events/feed?type=product.created&organization_id=${org}`,
    ];
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        fetch(base + paths[i % paths.length]!, { headers: { cookie: `rowgate_session=${user.session}` } }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((a) => a.headers.get('rowgate-version')))).toEqual(new Set([RENAMED]));
    for (const answer of answers) expect(await answer.text()).toContain('"title":"Versioned"');
  });

  test('without Rowgate-Version, a token pinned to the version renders in it: the get and the feed wait for the version', async () => {
    const token = await app.oat(org, ['events_read']);
    await app.sql(`update rowgate.organization_access_tokens set api_version = $2 where organization_id = $1`, [org, RENAMED]);
    for (let i = 0; i < 5; i++) {
      const listed = JSON.parse((await get(`/v1/events/?type=product.created&resource_id=${productId}`, null, { token })).text);
      const event = listed.items[0] as Event;
      expect(event.data).toMatchObject({ title: 'Versioned' });
      const got = await get(`/v1/events/${event.id}`, null, { token });
      expect(got.version).toBe(RENAMED);
      expect((JSON.parse(got.text) as Event).data).toMatchObject({ title: 'Versioned' });
      const feed = await get(`/v1/events/feed?type=product.created&organization_id=${org}`, null, { token });
      expect(feed.version).toBe(RENAMED);
      expect((JSON.parse(feed.text).items as Event[])[0]!.data).toMatchObject({ title: 'Versioned' });
    }
  });
});
