import type { EffectBoundary, TreeActivation, TreeCheckpoint } from '../../src/kernel/commit.js';
import type { CommitContext, TreeCommitter } from '../../src/kernel/tree-committer.js';

/** A committer that counts the commits `inner` acknowledges (activations, Effect boundaries, checkpoints). */
export class CountingCommitter implements TreeCommitter {
  commits = 0;
  constructor(private readonly inner: TreeCommitter) {}
  async activateTree(activation: TreeActivation, context?: CommitContext): Promise<void> {
    await this.inner.activateTree(activation, context);
    this.commits += 1;
  }
  async commitEffect(boundary: EffectBoundary, context?: CommitContext): Promise<void> {
    await this.inner.commitEffect(boundary, context);
    this.commits += 1;
  }
  async commitCheckpoint(checkpoint: TreeCheckpoint, context?: CommitContext): Promise<void> {
    await this.inner.commitCheckpoint(checkpoint, context);
    this.commits += 1;
  }
}
