import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Effect } from '../../../src/kernel/effect.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { WaitKey, type ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { Transition } from '../../../src/kernel/transition.js';
import { pauseDefinition, waitDefinition } from '../../../src/testing/example-definitions.js';
import { ScriptedDispatcher } from '../../../src/testing/scripted-dispatcher.js';
import {
  committedStatus,
  deferred,
  deploy,
  isSettled,
  ProgramDefinition,
  published,
  rejectsWith,
  setup,
  type Setup,
} from './harness.js';
import { dispatchProgram } from './programs.js';

const waiter = deploy(waitDefinition, undefined, 'control-wait');
const pauser = deploy(pauseDefinition, undefined, 'control-pause');

function snapshotOf(context: Setup, id: ProcessId) {
  return context.engine.inspectTree(id).processes[0]!.snapshot;
}

async function waitingProcess(context: Setup) {
  const process = await context.engine.start(waiter, Payload.encode({}));
  await committedStatus(context.recorder, process.id, 'waiting');
  return process;
}

test('pausing a waiting Process keeps its wait; resume returns it to the same waiting cut', async () => {
  const context = setup();
  const process = await waitingProcess(context);
  const waitingHead = context.engine.inspectTree(process.id).headDigest;
  const waitId = snapshotOf(context, process.id).waitId;
  await process.pause('operator hold');
  await published(context.recorder, process.id, 'agent.process.paused');
  let snapshot = snapshotOf(context, process.id);
  assert.equal(snapshot.status, 'paused');
  assert.equal(snapshot.pauseReason, 'operator hold');
  assert.ok(snapshot.waitId?.equals(waitId));
  await rejectsWith(process.pause('again'), ErrorCode.invalidProcessControl);
  await process.resume();
  await published(context.recorder, process.id, 'agent.process.resumed');
  snapshot = snapshotOf(context, process.id);
  assert.equal(snapshot.status, 'waiting');
  assert.ok(snapshot.waitId?.equals(waitId));
  await rejectsWith(process.resume(), ErrorCode.invalidProcessControl);
  // kernel-contract §3.8: pause → parked (seq+1), resume → a new checkpoint equal in content.
  const kinds = context.committer.kinds();
  assert.deepEqual(kinds.slice(-2), ['parked', 'parked']);
  assert.ok(context.engine.inspectTree(process.id).headDigest.equals(waitingHead));
  assert.equal(context.committer.acknowledged.at(-1)?.sequence, (context.committer.acknowledged.at(-3)?.sequence ?? 0n) + 2n);
  await process.deliverSignals(SignalRequest.create({ id: 'answer', waitId: waitId!, payload: Payload.encode('ok') }));
  assert.equal((await process.await()).status, 'completed');
});

test('resume of a Process paused by its own Step returns it to running', async () => {
  const context = setup();
  const process = await context.engine.start(pauser, Payload.encode({ value: 'v' }));
  await committedStatus(context.recorder, process.id, 'paused');
  await rejectsWith(process.pause('twice'), ErrorCode.invalidProcessControl);
  await process.resume();
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { value: 'v' });
});

test('a pause raced by a Step that completes: the Complete candidate is adopted, the pause never applies', async () => {
  const gate = deferred();
  const definition = new ProgramDefinition({
    async step({ step }) {
      if (step === 1) await gate.promise;
      return Transition.complete(0, Payload.encode({ step }));
    },
  });
  const context = setup();
  const process = await context.engine.start(deploy(definition), Payload.encode({}));
  await published(context.recorder, process.id, 'agent.step.started');
  await process.pause('hold');
  // The acknowledged pause is in the head while the Step still runs.
  assert.equal((await context.committer.store.loadTree(process.id))?.root.pendingControl.pauseReason, 'hold');
  gate.resolve();
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { step: 1 });
  const finished = context.recorder.events().find((event) => event.name === 'agent.step.finished');
  assert.equal(finished?.stepFinished()?.status, 'succeeded');
  assert.equal(definition.callsOf('step').length, 1);
  assert.ok(!context.recorder.events().some((event) => event.name === 'agent.process.paused'));
});

