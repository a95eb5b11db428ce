import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DeltaEmitter, Dispatcher } from '../../../src/kernel/definition.js';
import type { Delta } from '../../../src/kernel/delta.js';
import { ErrorCode, KernelError } from '../../../src/kernel/errors.js';
import { eventNameValues, eventRules, type Event } from '../../../src/kernel/event.js';
import { EffectId, type ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { RuntimeError } from '../../../src/kernel/runtime-error.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { echoDefinition, echoDispatcher, waitDefinition } from '../../../src/testing/example-definitions.js';
import { ScriptedDispatcher } from '../../../src/testing/scripted-dispatcher.js';
import {
  committedStatus,
  deferred,
  deploy,
  isSettled,
  published,
  RecordingCommitter,
  rejectsWith,
  setup,
  type Setup,
} from './harness.js';

const hello = Payload.encode({ value: 'hello' });
const waiter = deploy(waitDefinition, undefined, 'events-wait');

function snapshotOf(context: Setup, id: ProcessId) {
  return context.engine.inspectTree(id).processes[0]!.snapshot;
}

/** Checks the per-activation sequence (1, 2, 3, …) and each event's phase and scope. */
function assertWellFormed(events: readonly Event[], processId: ProcessId): void {
  const own = events.filter((event) => event.processId.equals(processId));
  assert.deepEqual(
    own.map((event) => event.processSequence),
    own.map((_, index) => BigInt(index + 1)),
    `sequences of ${own.map((event) => event.name).join(', ')}`,
  );
  for (const event of own) {
    const rule = eventRules[event.name];
    assert.equal(event.phase, rule.phase, event.name);
    assert.equal(event.stepSequence !== undefined, rule.scope !== 'process', `${event.name} step scope`);
    assert.equal(event.effectId !== undefined, rule.scope === 'effect', `${event.name} effect scope`);
  }
}

async function waitingProcess(context: Setup) {
  const process = await context.engine.start(waiter, Payload.encode({}));
  await committedStatus(context.recorder, process.id, 'waiting');
  return process;
}

test('every event name is published with its phase and scope, in a gap-free sequence per Process', async () => {
  const seen = new Set<string>();
  const collect = (context: Setup, processId: ProcessId) => {
    assertWellFormed(context.recorder.events(), processId);
    for (const event of context.recorder.events()) seen.add(event.name);
  };

  // echo with a delta listener and a one-slot queue: the second delta of the attempt is dropped.
  const echo = setup({ deltaBufferCapacity: 1 }, { deltas: true });
  const dispatcher: Dispatcher = {
    async dispatch(request, emit) {
      emit?.(Payload.encode(1));
      emit?.(Payload.encode(2));
      return Settlement.of('succeeded', request.effect.payload);
    },
    replayPolicy: () => 'never',
  };
  const result = await echo.engine.run(deploy(echoDefinition, dispatcher), hello);
  collect(echo, result.processId);

  // wait: signal acceptance, pause and resume.
  const waits = setup();
  const process = await waitingProcess(waits);
  await process.pause('hold');
  await published(waits.recorder, process.id, 'agent.process.paused');
  await process.resume();
  const waitId = snapshotOf(waits, process.id).waitId!;
  await process.deliverSignals(SignalRequest.create({ id: 'answer', waitId, payload: Payload.encode('yes') }));
  await process.await();
  collect(waits, process.id);

  // An Unknown resolved by the Host.
  const unknown = setup();
  const failing = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ error: new Error('reset') }] });
  const uncertain = await unknown.engine.start(deploy(echoDefinition, failing), hello);
  await unknown.committer.acknowledgement((record) => record.kind === 'settled');
  await uncertain.resolveUnknownEffect(EffectId.derive(uncertain.id, 1n, 0), Settlement.of('succeeded', hello));
  await uncertain.await();
  collect(unknown, uncertain.id);

  // Restore in a second Engine fences the first: restored there, runtime stopped here.
  const first = setup();
  const original = await waitingProcess(first);
  const head = await first.engine.captureTree(original.id);
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(waiter, head);
  // The fenced writer cannot commit the kill: the command itself reports the stopped runtime.
  await rejectsWith(original.kill('stale writer'), ErrorCode.runtimeStopped);
  await rejectsWith(original.await(), ErrorCode.runtimeStopped);
  await restored.kill('done');
  await restored.await();
  collect(first, original.id);
  collect(second, restored.id);

  assert.deepEqual([...seen].sort(), [...eventNameValues].sort());
});

test('event sequences restart at 1 with agent.process.restored after restore', async () => {
  const first = setup();
  const original = await waitingProcess(first);
  const head = await first.engine.captureTree(original.id);
  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(waiter, head);
  const waitId = snapshotOf(second, restored.id).waitId!;
  await restored.deliverSignals(SignalRequest.create({ id: 'answer', waitId, payload: Payload.encode('yes') }));
  await restored.await();
  const events = second.recorder.events().filter((event) => event.processId.equals(restored.id));
  assert.equal(events[0]?.name, 'agent.process.restored');
  assert.equal(events[0]?.processSequence, 1n);
  assert.ok(events[0]?.treeIncarnationId?.equals(second.engine.inspectTree(restored.id).incarnationId));
  assert.ok(!events[0]?.treeIncarnationId?.equals(first.engine.inspectTree(original.id).incarnationId));
  assertWellFormed(events, restored.id);
});

