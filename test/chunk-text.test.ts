// An export chunk's buffer (src/listing/chunk-text.ts) and the wait before it is written
// again (`written` in src/resources/export-writing.ts): lines of any UTF-8 width come out
// as they went in, across growth and reuse; and the wait ends only once the socket took the bytes.
import { once } from 'node:events';
import { createServer, get } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { ChunkText } from '../src/listing/chunk-text.ts';
import { written } from '../src/resources/export-writing.ts';

describe('ChunkText', () => {
  test('lines of every UTF-8 width, past several doublings, then the buffer reused', () => {
    const text = new ChunkText(16);
    const lines = Array.from({ length: 500 }, (_, i) => `{"n":${i},"s":"${'aé€😀'.repeat(i % 7)}"}`);
    const starts = lines.map((line) => text.append(line));
    expect(text.bytes().toString('utf8')).toBe(`${lines.join('\n')}\n`);
    expect(starts.map((start, i) => text.bytes().toString('utf8', start, (starts[i + 1] ?? text.bytes().length) - 1))).toEqual(lines);
    text.reset();
    expect(text.append('😀')).toBe(0);
    expect(text.bytes().toString('utf8')).toBe('😀\n');
  });

  test('lines written out of their places in the page are laid out again in them', () => {
    const text = new ChunkText(8);
    const written = [
      { n: 3, text: 'drei 😀' },
      { n: 1, text: 'één' },
      { n: 2, text: 'two' },
    ];
    const lines = written.map((line) => ({ n: line.n, start: text.append(line.text) }));
    const { bytes, starts } = text.inPlaces(lines);
    expect(bytes.toString('utf8')).toBe('één\ntwo\ndrei 😀\n');
    expect(starts.map((start, i) => bytes.toString('utf8', start, (starts[i + 1] ?? bytes.length) - 1))).toEqual(['één', 'two', 'drei 😀']);
    // in their places already: the buffer as it is
    const inPlace = new ChunkText();
    const kept = ['a', 'bé'].map((line, i) => ({ n: i + 1, start: inPlace.append(line) }));
    expect(inPlace.inPlaces(kept)).toEqual({ bytes: inPlace.bytes(), starts: [0, 2] });
  });

  test("its parsers append the text column and leave the others to the process's parsers", () => {
    const text = new ChunkText();
    const parsers = text.parsers();
    expect(parsers.getTypeParser(pg.types.builtins.TEXT, 'text')('é')).toBe(0);
    expect(parsers.getTypeParser(pg.types.builtins.TEXT, 'text')('x')).toBe(3);
    expect(parsers.getTypeParser(pg.types.builtins.INT4, 'text')('42')).toBe(42);
    expect(text.bytes().toString('utf8')).toBe('é\nx\n');
  });
});

describe('written: a chunk buffer is written again only once the socket took its bytes', () => {
  test('the wait lasts while the client does not read, and ends when it does', async () => {
    let settled = false;
    let finished: Promise<void> | undefined;
    const server = createServer((_req, res) => {
      // far more than the socket's buffers hold: the last piece stays with the server until the client reads
      for (let i = 0; i < 64; i++) res.write(Buffer.alloc(256 * 1024, 0x61));
      finished = written(res, Buffer.from('last\n')).then(() => {
        settled = true;
        res.end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const response = await new Promise<import('node:http').IncomingMessage>((resolve) => get(`http://127.0.0.1:${port}/`, resolve));
      response.pause();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(settled).toBe(false);
      let bytes = 0;
      response.on('data', (data: Buffer) => (bytes += data.length));
      response.resume();
      await once(response, 'end');
      await finished;
      expect(settled).toBe(true);
      expect(bytes).toBe(64 * 256 * 1024 + 5);
    } finally {
      server.close();
    }
  });
});
