// The docs stay references a reader can hold (CONTRIBUTING.md, "Docs are
// references"): the two that grow with every decision and measurement keep
// under their bounds, and no document names a src/ file that is not there.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { projectRoot } from '../src/db/setup.ts';

const BOUNDS: Record<string, number> = { 'docs/performance.md': 200, 'docs/decisions.md': 600 };

const documents = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(path.join(projectRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

describe('the docs', () => {
  test.each(Object.entries(BOUNDS))('%s stays under %i lines', (file, bound) => {
    const lines = readFileSync(path.join(projectRoot, file), 'utf8').trimEnd().split('\n').length;
    expect(lines, `${file}: move a topic to a document of its own`).toBeLessThan(bound);
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
