/**
 * Engine.hibernateTree: a parked tree leaves memory without a commit (its head is the whole state)
 * and a restore continues from that head; a tree with any work, or a command queued behind the
 * release, stays.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode } from '../../../src/kernel/errors.js';
import { isParkedTree } from '../../../src/kernel/parked.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { echoDefinition, pauseDefinition, waitDefinition } from '../../../src/testing/example-definitions.js';
import { ScriptedDispatcher } from '../../../src/testing/scripted-dispatcher.js';
import { committedStatus, deferred, deploy, isSettled, published, RecordingCommitter, rejectsWith, setup } from './harness.js';

const hello = Payload.encode({ value: 'hello' });
const waiter = deploy(waitDefinition, undefined, 'hibernation-wait');
const pauser = deploy(pauseDefinition, undefined, 'hibernation-pause');

test('a waiting tree hibernates without a commit; its handle refuses; a restore from the head answers the wait', async () => {
  const { engine, recorder, committer } = setup();
  const process = await engine.start(waiter, Payload.encode({}));
  await committedStatus(recorder, process.id, 'waiting');
  const commitsBefore = committer.attempts.length;
  const head = await committer.loadTree(process.id);

  assert.equal(await engine.hibernateTree(process.id), true);
  assert.equal(committer.attempts.length, commitsBefore, 'a release commits nothing');
  assert.equal(engine.process(process.id), undefined);
  await rejectsWith(() => engine.inspectTree(process.id), ErrorCode.treeNotFound);
  // The old handle: its unresolved result and every command refuse, so no caller waits forever.
  await rejectsWith(process.await(), ErrorCode.treeReleased);
  const waitId = head!.root.waitId!;
  const answer = SignalRequest.create({ id: 'answer', waitId, payload: Payload.encode(1) });
  await rejectsWith(process.deliverSignals(answer), ErrorCode.treeReleased);
  assert.equal(committer.attempts.length, commitsBefore, 'the refused command committed nothing');

  const stored = await committer.loadTree(process.id);
  assert.ok(stored!.digest.equals(head!.digest), 'the head is what the tree left');
  const restored = await engine.restoreTree(waiter, stored!);
  await restored.deliverSignals(answer);
  assert.equal((await restored.await()).status, 'completed');
  await engine.close();
});

test('a command queued behind the release cancels it', async () => {
  const { engine, recorder } = setup();
  const process = await engine.start(waiter, Payload.encode({}));
  await committedStatus(recorder, process.id, 'waiting');
  const waitId = engine.inspectTree(process.id).processes[0]!.snapshot.waitId!;
  // Both calls are queued on the owner lane before either runs: the release finds the signal behind it.
  const hibernation = engine.hibernateTree(process.id);
  const delivery = process.deliverSignals(SignalRequest.create({ id: 'answer', waitId, payload: Payload.encode(1) }));
  assert.equal(await hibernation, false);
  assert.equal(await delivery, true);
  assert.equal((await process.await()).status, 'completed');
  assert.equal(engine.process(process.id), process);
  await engine.close();
});

test('a dispatch in flight or a capture keeps the tree; a finished tree hibernates and keeps its result', async () => {
  const gate = deferred();
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ settlement: { status: 'succeeded', payload: hello }, gate: gate.promise }] });
  const { engine, recorder } = setup();
  const process = await engine.start(deploy(echoDefinition, dispatcher, 'hibernation-echo'), hello);
  await published(recorder, process.id, 'agent.effect.started');
  assert.equal(await engine.hibernateTree(process.id), false, 'an effect in flight is work');
  assert.equal(engine.inspectTree(process.id).processes[0]!.work, 'dispatch');
  const capture = engine.captureTree(process.id);
  assert.equal(await isSettled(capture), false);
  const during = engine.hibernateTree(process.id);
  gate.resolve();
  await capture;
  assert.equal(await during, false, 'a capture holds the tree');
  const result = await process.await();
  assert.equal(result.status, 'completed');
  await process.join();
  assert.equal(await engine.hibernateTree(process.id), true);
  assert.ok((await process.await()).equals(result), 'a settled result survives the release');
  await engine.close();
});

test('paused and Unknown-blocked trees hibernate; the restored tree keeps the Unknown and its pause', async () => {
  const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ error: new Error('reset') }] });
  const unknown = deploy(echoDefinition, dispatcher, 'hibernation-unknown');
  const { engine, recorder, committer } = setup();
  const blocked = await engine.start(unknown, hello);
  await committer.acknowledgement((record) => record.kind === 'settled');
  const paused = await engine.start(pauser, hello);
  await committedStatus(recorder, paused.id, 'paused');

  assert.equal(await engine.hibernateTree(blocked.id), true);
  assert.equal(await engine.hibernateTree(paused.id), true);

  const other = setup({ committer: new RecordingCommitter(committer.store) });
  const blockedHead = await committer.loadTree(blocked.id);
  const [effectId] = blockedHead!.root.unknownEffectIds();
  assert.ok(effectId !== undefined);
  const restoredBlocked = await other.engine.restoreTree(unknown, blockedHead!);
  await restoredBlocked.resolveUnknownEffect(effectId, Settlement.of('succeeded', hello));
  assert.equal((await restoredBlocked.await()).status, 'completed');
  assert.equal(dispatcher.requests().length, 1, 'an Unknown is never dispatched again');

  const restoredPaused = await other.engine.restoreTree(pauser, (await committer.loadTree(paused.id))!);
  assert.equal(other.engine.inspectTree(paused.id).processes[0]!.snapshot.status, 'paused');
  await restoredPaused.resume();
  assert.equal((await restoredPaused.await()).status, 'completed');
  await other.engine.close();
});

test('a watched start context keeps its tree resident (its abort must still reach the tree)', async () => {
  const { engine, recorder } = setup();
  const context = new AbortController();
  const process = await engine.start(waiter, Payload.encode({}), { signal: context.signal });
  await committedStatus(recorder, process.id, 'waiting');
  assert.equal(await engine.hibernateTree(process.id), false);
  context.abort(new Error('caller went away'));
  assert.equal((await process.await()).status, 'canceled');
  await process.join();
  assert.equal(await engine.hibernateTree(process.id), true, 'once finished the context no longer matters');
  await engine.close();
});

test('hibernating an unknown tree is tree_not_found; hibernating twice releases once', async () => {
  const { engine, recorder } = setup();
  const process = await engine.start(waiter, Payload.encode({}));
  await committedStatus(recorder, process.id, 'waiting');
  // Each release is queued behind the other's check: exactly one of them releases.
  const outcomes = await Promise.all([engine.hibernateTree(process.id), engine.hibernateTree(process.id)]);
  assert.deepEqual(outcomes.sort(), [false, true]);
  await rejectsWith(engine.hibernateTree(process.id), ErrorCode.treeNotFound);
  await engine.close();
});

test('isParkedTree reads the same rule from a head: a wait or an Unknown is parked, a dispatch in flight is not', async () => {
  const gate = deferred();
  const inFlight = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ settlement: { status: 'succeeded', payload: hello }, gate: gate.promise }] });
  const failing = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ error: new Error('reset') }] });
  const { engine, recorder, committer } = setup();
  const waiting = await engine.start(waiter, Payload.encode({}));
  await committedStatus(recorder, waiting.id, 'waiting');
  assert.equal(isParkedTree((await committer.loadTree(waiting.id))!), true);

  const dispatching = await engine.start(deploy(echoDefinition, inFlight, 'parked-echo'), hello);
  await published(recorder, dispatching.id, 'agent.effect.started');
  assert.equal(isParkedTree((await committer.loadTree(dispatching.id))!), false, 'a pending effect is work for whoever owns the tree');

  const blocked = await engine.start(deploy(echoDefinition, failing, 'parked-unknown'), hello);
  await committer.acknowledgement((record) => record.kind === 'settled' && record.snapshot.rootId.equals(blocked.id));
  assert.equal(isParkedTree((await committer.loadTree(blocked.id))!), true, 'an Unknown waits for a resolution');

  gate.resolve();
  await dispatching.join();
  assert.equal(isParkedTree((await committer.loadTree(dispatching.id))!), true, 'a finished tree is parked');
  await waiting.kill('done');
  await blocked.kill('done');
  await Promise.all([waiting.join(), blocked.join()]);
  await engine.close();
});

/**
 * A timer-like dispatcher: each dispatch waits for `release()` (or its abort), then succeeds. Parkable
 * (`Dispatcher.parkable`) with the given replay policy.
 */
