/**
 * Process trees (kernel-contract §4.15): start_child admission and its refusals, wait_children at
 * both boundaries with every condition, child control, termination cascades and whole-tree
 * capture/restore. Synchronised on committed facts (acknowledged commits, child results), never sleeps.
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { Budget } from '../../../src/kernel/budget.js';
import { CapabilitySet } from '../../../src/kernel/capability.js';
import { MapDeploymentResolver } from '../../../src/kernel/deployment.js';
import { ChildWaitCondition, Effect, type ChildWaitBoundary } from '../../../src/kernel/effect.js';
import type { Engine } from '../../../src/kernel/engine.js';
import { EffectId, ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Schema } from '../../../src/kernel/schema.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import { TreeLimits } from '../../../src/kernel/tree-limits.js';
import { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import { isParkedTree } from '../../../src/kernel/parked.js';
import { childSpec, doneProgram, gateChildProgram, parentProgram, type ParentReport } from './child-programs.js';
import { Transition } from '../../../src/kernel/transition.js';
import { committedStatus, deferred, deploy, isSettled, ProgramDefinition, RecordingCommitter, setup } from './harness.js';
import { dispatchProgram } from './programs.js';
import type { Dispatcher } from '../../../src/kernel/definition.js';
import { Settlement } from '../../../src/kernel/settlement.js';

/** The id of the child started by batch entry `index` of `parent`'s first Step. */
function childOf(parent: ProcessId, index: number, step = 1n): ProcessId {
  return ProcessId.child(EffectId.derive(parent, step, index));
}

function reportOf(output: Payload | undefined): ParentReport {
  return output?.decode() as ParentReport;
}

/** Answers the current external wait of `childId` (a gate child) with `value`. */
async function answer(engine: Engine, rootId: ProcessId, childId: ProcessId, value: unknown): Promise<void> {
  const inspection = engine.inspectTree(rootId).processes.find((entry) => entry.snapshot.processId.equals(childId));
  const waitId = inspection?.snapshot.waitId;
  assert.ok(waitId !== undefined, `child ${childId.toString()} is waiting`);
  const handle = engine.process(childId);
  assert.ok(handle !== undefined, 'a published child has a handle');
  await handle.deliverSignals(SignalRequest.create({ id: `answer-${childId.toString()}`, waitId, payload: Payload.encode(value) }));
  await handle.await();
}

const gate = deploy(gateChildProgram(['go'], Schema.of(true)), undefined, 'children-gate');
const done = deploy(doneProgram(), undefined, 'children-done');
const resolver = new MapDeploymentResolver([gate, done]);

test('start_child publishes each child in a child_start checkpoint before any of its Steps, and inspection lists it', async () => {
  const { engine, committer, recorder } = setup({ deploymentResolver: resolver });
  const parent = deploy(parentProgram({ children: [childSpec('a', done), childSpec('b', done)], wait: { boundary: 'terminal_result', condition: ChildWaitCondition.all() } }));
  const root = await engine.start(parent, Payload.encode({}));
  const result = await root.await();
  await root.join();
  assert.equal(result.status, 'completed');
  const report = reportOf(result.output);
  const ids = [childOf(root.id, 0), childOf(root.id, 1)];
  assert.deepEqual(report.started.map((entry) => entry.process_id), ids.map(String));
  assert.deepEqual(report.answer?.outcomes.map((outcome) => outcome.result.termination.status), ['completed', 'completed']);
  for (const id of ids) {
    const publication = committer.acknowledged.findIndex((record) => record.kind === 'child_start' && record.snapshot.process(id) !== undefined);
    const firstStep = recorder.events().findIndex((event) => event.processId.equals(id) && event.name === 'agent.step.started');
    assert.ok(publication >= 0, 'the child is published by a child_start checkpoint');
    const started = recorder.events().findIndex((event) => event.processId.equals(id) && event.name === 'agent.process.started');
    assert.ok(started >= 0 && started < firstStep, 'the child is announced before its first Step');
    assert.equal(committer.acknowledged.filter((record) => record.kind === 'child_start' && record.snapshot.process(id) !== undefined && committer.acknowledged.indexOf(record) < publication).length, 0);
    assert.ok(engine.process(id) !== undefined);
    assert.equal((await engine.process(id)?.await())?.status, 'completed');
  }
  const inspection = engine.inspectTree(root.id);
  assert.equal(inspection.processes.length, 3);
  assert.deepEqual(
    inspection.processes.filter((entry) => entry.snapshot.relation.parentId?.equals(root.id)).map((entry) => entry.snapshot.relation.depth),
    [1, 1],
  );
});

