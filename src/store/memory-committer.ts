import { commitConflict, type EffectBoundary, type ProcessId, type TreeActivation, type TreeCheckpoint, treeIncarnationConflict, type TreeSnapshot, type TreeStore } from '../kernel/index.js';
import { maxUint64 } from '../kernel/wire.js';

interface Head {
  readonly snapshot: TreeSnapshot;
  readonly sequence: bigint;
}

/**
 * The reference TreeCommitter: the full compare-and-swap, writer-fencing and deduplication protocol
 * in volatile memory. Each method runs its checks and writes synchronously, which makes it atomic
 * on Node's single thread. Heads and facts live as long as this instance (also after a tree is
 * released), so replay protection outlasts any caller that might retry; retention grows with the
 * number of commits.
 */
export class MemoryTreeCommitter implements TreeStore {
  readonly #heads = new Map<string, Head>();
  /** identity → content digest; identities already hash the root, so one map serves every tree. */
  readonly #facts = new Map<string, string>();

  async commitCheckpoint(checkpoint: TreeCheckpoint): Promise<void> {
    if (checkpoint.kind === 'start') this.#createHead(checkpoint);
    else this.#advanceHead(checkpoint);
  }

  async commitEffect(boundary: EffectBoundary): Promise<void> {
    this.#advanceHead(boundary);
  }

  async activateTree(activation: TreeActivation): Promise<void> {
    const root = activation.rootId.toString();
    const head = this.#heads.get(root);
    const prospective = activation.snapshot;
    const fact = this.#facts.get(activation.identity());
    if (fact !== undefined) {
      if (fact === activation.contentDigest().toString() && head?.sequence === 0n && head.snapshot.digest.equals(prospective.digest)) {
        return;
      }
      throw commitConflict();
    }
    if (
      head === undefined ||
      !head.snapshot.incarnationId.equals(activation.previousIncarnationId) ||
      !head.snapshot.digest.equals(activation.previousDigest)
    ) {
      throw treeIncarnationConflict();
    }
    this.#facts.set(activation.identity(), activation.contentDigest().toString());
    this.#heads.set(root, { snapshot: prospective, sequence: 0n });
  }

  async loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.#heads.get(rootId.toString())?.snapshot;
  }

  #createHead(checkpoint: TreeCheckpoint): void {
    const root = checkpoint.rootId.toString();
    const head = this.#heads.get(root);
    const fact = this.#facts.get(checkpoint.identity());
    if (fact !== undefined) {
      if (
        fact === checkpoint.contentDigest().toString() &&
        head?.sequence === 1n &&
        head.snapshot.digest.equals(checkpoint.snapshot.digest)
      ) {
        return;
      }
      throw commitConflict();
    }
    if (head !== undefined) throw treeIncarnationConflict();
    this.#facts.set(checkpoint.identity(), checkpoint.contentDigest().toString());
    this.#heads.set(root, { snapshot: checkpoint.snapshot, sequence: 1n });
  }

  #advanceHead(commit: TreeCheckpoint | EffectBoundary): void {
    const root = commit.rootId.toString();
    const head = this.#heads.get(root);
    const prospective = commit.snapshot;
    // The writer check comes before the fact lookup: a fenced writer learns it was fenced.
    if (head === undefined || !head.snapshot.incarnationId.equals(prospective.incarnationId)) {
      throw treeIncarnationConflict();
    }
    const fact = this.#facts.get(commit.identity());
    if (fact !== undefined) {
      if (
        fact === commit.contentDigest().toString() &&
        head.sequence === commit.sequence &&
        head.snapshot.digest.equals(prospective.digest)
      ) {
        return;
      }
      throw commitConflict();
    }
    if (head.sequence === maxUint64 || commit.sequence !== head.sequence + 1n || !head.snapshot.digest.equals(commit.previous)) {
      throw treeIncarnationConflict();
    }
    this.#facts.set(commit.identity(), commit.contentDigest().toString());
    this.#heads.set(root, { snapshot: prospective, sequence: commit.sequence });
  }
}
