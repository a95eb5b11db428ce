// Over 300 lines: the child cases of one exported conformance suite share their trees and checks.
import { Budget } from '../kernel/budget.js';
import { EffectBoundary } from '../kernel/commit.js';
import type { Deployment } from '../kernel/deployment.js';
import { KernelError } from '../kernel/errors.js';
import { EffectId, ProcessId, SignalId } from '../kernel/identity.js';
import { Payload } from '../kernel/payload.js';
import type { Process } from '../kernel/process.js';
import type { ProcessSnapshot } from '../kernel/process-snapshot.js';
import { Quota } from '../kernel/quota.js';
import { SignalRequest } from '../kernel/signal.js';
import type { TreeStore } from '../kernel/tree-committer.js';
import { TreeLimits } from '../kernel/tree-limits.js';
import { TreeSnapshot } from '../kernel/tree-snapshot.js';
import type { Usage } from '../kernel/usage.js';
import {
  childControls,
  controlCancelReason,
  controlChildDefinition,
  controlEffects,
  controlParentDefinition,
  crashTreeRootDefinition,
  crashWorkerBudget,
  frameworkControlSignal,
  type ChildControlName,
} from './child-definitions.js';
import { AcknowledgmentProbe, CommitGate, type CutPosition } from './commit-gate.js';
import { ConformanceFailure, type CommitterConformanceCase } from './conformance-failure.js';
import {
  deploymentOf,
  engineOver,
  expect,
  expectHeadDigest,
  expectRuntimeError,
  restoreFromStore,
  startGated,
  type Harness,
  type HarnessConfig,
} from './conformance-harness.js';
import { waitDefinition } from './example-definitions.js';

/**
 * The committer conformance cases that need child Processes (kernel-contract §5.3): the child cuts
 * of the crash matrix, the framework child controls, and those controls cut by a crash. Each runs
 * real Engines over the store under test and restores from whatever the store holds.
 */

// ---------------------------------------------------------------------------------------------
// Trees and Engines

/** The Engine of the crash cases (§5.2): finite root budgets, so a child grant is debited. */
const crashConfig: HarnessConfig = {
  budget: Budget.of({ steps: Quota.of(10_000), effects: Quota.of(10_000), signals: Quota.of(100_000) }),
};
/** The control cases' Engine: two pending signals per mailbox, so two occupy a child's. */
const controlConfig: HarnessConfig = { ...crashConfig, treeLimits: TreeLimits.of({ maxPendingSignals: 2n }) };

/** Fresh Deployments of the crash tree (the same refs on every call, so a restore binds them). */
function crashTree(): { root: Deployment } {
  const worker = deploymentOf('crash-tree-worker', waitDefinition);
  return { root: deploymentOf('crash-tree-root', crashTreeRootDefinition(worker)) };
}

function controlTree(): { parent: Deployment } {
  const child = deploymentOf('control-tree-child', controlChildDefinition);
  return { parent: deploymentOf('control-tree-parent', controlParentDefinition(child)) };
}

/** The child a root's first Step starts (batch entry 0). */
function firstChildOf(rootId: ProcessId): ProcessId {
  return ProcessId.child(EffectId.derive(rootId, 1n, 0));
}

function member(tree: TreeSnapshot | undefined, id: ProcessId, what: string): ProcessSnapshot {
  const snapshot = tree?.process(id);
  if (snapshot === undefined) throw new ConformanceFailure(`${what}: the tree holds no process ${id.toString()}`);
  return snapshot;
}

async function stored(store: TreeStore, rootId: ProcessId): Promise<TreeSnapshot> {
  const tree = await store.loadTree(rootId);
  if (tree === undefined) throw new ConformanceFailure('the store has no head for the tree');
  return tree;
}

function handle(harness: Harness, id: ProcessId): Process {
  const process = harness.engine.process(id);
  if (process === undefined) throw new ConformanceFailure(`process ${id.toString()} is not published`);
  return process;
}

function usageOf(usage: Usage): string {
  return [usage.committedSteps, usage.preparedEffects, usage.acceptedSignals, usage.droppedDeltas].join(',');
}

