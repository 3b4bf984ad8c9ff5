// `npm run lint:openapi`: the published OpenAPI document of each API version, linted by Redocly
// (recommended) and Spectral (spectral:oas) with the committed rulesets
// (redocly.yaml, .spectral.yaml). Prints each linter's counts and problems;
// exits 1 on any problem of either (SPEC §16). `npm run lint:openapi -- file.json`
// lints that file instead.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../src/db/setup.ts';
import { apiRoutes } from '../src/server/route-table.ts';
import { publishedDocument } from '../src/http/service-routes.ts';
import { API_VERSIONS } from '../src/core/versions.ts';

const run = promisify(execFile);

/** stdout of a linter, whatever its exit code (both exit 1 when they find problems) */
async function output(name: string, args: string[]): Promise<string> {
  const options = { cwd: projectRoot, maxBuffer: 64 << 20, env: { ...process.env, NO_COLOR: '1' } };
  return run(path.join(projectRoot, 'node_modules', '.bin', name), args, options).then(
    (r) => r.stdout,
    (e: { stdout?: string; stderr?: string }) => {
      if (!e.stdout) throw new Error(`${name} failed: ${e.stderr ?? e}`);
      return e.stdout;
    },
  );
}

interface Problem {
  severity: string;
  rule: string;
  message: string;
  where: string;
}

async function redocly(file: string): Promise<Problem[]> {
  const report = JSON.parse(
    await output('redocly', ['lint', file, '--config', path.join(projectRoot, 'redocly.yaml'), '--format', 'json']),
  );
  return (report.problems as { severity: string; ruleId: string; message: string; location?: { pointer?: string }[] }[]).map((p) => ({
    severity: p.severity,
    rule: p.ruleId,
    message: p.message,
    where: p.location?.[0]?.pointer ?? '',
  }));
}

const SPECTRAL_SEVERITY = ['error', 'warning', 'info', 'hint'];

async function spectral(file: string): Promise<Problem[]> {
  const text = await output('spectral', [
    'lint',
    file,
    '--ruleset',
    path.join(projectRoot, '.spectral.yaml'),
    '--format',
    'json',
    '--quiet',
  ]);
  const report = JSON.parse(text || '[]') as { severity: number; code: string; message: string; path: (string | number)[] }[];
  return report.map((p) => ({
    severity: SPECTRAL_SEVERITY[p.severity] ?? String(p.severity),
    rule: p.code,
    message: p.message,
    where: `#/${p.path.join('/')}`,
  }));
}

// a file named on the command line is linted instead of the published document (the test's broken copy)
const given = process.argv[2];
const folder = await mkdtemp(path.join(tmpdir(), 'rowgate-openapi-'));
try {
  // each API version's document (SPEC §23), or the file named
  const files: [string, string][] = given
    ? [[given, path.resolve(given)]]
    : API_VERSIONS.names.map((version) => [`version ${version}`, path.join(folder, `openapi-${version}.json`)]);
  for (const [i, version] of (given ? [] : API_VERSIONS.names).entries()) {
    await writeFile(files[i]![1], JSON.stringify(publishedDocument(apiRoutes, version), null, 2));
  }
  let failed = false;
  for (const [label, file] of files) {
    for (const [name, lint] of [
      ['redocly', redocly],
      ['spectral', spectral],
    ] as const) {
      const problems = await lint(file);
      const count = (severity: string) => problems.filter((p) => p.severity === severity).length;
      console.log(
        `${label}: ${name}: ${count('error')} errors, ${count('warning') + count('warn')} warnings, ${problems.length} problems in all`,
      );
      for (const p of problems) console.log(`  ${p.severity} ${p.rule} ${p.where}: ${p.message}`);
      // infos and hints count too: the rulesets turn off what is accepted, and say why
      if (problems.length) failed = true;
    }
  }
  if (failed) process.exitCode = 1;
} finally {
  await rm(folder, { recursive: true, force: true });
}
