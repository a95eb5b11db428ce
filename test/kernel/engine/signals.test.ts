import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Budget } from '../../../src/kernel/budget.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { EffectId, WaitId, type ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Schema } from '../../../src/kernel/schema.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { TreeLimits } from '../../../src/kernel/tree-limits.js';
import { counterDefinition, counterIdleReason, waitDefinition } from '../../../src/testing/example-definitions.js';
import { ScriptedDispatcher } from '../../../src/testing/scripted-dispatcher.js';
import { committedStatus, deferred, deploy, hostRequest, names, published, rejectsWith, setup, type Setup } from './harness.js';
import { dispatchProgram, waitsProgram } from './programs.js';

const counter = deploy(counterDefinition, undefined, 'signals-counter');
const waiter = deploy(waitDefinition, undefined, 'signals-wait');
const anySignal = Schema.of(true);

/** Starts a counter and waits until its first (empty-window) Step paused it. */
async function pausedCounter(config: Parameters<typeof setup>[0] = {}) {
  const context = setup(config);
  const process = await context.engine.start(counter, Payload.encode({}));
  await committedStatus(context.recorder, process.id, 'paused');
  return { ...context, process };
}

function snapshotOf(context: Pick<Setup, 'engine'>, process: { readonly id: ProcessId }) {
  return context.engine.inspectTree(process.id).processes[0]!.snapshot;
}

function answer(id: string, waitId: WaitId, value: unknown): SignalRequest {
  return SignalRequest.create({ id, waitId, payload: Payload.encode(value) });
}

test('a batch is admitted atomically and in order: one invalid request admits none', async () => {
  const context = await pausedCounter();
  const { process } = context;
  assert.equal(await process.deliverSignals(hostRequest('a', { add: 1 }), hostRequest('b', { add: 2 })), true);
  let snapshot = snapshotOf(context, process);
  assert.deepEqual(
    snapshot.signalReceipts().map((receipt) => [receipt.id.toString(), receipt.arrivalSequence]),
    [
      ['a', 1n],
      ['b', 2n],
    ],
  );
  await rejectsWith(process.deliverSignals(hostRequest('c', { add: 3 }), hostRequest('d', { bogus: true })), ErrorCode.schemaValidationFailed);
  await rejectsWith(process.deliverSignals(hostRequest('e', { add: 3 }), hostRequest('a', { add: 99 })), ErrorCode.signalConflict);
  snapshot = snapshotOf(context, process);
  assert.equal(snapshot.signalReceipts().length, 2);
  assert.equal(snapshot.usage().acceptedSignals, 2n);
  assert.deepEqual(
    context.recorder.events().filter((event) => event.name === 'agent.signal.accepted').map((event) => event.signalAccepted()?.signalId.toString()),
    ['a', 'b'],
  );
  await process.kill('done');
});

test('an identical re-delivery is deduplicated: no second charge, no second event, returns false', async () => {
  const context = await pausedCounter({ budget: Budget.of({ steps: Quota.unlimited(), effects: Quota.unlimited(), signals: Quota.of(2) }) });
  const { process, recorder } = context;
  assert.equal(await process.deliverSignals(hostRequest('a', { add: 1 })), true);
  const head = context.committer.acknowledged.length;
  assert.equal(await process.deliverSignals(hostRequest('a', { add: 1 })), false);
  assert.equal(context.committer.acknowledged.length, head, 'a pure duplicate commits nothing');
  // A batch mixing a known identity and a new one charges only the new one (the budget of 2 fits).
  assert.equal(await process.deliverSignals(hostRequest('a', { add: 1 }), hostRequest('b', { add: 2 })), true);
  const snapshot = snapshotOf(context, process);
  assert.equal(snapshot.usage().acceptedSignals, 2n);
  assert.deepEqual(
    recorder.events().filter((event) => event.name === 'agent.signal.accepted').map((event) => event.signalAccepted()?.signalId.toString()),
    ['a', 'b'],
  );
  await process.kill('done');
});

/** Starts a programmed external wait and resolves once it is waiting, with its WaitId. */
async function waiting(keys: readonly string[] = ['question'], config: Parameters<typeof setup>[0] = {}) {
  const context = setup(config);
  const process = await context.engine.start(deploy(waitsProgram(keys, anySignal)), Payload.encode({}));
  await committedStatus(context.recorder, process.id, 'waiting');
  const waitId = snapshotOf(context, process).waitId as WaitId;
  assert.ok(waitId instanceof WaitId);
  return { ...context, process, waitId };
}