function parkableTimer(replayPolicy: 'same_identity' | 'never') {
  const waiting: { resolve: () => void }[] = [];
  const aborts: unknown[] = [];
  const dispatcher = Object.freeze({
    dispatch(_request: unknown, _emit: unknown, signal: AbortSignal): Promise<Settlement> {
      return new Promise<Settlement>((resolve, reject) => {
        signal.addEventListener('abort', () => {
          aborts.push(signal.reason);
          reject(signal.reason);
        }, { once: true });
        waiting.push({ resolve: () => resolve(Settlement.of('succeeded', hello)) });
      });
    },
    replayPolicy: () => replayPolicy,
    parkable: () => true,
  });
  return { dispatcher, waiting, aborts };
}

test('a tree whose only work is a parkable dispatch (same_identity) hibernates without a commit; the restore replays it', async () => {
  const timer = parkableTimer('same_identity');
  const deployment = deploy(echoDefinition, timer.dispatcher, 'hibernation-parkable');
  const { engine, recorder, committer } = setup();
  const process = await engine.start(deployment, hello);
  await published(recorder, process.id, 'agent.effect.started');
  const commitsBefore = committer.attempts.length;
  assert.equal(await engine.hibernateTree(process.id), true, 'parked on its timer');
  assert.equal(committer.attempts.length, commitsBefore, 'a release commits nothing, not even an Unknown');
  assert.equal(timer.aborts.length, 1, 'the parked dispatch is aborted');
  assert.equal((timer.aborts[0] as { code?: string }).code, ErrorCode.treeReleased);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(committer.attempts.length, commitsBefore, 'its rejection is ignored');
  assert.equal(recorder.events().filter((event) => event.name === 'agent.effect.finished').length, 0, 'nor published');

  const head = await committer.loadTree(process.id);
  assert.equal(head!.root.prepared?.frontier()?.phase, 'pending', 'the head still holds the pending effect');
  const restored = await engine.restoreTree(deployment, head!);
  await published(recorder, restored.id, 'agent.effect.started', 2);
  assert.equal(timer.waiting.length, 2, 'the restore replayed the dispatch');
  timer.waiting[1]!.resolve();
  assert.equal((await restored.await()).status, 'completed');
  await engine.close();
});

test('a parkable dispatch whose effect may not be replayed keeps its tree', async () => {
  const never = parkableTimer('never');
  const { engine, recorder } = setup();
  const process = await engine.start(deploy(echoDefinition, never.dispatcher, 'hibernation-parkable-never'), hello);
  await published(recorder, process.id, 'agent.effect.started');
  assert.equal(await engine.hibernateTree(process.id), false, 'a restore could not replay it: not parked');
  never.waiting[0]!.resolve();
  assert.equal((await process.await()).status, 'completed');
  await engine.close();
});