/** Starts a parent over three gate children and answers them in the order c3, c1, c2. */
async function countingRun(boundary: ChildWaitBoundary, condition: ReturnType<typeof ChildWaitCondition.all>, expected: number): Promise<void> {
  const { engine, recorder } = setup({ deploymentResolver: resolver });
  const parent = deploy(parentProgram({ children: ['a', 'b', 'c'].map((key) => childSpec(key, gate)), wait: { boundary, condition } }));
  const root = await engine.start(parent, Payload.encode({}));
  const ids = [0, 1, 2].map((index) => childOf(root.id, index));
  for (const id of ids) await committedStatus(recorder, id, 'waiting');
  const answerOf = () => {
    const snapshot = engine.inspectTree(root.id).processes[0]?.snapshot;
    return snapshot?.mailbox.waits().find((wait) => wait.kind === 'children')?.answered ?? false;
  };
  const order = [2, 0, 1];
  for (const [count, index] of order.slice(0, expected).entries()) {
    assert.equal(answerOf(), false, `${boundary} ${condition.kind}: not answered after ${count} children`);
    await answer(engine, root.id, ids[index] as ProcessId, { child: index });
  }
  // Satisfaction commits atomically with the child's terminal boundary, so it is visible now.
  assert.equal(answerOf(), true, `${boundary} ${condition.kind}: answered after ${expected} children`);
  const result = await root.await();
  assert.equal(result.status, 'completed');
  const outcomes = reportOf(result.output).answer?.outcomes ?? [];
  // Every child at the boundary at the atomic check, in request order (not answer order).
  assert.equal(outcomes.length, expected);
  for (const outcome of outcomes) {
    assert.equal(outcome.result.termination.status, 'completed');
    assert.equal(outcome.subtree_unresolved_effects !== undefined, boundary === 'subtree_drained');
  }
  await root.join();
  // Children the parent no longer waits for end with it (the parent's completion cascades).
  for (const index of order.slice(expected)) {
    assert.equal((await engine.process(ids[index] as ProcessId)?.await())?.termination.cause, 'parent_cancellation');
  }
}

for (const boundary of ['terminal_result', 'subtree_drained'] as const) {
  test(`wait_children any at ${boundary} is answered by the first child to reach it`, () => countingRun(boundary, ChildWaitCondition.any(), 1));
  test(`wait_children quorum(2) at ${boundary} is answered by the second`, () => countingRun(boundary, ChildWaitCondition.quorum(2), 2));
  test(`wait_children all at ${boundary} waits for every child`, () => countingRun(boundary, ChildWaitCondition.all(), 3));
}

test('subtree_drained waits for the descendants, terminal_result does not', async () => {
  for (const boundary of ['terminal_result', 'subtree_drained'] as const) {
    // The middle child starts a gate grandchild and completes at once, leaving it live; the
    // cascade then cancels the grandchild in a later commit.
    const middle = deploy(parentProgram({ name: 'test.middle', children: [childSpec('g', gate)] }), undefined, `children-middle-${boundary}`);
    const parent = deploy(parentProgram({ children: [childSpec('m', middle)], wait: { boundary, condition: ChildWaitCondition.all() } }));
    const local = setup({ deploymentResolver: new MapDeploymentResolver([gate, middle]) });
    const root = await local.engine.start(parent, Payload.encode({}));
    const result = await root.await();
    await root.join();
    assert.equal(result.status, 'completed');
    const middleId = childOf(root.id, 0);
    const grandchild = childOf(middleId, 0);
    const middleEnd = local.committer.acknowledged.find((record) => record.snapshot.process(middleId)?.isTerminal === true);
    const answered = (record: typeof middleEnd) =>
      record?.snapshot.root.mailbox.waits().find((wait) => wait.kind === 'children')?.answered === true;
    assert.ok(middleEnd !== undefined);
    assert.equal(middleEnd.snapshot.process(grandchild)?.isTerminal, false, 'the grandchild outlives the middle child');
    assert.equal(answered(middleEnd), boundary === 'terminal_result');
    assert.equal(local.committer.acknowledged.find((record) => record.snapshot.process(grandchild)?.isTerminal === true)?.snapshot.process(grandchild)?.termination?.cause, 'parent_cancellation');
    const outcome = reportOf(result.output).answer?.outcomes[0];
    assert.deepEqual(outcome?.subtree_unresolved_effects, boundary === 'subtree_drained' ? [] : undefined);
  }
});