function mentions(harness: Harness, id: ProcessId): boolean {
  return harness.recorder.events().some((event) => event.processId.equals(id));
}

// ---------------------------------------------------------------------------------------------
// The crash matrix's child cuts

function childStartCut(position: CutPosition): CommitterConformanceCase {
  return {
    name: `crash boundaries/child ${position === 'before' ? 'before commit' : 'after commit before publication'}`,
    async run(store) {
      const { root: deployment } = crashTree();
      const original = await startGated(store, deployment, 'child_start', position, { config: crashConfig, input: Payload.emptyObject });
      const root = await original.started;
      const childId = firstChildOf(root.id);
      expect(original.engine.process(childId) === undefined, 'the child is findable before its child_start commit was acknowledged');
      expect(!mentions(original, childId), 'an event mentions the child before its child_start commit was acknowledged');
      await expectHeadDigest(store, root.id, original.gate.durableDigest(), 'at the cut');
      const cut = await stored(store, root.id);
      const processes = position === 'before' ? 1 : 2;
      expect(cut.processSnapshots().length === processes, `the head holds ${cut.processSnapshots().length} processes, want ${processes}`);
      original.gate.abort();
      await expectRuntimeError(root.await(), 'the original root');
      expect(original.engine.process(childId) === undefined && !mentions(original, childId), 'the original engine published the child after the crash');

      const restored = await restoreFromStore(store, root.id, deployment, crashConfig);
      const waiting = await restored.watcher.awaitTree(root.id, (tree) => tree.root.status === 'waiting' && tree.process(childId)?.status === 'waiting');
      expect(waiting.processSnapshots().length === 2, `the restored tree holds ${waiting.processSnapshots().length} processes, want the root and one child`);
      const child = member(waiting, childId, 'the restored tree');
      expect(child.budget.equals(crashWorkerBudget), `the child budget is ${child.budget.json()}`);
      expect(waiting.root.budget.equals(crashConfig.budget as Budget), `the root budget is ${waiting.root.budget.json()}`);
      const allocated = waiting.root.allocatedResources;
      expect(allocated.steps === 3n && allocated.effects === 1n && allocated.signals === 2n, 'the root does not hold the child grant as allocated resources');

      const answer = SignalRequest.create({ id: 'signal:child-publication-answer', waitId: child.waitId, payload: Payload.encode({ answer: 'published once' }) });
      expect(await handle(restored, childId).deliverSignals(answer), 'the answer was not accepted');
      const [rootResult, childResult] = await Promise.all([restored.process.await(), handle(restored, childId).await()]);
      expect(rootResult.status === 'completed' && childResult.status === 'completed', `root ${rootResult.status}, child ${childResult.status}`);
      expect(usageOf(rootResult.usage) === '4,2,3,0', `root usage ${usageOf(rootResult.usage)}, want 4,2,3,0`);
      expect(usageOf(childResult.usage) === '3,1,2,0', `child usage ${usageOf(childResult.usage)}, want 3,1,2,0`);
    },
  };
}

const subtreeCancellation: CommitterConformanceCase = {
  name: 'crash boundaries/subtree cancellation after commit before publication',
  async run(store) {
    const { root: deployment } = crashTree();
    const canceledChild = (commit: { snapshot: TreeSnapshot }) => commit.snapshot.processSnapshots().some((process) => process.status === 'canceled');
    const gate = new CommitGate(store, 'progress', 'after', canceledChild);
    const original = engineOver(gate, crashConfig);
    const root = await original.engine.start(deployment, Payload.emptyObject);
    const childId = firstChildOf(root.id);
    await original.watcher.awaitTree(root.id, (tree) => tree.root.status === 'waiting' && tree.process(childId)?.status === 'waiting');
    const child = handle(original, childId);
    // The request may wait for the commit the gate holds; only that commit matters here.
    child.requestCancellation('conformance subtree cancellation').catch(() => undefined);
    await gate.reached;
    const memory = original.engine.inspectTree(root.id).processes.map((entry) => entry.snapshot.status);
    expect(memory.length === 2 && memory.every((status) => status === 'waiting'), `in memory the tree is ${memory.join(', ')}, want both waiting`);

    const restored = await restoreFromStore(store, root.id, deployment, crashConfig);
    const [rootResult, childResult] = await Promise.all([restored.process.await(), handle(restored, childId).await()]);
    expect(rootResult.status === 'completed', `the restored root is ${rootResult.status}`);
    expect(childResult.status === 'canceled' && childResult.termination.cause === 'host_cancellation', `the restored child is ${childResult.status} (${childResult.termination.cause})`);
    gate.abort();
    await expectRuntimeError(root.await(), 'the original root');
    await expectRuntimeError(child.await(), 'the original child');
  },
};

