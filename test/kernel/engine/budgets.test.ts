import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Budget } from '../../../src/kernel/budget.js';
import { Effect } from '../../../src/kernel/effect.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { EffectId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Quota } from '../../../src/kernel/quota.js';
import { RuntimeError } from '../../../src/kernel/runtime-error.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { liveReservation } from '../../../src/kernel/snapshot-admission.js';
import { Transition } from '../../../src/kernel/transition.js';
import { TreeLimits } from '../../../src/kernel/tree-limits.js';
import { echoDefinition } from '../../../src/testing/example-definitions.js';
import { ScriptedDispatcher } from '../../../src/testing/scripted-dispatcher.js';
import { deploy, ProgramDefinition, published, rejectsWith, setup } from './harness.js';

const hello = Payload.encode({ value: 'hello' });

function budget(steps: number | undefined, effects: number | undefined, signals: number | undefined): Budget {
  const quota = (value: number | undefined) => (value === undefined ? Quota.unlimited() : Quota.of(value));
  return Budget.of({ steps: quota(steps), effects: quota(effects), signals: quota(signals) });
}

function echo(calls = 1) {
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'never',
    calls: Array.from({ length: calls }, () => ({ settlement: { status: 'succeeded' as const, payload: hello } })),
  });
  return { dispatcher, deployment: deploy(echoDefinition, dispatcher) };
}

test('a finite zero steps budget forbids computation: engine.limit.steps before any Step', async () => {
  const { deployment, dispatcher } = echo();
  const context = setup({ budget: budget(0, undefined, undefined) });
  const result = await context.engine.run(deployment, hello);
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.cause, 'execution_failure');
  assert.equal(result.termination.failure?.code, 'engine.limit.steps');
  assert.equal(result.usage.committedSteps, 0n);
  assert.equal(dispatcher.requests().length, 0);
  assert.ok(!context.recorder.events().some((event) => event.name === 'agent.step.started'));
});

test('the steps budget bounds committed Steps: the Step beyond it is refused', async () => {
  const { deployment, dispatcher } = echo();
  const result = await setup({ budget: budget(1, undefined, undefined) }).engine.run(deployment, hello);
  assert.equal(result.termination.failure?.code, 'engine.limit.steps');
  assert.equal(result.usage.committedSteps, 1n);
  assert.equal(dispatcher.requests().length, 1);
});

test('a finite zero effects budget rejects the batch: engine.limit.effects, nothing dispatched', async () => {
  const { deployment, dispatcher } = echo();
  const result = await setup({ budget: budget(undefined, 0, undefined) }).engine.run(deployment, hello);
  assert.equal(result.termination.failure?.kind, 'execution');
  assert.equal(result.termination.failure?.code, 'engine.limit.effects');
  assert.equal(result.usage.preparedEffects, 0n);
  assert.equal(dispatcher.requests().length, 0);
});

test('a finite zero signals budget cannot hold the settlement: engine.limit.signals, nothing dispatched', async () => {
  const { deployment, dispatcher } = echo();
  const result = await setup({ budget: budget(undefined, undefined, 0) }).engine.run(deployment, hello);
  assert.equal(result.termination.failure?.code, 'engine.limit.signals');
  assert.equal(result.usage.acceptedSignals, 0n);
  assert.equal(dispatcher.requests().length, 0);
});

test('an exactly sufficient finite budget and an unlimited one reach the same result and usage', async () => {
  for (const granted of [budget(2, 1, 1), Budget.unlimited()]) {
    const { deployment } = echo();
    const result = await setup({ budget: granted }).engine.run(deployment, hello);
    assert.equal(result.status, 'completed');
    assert.deepEqual(
      [result.usage.committedSteps, result.usage.preparedEffects, result.usage.acceptedSignals],
      [2n, 1n, 1n],
    );
  }
});

// Snapshot bytes. A live Process reserves its worst-case terminal growth (~170 KiB), so the
// limits below leave room for a small Process but not for a 100 kB candidate or settlement.
const processLimit = 250_000;
const big = 'x'.repeat(100_000);

test('the reservation a live Process makes is what the limits below are sized against', async () => {
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ error: new Error('held') }] });
  const context = setup();
  const process = await context.engine.start(deploy(echoDefinition, dispatcher), hello);
  await context.committer.acknowledgement((record) => record.kind === 'pending');
  const pending = context.committer.acknowledged.at(-1)!.snapshot.root;
  const needed = pending.encodedSize + liveReservation(pending);
  assert.ok(needed < processLimit, `a pending echo needs ${needed} bytes`);
  assert.ok(needed + big.length > processLimit, 'a 100 kB settlement must not fit');
  await process.kill('done');
});