/** Runs a parent starting one child `spec`, returning the reported start result. */
async function startOne(spec: ReturnType<typeof childSpec>, config: Parameters<typeof setup>[0] = {}, parentOptions: { budget?: Budget; capabilities?: CapabilitySet } = {}) {
  const context = setup({ deploymentResolver: resolver, ...config, budget: parentOptions.budget ?? config.budget, capabilities: parentOptions.capabilities ?? config.capabilities });
  const parent = deploy(parentProgram({ children: [spec] }));
  const root = await context.engine.start(parent, Payload.encode({}));
  const result = await root.await();
  await root.join();
  assert.equal(result.status, 'completed', 'a refused child start does not fail the parent');
  const head = await context.engine.captureTree(root.id);
  return { started: reportOf(result.output).started[0], head, context, root };
}

test('a child whose start fails settles the parent definitely, with the contract code, and publishes nothing', async () => {
  const cases: Array<[string, () => ReturnType<typeof startOne>]> = [
    ['engine.child.deployment_unavailable', () => startOne(childSpec('x', deploy(doneProgram(), undefined, 'children-unbound')))],
    ['engine.child.admission.rejected', () => startOne(childSpec('x', done), { processAdmitter: (admission) => {
      if (admission.relation.parentId !== undefined) throw new Error('no children today');
    } })],
    ['engine.child.initialization_outcome.unacknowledged', () => startOne(childSpec('x', done), { initializationAcknowledger: (outcome) => {
      if (outcome.admission.relation.parentId !== undefined) throw new Error('the acknowledgment store is down');
    } })],
  ];
  for (const [code, run] of cases) {
    const { started, head, context } = await run();
    assert.equal(started?.failure?.code, code);
    assert.equal(started?.process_id, undefined);
    assert.equal(head.processSnapshots().length, 1, `${code}: no child is captured`);
    assert.equal(head.root.unknownEffectIds().length, 0, 'never Unknown');
    assert.ok(!context.committer.kinds().includes('child_start'));
  }
  const typed = deploy(
    new ProgramDefinition({
      name: 'test.child.typed',
      inputSchema: Schema.parse('{"type":"object","required":["n"]}'),
      step: () => Transition.complete(0, Payload.emptyObject),
    }),
    undefined,
    'children-typed',
  );
  const { started } = await startOne(childSpec('x', typed), { deploymentResolver: new MapDeploymentResolver([typed]) });
  assert.equal(started?.failure?.code, 'engine.child.input.invalid');
});

test('capability attenuation: a child asking for more than its parent holds is refused', async () => {
  const caps = CapabilitySet.of(['net.read']);
  const ok = await startOne(childSpec('x', done, { capabilities: caps }), { capabilities: caps });
  assert.ok(ok.started?.process_id !== undefined);
  const refused = await startOne(childSpec('x', done, { capabilities: CapabilitySet.of(['net.read', 'net.write']) }), { capabilities: caps });
  assert.equal(refused.started?.failure?.code, 'engine.child.capability_escalation');
});

