import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { repoRoot, sources } from './source-scan.js';

// Playwright evaluates a string predicate again on every poll, inside the page. Our pages serve a CSP
// without 'unsafe-eval', so such a wait passes when its condition already holds and throws an
// EvalError when it has to poll: a flaky test that CI found. A function predicate is evaluated once.
test('browser tests give waitForFunction a function, never a string', () => {
  const self = new URL(import.meta.url).pathname;
  const files = sources(join(repoRoot, 'test')).filter((file) => file !== self);
  const browserTests = files.filter((file) => readFileSync(file, 'utf8').includes('waitForFunction('));
  assert.ok(browserTests.length >= 2, 'the scan sees the browser tests');
  const stringPredicate = /waitForFunction\(\s*[`'"]/g;
  const violations = browserTests.flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(stringPredicate)].map((match) => `${relative(repoRoot, file)} at offset ${match.index}`),
  );
  assert.deepEqual(violations, []);
});
