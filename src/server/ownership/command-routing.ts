import { ErrorCode, KernelError, type TreeSnapshot } from '../../kernel/index.js';
import type { Hibernation } from '../hibernation.js';
import type { Located, TreeResidency } from '../residency.js';
import { storeCall } from '../store-call.js';
import type { Ownership } from './ownership.js';

export interface CommandRoutingOptions {
  readonly residency: TreeResidency;
  /** Redis mode: this node's ownership (routing applies once it gates). */
  readonly ownership: Ownership | undefined;
  readonly hibernation: Hibernation;
  /** Throws when the Host admits no new work (shutting down, no valid lease). */
  readonly admit: () => void;
  /** After a restore from `head`: the Host's caches catch up (`woken`: it came back from hibernation). */
  readonly restored: (root: string, head: TreeSnapshot, woken: boolean) => Promise<void>;
  /** Whether the Host is restoring `root` after its runtime stopped (a command joins that restore). */
  readonly recovering?: (root: string) => boolean;
  /** Throws when the tree refuses commands (a latched persistence fault, src/server/fault-latch.ts). */
  readonly refuse?: (root: string) => void;
}

/** Whether a command met a runtime hibernation released (nothing was committed). */
export function isReleased(error: unknown): boolean {
  return error instanceof KernelError && error.code === ErrorCode.treeReleased;
}

/**
 * Where a command on a tree runs (docs/host.md "Nodes and ownership", "Hibernation"): here on the
 * tree's live runtime; here after restoring it (hibernated here, owned by this node, or ownerless);
 * or on the live owner elsewhere ({@link OwnedElsewhereError}, which the HTTP edge forwards). Also
 * what a command does when it meets a fenced or released runtime.
 */
export class CommandRouting {
  readonly #residency: TreeResidency;
  readonly #ownership: Ownership | undefined;
  readonly #hibernation: Hibernation;
  readonly #admit: () => void;
  readonly #restored: (root: string, head: TreeSnapshot, woken: boolean) => Promise<void>;
  readonly #recovering: (root: string) => boolean;
  readonly #refuse: (root: string) => void;

  constructor(options: CommandRoutingOptions) {
    this.#refuse = options.refuse ?? (() => undefined);
    this.#recovering = options.recovering ?? (() => false);
    this.#residency = options.residency;
    this.#ownership = options.ownership;
    this.#hibernation = options.hibernation;
    this.#admit = options.admit;
    this.#restored = options.restored;
  }

  /**
   * Restores `root` here (a takeover guarded by the owner record `expected` replaces, when joined);
   * from `loaded` when the caller just read the head.
   */
  async restoreHere(root: string, expected: string | undefined, loaded?: TreeSnapshot): Promise<void> {
    const ownership = this.#ownership;
    const woken = this.#residency.isHibernated(root);
    const restore = (): Promise<TreeSnapshot | undefined> => this.#residency.restore(root, loaded);
    const head = ownership?.joined === true && expected !== undefined ? await ownership.guarded(root, expected, restore) : await restore();
    if (head !== undefined) await this.#restored(root, head, woken);
    ownership?.adopted(root);
  }

