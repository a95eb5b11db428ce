import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Effect } from '../../../src/kernel/effect.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { Budget } from '../../../src/kernel/budget.js';
import type { ProcessAdmission, ProcessInitializationOutcome } from '../../../src/kernel/engine.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Payload } from '../../../src/kernel/payload.js';
import type { RuntimeError } from '../../../src/kernel/runtime-error.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { echoDefinition, echoDispatcher, pauseDefinition, waitDefinition } from '../../../src/testing/example-definitions.js';
import { ScriptedDispatcher } from '../../../src/testing/scripted-dispatcher.js';
import { committedStatus, deferred, deploy, isSettled, ProgramDefinition, published, RecordingCommitter, rejectsWith, setup } from './harness.js';
import { dispatchProgram } from './programs.js';

const hello = Payload.encode({ value: 'hello' });
const echo = deploy(echoDefinition, echoDispatcher, 'lifecycle-echo');
const waiter = deploy(waitDefinition, undefined, 'lifecycle-wait');
const pauser = deploy(pauseDefinition, undefined, 'lifecycle-pause');

test('run starts, awaits and joins, returning the Result', async () => {
  const { engine } = setup();
  const result = await engine.run(echo, hello);
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { value: 'hello' });
  assert.equal(engine.process(result.processId)?.id.equals(result.processId), true);
  await engine.close();
});

test('close is refused while a Process is live, succeeds after, and is idempotent; a closed Engine refuses work', async () => {
  const { engine, recorder } = setup();
  const process = await engine.start(waiter, Payload.encode({}));
  await committedStatus(recorder, process.id, 'waiting');
  await rejectsWith(engine.close(), ErrorCode.engineHasActiveProcesses);
  await process.kill('shutting down');
  await process.join();
  await engine.close();
  await engine.close();
  await rejectsWith(engine.start(echo, hello), ErrorCode.engineClosed);
  await rejectsWith(engine.run(echo, hello), ErrorCode.engineClosed);
  const head = await engine.captureTree(process.id);
  await rejectsWith(engine.restoreTree(waiter, head), ErrorCode.engineClosed);
  // Existing handles keep their outcomes.
  assert.equal((await process.await()).status, 'killed');
});

test('releaseTree waits for the tree to settle, then forgets it; handles keep their Result', async () => {
  const { engine, recorder, committer } = setup();
  const process = await engine.start(waiter, Payload.encode({}));
  await committedStatus(recorder, process.id, 'waiting');
  const released = engine.releaseTree(process.id);
  assert.equal(await isSettled(released), false);
  await process.kill('done');
  await released;
  assert.equal(engine.process(process.id), undefined);
  await rejectsWith(() => engine.inspectTree(process.id), ErrorCode.treeNotFound);
  await rejectsWith(engine.captureTree(process.id), ErrorCode.treeNotFound);
  assert.equal((await process.await()).status, 'killed');
  assert.ok((await committer.loadTree(process.id)) !== undefined, 'the store is untouched');
  await engine.close();
});

test('captureTree returns the acknowledged head, after in-flight Effects settle', async () => {
  const gate = deferred();
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'never',
    calls: [{ settlement: { status: 'succeeded', payload: hello }, gate: gate.promise }],
  });
  const { engine, recorder, committer } = setup();
  const process = await engine.start(deploy(echoDefinition, dispatcher), hello);
  await published(recorder, process.id, 'agent.effect.started');
  const capture = engine.captureTree(process.id);
  assert.equal(await isSettled(capture), false);
  gate.resolve();
  const head = await capture;
  const stored = await committer.loadTree(process.id);
  assert.ok(head.digest.equals(stored!.digest));
  assert.equal(head.root.preparedEffect(head.root.prepared!.effectIds()[0]!)?.phase, 'settled');
  assert.ok(engine.inspectTree(process.id).headDigest.equals(head.digest));
  assert.equal((await process.await()).status, 'completed');
  await engine.close();
});

test('validateRestorableTree checks the root deployment without activating anything', async () => {
  const { engine, recorder, committer } = setup();
  const process = await engine.start(pauser, hello);
  await committedStatus(recorder, process.id, 'paused');
  const head = await engine.captureTree(process.id);
  const other = setup({ committer: new RecordingCommitter(committer.store) });
  await rejectsWith(other.engine.validateRestorableTree(waiter, head), ErrorCode.invalidDeployment);
  await rejectsWith(other.engine.validateRestorableTree(deploy(pauseDefinition, undefined, 'lifecycle-pause-v2'), head), ErrorCode.invalidDeployment);
  await other.engine.validateRestorableTree(pauser, head);
  assert.equal(other.committer.attempts.length, 0, 'validation activates no writer');
  await rejectsWith(other.engine.restoreTree(waiter, head), ErrorCode.invalidDeployment);
  // The original writer was not fenced by any of this.
  await process.resume();
  assert.equal((await process.await()).status, 'completed');
});

test('restoreTree refuses a tree that is already registered', async () => {
  const { engine, recorder } = setup();
  const process = await engine.start(waiter, Payload.encode({}));
  await committedStatus(recorder, process.id, 'waiting');
  const head = await engine.captureTree(process.id);
  await rejectsWith(engine.restoreTree(waiter, head), ErrorCode.processAlreadyExists);
  const waitId = engine.inspectTree(process.id).processes[0]!.snapshot.waitId!;
  await process.deliverSignals(SignalRequest.create({ id: 'answer', waitId, payload: Payload.encode(1) }));
  assert.equal((await process.await()).status, 'completed');
});

