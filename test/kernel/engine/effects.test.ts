import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CapabilitySet } from '../../../src/kernel/capability.js';
import type { Dispatcher } from '../../../src/kernel/definition.js';
import { Effect, type EffectRequest } from '../../../src/kernel/effect.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { EffectId, type ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { echoDefinition, echoDispatchFailedCode, echoEffect } from '../../../src/testing/example-definitions.js';
import { ScriptedDispatcher, type ScriptedCall } from '../../../src/testing/scripted-dispatcher.js';
import { deploy, published, rejectsWith, setup, type RecordingCommitter, type Setup } from './harness.js';
import { dispatchProgram } from './programs.js';

const echoValue = Payload.encode({ value: 'hello' });

function scripted(calls: readonly ScriptedCall[], replayPolicy: 'never' | 'same_identity' = 'never'): ScriptedDispatcher {
  return new ScriptedDispatcher({ replayPolicy, calls });
}

/** Starts echo over `dispatcher` and resolves once its first Effect's settled boundary is acknowledged. */
async function echoUntilSettled(dispatcher: Dispatcher, context: Setup = setup()) {
  const process = await context.engine.start(deploy(echoDefinition, dispatcher), echoValue);
  await context.committer.acknowledgement((record) => record.kind === 'settled');
  const effectId = EffectId.derive(process.id, 1n, 0);
  return { ...context, process, effectId };
}

async function storedProcess(committer: RecordingCommitter, id: ProcessId) {
  const head = await committer.loadTree(id);
  assert.ok(head !== undefined);
  return head.process(id)!;
}

test('dispatcher Effects run in declaration order, each pending boundary committed before its dispatch', async () => {
  const context = setup();
  const observed: Array<{ index: number; phase: string | undefined }> = [];
  const dispatcher: Dispatcher = {
    async dispatch(request: EffectRequest) {
      // The store (not the Engine's memory) must already hold this Effect's dispatch permission.
      const head = await context.committer.loadTree(request.processId);
      observed.push({ index: request.batchIndex, phase: head?.process(request.processId)?.effectPhase(request.id) });
      return Settlement.of('succeeded', request.effect.payload);
    },
    replayPolicy: () => 'never',
  };
  const effects = [0, 1, 2].map((n) => Effect.dispatcher(Payload.encode({ n })));
  const definition = dispatchProgram({ effects });
  const process = await context.engine.start(deploy(definition, dispatcher), Payload.encode({}));
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(observed, [
    { index: 0, phase: 'pending' },
    { index: 1, phase: 'pending' },
    { index: 2, phase: 'pending' },
  ]);
  // The last settlement completes the batch, so its settled boundary adopts it: no progress
  // checkpoint between it and the completing Step (start, pending, settled…, terminal).
  assert.deepEqual(context.committer.kinds(), ['start', 'pending', 'settled', 'pending', 'settled', 'pending', 'settled', 'terminal']);
  const last = context.committer.acknowledged.at(-2);
  assert.equal(last?.kind, 'settled');
  assert.equal(last?.snapshot.root.prepared, undefined, 'the last settled boundary holds the adopted batch');
  assert.equal(last?.snapshot.root.mailbox.pendingCount, 3, 'with its three settlements delivered');
  const boundaries = context.committer.acknowledged.filter((record) => record.type === 'effect');
  assert.deepEqual(
    boundaries.map((record) => record.effectId),
    [0, 0, 1, 1, 2, 2].map((index) => EffectId.derive(process.id, 1n, index).toString()),
  );
  // Settlements reach the next Step in declaration order.
  assert.deepEqual((result.output?.decode() as { settlements: string[] }).settlements, ['succeeded', 'succeeded', 'succeeded']);
});

test('settlements are committed before the batch continues to the next Step', async () => {
  const context = setup();
  let kindsAtStep2: string[] | undefined;
  const dispatcher = scripted([{ settlement: { status: 'succeeded', payload: Payload.encode('pong') } }]);
  const definition = dispatchProgram();
  const wrapped = deploy(
    {
      descriptor: () => definition.descriptor(),
      childDeployments: () => [],
      start: () => definition.start(),
      restore: (state, signal) => {
        const execution = definition.restore(state, signal);
        return {
          step(abort, signals) {
            if (signals.length > 0) kindsAtStep2 ??= context.committer.kinds();
            return execution.step(abort, signals);
          },
          snapshot: () => execution.snapshot(),
        };
      },
    },
    dispatcher,
  );
  const process = await context.engine.start(wrapped, Payload.encode({}));
  await process.await();
  // The settled boundary adopted the batch: the Step that reads the settlement follows it directly.
  assert.deepEqual(kindsAtStep2, ['start', 'pending', 'settled']);
});