test('reusing an identity with other content or another wait id, or twice in one batch, conflicts', async () => {
  const context = await waiting();
  const { process, waitId } = context;
  assert.equal(await process.deliverSignals(hostRequest('note', { text: 'one' })), true);
  await rejectsWith(process.deliverSignals(hostRequest('note', { text: 'two' })), ErrorCode.signalConflict);
  // Same payload, but now addressed: the wait id is part of the identity's content.
  await rejectsWith(process.deliverSignals(answer('note', waitId, { text: 'one' })), ErrorCode.signalConflict);
  await rejectsWith(process.deliverSignals(hostRequest('twin', 1), hostRequest('twin', 1)), ErrorCode.signalConflict);
  const snapshot = snapshotOf(context, process);
  assert.deepEqual(
    snapshot.signalReceipts().filter((receipt) => !receipt.id.engineOwned).map((receipt) => receipt.id.toString()),
    ['note'],
  );
  assert.equal(snapshot.status, 'waiting');
  await process.kill('done');
});

test('unaddressed input is checked against the signal schema and never releases a pause or a wait', async () => {
  // The wait example accepts no unaddressed input at all.
  const rejecting = setup();
  const strict = await rejecting.engine.start(waiter, Payload.encode({}));
  await committedStatus(rejecting.recorder, strict.id, 'waiting');
  await rejectsWith(strict.deliverSignals(hostRequest('x', { any: 1 })), ErrorCode.schemaValidationFailed);
  assert.equal(snapshotOf(rejecting, strict).signalReceipts().filter((receipt) => !receipt.id.engineOwned).length, 0);
  await strict.kill('done');

  // A counter paused by its own Step stays paused; a waiting Process stays waiting.
  const paused = await pausedCounter();
  assert.equal(await paused.process.deliverSignals(hostRequest('a', { add: 1 })), true);
  assert.equal(snapshotOf(paused, paused.process).status, 'paused');
  assert.equal(paused.recorder.events().filter((event) => event.name === 'agent.step.started').length, 1);
  await paused.process.kill('done');

  const held = await waiting();
  const stepsBefore = held.recorder.events().filter((event) => event.name === 'agent.step.started').length;
  assert.equal(await held.process.deliverSignals(hostRequest('n', { text: 'fyi' })), true);
  const snapshot = snapshotOf(held, held.process);
  assert.equal(snapshot.status, 'waiting');
  assert.ok(snapshot.waitId?.equals(held.waitId));
  assert.equal(held.recorder.events().filter((event) => event.name === 'agent.step.started').length, stepsBefore);
  await held.process.kill('done');
});

test('a wait answer is accepted only for the current external wait, once', async () => {
  const context = await waiting(['first', 'second']);
  const { process, recorder } = context;
  const first = context.waitId;
  const stranger = WaitId.derive(EffectId.derive(process.id, 99n, 0));
  await rejectsWith(process.deliverSignals(answer('wrong', stranger, 1)), ErrorCode.signalRejected);
  // Two answers in one batch: the second is rejected, so the batch admits nothing.
  await rejectsWith(process.deliverSignals(answer('a1', first, 1), answer('a2', first, 2)), ErrorCode.signalRejected);
  assert.equal(snapshotOf(context, process).signalReceipts().filter((receipt) => !receipt.id.engineOwned).length, 0);
  assert.equal(await process.deliverSignals(answer('a1', first, 1)), true);
  // Answered: a further answer to the same wait is rejected even before the Step consumes it.
  await rejectsWith(process.deliverSignals(answer('a3', first, 3)), ErrorCode.signalRejected);
  await committedStatus(recorder, process.id, 'waiting', 2);
  const second = snapshotOf(context, process).waitId as WaitId;
  assert.ok(!second.equals(first));
  // The first wait is closed now: answering it is stale.
  await rejectsWith(process.deliverSignals(answer('late', first, 4)), ErrorCode.signalRejected);
  assert.equal(await process.deliverSignals(answer('a4', second, { final: true })), true);
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { final: true });
});

test('an answer to the current wait is accepted while paused and keeps the Process paused until resumed', async () => {
  const context = await waiting();
  const { process, recorder, waitId } = context;
  await process.pause('hold on');
  await published(recorder, process.id, 'agent.process.paused');
  assert.ok(snapshotOf(context, process).waitId?.equals(waitId));
  assert.equal(await process.deliverSignals(answer('reply', waitId, 'yes')), true);
  assert.equal(snapshotOf(context, process).status, 'paused');
  await process.resume();
  const result = await process.await();
  assert.deepEqual(result.output?.decode(), 'yes');
});

test('receipts carry the arrival sequence and consumption; consumed payloads are released, digests kept', async () => {
  const context = await pausedCounter();
  const { process, recorder } = context;
  const a = hostRequest('a', { add: 1 });
  const b = hostRequest('b', { add: 2 });
  await process.deliverSignals(a, b);
  let receipts = snapshotOf(context, process).signalReceipts();
  assert.deepEqual(receipts.map((receipt) => [receipt.arrivalSequence, receipt.consumed]), [
    [1n, false],
    [2n, false],
  ]);
  assert.ok(receipts[0]?.pendingSignal()?.payload.equals(a.payload));
  assert.ok(receipts[0]?.matches(a));
  await process.resume();
  // The counter consumes both, then pauses again on its empty window.
  await committedStatus(recorder, process.id, 'paused', 2);
  receipts = snapshotOf(context, process).signalReceipts();
  assert.deepEqual(receipts.map((receipt) => [receipt.arrivalSequence, receipt.consumed]), [
    [1n, true],
    [2n, true],
  ]);
  assert.equal(receipts[0]?.pendingSignal(), undefined);
  assert.equal(receipts[1]?.pendingSignal(), undefined);
  assert.ok(receipts[0]?.payloadDigest.equals(a.payload.digest()));
  assert.ok(receipts[1]?.matches(b));
  assert.equal(snapshotOf(context, process).pauseReason, counterIdleReason);
  await process.kill('done');
});

