import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Engine, Event, hasCode, Payload, type ProcessId, TreeIncarnationId, TreeSnapshot } from '../../src/kernel/index.js';
import { PendingControl } from '../../src/kernel/process-snapshot.js';
import { cancelStoredTree } from '../../src/kernel/stored-cancellation.js';
import { DeploymentCatalog } from '../../src/server/catalog.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { nestV1 } from '../fixtures/nested-versions-deployments.js';

/**
 * Cancelling a stored tree without its Definition (kernel-contract §4.11): the tree runtime's own
 * termination rules applied to a head no node can run.
 */

/** A stored two-level nest (root waiting on its child, the child on its first round) and its store. */
async function storedNest(): Promise<{ store: MemoryTreeCommitter; head: TreeSnapshot; root: ProcessId }> {
  const store = new MemoryTreeCommitter();
  const waiting = new Set<string>();
  let parked!: () => void;
  const bothWaiting = new Promise<void>((resolve) => (parked = resolve));
  const engine = new Engine({
    committer: store,
    deploymentResolver: new DeploymentCatalog([nestV1]),
    eventListeners: [
      (event: Event) => {
        if (event.name === 'agent.step.committed' && event.stepCommitted()?.status === 'waiting') waiting.add(event.processId.toString());
        if (waiting.size === 2) parked();
      },
    ],
  });
  const root = (await engine.start(nestV1, Payload.encode({ target: 2 }))).id;
  await bothWaiting;
  assert.equal(await engine.hibernateTree(root), true);
  return { store, head: (await store.loadTree(root)) as TreeSnapshot, root };
}

const now = new Date(Date.UTC(2031, 0, 2, 3, 4, 5));

test('stored cancellation: root host_cancellation, child parent_cancellation, waits closed, one finished event each, a valid tree', async () => {
  const { store, head, root } = await storedNest();
  const incarnationId = TreeIncarnationId.random();
  const { activation, events } = cancelStoredTree(head, { reason: 'superseded by v2', incarnationId, now });
  const tree = activation.snapshot;
  assert.deepEqual(
    tree.processSnapshots().map((process) => [process.status, process.termination?.cause, process.termination?.reason, process.waitId, process.finishedAt, process.pendingControl.equals(PendingControl.empty())]),
    [
      ['canceled', 'host_cancellation', 'superseded by v2', undefined, '2031-01-02T03:04:05Z', true],
      ['canceled', 'parent_cancellation', 'the parent finished (host_cancellation)', undefined, '2031-01-02T03:04:05Z', true],
    ],
  );
  assert.ok(tree.incarnationId.equals(incarnationId));
  assert.ok(activation.previousIncarnationId.equals(head.incarnationId) && activation.previousDigest.equals(head.digest), 'it installs over exactly the stored head');
  assert.deepEqual(
    events.map((event) => [event.name, event.processId.toString(), event.processSequence, event.treeIncarnationId?.toString(), event.processFinished()?.cause]),
    tree.processSnapshots().map((process) => ['agent.process.finished', process.processId.toString(), 1n, incarnationId.toString(), process.termination?.cause]),
  );
  // The cancelled tree is a valid stored tree: it round-trips and commits, fencing the earlier writer.
  assert.equal(TreeSnapshot.parse(tree.json()).digest.toString(), tree.digest.toString());
  await store.activateTree(activation);
  assert.equal((await store.loadTree(root))?.digest.toString(), tree.digest.toString());
  const stale = cancelStoredTree(head, { reason: 'a second try', incarnationId: TreeIncarnationId.random(), now });
  await assert.rejects(store.activateTree(stale.activation), (error: unknown) => hasCode(error, 'tree_incarnation_conflict'));
  // Nothing is live any more: there is nothing to cancel.
  assert.throws(() => cancelStoredTree(tree, { reason: 'again', incarnationId: TreeIncarnationId.random(), now }), (error: unknown) => hasCode(error, 'process_finished'));
});

test('stored cancellation follows the priority matrix: a recorded kill outranks it and cascades as a kill; a recorded cancellation keeps its reason', async () => {
  const { head } = await storedNest();
  const [rootSnapshot, childSnapshot] = head.processSnapshots();
  const killed = head.withProcesses([rootSnapshot!.with({ pendingControl: PendingControl.create({ killReason: 'killed before the move-on' }) })]);
  const kill = cancelStoredTree(killed, { reason: 'superseded', incarnationId: TreeIncarnationId.random(), now }).activation.snapshot;
  assert.deepEqual(
    kill.processSnapshots().map((process) => [process.status, process.termination?.cause, process.termination?.reason]),
    [
      ['killed', 'engine_kill', 'killed before the move-on'],
      ['killed', 'engine_kill', 'the parent finished (engine_kill)'],
    ],
  );
  const canceled = head.withProcesses([childSnapshot!.with({ pendingControl: PendingControl.create({ cancellation: { owner: 'host', reason: 'an operator canceled the child' } }) })]);
  const cancel = cancelStoredTree(canceled, { reason: 'superseded', incarnationId: TreeIncarnationId.random(), now }).activation.snapshot;
  assert.deepEqual(
    cancel.processSnapshots().map((process) => [process.termination?.cause, process.termination?.reason]),
    [
      ['host_cancellation', 'superseded'],
      ['host_cancellation', 'an operator canceled the child'],
    ],
  );
  assert.throws(() => cancelStoredTree(head, { reason: ' padded ', incarnationId: TreeIncarnationId.random(), now }), (error: unknown) => hasCode(error, 'invalid_termination'));
});