test('a dispatcher that throws leaves the Effect Unknown (external engine.dispatch.failed), never Failed', async () => {
  const { process, effectId, committer, recorder } = await echoUntilSettled(scripted([{ error: new Error('socket hang up') }]));
  const stored = await storedProcess(committer, process.id);
  assert.equal(stored.status, 'running');
  assert.deepEqual(stored.unknownEffectIds().map(String), [effectId.toString()]);
  assert.equal(stored.effectSettlement(effectId)?.status, 'unknown');
  const diagnostic = stored.effectDiagnostic(effectId);
  assert.equal(diagnostic?.kind, 'external');
  assert.equal(diagnostic?.code, 'engine.dispatch.failed');
  assert.ok(!diagnostic?.message.includes('socket hang up'), 'arbitrary error text is never persisted');
  const finished = await published(recorder, process.id, 'agent.effect.finished');
  assert.equal(finished.effectFinished()?.settlementStatus, 'unknown');
  assert.equal(finished.effectFinished()?.failure?.code, 'engine.dispatch.failed');
  await process.kill('done');
  const result = await process.await();
  assert.deepEqual(result.termination.unresolvedEffectIds.map(String), [effectId.toString()]);
});

test('a non-Error throw is an Unknown with a panic diagnostic', async () => {
  const { process, effectId, committer } = await echoUntilSettled(scripted([{ error: 'not an error' }]));
  const diagnostic = (await storedProcess(committer, process.id)).effectDiagnostic(effectId);
  assert.equal(diagnostic?.kind, 'panic');
  assert.equal(diagnostic?.code, 'engine.dispatch.panicked');
  await process.kill('done');
});

test('an invalid dispatcher return value is an Unknown with engine.dispatch.settlement.invalid', async () => {
  const dispatcher: Dispatcher = {
    dispatch: async () => ({ status: 'succeeded', payload: Payload.emptyObject }) as unknown as Settlement,
    replayPolicy: () => 'never',
  };
  const { process, effectId, committer } = await echoUntilSettled(dispatcher);
  const stored = await storedProcess(committer, process.id);
  assert.equal(stored.effectSettlement(effectId)?.status, 'unknown');
  assert.equal(stored.effectDiagnostic(effectId)?.code, 'engine.dispatch.settlement.invalid');
  await process.kill('done');
});

test('a definite failed settlement is delivered to the Strategy as failed', async () => {
  const context = setup();
  const dispatcher = scripted([{ settlement: { status: 'failed', payload: Payload.encode({ reason: 'quota' }) } }]);
  const result = await context.engine.run(deploy(echoDefinition, dispatcher), echoValue);
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.cause, 'external_failure');
  assert.equal(result.termination.failure?.code, echoDispatchFailedCode);
  assert.deepEqual(result.termination.unresolvedEffectIds, []);
});

test('resolveUnknownEffect: only an Unknown, only a definite settlement, committed as a resolved boundary', async () => {
  const { process, effectId, committer, recorder } = await echoUntilSettled(scripted([{ error: new Error('timeout') }]));
  await rejectsWith(process.resolveUnknownEffect(EffectId.derive(process.id, 7n, 0), Settlement.of('succeeded', echoValue)), ErrorCode.effectNotPending);
  await rejectsWith(process.resolveUnknownEffect(effectId, Settlement.of('unknown', echoValue)), ErrorCode.invalidSettlement);
  assert.deepEqual((await storedProcess(committer, process.id)).unknownEffectIds().map(String), [effectId.toString()]);
  await process.resolveUnknownEffect(effectId, Settlement.of('succeeded', Payload.encode({ value: 'resolved' })));
  const result = await process.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { value: 'resolved' });
  const boundaries = committer.acknowledged.filter((record) => record.type === 'effect').map((record) => record.kind);
  assert.deepEqual(boundaries, ['pending', 'settled', 'resolved']);
  assert.equal(committer.kinds().at(-1), 'terminal');
  const resolved = await published(recorder, process.id, 'agent.effect.resolved');
  assert.equal(resolved.phase, 'committed');
  assert.equal(resolved.effectResolved()?.settlementStatus, 'succeeded');
  assert.equal(recorder.events().filter((event) => event.name === 'agent.effect.started').length, 1, 'resolution dispatches nothing');
  await rejectsWith(process.resolveUnknownEffect(effectId, Settlement.of('succeeded', echoValue)), ErrorCode.processFinished);
});

