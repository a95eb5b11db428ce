/**
 * Host control is durable before it is acknowledged (issue 10, fix 4): a resolved cancel, kill or
 * pause means the intent is in the committer's head — the terminal (or parked) checkpoint when the
 * Process can act at once, otherwise `pending_control` that every later boundary keeps. A crash
 * after the acknowledgment (the engine is dropped; a fresh one restores from the committer's head)
 * applies the intent before any Step or dispatch.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Deployment } from '../../../src/kernel/deployment.js';
import { EffectId, ProcessId } from '../../../src/kernel/identity.js';
import { ChildWaitCondition } from '../../../src/kernel/effect.js';
import { Payload } from '../../../src/kernel/payload.js';
import { RuntimeError } from '../../../src/kernel/runtime-error.js';
import { Schema } from '../../../src/kernel/schema.js';
import { Transition } from '../../../src/kernel/transition.js';
import { ScriptedDispatcher } from '../../../src/testing/scripted-dispatcher.js';
import { committedStatus, deferred, deploy, hostRequest, ProgramDefinition, published, RecordingCommitter, setup, type Setup } from './harness.js';
import { dispatchProgram } from './programs.js';
import { childSpec, gateChildProgram, parentProgram } from './child-programs.js';

/** A Definition whose first Step is held until `gate` opens, then completes. */
function heldStep(gate: Promise<void>): ProgramDefinition {
  return new ProgramDefinition({
    async step({ step }) {
      if (step === 1) await gate;
      return Transition.complete(0, Payload.encode({ step }));
    },
  });
}

/** The crash: the first engine is abandoned as it stands; a fresh one restores the committer's head. */
async function restoreElsewhere(first: Setup, deployment: Deployment, id: ProcessId) {
  const head = await first.committer.store.loadTree(id);
  assert.ok(head !== undefined, 'the committer holds a head');
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const process = await second.engine.restoreTree(deployment, head);
  return { second, process, head };
}

for (const action of ['cancel', 'kill'] as const) {
  const expected = action === 'cancel' ? { status: 'canceled', cause: 'host_cancellation' } : { status: 'killed', cause: 'engine_kill' };

  test(`${action} acknowledged during a Step, then a crash: the restored Process ends ${expected.status} before any Step`, async () => {
    const gate = deferred();
    const definition = heldStep(gate.promise);
    const deployment = deploy(definition);
    const first = setup();
    const process = await first.engine.start(deployment, Payload.encode({}));
    await published(first.recorder, process.id, 'agent.step.started');
    if (action === 'cancel') await process.requestCancellation('operator');
    else await process.kill('operator');
    const { second, process: restored, head } = await restoreElsewhere(first, deployment, process.id);
    const control = head.root.pendingControl;
    assert.equal(action === 'cancel' ? control.cancellation?.reason : control.killReason, 'operator');
    const result = await restored.await();
    assert.equal(result.status, expected.status);
    assert.equal(result.termination.cause, expected.cause);
    assert.equal(definition.callsOf('step').length, 1, 'the restored Process ran no Step');
    assert.ok(!second.recorder.events().some((event) => event.name === 'agent.step.started'));
    // The abandoned writer's Step ends; its adoption is fenced by the new incarnation.
    gate.resolve();
    await assert.rejects(process.await(), RuntimeError);
  });

  test(`${action} acknowledged during a dispatch, then a crash: the pending Effect becomes Unknown, never dispatched again`, async () => {
    const gate = deferred();
    const dispatcher = new ScriptedDispatcher({
      replayPolicy: 'never',
      calls: [{ settlement: { status: 'succeeded', payload: Payload.encode('pong') }, gate: gate.promise }],
    });
    const deployment = deploy(dispatchProgram(), dispatcher);
    const first = setup();
    const process = await first.engine.start(deployment, Payload.encode({}));
    await published(first.recorder, process.id, 'agent.effect.started');
    if (action === 'cancel') await process.requestCancellation('operator');
    else await process.kill('operator');
    const { process: restored, head } = await restoreElsewhere(first, deployment, process.id);
    const [effect] = head.root.prepared?.effects() ?? [];
    assert.equal(effect?.phase, 'pending');
    const result = await restored.await();
    assert.equal(result.status, expected.status);
    assert.deepEqual(result.termination.unresolvedEffectIds.map(String), [effect!.id.toString()]);
    assert.equal(dispatcher.requests().length, 1, 'the restored Process dispatched nothing');
    gate.resolve();
    await assert.rejects(process.await(), RuntimeError);
  });
}

test('a pause acknowledged during a Step, then a crash: the restored Process is paused before any Step', async () => {
  const gate = deferred();
  const definition = heldStep(gate.promise);
  const deployment = deploy(definition);
  const first = setup();
  const process = await first.engine.start(deployment, Payload.encode({}));
  await published(first.recorder, process.id, 'agent.step.started');
  await process.pause('hold');
  const { second, process: restored, head } = await restoreElsewhere(first, deployment, process.id);
  assert.equal(head.root.pendingControl.pauseReason, 'hold');
  await published(second.recorder, restored.id, 'agent.process.paused');
  const snapshot = second.engine.inspectTree(restored.id).processes[0]!.snapshot;
  assert.equal(snapshot.status, 'paused');
  assert.equal(snapshot.pauseReason, 'hold');
  assert.ok(snapshot.pendingControl.isEmpty);
  assert.equal(definition.callsOf('step').length, 1, 'no Step ran before the pause applied');
  // The abandoned writer's Step ends; its adoption is fenced by the new incarnation.
  gate.resolve();
  await assert.rejects(process.await(), RuntimeError);
  await restored.resume();
  assert.equal((await restored.await()).status, 'completed');
});

