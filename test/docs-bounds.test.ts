// The docs stay references a reader can hold (CONTRIBUTING.md, "Docs are
// references"): the two that grow with every decision and measurement keep
// under their bounds, and no document names a src/ file that is not there.
// The code stays readable a file at a time: no file of src/ is longer than
// SOURCE_BOUND lines.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { projectRoot } from '../src/db/setup.ts';

const BOUNDS: Record<string, number> = { 'docs/performance.md': 200, 'docs/decisions.md': 600 };
const SOURCE_BOUND = 320;

const lineCount = (file: string) => readFileSync(path.join(projectRoot, file), 'utf8').trimEnd().split('\n').length;

const documents = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(path.join(projectRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

describe('the docs', () => {
  test.each(Object.entries(BOUNDS))('%s stays under %i lines', (file, bound) => {
    expect(lineCount(file), `${file}: move a topic to a document of its own`).toBeLessThan(bound);
  });

  test('name only src/ files that exist', () => {
    const missing = documents.flatMap((file) =>
      [...readFileSync(path.join(projectRoot, file), 'utf8').matchAll(/\bsrc\/[A-Za-z0-9_./-]+\.ts\b/g)]
        .map((match) => match[0])
        .filter((named) => !existsSync(path.join(projectRoot, named)))
        .map((named) => `${file}: ${named}`),
    );
    expect(missing).toEqual([]);
  });
});

describe('the code', () => {
  test(`has no file of src/ longer than ${SOURCE_BOUND} lines`, () => {
    const longer = readdirSync(path.join(projectRoot, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `src/${name}`)
      .filter((file) => lineCount(file) > SOURCE_BOUND)
      .map((file) => `${file}: ${lineCount(file)} lines; split it by what its parts hold`);
    expect(longer).toEqual([]);
  });
});
