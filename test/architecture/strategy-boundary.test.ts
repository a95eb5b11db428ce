import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { imports, sources } from './source-scan.js';

/**
 * The Engine never imports or type-switches a concrete strategy (issue 14; contract §6): strategies are
 * registered as Deployments by the registration modules (src/server/demos.ts, src/server/examples/*),
 * and the kernel and the Host's engine files know them only as Definitions and Dispatchers.
 */

const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const strategies = join(root, 'strategies');



/** The text of a file without its comments (what the compiler sees). */
function code(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** The Engine's side: the kernel, and the Host files that drive the Engine. */
function engineFiles(): string[] {
  const server = join(root, 'src/server');
  const hostFiles = readdirSync(server)
    .filter((name) => /^(engine|host)[\w-]*\.ts$/.test(name))
    .map((name) => join(server, name));
  return [...sources(join(root, 'src/kernel')), ...hostFiles];
}

/** Where a strategy may be named: the modules that register Deployments. */
function isRegistrationModule(target: string): boolean {
  const path = relative(root, target).replace(/\.js$/, '.ts');
  return path === 'src/server/demos.ts' || path.startsWith('src/server/examples/');
}

/** The words a concrete strategy or its kinds would leave in code: family names and deployment prefixes. */
const strategyNames = /\b(workflow|coordination|collaboration|interaction|planning|goap|messaging)\b|['"`](demo|example)\.[a-z]/i;

/** The module a relative specifier names (`./x.js` → `./x.ts`), or undefined for a package. */
function resolveImport(file: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(file), specifier);
  const ts = target.replace(/\.js$/, '.ts');
  return existsSync(ts) ? ts : target;
}

/**
 * Every path from `files` to a module under strategies/, following relative imports transitively but not
 * through a registration module (naming strategies is what those are for).
 */
function boundaryViolations(files: readonly string[]): string[] {
  const violations: string[] = [];
  const seen = new Set<string>();
  const visit = (file: string, chain: readonly string[]): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const specifier of imports(file)) {
      const target = resolveImport(file, specifier);
      if (target === undefined) continue;
      const path = [...chain, relative(root, target)];
      if (target.startsWith(`${strategies}/`)) violations.push(path.join(' → '));
      else if (!isRegistrationModule(target) && target.endsWith('.ts') && existsSync(target)) visit(target, path);
    }
  };
  for (const file of files) visit(file, [relative(root, file)]);
  return violations;
}

test('src/kernel and the engine/host files reach nothing in strategies/, directly or transitively, except through the registration modules', () => {
  const files = engineFiles();
  assert.deepEqual(boundaryViolations(files), []);
  // The guard: the scan is not empty, sees the Host's engine file, and sees its one registration import.
  assert.ok(files.length > 40, `the scan sees the kernel and the host files (${files.length})`);
  const engineHost = join(root, 'src/server/engine-host.ts');
  assert.ok(files.includes(engineHost));
  assert.ok(imports(engineHost).some((specifier) => isRegistrationModule(resolve(dirname(engineHost), specifier))), 'engine-host registers deployments through demos.ts');
  // And the check catches what it bans: the registration module itself imports strategies.
  assert.notDeepEqual(boundaryViolations([join(root, 'src/server/demos.ts')]), []);
});

test('no kernel file names a strategy or a strategy kind in its code (no type switch on a concrete strategy)', () => {
  const violations: string[] = [];
  const kernel = sources(join(root, 'src/kernel'));
  for (const file of kernel) {
    code(file)
      .split('\n')
      .forEach((line, index) => {
        if (strategyNames.test(line)) violations.push(`${relative(root, file)}:${index + 1} ${line.trim()}`);
      });
  }
  assert.deepEqual(violations, []);
  assert.ok(kernel.length > 40, 'the scan sees the kernel');
  // The pattern finds what it looks for (a demo kind, a family name), so an empty result means something.
  for (const sample of ["if (kind === 'demo.echo')", "case 'workflow':", 'const coordination = 1;', 'Messaging']) assert.match(sample, strategyNames);
  assert.doesNotMatch("const name = 'demonstrate';", strategyNames);
});
