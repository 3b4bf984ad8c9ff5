// The fence around GraphQL's own transport (src/graphql/transport/): it is
// kept because it is measurably faster than PostGraphile's own adaptor
// (docs/performance.md, "GraphQL's transport"), and it leans on how these
// library versions behave. This file fails when the versions change, and when a
// behaviour the transport relies on changes under them:
// - grafast's `context` callback may give a request's `withPgClient`, and
//   @dataplan/pg runs the request's statements through it;
// - grafast asks for the statements it can send together (a page and its
//   totalCount) in one turn of the event loop, which the transport pipelines
//   in one transaction;
// - codecs supplied through graphile-build-pg's `pgCodecs_findPgCodec` hook
//   are the ones @dataplan/pg selects with: timestamptz and bigint leave
//   without `to_char` or a cast (src/graphql/transport/codecs.ts);
// - grafserv writes the answer its `processRequest` middleware returns (a
//   deferred authentication's 401: test/graphql.test.ts, "a session revoked
//   after it authenticated").
// Before changing a version here: measure again (bench/pair.ts --graphql, this
// tree against one on PostGraphile's own adaptor) and run this file.
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { projectRoot } from '../src/db/setup.ts';
import { createGraphql, type Graphql } from '../src/graphql/server.ts';
import { startTestApp, type TestApp } from './harness.ts';

/** The versions the transport was measured against and written for. */
const PINNED = {
  postgraphile: '5.1.5',
  '@dataplan/pg': '1.1.2',
  grafast: '1.1.3',
  grafserv: '1.0.2',
  'graphile-build-pg': '5.1.4',
  pg: '8.23.1',
};

const installed = (name: string) =>
  (JSON.parse(readFileSync(path.join(projectRoot, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

test('the libraries are the versions the transport was measured and written against', () => {
  expect(Object.fromEntries(Object.keys(PINNED).map((name) => [name, installed(name)]))).toEqual(PINNED);
});

describe('the behaviour the transport relies on', () => {
  let app: TestApp;
  let graphql: Graphql;

  beforeAll(async () => {
    app = await startTestApp();
    graphql = await createGraphql({ pool: app.pool, secret: app.secret, development: false });
  });
  afterAll(async () => {
    await graphql?.release();
    await app?.close();
  });

  /** The document run as grafserv runs it (the preset's hooks, then execution), each statement's text and turn recorded. */
  async function run(source: string) {
    const [{ hookArgs, execute }, { parse }] = await Promise.all([import('postgraphile/grafast'), import('postgraphile/graphql')]);
    const schema = await graphql.instance.getSchema();
    // a request that passed none of our middleware: anonymous, whose statements are refused but sent all the same
    const req = { headers: {} } as IncomingMessage;
    const args = {
      schema,
      document: parse(source),
      contextValue: Object.create(null) as Record<string, unknown>,
      resolvedPreset: graphql.instance.getResolvedPreset(),
      requestContext: { expressv4: { req, res: undefined } } as unknown as Grafast.RequestContext,
    };
    await hookArgs(args as never);
    const context = args.contextValue as { withPgClient: (settings: unknown, callback: (client: never) => unknown) => Promise<unknown> };
    const ours = context.withPgClient;
    const statements: { text: string; turn: number }[] = [];
    let turn = 0;
    const ticking = setInterval(() => turn++, 0);
    try {
      context.withPgClient = (settings, callback) =>
        ours(settings, (client: { query(q: { text: string }): Promise<unknown> }) =>
          callback(
            Object.create(client, {
              query: {
                value: (q: { text: string }) => {
                  statements.push({ text: q.text, turn });
                  return client.query(q);
                },
              },
            }) as never,
          ),
        );
      // anonymous reads nothing (its statements are refused): what matters here is what is asked for, and how
      await execute(args as never);
    } finally {
      clearInterval(ticking);
    }
    return { statements, ours };
  }

  test("the context's withPgClient is the request's own, and runs the query's statements", async () => {
    const { statements, ours } = await run('{ allOrders(first: 2, orderBy: [CREATED_AT_DESC]) { totalCount nodes { rowId } } }');
    // ours: a query's client has no connection of its own (src/graphql/transport/pg-client.ts)
    await ours(null, (client: { rawClient: unknown }) => expect(() => client.rawClient).toThrow(/no connection of its own/));
    expect(statements.length).toBeGreaterThan(0);
  });

  test('a page and its totalCount are asked for in one turn', async () => {
    const { statements } = await run('{ allOrders(first: 2, orderBy: [CREATED_AT_DESC]) { totalCount nodes { rowId } } }');
    expect(statements).toHaveLength(2);
    expect(statements.map((s) => s.text).join('\n')).toMatch(/count\(\*\)/);
    expect(new Set(statements.map((s) => s.turn)).size).toBe(1);
  });

  test('timestamptz and bigint are selected as they are: our codecs, not the library’s', async () => {
    const { statements } = await run('{ allOrders(first: 2, orderBy: [CREATED_AT_DESC]) { nodes { createdAt updatedAt amount } } }');
    const text = statements.map((s) => s.text).join('\n');
    expect(text).toMatch(/created_at/);
    expect(text).not.toMatch(/to_char/);
    expect(text).not.toMatch(/"(created_at|updated_at|amount)"\)?::text/);
  });
});
