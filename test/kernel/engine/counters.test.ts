/**
 * Issue 10, fix 5: a uint64 counter the Engine advances stops before it wraps. A Step counter or a
 * prepared-Effects counter at 2^64−1 fails its Process with `engine.counter.exhausted` (never a
 * writer stop through an invalid event or identity); one below the end still works. Heads are
 * acknowledged ones edited to sit at the boundary, as a long-lived unlimited tree would.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Effect } from '../../../src/kernel/effect.js';
import { WaitKey } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import type { ProcessSnapshot } from '../../../src/kernel/process-snapshot.js';
import type { Result } from '../../../src/kernel/result.js';
import { Transition } from '../../../src/kernel/transition.js';
import { maxUint64 } from '../../../src/kernel/wire.js';
import { installHead, withRoot } from './edited-heads.js';
import { deploy, ProgramDefinition, published, RecordingCommitter, setup } from './harness.js';

/**
 * Step 1 pauses. Restored and running again, a Step opens one wait when `note` is unset, then
 * completes once the opening arrives.
 */
const program = deploy(
  new ProgramDefinition({
    name: 'test.counters',
    step: ({ step, state, signals }) => {
      if (step === 1) return Transition.pause(0, 'held');
      if (state.note === undefined) return { transition: Transition.continue(0, [Effect.wait(WaitKey.parse('k'))]), note: 'opened' };
      return Transition.complete(signals.length, Payload.encode({ steps: step }));
    },
  }),
  undefined,
  'counters',
);

/** Runs the program to its pause, edits the head with `edit` (running again), restores it and awaits the Result. */
async function restoredWith(edit: (root: ProcessSnapshot) => ProcessSnapshot): Promise<{ result: Result; root: ProcessSnapshot }> {
  const first = setup();
  const process = await first.engine.start(program, Payload.encode({}));
  await published(first.recorder, process.id, 'agent.process.paused');
  const head = await first.engine.captureTree(process.id);
  const edited = withRoot(head, (root) => edit(root.with({ status: 'running', pauseReason: undefined })));
  await installHead(first.committer, edited);
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(program, edited);
  const result = await restored.await();
  await restored.join();
  const stored = await second.committer.loadTree(process.id);
  return { result, root: stored!.root };
}

test('a Step counter at 2^64−1 fails the Process with engine.counter.exhausted instead of wrapping', async () => {
  const { result, root } = await restoredWith((root) => root.with({ committedSteps: maxUint64 }));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.cause, 'execution_failure');
  assert.equal(result.termination.failure?.kind, 'execution');
  assert.equal(result.termination.failure?.code, 'engine.counter.exhausted');
  assert.equal(root.committedSteps, maxUint64, 'no Step was committed');
});

test('a Step counter at 2^64−2 still runs its last representable Steps', async () => {
  // Step 2^64−1 opens the wait; the next Step would be 2^64 and is refused.
  const { result, root } = await restoredWith((root) => root.with({ committedSteps: maxUint64 - 1n }));
  assert.equal(result.termination.failure?.code, 'engine.counter.exhausted');
  assert.equal(root.committedSteps, maxUint64);
  assert.equal(root.counters.preparedEffects, 1n, 'the last Step prepared and adopted its wait');
});

test('a Step counter at 2^64−3 completes on Step 2^64−1', async () => {
  const { result, root } = await restoredWith((root) => root.with({ committedSteps: maxUint64 - 2n }));
  assert.equal(result.status, 'completed');
  assert.equal(root.committedSteps, maxUint64);
});

test('a prepared-Effects counter at 2^64−1 fails the Step that would prepare one more', async () => {
  const { result, root } = await restoredWith((root) => root.with({ counters: { ...root.counters, preparedEffects: maxUint64 } }));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.code, 'engine.counter.exhausted');
  assert.equal(root.prepared, undefined, 'nothing was prepared');
  assert.equal(root.counters.preparedEffects, maxUint64);
});

test('a prepared-Effects counter at 2^64−2 prepares its last Effect', async () => {
  const { result, root } = await restoredWith((root) => root.with({ counters: { ...root.counters, preparedEffects: maxUint64 - 1n } }));
  assert.equal(result.status, 'completed');
  assert.equal(root.counters.preparedEffects, maxUint64);
});
