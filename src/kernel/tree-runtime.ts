// Over 500 lines: the owner lane of one tree: every state change is sequenced here, so its invariants stay in one place.
import { EffectBoundary, TreeActivation, TreeCheckpoint, classifyCheckpointCut, type TreeCheckpointKind } from './commit.js';
import type { Deployment } from './deployment.js';
import type { Digest } from './digest.js';
import { EffectRequest, type Effect } from './effect.js';
import { ErrorCode, KernelError } from './errors.js';
import {
  DeltaDropped,
  EffectFinished,
  EffectResolved,
  EffectStarted,
  Event,
  eventNames,
  ProcessFinished,
  RuntimeStopped,
  SignalAccepted,
  StepCommitted,
  StepFinished,
  type EventFact,
  type EventName,
  type StepStatus,
} from './event.js';
import type { Execution, ReplayPolicy } from './definition.js';
import { CallbackPanicError, thrownBy } from './callback-panic-error.js';
import type { ExecutionState } from './execution-state.js';
import { Failure, normalizeDiagnostic } from './failure.js';
import { counterExhausted, stepFailure } from './classified-error.js';
import { EffectAttemptId, type EffectId, type ProcessId, type TreeIncarnationId, type WaitId } from './identity.js';
import { MailboxRecord } from './mailbox.js';
import type { DeltaPipeline, EventPublisher } from './observation.js';
import { saturatingAdd } from './observation.js';
import { maxUint64 } from './wire.js';
import { Payload } from './payload.js';
import { PreparedStep, type PreparedEffect } from './prepared-step.js';
import { PendingControl, ProcessSnapshot, type ProcessSnapshotFields } from './process-snapshot.js';
import { RuntimeError } from './runtime-error.js';
import { Settlement } from './settlement.js';
import type { SignalRequest } from './signal.js';
import { resolveTermination, hasTerminalIntent, type StepOutcome } from './termination-matrix.js';
import type { Termination } from './termination.js';
import { Transition } from './transition.js';
import type { TreeCommitter } from './tree-committer.js';
import type { TreeLimits } from './tree-limits.js';
import { TreeSnapshot } from './tree-snapshot.js';
import type { Clock } from './clock.js';
import { formatUtcTimestamp } from './result.js';
import type { Result } from './result.js';
import { admitTree } from './snapshot-admission.js';
import { interruptedAttempt, terminalSnapshot, withPendingAttemptsUnknown } from './stored-cancellation.js';
import { answerSchemaOf, waitEffectProblem } from './wait.js';
import { SchemaValidationError } from './schema.js';
import { allocateChild, childOwnerProblem, type ChildAdmissionOutcome, type ChildAdmitter } from './child-admission.js';
import { answerChildWaitsAround, satisfyChildWaits } from './child-waits.js';
import { hasRunnableWork } from './parked.js';
import type { ChildSpec, ChildWaitSpec, FrameworkOperation } from './effect.js';
import { ProcessId as ProcessIdentity } from './identity.js';
import { ProcessRelation } from './relation.js';

/** What a tree runtime needs from its Engine. */
export interface RuntimeServices {
  readonly committer: TreeCommitter;
  readonly clock: Clock;
  readonly events: EventPublisher;
  readonly deltas: DeltaPipeline;
  /** Called once when the tree has no live work left and every Process is terminal or stopped. */
  readonly onSettled?: (runtime: TreeRuntime) => void;
  /** Runs a child's admission job (outside the owner lane); absent, every child start is refused. */
  readonly admitChild?: ChildAdmitter;
  /** Called once a child's `child_start` checkpoint is acknowledged, before any of its events. */
  readonly onPublished?: (runtime: TreeRuntime, process: ProcessRuntime) => void;
}

/** Live work of one Process, as inspection reports it. */
export type ProcessWork = 'idle' | 'queued' | 'step' | 'dispatch' | 'admission';

interface Job {
  readonly kind: 'step' | 'dispatch' | 'admission';
  readonly abort: AbortController;
  /** A first dispatch the tree may be released during (`Dispatcher.parkable`, replayed on restore). */
  readonly parkable?: boolean;
}

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
  settled: boolean;
}

/** Runs a payload check of batch entry `index`; a schema violation says which entry it was. */
function inBatch(index: number, check: () => void): void {
  try {
    check();
  } catch (error) {
    throw error instanceof SchemaValidationError ? error.atBatchIndex(index) : error;
  }
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A stopped runtime may reject results nobody awaits; that must not crash the host.
  promise.catch(() => undefined);
  const result: Deferred<T> = {
    promise,
    resolve: (value) => {
      if (result.settled) return;
      result.settled = true;
      resolve(value);
    },
    reject: (error) => {
      if (result.settled) return;
      result.settled = true;
      reject(error);
    },
    settled: false,
  };
  return result;
}

/** A prospective tree, the head and changed members it was derived from, and every member that differs from that head. */
interface ProspectiveCut {
  readonly head: TreeSnapshot;
  /** The members given to `withProcesses` (before child-wait answers), in the order given. */
  readonly fresh: readonly ProcessSnapshot[];
  readonly tree: TreeSnapshot;
  readonly changed: readonly ProcessSnapshot[];
}

/** A replay or resolution waiting for its boundary to commit. */
interface Adjudication {
  readonly effectId: EffectId;
  readonly done: Deferred<void>;
}

/**
 * One Process inside its tree runtime. `snapshot` is always the last acknowledged state; private
 * candidates (a Step's transition, a prepared batch before its first boundary) live only in the
 * runtime's local variables until a commit acknowledges them.
 */
export class ProcessRuntime {
  #snapshot: ProcessSnapshot;
  readonly deployment: Deployment;
  /** The live Execution for `snapshot.committedExecutionState`, when one is cached. */
  execution: Execution | undefined;
  /** The Execution restored from the prepared candidate, adopted with the batch. */
  candidateExecution: Execution | undefined;
  #job: Job | undefined;
  /**
   * Control intent accepted but not yet applied (terminal intents, and a pause that applies at the
   * next Step boundary). Every prospective tree records it as the member's `pending_control`, so
   * an acknowledged control command survives a crash (see `#withControl`).
   */
  #control: PendingControl;
  adjudication: Adjudication | undefined;
  eventSequence = 0n;
  readonly result = deferred<Result>();
  /** Position in its tree's registration order (the order a drive pass visits Processes). */
  order = -1;
  /** The tree's bookkeeping, told of every change of snapshot, control or job. */
  #tracker: ProcessTracker | undefined;

  constructor(snapshot: ProcessSnapshot, deployment: Deployment) {
    this.#snapshot = snapshot;
    this.deployment = deployment;
    this.#control = snapshot.pendingControl;
  }

  get id(): ProcessId {
    return this.#snapshot.processId;
  }

  get snapshot(): ProcessSnapshot {
    return this.#snapshot;
  }

  set snapshot(snapshot: ProcessSnapshot) {
    const previous = this.#snapshot;
    this.#snapshot = snapshot;
    this.#tracker?.changed(this, previous);
  }

  get control(): PendingControl {
    return this.#control;
  }

  set control(control: PendingControl) {
    this.#control = control;
    this.#tracker?.changed(this, this.#snapshot);
  }

  get job(): Job | undefined {
    return this.#job;
  }

  set job(job: Job | undefined) {
    const had = this.#job !== undefined;
    this.#job = job;
    if (had !== (job !== undefined)) this.#tracker?.jobsChanged(job === undefined ? -1 : 1);
  }

  /** Joins a tree's bookkeeping (once, when the tree registers this Process). */
  track(order: number, tracker: ProcessTracker): void {
    this.order = order;
    this.#tracker = tracker;
    tracker.changed(this, undefined);
    if (this.#job !== undefined) tracker.jobsChanged(1);
  }
}

/** What a tree keeps up to date from its Processes' changes, so a Step costs no scan of the tree. */
interface ProcessTracker {
  /** `process`'s snapshot or control changed (`previous` undefined: it just joined). */
  changed(process: ProcessRuntime, previous: ProcessSnapshot | undefined): void;
  jobsChanged(delta: 1 | -1): void;
}

const diagnostics = {
  settlementInvalid: () => Failure.create('contract', 'engine.dispatch.settlement.invalid', 'the dispatcher returned an invalid settlement'),
  panicked: () => Failure.create('panic', 'engine.dispatch.panicked', 'the dispatcher threw a non-error value'),
  deadline: () => Failure.create('external', 'engine.dispatch.deadline', 'the dispatch deadline expired before a settlement'),
  canceled: () => Failure.create('external', 'engine.dispatch.canceled', 'the dispatch was canceled before a settlement'),
  failed: () => Failure.create('external', 'engine.dispatch.failed', 'the dispatcher failed without a settlement; the outcome is unknown'),
  policyPanicked: () =>
    Failure.create('panic', 'engine.effect.recovery.invalid', 'dispatch was permitted before the writer stopped and the replay policy panicked; the outcome is unknown'),
  interrupted: interruptedAttempt,
};

/**
 * The single owner of one root tree: it serialises adoption and commits through one lane, runs
 * Steps and Dispatches outside that lane as discardable jobs, and publishes nothing before the
 * committer acknowledges it. Every state change is one of: compute the next ProcessSnapshot,
 * commit the whole prospective tree, install it on acknowledgment.
 */
export class TreeRuntime {
  readonly rootId: ProcessId;
  readonly #services: RuntimeServices;
  readonly #processes = new Map<string, ProcessRuntime>();
  // Bookkeeping kept current by every change of a Process (see ProcessTracker), so that a Step
  // of one Process scans none of the others, however many there are.
  /** Every Process in registration order (the head's members, then children as published). */
  readonly #ordered: ProcessRuntime[] = [];
  /** The Processes with runnable work (`hasRunnableWork`), in registration order. */
  readonly #withWork: ProcessRuntime[] = [];
  /** Processes whose control intent is not, by identity, the one their snapshot records. */
  readonly #controlDirty = new Set<ProcessRuntime>();
  readonly #childrenByParent = new Map<string, ProcessRuntime[]>();
  #live = 0;
  #jobs = 0;
  /** The event sequences the commit in flight took numbers from (given back if it fails). */
  #sequenceJournal: Map<ProcessRuntime, bigint> | undefined;
  readonly #tracker: ProcessTracker = {
    changed: (process, previous) => this.#track(process, previous),
    jobsChanged: (delta) => {
      this.#jobs += delta;
      // A job's end may settle a joined subtree even where no drive pass follows (a stopped writer).
      if (delta < 0) this.#checkSubtreeWaiters();
    },
  };
  #incarnationId: TreeIncarnationId;
  readonly #treeLimits: TreeLimits;
  #head: TreeSnapshot;
  /** The last derived prospective tree, keyed by the head and the changed members it was built from. */
  #lastProspective: ProspectiveCut | undefined;
  /** Whether every child wait the head satisfies is answered (true once this runtime committed a cut). */
  #headAnswered = false;
  #sequence: bigint;
  #lane: Promise<unknown> = Promise.resolve();
  /** Owner operations queued on the lane and not yet started (a release must not strand one). */
  #queued = 0;
  /** The running control's host values, until its first commit takes them (see `#exclusiveControl`). */
  #controlValues: HostValues | undefined;
  #driveQueued = false;
  #stopped: RuntimeError | undefined;
  /** Set once the tree was released while parked: every later operation refuses. */
  #released: KernelError | undefined;
  #freezes = 0;
  /** Parents whose child admission was in flight when a tree-wide pause was accepted: the child joins paused. */
  readonly #pauseOnPublish = new Map<string, string>();
  #idleWaiters: Array<() => void> = [];
  /** Joins waiting for a Process and its descendants (see whenSubtreeSettled). */
  #subtreeWaiters: Array<{ readonly process: ProcessRuntime; readonly resolve: () => void }> = [];
  #settledNotified = false;

