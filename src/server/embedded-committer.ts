import { type CommitContext, type EffectBoundary, ErrorCode, KernelError, type ProcessId, type TreeActivation, type TreeCheckpoint, treeIncarnationConflict, type TreeSnapshot } from '../kernel/index.js';
import type { MemoryTreeCommitter } from '../store/memory-committer.js';
import type { MemoryEventLog } from '../store/memory-event-log.js';
import type { MemoryIdempotencyStore } from '../store/memory-idempotency.js';
import type { MemoryRootIndex } from '../store/root-index.js';
import { CommitterBase, type HostRecord, recordsOf, rootEntryOf } from './host-committer.js';
import { intentOf } from './idempotency.js';
import { tenantOfHostValues } from './tenancy.js';
import type { HostMetrics } from './metrics.js';
import type { AnswerClaims } from './gates/answer-claims.js';
import type { SignalAgency } from './signal-agency.js';
import { unknownRefsOf, type UnknownRef } from './tree-marks.js';
import { type ControlAgency, controlRecordSuffix } from './control-agency.js';
import type { TimerPlan, TimerWriter } from './timers/timer-writer.js';

export interface EmbeddedCommitterOptions {
  readonly store: MemoryTreeCommitter;
  readonly log: MemoryEventLog;
  readonly idempotency: MemoryIdempotencyStore;
  readonly roots: MemoryRootIndex;
  readonly metrics?: HostMetrics;
  /** Gates: every wait answer a commit admits leaves its gate record (applied with the commit's events). */
  readonly claims?: AnswerClaims;
  /** Agency: the signals people sent are recorded with the commit that admits them. */
  readonly agency?: SignalAgency;
  readonly controls?: ControlAgency;
  /** Durable timers: each pending timer's instant is recorded with the commit that makes it pending. */
  readonly timers?: TimerWriter;
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
  readonly #tenants = new Map<string, string>();
  readonly #claims: AnswerClaims | undefined;
  readonly #agency: SignalAgency | undefined;
  readonly #controls: ControlAgency | undefined;
  #timers: TimerWriter | undefined;
  /** Per root: the records its commits wrote (gate answers), by suffix. */
  readonly #records = new Map<string, Map<string, string>>();
  /** Per root with any: its Unknown effects as its last commit left them (released trees included). */
  readonly #unknowns = new Map<string, UnknownRef[]>();

  constructor(options: EmbeddedCommitterOptions) {
    super(options.metrics);
    this.#store = options.store;
    this.#log = options.log;
    this.#idempotency = options.idempotency;
    this.#roots = options.roots;
    this.#claims = options.claims;
    this.#agency = options.agency;
    this.#controls = options.controls;
    this.#timers = options.timers;
  }

  /** Sets the timer writer (built after this committer: it reads the records through it). */
  useTimers(timers: TimerWriter): void {
    this.#timers = timers;
  }

  async deleteRecord(rootId: ProcessId, suffix: string): Promise<void> {
    this.#records.get(rootId.toString())?.delete(suffix);
  }

  override released(rootId: string): void {
    this.#timers?.forget(rootId);
  }

  async readRecord(rootId: ProcessId, suffix: string): Promise<string | undefined> {
    return this.#records.get(rootId.toString())?.get(suffix);
  }

