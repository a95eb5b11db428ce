import { EffectBoundary, TreeActivation, TreeCheckpoint, type EffectBoundaryKind, type TreeCheckpointKind } from '../kernel/commit.js';
import type { Digest } from '../kernel/digest.js';
import type { ProcessId } from '../kernel/identity.js';
import type { CommitContext, TreeStore } from '../kernel/tree-committer.js';
import type { TreeSnapshot } from '../kernel/tree-snapshot.js';

/** A commit kind: a checkpoint kind, an effect boundary kind, or `activation`. */
export type CommitKind = TreeCheckpointKind | EffectBoundaryKind | 'activation';

/** Where a gate cuts: before the store sees the commit, or after it installed the head. */
export type CutPosition = 'before' | 'after';

/** The error a gate's `abort()` makes the held commit return: the host "crashed" there. */
export class SimulatedHostCrash extends Error {
  constructor(readonly point: string) {
    super(`simulated host crash at ${point}`);
    this.name = 'SimulatedHostCrash';
  }
}

/** Any commit a store sees. */
export type GatedCommit = TreeCheckpoint | EffectBoundary | TreeActivation;

function kindOf(commit: GatedCommit): CommitKind {
  return commit instanceof TreeActivation ? 'activation' : commit.kind;
}

/**
 * Intercepts the first commit of one kind (that `matches`, when given) at one position. `before`:
 * the commit waits before the store sees it; `after`: the store installs the head, then the
 * acknowledgment waits. `abort()` returns a simulated crash to the Engine; `continueCommit()` lets
 * it proceed.
 */
export class CommitGate implements TreeStore {
  readonly #inner: TreeStore;
  readonly kind: CommitKind;
  readonly position: CutPosition;
  readonly #matches: (commit: GatedCommit) => boolean;
  #armed = true;
  #held: GatedCommit | undefined;
  #release: ((crash: boolean) => void) | undefined;
  readonly reached: Promise<GatedCommit>;
  #onReached!: (commit: GatedCommit) => void;

  constructor(inner: TreeStore, kind: CommitKind, position: CutPosition, matches: (commit: GatedCommit) => boolean = () => true) {
    this.#inner = inner;
    this.kind = kind;
    this.position = position;
    this.#matches = matches;
    this.reached = new Promise((resolve) => {
      this.#onReached = resolve;
    });
  }

  get point(): string {
    return `${this.position} ${this.kind} commit`;
  }

  /** The head digest the store must hold at the cut: the predecessor (before) or the proposal (after). */
  durableDigest(): Digest | undefined {
    const held = this.#held;
    if (held === undefined) return undefined;
    if (this.position === 'after') return held.snapshot.digest;
    return held instanceof TreeActivation ? held.previousDigest : held.previous;
  }

  abort(): void {
    this.#release?.(true);
  }

  continueCommit(): void {
    this.#release?.(false);
  }

  async #gate(commit: GatedCommit, apply: () => Promise<void>): Promise<void> {
    if (!this.#armed || kindOf(commit) !== this.kind || !this.#matches(commit)) return apply();
    this.#armed = false;
    this.#held = commit;
    const crash = new Promise<boolean>((resolve) => {
      this.#release = resolve;
    });
    if (this.position === 'after') await apply();
    this.#onReached(commit);
    if (await crash) throw new SimulatedHostCrash(this.point);
    if (this.position === 'before') await apply();
  }

  commitCheckpoint(checkpoint: TreeCheckpoint, context?: CommitContext): Promise<void> {
    return this.#gate(checkpoint, () => this.#inner.commitCheckpoint(checkpoint, context));
  }

  commitEffect(boundary: EffectBoundary, context?: CommitContext): Promise<void> {
    return this.#gate(boundary, () => this.#inner.commitEffect(boundary, context));
  }

  activateTree(activation: TreeActivation, context?: CommitContext): Promise<void> {
    return this.#gate(activation, () => this.#inner.activateTree(activation, context));
  }

  loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.#inner.loadTree(rootId);
  }
}

/**
 * Wraps a store so that every successful commit is committed twice (a store must acknowledge an
 * identical retry while it is current) and records what was acknowledged, in order.
 */
export class DurabilityProbe implements TreeStore {
  readonly #inner: TreeStore;
  readonly acknowledged: GatedCommit[] = [];

  constructor(inner: TreeStore) {
    this.#inner = inner;
  }

