import type { Logger } from 'pino';
import { type Deployment, Engine, ErrorCode, type Event, eventNames, KernelError, type Process, ProcessId, type ProcessInspection, type ProcessSnapshot, type TreeInspection, type TreeSnapshot } from '../kernel/index.js';
import { codedError, HostErrorCode, invalidRequest } from '../errors.js';
import type { DeploymentCatalog } from './catalog.js';
import type { HostCommitter } from './host-committer.js';
import { storeCall } from './store-call.js';
import { driftRefusal } from './drift.js';

/**
 * Tree residency: which trees this server's Engine owns ("local") and what it remembers about the
 * ones it does not ("stored": after a restart, a release, or an eviction of a finished tree), and
 * the moves between the two — restore (take a tree over from its stored head), release, capture.
 *
 * The Engine is the authority on what it owns; this class only keeps the indexes the Engine does
 * not: which root a child belongs to, which finished trees were released to bound memory (they keep
 * answering as finished processes), and captures in progress.
 */

/** A process found in this runtime or in the store. */
export type Located =
  | { readonly kind: 'local'; readonly root: string; readonly handle: Process; readonly inspection: TreeInspection; readonly entry: ProcessInspection }
  | { readonly kind: 'stored'; readonly root: string; readonly head: TreeSnapshot; readonly snapshot: ProcessSnapshot };

/** The snapshot of a located process, wherever it was found. */
export function snapshotOf(located: Located): ProcessSnapshot {
  return located.kind === 'local' ? located.entry.snapshot : located.snapshot;
}

export interface ResidencyOptions {
  readonly engine: Engine;
  readonly committer: HostCommitter;
  readonly catalog: DeploymentCatalog;
  readonly logger?: Logger;
  /** The root of a process this server has not seen (Redis mode: the process directory). */
  readonly rootLookup?: (processId: string) => Promise<string | undefined>;
  /** Finished trees kept in memory before older ones are released (default 1000). */
  readonly finishedTreeRetention?: number;
  /** Throws when the stored tree must not run here at all (it was moved on to a successor: succession.ts). */
  readonly assertRestorable?: (root: string) => Promise<void>;
  /** Right before a restore's activation, with the head it restores (the interrupt barrier re-arms: engine-host.ts). */
  readonly beforeActivation?: (root: string, head: TreeSnapshot) => Promise<void>;
}

/** Parses a process id from a request (`invalid_request`, never a kernel identity error). */
export function parseProcessId(text: string): ProcessId {
  try {
    return ProcessId.parse(text);
  } catch (error) {
    throw invalidRequest(`${JSON.stringify(text)} is not a process id`, error);
  }
}

export function treeNotFound(root: string): KernelError {
  return codedError(HostErrorCode.treeNotFound, `no tree ${root}`);
}

export function processNotFound(processId: string): KernelError {
  return codedError(HostErrorCode.processNotFound, `no process ${processId}`);
}

export function processFinished(processId: string): KernelError {
  return new KernelError(ErrorCode.processFinished, `process ${processId} has finished`);
}

export function treeNotActive(root: string): KernelError {
  return codedError(HostErrorCode.treeNotActive, `tree ${root} is stored but not active in this server; restore it first (POST /v1/trees/${root}/restore)`);
}

export class TreeResidency {
  readonly #engine: Engine;
  readonly #committer: HostCommitter;
  readonly #catalog: DeploymentCatalog;
  readonly #logger: Logger | undefined;
  readonly #retention: number;
  readonly #rootLookup: ((processId: string) => Promise<string | undefined>) | undefined;
  readonly #assertRestorable: ((root: string) => Promise<void>) | undefined;
  readonly #beforeActivation: ((root: string, head: TreeSnapshot) => Promise<void>) | undefined;
  /** Roots of the trees this Engine owns (a cache of what the Engine says). */
  readonly #localRoots = new Set<string>();
  /** Non-root process id → its root (children of stored trees are found through it). */
  readonly #processRoots = new Map<string, string>();
  /** Roots whose process finished, oldest first (released beyond the retention). */
  readonly #finished = new Set<string>();
  /** Finished roots released only to bound memory: they keep answering as finished. Bounded, oldest dropped. */
  readonly #evicted = new Set<string>();
  /** Parked roots released from memory (hibernated): the next command restores them here. */
  readonly #hibernated = new Set<string>();
  #releases: Promise<void> = Promise.resolve();
  /** Captures in progress per root (inspection's freeze phase). */
  readonly #captures = new Map<string, number>();
  /** Restores in flight, by root (concurrent restores of one tree join one). */
  readonly #restores = new Map<string, Promise<TreeSnapshot>>();

