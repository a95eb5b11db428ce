import type { Redis } from 'ioredis';
import { treeIncarnationConflict, type EffectBoundary, type TreeActivation, type TreeCheckpoint } from '../kernel/commit.js';
import { ErrorCode, KernelError } from '../kernel/errors.js';
import type { Event } from '../kernel/event.js';
import type { ProcessId } from '../kernel/identity.js';
import type { CommitContext, TreeStore } from '../kernel/tree-committer.js';
import type { TreeSnapshot } from '../kernel/tree-snapshot.js';
import type { LogRecord } from '../store/event-log.js';
import type { MemoryTreeCommitter } from '../store/memory-committer.js';
import type { MemoryEventLog } from '../store/memory-event-log.js';
import type { RedisCommitContext } from '../store/redis/event-log.js';
import type { RedisTreeCommitter } from '../store/redis/redis-committer.js';
import {
  encodeRecord,
  idempotencyPointerKey,
  idempotencyRecordSuffix,
  intentOf,
  type IdempotencyIntent,
  type MemoryIdempotencyStore,
} from './idempotency.js';
import { ServerErrorCode, serverError } from './errors.js';
import type { HostMetrics } from './metrics.js';
import { runHostScript } from './redis-scripts.js';
import type { MemoryRootIndex, RootIndex } from './root-index.js';

/**
 * The TreeCommitter the Host gives its Engine: a decorator over the store's committer that turns
 * each commit's {@link CommitContext} into the host's durable facts, with the commit:
 *
 * - `context.events` (the committed events the Engine publishes once the commit is acknowledged)
 *   become event-log entries;
 * - `context.hostValues.idempotency` on a start checkpoint becomes the idempotency record.
 *
 * Redis mode: both go into the commit's own Lua script (a {@link RedisCommitContext}), so they are
 * written exactly when the head is installed. Embedded mode: the memory committer commits
 * synchronously, so the entries and the record are applied right after it acknowledges, before the
 * Engine publishes anything. It also times every commit (`scope_commit_duration_seconds`), tracks
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
}

type CommitKind = 'start' | 'checkpoint' | 'effect' | 'activation';

function recordsOf(events: readonly Event[]): LogRecord[] {
  return events.map((event) => ({ type: event.name, processId: event.processId.toString(), data: event.json() }));
}

function unavailable(what: string, error: unknown): KernelError {
  if (error instanceof KernelError) return error;
  return new KernelError(
    ErrorCode.committerUnavailable,
    `${what}: ${error instanceof Error ? error.message : String(error)}; the tree head is unknown`,
    { cause: error },
  );
}

/** Shared bookkeeping: timing, in-flight tracking, sealing. */
abstract class CommitterBase implements HostCommitter {
  readonly #metrics: HostMetrics | undefined;
  readonly #inflight = new Map<string, number>();
  #total = 0;
  #drainWaiters: Array<() => void> = [];
  #sealed = false;

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

  abstract loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined>;
  abstract purgeTree(rootId: ProcessId): Promise<'purged' | 'absent'>;
  protected abstract checkpoint(checkpoint: TreeCheckpoint, context: CommitContext | undefined): Promise<void>;
  protected abstract effect(boundary: EffectBoundary, context: CommitContext | undefined): Promise<void>;
  protected abstract activation(activation: TreeActivation, context: CommitContext | undefined): Promise<void>;