test('start is rejected with resource_limit_exceeded when the Process cannot fit its reservations', async () => {
  const { deployment } = echo();
  const context = setup({ treeLimits: TreeLimits.of({ maxProcessSnapshotBytes: Quota.of(100_000) }) });
  await rejectsWith(context.engine.start(deployment, hello), ErrorCode.resourceLimitExceeded);
  assert.equal(context.committer.attempts.length, 0, 'nothing was committed');
  const whole = setup({ treeLimits: TreeLimits.of({ maxSnapshotBytes: Quota.of(100_000) }) });
  await rejectsWith(whole.engine.start(deployment, hello), ErrorCode.resourceLimitExceeded);
});

test('a Step candidate that cannot fit the snapshot limits fails the Process with engine.limit.snapshot', async () => {
  const definition = new ProgramDefinition({
    step: ({ step }) => (step === 1 ? { transition: Transition.continue(0), note: big } : Transition.complete(0, Payload.encode('done'))),
  });
  const context = setup({ treeLimits: TreeLimits.of({ maxProcessSnapshotBytes: Quota.of(processLimit) }) });
  const process = await context.engine.start(deploy(definition), Payload.encode({}));
  const result = await process.await();
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.kind, 'execution');
  assert.equal(result.termination.failure?.code, 'engine.limit.snapshot');
  assert.equal(result.usage.committedSteps, 0n);
  await process.join();
});

test('a prepared batch that cannot fit fails the Process before any dispatch', async () => {
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ settlement: { status: 'succeeded', payload: hello } }] });
  const definition = new ProgramDefinition({
    step: () => Transition.continue(0, [Effect.dispatcher(Payload.encode({ value: big }))]),
  });
  const context = setup({ treeLimits: TreeLimits.of({ maxProcessSnapshotBytes: Quota.of(processLimit) }) });
  const result = await context.engine.run(deploy(definition, dispatcher), Payload.encode({}));
  assert.equal(result.termination.failure?.code, 'engine.limit.snapshot');
  assert.equal(dispatcher.requests().length, 0);
  assert.deepEqual(context.committer.kinds(), ['start', 'terminal']);
});

test('a settlement that cannot fit stops the runtime with its Effect unresolved', async () => {
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'never',
    calls: [{ settlement: { status: 'succeeded', payload: Payload.encode({ value: big }) } }],
  });
  const context = setup({ treeLimits: TreeLimits.of({ maxProcessSnapshotBytes: Quota.of(processLimit) }) });
  const process = await context.engine.start(deploy(echoDefinition, dispatcher), hello);
  const error = await process.await().then(
    () => assert.fail('expected a RuntimeError'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof RuntimeError, String(error));
  const effectId = EffectId.derive(process.id, 1n, 0);
  assert.deepEqual(error.unresolvedEffectIds.map(String), [effectId.toString()]);
  assert.equal(error.causeCode, ErrorCode.resourceLimitExceeded);
  assert.equal(error.classification().code, 'engine.limit.snapshot');
  const stopped = await published(context.recorder, process.id, 'agent.runtime.stopped');
  assert.equal(stopped.runtimeStopped()?.failure.code, 'engine.limit.snapshot');
  const head = await context.committer.loadTree(process.id);
  assert.equal(head?.root.effectPhase(effectId), 'pending');
  assert.ok(error.headDigest.equals(head!.digest));
});

test('a resolution that cannot fit is rejected with the Unknown untouched; a smaller one succeeds', async () => {
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ error: new Error('lost') }] });
  const context = setup({ treeLimits: TreeLimits.of({ maxProcessSnapshotBytes: Quota.of(processLimit) }) });
  const process = await context.engine.start(deploy(echoDefinition, dispatcher), hello);
  await context.committer.acknowledgement((record) => record.kind === 'settled');
  const effectId = EffectId.derive(process.id, 1n, 0);
  await rejectsWith(process.resolveUnknownEffect(effectId, Settlement.of('succeeded', Payload.encode({ value: big }))), ErrorCode.resourceLimitExceeded);
  const head = await context.committer.loadTree(process.id);
  assert.deepEqual(head?.root.unknownEffectIds().map(String), [effectId.toString()]);
  await process.resolveUnknownEffect(effectId, Settlement.of('succeeded', hello));
  assert.equal((await process.await()).status, 'completed');
});
