import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import { linkedAbort } from '../../src/kernel/deferred.js';

/** A link to a long-lived signal must leave nothing behind on it, aborted or not. */

test('linkedAbort: aborts with the first source\'s reason, then leaves no listener on any source', () => {
  const shutdown = new AbortController();
  const request = new AbortController();
  const link = linkedAbort([request.signal, shutdown.signal]);
  assert.equal(link.signal.aborted, false);
  assert.equal(getEventListeners(shutdown.signal, 'abort').length, 1);
  request.abort(new Error('client gone'));
  assert.equal(link.signal.aborted, true);
  assert.equal((link.signal.reason as Error).message, 'client gone');
  assert.equal(getEventListeners(shutdown.signal, 'abort').length, 0, 'an aborted link detaches itself');
  link.release(); // idempotent
});

test('linkedAbort: released links leave a long-lived source as they found it', () => {
  const shutdown = new AbortController();
  for (let index = 0; index < 1_000; index += 1) {
    const link = linkedAbort([new AbortController().signal, shutdown.signal], 60_000);
    link.release();
  }
  assert.equal(getEventListeners(shutdown.signal, 'abort').length, 0);
  const kept = linkedAbort([shutdown.signal]);
  shutdown.abort('stopping');
  assert.equal(kept.signal.reason, 'stopping', 'an unreleased link still follows its source');
});

test('linkedAbort: an already aborted source aborts at once; a timeout aborts with a TimeoutError', async () => {
  const done = AbortSignal.abort('already');
  const shutdown = new AbortController();
  const immediate = linkedAbort([shutdown.signal, done]);
  assert.equal(immediate.signal.reason, 'already');
  assert.equal(getEventListeners(shutdown.signal, 'abort').length, 0);
  const timed = linkedAbort([shutdown.signal], 1);
  await new Promise((resolve) => timed.signal.addEventListener('abort', resolve, { once: true }));
  assert.equal((timed.signal.reason as DOMException).name, 'TimeoutError');
  assert.equal(getEventListeners(shutdown.signal, 'abort').length, 0);
});
