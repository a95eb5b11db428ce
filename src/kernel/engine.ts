// Over 500 lines: the Engine's public operations and their option checks, each a thin door into the tree runtimes.
import { Budget } from './budget.js';
import { CapabilitySet } from './capability.js';
import { TreeCheckpoint } from './commit.js';
import { systemClock, type Clock } from './clock.js';
import { Deployment, type DeploymentRef } from './deployment.js';
import type { Descriptor } from './descriptor.js';
import type { DeploymentResolver } from './definition.js';
import { ErrorCode, KernelError } from './errors.js';
import { eventNames } from './event.js';
import type { Failure } from './failure.js';
import { ProcessId, TreeIncarnationId } from './identity.js';
import {
  DeltaPipeline,
  EventPublisher,
  ObservationFailureLog,
  type DeltaListenerLike,
  type EventListenerLike,
  type ObservationFailures,
} from './observation.js';
import { Payload } from './payload.js';
import { Process } from './process.js';
import { ProcessSnapshot } from './process-snapshot.js';
import { ProcessRelation } from './relation.js';
import { formatUtcTimestamp, type Result } from './result.js';
import { RuntimeError } from './runtime-error.js';
import { restoreSchemaProblem } from './restore-schemas.js';
import { admitTree } from './snapshot-admission.js';
import type { TreeCommitter } from './tree-committer.js';
import { TreeLimits } from './tree-limits.js';
import { TreeRuntime, type ProcessWork } from './tree-runtime.js';
import { TreeSnapshot } from './tree-snapshot.js';
import { waitContractProblem } from './wait.js';
import { admissionFailure, type ChildAdmissionOutcome, type ChildAdmissionRequest } from './child-admission.js';
import { CallbackPanicError, thrownBy } from './callback-panic-error.js';
import { stepFailure } from './classified-error.js';
import { initialize } from './initialization.js';

function failed(failure: Failure): ChildAdmissionOutcome {
  return { kind: 'failed', failure };
}

/**
 * What a ProcessAdmitter sees before a Process is created: the Framework's facts about it — identity,
 * relation, deployment and contract, the resources it would get. Never its input, execution,
 * dispatcher or host state (the seed's rule: an admitter decides on the prospective identity and
 * resources alone, and cannot enlarge them).
 */
export interface ProcessAdmission {
  readonly processId: ProcessId;
  readonly relation: ProcessRelation;
  readonly deploymentRef: DeploymentRef;
  readonly descriptor: Descriptor;
  readonly budget: Budget;
  readonly capabilities: CapabilitySet;
}

/**
 * A host policy gate before execution starts; throwing an Error rejects the start, throwing any
 * other value is a panic (contained as a CallbackPanicError, and the start is rejected too).
 */
export type ProcessAdmitter = (admission: ProcessAdmission) => void | Promise<void>;

/** The outcome of root initialisation, acknowledged separately from the tree commit. */
export type ProcessInitializationOutcome =
  | { readonly status: 'initialized'; readonly admission: ProcessAdmission; readonly startedAt: string }
  | { readonly status: 'failed'; readonly admission: ProcessAdmission; readonly failure: Failure; readonly error: unknown };

/**
 * Closes each accepted admission with its outcome; throwing refuses an initialised outcome (the
 * Process is not published). A thrown non-Error is a panic, contained as a CallbackPanicError.
 */
export type ProcessInitializationAcknowledger = (outcome: ProcessInitializationOutcome) => void | Promise<void>;

export interface EngineConfig {
  /** Required: every recoverable change goes through it. */
  readonly committer: TreeCommitter;
  /** Budget granted to new roots (default unlimited). Restored trees keep their captured budgets. */
  readonly budget?: Budget;
  /** Limits of new trees (default {@link TreeLimits.defaults}); restored trees keep theirs. */
  readonly treeLimits?: TreeLimits;
  /** Capabilities granted to new roots (default none). */
  readonly capabilities?: CapabilitySet;
  readonly processAdmitter?: ProcessAdmitter;
  readonly initializationAcknowledger?: ProcessInitializationAcknowledger;
  /** Resolves exact DeploymentRefs for restored members other than the root. */
  readonly deploymentResolver?: DeploymentResolver;
  readonly eventListeners?: readonly EventListenerLike[];
  readonly deltaListeners?: readonly DeltaListenerLike[];
  /** Bounded Delta queue (0 = default 1024; negative is invalid). */
  readonly deltaBufferCapacity?: number;
  /**
   * How long (ms, a positive integer; default 1000) an Effect attempt's settlement waits for the
   * attempt's deltas to reach the delta listeners before its settled boundary is committed. Deltas
   * still queued then are dropped and counted, so none is delivered after the commit it preceded.
   */
  readonly deltaFlushTimeoutMs?: number;
  /** Wall-clock source for timestamps (tests inject a fixed one). */
  readonly clock?: Clock;
}