  /**
   * The process a command on `processId` runs on. A Host that has not joined (embedded mode,
   * in-process use) has only its own trees: the located process, after restoring a tree it
   * hibernated. Joined: a live local tree runs here; any other is routed by its owner record: owned
   * by a live other node → {@link OwnedElsewhereError}; this node's (hibernated, or from an earlier
   * epoch), or ownerless (its owner's lease is gone) → restored here first, then run here.
   */
  async commandable(processId: string): Promise<Located> {
    // First, from memory: a tree that refuses commands answers before storage is read.
    this.#refuse(this.#residency.rootOf(processId));
    const located = await this.#residency.locateOrThrow(processId);
    const ownership = this.#ownership;
    if (this.#residency.answersAsFinished(located)) return located;
    if (ownership?.gating !== true) {
      if (located.kind === 'local') this.#hibernation.touch(located.root);
      // A tree it hibernated, or one whose stopped runtime it is restoring, is restored here first.
      const restorable = this.#residency.isHibernated(located.root) || this.#recovering(located.root);
      if (located.kind === 'local' || !restorable) return located;
      this.#admit();
      await this.restoreHere(located.root, undefined, located.head);
      return this.#residency.locateOrThrow(processId);
    }
    // Also refuses before the join: only a joined node with a valid lease routes or takes over.
    ownership.lease.assertValid();
    if (located.kind === 'local' && !located.inspection.stopped) {
      this.#hibernation.touch(located.root);
      return located;
    }
    this.#admit();
    if (located.kind === 'stored' && this.#residency.isHibernated(located.root) && (await this.#wake(located.root, located.head, ownership))) {
      return this.#residency.locateOrThrow(processId);
    }
    await this.takeOrForward(located.root, false, located.kind === 'stored' ? located.head : undefined);
    return this.#residency.locateOrThrow(processId);
  }

  /**
   * Restores a tree this node hibernated, guarded by the owner record it wrote itself (no read of the
   * record first: the takeover's compare is the check). False when that record moved on — another
   * node took the tree over, or this node's epoch changed — and the caller routes as usual.
   */
  async #wake(root: string, head: TreeSnapshot, ownership: Ownership): Promise<boolean> {
    const presumed = ownership.presumedRecord(head);
    if (presumed === undefined) return false;
    try {
      await this.restoreHere(root, presumed, head);
      return true;
    } catch (error) {
      if (!(error instanceof KernelError && error.code === ErrorCode.treeIncarnationConflict)) throw error;
      this.#residency.movedOn(root);
      return false;
    }
  }

  /**
   * Runs a command again when its tree was hibernated between the lookup and the command (the
   * released runtime refused it with `tree_released`, nothing committed): the next attempt finds the
   * tree stored and restores it first.
   */
  async acrossRelease<T>(command: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await command();
      } catch (error) {
        if (attempt < 3 && isReleased(error)) continue;
        throw error;
      }
    }
  }

  /**
   * Takes `root` over here, or throws where it lives. A takeover names the owner record it replaces;
   * losing the race to another node (`tree_incarnation_conflict`) reads the record again, so the
   * command follows the winner. `force` (an operator's restore) takes a tree from a live owner too:
   * the fenced owner's next commit fails, and it drops the tree and forwards from then on. `loaded`:
   * a head the caller just read, used by the first attempt only.
   */
  async takeOrForward(root: string, force: boolean, loaded?: TreeSnapshot): Promise<void> {
    const ownership = this.#ownership as Ownership;
    for (let attempt = 0; ; attempt += 1) {
      const route = await storeCall('owner record read', () => ownership.route(root));
      if (route.kind === 'elsewhere' && !force) {
        // A writer the live owner fenced: drop it from memory; its commands go there from now on.
        const local = this.#residency.inspectLocal(root);
        if (local !== undefined && local.stopped) await this.#residency.release(root).catch(() => undefined);
        throw route.error;
      }
      try {
        await this.restoreHere(root, route.expected, attempt === 0 ? loaded : undefined);
        return;
      } catch (error) {
        if (attempt < 2 && error instanceof KernelError && error.code === ErrorCode.treeIncarnationConflict) continue;
        throw error;
      }
    }
  }

  /**
   * After a local command failed: when its tree was fenced by a takeover elsewhere (the commit met
   * another incarnation), the tree leaves this node's memory and the command goes to the owner
   * (nothing of it was committed here): throws where it lives. Otherwise returns: the failure is
   * the command's own.
   */
  async fencedOut(root: string, error: unknown): Promise<void> {
    const ownership = this.#ownership;
    const fenced = error instanceof KernelError && (error.code === ErrorCode.treeIncarnationConflict || (error.cause instanceof KernelError && error.cause.code === ErrorCode.treeIncarnationConflict));
    if (ownership?.joined === true && fenced) {
      const route = await storeCall('owner record read', () => ownership.route(root));
      if (route.kind === 'elsewhere') {
        await this.#residency.release(root).catch(() => undefined);
        throw route.error;
      }
    }
  }

  /** {@link fencedOut}, then the command's own failure. */
  async rethrow(root: string, error: unknown): Promise<never> {
    await this.fencedOut(root, error);
    throw error;
  }
}