  /** Every Unknown effect of every stored tree (`GET /v1/effects?status=unknown`, embedded). */
  async unknownRefs(): Promise<UnknownRef[]> {
    return [...this.#unknowns.values()].flat();
  }

  async readTenant(rootId: ProcessId): Promise<string | undefined> {
    return this.#tenants.get(rootId.toString());
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
    this.#tenants.delete(root);
    this.#records.delete(root);
    this.#unknowns.delete(root);
    this.#log.delete(root);
    await this.#roots.remove(rootEntryOf(head));
    return 'purged';
  }

  protected async checkpoint(checkpoint: TreeCheckpoint, context: CommitContext | undefined): Promise<void> {
    this.#checkNotPurged(checkpoint.rootId);
    const agency = context === undefined ? undefined : await this.#agency?.recordsFor(checkpoint.snapshot, context.events, (suffix) => this.readRecord(checkpoint.rootId, suffix));
    const control = await this.#controls?.recordFor(checkpoint.rootId.toString(), context, () => this.readRecord(checkpoint.rootId, controlRecordSuffix));
    const timers = await this.#timers?.prepare({ snapshot: checkpoint.snapshot, activation: false });
    await this.#store.commitCheckpoint(checkpoint);
    this.#noteUnknowns(checkpoint.snapshot);
    this.#apply(checkpoint.rootId, context, [...(agency?.writes ?? []), ...(control === undefined ? [] : [control.write]), ...(timers?.records ?? [])]);
    await this.#timersAcknowledged(timers);
    agency?.committed();
    control?.committed();
    if (checkpoint.kind === 'start') {
      const root = checkpoint.rootId.toString();
      const intent = intentOf(context?.hostValues);
      if (intent !== undefined) this.#idempotency.set(intent, root);
      const tenant = tenantOfHostValues(context?.hostValues);
      if (tenant !== undefined) this.#tenants.set(root, tenant);
      this.#roots.addNow(rootEntryOf(checkpoint.snapshot));
    }
  }

  protected async effect(boundary: EffectBoundary, context: CommitContext | undefined): Promise<void> {
    this.#checkNotPurged(boundary.rootId);
    const pendingEffectId = boundary.kind === 'pending' ? boundary.effectId.toString() : undefined;
    const timers = await this.#timers?.prepare({ snapshot: boundary.snapshot, activation: false, ...(pendingEffectId === undefined ? {} : { pendingEffectId }) });
    await this.#store.commitEffect(boundary);
    this.#noteUnknowns(boundary.snapshot);
    this.#apply(boundary.rootId, context, timers?.records ?? []);
    await this.#timersAcknowledged(timers);
  }

  protected async activation(activation: TreeActivation, context: CommitContext | undefined): Promise<void> {
    this.#checkNotPurged(activation.rootId);
    const timers = await this.#timers?.prepare({ snapshot: activation.snapshot, activation: true });
    await this.#store.activateTree(activation);
    this.#apply(activation.rootId, context, timers?.records ?? []);
    await this.#timersAcknowledged(timers);
  }

  async #timersAcknowledged(plan: TimerPlan | undefined): Promise<void> {
    if (plan !== undefined) await this.#timers?.acknowledged(plan);
  }

  protected async finalActivation(_replaced: TreeSnapshot, activation: TreeActivation, context: CommitContext, records: readonly HostRecord[]): Promise<void> {
    this.#checkNotPurged(activation.rootId);
    await this.#store.activateTree(activation);
    this.#noteUnknowns(activation.snapshot);
    this.#apply(activation.rootId, context, records);
  }

  #noteUnknowns(tree: TreeSnapshot): void {
    const root = tree.rootId.toString();
    const refs = unknownRefsOf(root, tree.processSnapshots());
    if (refs.length === 0) this.#unknowns.delete(root);
    else this.#unknowns.set(root, refs);
  }

  #checkNotPurged(rootId: ProcessId): void {
    if (this.#purged.has(rootId.toString())) throw treeIncarnationConflict('the tree was purged');
  }

  #apply(rootId: ProcessId, context: CommitContext | undefined, extra: readonly { suffix: string; value: string }[] = []): void {
    const events = context?.events ?? [];
    // A control recorded as pending commits no event, but its record still lands with it.
    if (events.length === 0 && extra.length === 0) return;
    const root = rootId.toString();
    if (events.length > 0) this.#log.append(root, recordsOf(events));
    const writes = [...(this.#claims?.recordsFor(events) ?? []), ...extra];
    if (writes.length === 0) return;
    const records = this.#records.get(root) ?? new Map<string, string>();
    for (const write of writes) records.set(write.suffix, write.value);
    this.#records.set(root, records);
  }
}
