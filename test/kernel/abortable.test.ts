import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import { abortable, deferred } from '../../src/kernel/deferred.js';

/**
 * `abortable` waits on long-lived promises (a Process's result under repeated long polls): a wait that
 * gives up must leave nothing on the promise or the signal, and every wait still gets the outcome.
 */

/** Counts the reactions attached to one promise. */
function counted<T>(): { promise: Promise<T>; resolve(value: T): void; reject(error: unknown): void; reactions(): number } {
  const inner = deferred<T>();
  let reactions = 0;
  const promise = inner.promise;
  const then = promise.then.bind(promise);
  Object.defineProperty(promise, 'then', {
    value: (...args: Parameters<typeof then>) => {
      reactions += 1;
      return then(...args);
    },
  });
  return { promise, resolve: inner.resolve, reject: inner.reject, reactions: () => reactions };
}

test('abortable: a thousand waits that give up attach one reaction to the promise and leave no listener', async () => {
  const result = counted<string>();
  for (let index = 0; index < 1_000; index += 1) {
    const abort = new AbortController();
    const wait = abortable(result.promise, abort.signal);
    abort.abort(new Error('poll over'));
    await assert.rejects(wait, /poll over/);
    assert.equal(getEventListeners(abort.signal, 'abort').length, 0);
  }
  assert.equal(result.reactions(), 1, 'waits on one promise share one reaction');
  const late = abortable(result.promise, new AbortController().signal);
  result.resolve('done');
  assert.equal(await late, 'done');
});

test('abortable: every wait still pending gets the outcome, a resolution or a rejection; one that gave up does not', async () => {
  const resolved = deferred<number>();
  const keep = new AbortController();
  const gone = new AbortController();
  const waits = [abortable(resolved.promise, keep.signal), abortable(resolved.promise, keep.signal)];
  const givenUp = abortable(resolved.promise, gone.signal);
  gone.abort('gave up');
  await assert.rejects(givenUp, (reason: unknown) => reason === 'gave up');
  resolved.resolve(7);
  assert.deepEqual(await Promise.all(waits), [7, 7]);
  assert.equal(getEventListeners(keep.signal, 'abort').length, 0, 'settled waits remove their listeners');

  const rejected = deferred<number>();
  const failing = abortable(rejected.promise, new AbortController().signal);
  rejected.reject(new Error('stopped'));
  await assert.rejects(failing, /stopped/);
  // A wait that starts after the promise settled still sees the outcome.
  assert.equal(await abortable(resolved.promise, new AbortController().signal), 7);
  await assert.rejects(abortable(rejected.promise, new AbortController().signal), /stopped/);
  await assert.rejects(abortable(resolved.promise, AbortSignal.abort('already')), (reason: unknown) => reason === 'already');
});