  async #twice(commit: GatedCommit, apply: () => Promise<void>): Promise<void> {
    await apply();
    await apply();
    this.acknowledged.push(commit);
  }

  commitCheckpoint(checkpoint: TreeCheckpoint, context?: CommitContext): Promise<void> {
    return this.#twice(checkpoint, () => this.#inner.commitCheckpoint(checkpoint, context));
  }

  commitEffect(boundary: EffectBoundary, context?: CommitContext): Promise<void> {
    return this.#twice(boundary, () => this.#inner.commitEffect(boundary, context));
  }

  activateTree(activation: TreeActivation, context?: CommitContext): Promise<void> {
    return this.#twice(activation, () => this.#inner.activateTree(activation, context));
  }

  loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.#inner.loadTree(rootId);
  }

  boundaries(): EffectBoundary[] {
    return this.acknowledged.filter((commit): commit is EffectBoundary => commit instanceof EffectBoundary);
  }

  checkpoints(): TreeCheckpoint[] {
    return this.acknowledged.filter((commit): commit is TreeCheckpoint => commit instanceof TreeCheckpoint);
  }
}

/**
 * Passes commits through and lets a test wait — without polling — until the acknowledged head of
 * a tree satisfies a predicate (checked against the stored head first, then after every
 * acknowledged commit).
 */
export class CommitWatcher implements TreeStore {
  readonly #inner: TreeStore;
  readonly #waiters = new Set<{ rootId: ProcessId; test: (tree: TreeSnapshot) => boolean; resolve: (tree: TreeSnapshot) => void }>();

  constructor(inner: TreeStore) {
    this.#inner = inner;
  }

  async awaitTree(rootId: ProcessId, test: (tree: TreeSnapshot) => boolean): Promise<TreeSnapshot> {
    return new Promise((resolve, reject) => {
      const waiter = { rootId, test, resolve };
      this.#waiters.add(waiter);
      this.#inner.loadTree(rootId).then((tree) => {
        if (tree !== undefined && this.#waiters.has(waiter) && test(tree)) {
          this.#waiters.delete(waiter);
          resolve(tree);
        }
      }, reject);
    });
  }

  #acknowledged(tree: TreeSnapshot): void {
    for (const waiter of [...this.#waiters]) {
      if (waiter.rootId.equals(tree.rootId) && waiter.test(tree)) {
        this.#waiters.delete(waiter);
        waiter.resolve(tree);
      }
    }
  }

  async commitCheckpoint(checkpoint: TreeCheckpoint, context?: CommitContext): Promise<void> {
    await this.#inner.commitCheckpoint(checkpoint, context);
    this.#acknowledged(checkpoint.snapshot);
  }

  async commitEffect(boundary: EffectBoundary, context?: CommitContext): Promise<void> {
    await this.#inner.commitEffect(boundary, context);
    this.#acknowledged(boundary.snapshot);
  }

  async activateTree(activation: TreeActivation, context?: CommitContext): Promise<void> {
    await this.#inner.activateTree(activation, context);
    this.#acknowledged(activation.snapshot);
  }

  loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.#inner.loadTree(rootId);
  }
}

/** One acknowledged commit and the head digest the store held when it acknowledged it. */
export interface Acknowledgment {
  readonly commit: GatedCommit;
  readonly headDigest: Digest | undefined;
}

/**
 * Passes commits through and records, for each acknowledged one, the head the store holds at that
 * moment (read before the acknowledgment returns): a store that acknowledges without storing shows
 * a head other than the commit's.
 */
export class AcknowledgmentProbe implements TreeStore {
  readonly #inner: TreeStore;
  readonly acknowledged: Acknowledgment[] = [];

  constructor(inner: TreeStore) {
    this.#inner = inner;
  }

  async #record(commit: GatedCommit, apply: () => Promise<void>): Promise<void> {
    await apply();
    const stored = await this.#inner.loadTree(commit.snapshot.rootId);
    this.acknowledged.push({ commit, headDigest: stored?.digest });
  }

  commitCheckpoint(checkpoint: TreeCheckpoint, context?: CommitContext): Promise<void> {
    return this.#record(checkpoint, () => this.#inner.commitCheckpoint(checkpoint, context));
  }

  commitEffect(boundary: EffectBoundary, context?: CommitContext): Promise<void> {
    return this.#record(boundary, () => this.#inner.commitEffect(boundary, context));
  }

  activateTree(activation: TreeActivation, context?: CommitContext): Promise<void> {
    return this.#record(activation, () => this.#inner.activateTree(activation, context));
  }

  loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.#inner.loadTree(rootId);
  }
}
