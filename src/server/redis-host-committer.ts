import type { CommitContext, EffectBoundary, EffectRequest, ProcessId, TreeActivation, TreeCheckpoint, TreeSnapshot } from '../kernel/index.js';
import { codedError, HostErrorCode } from '../errors.js';
import { encodeRecord, idempotencyRecordSuffix, type IdempotencyIntent } from '../store/idempotency.js';
import type { DispatchPermits } from '../store/redis/dispatch-permits.js';
import type { RedisIdempotencyStore } from '../store/redis/idempotency-store.js';
import type { RedisTreeCommitter } from '../store/redis/redis-committer.js';
import type { RootIndexEntry } from '../store/root-index.js';
import type { RedisRootIndex } from '../store/redis/root-index.js';
import { type DirectoryMember, hostWriteLimits } from '../store/redis/host-writes.js';
import { CommitterBase, type HostRecord, rootEntryOf, unavailable } from './host-committer.js';
import { intentOf } from './idempotency.js';
import { tenantOfHostValues, tenantRecordSuffix } from './tenancy.js';
import type { HostMetrics } from './metrics.js';
import type { IndexedCommit, WaitIndexPlan, WaitIndexWriter } from './wait-index-writer.js';
import { type CommitOwnership, encodeOwner } from './ownership/owner-record.js';
import { ownerRecordSuffix, predecessorRecordSuffix, successionRecordSuffix } from '../store/redis/keys.js';
import type { RedisProcessDirectory } from '../store/redis/process-directory.js';
import type { AnswerClaims } from './gates/answer-claims.js';
import { gateRecordSuffix } from './gates/gate-record.js';
import { type AgencyPlan, agencyRecordSuffix, type SignalAgency } from './signal-agency.js';
import type { UnknownIndexPlan, UnknownIndexWriter } from './unknown-index-writer.js';
import { type ControlAgency, type ControlPlan, controlRecordSuffix } from './control-agency.js';
import { interruptRecordSuffix, interruptRecordWrite } from './interrupt-record.js';
import type { TimerPlan, TimerWriter } from './timers/timer-writer.js';

export interface RedisHostCommitterOptions {
  readonly store: RedisTreeCommitter;
  readonly idempotency: RedisIdempotencyStore;
  readonly roots: RedisRootIndex;
  readonly metrics?: HostMetrics;
  /** The BullMQ transport's dispatch permits, carried by effect boundaries and activations. */
  readonly permits?: DispatchPermits;
  /** The open-wait index's writer: entries before the commits that open waits, removals after those that close them. */
  readonly waits?: WaitIndexWriter;
  /** Where every node finds a child's tree: written before the commit that adds the child. */
  readonly processes?: RedisProcessDirectory;
  /** Gates: every wait answer a commit admits carries its gate record in that commit. */
  readonly claims?: AnswerClaims;
  /** Agency: the signals people sent are recorded by the commit that admits them. */
  readonly agency?: SignalAgency;
  /** The Unknown-outcome index's writer: entries before the commits that make effects Unknown, removals after. */
  readonly unknowns?: UnknownIndexWriter;
  readonly controls?: ControlAgency;
  /** Durable timers: each pending timer's instant travels in the commit that makes it pending; its index entry precedes it. */
  readonly timers?: TimerWriter;
}

/** The index writes one commit needs (both written before it, settled after it). */
interface IndexPlans {
  readonly waits: WaitIndexPlan | undefined;
  readonly unknowns: UnknownIndexPlan | undefined;
  readonly timers: TimerPlan | undefined;
}

/** Process-directory entries a commit writes itself, and what to note once it is acknowledged. */
interface MemberMapping {
  readonly members: DirectoryMember[];
  mark(): void;
}