// ---------------------------------------------------------------------------------------------
// Framework child controls

/** The failure code a control's receipt carries, or undefined for a successful admission. */
function expectedFailure(control: ChildControlName): string | undefined {
  if (control === 'full mailbox') return 'engine.child.signal.rejected';
  if (control === 'unowned signal' || control === 'unowned cancel') return 'engine.child.control.not_owned';
  return undefined;
}

interface ControlledTree {
  readonly harness: Harness;
  readonly root: Process;
  readonly childId: ProcessId;
  /** The head the harness captured before cueing the control. */
  readonly captured: TreeSnapshot;
}

/** Starts the control tree over `store`, waits until parent and child are paused, prepares `control`'s precondition and captures the head. */
async function parkControlTree(store: TreeStore, committer: TreeStore, control: ChildControlName): Promise<ControlledTree> {
  const { parent } = controlTree();
  const harness = engineOver(committer, controlConfig);
  const root = await harness.engine.start(parent, Payload.encode({ control }));
  const childId = firstChildOf(root.id);
  await harness.watcher.awaitTree(root.id, (tree) => tree.root.status === 'paused' && tree.process(childId)?.status === 'paused');
  if (control === 'full mailbox') {
    const occupied = [0, 1].map((index) => SignalRequest.create({ id: `signal:occupied:${index}`, payload: Payload.encode({ occupied: index }) }));
    await handle(harness, childId).deliverSignals(...occupied);
  }
  return { harness, root, childId, captured: await stored(store, root.id) };
}

/**
 * Resolves with the head once the parent adopted its control receipts and paused again (Step 4);
 * fails at once when the parent's writer stops first (a store that refused a control boundary).
 */
function controlsAdopted(harness: Harness, root: Process): Promise<TreeSnapshot> {
  const stopped = root.await().then(
    (result) => {
      throw new ConformanceFailure(`the parent ended ${result.status} before adopting its controls`);
    },
    (error: unknown) => {
      const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
      throw new ConformanceFailure(`the writer stopped before the parent adopted its controls (${String(error)}${cause})`);
    },
  );
  const adopted = harness.watcher.awaitTree(root.id, (tree) => tree.root.status === 'paused' && tree.root.committedSteps === 4n);
  return Promise.race([adopted, stopped]);
}

