import { type CommitContext, type EffectBoundary, ErrorCode, type Event, KernelError, type ProcessId, type TreeActivation, type TreeCheckpoint, type TreeSnapshot, type TreeStore } from '../kernel/index.js';
import type { LogRecord } from '../store/event-log.js';
import type { RootIndexEntry } from '../store/root-index.js';
import type { HostMetrics } from './metrics.js';

/**
 * The TreeCommitter the Host gives its Engine: a decorator over the store's committer that turns
 * each commit's {@link CommitContext} into the host's durable facts, with the commit:
 *
 * - `context.events` (the committed events the Engine publishes once the commit is acknowledged)
 *   become event-log entries;
 * - `context.hostValues.idempotency` on a start checkpoint becomes the idempotency record, and
 *   `context.hostValues.tenant` the tree's tenant record.
 *
 * Redis mode (`redis-host-committer.ts`): both go into the commit's own Lua script, so they are
 * written exactly when the head is installed. Embedded mode (`embedded-committer.ts`): the memory
 * committer commits synchronously, so the entries and the record are applied right after it
 * acknowledges, before the Engine publishes anything. It also times every commit (`scope_commit_duration_seconds`), tracks
 * in-flight commits per tree (inspection's `commitPending`, shutdown's drain) and can be sealed: a
 * sealed committer refuses new commits (`committer_unavailable`) while in-flight ones finish.
 */
export interface HostCommitter extends TreeStore {
  /** Whether a commit of this tree is in flight. */
  commitPending(rootId: string): boolean;
  /** Refuses every later commit; in-flight ones complete. */
  seal(): void;
  /** Resolves when no commit is in flight. */
  drained(): Promise<void>;
  /**
   * Deletes a finished tree's stored head and log (`tree_live` while any process of the stored head
   * is not terminal). Idempotency records expire on their own.
   */
  purgeTree(rootId: ProcessId): Promise<'purged' | 'absent'>;
  /** The tenant recorded with the tree's start commit (tenancy.ts), or undefined. */
  readTenant(rootId: ProcessId): Promise<string | undefined>;
  /** A record a commit of the tree wrote beside its head (a gate's answer record: gates/gate-record.ts), or undefined. */
  readRecord(rootId: ProcessId, suffix: string): Promise<string | undefined>;
  /** The tree left this node's memory (released, hibernated): forget what was kept to spare index writes. */
  released(rootId: string): void;
  /**
   * Installs the final head of a tree no writer runs again (a superseded tree, cancelled without its
   * Definition: succession.ts, kernel/stored-cancellation.ts): an activation over exactly the head it
   * was derived from (`replaced`), whose events and `records` are written in the same atomic step. The
   * open waits of `replaced` leave the inbox with it.
   */
  finalizeTree(replaced: TreeSnapshot, activation: TreeActivation, context: CommitContext, records: readonly HostRecord[]): Promise<void>;
}

/** A record a commit writes beside its tree's head (`<prefix>:{<root>}:record:<suffix>` in Redis). */
export interface HostRecord {
  readonly suffix: string;
  readonly value: string;
}

type CommitKind = 'start' | 'checkpoint' | 'effect' | 'activation';

/** The root index entry of a tree (its root's start time and deployment name). */
export function rootEntryOf(tree: TreeSnapshot): RootIndexEntry {
  return { rootId: tree.rootId.toString(), startedAt: tree.root.startedAt, deployment: tree.root.deploymentRef.name };
}

export function recordsOf(events: readonly Event[]): LogRecord[] {
  return events.map((event) => ({ type: event.name, processId: event.processId.toString(), data: event.json() }));
}

export function unavailable(what: string, error: unknown): KernelError {
  if (error instanceof KernelError) return error;
  return new KernelError(
    ErrorCode.committerUnavailable,
    `${what}: ${error instanceof Error ? error.message : String(error)}; the tree head is unknown`,
    { cause: error },
  );
}

/** Shared bookkeeping: timing, in-flight tracking, sealing. */
export abstract class CommitterBase implements HostCommitter {
  abstract readTenant(rootId: ProcessId): Promise<string | undefined>;
  abstract readRecord(rootId: ProcessId, suffix: string): Promise<string | undefined>;

  readonly #metrics: HostMetrics | undefined;
  readonly #inflight = new Map<string, number>();
  #total = 0;
  #drainWaiters: Array<() => void> = [];
  #sealed = false;
  #gate: (() => void) | undefined;

  constructor(metrics: HostMetrics | undefined) {
    this.#metrics = metrics;
  }

  commitCheckpoint(checkpoint: TreeCheckpoint, context?: CommitContext): Promise<void> {
    const kind: CommitKind = checkpoint.kind === 'start' ? 'start' : 'checkpoint';
    return this.#run(kind, checkpoint.rootId, () => this.checkpoint(checkpoint, context));
  }

  commitEffect(boundary: EffectBoundary, context?: CommitContext): Promise<void> {
    return this.#run('effect', boundary.rootId, () => this.effect(boundary, context));
  }

  activateTree(activation: TreeActivation, context?: CommitContext): Promise<void> {
    return this.#run('activation', activation.rootId, () => this.activation(activation, context));
  }

  finalizeTree(replaced: TreeSnapshot, activation: TreeActivation, context: CommitContext, records: readonly HostRecord[]): Promise<void> {
    return this.#run('activation', activation.rootId, () => this.finalActivation(replaced, activation, context, records));
  }

  abstract loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined>;
  abstract purgeTree(rootId: ProcessId): Promise<'purged' | 'absent'>;
  protected abstract checkpoint(checkpoint: TreeCheckpoint, context: CommitContext | undefined): Promise<void>;
  protected abstract effect(boundary: EffectBoundary, context: CommitContext | undefined): Promise<void>;
  protected abstract activation(activation: TreeActivation, context: CommitContext | undefined): Promise<void>;
  protected abstract finalActivation(replaced: TreeSnapshot, activation: TreeActivation, context: CommitContext, records: readonly HostRecord[]): Promise<void>;

  commitPending(rootId: string): boolean {
    return (this.#inflight.get(rootId) ?? 0) > 0;
  }

  released(_rootId: string): void {
    // Nothing kept per tree by default.
  }

  seal(): void {
    this.#sealed = true;
  }

  /** A check every commit passes first (a node past its lease commits nothing: `node_lease_lost`). */
  setGate(gate: () => void): void {
    this.#gate = gate;
  }

  get sealed(): boolean {
    return this.#sealed;
  }

  drained(): Promise<void> {
    if (this.#total === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  async #run(kind: CommitKind, rootId: ProcessId, commit: () => Promise<void>): Promise<void> {
    if (this.#sealed) {
      throw new KernelError(ErrorCode.committerUnavailable, 'the server is shutting down and accepts no further commits; the tree head is unchanged');
    }
    this.#gate?.();
    const root = rootId.toString();
    this.#inflight.set(root, (this.#inflight.get(root) ?? 0) + 1);
    this.#total += 1;
    const started = performance.now();
    let outcome = 'error';
    try {
      await commit();
      outcome = 'ok';
    } finally {
      this.#metrics?.commitDuration.observe({ kind, outcome }, (performance.now() - started) / 1000);
      const left = (this.#inflight.get(root) ?? 1) - 1;
      if (left === 0) this.#inflight.delete(root);
      else this.#inflight.set(root, left);
      this.#total -= 1;
      if (this.#total === 0) {
        const waiters = this.#drainWaiters;
        this.#drainWaiters = [];
        for (const wake of waiters) wake();
      }
    }
  }
}