test('a pause raced by a Step that waits: the Wait candidate is discarded without consuming its Signals', async () => {
  const gate = deferred();
  // Step 1 declares a wait; Step 2 (held by the gate) consumes its opening and waits on it.
  const gated = new ProgramDefinition({
    async step({ step, signals }) {
      if (step === 1) return Transition.continue(0, [Effect.wait(WaitKey.parse('k'))]);
      if (step === 2) await gate.promise;
      const opening = signals[0];
      if (opening?.waitId === undefined) throw new Error('expected the wait opening');
      return Transition.wait(1, opening.waitId);
    },
  });
  const context = setup();
  const process = await context.engine.start(deploy(gated), Payload.encode({}));
  await published(context.recorder, process.id, 'agent.step.started', 2);
  await process.pause('hold');
  gate.resolve();
  await published(context.recorder, process.id, 'agent.process.paused');
  const discarded = context.recorder.events().filter((event) => event.name === 'agent.step.finished').at(-1);
  assert.equal(discarded?.stepFinished()?.status, 'discarded');
  let snapshot = snapshotOf(context, process.id);
  assert.equal(snapshot.status, 'paused');
  assert.equal(snapshot.committedSteps, 1n, 'the Wait candidate was not adopted');
  assert.equal(snapshot.mailbox.pendingCount, 1, 'its opening Signal is still unconsumed');
  assert.ok(snapshot.pendingControl.isEmpty, 'the applied pause leaves no pending intent');
  await process.resume();
  await committedStatus(context.recorder, process.id, 'waiting');
  snapshot = snapshotOf(context, process.id);
  assert.equal(snapshot.mailbox.pendingCount, 0);
  assert.deepEqual(gated.callsOf('step').map((call) => [call.step, call.window]), [[1, 0], [2, 1], [2, 1]]);
  await process.kill('done');
});

test('a pause during a dispatch applies after the Effect settles and its batch is adopted', async () => {
  const gate = deferred();
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'never',
    calls: [{ settlement: { status: 'succeeded', payload: Payload.encode('pong') }, gate: gate.promise }],
  });
  const context = setup();
  const process = await context.engine.start(deploy(dispatchProgram(), dispatcher), Payload.encode({}));
  await published(context.recorder, process.id, 'agent.effect.started');
  await process.pause('hold');
  assert.equal(snapshotOf(context, process.id).status, 'running');
  gate.resolve();
  await published(context.recorder, process.id, 'agent.process.paused');
  // The acknowledged pause is a progress checkpoint recording pending_control while the Effect is in flight.
  // The settled boundary adopts the batch (the pause does not hold adoption back); the pause follows it.
  assert.deepEqual(context.committer.kinds(), ['start', 'pending', 'progress', 'settled', 'parked']);
  assert.equal(context.committer.acknowledged[2]?.snapshot.root.pendingControl.pauseReason, 'hold');
  assert.equal(context.committer.acknowledged[3]?.snapshot.root.pendingControl.pauseReason, 'hold', 'the settled boundary keeps it');
  assert.ok(snapshotOf(context, process.id).pendingControl.isEmpty);
  await process.resume();
  assert.equal((await process.await()).status, 'completed');
});

test('requestCancellation ends a waiting Process as canceled by the host', async () => {
  const context = setup();
  const process = await waitingProcess(context);
  await process.requestCancellation('no longer needed');
  const result = await process.await();
  assert.equal(result.status, 'canceled');
  assert.equal(result.termination.cause, 'host_cancellation');
  assert.equal(result.termination.reason, 'no longer needed');
  assert.equal(snapshotOf(context, process.id).openWaits().length, 0);
});