export interface StartOptions {
  /**
   * The host's start context: aborting it records host cancellation (or a host deadline when the
   * abort reason is a `TimeoutError`, as `AbortSignal.timeout()` produces) on the root.
   */
  readonly signal?: AbortSignal;
  /** Host values handed to the committer with the start checkpoint (see `CommitContext.hostValues`). */
  readonly hostValues?: Readonly<Record<string, unknown>>;
  /**
   * A per-start narrowing of the Engine's grant, so one Engine can start roots with the smaller
   * budget, limits or capabilities a request asks for. The budget and
   * capabilities must be covered by the Engine's own (`invalid_budget` / `invalid_capability`);
   * the Host checks tree limits against its grant before calling.
   */
  readonly budget?: Budget;
  readonly treeLimits?: TreeLimits;
  readonly capabilities?: CapabilitySet;
}

export interface ProcessInspection {
  readonly snapshot: ProcessSnapshot;
  readonly work: ProcessWork;
  readonly runtimeError?: RuntimeError;
}

/** A caller-owned report from one owner turn; snapshots come from the last acknowledged head. */
export interface TreeInspection {
  readonly rootId: ProcessId;
  readonly incarnationId: TreeIncarnationId;
  readonly headDigest: import('./digest.js').Digest;
  readonly stopped: boolean;
  readonly processes: readonly ProcessInspection[];
}

/**
 * The Engine owns Process lifecycle, signal delivery, Effect dispatch, budgets and limits, events
 * and deltas. Every recoverable change is committed through the TreeCommitter before it becomes
 * visible: a Process handle, a result, a committed event, an accepted signal.
 */
export class Engine {
  readonly #committer: TreeCommitter;
  readonly #budget: Budget;
  readonly #treeLimits: TreeLimits;
  readonly #capabilities: CapabilitySet;
  readonly #admitter: ProcessAdmitter | undefined;
  readonly #acknowledger: ProcessInitializationAcknowledger | undefined;
  readonly #resolver: DeploymentResolver | undefined;
  readonly #clock: Clock;
  readonly #failures = new ObservationFailureLog();
  readonly #events: EventPublisher;
  readonly #deltas: DeltaPipeline;
  readonly #trees = new Map<string, TreeRuntime>();
  readonly #handles = new Map<string, Process>();
  /** Identities reserved by starts and restores in progress. */
  readonly #reserved = new Set<string>();
  #pendingAdmissions = 0;
  /** Processes whose start context is watched (see #watchStartContext). */
  readonly #watchedStarts = new Set<string>();
  #closed = false;

