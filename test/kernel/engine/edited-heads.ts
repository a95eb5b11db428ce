/**
 * Heads that no Engine wrote: tests edit an acknowledged head and install the edit as the store's
 * authoritative head, so a restore (or its validation) meets it as it would meet a head written by
 * a buggy or hostile writer.
 */
import { classifyCheckpointCut, TreeCheckpoint } from '../../../src/kernel/commit.js';
import type { ProcessSnapshot } from '../../../src/kernel/process-snapshot.js';
import { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import type { RecordingCommitter } from './harness.js';

/** `head` with its root replaced by `edit(root)` (same writer, same limits). */
export function withRoot(head: TreeSnapshot, edit: (root: ProcessSnapshot) => ProcessSnapshot): TreeSnapshot {
  const [root, ...others] = head.processSnapshots();
  return TreeSnapshot.create({ incarnationId: head.incarnationId, treeLimits: head.treeLimits, processes: [edit(root as ProcessSnapshot), ...others] });
}

/** Advances the store past the last commit `committer` acknowledged to `edited`, as its writer would. */
export async function installHead(committer: RecordingCommitter, edited: TreeSnapshot): Promise<void> {
  const last = committer.acknowledged.at(-1);
  if (last === undefined) throw new Error('nothing was committed yet');
  const cut = classifyCheckpointCut(edited.processSnapshots());
  await committer.store.commitCheckpoint(TreeCheckpoint.create({ kind: cut, sequence: last.sequence + 1n, previous: last.snapshot.digest, snapshot: edited }));
}