test('kill beats a recorded cancellation; the first committed terminal wins', async () => {
  const gate = deferred();
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'never',
    calls: [{ settlement: { status: 'succeeded', payload: Payload.encode('pong') }, gate: gate.promise }],
  });
  const context = setup();
  const process = await context.engine.start(deploy(dispatchProgram(), dispatcher), Payload.encode({}));
  await published(context.recorder, process.id, 'agent.effect.started');
  await process.requestCancellation('first');
  await process.kill('second');
  gate.resolve();
  const result = await process.await();
  assert.equal(result.status, 'killed');
  assert.equal(result.termination.cause, 'engine_kill');
  assert.equal(result.termination.reason, 'second');
  // Nothing overwrites a committed terminal.
  await rejectsWith(process.requestCancellation('late'), ErrorCode.processFinished);
  await rejectsWith(process.kill('late'), ErrorCode.processFinished);
  await rejectsWith(process.pause('late'), ErrorCode.processFinished);
  assert.ok((await process.await()).equals(result));
});

test('a late cancellation after completion is rejected with process_finished', async () => {
  const context = setup();
  const process = await context.engine.start(pauser, Payload.encode({ value: 'v' }));
  await committedStatus(context.recorder, process.id, 'paused');
  await process.resume();
  const result = await process.await();
  await rejectsWith(process.requestCancellation('late'), ErrorCode.processFinished);
  assert.equal(snapshotOf(context, process.id).status, 'completed');
  assert.ok((await process.await()).equals(result));
});

test('the host start context: a TimeoutError abort is a host deadline, a plain abort a host cancellation', async () => {
  const context = setup();
  const deadline = new AbortController();
  const timed = await context.engine.start(waiter, Payload.encode({}), { signal: deadline.signal });
  const canceled = new AbortController();
  const cancelled = await context.engine.start(waiter, Payload.encode({}), { signal: canceled.signal });
  await committedStatus(context.recorder, timed.id, 'waiting');
  await committedStatus(context.recorder, cancelled.id, 'waiting');
  deadline.abort(new DOMException('the request deadline passed', 'TimeoutError'));
  canceled.abort();
  const timedResult = await timed.await();
  assert.equal(timedResult.status, 'timed_out');
  assert.equal(timedResult.termination.cause, 'host_deadline');
  const canceledResult = await cancelled.await();
  assert.equal(canceledResult.status, 'canceled');
  assert.equal(canceledResult.termination.cause, 'host_cancellation');
  // An already-aborted context never admits a start.
  await rejectsWith(context.engine.start(waiter, Payload.encode({}), { signal: canceled.signal }), ErrorCode.invalidProcessControl);
});

test('a host context aborted while the start is being admitted still reaches the Process', async () => {
  const controller = new AbortController();
  const admitted = deferred();
  const context = setup({
    processAdmitter: async () => {
      controller.abort();
      admitted.resolve();
    },
  });
  const process = await context.engine.start(waiter, Payload.encode({}), { signal: controller.signal });
  await admitted.promise;
  const result = await process.await();
  assert.equal(result.status, 'canceled');
  assert.equal(result.termination.cause, 'host_cancellation');
});

test('an in-flight Effect settles before termination becomes visible', async () => {
  const gate = deferred();
  const dispatcher = new ScriptedDispatcher({
    replayPolicy: 'never',
    calls: [{ settlement: { status: 'succeeded', payload: Payload.encode('pong') }, gate: gate.promise }],
  });
  const context = setup();
  const process = await context.engine.start(deploy(dispatchProgram(), dispatcher), Payload.encode({}));
  await published(context.recorder, process.id, 'agent.effect.started');
  await process.requestCancellation('stop');
  assert.equal(dispatcher.records()[0]?.signal.aborted, true, 'terminal intent aborts the dispatch signal');
  const awaited = process.await();
  assert.equal(await isSettled(awaited), false);
  assert.equal(snapshotOf(context, process.id).status, 'running');
  assert.ok(!context.recorder.events().some((event) => event.name === 'agent.process.finished'));
  gate.resolve();
  const result = await awaited;
  assert.equal(result.status, 'canceled');
  // The acknowledged cancellation is the progress checkpoint recording pending_control, kept by the settled boundary.
  assert.deepEqual(context.committer.kinds(), ['start', 'pending', 'progress', 'settled', 'terminal']);
  assert.equal(context.committer.acknowledged[3]?.snapshot.root.pendingControl.cancellation?.owner, 'host');
  const snapshot = snapshotOf(context, process.id);
  assert.deepEqual(snapshot.prepared?.effects().map((effect) => [effect.phase, effect.settlement?.status]), [['settled', 'succeeded']]);
  assert.equal(snapshot.committedSteps, 0n, 'the interrupted candidate is never adopted');
  assert.deepEqual(result.termination.unresolvedEffectIds, []);
});

