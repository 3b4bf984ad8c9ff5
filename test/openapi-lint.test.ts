// The published OpenAPI document passes Redocly (recommended) and Spectral
// (spectral:oas) with the committed rulesets, with no error and no warning
// (SPEC §16): `npm run lint:openapi`, run here so that `npm test` fails on any.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';
import { apiRoutes } from '../src/server/route-table.ts';
import { publishedDocument } from '../src/http/service-routes.ts';

const root = path.resolve(import.meta.dirname, '..');
const run = (args: string[]) =>
  promisify(execFile)(process.execPath, [path.join(root, 'scripts', 'lint-openapi.ts'), ...args], { cwd: root, maxBuffer: 64 << 20 }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, stdout: `${e.stdout}${e.stderr}` }),
  );

// both linters start a fresh Node and read the whole document: tens of seconds on a busy machine
test('redocly and spectral find nothing in the published document, and do find a planted problem', { timeout: 600_000 }, async () => {
  const folder = await mkdtemp(path.join(tmpdir(), 'rowgate-openapi-test-'));
  try {
    // the control: an operation without a summary or description, with an undeclared tag
    const broken = publishedDocument(apiRoutes) as unknown as { paths: Record<string, Record<string, Record<string, unknown>>> };
    const operation = broken.paths['/healthz']!.get!;
    delete operation.description;
    operation.tags = ['undeclared'];
    const brokenFile = path.join(folder, 'broken.json');
    await writeFile(brokenFile, JSON.stringify(broken));
    const [clean, planted] = await Promise.all([run([]), run([brokenFile])]);
    expect(clean.stdout).toContain('redocly: 0 errors, 0 warnings, 0 problems in all');
    expect(clean.stdout).toContain('spectral: 0 errors, 0 warnings, 0 problems in all');
    expect(clean).toMatchObject({ code: 0 });
    expect(planted.code).toBe(1);
    expect(planted.stdout).toMatch(/spectral: 0 errors, [1-9]\d* warnings/);
    expect(planted.stdout).toContain('operation-tag-defined');
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
});