/** §5.3 scenario 8's checks of each control boundary, against the head captured before the control. */
function expectControlBoundaries(acknowledged: AcknowledgmentProbe['acknowledged'], tree: ControlledTree, control: ChildControlName, complete: boolean): void {
  const { captured, childId } = tree;
  const effects = controlEffects(control, childId);
  const boundaries = acknowledged.filter((entry) => entry.commit instanceof EffectBoundary);
  // An incomplete run (the writer stopped) is checked for what it acknowledged.
  const count = boundaries.length;
  expect(complete ? count === effects.length : count <= effects.length, `${count} effect boundaries, want ${effects.length}`);
  const settled: EffectId[] = [];
  for (const [index, { commit, headDigest }] of boundaries.entries()) {
    const boundary = commit as EffectBoundary;
    expect(boundary.kind === 'settled', `control ${index} committed a ${boundary.kind} boundary, want settled without pending`);
    expect(!settled.some((id) => id.equals(boundary.effectId)), 'two control boundaries share an effect id');
    expect(headDigest?.equals(boundary.snapshot.digest) === true, 'acknowledged head digest mismatch: the head read inside the acknowledgment is not the boundary');
    const parent = boundary.snapshot.root;
    const prepared = parent.prepared?.effect(boundary.effectId);
    expect(prepared?.phase === 'settled', `control ${index} is not settled in the parent`);
    const receipt = prepared?.settlement?.payload.decode<{ operation?: string; failure?: { code?: string } }>();
    const operation = effects[index]?.frameworkOperation().operation;
    expect(receipt?.operation === operation, `the receipt of control ${index} names ${receipt?.operation}, want ${operation}`);
    const failure = expectedFailure(control);
    expect(receipt?.failure?.code === failure, `the receipt of control ${index} failed with ${receipt?.failure?.code ?? 'nothing'}, want ${failure ?? 'success'}`);
    settled.push(boundary.effectId);
    expect(settled.every((id) => parent.prepared?.effect(id)?.phase === 'settled'), 'the parent lost an earlier control settlement');
    expect(parent.allocatedResources.steps === captured.root.allocatedResources.steps && parent.allocatedResources.effects === captured.root.allocatedResources.effects && parent.allocatedResources.signals === captured.root.allocatedResources.signals, 'the parent allocated resources changed');
    expect(parent.budget.equals(captured.root.budget), 'the parent budget changed');
    const before = member(captured, childId, 'the captured head');
    const recipient = member(boundary.snapshot, childId, `control ${index}`);
    if (failure !== undefined) {
      expect(recipient.json() === before.json(), 'a rejected control changed the recipient');
    } else if (control === 'cancel') {
      expect(!recipient.isTerminal, 'cancel_child terminated the child in its own boundary');
      const cancellation = recipient.pendingControl.cancellation;
      expect(cancellation?.owner === 'parent' && cancellation.reason === controlCancelReason, 'the child does not record the parent cancellation as pending control');
      expect(usageOf(recipient.usage()) === usageOf(before.usage()), 'cancel_child changed the child usage');
    } else {
      const receipts = recipient.signalReceipts().filter((candidate) => candidate.matches(frameworkControlSignal));
      expect(receipts.length === 1 && !receipts[0]?.consumed, `the child holds ${receipts.length} receipts of the control signal, want one pending`);
      expect(recipient.usage().acceptedSignals === before.usage().acceptedSignals + 1n, 'the control signal was not charged exactly once');
      expect(recipient.status === 'paused', `the signaled child is ${recipient.status}, want paused`);
    }
  }
}

/** §5.3 scenario 8's continuation, from a tree whose parent adopted its receipts (`adopted`). */
async function expectControlContinuation(harness: Harness, adopted: TreeSnapshot, childId: ProcessId, control: ChildControlName): Promise<void> {
  const parent = adopted.root;
  const ids = controlEffects(control, childId).map((_, index) => EffectId.derive(parent.processId, 3n, index));
  expect(ids.every((id) => parent.mailbox.receipt(SignalId.settlement(id))?.consumed === true), 'the parent did not adopt and consume every control receipt');
  if (control === 'cancel') {
    const result = await handle(harness, childId).await();
    expect(result.status === 'canceled' && result.termination.cause === 'parent_cancellation', `the canceled child ended ${result.status} (${result.termination.cause})`);
  } else if (control === 'signal' || control === 'duplicate signal') {
    const before = member(adopted, childId, 'the adopted head');
    const child = handle(harness, childId);
    await child.resume();
    const result = await child.await();
    expect(result.status === 'completed', `the signaled child ended ${result.status}`);
    const after = member(await harness.watcher.awaitTree(parent.processId, (tree) => tree.process(childId)?.isTerminal === true), childId, 'the final head');
    const receipts = after.signalReceipts().filter((receipt) => receipt.matches(frameworkControlSignal));
    expect(receipts.length === 1 && receipts[0]?.consumed === true, 'the child does not show exactly one consumed receipt of the control signal');
    expect(after.mailbox.pendingCount === 0, 'the child retains a pending payload');
    expect(after.committedSteps === before.committedSteps + 1n, `the child committed ${after.committedSteps - before.committedSteps} Steps after the resume, want 1`);
    expect(after.usage().acceptedSignals === before.usage().acceptedSignals, 'consuming the control signal charged another signal');
  } else {
    expect(member(adopted, childId, 'the adopted head').status === 'paused', 'a rejected control moved the child');
  }
}