test('the pending_control of an acknowledged cancellation survives every later boundary until the terminal one', async () => {
  const gate = deferred();
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'never',
    calls: [{ settlement: { status: 'succeeded', payload: Payload.encode('pong') }, gate: gate.promise }],
  });
  const context = setup();
  const process = await context.engine.start(deploy(dispatchProgram({ signalSchema: Schema.of(true) }), dispatcher), Payload.encode({}));
  await published(context.recorder, process.id, 'agent.effect.started');
  await process.requestCancellation('operator');
  await process.deliverSignals(hostRequest('note', 'late input'));
  gate.resolve();
  assert.equal((await process.await()).status, 'canceled');
  const after = context.committer.acknowledged.slice(context.committer.acknowledged.findIndex((record) => record.kind === 'progress'));
  assert.deepEqual(after.map((record) => record.kind), ['progress', 'signals', 'settled', 'terminal']);
  for (const record of after.slice(0, -1)) {
    assert.equal(record.snapshot.root.pendingControl.cancellation?.reason, 'operator', `the ${record.kind} boundary keeps the intent`);
  }
  assert.ok(after.at(-1)!.snapshot.root.pendingControl.isEmpty, 'a terminal snapshot keeps no pending control');
});

for (const action of ['cancel', 'kill', 'pause'] as const) {
  test(`committer down at ${action}: the command rejects and nothing claims the intent`, async () => {
    const gate = deferred();
    const deployment = deploy(heldStep(gate.promise));
    const context = setup();
    const process = await context.engine.start(deployment, Payload.encode({}));
    await published(context.recorder, process.id, 'agent.step.started');
    const before = await context.committer.store.loadTree(process.id);
    context.committer.intercept = () => ({ fail: { when: 'before', error: new Error('the store is down') } });
    const command = action === 'cancel' ? process.requestCancellation('operator') : action === 'kill' ? process.kill('operator') : process.pause('hold');
    await assert.rejects(command, RuntimeError);
    const head = await context.committer.store.loadTree(process.id);
    assert.ok(head?.digest.equals(before!.digest), 'the head is unchanged');
    assert.ok(head?.root.pendingControl.isEmpty);
    await assert.rejects(process.await(), RuntimeError);
    assert.ok(!context.recorder.events().some((event) => event.name === 'agent.process.finished' || event.name === 'agent.process.paused'));
    gate.resolve();
  });
}

test('a repeated cancellation commits nothing new; the first recorded reason wins', async () => {
  const gate = deferred();
  const deployment = deploy(heldStep(gate.promise));
  const context = setup();
  const process = await context.engine.start(deployment, Payload.encode({}));
  await published(context.recorder, process.id, 'agent.step.started');
  // Repeating an intent the head already records commits nothing new.
  await process.requestCancellation('first');
  const commits = context.committer.acknowledged.length;
  await process.requestCancellation('second');
  assert.equal(context.committer.acknowledged.length, commits);
  assert.equal((await context.committer.store.loadTree(process.id))?.root.pendingControl.cancellation?.reason, 'first');
  gate.resolve();
  assert.equal((await process.await()).termination.reason, 'first');
});

test('a host cancellation of a parent records the cascade in the same checkpoint: a restored child ends by parent_cancellation', async () => {
  const gate = deploy(gateChildProgram(['go'], Schema.of(true)), undefined, 'durable-control-gate');
  const parent = deploy(parentProgram({ children: [childSpec('a', gate)], wait: { boundary: 'terminal_result', condition: ChildWaitCondition.all() }, childDeployments: () => [gate] }));
  const first = setup();
  const root = await first.engine.start(parent, Payload.encode({}));
  const childId = ProcessId.child(EffectId.derive(root.id, 1n, 0));
  await committedStatus(first.recorder, childId, 'waiting');
  await committedStatus(first.recorder, root.id, 'waiting');
  // Drop the child's own terminal commit: the crash comes right after the parent's.
  first.committer.intercept = (record) => (record.snapshot.process(childId)?.isTerminal === true ? { fail: { when: 'before', error: new Error('crash') } } : undefined);
  await root.requestCancellation('operator');
  const { second, process: restored, head } = await restoreElsewhere(first, parent, root.id);
  assert.equal(head.root.status, 'canceled');
  assert.equal(head.process(childId)?.pendingControl.cancellation?.owner, 'parent');
  assert.equal((await restored.await()).termination.cause, 'host_cancellation');
  const child = await second.engine.process(childId)?.await();
  assert.equal(child?.status, 'canceled');
  assert.equal(child?.termination.cause, 'parent_cancellation');
});
