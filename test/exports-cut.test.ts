// An export that fails after its first byte (SPEC §24) ends without the chunked answer's
// terminating chunk, never as a file that looks complete; NDJSON says why on its last line,
// in SPEC §7's error shape. A later chunk's statement is made to fail for real: the client
// stops reading once the first bytes arrived (so the export cannot run ahead of it), the
// products table is locked, and the chunk waiting on that lock passes the pool's statement
// timeout. The answer is read with a raw socket, so that the chunked framing itself is checked.
import { get } from 'node:http';
import { connect } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EXPORT_CHUNK_BYTES } from '../src/resources/exports.ts';
import { startTestApp, type TestApp } from './harness.ts';

const TIMEOUT_MS = 1000;
/** a product's line is about this long: its description makes every chunk end at its bytes */
const DESCRIPTION = 4000;
/**
 * Far more than the socket buffers, the chunk in the server's write buffer and the one it
 * reads ahead hold together: while the client does not read, the export cannot reach its end.
 */
const ROWS = Math.ceil((12 * EXPORT_CHUNK_BYTES) / DESCRIPTION);

let app: TestApp;
let token: string;

beforeAll(async () => {
  app = await startTestApp({ statementTimeoutMs: TIMEOUT_MS });
  const admin = await app.user();
  const org = (await app.organization(admin.id)).id;
  await app.sql(
    `insert into rowgate.products (organization_id, name, description, price_amount, price_currency)
     select $1, 'product ' || n, repeat(md5(n::text), $3 / 32), n, 'usd' from generate_series(1, $2) n`,
    [org, ROWS, DESCRIPTION],
  );
  token = await app.oat(org, ['products_read']);
}, 120_000);

afterAll(async () => {
  await app?.close();
});

interface RawAnswer {
  head: string;
  body: string;
  /** the terminating zero-length chunk arrived */
  complete: boolean;
}

/**
 * GET `path` over a raw socket: once the first bytes of the body arrived, the socket is paused,
 * `whilePaused` runs, and the rest is read until the terminating chunk or the connection's end.
 */
function rawExport(path: string, accept: string, whilePaused: () => Promise<void>): Promise<RawAnswer> {
  const { hostname, port } = new URL(app.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    let head: string | undefined;
    let paused = false;
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve({ head: head ?? '', ...dechunk(received) });
    };
    socket.on('error', reject);
    socket.on('connect', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\nAccept: ${accept}\r\n\r\n`);
    });
    socket.on('data', (data: Buffer) => {
      if (head === undefined) {
        const all = Buffer.concat([received, data]);
        const end = all.indexOf('\r\n\r\n');
        if (end === -1) {
          received = all;
          return;
        }
        head = all.subarray(0, end).toString();
        received = all.subarray(end + 4);
      } else {
        received = Buffer.concat([received, data]);
      }
      if (!paused && received.length > 0) {
        paused = true;
        socket.pause();
        whilePaused().then(() => socket.resume(), reject);
      }
      if (dechunk(received).complete) finish();
    });
    socket.on('end', finish);
    socket.on('close', finish);
  });
}

/** A chunked body's data, and whether its terminating chunk came. */
function dechunk(raw: Buffer): { body: string; complete: boolean } {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const line = raw.indexOf('\r\n', at);
    if (line === -1) break;
    const size = Number.parseInt(raw.subarray(at, line).toString(), 16);
    if (size === 0) return { body: Buffer.concat(parts).toString(), complete: true };
    if (raw.length < line + 2 + size + 2) break;
    parts.push(raw.subarray(line + 2, line + 2 + size));
    at = line + 2 + size + 2;
  }
  return { body: Buffer.concat(parts).toString(), complete: false };
}

/** Runs an export whose later chunk waits on a lock of the products table past the statement timeout. */
async function exportCutByTimeout(accept: string): Promise<RawAnswer> {
  const locker = new pg.Client({ connectionString: app.ownerUrl });
  await locker.connect();
  try {
    return await rawExport('/v1/exports/products', accept, async () => {
      await locker.query('begin');
      await locker.query('lock table rowgate.products in access exclusive mode');
    });
  } finally {
    await locker.query('rollback').catch(() => {});
    await locker.end();
  }
}

describe('an error after the first byte ends the export without its final chunk (SPEC §24)', () => {
  test('NDJSON: whole lines of items, then a last line with the error, and no terminating chunk', async () => {
    const answer = await exportCutByTimeout('application/x-ndjson');
    expect(answer.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.head.toLowerCase()).toContain('transfer-encoding: chunked');
    expect(answer.complete).toBe(false);
    const lines = answer.body.split('\n');
    expect(lines.pop()).toBe('');
    const last = JSON.parse(lines.pop()!);
    expect(last).toEqual({ error: 'Timeout', detail: `The request took longer than 1 second and was cancelled` });
    // the items before it are whole, each once, and not all of them
    const items = lines.map((line) => JSON.parse(line));
    expect(items.length).toBeGreaterThan(0);
    expect(items.length).toBeLessThan(ROWS);
    expect(items.every((item) => typeof item.id === 'string' && item.description.length === DESCRIPTION)).toBe(true);
    expect(new Set(items.map((item) => item.id)).size).toBe(items.length);
  });

  test('CSV: the answer stops without its terminating chunk', async () => {
    const answer = await exportCutByTimeout('text/csv');
    expect(answer.head).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer.complete).toBe(false);
    const rows = answer.body.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^id,organization_id,name,description,/);
    expect(rows.length).toBeLessThan(ROWS + 1);
  });

  test('the slot is given back, and the next export runs to its end: each item once, across chunks cut at their bytes', async () => {
    const res = await fetch(`${app.url}/v1/exports/products`, {
      headers: { authorization: `Bearer ${token}`, accept: 'application/x-ndjson' },
    });
    expect(res.status).toBe(200);
    const ids = (await res.text())
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line).id as string);
    expect(ids.length).toBe(ROWS);
    expect(new Set(ids).size).toBe(ROWS);
  });

  test('a client that takes a little at a time: every item once, and no wait on the answer left behind', async () => {
    // the server waits for its socket to drain again and again; a wait it leaves behind each
    // time piles listeners on the answer, which Node reports as a warning
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      const text = await new Promise<string>((resolve, reject) => {
        const request = get(
          `${app.url}/v1/exports/products`,
          { headers: { authorization: `Bearer ${token}`, accept: 'application/x-ndjson' } },
          (res) => {
            const parts: Buffer[] = [];
            res.on('data', (data: Buffer) => {
              parts.push(data);
              res.pause();
              setTimeout(() => res.resume(), 1);
            });
            res.on('end', () => resolve(Buffer.concat(parts).toString()));
            res.on('error', reject);
          },
        );
        request.on('error', reject);
      });
      const ids = text
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line).id as string);
      expect(new Set(ids).size).toBe(ROWS);
      expect(ids.length).toBe(ROWS);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((warning) => warning.includes('MaxListeners'))).toEqual([]);
  });
});
