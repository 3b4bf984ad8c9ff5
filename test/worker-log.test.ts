// A cluster's workers' log, passed on by the primary (src/operating/worker-log.ts):
// whatever the pipe's reads cut, the target gets whole lines, in order, none
// lost, and waits are honoured.
import { PassThrough } from 'node:stream';
import { describe, expect, test } from 'vitest';
import { createLogger, lineTarget } from '../src/operating/logger.ts';
import { type LineTarget, LONGEST_LINE_BYTES, relayLines } from '../src/operating/worker-log.ts';

/** A target that records what it is passed; `room` writes before it asks for a wait */
function recorder(room = Number.POSITIVE_INFINITY) {
  const passed: string[] = [];
  let waiting: (() => void) | undefined;
  let left = room;
  const target: LineTarget = {
    passOn(lines) {
      passed.push(lines);
      return --left > 0;
    },
    drained(resume) {
      waiting = resume;
    },
  };
  const drain = () => {
    left = room;
    const resume = waiting;
    waiting = undefined;
    resume?.();
  };
  return { target, passed, drain, waiting: () => waiting !== undefined };
}

/** Lines with multi-byte characters, as a worker's log could hold them */
const linesOf = (n: number, tag = '') =>
  Array.from({ length: n }, (_, i) => `{"n":${i},"tag":"${tag}","text":"${'é€😀x'.repeat(i % 17)}"}\n`);

/** The bytes cut at every `step`-th byte: through characters, between lines, anywhere */
function* cut(bytes: Buffer, step: number) {
  for (let at = 0; at < bytes.length; at += step) yield bytes.subarray(at, Math.min(at + step, bytes.length));
}

describe("the workers' log passed on by the primary", () => {
  test.each([1, 2, 7, 100, 4096, 1 << 16])('reads cut every %i bytes: whole lines, in order, none lost', async (step) => {
    const lines = linesOf(500);
    const { target, passed } = recorder();
    const source = new PassThrough();
    const relayed = relayLines(source, target);
    for (const piece of cut(Buffer.from(lines.join('')), step)) source.write(piece);
    source.end();
    await relayed;
    expect(passed.join('')).toBe(lines.join(''));
    for (const each of passed) expect(each.endsWith('\n')).toBe(true);
  });

  test('two workers at once: each passing on holds whole lines of one of them', async () => {
    const { target, passed } = recorder();
    const [a, b] = [new PassThrough(), new PassThrough()];
    const relayed = Promise.all([relayLines(a, target), relayLines(b, target)]);
    const pieces = (tag: string) => [...cut(Buffer.from(linesOf(300, tag).join('')), 33)];
    const [fromA, fromB] = [pieces('a'), pieces('b')];
    for (let i = 0; i < Math.max(fromA.length, fromB.length); i++) {
      if (fromA[i]) a.write(fromA[i]);
      if (fromB[i]) b.write(fromB[i]);
    }
    a.end();
    b.end();
    await relayed;
    const received = passed.join('').split('\n').slice(0, -1);
    for (const line of received) expect(() => JSON.parse(line)).not.toThrow();
    for (const tag of ['a', 'b']) {
      const ours = received.filter((line) => line.includes(`"tag":"${tag}"`));
      expect(ours.map((line) => `${line}\n`)).toEqual(linesOf(300, tag));
    }
  });

  test('a target with too much to write pauses the reading until it has drained', async () => {
    const lines = linesOf(200);
    const { target, passed, drain, waiting } = recorder(1);
    const source = new PassThrough();
    const relayed = relayLines(source, target);
    for (const piece of cut(Buffer.from(lines.join('')), 500)) source.write(piece);
    source.end();
    await new Promise((resolve) => setImmediate(resolve));
    // one passing on, then a wait: nothing more is read meanwhile
    expect(passed).toHaveLength(1);
    expect(waiting()).toBe(true);
    expect(source.isPaused()).toBe(true);
    while (waiting()) {
      drain();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await relayed;
    expect(passed.join('')).toBe(lines.join(''));
    expect(passed.length).toBeGreaterThan(10);
  });

  test('a line never ended is passed on at the bound, and what is left at the end gets its end', async () => {
    const { target, passed } = recorder();
    const source = new PassThrough();
    const relayed = relayLines(source, target);
    const endless = 'x'.repeat(LONGEST_LINE_BYTES + 10);
    for (const piece of cut(Buffer.from(endless), 1 << 16)) source.write(piece);
    source.write('{"last":true}\n{"unfinished":');
    source.end();
    await relayed;
    // memory stays bounded: the endless line went on once past the bound, not held to the end
    expect(passed[0]!.length).toBeGreaterThan(LONGEST_LINE_BYTES);
    expect(passed[0]!.length).toBeLessThanOrEqual(LONGEST_LINE_BYTES + (1 << 16) + 1);
    expect(passed.join('')).toBe(
      `${endless.slice(0, passed[0]!.length - 1)}\n${endless.slice(passed[0]!.length - 1)}{"last":true}\n{"unfinished":\n`,
    );
  });

  test('a broken pipe (the worker killed) still passes on what was read', async () => {
    const { target, passed } = recorder();
    const source = new PassThrough();
    const relayed = relayLines(source, target);
    source.write('{"a":1}\n{"b":');
    await new Promise((resolve) => setImmediate(resolve));
    source.destroy(new Error('EPIPE'));
    await relayed;
    expect(passed.join('')).toBe('{"a":1}\n{"b":\n');
  });

  test("a primary whose log goes elsewhere (the tests' destinations) gets its workers' lines one a write, as pino writes its own", () => {
    const written: string[] = [];
    const logger = createLogger({ destination: { write: (line: string) => void written.push(line) } });
    const target = lineTarget(logger);
    expect(target.passOn('{"worker":1}\n{"worker":2}\n')).toBe(true);
    logger.info('own');
    expect(written.slice(0, 2)).toEqual(['{"worker":1}\n', '{"worker":2}\n']);
    expect(JSON.parse(written[2]!)).toMatchObject({ msg: 'own' });
  });
});