  constructor(services: RuntimeServices, head: TreeSnapshot, sequence: bigint, deployments: ReadonlyMap<string, Deployment>) {
    this.#services = services;
    this.rootId = head.rootId;
    this.#incarnationId = head.incarnationId;
    this.#treeLimits = head.treeLimits;
    this.#head = head;
    this.#sequence = sequence;
    for (const snapshot of head.processSnapshots()) {
      const deployment = deployments.get(snapshot.processId.toString());
      if (deployment === undefined) throw new KernelError(ErrorCode.invalidTreeSnapshot, `no deployment for ${snapshot.processId}`);
      this.#register(new ProcessRuntime(snapshot, deployment));
    }
  }

  #register(process: ProcessRuntime): void {
    this.#processes.set(process.id.toString(), process);
    const parentId = process.snapshot.relation.parentId;
    if (parentId !== undefined) {
      const siblings = this.#childrenByParent.get(parentId.toString());
      if (siblings === undefined) this.#childrenByParent.set(parentId.toString(), [process]);
      else siblings.push(process);
    }
    process.track(this.#ordered.length, this.#tracker);
    this.#ordered.push(process);
  }

  /** Brings the bookkeeping up to date with `process`'s snapshot and control. */
  #track(process: ProcessRuntime, previous: ProcessSnapshot | undefined): void {
    const snapshot = process.snapshot;
    const wasLive = previous !== undefined && !previous.isTerminal;
    if (wasLive !== !snapshot.isTerminal) this.#live += wasLive ? -1 : 1;
    const at = this.#withWorkIndex(process.order);
    const listed = this.#withWork[at] === process;
    const runnable = hasRunnableWork(snapshot, process.control);
    if (runnable && !listed) this.#withWork.splice(at, 0, process);
    else if (!runnable && listed) this.#withWork.splice(at, 1);
    if (!snapshot.isTerminal && process.control !== snapshot.pendingControl) this.#controlDirty.add(process);
    else this.#controlDirty.delete(process);
  }

  /** The first position in #withWork whose Process registered at `order` or later. */
  #withWorkIndex(order: number): number {
    let low = 0;
    let high = this.#withWork.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.#withWork[middle] as ProcessRuntime).order < order) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  get head(): TreeSnapshot {
    return this.#head;
  }

  get incarnationId(): TreeIncarnationId {
    return this.#incarnationId;
  }

  get stopped(): RuntimeError | undefined {
    return this.#stopped;
  }

  process(id: ProcessId): ProcessRuntime | undefined {
    return this.#processes.get(id.toString());
  }

  processes(): ProcessRuntime[] {
    return [...this.#ordered];
  }

  /** True while any Process is live or any job still runs. */
  get active(): boolean {
    if (this.#stopped !== undefined) return this.#jobs > 0;
    return this.#live > 0 || this.#jobs > 0;
  }

  workOf(process: ProcessRuntime): ProcessWork {
    if (process.job !== undefined) return process.job.kind;
    if (this.#stopped !== undefined || process.snapshot.isTerminal) return 'idle';
    return this.#runnable(process) ? 'queued' : 'idle';
  }

  // -------------------------------------------------------------------------------------------
  // The owner lane

  /** Runs `fn` after every earlier owner operation; never call from inside the lane. */
  #exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    this.#queued += 1;
    const run = this.#lane.then(() => {
      this.#queued -= 1;
      return fn();
    });
    this.#lane = run.catch(() => undefined);
    return run;
  }

  /**
   * A control's turn: its first commit (the one that records the control) carries `hostValues` to the
   * committer (`CommitContext.hostValues`), so the host can write what it knows of the control (who
   * sent it) atomically with it. A control that commits nothing hands them to nobody.
   */
  #exclusiveControl<T>(hostValues: HostValues | undefined, fn: () => Promise<T>): Promise<T> {
    if (hostValues === undefined) return this.#exclusive(fn);
    return this.#exclusive(async () => {
      this.#controlValues = hostValues;
      try {
        return await fn();
      } finally {
        this.#controlValues = undefined;
      }
    });
  }

  /**
   * The committed events announcing freshly installed Processes (`agent.process.started` or
   * `agent.process.restored`); they ride in the start or activation commit and are published by
   * `begin` once it is acknowledged.
   */
  openingEvents(name: EventName): Event[] {
    return this.processes().flatMap((process) => this.#event(process, name) ?? []);
  }

  /** Publishes the opening events once their commit is acknowledged, then begins driving. */
  begin(openingEvents: readonly Event[]): void {
    for (const event of openingEvents) this.#publish(event);
    for (const process of this.processes()) {
      const result = process.snapshot.result();
      if (result !== undefined) process.result.resolve(result);
    }
    // A writer that died between a parent's terminal commit and its children's leaves them live
    // under a finished parent; the cascade is derived from the head again (it commits with them).
    for (const process of this.processes()) if (process.snapshot.isTerminal) this.#cascadeFinished(process);
    this.wake();
  }

  /** Schedules one drive pass of the owner lane. */
  wake(): void {
    if (this.#driveQueued || this.#stopped !== undefined || this.#released !== undefined) return;
    this.#driveQueued = true;
    void this.#exclusive(async () => {
      this.#driveQueued = false;
      await this.#drive();
    }).catch((error: unknown) => this.#fail(error));
  }

  async #drive(): Promise<void> {
    let progressed = true;
    while (progressed && this.#stopped === undefined) {
      progressed = false;
      // A pass visits, in registration order, each Process that has runnable work when its turn
      // comes (#advance does nothing for the others), and none published during the pass: the
      // bookkeeping finds the next one, so a pass costs nothing per parked Process.
      const end = this.#ordered.length;
      for (let process = this.#nextWithWork(-1, end); process !== undefined; process = this.#nextWithWork(process.order, end)) {
        if (this.#stopped !== undefined) return;
        if (await this.#advance(process)) progressed = true;
      }
    }
    this.#checkIdle();
  }

  /** Takes one action for `process` if one is due; returns whether anything changed. */
  async #advance(process: ProcessRuntime): Promise<boolean> {
    if (process.job !== undefined || process.snapshot.isTerminal) return false;
    const snapshot = process.snapshot;
    const prepared = snapshot.prepared;
    if (hasTerminalIntent(process.control)) {
      await this.#terminate(process, { kind: 'none' });
      return true;
    }
    if (this.#freezes > 0) return false;
    if (prepared !== undefined) return this.#advanceFrontier(process, prepared);
    if (process.control.pauseReason !== undefined && (snapshot.status === 'running' || snapshot.status === 'waiting')) {
      await this.#applyPause(process);
      return true;
    }
    if (snapshot.status !== 'running') return false;
    // Work stops before a uint64 counter wraps (kernel-contract §4.12): no Step 2^64.
    if (snapshot.committedSteps >= maxUint64) {
      await this.#terminate(process, { kind: 'failed', failure: counterExhaustedFailure('the step counter') });
      return true;
    }
    // Grants to children are debited permanently, so they count as spent (kernel-contract §4.12).
    if (!snapshot.budget.steps.admits(snapshot.committedSteps + snapshot.allocatedResources.steps + 1n)) {
      await this.#terminate(process, {
        kind: 'failed',
        failure: Failure.create('execution', 'engine.limit.steps', 'the steps budget admits no further Step'),
      });
      return true;
    }
    this.#startStep(process);
    return true;
  }

  #runnable(process: ProcessRuntime): boolean {
    return hasRunnableWork(process.snapshot, process.control);
  }

  /** The first Process with runnable work registered after `order` and before `end`. */
  #nextWithWork(order: number, end: number): ProcessRuntime | undefined {
    const next = this.#withWork[this.#withWorkIndex(order + 1)];
    return next !== undefined && next.order < end ? next : undefined;
  }

  #checkSubtreeWaiters(): void {
    if (this.#subtreeWaiters.length === 0) return;
    const waiting = this.#subtreeWaiters;
    this.#subtreeWaiters = waiting.filter((waiter) => !this.#subtreeSettled(waiter.process));
    for (const waiter of waiting) if (!this.#subtreeWaiters.includes(waiter)) waiter.resolve();
  }

  #checkIdle(): void {
    this.#checkSubtreeWaiters();
    if (this.#jobs > 0) return;
    // Under a freeze only terminal intent still advances (see #advance): other runnable work is
    // held at its boundary and must not keep a capture waiting for it — that would never end.
    const pending = (process: ProcessRuntime) =>
      this.#runnable(process) && !process.snapshot.isTerminal && (this.#freezes === 0 || hasTerminalIntent(process.control));
    if (this.#stopped === undefined && this.#withWork.some(pending)) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const wake of waiters) wake();
    if (!this.active && !this.#settledNotified) {
      this.#settledNotified = true;
      this.#services.onSettled?.(this);
    }
  }

  /**
   * Resolves once `process` and every descendant has finished its owned work in this runtime:
   * each is terminal with its result published (or the writer stopped) and runs no job — a
   * child in admission is its parent's job (the seed's Process.Join). Siblings and ancestors
   * may still be working.
   */
  whenSubtreeSettled(process: ProcessRuntime): Promise<void> {
    return new Promise((resolve) => {
      this.#subtreeWaiters.push({ process, resolve });
      void this.#exclusive(() => this.#checkIdle());
    });
  }

  #subtreeSettled(process: ProcessRuntime): boolean {
    const pending = [process];
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (next.job !== undefined) return false;
      // A stopped or released writer publishes no more results: only its jobs are awaited.
      const ended = this.#stopped !== undefined || this.#released !== undefined;
      if (!ended && !(next.snapshot.isTerminal && next.result.settled)) return false;
      pending.push(...(this.#childrenByParent.get(next.id.toString()) ?? []));
    }
    return true;
  }

  /** Resolves once no job runs and nothing is runnable (used by capture, release and the Engine's close). */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.#idleWaiters.push(resolve);
      this.wake();
      if (this.#stopped !== undefined || this.#driveQueued === false) {
        void this.#exclusive(() => this.#checkIdle());
      }
    });
  }

  // -------------------------------------------------------------------------------------------
  // Commits

  /** Whether the tree with `replacements` fits its snapshot byte limits (live reservations included). */
  #fits(replacements: readonly ProcessSnapshot[]): boolean {
    try {
      admitTree(this.#prospective(replacements));
      return true;
    } catch (error) {
      if (error instanceof KernelError && error.code === ErrorCode.resourceLimitExceeded) return false;
      throw error;
    }
  }

  #prospective(replacements: readonly ProcessSnapshot[]): TreeSnapshot {
    return this.#prospectiveCut(replacements).tree;
  }

  /**
   * The prospective tree with `replacements` (each member recording its runtime's control intent),
   * and the members that differ from the head. It is derived from the head: only changed members
   * are re-checked, the rest keep their cached bytes. Admission (#fits) and the commit ask for the
   * same tree, so the last one is reused while the head and the changed members are the same.
   */
  #prospectiveCut(replacements: readonly ProcessSnapshot[]): ProspectiveCut {
    const head = this.#head;
    const derived = head.incarnationId.equals(this.#incarnationId) && head.treeLimits === this.#treeLimits && this.#headAnswered;
    if (derived) {
      // Each runtime's snapshot is the head's member (installed together), so a member is fresh
      // when a replacement or its control intent makes it differ from that snapshot.
      // Only the replacements and the members whose control intent their snapshot lacks can
      // differ from the head; they keep registration order, new members come last.
      const given = new Map(replacements.map((snapshot) => [snapshot.processId.toString(), snapshot]));
      const members: ProcessRuntime[] = [];
      for (const key of given.keys()) {
        const process = this.#processes.get(key);
        if (process !== undefined) members.push(process);
      }
      for (const process of this.#controlDirty) if (!given.has(process.id.toString())) members.push(process);
      members.sort((a, b) => a.order - b.order);
      const byId = new Map<string, ProcessSnapshot>();
      for (const process of members) {
        const key = process.id.toString();
        const next = this.#withControl(given.get(key) ?? process.snapshot);
        given.delete(key);
        if (next !== process.snapshot) byId.set(key, next);
      }
      for (const [key, snapshot] of given) byId.set(key, this.#withControl(snapshot)); // new members
      const fresh = [...byId.values()];
      const last = this.#lastProspective;
      if (last?.head === head && last.fresh.length === fresh.length && last.fresh.every((snapshot, index) => snapshot === fresh[index])) return last;
      let tree = head.withProcesses(fresh);
      // Every prospective tree answers the child waits it satisfies, so an answer commits atomically
      // with the child facts that satisfy it (kernel-contract §4.15); the head's were all answered.
      const answered = answerChildWaitsAround(tree, fresh);
      if (answered.length > 0) {
        tree = tree.withProcesses(answered);
        for (const snapshot of answered) byId.set(snapshot.processId.toString(), snapshot);
      }
      // Canonical order, as a full scan of the tree would visit them (results and cascades follow it).
      const changed = [...byId.values()].sort((a, b) => a.relation.depth - b.relation.depth || a.processId.compare(b.processId));
      const cut: ProspectiveCut = { head, fresh, tree, changed };
      this.#lastProspective = cut;
      return cut;
    }
    // A head this runtime did not commit (start or restore) gets the full pass once.
    const byId = new Map(this.processes().map((process) => [process.id.toString(), process.snapshot]));
    for (const snapshot of replacements) byId.set(snapshot.processId.toString(), snapshot);
    for (const [id, snapshot] of byId) byId.set(id, this.#withControl(snapshot));
    satisfyChildWaits(byId);
    const tree = TreeSnapshot.create({ incarnationId: this.#incarnationId, treeLimits: this.#treeLimits, processes: byId.values() });
    const changed = tree.processSnapshots().filter((snapshot) => head.process(snapshot.processId) !== snapshot);
    return { head, fresh: [], tree, changed };
  }

  /**
   * `snapshot` recording its runtime's accepted control intent as `pending_control`: every
   * boundary keeps what was accepted and not yet applied, so a restore applies it before any Step
   * or dispatch. A pause intent is recorded only while it can still apply (running or waiting).
   */
  #withControl(snapshot: ProcessSnapshot): ProcessSnapshot {
    const process = this.#processes.get(snapshot.processId.toString());
    if (process === undefined || snapshot.isTerminal) return snapshot;
    // Identity first: this runs for every member of every prospective tree, and the installed
    // snapshot normally holds the very control object its runtime does.
    if (process.control === snapshot.pendingControl) return snapshot;
    const pausable = snapshot.status === 'running' || snapshot.status === 'waiting';
    const control = pausable ? process.control : process.control.without('pauseReason');
    if (control === snapshot.pendingControl) return snapshot;
    if (!control.equals(snapshot.pendingControl)) return snapshot.with({ pendingControl: control });
    if (pausable) process.control = snapshot.pendingControl; // equal values: share one object from now on
    return snapshot;
  }

  /**
   * Commits a checkpoint or Effect boundary carrying `replacements`, then installs them and
   * publishes `events`. A committer failure stops the writer (RuntimeError) and is rethrown.
   */
  async #commit(
    replacements: readonly ProcessSnapshot[],
    boundary:
      | { kind: 'checkpoint'; checkpoint?: TreeCheckpointKind }
      | { kind: 'effect'; processId: ProcessId; effectId: EffectId; resolution: boolean; adopts?: PreparedStep; dispatch?: EffectRequest },
    events: (prospective: TreeSnapshot) => Array<Event | undefined> = () => [],
    unresolvedOnFailure: readonly EffectId[] = [],
    added: readonly ProcessRuntime[] = [],
  ): Promise<void> {
    const { tree: prospective, changed: changedMembers } = this.#prospectiveCut(replacements);
    try {
      admitTree(prospective);
    } catch (error) {
      // Callers admit what can still be refused (a Step candidate fails its Process, a signal batch
      // or a resolution is rejected). Capacity failing here — an external result that cannot fit —
      // stops the writer naming the uncertain Effect (kernel-contract §4.18, seed "Signals,
      // lifecycle, and bounds").
      throw this.#stop(error, unresolvedOnFailure);
    }
    if (this.#sequence >= maxUint64) {
      // No commit can record anything any more, a logical failure included: only a new activation
      // (a restore, which restarts the sequence) can continue this tree.
      throw this.#stop(new KernelError(ErrorCode.counterExhausted, 'the commit sequence of this writer is exhausted'), unresolvedOnFailure);
    }
    const sequence = this.#sequence + 1n;
    const previous = this.#head.digest;
    const commit =
      boundary.kind === 'effect'
        ? EffectBoundary.create({
            sequence,
            resolution: boundary.resolution,
            processId: boundary.processId,
            effectId: boundary.effectId,
            previous,
            snapshot: prospective,
            ...(boundary.adopts === undefined ? {} : { adopts: boundary.adopts }),
          })
        : TreeCheckpoint.create({
            kind: boundary.checkpoint ?? classifyCheckpointCut(prospective.processSnapshots()),
            sequence,
            previous,
            snapshot: prospective,
          });
    // Committed events take their process sequences now (the committer may store them with the
    // head); an unacknowledged commit publishes none of them, so give the numbers back first:
    // per-Process sequences stay gap-free (kernel-contract §4.19). Nothing else numbers events of
    // this tree while the owner lane awaits the committer.
    const sequences = new Map<ProcessRuntime, bigint>();
    this.#sequenceJournal = sequences;
    let published: Event[];
    try {
      published = events(prospective).filter((event): event is Event => event !== undefined);
    } finally {
      this.#sequenceJournal = undefined;
    }
    // A control's host values ride in its first commit only.
    const hostValues = this.#controlValues;
    this.#controlValues = undefined;
    const dispatch = boundary.kind === 'effect' ? boundary.dispatch : undefined;
    const context = { events: published, ...(hostValues === undefined ? {} : { hostValues }), ...(dispatch === undefined ? {} : { dispatch }) };
    try {
      if (commit instanceof EffectBoundary) await this.#services.committer.commitEffect(commit, context);
      else await this.#services.committer.commitCheckpoint(commit, context);
    } catch (error) {
      for (const [process, sequence] of sequences) process.eventSequence = sequence;
      throw this.#stop(thrownBy(commit instanceof EffectBoundary ? 'TreeCommitter.commitEffect' : 'TreeCommitter.commitCheckpoint', error), unresolvedOnFailure);
    }
    this.#head = prospective;
    this.#headAnswered = true;
    this.#sequence = sequence;
    for (const process of added) {
      this.#register(process);
      this.#services.onPublished?.(this, process);
    }
    // Install from the prospective tree, not only the replacements: child-wait answers may have
    // changed other members (see #prospective).
    const changed: ProcessRuntime[] = [];
    for (const snapshot of changedMembers) {
      const process = this.#processes.get(snapshot.processId.toString());
      if (process === undefined || process.snapshot === snapshot) continue;
      if (!process.snapshot.isTerminal && snapshot.isTerminal) changed.push(process);
      process.snapshot = snapshot;
    }
    for (const event of published) this.#publish(event);
    for (const process of changed) {
      const result = process.snapshot.result();
      if (result !== undefined) process.result.resolve(result);
      this.#cascadeFinished(process);
    }
  }

  /**
   * A finished Process leaves no live child behind: each live descendant gets the matching parent
   * intent (kill, parent deadline, or parent cancellation for every other end) and terminates
   * through its own lifecycle (kernel-contract §4.11).
   */
  #cascadeFinished(process: ProcessRuntime): void {
    const cause = process.snapshot.termination?.cause;
    const reason = `the parent finished (${cause ?? 'terminal'})`;
    if (cause === 'engine_kill') this.#cascade(process, { killReason: reason });
    else if (cause === 'host_deadline' || cause === 'parent_deadline') this.#cascade(process, { deadline: { owner: 'parent', reason } });
    else this.#cascade(process, { cancellation: { owner: 'parent', reason } });
  }

  /** Records `intent` on every live descendant of `process` and aborts their owned work. */
  #cascade(process: ProcessRuntime, intent: TerminalIntent): void {
    for (const child of this.#childrenOf(process.id)) {
      if (child.snapshot.isTerminal) continue;
      this.#recordIntent(child, intent);
      this.#cascade(child, intent);
    }
  }

  #childrenOf(id: ProcessId): ProcessRuntime[] {
    return [...(this.#childrenByParent.get(id.toString()) ?? [])];
  }

  /** Adds `change` to the Process's recorded intents (the first of each kind wins) and aborts its job. */
  #recordIntent(process: ProcessRuntime, change: TerminalIntent): void {
    this.#noteIntent(process, change);
    this.#abortOwnedWork(process);
  }

  /** Adds `change` to the Process's recorded intents (the first of each kind wins); whether anything changed. */
  #noteIntent(process: ProcessRuntime, change: TerminalIntent): boolean {
    const control = process.control;
    process.control = control.with({
      killReason: control.killReason ?? change.killReason,
      cancellation: control.cancellation ?? change.cancellation,
      deadline: control.deadline ?? change.deadline,
    });
    return !process.control.equals(control);
  }

  /** Aborts the Process's owned work under its recorded terminal intent. */
  #abortOwnedWork(process: ProcessRuntime): void {
    // A deadline aborts owned work as a timeout, so an interrupted dispatch is classified
    // `engine.dispatch.deadline` rather than `engine.dispatch.canceled` (kernel-contract §4.5).
    const deadline = process.control.killReason === undefined && process.control.deadline !== undefined;
    process.job?.abort.abort(
      deadline ? new DOMException('the deadline passed', 'TimeoutError') : new KernelError(ErrorCode.processFinished, 'terminal intent'),
    );
  }

  /**
   * Stops this writer: every live Process gets a RuntimeError naming the last acknowledged head;
   * nothing terminal is invented.
   */
  #stop(cause: unknown, unresolved: readonly EffectId[] = []): RuntimeError {
    if (this.#stopped !== undefined) return this.#stopped;
    const root = this.#processes.get(this.rootId.toString()) as ProcessRuntime;
    const unknown = this.processes().flatMap((process) => process.snapshot.prepared?.unknownEffectIds() ?? []);
    const error = new RuntimeError({
      processId: root.id,
      incarnationId: this.#incarnationId,
      headDigest: this.#head.digest,
      unresolvedEffectIds: [...unresolved, ...unknown],
      cause,
    });
    this.#stopped = error;
    for (const process of this.processes()) {
      process.job?.abort.abort(error);
      const own = new RuntimeError({
        processId: process.id,
        incarnationId: this.#incarnationId,
        headDigest: this.#head.digest,
        unresolvedEffectIds: [...unresolved, ...(process.snapshot.prepared?.unknownEffectIds() ?? [])],
        cause,
      });
      if (!process.result.settled) {
        process.result.reject(own);
        this.#publish(this.#event(process, eventNames.runtimeStopped, { fact: RuntimeStopped.create(own.classification()) }));
      }
      process.adjudication?.done.reject(own);
      process.adjudication = undefined;
    }
    this.#checkIdle();
    return error;
  }

  /** An unexpected error inside the lane: stop rather than continue from unknown state. */
  #fail(error: unknown): void {
    if (this.#stopped === undefined) this.#stop(error);
  }

  #ensureRunning(): void {
    if (this.#released !== undefined) throw this.#released;
    if (this.#stopped !== undefined) throw this.#stopped;
  }

  // -------------------------------------------------------------------------------------------
  // Events

  #event(
    process: ProcessRuntime,
    name: EventName,
    scope: { stepSequence?: bigint; effectId?: EffectId; fact?: EventFact } = {},
  ): Event | undefined {
    // An exhausted publication sequence omits the event and counts it; execution goes on (the
    // seed's ObservationFailures.DroppedEvents).
    if (process.eventSequence >= maxUint64) {
      this.#services.events.recordDroppedEvent();
      return undefined;
    }
    if (this.#sequenceJournal !== undefined && !this.#sequenceJournal.has(process)) this.#sequenceJournal.set(process, process.eventSequence);
    process.eventSequence += 1n;
    return Event.create({
      processSequence: process.eventSequence,
      processId: process.id,
      deploymentRef: process.snapshot.deploymentRef,
      relation: process.snapshot.relation,
      treeIncarnationId: this.#incarnationId,
      stepSequence: scope.stepSequence,
      effectId: scope.effectId,
      name,
      occurredAt: this.#services.clock.now(),
      payload: scope.fact,
    });
  }

  #publish(event: Event | undefined): void {
    if (event !== undefined) this.#services.events.publish(event);
  }

  #now(): string {
    return formatUtcTimestamp(this.#services.clock.now());
  }

  // -------------------------------------------------------------------------------------------
  // Steps

  #startStep(process: ProcessRuntime): void {
    const snapshot = process.snapshot;
    const stepSequence = snapshot.committedSteps + 1n;
    const window = snapshot.mailbox.pendingSignals();
    const abort = new AbortController();
    process.job = { kind: 'step', abort };
    this.#publish(this.#event(process, eventNames.stepStarted, { stepSequence }));
    const started = performance.now();
    void this.#computeStep(process, window, abort.signal).then((outcome) => {
      const completed = performance.now();
      void this.#exclusive(async () => {
        const adopted = performance.now();
        process.job = undefined;
        // An attempt event asserts no committed change, so the attempt closes before the commit
        // that follows from it; that commit's events (agent.process.finished included) come last.
        const finished = (status: StepStatus): void => {
          this.#publish(
            this.#event(process, eventNames.stepFinished, {
              stepSequence,
              fact: StepFinished.create({
                status,
                workDurationNs: BigInt(Math.round((completed - started) * 1e6)),
                adoptionDelayNs: BigInt(Math.round((adopted - completed) * 1e6)),
              }),
            }),
          );
        };
        await this.#finishStep(process, stepSequence, window.length, outcome, finished);
        await this.#drive();
      }).catch((error: unknown) => this.#fail(error));
    });
  }

  /** Runs the Step and restore-before-adopt outside the owner; never throws. */
  async #computeStep(process: ProcessRuntime, window: readonly import('./signal.js').Signal[], signal: AbortSignal): Promise<StepResult> {
    const definition = process.deployment.definition;
    let execution = process.execution;
    process.execution = undefined; // a Step mutates its instance; a discarded one must never be reused
    try {
      execution ??= await definition.restore(process.snapshot.committedExecutionState, signal);
    } catch (error) {
      return { kind: 'error', failure: classified(error, 'engine.committed_execution_state.invalid', 'contract', 'the committed execution state does not restore') };
    }
    let transition: Transition;
    try {
      transition = await execution.step(signal, window);
    } catch (error) {
      return { kind: 'error', failure: stepErrorFailure(error) };
    }
    // A Strategy bug is the Process's contract failure, never the writer's (kernel-contract §4.18).
    if (!(transition instanceof Transition)) {
      return { kind: 'error', failure: Failure.create('contract', 'execution.transition.invalid', 'the step did not return a Transition') };
    }
    let candidate: ExecutionState;
    try {
      candidate = execution.snapshot();
    } catch (error) {
      return { kind: 'error', failure: classified(error, 'execution.snapshot.failed', 'execution', 'the candidate state could not be captured') };
    }
    let restored: Execution;
    try {
      restored = await definition.restore(candidate, signal);
      if (restored === undefined || restored === null) throw new Error('restore returned no Execution');
    } catch (error) {
      return { kind: 'error', failure: classified(error, 'execution.snapshot.unrestorable', 'execution', 'the candidate state does not restore') };
    }
    return { kind: 'candidate', transition, candidate, restored };
  }

  /**
   * Owner side of a Step: discard, fail, prepare or adopt. `finished` publishes the attempt's
   * `agent.step.finished` once its status is known and before any commit that follows from it.
   */
  async #finishStep(
    process: ProcessRuntime,
    stepSequence: bigint,
    windowLength: number,
    outcome: StepResult,
    finished: (status: StepStatus) => void,
  ): Promise<void> {
    if (this.#stopped !== undefined || hasTerminalIntent(process.control)) {
      // Terminal intent applies at this Step boundary; the candidate is discarded unadopted.
      finished('discarded');
      return;
    }
    if (process.control.pauseReason !== undefined && outcome.kind === 'candidate' && outcome.transition.kind === 'wait') {
      // An accepted pause discards only an unadopted Wait candidate, without consuming its
      // Signals; any other candidate is adopted and the pause applies after it (the seed's Pause).
      finished('discarded');
      return;
    }
    if (outcome.kind === 'error') {
      finished('failed');
      await this.#terminate(process, { kind: 'failed', failure: outcome.failure });
      return;
    }
    const problem = this.#preparationProblem(process, outcome.transition, windowLength);
    if (problem !== undefined) {
      finished('failed');
      await this.#terminate(process, { kind: 'failed', failure: problem });
      return;
    }
    const { transition, candidate, restored } = outcome;
    if (transition.effects.length === 0) {
      finished('succeeded');
      await this.#adopt(process, stepSequence, transition, candidate, restored, []);
      return;
    }
    const prepared = PreparedStep.prepare(process.id, stepSequence, candidate, transition);
    const counters = process.snapshot.counters;
    const next = process.snapshot.with({
      prepared,
      counters: { ...counters, preparedEffects: counters.preparedEffects + BigInt(transition.effects.length) },
    });
    if (!this.#fits([next])) {
      // kernel-contract §4.4 step 6: a batch whose prepared cut cannot fit fails the Process.
      finished('failed');
      await this.#terminate(process, { kind: 'failed', failure: snapshotLimitFailure() });
      return;
    }
    process.candidateExecution = restored;
    this.#publish(this.#event(process, eventNames.stepPrepared, { stepSequence }));
    finished('succeeded');
    // The prepared batch stays private until its first boundary commits it.
    await this.#runFrontier(process, next);
  }

  /** kernel-contract §4.4: the checks a candidate passes before anything is recorded. */
  #preparationProblem(process: ProcessRuntime, transition: Transition, windowLength: number): Failure | undefined {
    const snapshot = process.snapshot;
    const consumed = transition.consumedSignals;
    if (consumed > windowLength) {
      return Failure.create('contract', 'execution.transition.invalid', `the transition consumes ${consumed} of ${windowLength} delivered signals`);
    }
    const effects = transition.effects;
    // One open wait per key (kernel-contract §4.9): two wait Effects on one key, or one on a key whose
    // wait is still open after this Step's consumption, could never be installed.
    const remaining = snapshot.mailbox.consume(consumed);
    const keys = new Set<string>();
    for (const effect of effects) {
      if (effect.target !== 'framework') continue;
      const operation = effect.frameworkOperation();
      const key = operation.operation === 'wait' ? operation.key : operation.operation === 'wait_children' ? operation.spec.key : undefined;
      if (key === undefined) continue;
      if (keys.has(key.toString()) || remaining.openWaitFor(key) !== undefined) {
        return Failure.create('contract', 'execution.transition.invalid', `two open waits on key ${key.toString()}`);
      }
      keys.add(key.toString());
    }
    for (const effect of effects) {
      if (effect.target === 'dispatcher') {
        if (process.deployment.dispatcher === undefined) {
          return Failure.create('contract', 'execution.effect.invalid', 'a dispatcher effect needs a deployment with a dispatcher');
        }
        if (!snapshot.capabilities.allows(effect.requiredCapabilities)) {
          return Failure.create('contract', 'engine.capability.denied', `the process lacks capabilities ${effect.requiredCapabilities.values().join(', ')}`);
        }
      } else {
        const operation = effect.frameworkOperation();
        if (operation.operation === 'wait') {
          const invalid = waitEffectProblem(process.deployment.descriptor, operation.key, operation.answerSchema);
          if (invalid !== undefined) return Failure.create('contract', 'execution.effect.invalid', invalid);
        }
        // Child operations are checked at the frontier, against the tree as it is then.
      }
    }
    const count = BigInt(effects.length);
    if (snapshot.counters.preparedEffects + count > maxUint64) return counterExhaustedFailure('the prepared effects counter');
    const allocated = snapshot.allocatedResources;
    if (!snapshot.budget.effects.admits(snapshot.counters.preparedEffects + allocated.effects + count)) {
      return Failure.create('execution', 'engine.limit.effects', 'the effects budget cannot admit this batch');
    }
    const accepted = BigInt(snapshot.mailbox.length);
    if (!snapshot.budget.signals.admits(accepted + allocated.signals + count)) {
      return Failure.create('execution', 'engine.limit.signals', 'the signals budget cannot admit the batch settlements');
    }
    if (BigInt(snapshot.mailbox.pendingCount - consumed) + count > this.#treeLimits.maxPendingSignals) {
      return Failure.create('execution', 'engine.limit.signals', 'the mailbox cannot hold the batch settlements');
    }
    if (transition.kind === 'complete') {
      try {
        process.deployment.descriptor.validateOutput(transition.output as Payload);
      } catch (error) {
        return Failure.create('contract', 'execution.output.invalid', normalizeDiagnostic(error instanceof Error ? error.message : 'the output does not satisfy the descriptor'));
      }
    }
    if (transition.kind === 'wait') {
      const waitId = transition.waitId as WaitId;
      const wait = snapshot.mailbox.consume(consumed).wait(waitId);
      if (wait === undefined || wait.closed) {
        return Failure.create('contract', 'execution.transition.invalid', `wait ${waitId} is not an open wait of this process`);
      }
    }
    return undefined;
  }

  /**
   * Adopts a fully settled batch (or an effect-free candidate): consume the prefix, append the
   * settlement records, install the candidate state and apply the Transition.
   */
  async #adopt(
    process: ProcessRuntime,
    stepSequence: bigint,
    intent: Transition,
    candidate: ExecutionState,
    restored: Execution,
    records: readonly MailboxRecord[],
    base: ProcessSnapshot = process.snapshot,
  ): Promise<void> {
    const next = this.#adoption(process, stepSequence, intent, candidate, records, base);
    if (!this.#fits([next])) {
      // A candidate that cannot fit is a Process failure, not a stopped writer: the committed
      // state's reservations guarantee the terminal snapshot fits (kernel-contract §4.4 step 6).
      await this.#terminate(process, { kind: 'failed', failure: snapshotLimitFailure() });
      return;
    }
    await this.#commit([next], { kind: 'checkpoint' }, () => this.#adoptionEvents(process, stepSequence, next));
    this.#adopted(process, next, restored);
  }

  /** `base` with the batch adopted: the prefix consumed, `records` appended, the candidate installed, the Transition applied. */
  #adoption(
    process: ProcessRuntime,
    stepSequence: bigint,
    intent: Transition,
    candidate: ExecutionState,
    records: readonly MailboxRecord[],
    base: ProcessSnapshot,
    /** Further changes to `base` the adoption keeps (a settlement's counters): one snapshot instead of two. */
    carried?: SnapshotChanges,
  ): ProcessSnapshot {
    const mailbox = base.mailbox.consume(intent.consumedSignals).append(...records);
    const fields: SnapshotChanges = {
      mailbox,
      committedExecutionState: candidate,
      committedSteps: stepSequence,
      prepared: undefined,
      pauseReason: undefined,
      currentWaitId: undefined,
      status: 'running',
    };
    let outcome: StepOutcome = { kind: 'none' };
    switch (intent.kind) {
      case 'wait': {
        const wait = mailbox.wait(intent.waitId as WaitId);
        if (wait !== undefined && !wait.answered) {
          fields.status = 'waiting';
          fields.currentWaitId = intent.waitId;
        }
        break;
      }
      case 'pause':
        fields.status = 'paused';
        fields.pauseReason = intent.reason;
        break;
      case 'complete':
        outcome = { kind: 'completed' };
        break;
      case 'fail':
        outcome = { kind: 'failed', failure: intent.failure as Failure };
        break;
      default:
        break;
    }
    // A Step that pauses by itself fulfils a pending pause: nothing is left to apply after it.
    if (fields.status === 'paused') {
      process.control = process.control.without('pauseReason');
      fields.pendingControl = base.pendingControl.without('pauseReason');
    }
    const next = base.with(carried === undefined ? fields : { ...carried, ...fields });
    const termination = outcome.kind === 'none' ? undefined : resolveTermination(process.control, outcome);
    return termination === undefined ? next : this.#terminalSnapshot(next, termination, intent.kind === 'complete' ? intent.output : undefined);
  }

  #adoptionEvents(process: ProcessRuntime, stepSequence: bigint, next: ProcessSnapshot): Array<Event | undefined> {
    const events = [this.#event(process, eventNames.stepCommitted, { stepSequence, fact: StepCommitted.create({ status: next.status }) })];
    if (next.status === 'paused') events.push(this.#event(process, eventNames.processPaused));
    if (next.isTerminal) events.push(this.#finishedEvent(process, next));
    return events;
  }

  #adopted(process: ProcessRuntime, next: ProcessSnapshot, restored: Execution): void {
    process.execution = next.isTerminal ? undefined : restored;
    process.candidateExecution = undefined;
  }

  #terminalSnapshot(snapshot: ProcessSnapshot, termination: Termination, output: Payload | undefined): ProcessSnapshot {
    return terminalSnapshot(snapshot, termination, this.#now(), output);
  }

  #finishedEvent(process: ProcessRuntime, snapshot: ProcessSnapshot): Event | undefined {
    const termination = snapshot.termination as Termination;
    return this.#event(process, eventNames.processFinished, {
      fact: ProcessFinished.create({
        cause: termination.cause,
        failure: termination.failure?.classification(),
        usage: snapshot.usage(),
      }),
    });
  }

  /**
   * Terminates `process` through the priority matrix. A retained prepared batch stays as evidence
   * (planned tails never start); a pending attempt this writer never dispatched becomes Unknown.
   */
  async #terminate(process: ProcessRuntime, outcome: StepOutcome): Promise<void> {
    const snapshot = withPendingAttemptsUnknown(process.snapshot);
    const prepared = snapshot.prepared;
    const termination =
      resolveTermination(process.control, outcome, prepared?.unknownEffectIds() ?? []) ??
      resolveTermination(PendingControl.empty(), {
        kind: 'failed',
        failure: Failure.create('contract', 'engine.termination.invalid', 'termination requested without a recorded intent'),
      });
    const next = this.#terminalSnapshot(snapshot, termination as Termination, undefined);
    await this.#commit([next], { kind: 'checkpoint' }, () => [this.#finishedEvent(process, next)]);
    process.control = PendingControl.empty();
    process.execution = undefined;
    process.candidateExecution = undefined;
    if (process.adjudication !== undefined) {
      process.adjudication.done.reject(new KernelError(ErrorCode.processFinished, `process ${process.id} has finished`));
      process.adjudication = undefined;
    }
  }

  async #applyPause(process: ProcessRuntime): Promise<void> {
    const reason = process.control.pauseReason as string;
    process.control = process.control.without('pauseReason');
    const next = process.snapshot.with({ status: 'paused', pauseReason: reason, pendingControl: process.snapshot.pendingControl.without('pauseReason') });
    await this.#commit([next], { kind: 'checkpoint' }, () => [this.#event(process, eventNames.processPaused)]);
  }

  // -------------------------------------------------------------------------------------------
  // The Effect frontier

  /**
   * Advances a prepared batch from `snapshot` (which may still be private): settles local
   * framework effects, commits the pending boundary of the next dispatcher effect and starts its
   * dispatch, or adopts the batch once every effect is definitely settled.
   */
  async #runFrontier(process: ProcessRuntime, snapshot: ProcessSnapshot): Promise<void> {
    let prepared = snapshot.prepared as PreparedStep;
    let frontier = prepared.frontier();
    // Waits settle locally (they are committed by the next boundary); child operations each need
    // a boundary of their own, and never start under terminal intent.
    while (frontier !== undefined && frontier.effect.target === 'framework') {
      const operation = frontier.effect.frameworkOperation();
      if (operation.operation === 'wait_children') {
        const problem = this.#childWaitProblem(process, operation.spec);
        if (problem !== undefined) {
          await this.#terminate(process, { kind: 'failed', failure: Failure.create('contract', 'execution.effect.invalid', problem) });
          return;
        }
      } else if (operation.operation !== 'wait') {
        if (hasTerminalIntent(process.control)) break;
        await this.#runChildOperation(process, snapshot.with({ prepared }), frontier, operation);
        return;
      }
      prepared = prepared.withFrameworkSettlement(frontier.id);
      frontier = prepared.frontier();
    }
    const current = snapshot.with({ prepared });
    if (frontier === undefined) {
      const restored = process.candidateExecution ?? (await this.#restoreCandidate(process, prepared.candidateState));
      if (restored === undefined) return;
      await this.#adopt(process, prepared.stepSequence, prepared.intent, prepared.candidateState, restored, prepared.adoptionRecords(), current);
      return;
    }
    // A settled Unknown blocks the frontier until the host resolves or replays it; it was
    // committed by its settled boundary, so there is nothing to write here.
    if (frontier.unknown) return;
    if (hasTerminalIntent(process.control)) {
      // Terminal intent: planned effects never start; nothing private is adopted.
      await this.#terminate(process, { kind: 'none' });
      return;
    }
    if (frontier.phase === 'planned') {
      const pending = current.with({ prepared: prepared.withPending(frontier.id) });
      // The first attempt is named before the commit, so a committer that carries Effects can enqueue
      // it right behind the pending boundary (CommitContext.dispatch).
      const dispatch = this.#request(pending, frontier, EffectAttemptId.random());
      await this.#commit([pending], { kind: 'effect', processId: process.id, effectId: frontier.id, resolution: false, dispatch });
      this.#startDispatch(process, frontier, false, dispatch);
      return;
    }
    // Pending with no job: a restored dispatch permission. A panicking policy permits no replay.
    const policy = replayPolicyOf(process, frontier);
    if (policy === 'same_identity') {
      this.#startDispatch(process, frontier, false);
      return;
    }
    const diagnostic = policy instanceof CallbackPanicError ? diagnostics.policyPanicked() : diagnostics.interrupted();
    const unknown = current.with({ prepared: prepared.withSettlement(frontier.id, Settlement.of('unknown', Payload.emptyObject), diagnostic) });
    await this.#commit([unknown], { kind: 'effect', processId: process.id, effectId: frontier.id, resolution: false });
  }

  // -------------------------------------------------------------------------------------------
  // Child operations (kernel-contract §4.15)

  /** Why a child wait cannot be registered: every awaited child must be a direct child. */
  #childWaitProblem(process: ProcessRuntime, spec: ChildWaitSpec): string | undefined {
    for (const id of spec.children) {
      const child = this.#processes.get(id.toString());
      if (child === undefined || child.snapshot.relation.parentId?.equals(process.id) !== true) {
        return `wait_children awaits ${id.toString()}, which is not a direct child of ${process.id.toString()}`;
      }
    }
    return undefined;
  }

  /** Runs the frontier's start_child, signal_child or cancel_child from `current` (possibly private). */
  async #runChildOperation(
    process: ProcessRuntime,
    current: ProcessSnapshot,
    effect: PreparedEffect,
    operation: Exclude<FrameworkOperation, { operation: 'wait' | 'wait_children' }>,
  ): Promise<void> {
    switch (operation.operation) {
      case 'start_child':
        return this.#startChild(process, current, effect, operation.spec);
      case 'signal_child':
        return this.#signalChild(process, current, effect, operation.childId, operation.signal);
      case 'cancel_child':
        return this.#cancelChild(process, current, effect, operation.childId, operation.reason);
    }
  }

  /** Commits the frontier framework Effect's definite settlement (failed when `failure` is given). */
  async #settleFramework(
    process: ProcessRuntime,
    current: ProcessSnapshot,
    effect: PreparedEffect,
    failure: Failure | undefined,
    others: readonly ProcessSnapshot[] = [],
    events: () => Array<Event | undefined> = () => [],
  ): Promise<void> {
    const next = current.with({ prepared: (current.prepared as PreparedStep).withFrameworkSettlement(effect.id, failure) });
    await this.#commit([next, ...others], { kind: 'effect', processId: process.id, effectId: effect.id, resolution: false }, events);
  }

  #ownerProblem(process: ProcessRuntime, current: ProcessSnapshot, childId: ProcessId, spec: ChildSpec): Failure | undefined {
    return childOwnerProblem({
      parent: current,
      prepared: current.prepared as PreparedStep,
      childId,
      spec,
      treeLimits: this.#treeLimits,
      processCount: this.#processes.size,
      children: this.#childrenOf(process.id).map((child) => child.snapshot),
      exists: (id) => this.#processes.has(id.toString()),
    });
  }

  /**
   * start_child: the owner checks here, the admission job outside the lane, then one boundary —
   * a failed settlement, or a `child_start` checkpoint that publishes the child together with the
   * parent's settled Effect and allocation, before any Step of the child.
   */
  async #startChild(process: ProcessRuntime, current: ProcessSnapshot, effect: PreparedEffect, spec: ChildSpec): Promise<void> {
    const childId = ProcessIdentity.child(effect.id);
    const problem = this.#ownerProblem(process, current, childId, spec);
    if (problem !== undefined) return this.#settleFramework(process, current, effect, problem);
    const relation = ProcessRelation.child(childId, current.relation, spec.key);
    const admit = this.#services.admitChild;
    const abort = new AbortController();
    process.job = { kind: 'admission', abort };
    const job: Promise<ChildAdmissionOutcome> =
      admit === undefined
        ? Promise.resolve({ kind: 'failed', failure: Failure.create('external', 'engine.child.start.unavailable', 'this engine cannot start children') })
        : admit({ parentDeployment: process.deployment, childId, relation, spec });
    void job.then((outcome) => {
      void this.#exclusive(async () => {
        process.job = undefined;
        if (this.#stopped !== undefined) return;
        try {
          await this.#settleAdmission(process, current, effect, spec, relation, childId, outcome);
        } finally {
          this.#pauseOnPublish.delete(process.id.toString());
        }
        await this.#drive();
      }).catch((error: unknown) => this.#fail(error));
    });
  }

  async #settleAdmission(
    process: ProcessRuntime,
    current: ProcessSnapshot,
    effect: PreparedEffect,
    spec: ChildSpec,
    relation: ProcessRelation,
    childId: ProcessId,
    outcome: ChildAdmissionOutcome,
  ): Promise<void> {
    // Host signals may have been admitted meanwhile: rebase the (possibly private) batch on
    // the acknowledged snapshot, and check the owner rules again against today's tree.
    const base = process.snapshot.with({ prepared: current.prepared, counters: current.counters });
    const failure = outcome.kind === 'failed' ? outcome.failure : this.#ownerProblem(process, base, childId, spec);
    if (failure !== undefined) {
      await this.#settleFramework(process, base, effect, failure);
    } else if (outcome.kind === 'admitted') {
      await this.#publishChild(process, base, effect, spec, relation, outcome);
    }
  }

  async #publishChild(
    process: ProcessRuntime,
    base: ProcessSnapshot,
    effect: PreparedEffect,
    spec: ChildSpec,
    relation: ProcessRelation,
    admitted: Extract<ChildAdmissionOutcome, { kind: 'admitted' }>,
  ): Promise<void> {
    // A child admitted while its parent is under terminal intent joins under that intent, so it
    // ends before any Step (kernel-contract §4.15).
    const control = process.control;
    const inherited: TerminalIntent = control.killReason !== undefined
      ? { killReason: control.killReason }
      : control.deadline !== undefined
        ? { deadline: { owner: 'parent', reason: control.deadline.reason } }
        : control.cancellation !== undefined
          ? { cancellation: { owner: 'parent', reason: control.cancellation.reason } }
          : {};
    const treePause = this.#pauseOnPublish.get(process.id.toString());
    const child = ProcessSnapshot.create({
      relation,
      childRequestDigest: spec.digest(),
      deploymentRef: spec.deploymentRef,
      startedAt: admitted.startedAt,
      status: 'running',
      committedSteps: 0n,
      budget: spec.budget,
      capabilities: spec.capabilities,
      committedExecutionState: admitted.state,
      pendingControl: PendingControl.empty().with({ ...inherited, pauseReason: hasTerminalIntent(control) ? undefined : treePause }),
    });
    const batch = (base.prepared as PreparedStep).withFrameworkSettlement(effect.id);
    const parent = base.with({ prepared: batch, allocatedResources: allocateChild(base, spec.budget) });
    if (!this.#fits([parent, child])) {
      const failure = Failure.create('execution', 'engine.child.tree_limit', 'the child does not fit the snapshot byte limits');
      return this.#settleFramework(process, base, effect, failure);
    }
    const runtime = new ProcessRuntime(child, admitted.deployment);
    // A start that completes the parent's batch adopts it in the same checkpoint.
    const adoption = this.#foldedAdoption(process, parent, batch, [child]);
    await this.#commit(
      [adoption?.next ?? parent, child],
      { kind: 'checkpoint', checkpoint: 'child_start' },
      () => [this.#event(runtime, eventNames.processStarted), ...(adoption === undefined ? [] : this.#adoptionEvents(process, batch.stepSequence, adoption.next))],
      [],
      [runtime],
    );
    if (adoption !== undefined) this.#adopted(process, adoption.next, adoption.restored);
  }

  /** The direct child `childId` of `process`, or undefined when the parent does not own it. */
  #ownedChild(process: ProcessRuntime, childId: ProcessId): ProcessRuntime | undefined {
    const child = this.#processes.get(childId.toString());
    return child?.snapshot.relation.parentId?.equals(process.id) === true ? child : undefined;
  }

  /** signal_child: the recipient's admission and the parent's receipt share one settled boundary. */
  async #signalChild(process: ProcessRuntime, current: ProcessSnapshot, effect: PreparedEffect, childId: ProcessId, request: SignalRequest): Promise<void> {
    const child = this.#ownedChild(process, childId);
    if (child === undefined) return this.#settleFramework(process, current, effect, notOwned(childId));
    let admitted: SignalAdmission | undefined;
    try {
      admitted = this.#signalAdmission(child, [request]);
    } catch (error) {
      const failure = Failure.create('execution', 'engine.child.signal.rejected', normalizeDiagnostic(error instanceof Error ? error.message : 'the signal was rejected'));
      return this.#settleFramework(process, current, effect, failure);
    }
    // A duplicate of an admitted signal is a successful receipt without a second admission.
    if (admitted === undefined) return this.#settleFramework(process, current, effect, undefined);
    const { next, fresh } = admitted;
    await this.#settleFramework(process, current, effect, undefined, [next], () =>
      fresh.map((signal) => this.#event(child, eventNames.signalAccepted, { fact: SignalAccepted.create({ signalId: signal.id, waitId: signal.waitId }) })),
    );
  }

  /**
   * cancel_child: records the parent-owned cancellation in the child's pending control in the same
   * boundary as the receipt; the receipt confirms intent, not termination (wait for a drain).
   */
  async #cancelChild(process: ProcessRuntime, current: ProcessSnapshot, effect: PreparedEffect, childId: ProcessId, reason: string): Promise<void> {
    const child = this.#ownedChild(process, childId);
    if (child === undefined) return this.#settleFramework(process, current, effect, notOwned(childId));
    if (child.snapshot.isTerminal) return this.#settleFramework(process, current, effect, undefined);
    // Recorded first, so the receipt's boundary carries it as the child's (and its subtree's)
    // pending_control; if that commit fails, the writer stops and nothing was acknowledged.
    const intent: TerminalIntent = { cancellation: { owner: 'parent', reason } };
    this.#recordIntent(child, intent);
    this.#cascade(child, intent);
    await this.#settleFramework(process, current, effect, undefined);
  }

  async #advanceFrontier(process: ProcessRuntime, prepared: PreparedStep): Promise<boolean> {
    const frontier = prepared.frontier();
    if (frontier?.unknown === true) return false;
    await this.#runFrontier(process, process.snapshot);
    return true;
  }

  async #restoreCandidate(process: ProcessRuntime, state: ExecutionState): Promise<Execution | undefined> {
    try {
      return await process.deployment.definition.restore(state, new AbortController().signal);
    } catch (error) {
      await this.#terminate(process, {
        kind: 'failed',
        failure: classified(error, 'execution.snapshot.unrestorable', 'execution', 'the candidate state does not restore'),
      });
      return undefined;
    }
  }

  #request(snapshot: ProcessSnapshot, effect: PreparedEffect, attemptId: EffectAttemptId | undefined): EffectRequest {
    const prepared = snapshot.prepared as PreparedStep;
    return EffectRequest.create({
      processId: snapshot.processId,
      relation: snapshot.relation,
      deploymentRef: snapshot.deploymentRef,
      stepSequence: prepared.stepSequence,
      batchIndex: effect.index,
      effect: effect.effect,
      incarnationId: this.#incarnationId,
      attemptId,
    });
  }

  /**
   * Dispatches one frontier effect outside the owner (a first attempt, a restored one, or a replay);
   * `named`: the first attempt its pending boundary's commit already named.
   */
  #startDispatch(process: ProcessRuntime, effect: PreparedEffect, replay: boolean, named?: EffectRequest): void {
    const dispatcher = process.deployment.dispatcher;
    if (dispatcher === undefined) throw new KernelError(ErrorCode.invalidDeployment, 'a dispatcher effect without a dispatcher');
    const abort = new AbortController();
    process.job = { kind: 'dispatch', abort, parkable: !replay && parkableDispatch(process, effect) };
    const request = named ?? this.#request(process.snapshot, effect, EffectAttemptId.random());
    const attemptId = request.attemptId as EffectAttemptId;
    const stepSequence = request.stepSequence;
    const target = effect.effect.target;
    this.#publish(this.#event(process, eventNames.effectStarted, { stepSequence, effectId: effect.id, fact: EffectStarted.create({ attemptId, target }) }));
    const deltas = this.#services.deltas;
    let droppedNow = 0n;
    const emitter = deltas.hasListeners
      ? deltas.emitterFor({ attemptId, processId: process.id, effectId: effect.id, treeIncarnationId: this.#incarnationId }, (count) => {
          droppedNow += BigInt(count);
        })
      : undefined;
    const started = performance.now();
    void dispatchOnce(dispatcher, request, emitter?.emit, abort.signal).then(async ({ settlement, diagnostic }) => {
      const duration = performance.now() - started;
      // The attempt's deltas reach the listeners before its events and its settled boundary's
      // commit; bounded by the pipeline's flush timeout (what is still queued then is dropped and
      // counted). Waiting here, outside the owner lane, keeps the rest of the tree moving.
      const summary = await emitter?.finish();
      const dropped = summary?.dropped ?? droppedNow;
      // Released while parked on this dispatch: the head still holds the effect pending, and the
      // restore that brings the tree back replays it. Nothing here is published or committed.
      if (this.#released !== undefined) return;
      void this.#exclusive(async () => {
        process.job = undefined;
        this.#publish(
          this.#event(process, eventNames.effectFinished, {
            stepSequence,
            effectId: effect.id,
            fact: EffectFinished.create({
              attemptId,
              target,
              settlementStatus: settlement.status,
              durationNs: BigInt(Math.round(duration * 1e6)),
              failure: diagnostic?.classification(),
            }),
          }),
        );
        if (dropped > 0n) {
          this.#publish(this.#event(process, eventNames.deltaDropped, { stepSequence, effectId: effect.id, fact: DeltaDropped.create({ attemptId, count: dropped }) }));
        }
        if (this.#stopped !== undefined) return;
        await this.#settle(process, effect, settlement, diagnostic, replay, dropped);
        await this.#drive();
      }).catch((error: unknown) => this.#fail(error));
    });
  }

  /** Commits a dispatch result: the first settlement (settled boundary) or a replay's resolution. */
  async #settle(process: ProcessRuntime, effect: PreparedEffect, settlement: Settlement, diagnostic: Failure | undefined, replay: boolean, dropped: bigint): Promise<void> {
    const snapshot = process.snapshot;
    const prepared = snapshot.prepared as PreparedStep;
    const counters = { ...snapshot.counters, droppedDeltas: saturatingAdd(snapshot.counters.droppedDeltas, dropped) };
    if (replay) {
      const adjudication = process.adjudication;
      if (!settlement.definite) {
        if (dropped > 0n) await this.#commit([snapshot.with({ counters })], { kind: 'checkpoint', checkpoint: 'parked' });
        process.adjudication = undefined;
        adjudication?.done.reject(new KernelError(ErrorCode.effectOutcomeUnknown, `effect ${effect.id} is still unknown after replay`));
        return;
      }
      await this.#resolve(process, effect.id, settlement, counters);
      process.adjudication = undefined;
      adjudication?.done.resolve();
      return;
    }
    const settled = prepared.withSettlement(effect.id, settlement, diagnostic);
    // Folded, the adoption drops the prepared step at once: the settled snapshot is built only when
    // the boundary commits alone.
    const adoption = this.#foldedAdoption(process, snapshot, settled, [], { counters });
    if (adoption !== undefined) {
      const boundary = { kind: 'effect', processId: process.id, effectId: effect.id, resolution: false, adopts: settled } as const;
      await this.#commit([adoption.next], boundary, () => this.#adoptionEvents(process, settled.stepSequence, adoption.next), [effect.id]);
      this.#adopted(process, adoption.next, adoption.restored);
      return;
    }
    const next = snapshot.with({ prepared: settled, counters });
    await this.#commit([next], { kind: 'effect', processId: process.id, effectId: effect.id, resolution: false }, () => [], [effect.id]);
  }

  /**
   * The adoption a settled boundary (or a child_start checkpoint) can carry itself, so one
   * dispatched Effect costs the contract's four commits (start, pending, settled, terminal). Only
   * when nothing would come between the settlement and the adoption: the settlement is definite
   * and completes its batch (only `continue` declares Effects, so adopting never ends or pauses
   * the Process), the candidate is at hand, no terminal intent or freeze holds adoption back, and
   * the adopted snapshot fits. Otherwise the boundary commits alone and the frontier adopts later.
   * `base` is the snapshot the adoption derives from, with `carried` changes applied too.
   */
  #foldedAdoption(
    process: ProcessRuntime,
    base: ProcessSnapshot,
    batch: PreparedStep,
    others: readonly ProcessSnapshot[] = [],
    carried?: SnapshotChanges,
  ): { next: ProcessSnapshot; restored: Execution } | undefined {
    const restored = process.candidateExecution;
    if (restored === undefined || batch.frontier() !== undefined || batch.intent.kind !== 'continue') return undefined;
    if (hasTerminalIntent(process.control) || this.#freezes > 0) return undefined;
    const next = this.#adoption(process, batch.stepSequence, batch.intent, batch.candidateState, batch.adoptionRecords(), base, carried);
    return this.#fits([next, ...others]) ? { next, restored } : undefined;
  }

  async #resolve(process: ProcessRuntime, effectId: EffectId, settlement: Settlement, counters = process.snapshot.counters): Promise<void> {
    const snapshot = process.snapshot;
    const prepared = snapshot.prepared as PreparedStep;
    const effect = prepared.effect(effectId) as PreparedEffect;
    const next = snapshot.with({ prepared: prepared.withResolution(effectId, settlement), counters });
    // A resolution that cannot fit is refused with the Unknown untouched; the Host may retry with a
    // smaller result (kernel-contract §4.16).
    admitTree(this.#prospective([next]));
    await this.#commit([next], { kind: 'effect', processId: process.id, effectId, resolution: true }, () => [
      this.#event(process, eventNames.effectResolved, {
        stepSequence: prepared.stepSequence,
        effectId,
        fact: EffectResolved.create({ target: effect.effect.target, settlementStatus: settlement.status }),
      }),
    ]);
  }

  // -------------------------------------------------------------------------------------------
  // Host commands (each one owner operation)

  deliverSignals(process: ProcessRuntime, requests: readonly SignalRequest[]): Promise<boolean> {
    return this.#exclusive(async () => {
      this.#ensureRunning();
      const accepted = await this.#admitSignals(process, requests);
      await this.#drive();
      return accepted;
    });
  }

  async #admitSignals(process: ProcessRuntime, requests: readonly SignalRequest[]): Promise<boolean> {
    const admitted = this.#signalAdmission(process, requests);
    if (admitted === undefined) return false;
    const { next, fresh } = admitted;
    await this.#commit([next], { kind: 'checkpoint', checkpoint: 'signals' }, () =>
      fresh.map((request) => this.#event(process, eventNames.signalAccepted, { fact: SignalAccepted.create({ signalId: request.id, waitId: request.waitId }) })),
    );
    return true;
  }

  /**
   * The mailbox contract of one signal batch (kernel-contract §4.8), shared by Host delivery and
   * signal_child: the recipient's next snapshot and the fresh requests, undefined when every request
   * was already admitted; a rejection throws.
   */
  #signalAdmission(process: ProcessRuntime, requests: readonly SignalRequest[]): SignalAdmission | undefined {
    const snapshot = process.snapshot;
    const seen = new Set<string>();
    const fresh: SignalRequest[] = [];
    let answered = false;
    for (const [index, request] of requests.entries()) {
      const id = request.id.toString();
      if (seen.has(id)) throw new KernelError(ErrorCode.signalConflict, `signal ${id} appears twice in one batch`);
      seen.add(id);
      const receipt = snapshot.mailbox.receipt(request.id);
      if (receipt !== undefined) {
        if (!receipt.matches(request)) {
          throw new KernelError(ErrorCode.signalConflict, `signal ${id} was already accepted with different content or wait`);
        }
        continue;
      }
      if (snapshot.isTerminal) throw new KernelError(ErrorCode.signalRejected, `process ${process.id} has finished; signal ${id} rejected`);
      if (request.waitId !== undefined) {
        const current = snapshot.waitId;
        const wait = current === undefined ? undefined : snapshot.mailbox.wait(current);
        if (wait === undefined || !wait.waitId.equals(request.waitId) || wait.kind !== 'external' || answered) {
          throw new KernelError(ErrorCode.signalRejected, `signal ${id} addresses ${request.waitId}, which is not the current external wait`);
        }
        // The answer contract is the wait's (declared or carried by its Effect); checked here, in
        // the owner lane with the current-wait check, so a refused answer refuses the whole batch.
        inBatch(index, () => answerSchemaOf(process.deployment.descriptor, wait)?.validate(request.payload, `answer ${id} to ${request.waitId}`));
        answered = true;
      } else {
        inBatch(index, () => process.deployment.descriptor.validateSignal(request.payload));
      }
      fresh.push(request);
    }
    if (fresh.length === 0) return undefined;
    const count = BigInt(fresh.length);
    // A live prepared batch has reserved one settlement Signal per Effect (and will consume its
    // prefix): admission must leave room for them, now and after adoption (kernel-contract §2.5).
    const prepared = snapshot.isTerminal ? undefined : snapshot.prepared;
    const reserved = BigInt(prepared?.effectCount ?? 0);
    const pending = BigInt(snapshot.mailbox.pendingCount) + count;
    const limit = this.#treeLimits.maxPendingSignals;
    if (pending > limit || pending - BigInt(prepared?.intent.consumedSignals ?? 0) + reserved > limit) {
      throw new KernelError(ErrorCode.resourceLimitExceeded, `the mailbox of ${process.id} is full`);
    }
    if (!snapshot.budget.signals.admits(BigInt(snapshot.mailbox.length) + snapshot.allocatedResources.signals + reserved + count)) {
      throw new KernelError(ErrorCode.resourceLimitExceeded, `the signals budget of ${process.id} is exhausted`);
    }
    const fields: SnapshotChanges = { mailbox: snapshot.mailbox.append(...fresh.map((request) => MailboxRecord.external(request))) };
    if (answered) {
      // The current wait is answered: it no longer holds the process (an explicit pause still does).
      fields.currentWaitId = undefined;
      if (snapshot.status === 'waiting') fields.status = 'running';
    }
    const next = snapshot.with(fields);
    try {
      admitTree(this.#prospective([next]));
    } catch (error) {
      throw new KernelError(ErrorCode.resourceLimitExceeded, error instanceof Error ? error.message : String(error), { cause: error });
    }
    return { next, fresh };
  }

  /**
   * Resolves once the pause is in the authoritative head: the paused (parked) checkpoint when the
   * Process can pause at once, otherwise a checkpoint recording it as `pending_control` (a Step or
   * an Effect batch is in flight; the pause applies after it).
   */
  pause(process: ProcessRuntime, reason: string, hostValues?: HostValues): Promise<void> {
    return this.#exclusiveControl(hostValues, async () => {
      this.#ensureRunning();
      const snapshot = process.snapshot;
      if (snapshot.isTerminal || hasTerminalIntent(process.control)) throw finished(process);
      if (snapshot.status === 'paused' || process.control.pauseReason !== undefined) {
        throw new KernelError(ErrorCode.invalidProcessControl, `process ${process.id} is already paused or pausing`);
      }
      process.control = process.control.with({ pauseReason: reason });
      if (process.job === undefined && snapshot.prepared === undefined) await this.#applyPause(process);
      else await this.#commitControl();
      this.wake();
    });
  }

  resume(process: ProcessRuntime, hostValues?: HostValues): Promise<void> {
    return this.#exclusiveControl(hostValues, async () => {
      this.#ensureRunning();
      const snapshot = process.snapshot;
      if (snapshot.isTerminal) throw finished(process);
      if (snapshot.status !== 'paused') {
        throw new KernelError(ErrorCode.invalidProcessControl, `process ${process.id} is ${snapshot.status}, not paused`);
      }
      const wait = snapshot.waitId;
      const next = snapshot.with({ status: wait === undefined ? 'running' : 'waiting', pauseReason: undefined });
      await this.#commit([next], { kind: 'checkpoint' }, () => [this.#event(process, eventNames.processResumed)]);
      await this.#drive();
    });
  }

  /**
   * Records a terminal intent (cancellation, kill or deadline) and resolves once it is in the
   * authoritative head: the terminal checkpoint when the Process can end at once, otherwise a
   * checkpoint recording it as `pending_control` (of the Process and its live descendants) while
   * owned work settles. A failed commit stops the writer and rejects: nothing was acknowledged.
   */
  requestTermination(process: ProcessRuntime, change: TerminalIntent, hostValues?: HostValues): Promise<void> {
    return this.#exclusiveControl(hostValues, async () => {
      this.#ensureRunning();
      if (process.snapshot.isTerminal) throw finished(process);
      this.#recordIntent(process, change);
      // The intent reaches the owned subtree at once, without waiting for this Process's own work
      // to settle; descendants end as `parent_*` (kernel-contract §4.11).
      const reason = change.killReason ?? change.deadline?.reason ?? change.cancellation?.reason ?? 'terminal intent';
      if (change.killReason !== undefined) this.#cascade(process, { killReason: reason });
      else if (change.deadline !== undefined) this.#cascade(process, { deadline: { owner: 'parent', reason } });
      else this.#cascade(process, { cancellation: { owner: 'parent', reason } });
      if (process.job === undefined) await this.#terminate(process, { kind: 'none' });
      else await this.#commitControl();
      this.wake();
    });
  }

  /**
   * Tree-wide control (docs/process-trees.md "Tree-wide control"): one commit records the intent on
   * every live member before any of them is signalled, so the 202 covers the whole tree and a crash
   * after it loses none of it. Cancel and kill: the root gets the host's intent, every descendant the
   * parent's (kernel-contract §4.11), then owned work is aborted and each member ends through its
   * own lifecycle. Pause: members that can pause at once are paused in that commit, the rest record
   * the pause as pending; a child still in admission joins paused. Resume: every paused member
   * resumes and pending pauses are dropped, in one commit. Resolves with the number of members the
   * commit changed; nothing is committed when that is zero.
   */
  controlTree(action: TreeControlAction, reason: string, hostValues?: HostValues): Promise<number> {
    return this.#exclusiveControl(hostValues, async () => {
      this.#ensureRunning();
      const live = this.processes().filter((process) => !process.snapshot.isTerminal);
      if (action === 'pause') return this.#pauseTree(live, reason);
      if (action === 'resume') return this.#resumeTree(live);
      let affected = 0;
      for (const process of live) {
        const intent: TerminalIntent =
          action === 'kill' ? { killReason: reason } : { cancellation: { owner: process.id.equals(this.rootId) ? 'host' : 'parent', reason } };
        if (this.#noteIntent(process, intent)) affected += 1;
      }
      if (affected === 0) return 0;
      await this.#commit([], { kind: 'checkpoint' });
      for (const process of live) this.#abortOwnedWork(process);
      this.wake();
      return affected;
    });
  }

  async #pauseTree(live: readonly ProcessRuntime[], reason: string): Promise<number> {
    const replacements: ProcessSnapshot[] = [];
    const pausedNow: ProcessRuntime[] = [];
    let affected = 0;
    for (const process of live) {
      const snapshot = process.snapshot;
      if (hasTerminalIntent(process.control) || snapshot.status === 'paused' || process.control.pauseReason !== undefined) continue;
      affected += 1;
      if (process.job?.kind === 'admission') this.#pauseOnPublish.set(process.id.toString(), reason);
      if (process.job === undefined && snapshot.prepared === undefined) {
        replacements.push(snapshot.with({ status: 'paused', pauseReason: reason, pendingControl: snapshot.pendingControl.without('pauseReason') }));
        pausedNow.push(process);
      } else {
        process.control = process.control.with({ pauseReason: reason });
      }
    }
    if (affected === 0) return 0;
    await this.#commit(replacements, { kind: 'checkpoint' }, () => pausedNow.map((process) => this.#event(process, eventNames.processPaused)));
    this.wake();
    return affected;
  }

  async #resumeTree(live: readonly ProcessRuntime[]): Promise<number> {
    const replacements: ProcessSnapshot[] = [];
    const resumed: ProcessRuntime[] = [];
    let affected = 0;
    this.#pauseOnPublish.clear();
    for (const process of live) {
      const snapshot = process.snapshot;
      if (snapshot.status === 'paused') {
        replacements.push(snapshot.with({ status: snapshot.waitId === undefined ? 'running' : 'waiting', pauseReason: undefined }));
        resumed.push(process);
        affected += 1;
      } else if (process.control.pauseReason !== undefined) {
        process.control = process.control.without('pauseReason');
        affected += 1;
      }
    }
    if (affected === 0) return 0;
    await this.#commit(replacements, { kind: 'checkpoint' }, () => resumed.map((process) => this.#event(process, eventNames.processResumed)));
    await this.#drive();
    return affected;
  }

  /**
   * Commits a checkpoint whose only change is accepted control intent (see `#withControl`); none
   * when the head already records it (a repeated cancellation, say).
   */
  async #commitControl(): Promise<void> {
    if ([...this.#controlDirty].every((process) => this.#withControl(process.snapshot) === process.snapshot)) return;
    await this.#commit([], { kind: 'checkpoint' });
  }

  resolveUnknownEffect(process: ProcessRuntime, effectId: EffectId, settlement: Settlement): Promise<void> {
    return this.#exclusive(async () => {
      this.#ensureRunning();
      this.#checkAdjudicable(process, effectId);
      if (!settlement.definite) throw new KernelError(ErrorCode.invalidSettlement, 'a resolution needs a definite settlement');
      await this.#resolve(process, effectId, settlement);
      await this.#drive();
    });
  }

  replayUnknownEffect(process: ProcessRuntime, effectId: EffectId): Promise<void> {
    return this.#exclusive(() => {
      this.#ensureRunning();
      const effect = this.#checkAdjudicable(process, effectId);
      const policy = replayPolicyOf(process, effect);
      if (policy instanceof CallbackPanicError) throw policy;
      if (policy !== 'same_identity') {
        throw new KernelError(ErrorCode.effectReplayForbidden, `effect ${effectId} cannot be replayed under the same identity`);
      }
      const done = deferred<void>();
      process.adjudication = { effectId, done };
      this.#startDispatch(process, effect, true);
      return undefined;
    }).then(() => (process.adjudication as Adjudication).done.promise);
  }

  #checkAdjudicable(process: ProcessRuntime, effectId: EffectId): PreparedEffect {
    if (process.snapshot.isTerminal || hasTerminalIntent(process.control)) throw finished(process);
    const effect = process.snapshot.prepared?.effect(effectId);
    if (effect === undefined || !effect.unknown || process.job !== undefined || process.adjudication !== undefined) {
      throw new KernelError(ErrorCode.effectNotPending, `effect ${effectId} does not require resolution`);
    }
    return effect;
  }

  /**
   * Holds new Steps and dispatches until `release` runs, once in-flight work has settled. An abort
   * of `signal` before then lifts the hold at once and rejects with the signal's reason: a caller
   * that stops waiting leaves the tree running as before.
   */
  async freeze(signal?: AbortSignal): Promise<() => void> {
    signal?.throwIfAborted();
    this.#freezes += 1;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#freezes -= 1;
      this.wake();
    };
    if (signal === undefined) {
      await this.whenIdle();
      return release;
    }
    let onAbort: (() => void) | undefined;
    try {
      await Promise.race([
        this.whenIdle(),
        new Promise<never>((_resolve, reject) => {
          onAbort = () => reject(signal.reason);
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } catch (error) {
      release();
      throw error;
    } finally {
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
    }
    return release;
  }

  /**
   * Releases a parked tree. Once every earlier owner operation is done, if nothing is left for this
   * runtime to do — no job, no adjudication, nothing runnable, no capture, and no later operation
   * queued behind this one (a command that arrived meanwhile cancels the release) — the runtime
   * refuses every further operation with `tree_released`, calls `onReleased` in the same turn, and
   * rejects the results it can no longer deliver. Nothing is committed: the acknowledged head is
   * the whole state, and a restore continues from it. Resolves whether it released.
   */
  hibernate(onReleased: () => void): Promise<boolean> {
    return this.#exclusive(() => {
      if (!this.#parked()) return false;
      const released = new KernelError(ErrorCode.treeReleased, `tree ${this.rootId.toString()} was released from this engine while parked; restore it from its head to change it`);
      this.#released = released;
      onReleased();
      for (const process of this.processes()) {
        const job = process.job;
        if (job?.parkable === true) {
          process.job = undefined;
          job.abort.abort(released);
        }
        process.result.reject(released);
      }
      return true;
    });
  }

  #parked(): boolean {
    if (this.#stopped !== undefined || this.#released !== undefined) return false;
    if (this.#freezes > 0 || this.#queued > 0 || this.#driveQueued) return false;
    return this.processes().every((process) => {
      if (process.adjudication !== undefined) return false;
      if (process.job !== undefined) return this.#parkedOnDispatch(process);
      return process.snapshot.isTerminal || !this.#runnable(process);
    });
  }

  /**
   * A process whose only work is a parkable dispatch (a durable timer) with every control intent
   * already recorded in its head and none terminal: its restore re-creates exactly this wait.
   */
  #parkedOnDispatch(process: ProcessRuntime): boolean {
    const job = process.job;
    return job?.kind === 'dispatch' && job.parkable === true && process.control === process.snapshot.pendingControl && !hasTerminalIntent(process.control);
  }

  /** Activation for a restore: fences the previous writer before anything is published. */
  async activate(previousIncarnationId: TreeIncarnationId, previousDigest: Digest, events: readonly Event[]): Promise<void> {
    const activation = TreeActivation.create({ previousIncarnationId, previousDigest, snapshot: this.#head });
    try {
      await this.#services.committer.activateTree(activation, { events });
    } catch (error) {
      throw thrownBy('TreeCommitter.activateTree', error);
    }
    this.#sequence = 0n;
  }
}

/** What a tree-wide control does to every live member of the tree. */
export type TreeControlAction = 'pause' | 'resume' | 'cancel' | 'kill';

/** Values a host attaches to a control, handed to the committer with the control's commit (never read by the kernel). */
export type HostValues = Readonly<Record<string, unknown>>;

/** Terminal intents as a command records them (each optional; the first recorded of each kind wins). */
type TerminalIntent = Partial<{
  killReason: string;
  cancellation: { owner: 'host' | 'parent'; reason: string };
  deadline: { owner: 'host' | 'parent'; reason: string };
}>;

/** An admitted signal batch: the recipient's next snapshot and the requests it newly records. */
interface SignalAdmission {
  readonly next: ProcessSnapshot;
  readonly fresh: readonly SignalRequest[];
}

function notOwned(childId: ProcessId): Failure {
  return Failure.create('contract', 'engine.child.control.not_owned', `process ${childId.toString()} is not a direct child of the sender`);
}

/** Mutable partial snapshot members, assembled before one `with()` call. */
type SnapshotChanges = { -readonly [K in keyof ProcessSnapshotFields]?: ProcessSnapshotFields[K] };

type StepResult =
  | { kind: 'error'; failure: Failure }
  | { kind: 'candidate'; transition: Transition; candidate: ExecutionState; restored: Execution };

function counterExhaustedFailure(counter: string): Failure {
  return Failure.create(counterExhausted.kind, counterExhausted.code, `${counter} is exhausted`);
}

function snapshotLimitFailure(): Failure {
  return Failure.create('execution', 'engine.limit.snapshot', 'the candidate does not fit the snapshot byte limits');
}

function finished(process: ProcessRuntime): KernelError {
  return new KernelError(ErrorCode.processFinished, `process ${process.id} has finished or is finishing`);
}

/** A Step error keeps its classification when it wraps a ClassifiedError; thrown non-errors are panics. */
function stepErrorFailure(error: unknown): Failure {
  if (!(error instanceof Error)) return Failure.create('panic', 'execution.step.failed', 'the step threw a non-error value');
  return interpreted('execution.step.failed', () => stepFailure(error) ?? Failure.create('execution', 'execution.step.failed', normalizeDiagnostic(error.message)));
}

function classified(error: unknown, code: string, kind: 'execution' | 'contract', fallback: string): Failure {
  if (!(error instanceof Error)) return Failure.create('panic', code, fallback);
  return interpreted(code, () => stepFailure(error) ?? Failure.create(kind, code, normalizeDiagnostic(`${fallback}: ${error.message}`)));
}

/** The Failure `interpret` reads from a Strategy error; a throw while reading it is a panic (the seed's Execution). */
function interpreted(code: string, interpret: () => Failure): Failure {
  try {
    return interpret();
  } catch {
    return Failure.create('panic', code, 'interpreting the returned error panicked');
  }
}

/**
 * One Dispatch call, normalised: a valid settlement is taken as returned; anything else — an error,
 * a throw, an invalid value — is Unknown with a fixed diagnostic (never Failed, never the raw text).
 */
async function dispatchOnce(
  dispatcher: NonNullable<Deployment['dispatcher']>,
  request: EffectRequest,
  emit: ((payload: Payload) => void) | undefined,
  signal: AbortSignal,
): Promise<{ settlement: Settlement; diagnostic?: Failure }> {
  try {
    const settlement = await dispatcher.dispatch(request, emit, signal);
    if (!(settlement instanceof Settlement)) {
      return { settlement: Settlement.of('unknown', Payload.emptyObject), diagnostic: diagnostics.settlementInvalid() };
    }
    return { settlement };
  } catch (error) {
    const diagnostic = !(error instanceof Error)
      ? diagnostics.panicked()
      : error.name === 'TimeoutError' || (signal.aborted && (signal.reason as { name?: unknown } | undefined)?.name === 'TimeoutError')
        ? diagnostics.deadline()
        : signal.aborted
          ? diagnostics.canceled()
          : diagnostics.failed();
    return { settlement: Settlement.of('unknown', Payload.emptyObject), diagnostic };
  }
}

/** The Dispatcher's replay policy for `effect`; a throw (the callback has no error result) is a contained panic. */
function replayPolicyOf(process: ProcessRuntime, effect: PreparedEffect): ReplayPolicy | undefined | CallbackPanicError {
  try {
    return process.deployment.dispatcher?.replayPolicy(effect.effect);
  } catch (error) {
    return new CallbackPanicError('Dispatcher.replayPolicy', error);
  }
}

/** Whether the Dispatcher lets the tree park on this dispatch (parkable, and replayed on restore); a throw counts as no. */
function parkableDispatch(process: ProcessRuntime, effect: PreparedEffect): boolean {
  const dispatcher = process.deployment.dispatcher;
  if (dispatcher?.parkable === undefined) return false;
  try {
    return dispatcher.parkable(effect.effect) === true && dispatcher.replayPolicy(effect.effect) === 'same_identity';
  } catch {
    return false;
  }
}

/** Identifies an Effect request's dispatcher effect (re-exported for the engine). */
export type { Effect };
