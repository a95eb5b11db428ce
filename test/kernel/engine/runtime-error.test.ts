import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Dispatcher } from '../../../src/kernel/definition.js';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { EffectId, SignalId, type ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { RuntimeError } from '../../../src/kernel/runtime-error.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { echoDefinition } from '../../../src/testing/example-definitions.js';
import { deferred, deploy, hostRequest, isSettled, published, RecordingCommitter, rejectsWith, setup, type CommitRecord, type Setup } from './harness.js';

const hello = Payload.encode({ value: 'hello' });

/** An echo deployment whose dispatcher counts calls (shared by the original and the restoring Engine). */
function countedEcho() {
  const counter = { dispatches: 0 };
  const dispatcher: Dispatcher = {
    async dispatch(request) {
      counter.dispatches += 1;
      return Settlement.of('succeeded', request.effect.payload);
    },
    replayPolicy: () => 'same_identity',
  };
  return { counter, deployment: deploy(echoDefinition, dispatcher, 'runtime-error-echo') };
}

async function runtimeErrorOf(promise: Promise<unknown>): Promise<RuntimeError> {
  const error = await promise.then(
    () => assert.fail('expected a RuntimeError'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof RuntimeError, String(error));
  return error;
}

/** Restores the store's authoritative head in a new Engine sharing the committer, and finishes it. */
async function recover(context: Setup, deployment: ReturnType<typeof countedEcho>['deployment'], rootId: ProcessId) {
  const head = await context.committer.loadTree(rootId);
  assert.ok(head !== undefined);
  const successor = setup({ committer: new RecordingCommitter(context.committer.store) });
  const process = await successor.engine.restoreTree(deployment, head);
  const result = await process.await();
  await process.join();
  await successor.engine.close();
  return { result, successor };
}

function assertStoppedWithoutFinishing(context: Setup, processId: ProcessId): void {
  const own = context.recorder.events().filter((event) => event.processId.equals(processId));
  assert.ok(own.some((event) => event.name === 'agent.runtime.stopped'));
  assert.ok(!own.some((event) => event.name === 'agent.process.finished'));
}

/** Intercepts the first commit of `kind` (and only it). */
function once(kind: string, interception: NonNullable<ReturnType<RecordingCommitter['intercept']>>) {
  let used = false;
  return (record: CommitRecord) => {
    if (used || record.kind !== kind) return undefined;
    used = true;
    return interception;
  };
}

test('a committer that throws on the settled boundary stops the writer; the Effect is listed unresolved', async () => {
  const { counter, deployment } = countedEcho();
  const context = setup();
  context.committer.intercept = once('settled', { fail: { when: 'before', error: new Error('connection refused') } });
  const process = await context.engine.start(deployment, hello);
  const error = await runtimeErrorOf(process.await());
  const head = await context.committer.loadTree(process.id);
  assert.ok(error.headDigest.equals(head!.digest), 'the last acknowledged head is the pending boundary');
  assert.equal(context.committer.acknowledged.at(-1)?.kind, 'pending');
  assert.ok(error.incarnationId.equals(head!.incarnationId));
  assert.ok(error.processId.equals(process.id));
  assert.deepEqual(error.unresolvedEffectIds.map(String), [EffectId.derive(process.id, 1n, 0).toString()]);
  assert.equal(error.classification().code, 'engine.tree.committer_failed');
  assertStoppedWithoutFinishing(context, process.id);
  await rejectsWith(process.join(), ErrorCode.runtimeStopped);
  await rejectsWith(process.deliverSignals(hostRequest('late', {})), ErrorCode.runtimeStopped);
  const inspection = context.engine.inspectTree(process.id);
  assert.equal(inspection.stopped, true);
  assert.ok(inspection.headDigest.equals(error.headDigest));
  // The store holds a pending dispatch permission: same_identity replays it once on restore.
  const { result } = await recover(context, deployment, process.id);
  assert.equal(result.status, 'completed');
  assert.equal(counter.dispatches, 2);
  await context.engine.close();
});

test('a failed pending boundary does not list its Effect, and nothing was dispatched', async () => {
  const { counter, deployment } = countedEcho();
  const context = setup();
  context.committer.intercept = once('pending', { fail: { when: 'before', error: new Error('connection refused') } });
  const process = await context.engine.start(deployment, hello);
  const error = await runtimeErrorOf(process.await());
  assert.deepEqual(error.unresolvedEffectIds, []);
  assert.equal(counter.dispatches, 0);
  const head = await context.committer.loadTree(process.id);
  assert.ok(error.headDigest.equals(head!.digest));
  assert.equal(context.committer.kinds().join(), 'start');
  assertStoppedWithoutFinishing(context, process.id);
  const { result } = await recover(context, deployment, process.id);
  assert.equal(result.status, 'completed');
  assert.equal(counter.dispatches, 1, 'the recomputed Step dispatches exactly once');
});

test('a committer that never answers holds the Process until released, then the writer stops', async () => {
  const { deployment } = countedEcho();
  const context = setup();
  const release = deferred();
  context.committer.intercept = once('terminal', {
    before: () => release.promise,
    fail: { when: 'before', error: new Error('storage deadline exceeded') },
  });
  const process = await context.engine.start(deployment, hello);
  await context.committer.arrival((record) => record.kind === 'terminal');
  const before = (await context.committer.loadTree(process.id))!.digest;
  const awaited = process.await();
  assert.equal(await isSettled(awaited), false);
  await rejectsWith(context.engine.close(), ErrorCode.engineHasActiveProcesses);
  release.resolve();
  const error = await runtimeErrorOf(awaited);
  assert.ok(error.headDigest.equals(before));
  assert.deepEqual(error.unresolvedEffectIds, [], 'the settlement was acknowledged before the lost terminal commit');
  assertStoppedWithoutFinishing(context, process.id);
  const { result } = await recover(context, deployment, process.id);
  assert.equal(result.status, 'completed');
  await context.engine.close();
});

test('a lost response after applying: the error names the previous head, the store is ahead, restore continues', async () => {
  const { counter, deployment } = countedEcho();
  const context = setup();
  context.committer.intercept = once('settled', { fail: { when: 'after', error: new Error('reply lost') } });
  const process = await context.engine.start(deployment, hello);
  const error = await runtimeErrorOf(process.await());
  const pendingHead = context.committer.acknowledged.at(-1);
  assert.equal(pendingHead?.kind, 'pending');
  assert.ok(error.headDigest.equals(pendingHead!.snapshot.digest), 'the last head acknowledged to this writer');
  const stored = await context.committer.loadTree(process.id);
  assert.ok(!stored!.digest.equals(error.headDigest), 'the store moved ahead of the writer');
  const effectId = EffectId.derive(process.id, 1n, 0);
  // The settled boundary adopted its batch: the settlement is in the mailbox, not a prepared Step.
  assert.equal(stored!.root.prepared, undefined);
  assert.notEqual(stored!.root.mailbox.indexOf(SignalId.settlement(effectId)), undefined);
  assert.deepEqual(error.unresolvedEffectIds.map(String), [effectId.toString()]);
  assertStoppedWithoutFinishing(context, process.id);
  const { result } = await recover(context, deployment, process.id);
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output?.decode(), { value: 'hello' });
  assert.equal(counter.dispatches, 1, 'the stored settlement is adopted without a second dispatch');
});

test('a lost terminal acknowledgment publishes no Result; the restored terminal head does', async () => {
  const { deployment } = countedEcho();
  const context = setup();
  context.committer.intercept = once('terminal', { fail: { when: 'after', error: new Error('reply lost') } });
  const process = await context.engine.start(deployment, hello);
  await runtimeErrorOf(process.await());
  assertStoppedWithoutFinishing(context, process.id);
  assert.notEqual(context.engine.inspectTree(process.id).processes[0]?.snapshot.status, 'completed');
  const { result, successor } = await recover(context, deployment, process.id);
  assert.equal(result.status, 'completed');
  await published(successor.recorder, process.id, 'agent.process.restored');
});
