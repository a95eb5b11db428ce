/**
 * Issue 10: rules that were implemented but that no test held (removing their code failed
 * nothing): a Wait on a WaitID the Engine never minted, snapshot-byte admission of a signal batch,
 * replay or resolution while a replay is in flight, the candidate of a Step that ends under
 * terminal intent, and a restored pending Effect that termination turns Unknown.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Effect } from '../../../src/kernel/effect.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { EffectId, WaitId, WaitKey } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { Transition } from '../../../src/kernel/transition.js';
import { TreeLimits } from '../../../src/kernel/tree-limits.js';
import { echoDefinition } from '../../../src/testing/example-definitions.js';
import { ScriptedDispatcher } from '../../../src/testing/scripted-dispatcher.js';
import { installHead, withRoot } from './edited-heads.js';
import { deferred, deploy, hostRequest, isSettled, ProgramDefinition, published, RecordingCommitter, rejectsWith, setup } from './harness.js';
import { dispatchProgram } from './programs.js';

const hello = Payload.encode({ value: 'hello' });

test('a Wait on a WaitID the Engine never minted fails the Process (contract), before anything is adopted', async () => {
  const foreign = WaitId.parse(`wait:${'f'.repeat(64)}`);
  // Were the wait accepted, Step 2 would complete the Process.
  const definition = new ProgramDefinition({
    step: ({ step }) => (step === 1 ? Transition.wait(0, foreign) : Transition.complete(0, Payload.encode({}))),
  });
  const { engine } = setup();
  const result = await engine.run(deploy(definition), Payload.encode({}));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.cause, 'contract_failure');
  assert.equal(result.termination.failure?.code, 'execution.transition.invalid');
  assert.match(result.termination.failure?.message ?? '', /is not an open wait of this process/);
  assert.equal(result.usage.committedSteps, 0n);
});

test('a Wait on a wait the Engine minted but that is already answered and consumed fails the Process (contract)', async () => {
  let minted: WaitId | undefined;
  const definition = new ProgramDefinition({
    step: ({ step, signals }) => {
      if (step === 1) return Transition.continue(0, [Effect.wait(WaitKey.parse('once'))]);
      if (step === 2) {
        minted = signals[0]?.waitId;
        return Transition.wait(1, minted as WaitId);
      }
      if (step === 3) return Transition.continue(signals.length); // consumes the answer: the wait is closed
      if (step === 4) return Transition.wait(0, minted as WaitId);
      return Transition.complete(0, Payload.encode({}));
    },
  });
  const { engine, recorder } = setup();
  const process = await engine.start(deploy(definition), Payload.encode({}));
  const waiting = await published(recorder, process.id, 'agent.step.committed', 2);
  assert.equal(waiting.stepCommitted()?.status, 'waiting');
  await process.deliverSignals(SignalRequest.create({ id: 'answer', waitId: minted as WaitId, payload: Payload.encode(1) }));
  const result = await process.await();
  assert.equal(result.termination.failure?.code, 'execution.transition.invalid');
  assert.equal(result.usage.committedSteps, 3n);
});

test('signal admission refuses a batch the snapshot byte limits cannot hold, without stopping the writer', async () => {
  const definition = new ProgramDefinition({
    name: 'test.guarded.bytes',
    signalSchema: Schema.of(true),
    step: ({ step, signals }) => (step === 1 ? Transition.pause(0, 'held') : Transition.complete(signals.length, Payload.encode({ seen: signals.length }))),
  });
  // A live Process reserves ~170 KiB of terminal growth; 250 kB leaves room for small input only.
  const context = setup({ treeLimits: TreeLimits.of({ maxProcessSnapshotBytes: Quota.of(250_000) }) });
  const process = await context.engine.start(deploy(definition), Payload.encode({}));
  await published(context.recorder, process.id, 'agent.process.paused');
  const attempts = context.committer.attempts.length;
  await rejectsWith(process.deliverSignals(hostRequest('big', { text: 'x'.repeat(100_000) })), ErrorCode.resourceLimitExceeded);
  assert.equal(context.committer.attempts.length, attempts, 'nothing was committed');
  assert.equal(context.engine.inspectTree(process.id).stopped, false, 'the writer is still running');
  assert.equal(await process.deliverSignals(hostRequest('small', { text: 'x' })), true);
  await process.resume();
  assert.deepEqual((await process.await()).output?.decode(), { seen: 1 });
});

test('while a replay is in flight, a resolution or a second replay of the same Effect is effect_not_pending', async () => {
  const gate = deferred();
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'same_identity',
    calls: [{ error: new Error('reset') }, { settlement: { status: 'succeeded', payload: Payload.encode({ value: 'replayed' }) }, gate: gate.promise }],
  });
  const context = setup();
  const process = await context.engine.start(deploy(echoDefinition, dispatcher), hello);
  await context.committer.acknowledgement((record) => record.kind === 'settled');
  const effectId = EffectId.derive(process.id, 1n, 0);
  const replay = process.replayUnknownEffect(effectId);
  await published(context.recorder, process.id, 'agent.effect.started', 2);
  await rejectsWith(process.resolveUnknownEffect(effectId, Settlement.of('succeeded', Payload.encode({ value: 'host' }))), ErrorCode.effectNotPending);
  await rejectsWith(process.replayUnknownEffect(effectId), ErrorCode.effectNotPending);
  assert.equal(await isSettled(replay), false);
  gate.resolve();
  await replay;
  assert.deepEqual((await process.await()).output?.decode(), { value: 'replayed' });
  assert.equal(dispatcher.requests().length, 2, 'the refused replay dispatched nothing');
});

test('a Step that returns under terminal intent is discarded: its candidate is never adopted', async () => {
  const gate = deferred();
  const definition = new ProgramDefinition({
    async step() {
      await gate.promise;
      return Transition.complete(0, Payload.encode({ adopted: true }));
    },
  });
  const context = setup();
  const process = await context.engine.start(deploy(definition), Payload.encode({}));
  await published(context.recorder, process.id, 'agent.step.started');
  await process.requestCancellation('stop');
  gate.resolve();
  const result = await process.await();
  assert.equal(result.status, 'canceled');
  assert.equal(result.output, undefined);
  assert.equal(result.usage.committedSteps, 0n, 'the candidate was not adopted');
  const finished = await published(context.recorder, process.id, 'agent.step.finished');
  assert.equal(finished.stepFinished()?.status, 'discarded');
  assert.ok(!context.recorder.events().some((event) => event.name === 'agent.step.committed'));
});

test('termination turns a restored pending Effect Unknown; it is never dispatched again', async () => {
  const hold = deferred();
  const first = setup();
  const program = dispatchProgram({ name: 'test.guarded.pending' });
  const held = new ScriptedDispatcher({ replayPolicy: 'same_identity', calls: [{ settlement: { status: 'succeeded', payload: hello }, gate: hold.promise }] });
  const process = await first.engine.start(deploy(program, held, 'guarded-pending'), Payload.encode({}));
  await first.committer.acknowledgement((record) => record.kind === 'pending');
  const head = await first.committer.loadTree(process.id);
  const effectId = EffectId.derive(process.id, 1n, 0);
  // The head as a writer leaves it after recording a host cancellation it could not yet apply.
  const canceled = withRoot(head!, (root) => root.with({ pendingControl: root.pendingControl.with({ cancellation: { owner: 'host', reason: 'stop' } }) }));
  await installHead(first.committer, canceled);

  // Even a same_identity policy does not replay under terminal intent.
  const fresh = new ScriptedDispatcher({ replayPolicy: 'same_identity', calls: [{ settlement: { status: 'succeeded', payload: hello } }] });
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(deploy(program, fresh, 'guarded-pending'), canceled);
  const result = await restored.await();
  assert.equal(result.status, 'canceled');
  assert.deepEqual(result.termination.unresolvedEffectIds.map(String), [effectId.toString()]);
  assert.equal(fresh.requests().length, 0, 'nothing was dispatched after restore');
  const stored = (await second.committer.loadTree(process.id))!.root;
  assert.equal(stored.effectSettlement(effectId)?.status, 'unknown');
  assert.equal(stored.effectDiagnostic(effectId)?.code, 'engine.effect.recovery.invalid');
  hold.resolve();
});
