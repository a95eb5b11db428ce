import type { StoredUnknownEntry, RedisUnknownIndex } from '../store/redis/unknown-index.js';
import { unknownRefsOf } from './tree-marks.js';
import type { IndexedCommit } from './wait-index-writer.js';

/** What a commit leaves Unknown, prepared before it; applied once the commit is acknowledged. */
export interface UnknownIndexPlan {
  readonly root: string;
  readonly unknown: ReadonlyMap<string, StoredUnknownEntry>;
}

/**
 * Keeps the Redis Unknown-outcome index (`store/redis/unknown-index.ts`) a superset of the truth, as the
 * wait index writer does for waits:
 *
 * 1. Before a commit, every Unknown effect of its prospective tree that this node has not indexed gets its
 *    entry, and the commit is not sent until the write is acknowledged (a failure is
 *    `committer_unavailable`, nothing committed): an Unknown is never committed without its entry.
 * 2. After the commit is acknowledged, the entries of effects it no longer holds Unknown are removed
 *    with a compare-and-delete (best-effort: readers remove what a crash leaves behind).
 *
 * An activation (restore, takeover) rewrites every entry of the tree it takes, with its own
 * incarnation. What this node wrote is remembered per tree, so a commit that changes no Unknown writes
 * nothing.
 */
export class UnknownIndexWriter {
  readonly #index: RedisUnknownIndex;
  /** root → (`<process> <effect>` → the entry this node wrote), for trees with Unknowns. */
  readonly #indexed = new Map<string, ReadonlyMap<string, StoredUnknownEntry>>();

  constructor(index: RedisUnknownIndex) {
    this.#index = index;
  }

  async prepare(commit: Omit<IndexedCommit, 'events'>): Promise<UnknownIndexPlan> {
    const root = commit.snapshot.rootId.toString();
    const known = commit.activation ? undefined : this.#indexed.get(root);
    const unknown = new Map<string, StoredUnknownEntry>();
    const fresh = [];
    for (const ref of unknownRefsOf(root, commit.snapshot.processSnapshots())) {
      const key = `${ref.processId} ${ref.effectId}`;
      const held = known?.get(key);
      if (held !== undefined) {
        unknown.set(key, held);
        continue;
      }
      fresh.push({ rootId: root, processId: ref.processId, effectId: ref.effectId, incarnation: commit.snapshot.incarnationId.toString(), sequence: commit.sequence.toString() });
    }
    if (fresh.length > 0) {
      for (const entry of await this.#index.write(fresh)) unknown.set(`${entry.processId} ${entry.effectId}`, entry);
    }
    return { root, unknown };
  }

  /** The commit was acknowledged: remember what it left Unknown and remove the entries of what it resolved. */
  async acknowledged(plan: UnknownIndexPlan): Promise<void> {
    const before = this.#indexed.get(plan.root);
    if (plan.unknown.size === 0) this.#indexed.delete(plan.root);
    else this.#indexed.set(plan.root, plan.unknown);
    if (before === undefined) return;
    const gone = [...before].filter(([key]) => !plan.unknown.has(key)).map(([, entry]) => entry);
    if (gone.length > 0) await this.#index.remove(gone).catch(() => undefined);
  }

  /** A purged or released tree: nothing of it is remembered (its entries are verified away by readers). */
  forget(root: string): void {
    this.#indexed.delete(root);
  }
}
