#!/usr/bin/env node
// Runs every *.test.ts under test/ (nested folders included) with node's test runner through tsx.
// Node 20 does not expand globs itself, and `--test` with no files would silently find nothing,
// so the file list is built here and an empty list is an error.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const only = process.argv.slice(2);

function collect(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return collect(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

const files = collect(join(root, 'test'))
  .map((file) => relative(root, file))
  .filter((file) => only.length === 0 || only.some((prefix) => file.startsWith(prefix)))
  .sort();
if (files.length === 0) {
  console.error(`no test files found under test/${only.length ? ` matching ${only.join(', ')}` : ''}`);
  process.exit(1);
}

const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 2}`, ...files],
  { cwd: root, stdio: 'inherit' },
);
process.exit(result.status ?? 1);