test('the engine-owned signal namespace is rejected when a request is built', async () => {
  await rejectsWith(
    () => SignalRequest.create({ id: 'signal:engine:0000000000000000000000000000000000000000000000000000000000000000', payload: Payload.emptyObject }),
    ErrorCode.invalidSignalRequest,
  );
  await rejectsWith(() => SignalRequest.create({ id: 'signal:engine:x', payload: Payload.emptyObject }), ErrorCode.invalidSignalRequest);
});

test('a terminal Process rejects new signals but acknowledges identical duplicates with false', async () => {
  const context = await pausedCounter();
  const { process } = context;
  const finish = hostRequest('finish', { finish: true });
  await process.deliverSignals(finish);
  await process.resume();
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.equal(await process.deliverSignals(finish), false);
  await rejectsWith(process.deliverSignals(hostRequest('after', { add: 1 })), ErrorCode.signalRejected);
  await rejectsWith(process.deliverSignals(finish, hostRequest('after', { add: 1 })), ErrorCode.signalRejected);
  await rejectsWith(process.deliverSignals(hostRequest('finish', { add: 1 })), ErrorCode.signalConflict);
  assert.equal(snapshotOf(context, process).usage().acceptedSignals, 1n);
});

test('max_pending_signals bounds the unconsumed mailbox; nothing of a rejected batch is admitted', async () => {
  const context = await pausedCounter({ treeLimits: TreeLimits.of({ maxPendingSignals: 2n }) });
  const { process } = context;
  await rejectsWith(
    process.deliverSignals(hostRequest('a', { add: 1 }), hostRequest('b', { add: 1 }), hostRequest('c', { add: 1 })),
    ErrorCode.resourceLimitExceeded,
  );
  assert.equal(snapshotOf(context, process).signalReceipts().length, 0);
  assert.equal(await process.deliverSignals(hostRequest('a', { add: 1 }), hostRequest('b', { add: 1 })), true);
  await rejectsWith(process.deliverSignals(hostRequest('c', { add: 1 })), ErrorCode.resourceLimitExceeded);
  assert.equal(snapshotOf(context, process).signalReceipts().length, 2);
  await process.kill('done');
});

test('a finite signals budget bounds admission; nothing of a rejected batch is admitted', async () => {
  const budget = Budget.of({ steps: Quota.unlimited(), effects: Quota.unlimited(), signals: Quota.of(2) });
  const context = await pausedCounter({ budget });
  const { process } = context;
  await rejectsWith(
    process.deliverSignals(hostRequest('a', { add: 1 }), hostRequest('b', { add: 1 }), hostRequest('c', { add: 1 })),
    ErrorCode.resourceLimitExceeded,
  );
  assert.equal(snapshotOf(context, process).usage().acceptedSignals, 0n);
  assert.equal(await process.deliverSignals(hostRequest('a', { add: 1 }), hostRequest('b', { add: 1 })), true);
  await rejectsWith(process.deliverSignals(hostRequest('c', { add: 1 })), ErrorCode.resourceLimitExceeded);
  assert.equal(snapshotOf(context, process).usage().acceptedSignals, 2n);
  await process.kill('done');
});

test('admission counts the settlement reserved for every Effect of an in-flight batch', async () => {
  // One signal of budget: exactly the settlement of the one Effect; one pending slot: likewise.
  for (const config of [
    { budget: Budget.of({ steps: Quota.unlimited(), effects: Quota.unlimited(), signals: Quota.of(1) }) },
    { treeLimits: TreeLimits.of({ maxPendingSignals: 1n }) },
  ]) {
    const gate = deferred();
    const dispatcher = new ScriptedDispatcher({
      replayPolicy: 'never',
      calls: [{ settlement: { status: 'succeeded', payload: Payload.encode('pong') }, gate: gate.promise }],
    });
    const context = setup(config);
    const process = await context.engine.start(deploy(dispatchProgram({ signalSchema: anySignal }), dispatcher), Payload.encode({}));
    await published(context.recorder, process.id, 'agent.effect.started');
    await rejectsWith(process.deliverSignals(hostRequest('extra', 1)), ErrorCode.resourceLimitExceeded);
    gate.resolve();
    const result = await process.await();
    assert.equal(result.status, 'completed', JSON.stringify(result.termination.toWire()));
    assert.equal(names(context.recorder.events()).filter((name) => name === 'agent.signal.accepted').length, 0);
  }
});
