import { commitConflict, type EffectBoundary, type ProcessId, type TreeActivation, type TreeCheckpoint, treeIncarnationConflict, type TreeSnapshot, type TreeStore } from '../kernel/index.js';
import { maxUint64 } from '../kernel/wire.js';

interface Head {
  readonly snapshot: TreeSnapshot;
  readonly sequence: bigint;
  /** The commit that installed this head: a retry of it is the only duplicate that can succeed. */
  readonly commit: TreeCheckpoint | EffectBoundary | TreeActivation;
}

/**
 * The reference TreeCommitter: the full compare-and-swap, writer-fencing and deduplication protocol
 * in volatile memory. Each method runs its checks and writes synchronously, which makes it atomic
 * on Node's single thread. Heads and applied identities live as long as this instance (also after
 * a tree is released), so replay protection outlasts any caller that might retry; retention grows
 * with the number of commits. Heads are compared by their digests, which stay unhashed while the
 * writer hands back the very digest object of the head it read (`Digest.deferred`): each head keeps
 * the tree before it reachable through its commit's `previous` until the next commit replaces it.
 */
export class MemoryTreeCommitter implements TreeStore {
  readonly #heads = new Map<string, Head>();
  /**
   * Every commit identity applied; identities already hash the root, so one set serves every tree.
   * A duplicate is accepted only as a retry of the commit that installed the head, so only that
   * commit's content is ever compared, and no digest is computed unless a duplicate arrives.
   */
  readonly #applied = new Set<string>();

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
    if (this.#applied.has(activation.identity())) {
      if (isRetryOfHead(head, activation)) return;
      throw commitConflict();
    }
    if (
      head === undefined ||
      !head.snapshot.incarnationId.equals(activation.previousIncarnationId) ||
      !head.snapshot.digest.equals(activation.previousDigest)
    ) {
      throw treeIncarnationConflict();
    }
    this.#applied.add(activation.identity());
    this.#heads.set(root, { snapshot: prospective, sequence: 0n, commit: activation });
  }

  async loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.#heads.get(rootId.toString())?.snapshot;
  }

  #createHead(checkpoint: TreeCheckpoint): void {
    const root = checkpoint.rootId.toString();
    const head = this.#heads.get(root);
    if (this.#applied.has(checkpoint.identity())) {
      if (isRetryOfHead(head, checkpoint)) return;
      throw commitConflict();
    }
    if (head !== undefined) throw treeIncarnationConflict();
    this.#applied.add(checkpoint.identity());
    this.#heads.set(root, { snapshot: checkpoint.snapshot, sequence: 1n, commit: checkpoint });
  }

  #advanceHead(commit: TreeCheckpoint | EffectBoundary): void {
    const root = commit.rootId.toString();
    const head = this.#heads.get(root);
    const prospective = commit.snapshot;
    // The writer check comes before the fact lookup: a fenced writer learns it was fenced.
    if (head === undefined || !head.snapshot.incarnationId.equals(prospective.incarnationId)) {
      throw treeIncarnationConflict();
    }
    if (this.#applied.has(commit.identity())) {
      if (isRetryOfHead(head, commit)) return;
      throw commitConflict();
    }
    if (head.sequence === maxUint64 || commit.sequence !== head.sequence + 1n || !head.snapshot.digest.equals(commit.previous)) {
      throw treeIncarnationConflict();
    }
    this.#applied.add(commit.identity());
    this.#heads.set(root, { snapshot: prospective, sequence: commit.sequence, commit });
  }
}

/** True when `commit` repeats, with the same content, the commit that installed `head`. */
function isRetryOfHead(head: Head | undefined, commit: TreeCheckpoint | EffectBoundary | TreeActivation): boolean {
  if (head === undefined) return false;
  if (head.commit === commit) return true;
  return head.commit.identity() === commit.identity() && head.commit.contentDigest().equals(commit.contentDigest());
}
