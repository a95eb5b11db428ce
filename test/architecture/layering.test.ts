import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { test } from 'node:test';
import { imports, sources } from './source-scan.js';

const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');



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

// One Redis layer: the stores (and, later, the transport) talk to Redis; everything else holds what they give it.
test('only src/store/ imports ioredis (src/, plugins/)', () => {
  const allowed = [join(root, 'src/store'), join(root, 'src/transport')];
  const files = [...sources(join(root, 'src')), ...sources(join(root, 'plugins'))];
  const violations = files
    .filter((file) => !allowed.some((folder) => file.startsWith(`${folder}/`)))
    .flatMap((file) => imports(file).filter((specifier) => /^ioredis(\/|$)/.test(specifier)).map((specifier) => `${relative(root, file)} → ${specifier}`));
  assert.deepEqual(violations, []);
  assert.ok(imports(join(root, 'src/store/redis/connection.ts')).includes('ioredis'), 'the scan sees the one connection module');
});

// Every Redis key is built in keys.ts: a key formed anywhere else escapes the hash-tag and layout rules.
test('no file outside src/store/redis/keys.ts forms a Redis key', () => {
  const keys = join(root, 'src/store/redis/keys.ts');
  // A template that joins a prefix to more key text, a hash tag, or a literal `scope:` key.
  const keyShapes = [/\$\{\s*[\w.#]*[pP]refix\s*\}:/, /:\{\$\{/, /['"`]scope:(?!\/\/)[a-z{]/];
  const files = [...sources(join(root, 'src')), ...sources(join(root, 'plugins'))].filter((file) => file !== keys);
  const violations: string[] = [];
  for (const file of files) {
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, index) => {
        const code = line.replace(/\/\/.*$/, '');
        if (/^\s*\*/.test(code)) return;
        if (keyShapes.some((shape) => shape.test(code))) violations.push(`${relative(root, file)}:${index + 1} ${line.trim()}`);
      });
  }
  assert.deepEqual(violations, []);
  // The guard itself: keys.ts matches the shapes it bans elsewhere.
  assert.ok(readFileSync(keys, 'utf8').split('\n').some((line) => keyShapes.some((shape) => shape.test(line))));
});

// Everything above the kernel uses its curated surface (src/kernel/index.ts), so the kernel can change its
// internals freely. Three internal modules are shared on purpose, each for a reason:
const sharedKernelInternals: Readonly<Record<string, string>> = {
  'src/kernel/deferred.ts': 'promise and abort plumbing (deferred, abortable, linkedAbort) the supervisor and Host use as the kernel does',
  'src/kernel/canonical-json.ts': 'the JSON tokenizer: the process dispatcher speaks the kernel\'s JSON lines',
  'src/kernel/wire.ts': 'the canonical wire writer and the uint64 bound, for stores that encode kernel values',
};

test('outside the kernel, only its surface (and three named internals) is imported', () => {
  const kernel = join(root, 'src/kernel');
  const files = [...sources(join(root, 'src')), ...sources(join(root, 'plugins'))].filter(
    // src/testing is the kernel's own conformance kit: it builds fixtures from the internals.
    (file) => !file.startsWith(`${kernel}/`) && !file.startsWith(`${join(root, 'src/testing')}/`),
  );
  const violations: string[] = [];
  for (const file of files) {
    for (const specifier of imports(file)) {
      if (!specifier.startsWith('.')) continue;
      const target = relative(root, resolve(dirname(file), specifier)).replace(/\.js$/, '.ts');
      if (!target.startsWith('src/kernel/') || target === 'src/kernel/index.ts' || target in sharedKernelInternals) continue;
      violations.push(`${relative(root, file)} → ${specifier}`);
    }
  }
  assert.deepEqual(violations, []);
  assert.ok(files.length > 40, 'the scan sees the layers above the kernel');
});