test('a finite parent budget is debited permanently and refuses an over-large child', async () => {
  const finite = (steps: number) => Budget.of({ steps: Quota.of(steps), effects: Quota.of(100), signals: Quota.of(100) });
  const grant = Budget.of({ steps: Quota.of(3), effects: Quota.of(10), signals: Quota.of(10) });
  const ok = await startOne(childSpec('x', done, { budget: grant }), { budget: finite(10) });
  assert.ok(ok.started?.process_id !== undefined);
  assert.deepEqual(ok.head.root.allocatedResources, { steps: 3n, effects: 10n, signals: 10n });
  // Step 1 is being prepared (1) + the grant (10) exceeds 10.
  const tooLarge = await startOne(childSpec('x', done, { budget: Budget.of({ steps: Quota.of(10), effects: Quota.of(1), signals: Quota.of(1) }) }), { budget: finite(10) });
  assert.equal(tooLarge.started?.failure?.code, 'engine.child.budget_exhausted');
  assert.deepEqual(tooLarge.head.root.allocatedResources, { steps: 0n, effects: 0n, signals: 0n });
  const unlimited = await startOne(childSpec('x', done), { budget: finite(10) });
  assert.equal(unlimited.started?.failure?.code, 'engine.child.budget_exhausted', 'a finite parent cannot grant an unlimited quota');
});

test('tree limits refuse a child with engine.child.tree_limit', async () => {
  const limits = [
    TreeLimits.of({ maxChildren: Quota.of(0) }),
    TreeLimits.of({ maxTreeProcesses: Quota.of(1) }),
  ];
  for (const treeLimits of limits) {
    const { started, head } = await startOne(childSpec('x', done), { treeLimits });
    assert.equal(started?.failure?.code, 'engine.child.tree_limit', JSON.stringify(started));
    assert.equal(head.processSnapshots().length, 1);
  }
  // max_depth 1: the root's child may not start a grandchild.
  const middle = deploy(parentProgram({ name: 'test.middle', children: [childSpec('g', done)] }), undefined, 'children-depth-middle');
  const deep = setup({ deploymentResolver: new MapDeploymentResolver([done, middle]), treeLimits: TreeLimits.of({ maxDepth: 1 }) });
  const waiting = { boundary: 'terminal_result', condition: ChildWaitCondition.all() } as const;
  const top = await deep.engine.start(deploy(parentProgram({ children: [childSpec('m', middle)], wait: waiting })), Payload.encode({}));
  await top.await();
  await top.join();
  const middleResult = await deep.engine.process(childOf(top.id, 0))?.await();
  assert.equal(reportOf(middleResult?.output).started[0]?.failure?.code, 'engine.child.tree_limit');
  // max_active_children: the second of two live children is refused, the first runs.
  const context = setup({ deploymentResolver: resolver, treeLimits: TreeLimits.of({ maxActiveChildren: 1 }) });
  const parent = deploy(parentProgram({ children: [childSpec('a', done), childSpec('b', gate)] }));
  const root = await context.engine.start(parent, Payload.encode({}));
  const report = reportOf((await root.await()).output);
  await root.join();
  // The first child may already have finished when the second starts; either way no limit is broken.
  assert.ok(report.started[1]?.process_id !== undefined || report.started[1]?.failure?.code === 'engine.child.tree_limit');
  const context2 = setup({ deploymentResolver: resolver, treeLimits: TreeLimits.of({ maxActiveChildren: 1 }) });
  const both = deploy(parentProgram({ children: [childSpec('a', gate), childSpec('b', gate)] }));
  const root2 = await context2.engine.start(both, Payload.encode({}));
  const report2 = reportOf((await root2.await()).output);
  await root2.join();
  assert.ok(report2.started[0]?.process_id !== undefined);
  assert.equal(report2.started[1]?.failure?.code, 'engine.child.tree_limit');
});