  commitPending(rootId: string): boolean {
    return (this.#inflight.get(rootId) ?? 0) > 0;
  }

  seal(): void {
    this.#sealed = true;
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

export interface EmbeddedCommitterOptions {
  readonly store: MemoryTreeCommitter;
  readonly log: MemoryEventLog;
  readonly idempotency: MemoryIdempotencyStore;
  readonly roots: MemoryRootIndex;
  readonly metrics?: HostMetrics;
}

/**
 * Embedded mode. The memory committer runs its checks and writes synchronously inside its call, so
 * once it acknowledges, this decorator appends the commit's events to the memory log and sets the
 * idempotency record before returning to the Engine — nothing can observe the head without them.
 * Purge is a tombstone here (the memory committer cannot delete a head): a purged tree reads as
 * absent and refuses further commits.
 */
export class EmbeddedCommitter extends CommitterBase {
  readonly #store: MemoryTreeCommitter;
  readonly #log: MemoryEventLog;
  readonly #idempotency: MemoryIdempotencyStore;
  readonly #roots: MemoryRootIndex;
  readonly #purged = new Set<string>();

  constructor(options: EmbeddedCommitterOptions) {
    super(options.metrics);
    this.#store = options.store;
    this.#log = options.log;
    this.#idempotency = options.idempotency;
    this.#roots = options.roots;
  }

  async loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    if (this.#purged.has(rootId.toString())) return undefined;
    return this.#store.loadTree(rootId);
  }

  async purgeTree(rootId: ProcessId): Promise<'purged' | 'absent'> {
    const root = rootId.toString();
    const head = await this.loadTree(rootId);
    if (head === undefined) return 'absent';
    const live = head.processSnapshots().find((process) => !process.isTerminal);
    if (live !== undefined) {
      throw new KernelError(ErrorCode.treeLive, `tree ${root} is live: process ${live.processId.toString()} is ${live.status}`);
    }
    this.#purged.add(root);
    this.#log.delete(root);
    await this.#roots.remove(root, head.root.startedAt);
    return 'purged';
  }

  protected async checkpoint(checkpoint: TreeCheckpoint, context: CommitContext | undefined): Promise<void> {
    this.#checkNotPurged(checkpoint.rootId);
    await this.#store.commitCheckpoint(checkpoint);
    this.#apply(checkpoint.rootId, context);
    if (checkpoint.kind === 'start') {
      const root = checkpoint.rootId.toString();
      const intent = intentOf(context?.hostValues);
      if (intent !== undefined) this.#idempotency.set(intent, root);
      this.#roots.addNow(root, checkpoint.snapshot.root.startedAt);
    }
  }

  protected async effect(boundary: EffectBoundary, context: CommitContext | undefined): Promise<void> {
    this.#checkNotPurged(boundary.rootId);
    await this.#store.commitEffect(boundary);
    this.#apply(boundary.rootId, context);
  }

  protected async activation(activation: TreeActivation, context: CommitContext | undefined): Promise<void> {
    this.#checkNotPurged(activation.rootId);
    await this.#store.activateTree(activation);
    this.#apply(activation.rootId, context);
  }

  #checkNotPurged(rootId: ProcessId): void {
    if (this.#purged.has(rootId.toString())) throw treeIncarnationConflict('the tree was purged');
  }

  #apply(rootId: ProcessId, context: CommitContext | undefined): void {
    const events = context?.events ?? [];
    if (events.length > 0) this.#log.append(rootId.toString(), recordsOf(events));
  }
}

export interface RedisHostCommitterOptions {
  readonly store: RedisTreeCommitter;
  readonly redis: Redis;
  readonly roots: RootIndex;
  readonly metrics?: HostMetrics;
}

/**
 * Redis mode: every commit's events, and a start's idempotency record, travel in the commit's Lua
 * script ({@link RedisCommitContext}). Two directory writes precede a start's script: the root
 * index entry and the idempotency pointer (`committing`, from this start's reservation; see
 * `RedisIdempotencyStore`). Both only point at the root; readers ignore them while the root has no
 * head or record, so a failed start leaves nothing that reads as true. After the script, the pointer
 * names the root alone.
 */
export class RedisHostCommitter extends CommitterBase {
  readonly #store: RedisTreeCommitter;
  readonly #redis: Redis;
  readonly #roots: RootIndex;

  constructor(options: RedisHostCommitterOptions) {
    super(options.metrics);
    this.#store = options.store;
    this.#redis = options.redis;
    this.#roots = options.roots;
  }

  get store(): RedisTreeCommitter {
    return this.#store;
  }

  loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.#store.loadTree(rootId);
  }

  async purgeTree(rootId: ProcessId): Promise<'purged' | 'absent'> {
    const head = await this.#store.loadTree(rootId);
    const outcome = await this.#store.purgeTree(rootId);
    if (outcome === 'purged' && head !== undefined) {
      await this.#roots.remove(rootId.toString(), head.root.startedAt).catch(() => undefined);
    }
    return outcome;
  }

  protected async checkpoint(checkpoint: TreeCheckpoint, context: CommitContext | undefined): Promise<void> {
    const records = [];
    const intent = checkpoint.kind === 'start' ? intentOf(context?.hostValues) : undefined;
    const root = checkpoint.rootId.toString();
    if (checkpoint.kind === 'start') {
      await this.#directory(root, checkpoint.snapshot.root.startedAt, intent);
      if (intent !== undefined) {
        records.push({
          suffix: idempotencyRecordSuffix,
          value: encodeRecord({ keyDigest: intent.keyDigest, requestDigest: intent.requestDigest, processId: root }),
          ttlMs: intent.ttlMs,
        });
      }
    }
    await this.#store.commitCheckpoint(checkpoint, { events: context?.events ?? [], records });
    if (intent?.token !== undefined) {
      // The record landed with the head: the pointer now names the root alone. Best-effort: a claim that
      // finds the record through the `committing` pointer finishes this step itself.
      const pointer = idempotencyPointerKey(this.#store.keyPrefix, intent.keyDigest);
      await runHostScript(this.#redis, 'idempotencyPromote', [pointer], [intent.token, root, intent.ttlMs]).catch(() => undefined);
    }
  }

  protected async effect(boundary: EffectBoundary, context: CommitContext | undefined): Promise<void> {
    await this.#store.commitEffect(boundary, { events: context?.events ?? [] });
  }

  protected async activation(activation: TreeActivation, context: CommitContext | undefined): Promise<void> {
    await this.#store.activateTree(activation, { events: context?.events ?? [] });
  }

  /**
   * The root index entry and the idempotency pointer of a start, before its commit. A start holding a
   * reservation moves the pointer to `committing` (naming the root) only while the reservation is still
   * its own; a start that lost it (expired, taken over) does not commit: `idempotency_key_in_progress`.
   */
  async #directory(root: string, startedAt: string, intent: IdempotencyIntent | undefined): Promise<void> {
    let reserved = true;
    try {
      const writes: Promise<unknown>[] = [this.#roots.add(root, startedAt)];
      if (intent !== undefined) {
        const pointer = idempotencyPointerKey(this.#store.keyPrefix, intent.keyDigest);
        writes.push(
          intent.token === undefined
            ? this.#redis.set(pointer, root, 'PX', intent.ttlMs)
            : runHostScript(this.#redis, 'idempotencyCommitting', [pointer], [intent.token, root, intent.ttlMs]).then((held) => {
                reserved = held === 1;
              }),
        );
      }
      await Promise.all(writes);
    } catch (error) {
      throw unavailable('start directory write', error);
    }
    if (!reserved) {
      throw serverError(ServerErrorCode.idempotencyKeyInProgress, 'this start lost its Idempotency-Key reservation to another start; retry to get that one');
    }
  }
}