async function cleanUp(root: Process): Promise<void> {
  await root.kill('conformance cleanup');
  await root.await();
}

function frameworkControl(control: ChildControlName): CommitterConformanceCase {
  return {
    name: `framework child controls/${control}`,
    async run(store) {
      const probe = new AcknowledgmentProbe(store);
      const tree = await parkControlTree(store, probe, control);
      const mark = probe.acknowledged.length;
      await tree.root.resume();
      const adopted = await controlsAdopted(tree.harness, tree.root).catch((error: unknown) => error as ConformanceFailure);
      // Whatever the store acknowledged is checked first: its diagnostic names the broken rule.
      expectControlBoundaries(probe.acknowledged.slice(mark), tree, control, adopted instanceof TreeSnapshot);
      if (!(adopted instanceof TreeSnapshot)) throw adopted;
      await expectControlContinuation(tree.harness, adopted, tree.childId, control);
      await cleanUp(tree.root);
    },
  };
}

function frameworkControlCrash(control: 'signal' | 'cancel', position: CutPosition): CommitterConformanceCase {
  return {
    name: `framework child control crashes/${control} ${position === 'before' ? 'before store' : 'stored before acknowledgment'}`,
    async run(store) {
      const gate = new CommitGate(store, 'settled', position);
      const tree = await parkControlTree(store, gate, control);
      await tree.root.resume();
      const held = (await gate.reached) as EffectBoundary;
      const inspection = tree.harness.engine.inspectTree(tree.root.id);
      expect(inspection.headDigest.equals(held.previous), 'the engine published the control boundary before its acknowledgment');
      const memoryParent = inspection.processes.find((entry) => entry.snapshot.processId.equals(tree.root.id))?.snapshot;
      const memoryChild = inspection.processes.find((entry) => entry.snapshot.processId.equals(tree.childId))?.snapshot;
      expect(memoryChild?.json() === member(tree.captured, tree.childId, 'the captured head').json(), 'the recipient changed before the control was acknowledged');
      expect(memoryParent?.prepared?.effect(held.effectId)?.phase !== 'settled', 'the parent shows the settlement before its acknowledgment');
      expect(memoryParent?.mailbox.receipt(SignalId.settlement(held.effectId)) === undefined, 'the parent holds a receipt before its acknowledgment');
      await expectHeadDigest(store, tree.root.id, gate.durableDigest(), 'at the cut');
      gate.abort();
      await expectRuntimeError(tree.root.await(), 'the original parent');

      const reparsed = TreeSnapshot.parse((await stored(store, tree.root.id)).json());
      const harness = engineOver(store, controlConfig);
      const restored = await harness.engine.restoreTree(controlTree().parent, reparsed);
      const adopted = await controlsAdopted(harness, restored);
      await expectControlContinuation(harness, adopted, tree.childId, control);
      try {
        await store.commitEffect(held);
        throw new ConformanceFailure('re-committing the cut boundary returned nil');
      } catch (error) {
        if (error instanceof ConformanceFailure) throw error;
        const code = error instanceof KernelError ? error.code : String(error);
        expect(code === 'commit_conflict' || code === 'tree_incarnation_conflict', `re-committing the cut boundary failed with ${code}`);
      }
      await cleanUp(restored);
    },
  };
}

/** Every child case, in suite order. */
export const childConformanceCases: readonly CommitterConformanceCase[] = [
  childStartCut('before'),
  childStartCut('after'),
  subtreeCancellation,
  ...childControls.map(frameworkControl),
  ...(['signal', 'cancel'] as const).flatMap((control) => (['before', 'after'] as const).map((position) => frameworkControlCrash(control, position))),
];

