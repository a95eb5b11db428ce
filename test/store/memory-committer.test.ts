import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { runTreeCommitterConformance } from '../../src/testing/committer-conformance.js';

runTreeCommitterConformance('memory committer:', () => new MemoryTreeCommitter());

test('memory committer: separate instances are separate ledgers', async () => {
  const { runningRootTree } = await import('../../src/testing/snapshot-fixtures.js');
  const { TreeCheckpoint } = await import('../../src/kernel/commit.js');
  const tree = runningRootTree();
  const first = new MemoryTreeCommitter();
  await first.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: tree }));
  assert.equal((await first.loadTree(tree.rootId))?.digest.equals(tree.digest), true);
  assert.equal(await new MemoryTreeCommitter().loadTree(tree.rootId), undefined);
});
