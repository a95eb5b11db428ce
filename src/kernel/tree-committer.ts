import type { EffectBoundary, TreeActivation, TreeCheckpoint } from './commit.js';
import type { EffectRequest } from './effect.js';
import type { Event } from './event.js';
import type { ProcessId } from './identity.js';
import type { TreeSnapshot } from './tree-snapshot.js';

/**
 * The one port through which recoverable state changes: every call atomically compares and advances
 * a tree's authoritative head. A resolved promise is an acknowledgment: the commit is installed
 * under this protocol (an identical retry is acknowledged only while its sequence is still current).
 * Rejections carry `commit_conflict` or `tree_incarnation_conflict`; any other rejection — a
 * timeout included — proves nothing about the head and must be reconciled by loading it.
 *
 * The Engine never cancels a commit; implementations impose their own bounded storage deadline and
 * a host-owned shutdown signal.
 */
export interface TreeCommitter {
  /** Fences the previous writer before restored work can run (installs sequence 0). */
  activateTree(activation: TreeActivation, context?: CommitContext): Promise<void>;
  /** Keeps the Effect fact and the tree head atomic. */
  commitEffect(boundary: EffectBoundary, context?: CommitContext): Promise<void>;
  /** Compares an absent head (start) or the current head, then installs the checkpoint. */
  commitCheckpoint(checkpoint: TreeCheckpoint, context?: CommitContext): Promise<void>;
}

/**
 * What the Engine will publish once a commit is acknowledged. A host store may write these facts
 * in the same atomic step as the head (its business write set, e.g. a durable event log), so a
 * crash can never leave a published event without its state, or a committed state without its
 * events. Stores that keep no such facts ignore it.
 */
export interface CommitContext {
  /** Committed-phase events, in publication order. */
  readonly events: readonly Event[];
  /**
   * Values the host attached to the operation that caused this commit (`StartOptions.hostValues`
   * on the start checkpoint; `ControlOptions.hostValues` on the first commit of a control), e.g. an
   * idempotency record to write atomically with it. The kernel never reads them.
   */
  readonly hostValues?: Readonly<Record<string, unknown>>;
  /**
   * On a pending boundary: the Effect's first attempt, which the Engine dispatches as soon as the
   * commit is acknowledged. A store that carries Effects to workers may enqueue it behind the commit
   * on the same ordered connection, saving a round trip after the acknowledgement; that is safe only
   * where a worker runs nothing the head does not grant (a refused commit grants nothing). Others
   * ignore it.
   */
  readonly dispatch?: EffectRequest;
}

/** A committer that can also read the authoritative head, as recovery and conformance need. */
export interface TreeStore extends TreeCommitter {
  /** The stored head, or undefined when the tree has none. Never activates anything. */
  loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined>;
}