  constructor(config: EngineConfig) {
    if (typeof config !== 'object' || config === null) throw invalidConfig('expected an engine configuration');
    const committer = config.committer;
    if (
      typeof committer !== 'object' ||
      committer === null ||
      typeof committer.commitCheckpoint !== 'function' ||
      typeof committer.commitEffect !== 'function' ||
      typeof committer.activateTree !== 'function'
    ) {
      throw invalidConfig('a TreeCommitter is required');
    }
    if (config.budget !== undefined && !(config.budget instanceof Budget)) throw invalidConfig('budget must be a Budget');
    if (config.treeLimits !== undefined && !(config.treeLimits instanceof TreeLimits)) throw invalidConfig('treeLimits must be TreeLimits');
    if (config.capabilities !== undefined && !(config.capabilities instanceof CapabilitySet)) {
      throw invalidConfig('capabilities must be a CapabilitySet');
    }
    if (config.processAdmitter !== undefined && typeof config.processAdmitter !== 'function') throw invalidConfig('processAdmitter must be a function');
    if (config.initializationAcknowledger !== undefined && typeof config.initializationAcknowledger !== 'function') {
      throw invalidConfig('initializationAcknowledger must be a function');
    }
    if (config.deploymentResolver !== undefined && typeof config.deploymentResolver?.resolve !== 'function') {
      throw invalidConfig('deploymentResolver must have resolve()');
    }
    this.#committer = committer;
    this.#budget = config.budget ?? Budget.unlimited();
    this.#treeLimits = config.treeLimits ?? TreeLimits.defaults;
    this.#capabilities = config.capabilities ?? CapabilitySet.empty;
    this.#admitter = config.processAdmitter;
    this.#acknowledger = config.initializationAcknowledger;
    this.#resolver = config.deploymentResolver;
    this.#clock = config.clock ?? systemClock;
    this.#events = new EventPublisher(config.eventListeners ?? [], { failures: this.#failures });
    this.#deltas = new DeltaPipeline({
      listeners: config.deltaListeners ?? [],
      capacity: config.deltaBufferCapacity ?? 0,
      flushTimeoutMs: config.deltaFlushTimeoutMs,
      clock: this.#clock,
      failures: this.#failures,
    });
  }

  // -------------------------------------------------------------------------------------------
  // Start

  /**
   * Validates input, initialises the Execution (Start, then a Snapshot → Restore round trip),
   * commits the start checkpoint, and only then publishes the Process.
   */
  async start(deployment: Deployment, input: Payload, options: StartOptions = {}): Promise<Process> {
    this.#guard();
    if (options.signal?.aborted === true) throw new KernelError(ErrorCode.invalidProcessControl, 'the start context is already canceled');
    if (!(deployment instanceof Deployment)) throw new KernelError(ErrorCode.invalidDeployment, 'expected a Deployment');
    if (!(input instanceof Payload)) throw new KernelError(ErrorCode.invalidPayload, 'expected a Payload input');
    deployment.descriptor.validateInput(input);
    // Per-start narrowing (see StartOptions.budget); absent members keep the grant.
    const budget = options.budget ?? this.#budget;
    const capabilities = options.capabilities ?? this.#capabilities;
    const treeLimits = options.treeLimits ?? this.#treeLimits;
    if (!(budget instanceof Budget) || !this.#budget.covers(budget)) {
      throw new KernelError(ErrorCode.invalidBudget, 'the start budget must be a Budget within the engine grant');
    }
    if (!(capabilities instanceof CapabilitySet) || !this.#capabilities.allows(capabilities)) {
      throw new KernelError(ErrorCode.invalidCapability, 'the start capabilities must be within the engine grant');
    }
    if (!(treeLimits instanceof TreeLimits)) throw new KernelError(ErrorCode.invalidTreeLimits, 'the start tree limits must be TreeLimits');
    const processId = ProcessId.newRoot();
    const relation = ProcessRelation.root(processId);
    const admission: ProcessAdmission = Object.freeze({ processId, relation, deploymentRef: deployment.ref, descriptor: deployment.descriptor, budget, capabilities });
    this.#reserved.add(processId.toString());
    this.#pendingAdmissions += 1;
    try {
      const rejection = await this.#admission(admission);
      if (rejection !== undefined) {
        throw new KernelError(ErrorCode.processAdmissionRejected, `admission rejected: ${(rejection.error as Error).message}`, { cause: rejection.error });
      }
      const startedAt = formatUtcTimestamp(this.#clock.now());
      const initialization = await initialize(deployment.definition, input);
      if (initialization.kind === 'failed') {
        // The start fails with its own error whatever the acknowledger answers.
        await this.#acknowledge({ status: 'failed', admission, failure: initialization.failure, error: initialization.error });
        throw new KernelError(ErrorCode.processStartFailed, initialization.failure.message, { cause: initialization.error });
      }
      const state = initialization.state;
      const unacknowledged = await this.#acknowledge({ status: 'initialized', admission, startedAt });
      if (unacknowledged !== undefined) {
        throw new KernelError(ErrorCode.processStartFailed, 'the initialisation outcome was not acknowledged', { cause: unacknowledged.error });
      }
      const snapshot = ProcessSnapshot.create({
        relation,
        deploymentRef: deployment.ref,
        startedAt,
        status: 'running',
        committedSteps: 0n,
        budget,
        capabilities,
        committedExecutionState: state,
      });
      const tree = TreeSnapshot.create({ incarnationId: TreeIncarnationId.random(), treeLimits, processes: [snapshot] });
      admitTree(tree);
      const runtime = this.#runtime(tree, 1n, new Map([[processId.toString(), deployment]]));
      const process = runtime.process(processId);
      if (process === undefined) throw new KernelError(ErrorCode.invalidTreeSnapshot, 'the start tree lost its root');
      const opening = runtime.openingEvents(eventNames.processStarted);
      try {
        await this.#committer.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: tree }), {
          events: opening,
          hostValues: options.hostValues,
        });
      } catch (error) {
        throw thrownBy('TreeCommitter.commitCheckpoint', error);
      }
      const handle = this.#register(runtime);
      runtime.begin(opening);
      this.#watchStartContext(handle, options.signal);
      return handle;
    } finally {
      this.#reserved.delete(processId.toString());
      this.#pendingAdmissions -= 1;
    }
  }

  /** Start, then wait for the terminal Result and the tree's owned work (a RuntimeError rejects). */
  async run(deployment: Deployment, input: Payload, options: StartOptions = {}): Promise<Result> {
    const process = await this.start(deployment, input, options);
    const result = await process.await();
    await process.join();
    return result;
  }

  #watchStartContext(process: Process, signal: AbortSignal | undefined): void {
    if (signal === undefined) return;
    const onAbort = () => {
      const reason = signal.reason as unknown;
      const timeout = reason instanceof Error && reason.name === 'TimeoutError';
      const tree = this.#trees.get(process.id.toString());
      const runtime = tree?.process(process.id);
      if (tree === undefined || runtime === undefined || runtime.snapshot.isTerminal) return;
      const text = reason instanceof Error && reason.message.trim() !== '' ? reason.message.trim().slice(0, 1024) : timeout ? 'host deadline' : 'host cancellation';
      void tree
        .requestTermination(runtime, timeout ? { deadline: { owner: 'host', reason: text } } : { cancellation: { owner: 'host', reason: text } })
        .catch(() => undefined);
    };
    // The context may have been aborted while the start was being admitted and committed: an
    // abort event that already fired will not fire again, so apply it now.
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    // A watched context keeps its tree resident: a released tree could not apply the abort.
    const id = process.id.toString();
    this.#watchedStarts.add(id);
    const unwatch = () => {
      signal.removeEventListener('abort', onAbort);
      this.#watchedStarts.delete(id);
    };
    void process.await().then(unwatch, unwatch);
  }

  #runtime(tree: TreeSnapshot, sequence: bigint, deployments: ReadonlyMap<string, Deployment>): TreeRuntime {
    return new TreeRuntime(
      {
        committer: this.#committer,
        clock: this.#clock,
        events: this.#events,
        deltas: this.#deltas,
        admitChild: (request) => this.#admitChild(request),
        onPublished: (runtime, process) => this.#handles.set(process.id.toString(), new Process(runtime, process, this.#events)),
      },
      tree,
      sequence,
      deployments,
    );
  }

  /**
   * The admission job of one child (kernel-contract §4.15), outside the owner lane: resolve the
   * deployment, validate the input, ask the admitter, initialise, acknowledge. Every refusal is a
   * Failure with the contract's code, so the parent's Effect settles definitely failed.
   */
  async #admitChild(request: ChildAdmissionRequest): Promise<ChildAdmissionOutcome> {
    const { spec, childId, relation } = request;
    let deployment: Deployment;
    try {
      deployment = this.#childDeployment(request.parentDeployment, spec.deploymentRef);
    } catch (error) {
      const kind = CallbackPanicError.is(error) ? 'panic' : 'external';
      return failed(admissionFailure(kind, 'engine.child.deployment_unavailable', 'the child deployment is unavailable', error));
    }
    try {
      deployment.descriptor.validateInput(spec.input);
    } catch (error) {
      return failed(admissionFailure('contract', 'engine.child.input.invalid', 'the child input does not satisfy its descriptor', error));
    }
    const admission: ProcessAdmission = Object.freeze({
      processId: childId,
      relation,
      deploymentRef: deployment.ref,
      descriptor: deployment.descriptor,
      budget: spec.budget,
      capabilities: spec.capabilities,
    });
    const rejection = await this.#admission(admission);
    if (rejection !== undefined) {
      // A host refusal that classifies itself (an interrupt barrier: `engine.child.interrupt_pending`)
      // keeps its code, so the parent can tell a policy's refusal from a transient hold.
      const declared = CallbackPanicError.is(rejection.error) ? undefined : stepFailure(rejection.error);
      if (declared !== undefined) return failed(declared);
      const kind = CallbackPanicError.is(rejection.error) ? 'panic' : 'execution';
      return failed(admissionFailure(kind, 'engine.child.admission.rejected', 'the child admission was rejected', rejection.error));
    }
    const startedAt = formatUtcTimestamp(this.#clock.now());
    const initialization = await initialize(deployment.definition, spec.input);
    if (initialization.kind === 'failed') {
      // The acknowledger learns of the failure; the parent gets the initialisation's own failure.
      await this.#acknowledge({ status: 'failed', admission, failure: initialization.failure, error: initialization.error });
      return failed(initialization.failure);
    }
    const unacknowledged = await this.#acknowledge({ status: 'initialized', admission, startedAt });
    if (unacknowledged !== undefined) {
      const kind = CallbackPanicError.is(unacknowledged.error) ? 'panic' : 'external';
      return failed(admissionFailure(kind, 'engine.child.initialization_outcome.unacknowledged', 'the child initialisation was not acknowledged', unacknowledged.error));
    }
    return { kind: 'admitted', deployment, state: initialization.state, startedAt };
  }

  /** Runs the ProcessAdmitter; its rejection (a CallbackPanicError for a panic), or undefined when admitted. */
  async #admission(admission: ProcessAdmission): Promise<{ readonly error: unknown } | undefined> {
    if (this.#admitter === undefined) return undefined;
    try {
      await this.#admitter(admission);
      return undefined;
    } catch (thrown) {
      return { error: thrownBy('ProcessAdmitter.admit', thrown) };
    }
  }

  /** Hands `outcome` to the acknowledger; its refusal (a CallbackPanicError for a panic), or undefined. */
  async #acknowledge(outcome: ProcessInitializationOutcome): Promise<{ readonly error: unknown } | undefined> {
    if (this.#acknowledger === undefined) return undefined;
    try {
      await this.#acknowledger(Object.freeze(outcome));
      return undefined;
    } catch (thrown) {
      return { error: thrownBy('ProcessInitializationAcknowledger.acknowledge', thrown) };
    }
  }

  /**
   * A child's exact Deployment: its parent's own when the refs are equal, the parent's static
   * binding, else the resolver for children named by runtime input (kernel-contract §4.14).
   */
  #childDeployment(parent: Deployment, ref: DeploymentRef): Deployment {
    if (ref.equals(parent.ref)) return parent;
    return parent.childDeployment(ref) ?? this.#resolve(ref);
  }

  #register(runtime: TreeRuntime): Process {
    this.#trees.set(runtime.rootId.toString(), runtime);
    let root: Process | undefined;
    for (const process of runtime.processes()) {
      const handle = new Process(runtime, process, this.#events);
      this.#handles.set(process.id.toString(), handle);
      if (process.id.equals(runtime.rootId)) root = handle;
    }
    return root as Process;
  }

  // -------------------------------------------------------------------------------------------
  // Lookup, inspection, capture

  process(id: ProcessId): Process | undefined {
    return this.#handles.get(id.toString());
  }

  #tree(rootId: ProcessId): TreeRuntime {
    const tree = this.#trees.get(rootId.toString());
    if (tree === undefined) throw new KernelError(ErrorCode.treeNotFound, `tree ${rootId} is not registered with this engine`);
    return tree;
  }

  /** The last acknowledged head and live work of every member (inspection never drives execution). */
  inspectTree(rootId: ProcessId): TreeInspection {
    this.#guardReentrancy();
    const tree = this.#tree(rootId);
    const head = tree.head;
    return {
      rootId,
      incarnationId: tree.incarnationId,
      headDigest: head.digest,
      stopped: tree.stopped !== undefined,
      processes: tree.processes().map((process) => ({
        snapshot: process.snapshot,
        work: tree.workOf(process),
        runtimeError: tree.stopped,
      })),
    };
  }

  /**
   * Quiesces the tree at safe boundaries (in-flight Effects settle first) and returns the
   * acknowledged head. After a runtime failure, load the head from the store instead. An abort of
   * `signal` while in-flight work is still settling ends the wait with its reason and lets the tree
   * run on (nothing was held past it).
   */
  async captureTree(rootId: ProcessId, signal?: AbortSignal): Promise<TreeSnapshot> {
    this.#guardReentrancy();
    const tree = this.#tree(rootId);
    const release = await tree.freeze(signal);
    try {
      if (tree.stopped !== undefined) throw tree.stopped;
      return tree.head;
    } finally {
      release();
    }
  }

  /** Waits for the tree to settle, then forgets it; handles keep their outcomes, the store keeps the head. */
  async releaseTree(rootId: ProcessId): Promise<void> {
    this.#guardReentrancy();
    const tree = this.#tree(rootId);
    await Promise.all(tree.processes().map((process) => process.result.promise.catch(() => undefined)));
    await tree.whenIdle();
    this.#trees.delete(rootId.toString());
    for (const process of tree.processes()) this.#handles.delete(process.id.toString());
  }

  /**
   * Releases a parked tree from memory — every Process waiting, paused, blocked on an Unknown effect
   * or terminal, with no Step, dispatch (but parkable ones: `Dispatcher.parkable`, durable timers),
   * admission, adjudication, capture, queued command or watched start context — and resolves true; a
   * tree with work stays and resolves false. The store's head is the whole state (nothing is
   * committed): `restoreTree` continues from it, replaying parked dispatches. The released handles
   * keep their snapshots; their commands and unresolved results reject with `tree_released`.
   */
  async hibernateTree(rootId: ProcessId): Promise<boolean> {
    this.#guardReentrancy();
    const key = rootId.toString();
    const tree = this.#tree(rootId);
    if (tree.processes().some((process) => this.#watchedStarts.has(process.id.toString()))) return false;
    return tree.hibernate(() => {
      // In the same turn as the release: no lookup can find a handle that only refuses.
      if (this.#trees.get(key) === tree) this.#trees.delete(key);
      for (const process of tree.processes()) this.#handles.delete(process.id.toString());
    });
  }

  // -------------------------------------------------------------------------------------------
  // Restore

  /**
   * Checks that `snapshot` can be restored with `rootDeployment` (and the resolver for other
   * members) without reserving or activating anything.
   */
  async validateRestorableTree(rootDeployment: Deployment, snapshot: TreeSnapshot): Promise<void> {
    await this.#prepareRestore(rootDeployment, snapshot);
  }

  /**
   * Activates a new writer for `snapshot` (fencing the previous one), then publishes its handles
   * and resumes execution. Pending dispatches replay only under a `same_identity` policy; otherwise
   * they become Unknown. Terminal members stay inert evidence.
   */
  async restoreTree(rootDeployment: Deployment, snapshot: TreeSnapshot): Promise<Process> {
    this.#guard();
    if (!(snapshot instanceof TreeSnapshot)) throw new KernelError(ErrorCode.invalidTreeSnapshot, 'expected a TreeSnapshot');
    const ids = snapshot.processSnapshots().map((process) => process.processId.toString());
    for (const id of ids) {
      if (this.#handles.has(id) || this.#reserved.has(id)) {
        throw new KernelError(ErrorCode.processAlreadyExists, `process ${id} is already registered with this engine`);
      }
    }
    for (const id of ids) this.#reserved.add(id);
    this.#pendingAdmissions += 1;
    try {
      const deployments = await this.#prepareRestore(rootDeployment, snapshot);
      const incarnation = TreeIncarnationId.random();
      const prospective = snapshot.withIncarnation(incarnation);
      const runtime = this.#runtime(prospective, 0n, deployments);
      const opening = runtime.openingEvents(eventNames.processRestored);
      await runtime.activate(snapshot.incarnationId, snapshot.digest, opening);
      const root = this.#register(runtime);
      runtime.begin(opening);
      return root;
    } finally {
      for (const id of ids) this.#reserved.delete(id);
      this.#pendingAdmissions -= 1;
    }
  }

  /** The restore preparation pass: exact deployments, restorable states, admissible capacity. */
  async #prepareRestore(rootDeployment: Deployment, snapshot: TreeSnapshot): Promise<Map<string, Deployment>> {
    if (!(rootDeployment instanceof Deployment)) throw new KernelError(ErrorCode.invalidDeployment, 'expected a Deployment');
    if (!rootDeployment.ref.equals(snapshot.root.deploymentRef)) {
      throw new KernelError(
        ErrorCode.invalidDeployment,
        `the tree was captured with ${snapshot.root.deploymentRef}, not ${rootDeployment.ref}`,
      );
    }
    const deployments = new Map<string, Deployment>();
    // Canonical order is depth first, so every parent's Deployment is known before its children:
    // children restore from their parent's bindings, transitively (kernel-contract §4.17).
    for (const process of snapshot.processSnapshots()) {
      const ref = process.deploymentRef;
      const parentId = process.relation.parentId;
      const parent = parentId === undefined ? undefined : deployments.get(parentId.toString());
      const deployment =
        parentId === undefined ? rootDeployment : parent === undefined ? this.#resolve(ref) : this.#childDeployment(parent, ref);
      deployments.set(process.processId.toString(), deployment);
      // Answers admitted under the wait contracts this deployment declares (run-time ones were
      // checked when the snapshot was decoded), terminal evidence included.
      const contract = waitContractProblem(deployment.descriptor, process);
      if (contract !== undefined) {
        throw new KernelError(ErrorCode.invalidTreeSnapshot, `process ${process.processId} contradicts its wait contracts: ${contract}`);
      }
      const schemas = restoreSchemaProblem(deployment.descriptor, process);
      if (schemas !== undefined) throw new KernelError(ErrorCode.invalidTreeSnapshot, `process ${process.processId}: ${schemas}`);
      if (process.isTerminal) continue;
      const signal = new AbortController().signal;
      try {
        await deployment.definition.restore(process.committedExecutionState, signal);
        if (process.prepared !== undefined) await deployment.definition.restore(process.prepared.candidateState, signal);
      } catch (thrown) {
        const error = thrownBy('Definition.restore', thrown);
        throw new KernelError(ErrorCode.invalidTreeSnapshot, `process ${process.processId} does not restore: ${(error as Error).message}`, { cause: error });
      }
      for (const effect of process.prepared?.effects() ?? []) {
        if (effect.effect.target === 'dispatcher' && deployment.dispatcher === undefined) {
          throw new KernelError(ErrorCode.invalidTreeSnapshot, `process ${process.processId} retains a dispatcher effect but its deployment has no dispatcher`);
        }
      }
    }
    admitTree(snapshot);
    return deployments;
  }

  #resolve(ref: DeploymentRef): Deployment {
    if (this.#resolver === undefined) throw new KernelError(ErrorCode.deploymentUnavailable, `no resolver for ${ref}`);
    let deployment: Deployment;
    try {
      deployment = this.#resolver.resolve(ref);
    } catch (error) {
      // Its one rejection is deployment_unavailable; any other throw is a panic.
      if (error instanceof KernelError && error.code === ErrorCode.deploymentUnavailable) throw error;
      throw new CallbackPanicError('DeploymentResolver.resolve', error);
    }
    if (!(deployment instanceof Deployment) || !deployment.ref.equals(ref)) {
      throw new KernelError(ErrorCode.deploymentUnavailable, `the resolver did not return exactly ${ref}`);
    }
    return deployment;
  }

  // -------------------------------------------------------------------------------------------
  // Observation and shutdown

  /** An ordering barrier: resolves once every Delta enqueued before the call was delivered. */
  flushDeltas(): Promise<void> {
    return this.#deltas.flush();
  }

  observationFailures(): ObservationFailures {
    return this.#failures.snapshot();
  }

  /**
   * Closes the Engine: refused (`engine_has_active_processes`) while a start or restore is pending
   * or any tree still has live Processes or owned work — blocked storage included. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#pendingAdmissions > 0 || [...this.#trees.values()].some((tree) => tree.active)) {
      throw new KernelError(ErrorCode.engineHasActiveProcesses, 'the engine still has active processes');
    }
    this.#closed = true;
    await this.#deltas.close();
  }

  #guard(): void {
    this.#guardReentrancy();
    if (this.#closed) throw new KernelError(ErrorCode.engineClosed, 'the engine is closed');
  }

  #guardReentrancy(): void {
    if (this.#events.inListener) {
      throw new KernelError(ErrorCode.listenerReentrancy, 'an event listener cannot call back into the engine and wait');
    }
  }
}

function invalidConfig(message: string): KernelError {
  return new KernelError(ErrorCode.invalidEngineConfig, `invalid engine config: ${message}`);
}
