// The choice of the suite's PostgreSQL (test/database-server.ts), without Docker.
import { describe, expect, inject, test } from 'vitest';
import pg from 'pg';
import { chooseSource, requestedVersion, startDatabaseServer, SUPPORTED_MAJOR_VERSIONS } from './database-server.ts';

const URL_ = 'postgres://postgres:secret@db.example:5432/postgres';

describe('chooseSource', () => {
  const cases: [name: string, env: Record<string, string>, docker: boolean, expected: string][] = [
    ['nothing set → the embedded package', {}, false, 'embedded'],
    ['nothing set, Docker reachable → still the embedded package (the default)', {}, true, 'embedded'],
    ['TEST_DATABASE_URL → env', { TEST_DATABASE_URL: URL_ }, false, 'env'],
    ['TEST_DATABASE_URL wins over a version asked with Docker reachable', { TEST_DATABASE_URL: URL_, TEST_PG_VERSION: '16' }, true, 'env'],
    ['TEST_PG_VERSION and Docker reachable → testcontainers', { TEST_PG_VERSION: '16' }, true, 'testcontainers'],
    ['TEST_PG_VERSION without Docker → the embedded package', { TEST_PG_VERSION: '16' }, false, 'embedded'],
    ['an empty TEST_DATABASE_URL does not count', { TEST_DATABASE_URL: '', TEST_PG_VERSION: '17' }, true, 'testcontainers'],
    ['an empty TEST_PG_VERSION does not ask', { TEST_PG_VERSION: ' ' }, true, 'embedded'],
  ];
  test.for(cases)('%s', ([, env, docker, expected]) => {
    expect(chooseSource(env, docker)).toBe(expected);
  });

  test('every supported major version can be asked for; others are refused with the list', () => {
    for (const v of SUPPORTED_MAJOR_VERSIONS) expect(requestedVersion({ TEST_PG_VERSION: String(v) })).toBe(v);
    expect(SUPPORTED_MAJOR_VERSIONS).toEqual([16, 17, 18]);
    for (const bad of ['15', '14', '9.6', 'latest', '16beta']) {
      expect(() => chooseSource({ TEST_PG_VERSION: bad }, true)).toThrow(/TEST_PG_VERSION=.*supported major versions are 16, 17, 18$/);
    }
  });
});

describe('startDatabaseServer', () => {
  test('TEST_DATABASE_URL is used as given, without probing Docker or starting anything', async () => {
    const server = await startDatabaseServer({ TEST_DATABASE_URL: URL_, TEST_PG_VERSION: '16' }, () => {
      throw new Error('Docker must not be probed when TEST_DATABASE_URL is set');
    });
    expect(server).toMatchObject({ superuserUrl: URL_, source: 'env' });
    await server.stop();
  });

  test('a version asked for with no Docker engine: a warning, then a working embedded cluster', async () => {
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (message: string) => void warnings.push(message);
    let probed = 0;
    const server = await startDatabaseServer({ TEST_PG_VERSION: '16' }, async () => (probed++, false)).finally(() => {
      console.warn = warn;
    });
    try {
      expect({ source: server.source, probed }).toEqual({ source: 'embedded', probed: 1 });
      expect(warnings.join('\n')).toMatch(/TEST_PG_VERSION=16 .*no Docker engine is reachable/);
      const client = new pg.Client({ connectionString: server.superuserUrl });
      await client.connect();
      const { rows } = await client.query('select current_user as who, current_setting($1)::int >= 150000 as recent', [
        'server_version_num',
      ]);
      await client.end();
      expect(rows).toEqual([{ who: 'postgres', recent: true }]);
    } finally {
      await server.stop();
    }
  }, 120_000);
});

test('the suite runs on the server it asked for', () => {
  const source = inject('databaseSource');
  const major = Math.floor(inject('serverVersionNum') / 10_000);
  expect(source).toBe(chooseSource(process.env, source === 'testcontainers'));
  const asked = requestedVersion(process.env);
  if (asked !== undefined && source !== 'embedded') expect(major).toBe(asked);
  expect(major).toBeGreaterThanOrEqual(15);
});