  constructor(options: ResidencyOptions) {
    this.#engine = options.engine;
    this.#committer = options.committer;
    this.#catalog = options.catalog;
    this.#logger = options.logger;
    this.#retention = options.finishedTreeRetention ?? 1_000;
    this.#rootLookup = options.rootLookup;
    this.#assertRestorable = options.assertRestorable;
    this.#beforeActivation = options.beforeActivation;
    if (!Number.isSafeInteger(this.#retention) || this.#retention < 0) throw new TypeError('finishedTreeRetention must be a non-negative integer');
  }

  /** Roots this server owns (copy). */
  localRoots(): string[] {
    return [...this.#localRoots];
  }

  /** Keeps the indexes current from a published event. */
  observe(event: Event): void {
    const pid = event.processId.toString();
    const root = event.relation.rootId.toString();
    if (pid !== root) this.#processRoots.set(pid, root);
    if (event.name === eventNames.processFinished && pid === root) this.#noteFinished(root);
  }

  /** The root a process id belongs to, as far as this server knows (a root maps to itself). */
  rootOf(processId: string): string {
    return this.#processRoots.get(processId) ?? processId;
  }

  /** Marks a tree this Engine just started or restored as owned here. */
  adopt(root: string, head?: TreeSnapshot): void {
    this.#localRoots.add(root);
    this.#hibernated.delete(root);
    for (const snapshot of head?.processSnapshots() ?? []) {
      const pid = snapshot.processId.toString();
      if (pid !== root) this.#processRoots.set(pid, root);
    }
  }

  /** The Engine's inspection of a tree it owns, or undefined. */
  inspectLocal(root: string): TreeInspection | undefined {
    try {
      const inspection = this.#engine.inspectTree(ProcessId.parse(root));
      this.#localRoots.add(root);
      return inspection;
    } catch (error) {
      if (error instanceof KernelError && error.code === ErrorCode.treeNotFound) {
        this.#localRoots.delete(root);
        return undefined;
      }
      throw error;
    }
  }

  /** The authoritative stored head, or undefined. Raw client errors become `committer_unavailable`. */
  async loadHead(root: string): Promise<TreeSnapshot | undefined> {
    return storeCall('head load', () => this.#committer.loadTree(ProcessId.parse(root)));
  }

  async treeExists(root: string): Promise<boolean> {
    return this.inspectLocal(root) !== undefined || (await this.loadHead(root)) !== undefined;
  }

  /** Whether the tree's root is terminal (a tree that does not exist counts as finished). */
  async rootFinished(root: string): Promise<boolean> {
    const local = this.inspectLocal(root);
    if (local !== undefined) {
      const entry = local.processes.find((process) => process.snapshot.processId.toString() === root);
      return entry?.snapshot.isTerminal ?? true;
    }
    const head = await this.loadHead(root);
    return head === undefined || head.root.isTerminal;
  }

  async locate(processId: string): Promise<Located | undefined> {
    const id = parseProcessId(processId);
    const handle = this.#engine.process(id);
    if (handle !== undefined) {
      const root = handle.relation.rootId.toString();
      const inspection = this.inspectLocal(root);
      const entry = inspection?.processes.find((process) => process.snapshot.processId.equals(id));
      if (inspection !== undefined && entry !== undefined) return { kind: 'local', root, handle, inspection, entry };
    }
    let root = this.rootOf(processId);
    let head = await this.loadHead(root);
    let snapshot = head?.process(id);
    if (snapshot === undefined && root === processId && this.#rootLookup !== undefined) {
      // Not a root: a child of a tree this server never held. The head stays the authority on
      // membership (a directory entry whose commit never landed finds nothing).
      const found = await storeCall('process directory read', () => this.#rootLookup!(processId));
      if (found !== undefined && found !== processId) {
        root = found;
        head = await this.loadHead(root);
        snapshot = head?.process(id);
        if (snapshot !== undefined) this.#processRoots.set(processId, root);
      }
    }
    if (head === undefined || snapshot === undefined) return undefined;
    return { kind: 'stored', root, head, snapshot };
  }

  async locateOrThrow(processId: string): Promise<Located> {
    const located = await this.locate(processId);
    if (located === undefined) throw processNotFound(processId);
    return located;
  }

  /**
   * A stored process may not be changed here. A finished one answers like an owned finished process
   * (`process_finished`, or its receipts for a retried signal): the stored head is final for it, so no
   * node needs to restore (and re-open) a finished tree to say so. Any other answers `tree_not_active`.
   */
  refuseStored(located: Located & { kind: 'stored' }): KernelError {
    return this.#finishedStored(located) ? processFinished(located.snapshot.processId.toString()) : treeNotActive(located.root);
  }

  /** Whether a stored process answers signals as a finished process (see {@link refuseStored}). */
  answersAsFinished(located: Located): boolean {
    return located.kind === 'stored' && this.#finishedStored(located);
  }

  #finishedStored(located: Located & { kind: 'stored' }): boolean {
    return located.snapshot.isTerminal;
  }

  /**
   * Releases a parked tree from memory (the Engine decides whether it is parked; a command queued
   * meanwhile cancels the release). Its head stays the authority; {@link isHibernated} tells a
   * command to restore it first. Resolves whether it was released.
   */
  async hibernate(root: string): Promise<boolean> {
    if (this.capturing(root) || this.#restores.has(root)) return false;
    let released: boolean;
    try {
      released = await this.#engine.hibernateTree(ProcessId.parse(root));
    } catch (error) {
      if (error instanceof KernelError && error.code === ErrorCode.treeNotFound) return false;
      throw error;
    }
    if (!released) return false;
    this.#localRoots.delete(root);
    this.#finished.delete(root);
    this.#hibernated.add(root);
    return true;
  }

  /** The tree this server hibernated was taken over elsewhere: it is no longer this server's to wake. */
  movedOn(root: string): void {
    this.#hibernated.delete(root);
  }

  /** Roots this server hibernated (copy). */
  hibernatedRoots(): string[] {
    return [...this.#hibernated];
  }

  /** Whether this server released the parked tree `root` (the next command restores it here). */
  isHibernated(root: string): boolean {
    return this.#hibernated.has(root);
  }

  /** Whether a capture of the tree is in progress. */
  capturing(root: string): boolean {
    return (this.#captures.get(root) ?? 0) > 0;
  }

  /**
   * Quiesces a local tree at safe boundaries and commits the cut. A finished tree released to bound
   * memory is quiescent: its stored head is the cut. Any other stored tree: `tree_not_active`.
   */
  async capture(root: string, signal?: AbortSignal): Promise<TreeSnapshot> {
    if (this.inspectLocal(root) === undefined) {
      const head = await this.loadHead(root);
      if (head === undefined) throw treeNotFound(root);
      if (this.#evicted.has(root) && head.processSnapshots().every((process) => process.isTerminal)) return head;
      // A hibernated tree was parked when it left, and nothing changed it since: its head is the cut.
      if (this.#hibernated.has(root)) return head;
      throw treeNotActive(root);
    }
    this.#captures.set(root, (this.#captures.get(root) ?? 0) + 1);
    try {
      return await this.#engine.captureTree(ProcessId.parse(root), signal);
    } finally {
      const left = (this.#captures.get(root) ?? 1) - 1;
      if (left === 0) this.#captures.delete(root);
      else this.#captures.set(root, left);
    }
  }

  /**
   * Takes a tree over from its stored head (a new incarnation fences the previous writer); a tree
   * already owned here is a no-op unless its writer stopped. Concurrent restores of one tree join.
   * Resolves with the head the tree was restored from (undefined: it was already owned and live).
   * `head`, when given, is one the caller just loaded: it saves a second read (a head that moved on
   * meanwhile fails the activation's compare-and-swap, and nothing is restored).
   */
  restore(root: string, head?: TreeSnapshot): Promise<TreeSnapshot | undefined> {
    const running = this.#restores.get(root);
    if (running !== undefined) return running;
    const local = this.inspectLocal(root);
    if (local !== undefined && !local.stopped) return Promise.resolve(undefined);
    const restore = this.#restore(root, local !== undefined, head);
    this.#restores.set(root, restore);
    return restore.finally(() => this.#restores.delete(root));
  }

  async #restore(root: string, stopped: boolean, loaded: TreeSnapshot | undefined): Promise<TreeSnapshot> {
    // The head first: while storage cannot answer, the stopped copy stays in memory and reads go on from it.
    const head = stopped || loaded === undefined ? await this.loadHead(root) : loaded;
    if (head === undefined) throw treeNotFound(root);
    if (stopped) {
      await this.#engine.releaseTree(ProcessId.parse(root));
      this.#forget(root);
    }
    await this.#assertRestorable?.(root);
    // A version no node here holds is drift: refused (and logged) before anything is reserved; the
    // kernel would refuse it too, but only the Host can say which ref members moved.
    const drift = this.#catalog.driftOf(head.root.deploymentRef);
    if (drift !== undefined) {
      this.#logger?.warn(
        { rootId: root, storedRef: drift.stored.toString(), currentRef: drift.current?.toString() ?? null, differs: drift.differs },
        'deployment drift: refused to restore a tree whose version this node does not hold',
      );
      // No version of the name at all: nothing it drifted from (404, as before versions existed).
      if (drift.current === undefined) throw codedError(HostErrorCode.deploymentNotFound, `tree ${root} runs ${drift.stored.toString()}, and no version of ${drift.stored.name} is registered here`);
      throw driftRefusal(root, drift);
    }
    const deployment = this.#catalog.resolve(head.root.deploymentRef);
    await this.#beforeActivation?.(root, head);
    await this.#engine.restoreTree(deployment, head);
    this.adopt(root, head);
    return head;
  }

  /**
   * Releases a tree from this runtime's memory (never deletes persistence). A live tree (one process
   * not terminal, writer not stopped) is refused with `tree_live`. Resolves whether it was local.
   */
  async release(root: string): Promise<boolean> {
    const local = this.inspectLocal(root);
    if (local === undefined) return false;
    const live = local.processes.find((entry) => !entry.snapshot.isTerminal);
    if (live !== undefined && !local.stopped) {
      throw new KernelError(ErrorCode.treeLive, `tree ${root} is live: process ${live.snapshot.processId.toString()} is ${live.snapshot.status}; cancel or kill it first`);
    }
    await this.#engine.releaseTree(ProcessId.parse(root));
    this.#forget(root);
    return true;
  }

  /** After a purge: forget the tree entirely (child → root mappings too). */
  purged(root: string): void {
    this.#forget(root, true);
  }

  /** Resolves once the automatic releases of finished trees scheduled so far are done. */
  settleReleases(): Promise<void> {
    return this.#releases;
  }

  /** Processes resident here, by status. */
  residentByStatus(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const root of this.#localRoots) {
      for (const entry of this.inspectLocal(root)?.processes ?? []) {
        const status = entry.snapshot.status;
        counts.set(status, (counts.get(status) ?? 0) + 1);
      }
    }
    return counts;
  }

  /** Keeps the newest finished trees in memory; releases older ones (outside the listener). */
  #noteFinished(root: string): void {
    this.#finished.delete(root);
    this.#finished.add(root);
    while (this.#finished.size > this.#retention) {
      const oldest = this.#finished.values().next().value as string;
      this.#finished.delete(oldest);
      this.#releases = this.#releases.then(() => this.#autoRelease(oldest));
    }
  }

  async #autoRelease(root: string): Promise<void> {
    const local = this.inspectLocal(root);
    if (local === undefined || local.processes.some((entry) => !entry.snapshot.isTerminal)) return;
    try {
      await this.#engine.releaseTree(ProcessId.parse(root));
      this.#forget(root);
      this.#evicted.add(root);
      const bound = Math.max(10_000, 10 * this.#retention);
      while (this.#evicted.size > bound) this.#evicted.delete(this.#evicted.values().next().value as string);
    } catch (error) {
      this.#logger?.warn({ err: error, rootId: root }, 'could not release a finished tree');
    }
  }

  #forget(root: string, purged = false): void {
    this.#localRoots.delete(root);
    this.#evicted.delete(root);
    this.#finished.delete(root);
    this.#hibernated.delete(root);
    if (!purged) return;
    for (const [pid, owner] of this.#processRoots) {
      if (owner === root) this.#processRoots.delete(pid);
    }
  }
}