test('a Host cancellation of the root cancels a three-level subtree (parent_cancellation below the root)', async () => {
  const middle = deploy(parentProgram({ name: 'test.middle', children: [childSpec('g', gate)], wait: { boundary: 'subtree_drained', condition: ChildWaitCondition.all() } }), undefined, 'children-cascade-middle');
  const context = setup({ deploymentResolver: new MapDeploymentResolver([gate, middle]) });
  const parent = deploy(parentProgram({ children: [childSpec('m', middle)], wait: { boundary: 'subtree_drained', condition: ChildWaitCondition.all() } }));
  const root = await context.engine.start(parent, Payload.encode({}));
  const middleId = childOf(root.id, 0);
  const grandchild = childOf(middleId, 0);
  await committedStatus(context.recorder, grandchild, 'waiting');
  await committedStatus(context.recorder, middleId, 'waiting');
  await root.requestCancellation('stop the tree');
  const result = await root.await();
  await root.join();
  assert.equal(result.termination.cause, 'host_cancellation');
  for (const id of [middleId, grandchild]) {
    const child = await context.engine.process(id)?.await();
    assert.equal(child?.status, 'canceled');
    assert.equal(child?.termination.cause, 'parent_cancellation');
  }
  const head = await context.engine.captureTree(root.id);
  assert.ok(head.processSnapshots().every((process) => process.isTerminal));
});

test('signal_child admits into the child and settles the parent in one boundary; cancel_child records parent cancellation', async () => {
  const context = setup({ deploymentResolver: resolver });
  const signalChild = (ids: readonly ProcessId[]) => [
    Effect.signalChild(ids[0] as ProcessId, SignalRequest.create({ id: 'note-1', payload: Payload.encode({ hello: 1 }) })),
    Effect.signalChild(ids[0] as ProcessId, SignalRequest.create({ id: 'note-1', payload: Payload.encode({ hello: 1 }) })),
    Effect.signalChild(ProcessId.newRoot(), SignalRequest.create({ id: 'note-2', payload: Payload.encode({}) })),
    Effect.cancelChild(ids[1] as ProcessId, 'enough'),
  ];
  const parent = deploy(parentProgram({ children: [childSpec('a', gate), childSpec('b', gate)], wait: { boundary: 'terminal_result', condition: ChildWaitCondition.any() }, control: signalChild }));
  const root = await context.engine.start(parent, Payload.encode({}));
  const [first, second] = [childOf(root.id, 0), childOf(root.id, 1)];
  await committedStatus(context.recorder, first, 'waiting');
  await committedStatus(context.recorder, second, 'waiting');
  // The `any` wait is answered by `second`; `first` keeps waiting and receives the signals.
  await answer(context.engine, root.id, second, 'b-done');
  const result = await root.await();
  assert.equal(result.status, 'completed');
  const controls = reportOf(result.output).controls ?? [];
  assert.deepEqual(controls.map((control) => control.failure?.code), [undefined, undefined, 'engine.child.control.not_owned', undefined]);
  // The admission and the parent's receipt are in one settled boundary.
  const boundary = context.committer.acknowledged.find((record) => record.kind === 'settled' && record.snapshot.process(first)?.mailbox.receipts().some((receipt) => receipt.id.toString() === 'note-1'));
  assert.ok(boundary !== undefined);
  const effect = boundary.snapshot.root.prepared?.effects().find((entry) => entry.id.toString() === boundary.effectId);
  assert.equal(effect?.phase, 'settled');
  const receipts = (await context.engine.captureTree(root.id)).process(first)?.mailbox.receipts().filter((receipt) => receipt.id.toString() === 'note-1');
  assert.equal(receipts?.length, 1, 'a duplicate in one batch is one admission');
  // cancel_child of a finished child is a success without change; the parent's completion then
  // cancels the still-waiting first child (parent_cancellation).
  const firstResult = await context.engine.process(first)?.await();
  assert.equal(firstResult?.termination.cause, 'parent_cancellation');
  await root.join();
});

test('capture and restore of a tree with children mid-flight: children restore from their bindings and the tree completes', async () => {
  const first = setup();
  // Static bindings: no resolver is needed, now or on restore.
  const parent = deploy(parentProgram({ children: [childSpec('a', gate), childSpec('b', gate)], wait: { boundary: 'subtree_drained', condition: ChildWaitCondition.all() }, childDeployments: () => [gate] }));
  const root = await first.engine.start(parent, Payload.encode({}));
  const ids = [childOf(root.id, 0), childOf(root.id, 1)];
  for (const id of ids) await committedStatus(first.recorder, id, 'waiting');
  await answer(first.engine, root.id, ids[0] as ProcessId, 'a-done');
  const head = TreeSnapshot.parse((await first.engine.captureTree(root.id)).json());
  assert.equal(head.processSnapshots().length, 3);

  const second = setup({ committer: new RecordingCommitter(first.committer.store) });
  const restored = await second.engine.restoreTree(parent, head);
  assert.equal(second.engine.inspectTree(restored.id).processes.length, 3);
  assert.equal((await second.engine.process(ids[0] as ProcessId)?.await())?.status, 'completed');
  await answer(second.engine, restored.id, ids[1] as ProcessId, 'b-done');
  const result = await restored.await();
  await restored.join();
  assert.equal(result.status, 'completed');
  assert.deepEqual(reportOf(result.output).answer?.outcomes.map((outcome) => outcome.result.termination.status), ['completed', 'completed']);
});

