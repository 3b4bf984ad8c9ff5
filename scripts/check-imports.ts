// `npm test`'s first check: every import of src/ points down its layers and no
// imports form a circle (the rules and the layer order: .dependency-cruiser.cjs).
//
// dependency-cruiser parses TypeScript only through the TypeScript 5 compiler
// API, which TypeScript 7 no longer has; Node strips the types itself. So the
// check cruises a copy of src/ with the types stripped, in which `import type`
// is kept as an import: a type-only import is an arrow between layers too.
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire, stripTypeScriptTypes } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cruise, type IConfiguration } from 'dependency-cruiser';

const root = path.resolve(import.meta.dirname, '..');
const config = createRequire(import.meta.url)(path.join(root, '.dependency-cruiser.cjs')) as IConfiguration;

/** A module's text as plain JavaScript whose imports, type-only ones included, are all still there. */
function asJavaScript(text: string): string {
  const typesAsValues = text
    .replace(/\bimport\s+type\s+(?=[{\w*])/g, 'import ')
    .replace(/\bexport\s+type\s+(?=[{*])/g, 'export ')
    .replace(/\b(import|export)\s*\{[^}]*\}\s*from/g, (statement) => statement.replace(/([{,]\s*)type\s+(?=[\w$])/g, '$1'));
  return stripTypeScriptTypes(typesAsValues).replace(/(['"])(\.{1,2}\/[^'"]+)\.ts\1/g, '$1$2.js$1');
}

const copy = mkdtempSync(path.join(tmpdir(), 'rowgate-imports-'));
try {
  for (const file of readdirSync(path.join(root, 'src'), { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith('.ts')) continue;
    const target = path.join(copy, 'src', file.replace(/\.ts$/, '.js'));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, asJavaScript(readFileSync(path.join(root, 'src', file), 'utf8')));
  }
  process.chdir(copy);
  const result = await cruise(['src'], { ...config.options, ruleSet: { forbidden: config.forbidden }, validate: true, outputType: 'err' });
  const output = typeof result.output === 'string' ? result.output : JSON.stringify(result.output);
  process.stdout.write(output.replaceAll('.js', '.ts'));
  process.exitCode = result.exitCode;
} finally {
  process.chdir(root);
  rmSync(copy, { recursive: true, force: true });
}
