// The log's chunks (src/operating/log-chunks.ts): every line reaches the
// destination, in order, in chunks of about the configured size; flushes and
// the process's exit write what is gathered.
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { ChunkedDestination, type FlushableDestination } from '../src/operating/log-chunks.ts';

/** A destination that records what it is given, and how it was flushed */
function recorder() {
  const writes: string[] = [];
  const flushes: string[] = [];
  const target: FlushableDestination = {
    write: (chunk: string) => void writes.push(chunk),
    flush: (callback) => {
      flushes.push('flush');
      callback?.();
    },
    flushSync: () => void flushes.push('flushSync'),
  };
  return { target, writes, flushes };
}

describe('the log written in chunks', () => {
  test('every line arrives once, in order, in chunks of at least the chunk size', () => {
    const { target, writes } = recorder();
    const destination = new ChunkedDestination(target, 1024);
    const lines = Array.from({ length: 5_000 }, (_, i) => `{"n":${i},"text":${JSON.stringify('é€😀x'.repeat(i % 40))}}\n`);
    for (const line of lines) destination.write(line);
    expect(writes.length).toBeGreaterThan(10);
    for (const chunk of writes) expect(chunk.length).toBeGreaterThanOrEqual(1024);
    destination.flushSync();
    expect(writes.join('')).toBe(lines.join(''));
  });

  test('nothing is written before a chunk is full; a flush writes what is gathered, then flushes the target', () => {
    const { target, writes, flushes } = recorder();
    const destination = new ChunkedDestination(target, 1024);
    destination.write('{"a":1}\n');
    destination.write('{"b":2}\n');
    expect(writes).toEqual([]);
    let flushed = false;
    destination.flush(() => {
      flushed = true;
    });
    expect(writes).toEqual(['{"a":1}\n{"b":2}\n']);
    expect(flushes).toEqual(['flush']);
    expect(flushed).toBe(true);
    // an empty flush writes nothing
    destination.flush();
    expect(writes).toHaveLength(1);
  });

  /** The lines a child process writes through the server's logger, then `ending` (JavaScript) */
  function linesOfChild(lines: number, ending: string): number[] {
    const logger = path.resolve(import.meta.dirname, '../src/operating/logger.ts');
    const script = `
      const { createLogger, flushLog } = await import(${JSON.stringify(logger)});
      const log = createLogger();
      for (let i = 0; i < ${lines}; i++) log.info({ i }, 'line');
      ${ending}
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    return run.stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { i: number }).i);
  }

  test('lines still gathered when the process exits without flushing are written by the exit handler', () => {
    // fewer than a chunk: none of them was handed to the destination before process.exit
    expect(linesOfChild(100, 'process.exit(0);')).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  test("the server's way out (flushLog, then exit) loses no line, chunks in flight included", () => {
    expect(linesOfChild(3000, 'await flushLog(log); process.exit(0);')).toEqual(Array.from({ length: 3000 }, (_, i) => i));
  });

  test('a reader that stops reading: the periodic flushes pile up nothing (no listener a flush, no warning)', async () => {
    const logger = path.resolve(import.meta.dirname, '../src/operating/logger.ts');
    // enough lines to fill the pipe, then twelve flush intervals while its write is stuck
    const script = `
      const { createLogger } = await import(${JSON.stringify(logger)});
      const log = createLogger();
      for (let i = 0; i < 20000; i++) log.info({ i, pad: 'x'.repeat(100) }, 'line');
      setTimeout(() => process.exit(0), 6500);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    // stdout is not read until the child has waited: its pipe stays full
    await new Promise((resolve) => setTimeout(resolve, 7000));
    child.stdout.resume();
    await new Promise((resolve) => child.once('exit', resolve));
    expect(stderr).not.toMatch(/MaxListenersExceededWarning/);
  }, 20_000);
});