for (const when of ['before', 'after'] as const) {
  test(`a writer crash ${when} the child_start commit lands: restore publishes the child exactly once and the tree completes`, async () => {
    const first = setup();
    const parent = deploy(parentProgram({ children: [childSpec('a', done), childSpec('b', done)], wait: { boundary: 'subtree_drained', condition: ChildWaitCondition.all() }, childDeployments: () => [done] }));
    let broken = false;
    first.committer.intercept = (record) => {
      if (broken || record.kind !== 'child_start') return undefined;
      broken = true;
      return { fail: { when, error: new Error('the store went away') } };
    };
    const root = await first.engine.start(parent, Payload.encode({}));
    await assert.rejects(root.await(), (error: unknown) => error instanceof Error && error.name === 'RuntimeError');
    const stored = await first.committer.store.loadTree(root.id);
    assert.ok(stored !== undefined);
    const [a, b] = [childOf(root.id, 0), childOf(root.id, 1)];
    // A lost acknowledgment still landed; a refused commit published nothing.
    assert.equal(stored.process(a) !== undefined, when === 'after');

    const second = setup({ committer: new RecordingCommitter(first.committer.store) });
    const restored = await second.engine.restoreTree(parent, stored);
    const result = await restored.await();
    await restored.join();
    assert.equal(result.status, 'completed');
    const head = await second.engine.captureTree(restored.id);
    // Every commit the store applied, in order: the first writer's acknowledged ones, the one whose
    // acknowledgment was lost (it landed), then the second writer's (its activation first).
    const lost = when === 'after' ? first.committer.attempts.filter((record) => record.kind === 'child_start').slice(0, 1) : [];
    const applied = [...first.committer.acknowledged, ...lost, ...second.committer.acknowledged];
    for (const id of [a, b]) {
      assert.equal(head.process(id)?.status, 'completed');
      // Publication never repeats (admission may): the child appears in exactly one applied commit
      // after a head without it, and that commit is a child_start checkpoint.
      const publications = applied.filter((record, index) => record.snapshot.process(id) !== undefined && applied[index - 1]?.snapshot.process(id) === undefined);
      assert.deepEqual(publications.map((record) => record.kind), ['child_start']);
      const terminal = applied.filter((record, index) => record.snapshot.process(id)?.isTerminal === true && applied[index - 1]?.snapshot.process(id)?.isTerminal !== true);
      assert.equal(terminal.length, 1, 'one terminal checkpoint per child');
    }
    const starts = second.recorder.events().filter((event) => event.name === 'agent.process.started').map((event) => event.processId.toString());
    assert.equal(new Set(starts).size, starts.length, 'no child is announced twice after the restore');
  });
}

