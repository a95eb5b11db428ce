import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { test } from 'node:test';

const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s*['"]([^'"]+)['"]/g)].map((match) => match[1] as string);
}

// The kernel is a pure library: storage, transport and HTTP depend on it, never the reverse.
test('src/kernel imports only itself, node:crypto, node:buffer and ajv', () => {
  const allowed = new Set(['node:crypto', 'node:buffer', 'ajv', 'ajv/dist/2020.js', 'ajv-formats']);
  const kernel = join(root, 'src/kernel');
  const violations: string[] = [];
  for (const file of sources(kernel)) {
    for (const specifier of imports(file)) {
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier);
        if (!target.startsWith(`${kernel}/`)) violations.push(`${relative(root, file)} → ${specifier}`);
      } else if (!allowed.has(specifier)) {
        violations.push(`${relative(root, file)} → ${specifier}`);
      }
    }
  }
  assert.deepEqual(violations, []);
});

test('the layering scan sees the kernel (guards against an empty scan)', () => {
  assert.ok(sources(join(root, 'src/kernel')).length > 10);
  assert.ok(imports(join(root, 'src/kernel/payload.ts')).some((specifier) => specifier === './digest.js'));
});