/**
 * Redis mode: every commit's events, and a start's idempotency record, travel in the commit's Lua
 * script ({@link RedisCommitContext}). On standalone Redis a start's script also adds the root index
 * entry and the node directory entry, and a commit that adds children their process-directory
 * entries. Directory writes that cannot ride (on a cluster, or an Idempotency-Key start's pointer:
 * `committing`, from this start's reservation; see `RedisIdempotencyStore`) precede the script. They
 * only point at the root; readers ignore them while the root has no head or record, so a failed start
 * leaves nothing that reads as true. After the script, the pointer names the root alone.
 */
export class RedisHostCommitter extends CommitterBase {
  readonly #store: RedisTreeCommitter;
  readonly #idempotency: RedisIdempotencyStore;
  readonly #roots: RedisRootIndex;
  readonly #permits: DispatchPermits | undefined;
  readonly #waits: WaitIndexWriter | undefined;
  readonly #processes: RedisProcessDirectory | undefined;
  readonly #claims: AnswerClaims | undefined;
  readonly #agency: SignalAgency | undefined;
  readonly #unknowns: UnknownIndexWriter | undefined;
  readonly #controls: ControlAgency | undefined;
  readonly #timers: TimerWriter | undefined;
  /** Per unfinished root: the non-root members whose directory entry this node wrote. */
  readonly #mapped = new Map<string, Set<string>>();
  #ownership: CommitOwnership | undefined;

  #onUnknown: ((rootId: string) => void) | undefined;

  constructor(options: RedisHostCommitterOptions) {
    super(options.metrics);
    this.#store = options.store;
    this.#idempotency = options.idempotency;
    this.#roots = options.roots;
    this.#permits = options.permits;
    this.#waits = options.waits;
    this.#processes = options.processes;
    this.#claims = options.claims;
    this.#agency = options.agency;
    this.#unknowns = options.unknowns;
    this.#controls = options.controls;
    this.#timers = options.timers;
  }

  /**
   * Multi-node mode: start and activation commits then write the tree's owner record (this node's
   * stamp, the new incarnation), an activation of a takeover is guarded by the record it replaces,
   * and no commit runs while the node's lease is not valid.
   */
  setOwnership(ownership: CommitOwnership): void {
    this.#ownership = ownership;
    this.setGate(() => ownership.assertCommittable());
  }

  get store(): RedisTreeCommitter {
    return this.#store;
  }

  loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.#store.loadTree(rootId);
  }

  readTenant(rootId: ProcessId): Promise<string | undefined> {
    return this.#store.readRecord(rootId, tenantRecordSuffix);
  }

  readRecord(rootId: ProcessId, suffix: string): Promise<string | undefined> {
    return this.#store.readRecord(rootId, suffix);
  }

  override released(rootId: string): void {
    // The next activation of the tree reads what it needs again (the wait index, the directory).
    this.#waits?.forget(rootId);
    this.#unknowns?.forget(rootId);
    this.#timers?.forget(rootId);
    this.#mapped.delete(rootId);
    this.#agency?.forget(rootId);
    this.#controls?.forget(rootId);
  }

  async purgeTree(rootId: ProcessId): Promise<'purged' | 'absent'> {
    const head = await this.#store.loadTree(rootId);
    const outcome = await this.#store.purgeTree(rootId);
    if (outcome === 'purged' && head !== undefined) {
      await this.#roots.remove(rootEntryOf(head)).catch(() => undefined);
    }
    // The tenant record has no TTL (it lives as long as the tree); a purged tree takes it along.
    if (outcome === 'purged') await this.#store.deleteRecord(rootId, tenantRecordSuffix).catch(() => undefined);
    // So is its owner record (a purged tree has no owner; a leftover would only be swept again).
    if (outcome === 'purged') await this.#store.deleteRecord(rootId, ownerRecordSuffix).catch(() => undefined);
    // And the answer records of its gates (they live as long as the tree's head).
    if (outcome === 'purged' && head !== undefined) {
      for (const suffix of answeredGateSuffixes(head)) await this.#store.deleteRecord(rootId, suffix).catch(() => undefined);
      for (const process of head.processSnapshots()) await this.#store.deleteRecord(rootId, agencyRecordSuffix(process.processId.toString())).catch(() => undefined);
      await this.#store.deleteRecord(rootId, controlRecordSuffix).catch(() => undefined);
      await this.#store.deleteRecord(rootId, interruptRecordSuffix).catch(() => undefined);
      // Its succession records go too: a purged tree has no successor to point at, and a successor's
      // pointer back would name a head that is gone (the tombstone still refuses a re-creation).
      await this.#store.deleteRecord(rootId, successionRecordSuffix).catch(() => undefined);
      await this.#store.deleteRecord(rootId, predecessorRecordSuffix).catch(() => undefined);
    }
    this.#agency?.forget(rootId.toString());
    this.#controls?.forget(rootId.toString());
    this.#waits?.forget(rootId.toString());
    this.#unknowns?.forget(rootId.toString());
    this.#timers?.forget(rootId.toString());
    this.#mapped.delete(rootId.toString());
    if (outcome === 'purged' && head !== undefined && this.#processes !== undefined) {
      const members = head.processSnapshots().filter((process) => !process.processId.equals(rootId));
      await this.#processes.forget(members.map((process) => process.processId.toString())).catch(() => undefined);
    }
    return outcome;
  }

  protected async checkpoint(checkpoint: TreeCheckpoint, context: CommitContext | undefined): Promise<void> {
    if (checkpoint.kind !== 'start') return this.#checkpoint(checkpoint, context);
    try {
      await this.#checkpoint(checkpoint, context);
    } finally {
      this.#ownership?.arrived(checkpoint.rootId.toString());
    }
  }

  async #checkpoint(checkpoint: TreeCheckpoint, context: CommitContext | undefined): Promise<void> {
    const records = [];
    const members: DirectoryMember[] = [];
    const intent = checkpoint.kind === 'start' ? intentOf(context?.hostValues) : undefined;
    const root = checkpoint.rootId.toString();
    if (checkpoint.kind === 'start') {
      const owner = this.#ownerRecord(checkpoint.snapshot);
      if (intent === undefined && !this.#store.spansSlots) {
        // Standalone Redis: the root-index and node-directory entries land in the start commit's own
        // script, atomically with the head and the owner record (no round trip before it). An
        // Idempotency-Key start marks its pointer with its own script first, so it keeps the order below.
        members.push(...this.#roots.members(rootEntryOf(checkpoint.snapshot)));
        const listed = owner === undefined ? undefined : this.#ownership?.listedWith(root);
        if (listed !== undefined) members.push(listed);
      } else {
        // Both directory writes precede the commit and neither needs the other: they travel together
        // (one write and one round trip, not three in a row).
        await this.#store.together(() =>
          Promise.all([this.#directory(root, rootEntryOf(checkpoint.snapshot), intent), owner === undefined ? undefined : this.#owning(root)]),
        );
      }
      if (intent !== undefined) {
        records.push({
          suffix: idempotencyRecordSuffix,
          value: encodeRecord({ keyDigest: intent.keyDigest, requestDigest: intent.requestDigest, processId: root }),
          ttlMs: intent.ttlMs,
        });
      }
      // The tenant lands with the head or not at all: a tree is never readable without its owner.
      const tenant = tenantOfHostValues(context?.hostValues);
      if (tenant !== undefined) records.push({ suffix: tenantRecordSuffix, value: tenant });
      if (owner !== undefined) records.push(owner);
    }
    records.push(...(this.#claims?.recordsFor(context?.events ?? []) ?? []));
    const agency = await this.#agencyWrites(checkpoint.snapshot, context);
    records.push(...(agency?.writes ?? []));
    const control = await this.#controlWrite(checkpoint.rootId, context);
    if (control !== undefined) records.push(control.write);
    // A tree-wide interrupt's barrier, durable with the control (interrupt-record.ts).
    const interrupt = interruptRecordWrite(context?.hostValues, Date.now());
    if (interrupt !== undefined) records.push(interrupt);
    const mapping = await this.#mapMembers(checkpoint.snapshot, false);
    if (mapping !== undefined) members.push(...mapping.members);
    const plan = await this.#indexWaits({ snapshot: checkpoint.snapshot, sequence: checkpoint.sequence, activation: false, events: context?.events ?? [] });
    records.push(...(plan.timers?.records ?? []));
    await this.#store.commitCheckpoint(checkpoint, { events: context?.events ?? [], records, ...(members.length === 0 ? {} : { members }) });
    mapping?.mark();
    agency?.committed();
    control?.committed();
    await this.#indexed(plan);
    if (intent !== undefined) {
      // The record landed with the head: the pointer now names the root alone. Best-effort: a claim that
      // finds the record through the `committing` pointer finishes this step itself.
      await this.#idempotency.promote(intent, root).catch(() => undefined);
    }
  }

  protected async effect(boundary: EffectBoundary, context: CommitContext | undefined): Promise<void> {
    const mapping = await this.#mapMembers(boundary.snapshot, false);
    const pendingEffectId = boundary.kind === 'pending' ? boundary.effectId.toString() : undefined;
    const plan = await this.#indexWaits({ snapshot: boundary.snapshot, sequence: boundary.sequence, activation: false, events: context?.events ?? [] }, pendingEffectId);
    const writes = this.#permits?.writesFor(boundary);
    // A signal_child answering a child's wait commits on the parent's effect boundary.
    const gates = this.#claims?.recordsFor(context?.events ?? []) ?? [];
    // A timer made pending here: its due instant lands with the head (timers/timer-writer.ts).
    const timers = plan.timers?.records ?? [];
    const records = gates.length === 0 && timers.length === 0 ? writes?.records : [...(writes?.records ?? []), ...gates, ...timers];
    const committed = this.#store.commitEffect(boundary, { events: context?.events ?? [], ...writes, ...(records === undefined ? {} : { records }), ...(mapping === undefined ? {} : { members: mapping.members }) });
    // The commit's script is issued by now: the first attempt goes right behind it (dispatch-permits.ts).
    const client = boundary.kind === 'pending' && context?.dispatch !== undefined ? this.#store.orderedClient : undefined;
    const withdraw = client === undefined ? undefined : this.#permits?.handOff(context?.dispatch as EffectRequest, client);
    try {
      await committed;
    } catch (error) {
      withdraw?.();
      throw error;
    }
    mapping?.mark();
    await this.#indexed(plan);
    if (this.#onUnknown !== undefined && boundary.kind === 'settled' && boundary.effect()?.unknown === true) {
      this.#onUnknown(boundary.rootId.toString());
    }
  }

  /**
   * Called (in the committing turn: defer any work) after an effect's first settlement committed as
   * Unknown — the moment a late report already in its inbox can be applied (src/transport/late-reports.ts).
   */
  onUnknownCommitted(listener: (rootId: string) => void): void {
    this.#onUnknown = listener;
  }

  protected async activation(activation: TreeActivation, context: CommitContext | undefined): Promise<void> {
    try {
      await this.#activation(activation, context);
    } finally {
      this.#ownership?.arrived(activation.rootId.toString());
    }
  }

  async #activation(activation: TreeActivation, context: CommitContext | undefined): Promise<void> {
    // A new incarnation here: what this node knew of the tree's agency records is read again.
    this.#agency?.forget(activation.rootId.toString());
    this.#controls?.forget(activation.rootId.toString());
    const owner = this.#ownerRecord(activation.snapshot);
    // The three index writes that must precede the commit do not depend on one another: one round trip.
    const [, plan] = await Promise.all([
      this.#mapMembers(activation.snapshot, true),
      this.#indexWaits({ snapshot: activation.snapshot, sequence: 0n, activation: true, events: context?.events ?? [] }),
      owner === undefined ? undefined : this.#owning(activation.rootId.toString()),
    ]);
    const writes = this.#permits?.writesFor(activation);
    const timers = plan.timers?.records ?? [];
    if (owner === undefined) {
      await this.#store.activateTree(activation, { events: context?.events ?? [], ...writes, ...(timers.length === 0 ? {} : { records: [...(writes?.records ?? []), ...timers] }) });
    } else {
      const records = [...(writes?.records ?? []), ...timers, owner];
      const expected = this.#ownership?.expected(activation.rootId.toString());
      const full = { events: context?.events ?? [], ...writes, records };
      // Ownership moves with the new incarnation; a takeover installs only over the owner it names.
      if (expected === undefined) await this.#store.activateTree(activation, full);
      else await this.#store.takeOverTree(activation, expected, full);
    }
    await this.#indexed(plan);
  }

  protected async finalActivation(replaced: TreeSnapshot, activation: TreeActivation, context: CommitContext, records: readonly HostRecord[]): Promise<void> {
    const root = activation.rootId.toString();
    const plan = await this.#indexWaits({ snapshot: activation.snapshot, sequence: 0n, activation: true, events: context.events });
    await this.#store.activateTree(activation, { events: context.events, records: [...records] });
    this.released(root);
    await this.#indexed(plan);
    // No writer opens or closes a wait of this tree again: the entries of the head it replaced go now
    // (best-effort: a reader drops what is left, as the head moved to another writer).
    await this.#waits?.closeAll(replaced).catch(() => undefined);
  }

  /** The control record a control's checkpoint rewrites (control-agency.ts), read first when not known here. */
  async #controlWrite(rootId: ProcessId, context: CommitContext | undefined): Promise<ControlPlan | undefined> {
    try {
      return await this.#controls?.recordFor(rootId.toString(), context, () => this.#store.readRecord(rootId, controlRecordSuffix));
    } catch (error) {
      throw unavailable('control record read', error);
    }
  }

  /** The agency records a checkpoint rewrites (signals people sent), read first when not known here. */
  async #agencyWrites(snapshot: TreeSnapshot, context: CommitContext | undefined): Promise<AgencyPlan | undefined> {
    if (this.#agency === undefined || context === undefined || context.events.length === 0) return undefined;
    try {
      return await this.#agency.recordsFor(snapshot, context.events, (suffix) => this.#store.readRecord(snapshot.rootId, suffix));
    } catch (error) {
      throw unavailable('agency record read', error);
    }
  }

  /**
   * The directory entries of the members this commit adds (all of them on an activation: this node
   * has not written any), before it is sent, or returned to ride in its script (standalone Redis,
   * not an activation): a tree never holds a child another node cannot find. Failing that, nothing
   * is committed. A finished tree adds none: its bookkeeping is dropped.
   */
  async #mapMembers(snapshot: TreeSnapshot, activation: boolean): Promise<MemberMapping | undefined> {
    if (this.#processes === undefined) return undefined;
    const root = snapshot.rootId.toString();
    if (snapshot.root.isTerminal) {
      this.#mapped.delete(root);
      return undefined;
    }
    if (snapshot.size === 1) return undefined;
    let mapped = activation ? undefined : this.#mapped.get(root);
    if (mapped !== undefined && mapped.size === snapshot.size - 1) return undefined;
    mapped ??= new Set();
    const known = mapped;
    const fresh = snapshot
      .processSnapshots()
      .map((process) => process.processId.toString())
      .filter((processId) => processId !== root && !known.has(processId));
    if (fresh.length === 0) return undefined;
    const mark = (): void => {
      for (const processId of fresh) known.add(processId);
      this.#mapped.set(root, known);
    };
    const entries = fresh.map((processId) => ({ processId, rootId: root }));
    if (!activation && !this.#store.spansSlots && fresh.length <= hostWriteLimits.members) {
      // Standalone Redis: the entries ride in the commit's own script; known once it is acknowledged.
      return { members: this.#processes.members(entries), mark };
    }
    try {
      await this.#processes.record(entries);
    } catch (error) {
      throw unavailable('process directory write', error);
    }
    mark();
    return undefined;
  }

  /** The node directory entry of a tree this commit makes this node's (before it: a superset). */
  async #owning(root: string): Promise<void> {
    try {
      await this.#ownership?.owning(root);
    } catch (error) {
      throw unavailable('node directory write', error);
    }
  }

  /** The owner record a start or activation writes (none before the node joined). */
  #ownerRecord(snapshot: TreeSnapshot): { suffix: string; value: string } | undefined {
    const stamp = this.#ownership?.stamp();
    if (stamp === undefined) return undefined;
    return { suffix: ownerRecordSuffix, value: encodeOwner({ ...stamp, incarnation: snapshot.incarnationId.toString() }) };
  }

  /**
   * The wait, Unknown and timer index entries a commit needs, written (together) before it is sent: a
   * commit that opens a wait, makes an effect Unknown or makes a timer pending is never acknowledged
   * without its entry (the inbox, the Unknown list and the timer sweep stay complete). Failing that,
   * nothing is committed. `pendingEffectId`: the effect a pending boundary makes pending.
   */
  async #indexWaits(commit: IndexedCommit, pendingEffectId?: string): Promise<IndexPlans> {
    const [waits, unknowns, timers] = await Promise.all([
      this.#waits?.prepare(commit).catch((error: unknown) => {
        throw unavailable('wait index write', error);
      }),
      this.#unknowns?.prepare(commit).catch((error: unknown) => {
        throw unavailable('unknown index write', error);
      }),
      this.#timers?.prepare({ snapshot: commit.snapshot, activation: commit.activation, ...(pendingEffectId === undefined ? {} : { pendingEffectId }) }).catch((error: unknown) => {
        throw unavailable('timer index write', error);
      }),
    ]);
    return { waits, unknowns, timers };
  }

  async #indexed(plans: IndexPlans): Promise<void> {
    await Promise.all([
      plans.waits === undefined ? undefined : this.#waits?.acknowledged(plans.waits),
      plans.unknowns === undefined ? undefined : this.#unknowns?.acknowledged(plans.unknowns),
      plans.timers === undefined ? undefined : this.#timers?.acknowledged(plans.timers),
    ]);
  }

  /**
   * The root index entry and the idempotency pointer of a start, before its commit. A start holding a
   * reservation moves the pointer to `committing` (naming the root) only while the reservation is still
   * its own; a start that lost it (expired, taken over) does not commit: `idempotency_key_in_progress`.
   */
  async #directory(root: string, entry: RootIndexEntry, intent: IdempotencyIntent | undefined): Promise<void> {
    let reserved = true;
    try {
      const writes: Promise<unknown>[] = [this.#roots.add(entry)];
      if (intent !== undefined) {
        writes.push(
          this.#idempotency.markCommitting(intent, root).then((held) => {
            reserved = held;
          }),
        );
      }
      await Promise.all(writes);
    } catch (error) {
      throw unavailable('start directory write', error);
    }
    if (!reserved) {
      throw codedError(HostErrorCode.idempotencyKeyInProgress, 'this start lost its Idempotency-Key reservation to another start; retry to get that one');
    }
  }
}

/** The record suffixes of every answered external wait of a tree. */
function answeredGateSuffixes(head: TreeSnapshot): string[] {
  const suffixes: string[] = [];
  for (const process of head.processSnapshots()) {
    for (const wait of process.mailbox.waits()) {
      if (wait.kind === 'external' && wait.answered) suffixes.push(gateRecordSuffix(process.processId.toString(), wait.waitId.toString()));
    }
  }
  return suffixes;
}