test("a parent's end reaches its live children after a crash: the restored tree cascades from the head", async () => {
  // The parent starts a gate child and completes at once; the child's cancellation would commit next.
  const parent = deploy(parentProgram({ name: 'test.cascade.parent', children: [childSpec('g', gate)] }), undefined, 'children-durable-cascade');
  const first = setup({ deploymentResolver: resolver });
  first.committer.intercept = (record) =>
    record.snapshot.root.isTerminal && record.snapshot.processSnapshots().some((process) => !process.processId.equals(record.snapshot.rootId) && process.isTerminal)
      ? { fail: { when: 'before', error: new Error('the writer died before the cascade committed') } }
      : undefined;
  const root = await first.engine.start(parent, Payload.encode({}));
  assert.equal((await root.await()).status, 'completed');
  const child = childOf(root.id, 0);
  await first.committer.arrival((record) => record.snapshot.process(child)?.isTerminal === true);
  const head = (await first.committer.loadTree(root.id))!;
  assert.equal(head.root.isTerminal, true);
  assert.equal(head.process(child)?.isTerminal, false, 'the crash left the child live under a finished parent');
  assert.equal(isParkedTree(head), false, 'a live child of a finished parent is work: a takeover must not leave it');

  const second = setup({ committer: new RecordingCommitter(first.committer.store), deploymentResolver: resolver });
  const restored = await second.engine.restoreTree(parent, head);
  await restored.join();
  const ended = (await second.committer.loadTree(root.id))!.process(child);
  assert.equal(ended?.isTerminal, true);
  assert.equal(ended?.termination?.cause, 'parent_cancellation');
  await second.engine.close();
});

test("a child's join waits for its own subtree only: it returns while a sibling's dispatch still runs, and the parent's join waits for both", { timeout: 30_000 }, async () => {
  const release = deferred<void>();
  const dispatching = deferred<void>();
  const held: Dispatcher = {
    async dispatch(request) {
      dispatching.resolve();
      await release.promise;
      return Settlement.of('succeeded', request.effect.payload);
    },
    replayPolicy: () => 'never',
  };
  const slow = deploy(dispatchProgram({ name: 'test.child.slow' }), held, 'children-slow');
  const { engine } = setup({ deploymentResolver: new MapDeploymentResolver([done, slow]) });
  const parent = deploy(parentProgram({ children: [childSpec('a', done), childSpec('b', slow)], wait: { boundary: 'terminal_result', condition: ChildWaitCondition.all() } }));
  const root = await engine.start(parent, Payload.encode({}));
  await dispatching.promise;
  const first = engine.process(childOf(root.id, 0));
  assert.ok(first !== undefined);
  assert.equal((await first.await()).status, 'completed');
  // Before, join waited for the whole tree to go idle, so this hung until the sibling's dispatch ended.
  await first.join();
  const rootJoined = root.join();
  assert.equal(await isSettled(rootJoined), false, "the root's join waits for its running descendant");
  release.resolve();
  await rootJoined;
  assert.equal((await root.await()).status, 'completed');
  assert.equal((await engine.process(childOf(root.id, 1))?.await())?.status, 'completed');
});

test('a parent paused while it waits on its children: their answer is recorded, the pause still holds it, and resume continues it', async () => {
  const { engine, recorder } = setup({ deploymentResolver: resolver });
  const parent = deploy(parentProgram({ children: [childSpec('a', gate)], wait: { boundary: 'terminal_result', condition: ChildWaitCondition.all() } }));
  const root = await engine.start(parent, Payload.encode({}));
  const child = childOf(root.id, 0);
  await committedStatus(recorder, child, 'waiting');
  await committedStatus(recorder, root.id, 'waiting');
  await root.pause('held by an operator');
  const rootSnapshot = () => engine.inspectTree(root.id).processes.find((entry) => entry.snapshot.processId.equals(root.id))?.snapshot;
  assert.equal(rootSnapshot()?.status, 'paused');
  assert.ok(rootSnapshot()?.waitId !== undefined, 'paused, it keeps the wait it was waiting on');

  // The child finishes: its terminal boundary answers the parent's wait in the same commit.
  await answer(engine, root.id, child, { child: 0 });
  const paused = rootSnapshot();
  assert.equal(paused?.status, 'paused', 'the pause still holds the parent');
  assert.equal(paused?.waitId, undefined, 'the answered wait no longer does');
  assert.equal(paused?.mailbox.waits().find((wait) => wait.kind === 'children')?.answered, true);
  const head = await engine.captureTree(root.id);
  assert.ok(TreeSnapshot.parse(head.json()).digest.equals(head.digest), 'the committed head is valid and parses');

  await root.resume();
  const result = await root.await();
  assert.equal(result.status, 'completed');
  assert.deepEqual(reportOf(result.output).answer?.outcomes.map((outcome) => outcome.result.termination.status), ['completed']);
});
