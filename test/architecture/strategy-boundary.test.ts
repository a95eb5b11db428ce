import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';

/**
 * The Engine never imports or type-switches a concrete strategy (issue 14; contract §6): strategies are
 * registered as Deployments by the registration modules (src/server/demos.ts, src/server/examples/*),
 * and the kernel and the Host's engine files know them only as Definitions and Dispatchers.
 */

const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const strategies = join(root, 'strategies');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((match) => (match[1] ?? match[2]) as string);
}

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

function boundaryViolations(files: readonly string[]): string[] {
  const violations: string[] = [];
  for (const file of files) {
    for (const specifier of imports(file)) {
      if (!specifier.startsWith('.')) continue;
      const target = resolve(dirname(file), specifier);
      if (target.startsWith(`${strategies}/`)) violations.push(`${relative(root, file)} imports the strategy ${specifier}`);
    }
  }
  return violations;
}

test('src/kernel and the engine/host files import nothing from strategies/ (only the registration modules name strategies)', () => {
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
