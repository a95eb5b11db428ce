/**
 * The fix 1: a Strategy bug fails its Process with a contract Failure; it never stops the
 * writer (which every restore would repeat). These failed before the fix with a RuntimeError.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { Effect } from '../../../src/kernel/effect.js';
import { WaitKey } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Transition } from '../../../src/kernel/transition.js';
import { deploy, ProgramDefinition, setup } from './harness.js';

async function failsWith(step: (context: { step: number }) => Transition | Promise<Transition>): Promise<void> {
  const { engine } = setup();
  const deployment = deploy(new ProgramDefinition({ name: 'test.buggy', step }));
  const result = await engine.run(deployment, Payload.encode({}));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.cause, 'contract_failure');
  assert.equal(result.termination.failure?.code, 'execution.transition.invalid');
}

test('two open waits on one key fail the Process (contract), not the writer', async () => {
  const key = WaitKey.parse('twice');
  await failsWith(() => Transition.continue(0, [Effect.wait(key), Effect.wait(key)]));
});

test('a Step resolving to something that is not a Transition fails the Process (contract)', async () => {
  await failsWith(() => ({ kind: 'complete' }) as unknown as Transition);
});

test('a wait on a key whose wait is still open fails the Process (contract)', async () => {
  const key = WaitKey.parse('again');
  // Step 1 opens it; Step 2 (the opening still unconsumed) declares the same key again.
  await failsWith(() => Transition.continue(0, [Effect.wait(key)]));
});
