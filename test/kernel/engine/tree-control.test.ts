import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChildWaitCondition, Effect } from '../../../src/kernel/effect.js';
import { Payload } from '../../../src/kernel/payload.js';
import type { Process } from '../../../src/kernel/process.js';
import type { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import { Transition } from '../../../src/kernel/transition.js';
import { childSpec, gateChildProgram, parentProgram } from './child-programs.js';
import { deploy, ProgramDefinition, setup, type CommitRecord } from './harness.js';

/**
 * Tree-wide control (issue 16): one commit records the intent on every live member before any of them
 * is signalled; the root carries the host's intent, descendants their parent's; nothing live to change
 * commits nothing.
 */

/** A leaf whose one dispatch runs until it is aborted; `log` records the abort. */
function abortableLeaf(log: string[]) {
  const definition = new ProgramDefinition({
    name: 'test.leaf.sleeping',
    step({ step }) {
      if (step === 1) return Transition.continue(0, [Effect.dispatcher(Payload.encode({ sleep: true }))]);
      return Transition.complete(1, Payload.encode({ woke: true }));
    },
  });
  return deploy(definition, {
    dispatch: (_request, _emit, signal) =>
      new Promise((_resolve, reject) => {
        signal.addEventListener('abort', () => {
          log.push('aborted');
          reject(new Error('aborted'));
        }, { once: true });
      }),
    replayPolicy: () => 'never',
  });
}

function threeLevels(leaf: ReturnType<typeof deploy>) {
  const wait = { boundary: 'terminal_result' as const, condition: ChildWaitCondition.all() };
  const mid = deploy(parentProgram({ name: 'test.mid', children: [childSpec('leaf', leaf)], wait, childDeployments: () => [leaf] }));
  return deploy(parentProgram({ name: 'test.root', children: [childSpec('mid', mid)], wait, childDeployments: () => [mid] }));
}

/** Resolves once the tree holds `count` members and `ready` holds for the head. */
async function untilTree(process: Process, committed: () => TreeSnapshot | undefined, ready: (tree: TreeSnapshot) => boolean): Promise<TreeSnapshot> {
  for (;;) {
    const tree = committed();
    if (tree !== undefined && ready(tree)) return tree;
    await new Promise((resolve) => setImmediate(resolve));
    void process;
  }
}

test('tree-wide cancel: one commit marks all three levels (root host, descendants parent) before any work is aborted', async () => {
  const log: string[] = [];
  const { engine, committer } = setup();
  committer.intercept = (record) => {
    log.push(`commit:${record.kind}`);
    return undefined;
  };
  const root = await engine.start(threeLevels(abortableLeaf(log)), Payload.encode({}));
  const last = () => committer.acknowledged.at(-1)?.snapshot;
  await untilTree(root, last, (tree) => tree.processSnapshots().length === 3 && tree.processSnapshots().some((member) => member.prepared?.frontier()?.phase === 'pending'));
  await committer.store.loadTree(root.id); // the head is settled in the store
  const before = committer.attempts.length;
  log.length = 0;

  assert.equal(await root.controlTree('cancel', 'stop everything'), 3);

  const marking = committer.attempts[before] as CommitRecord;
  assert.equal(log[0], `commit:${marking.kind}`, `the marking commit comes before any abort: ${log.join(', ')}`);
  const members = marking.snapshot.processSnapshots();
  assert.equal(members.length, 3);
  for (const member of members) {
    const isRoot = member.relation.parentId === undefined;
    const intent = member.pendingControl.cancellation ?? member.termination;
    assert.ok(intent !== undefined, `member at depth ${member.relation.depth} is marked in the first commit`);
    assert.equal(member.pendingControl.cancellation?.owner, isRoot ? 'host' : 'parent', `depth ${member.relation.depth}`);
  }
  const result = await root.await();
  assert.equal(result.termination.cause, 'host_cancellation');
  await root.join();
  const head = (await committer.store.loadTree(root.id)) as TreeSnapshot;
  const causes = head.processSnapshots().map((member) => `${member.relation.depth}:${member.termination?.cause}`).sort();
  assert.deepEqual(causes, ['0:host_cancellation', '1:parent_cancellation', '2:parent_cancellation']);
  assert.ok(log.includes('aborted'), 'the leaf dispatch was aborted after the marking commit');
});

test('tree-wide control with nothing live to change commits nothing and says 0', async () => {
  const { engine, committer } = setup();
  const root = await engine.start(threeLevels(abortableLeaf([])), Payload.encode({}));
  const last = () => committer.acknowledged.at(-1)?.snapshot;
  await untilTree(root, last, (tree) => tree.processSnapshots().length === 3);
  assert.equal(await root.controlTree('kill', 'end'), 3);
  await root.join();
  const commits = committer.attempts.length;
  for (const action of ['cancel', 'kill', 'pause', 'resume'] as const) assert.equal(await root.controlTree(action, 'again'), 0, action);
  assert.equal(committer.attempts.length, commits, 'no commit for a tree with nothing live');
  const causes = ((await committer.store.loadTree(root.id)) as TreeSnapshot).processSnapshots().map((member) => member.termination?.cause);
  assert.deepEqual(causes, ['engine_kill', 'engine_kill', 'engine_kill']);
});

test('tree-wide pause of a waiting tree pauses every member in one commit; resume brings each back to its wait in one more', async () => {
  const { engine, committer } = setup();
  const root = await engine.start(threeLevels(deploy(gateChildProgram(['go']))), Payload.encode({}));
  const last = () => committer.acknowledged.at(-1)?.snapshot;
  await untilTree(root, last, (tree) => tree.processSnapshots().length === 3 && tree.processSnapshots().every((member) => member.status === 'waiting'));
  const before = committer.attempts.length;
  assert.equal(await root.controlTree('pause', 'hold the tree'), 3);
  assert.equal(committer.attempts.length, before + 1, 'one commit');
  assert.deepEqual(last()?.processSnapshots().map((member) => member.status), ['paused', 'paused', 'paused']);
  assert.equal(await root.controlTree('pause', 'again'), 0, 'already paused: nothing to change');
  assert.equal(committer.attempts.length, before + 1);
  assert.equal(await root.controlTree('resume', ''), 3);
  assert.equal(committer.attempts.length, before + 2, 'one commit');
  assert.deepEqual(last()?.processSnapshots().map((member) => member.status), ['waiting', 'waiting', 'waiting']);
  await root.controlTree('kill', 'cleanup');
});