test('a stopped writer publishes agent.runtime.stopped without a gap, and never agent.process.finished', async () => {
  const context = setup();
  const process = await waitingProcess(context);
  context.committer.intercept = (record) => (record.kind === 'terminal' ? { fail: { when: 'before', error: new Error('disk full') } } : undefined);
  await assert.rejects(process.kill('stop'), RuntimeError);
  await assert.rejects(process.await(), RuntimeError);
  const events = context.recorder.events();
  assert.equal(events.at(-1)?.name, 'agent.runtime.stopped');
  assert.ok(!events.some((event) => event.name === 'agent.process.finished'));
  assertWellFormed(events, process.id);
});

test('committed events are published only after their commit is acknowledged', async () => {
  const context = setup();
  const process = await waitingProcess(context);
  const gate = deferred();
  context.committer.intercept = (record) => (record.kind === 'signals' || record.kind === 'terminal' ? { before: () => gate.promise } : undefined);
  const waitId = snapshotOf(context, process.id).waitId!;
  const delivery = process.deliverSignals(SignalRequest.create({ id: 'answer', waitId, payload: Payload.encode('yes') }));
  const pending = await context.committer.arrival((record) => record.kind === 'signals');
  assert.equal(await isSettled(delivery), false);
  assert.ok(!context.recorder.events().some((event) => event.name === 'agent.signal.accepted'));
  assert.equal(snapshotOf(context, process.id).usage().acceptedSignals, 1n, 'only the opening is charged so far');
  // The committer received the events it may store with the head.
  assert.deepEqual(pending.events.map((event) => event.name), ['agent.signal.accepted']);
  gate.resolve();
  assert.equal(await delivery, true);
  assert.ok(context.recorder.events().some((event) => event.name === 'agent.signal.accepted'));
  await process.await();
});

test('the terminal event and Result wait for the terminal commit', async () => {
  const context = setup();
  const process = await waitingProcess(context);
  const gate = deferred();
  context.committer.intercept = (record) => (record.kind === 'terminal' ? { before: () => gate.promise } : undefined);
  const cancel = process.requestCancellation('enough');
  await context.committer.arrival((record) => record.kind === 'terminal');
  const awaited = process.await();
  assert.equal(await isSettled(awaited), false);
  assert.equal(await isSettled(cancel), false, 'the cancellation is acknowledged only with its commit');
  assert.ok(!context.recorder.events().some((event) => event.name === 'agent.process.finished'));
  gate.resolve();
  await cancel;
  assert.equal((await awaited).status, 'canceled');
  assert.ok(context.recorder.events().some((event) => event.name === 'agent.process.finished'));
});

test('a throwing listener is counted and never changes execution', async () => {
  let calls = 0;
  const context = setup({
    eventListeners: [
      () => {
        calls += 1;
        throw new Error('exporter down');
      },
    ],
  });
  const result = await context.engine.run(deploy(echoDefinition, echoDispatcher), hello);
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { value: 'hello' });
  assert.equal(calls, context.recorder.events().length);
  const failures = context.engine.observationFailures();
  assert.equal(failures.eventListenerPanics, BigInt(calls));
  assert.ok(failures.lastEventPanic !== undefined);
});

test('waiting on the Engine from inside an event listener is listener_reentrancy', async () => {
  const codes: string[] = [];
  let engineRef: Setup['engine'] | undefined;
  const context = setup({
    eventListeners: [
      (event: Event) => {
        if (event.name !== 'agent.step.committed') return;
        const handle = engineRef?.process(event.processId);
        for (const attempt of [() => handle?.await(), () => handle?.join(), () => engineRef?.inspectTree(event.processId)]) {
          const record = (error: unknown) => codes.push(error instanceof KernelError ? error.code : String(error));
          try {
            const outcome: unknown = attempt();
            if (outcome instanceof Promise) outcome.catch(record);
          } catch (error) {
            record(error);
          }
        }
      },
    ],
  });
  engineRef = context.engine;
  const result = await context.engine.run(deploy(echoDefinition, echoDispatcher), hello);
  assert.equal(result.status, 'completed');
  assert.ok(codes.length >= 3);
  assert.ok(codes.every((code) => code === ErrorCode.listenerReentrancy), codes.join(', '));
});

