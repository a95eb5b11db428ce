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

// Strategies are deterministic Definitions: time and randomness enter only as Signal or input payloads.
test('strategies/ import only the kernel surface and use no clock, randomness, timers or I/O', () => {
  const strategies = join(root, 'strategies');
  const forbidden = /\b(Date\.now|new Date\(|Math\.random|setTimeout|setInterval|setImmediate|fetch\(|process\.env|performance\.now)/;
  const violations: string[] = [];
  const files = sources(strategies);
  assert.ok(files.length > 0, 'the scan sees strategies/');
  for (const file of files) {
    for (const specifier of imports(file)) {
      const target = specifier.startsWith('.') ? resolve(dirname(file), specifier) : specifier;
      const inside = target.startsWith(`${strategies}/`) || target.startsWith(`${join(root, 'src/kernel')}/`);
      if (!inside) violations.push(`${relative(root, file)} imports ${specifier}`);
    }
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        const code = line.replace(/\/\/.*$/, '');
        if (forbidden.test(code) && !/^\s*\*/.test(code)) violations.push(`${relative(root, file)}:${index + 1} ${line.trim()}`);
      });
  }
  assert.deepEqual(violations, []);
});