test('start validates input, applies host admission and acknowledges initialisation before any commit', async () => {
  const outcomes: ProcessInitializationOutcome[] = [];
  const seen: ProcessAdmission[] = [];
  const { engine, committer } = setup({
    // An admitter decides on the prospective identity and resources, never on the input (the seed's rule).
    processAdmitter: (admission) => {
      seen.push(admission);
      if (admission.budget.steps.maximum === 7n) throw new Error('policy says no');
    },
    initializationAcknowledger: (outcome) => {
      outcomes.push(outcome);
    },
  });
  await rejectsWith(engine.start(echo, Payload.encode({ nope: true })), ErrorCode.schemaValidationFailed);
  const sevenSteps = Budget.of({ steps: Quota.of(7), effects: Quota.unlimited(), signals: Quota.unlimited() });
  await rejectsWith(engine.start(echo, hello, { budget: sevenSteps }), ErrorCode.processAdmissionRejected);
  const refused = seen.at(-1) as ProcessAdmission;
  assert.equal('input' in refused, false, 'the admission does not expose the input');
  assert.ok(refused.descriptor.digest().equals(refused.deploymentRef.contractDigest), 'it carries the contract');
  assert.ok(refused.budget.steps.maximum === 7n && refused.capabilities.values().length === 0);
  assert.ok(Object.isFrozen(refused));
  const broken = new ProgramDefinition({
    step: () => {
      throw new Error('unused');
    },
    onRestore: () => {
      throw new Error('cannot restore');
    },
  });
  await rejectsWith(engine.start(deploy(broken), Payload.encode({})), ErrorCode.processStartFailed);
  assert.equal(committer.attempts.length, 0);
  assert.deepEqual(outcomes.map((outcome) => outcome.status), ['failed']);
  const result = await engine.run(echo, hello);
  assert.equal(result.status, 'completed');
  assert.deepEqual(outcomes.map((outcome) => outcome.status), ['failed', 'initialized']);
  assert.equal(committer.acknowledged[0]?.kind, 'start');
});

test('restoreTree fences the previous writer and keeps a retained Unknown as a fact', async () => {
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ error: new Error('reset') }] });
  const deployment = deploy(echoDefinition, dispatcher, 'lifecycle-unknown');
  const first = setup();
  const original = await first.engine.start(deployment, hello);
  await first.committer.acknowledgement((record) => record.kind === 'settled');
  const head = await first.engine.captureTree(original.id);
  const [effectId] = head.root.unknownEffectIds();
  assert.ok(effectId !== undefined);
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  await second.engine.validateRestorableTree(deployment, head);
  const restored = await second.engine.restoreTree(deployment, head);
  assert.deepEqual(second.committer.kinds(), ['activation']);
  assert.notEqual(second.engine.inspectTree(restored.id).incarnationId.toString(), head.incarnationId.toString());
  assert.deepEqual(second.engine.inspectTree(restored.id).processes[0]!.snapshot.unknownEffectIds().map(String), [effectId.toString()]);
  // The previous writer is fenced: its next commit stops it.
  const fenced = await rejectsWith(original.resolveUnknownEffect(effectId, Settlement.of('succeeded', hello)), ErrorCode.runtimeStopped);
  assert.equal((fenced as RuntimeError).causeCode, ErrorCode.treeIncarnationConflict);
  await rejectsWith(original.await(), ErrorCode.runtimeStopped);
  await restored.resolveUnknownEffect(effectId, Settlement.of('succeeded', hello));
  assert.equal((await restored.await()).status, 'completed');
  assert.equal(dispatcher.requests().length, 1, 'restoring an Unknown never dispatches it again');
});

test('an interrupted terminal candidate stays inert evidence when restored', async () => {
  const gate = deferred();
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'same_identity',
    calls: [{ settlement: { status: 'succeeded', payload: hello }, gate: gate.promise }],
  });
  const effects = [Effect.dispatcher(Payload.encode({ n: 1 })), Effect.dispatcher(Payload.encode({ n: 2 }))];
  const definition = dispatchProgram({ effects });
  const deployment = deploy(definition, dispatcher, 'lifecycle-inert');
  const first = setup();
  const original = await first.engine.start(deployment, Payload.encode({}));
  await published(first.recorder, original.id, 'agent.effect.started');
  await original.requestCancellation('stop');
  gate.resolve();
  const result = await original.await();
  const head = await first.committer.loadTree(original.id);
  assert.equal(head?.root.prepared?.effects().at(-1)?.phase, 'planned');
  const restoresBefore = definition.callsOf('restore').length;
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(deployment, head!);
  assert.ok((await restored.await()).equals(result));
  await restored.join();
  assert.equal(dispatcher.requests().length, 1, 'the planned tail never runs');
  assert.equal(definition.callsOf('restore').length, restoresBefore, 'a terminal candidate is not restored');
  assert.ok(!second.recorder.events().some((event) => event.name === 'agent.step.started'));
  await second.engine.close();
});