test('deltas: one emitter per attempt, valid only during dispatch, sequences with gaps for drops', async () => {
  let stale: DeltaEmitter | undefined;
  const dispatcher: Dispatcher = {
    async dispatch(request, emit) {
      stale = emit;
      emit?.(Payload.encode({ token: 'a' }));
      emit?.('not a payload' as unknown as Payload);
      emit?.(Payload.encode({ token: 'c' }));
      return Settlement.of('succeeded', request.effect.payload);
    },
    replayPolicy: () => 'never',
  };
  const context = setup({}, { deltas: true });
  const result = await context.engine.run(deploy(echoDefinition, dispatcher), hello);
  stale?.(Payload.encode({ token: 'late' }));
  await context.engine.flushDeltas();
  const deltas = context.recorder.deltas();
  assert.deepEqual(deltas.map((delta) => delta.effectSequence), [1n, 3n]);
  assert.deepEqual(deltas.map((delta) => delta.payload.decode()), [{ token: 'a' }, { token: 'c' }]);
  const started = context.recorder.events().find((event) => event.name === 'agent.effect.started');
  assert.ok(deltas.every((delta) => delta.attemptId.equals(started?.effectStarted()?.attemptId)));
  const dropped = context.recorder.events().filter((event) => event.name === 'agent.delta.dropped');
  assert.deepEqual(dropped.map((event) => event.deltaDropped()?.count), [1n]);
  assert.equal(result.usage.droppedDeltas, 1n);
  assert.equal(snapshotOf(context, result.processId).counters.droppedDeltas, 1n);
});

test('deltas: a full queue drops with agent.delta.dropped; flushDeltas is an ordering barrier', async () => {
  const firstDelivered = deferred();
  const dispatched = deferred();
  const release = deferred();
  const delivered: bigint[] = [];
  const slowListener = async (delta: Delta) => {
    delivered.push(delta.effectSequence);
    if (delta.effectSequence === 1n) {
      firstDelivered.resolve();
      await release.promise;
    }
  };
  const dispatcher: Dispatcher = {
    async dispatch(request, emit) {
      emit?.(Payload.encode(1));
      // The worker is now blocked delivering delta 1: one slot left in the queue.
      await firstDelivered.promise;
      emit?.(Payload.encode(2));
      emit?.(Payload.encode(3));
      dispatched.resolve();
      return Settlement.of('succeeded', request.effect.payload);
    },
    replayPolicy: () => 'never',
  };
  const context = setup({ deltaBufferCapacity: 1, deltaListeners: [slowListener] });
  const running = context.engine.run(deploy(echoDefinition, dispatcher), hello);
  await dispatched.promise;
  const flushed = context.engine.flushDeltas();
  assert.equal(await isSettled(flushed), false);
  // The attempt's settlement waits (bounded) for its accepted deltas to be delivered first.
  assert.ok(!context.committer.attempts.some((record) => record.kind === 'settled'));
  release.resolve();
  await flushed;
  const result = await running;
  assert.equal(result.status, 'completed');
  assert.equal(result.usage.droppedDeltas, 1n);
  const dropped = context.recorder.events().find((event) => event.name === 'agent.delta.dropped');
  assert.equal(dropped?.deltaDropped()?.count, 1n);
  assert.deepEqual(delivered, [1n, 2n]);
});

test('deltas: a stuck delta listener holds a settlement only for the flush timeout; what is still queued is dropped', async () => {
  const stuck = deferred();
  const delivered: bigint[] = [];
  const stuckListener = async (delta: Delta) => {
    delivered.push(delta.effectSequence);
    await stuck.promise;
  };
  const failingListener = () => {
    throw new Error('listener failure');
  };
  const dispatcher: Dispatcher = {
    async dispatch(request, emit) {
      for (let index = 1; index <= 3; index += 1) emit?.(Payload.encode(index));
      return Settlement.of('succeeded', request.effect.payload);
    },
    replayPolicy: () => 'never',
  };
  const context = setup({ deltaListeners: [failingListener, stuckListener], deltaFlushTimeoutMs: 20 });
  const result = await context.engine.run(deploy(echoDefinition, dispatcher), hello);
  assert.equal(result.status, 'completed', 'neither a failing nor a stuck listener fails or blocks the commit for good');
  // Delta 1 is held by the stuck listener; 2 and 3 were still queued at the timeout.
  assert.deepEqual(delivered, [1n]);
  assert.equal(result.usage.droppedDeltas, 2n);
  assert.deepEqual(
    context.recorder.events().filter((event) => event.name === 'agent.delta.dropped').map((event) => event.deltaDropped()?.count),
    [2n],
  );
  assert.equal(context.engine.observationFailures().deltaListenerPanics, 1n);
  stuck.resolve();
  await context.engine.flushDeltas();
  assert.deepEqual(delivered, [1n], 'dropped deltas are never delivered after their settlement');
});

test('without a delta listener the dispatcher gets no emitter', async () => {
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ settlement: { status: 'succeeded', payload: hello }, deltas: [hello] }] });
  const context = setup();
  await context.engine.run(deploy(echoDefinition, dispatcher), hello);
  assert.equal(dispatcher.records()[0]?.hadEmitter, false);
});