for (const first of ['succeeded', 'unknown'] as const) {
  test(`planned Effects never start after terminal intent (first Effect ${first})`, async () => {
    const gate = deferred();
    const dispatcher = new ScriptedDispatcher({
      replayPolicy: 'never',
      calls: [
        first === 'succeeded'
          ? { settlement: { status: 'succeeded', payload: Payload.encode(1) }, gate: gate.promise }
          : { error: new Error('connection reset'), gate: gate.promise },
        { settlement: { status: 'succeeded', payload: Payload.encode(2) } },
      ],
    });
    const effects = [Effect.dispatcher(Payload.encode({ n: 1 })), Effect.dispatcher(Payload.encode({ n: 2 }))];
    const context = setup();
    const process = await context.engine.start(deploy(dispatchProgram({ effects }), dispatcher), Payload.encode({}));
    await published(context.recorder, process.id, 'agent.effect.started');
    await process.requestCancellation('stop');
    gate.resolve();
    const result = await process.await();
    assert.equal(result.status, 'canceled');
    assert.equal(dispatcher.requests().length, 1, 'the planned tail never dispatched');
    const snapshot = snapshotOf(context, process.id);
    const prepared = snapshot.prepared;
    assert.deepEqual(prepared?.effects().map((effect) => effect.phase), ['settled', 'planned']);
    const firstId = prepared!.effects()[0]!.id;
    const unresolved = first === 'unknown' ? [firstId.toString()] : [];
    assert.deepEqual(result.termination.unresolvedEffectIds.map(String), unresolved);
    assert.deepEqual(snapshot.unknownEffectIds().map(String), unresolved);
    assert.equal(snapshot.usage().preparedEffects, 2n, 'prepared Effects stay charged');
  });
}

for (const kind of ['deadline', 'cancellation'] as const) {
  test(`a dispatch interrupted by a host ${kind} settles Unknown with engine.dispatch.${kind === 'deadline' ? 'deadline' : 'canceled'}`, async () => {
    const dispatched = deferred();
    // A well-behaved dispatcher: it stops when its signal aborts and reports the abort reason.
    const dispatcher = {
      dispatch: (_request: unknown, _emit: unknown, signal: AbortSignal) =>
        new Promise<never>((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
          dispatched.resolve();
        }),
      replayPolicy: () => 'never' as const,
    };
    const controller = new AbortController();
    const context = setup();
    const process = await context.engine.start(deploy(dispatchProgram(), dispatcher), Payload.encode({}), { signal: controller.signal });
    await dispatched.promise;
    controller.abort(kind === 'deadline' ? new DOMException('the request deadline passed', 'TimeoutError') : undefined);
    const result = await process.await();
    assert.equal(result.status, kind === 'deadline' ? 'timed_out' : 'canceled');
    const snapshot = snapshotOf(context, process.id);
    const [effectId] = snapshot.unknownEffectIds();
    assert.ok(effectId !== undefined);
    assert.deepEqual(result.termination.unresolvedEffectIds.map(String), [effectId.toString()]);
    const diagnostic = snapshot.effectDiagnostic(effectId);
    assert.equal(diagnostic?.kind, 'external');
    assert.equal(diagnostic?.code, kind === 'deadline' ? 'engine.dispatch.deadline' : 'engine.dispatch.canceled');
  });
}