test('resolveUnknownEffect of a definitely settled Effect is effect_not_pending', async () => {
  const context = setup();
  const effects = [echoEffect('a'), echoEffect('b')];
  const dispatcher = scripted([{ settlement: { status: 'succeeded', payload: echoValue } }, { error: new Error('lost') }]);
  const process = await context.engine.start(deploy(dispatchProgram({ effects }), dispatcher), Payload.encode({}));
  await context.committer.acknowledgement((record) => record.kind === 'settled' && record.effectId === EffectId.derive(process.id, 1n, 1).toString());
  await rejectsWith(process.resolveUnknownEffect(EffectId.derive(process.id, 1n, 0), Settlement.of('succeeded', echoValue)), ErrorCode.effectNotPending);
  await process.kill('done');
});

test('replayUnknownEffect is forbidden under the never policy', async () => {
  const { process, effectId } = await echoUntilSettled(scripted([{ error: new Error('reset') }], 'never'));
  await rejectsWith(process.replayUnknownEffect(effectId), ErrorCode.effectReplayForbidden);
  await process.kill('done');
});

test('replayUnknownEffect repeats the same identity with fresh attempts until a definite result resolves it', async () => {
  const dispatcher = scripted(
    [{ error: new Error('reset') }, { error: new Error('reset again') }, { settlement: { status: 'succeeded', payload: Payload.encode({ value: 'third time' }) } }],
    'same_identity',
  );
  const { process, effectId, committer, recorder } = await echoUntilSettled(dispatcher);
  await rejectsWith(process.replayUnknownEffect(effectId), ErrorCode.effectOutcomeUnknown);
  const stored = await storedProcess(committer, process.id);
  assert.deepEqual(stored.unknownEffectIds().map(String), [effectId.toString()], 'the Unknown stays authoritative');
  await process.replayUnknownEffect(effectId);
  const result = await process.await();
  assert.deepEqual(result.output?.decode(), { value: 'third time' });
  const requests = dispatcher.requests();
  assert.equal(requests.length, 3);
  assert.ok(requests.every((request) => request.id.equals(effectId)));
  const attempts = new Set(requests.map((request) => request.attemptId?.toString()));
  assert.equal(attempts.size, 3, 'every attempt has a fresh attempt id');
  const started = recorder.events().filter((event) => event.name === 'agent.effect.started');
  assert.deepEqual(
    started.map((event) => event.effectStarted()?.attemptId.toString()),
    requests.map((request) => request.attemptId?.toString()),
  );
  const boundaries = committer.acknowledged.filter((record) => record.type === 'effect').map((record) => record.kind);
  assert.deepEqual(boundaries, ['pending', 'settled', 'resolved']);
  assert.equal(result.usage.preparedEffects, 1n, 'replays never charge another Effect');
});

test('an Effect needing a capability the Process lacks fails the whole Step before any dispatch', async () => {
  const dispatcher = scripted([{ settlement: { status: 'succeeded', payload: echoValue } }]);
  const needy = [Effect.dispatcher(Payload.encode({ n: 0 })), Effect.dispatcher(Payload.encode({ n: 1 }), CapabilitySet.of(['net.http']))];
  const denied = await setup().engine.run(deploy(dispatchProgram({ effects: needy }), dispatcher), Payload.encode({}));
  assert.equal(denied.status, 'failed');
  assert.equal(denied.termination.failure?.kind, 'contract');
  assert.equal(denied.termination.failure?.code, 'engine.capability.denied');
  assert.equal(dispatcher.requests().length, 0);
  assert.equal(denied.usage.preparedEffects, 0n);

  const granted = scripted([
    { settlement: { status: 'succeeded', payload: echoValue } },
    { settlement: { status: 'succeeded', payload: echoValue } },
  ]);
  const allowed = await setup({ capabilities: CapabilitySet.of(['net.http']) }).engine.run(
    deploy(dispatchProgram({ effects: needy }), granted),
    Payload.encode({}),
  );
  assert.equal(allowed.status, 'completed');
  assert.equal(granted.requests().length, 2);
});
