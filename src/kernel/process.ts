import type { Budget } from './budget.js';
import type { CapabilitySet } from './capability.js';
import type { DeploymentRef } from './deployment.js';
import { abortable } from './deferred.js';
import { ErrorCode, KernelError } from './errors.js';
import type { EffectId, ProcessId } from './identity.js';
import type { EventPublisher } from './observation.js';
import type { ProcessRelation } from './relation.js';
import type { Result } from './result.js';
import { Settlement } from './settlement.js';
import { SignalRequest } from './signal.js';
import { validDiagnostic } from './failure.js';
import type { HostValues, ProcessRuntime, TreeControlAction, TreeRuntime } from './tree-runtime.js';

const treeControlActions: readonly string[] = ['pause', 'resume', 'cancel', 'kill'];

/** Options of a control command. */
export interface ControlOptions {
  /**
   * Values handed to the committer with the commit that records the control (`CommitContext.hostValues`),
   * e.g. who sent it, to write atomically with it. The kernel never reads them; none when nothing is committed.
   */
  readonly hostValues?: HostValues;
}

function hostValuesOf(options: ControlOptions): HostValues | undefined {
  if (options.hostValues !== undefined && (typeof options.hostValues !== 'object' || options.hostValues === null)) {
    throw new KernelError(ErrorCode.invalidProcessControl, 'hostValues must be an object');
  }
  return options.hostValues;
}

/**
 * The handle of one Engine-owned Process. Every command goes through its tree's single owner; a
 * resolved command means its commit was acknowledged: its effect (signals, resume, resolution) or,
 * for pause, cancellation and kill, its intent — which then survives a crash (`await()` tells how
 * the Process ended). A commit that fails stops the writer and rejects with a RuntimeError.
 */
export class Process {
  readonly #tree: TreeRuntime;
  readonly #runtime: ProcessRuntime;
  readonly #events: EventPublisher;

  /** @internal Created by the Engine only. */
  constructor(tree: TreeRuntime, runtime: ProcessRuntime, events: EventPublisher) {
    this.#tree = tree;
    this.#runtime = runtime;
    this.#events = events;
    Object.freeze(this);
  }

  get id(): ProcessId {
    return this.#runtime.id;
  }

  get relation(): ProcessRelation {
    return this.#runtime.snapshot.relation;
  }

  get deploymentRef(): DeploymentRef {
    return this.#runtime.snapshot.deploymentRef;
  }

  get budget(): Budget {
    return this.#runtime.snapshot.budget;
  }

  get capabilities(): CapabilitySet {
    return this.#runtime.snapshot.capabilities;
  }

  /** RFC 3339 UTC start time. */
  get startedAt(): string {
    return this.#runtime.snapshot.startedAt;
  }

  /**
   * The terminal Result once its terminal checkpoint is acknowledged. A failed Process is a valid
   * Result; a stopped writer rejects with RuntimeError instead (no Result is invented).
   */
  await(options: { signal?: AbortSignal } = {}): Promise<Result> {
    this.#guardReentrancy();
    return abortable(this.#runtime.result.promise, options.signal);
  }

  /**
   * Waits until this Process and every descendant have finished their owned work and published
   * their results in this runtime (siblings and ancestors may still run); a stopped writer's
   * RuntimeError is rethrown once the subtree's jobs have returned. Canceling `signal` stops only
   * this wait.
   */
  async join(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.#guardReentrancy();
    await abortable(
      this.#runtime.result.promise.then(
        () => this.#tree.whenSubtreeSettled(this.#runtime),
        async (error: unknown) => {
          await this.#tree.whenSubtreeSettled(this.#runtime);
          throw error;
        },
      ),
      options.signal,
    );
  }

  /**
   * Admits an ordered batch atomically: all new identities or none. Identical re-deliveries are
   * deduplicated without a second charge; returns false when every identity was already known.
   */
  async deliverSignals(...requests: SignalRequest[]): Promise<boolean> {
    this.#guardReentrancy();
    if (requests.length === 0) throw new KernelError(ErrorCode.invalidSignalRequest, 'a signal batch needs at least one request');
    for (const request of requests) {
      if (!(request instanceof SignalRequest)) throw new KernelError(ErrorCode.invalidSignalRequest, 'expected SignalRequest values');
    }
    return this.#tree.deliverSignals(this.#runtime, requests);
  }

  /**
   * Pauses at the next safe boundary (in-flight Effects settle first; a racing Wait candidate is
   * discarded, any other is adopted first). Resolves once the pause is in the authoritative head:
   * the paused checkpoint, or one recording it as `pending_control` while work is in flight.
   */
  pause(reason: string, options: ControlOptions = {}): Promise<void> {
    this.#guardReentrancy();
    return this.#tree.pause(this.#runtime, controlReason(reason), hostValuesOf(options));
  }

  /** Resumes a paused Process: back to its unanswered wait, or running. */
  resume(options: ControlOptions = {}): Promise<void> {
    this.#guardReentrancy();
    return this.#tree.resume(this.#runtime, hostValuesOf(options));
  }

  /**
   * Records host cancellation; in-flight external work still settles, planned Effects never start.
   * Resolves once it is in the authoritative head: the terminal checkpoint when the Process can end
   * at once, otherwise one recording it as `pending_control` (a restore applies it first).
   */
  requestCancellation(reason: string, options: ControlOptions = {}): Promise<void> {
    this.#guardReentrancy();
    return this.#tree.requestTermination(this.#runtime, { cancellation: { owner: 'host', reason: controlReason(reason) } }, hostValuesOf(options));
  }

  /** Records a kill, the highest-priority terminal intent; resolves as `requestCancellation` does. */
  kill(reason: string, options: ControlOptions = {}): Promise<void> {
    this.#guardReentrancy();
    return this.#tree.requestTermination(this.#runtime, { killReason: controlReason(reason) }, hostValuesOf(options));
  }

  /**
   * Controls this Process's whole tree at once: one commit records `action` on every live member
   * before any is signalled (cancel and kill: the root as the host's intent, descendants as their
   * parent's; pause: paused at once or pending; resume: every paused member). Resolves with how
   * many members that commit changed; zero commits nothing. `reason` is ignored by resume.
   */
  controlTree(action: TreeControlAction, reason: string, options: ControlOptions = {}): Promise<number> {
    this.#guardReentrancy();
    if (!treeControlActions.includes(action)) throw new KernelError(ErrorCode.invalidProcessControl, 'a tree control is pause, resume, cancel or kill');
    return this.#tree.controlTree(action, action === 'resume' ? reason : controlReason(reason), hostValuesOf(options));
  }

  /** Replaces a retained Unknown with a definite settlement (host adjudication); resolves after commit. */
  resolveUnknownEffect(effectId: EffectId, settlement: Settlement): Promise<void> {
    this.#guardReentrancy();
    if (!(settlement instanceof Settlement)) throw new KernelError(ErrorCode.invalidSettlement, 'expected a Settlement');
    return this.#tree.resolveUnknownEffect(this.#runtime, effectId, settlement);
  }

  /**
   * Repeats the Dispatch of a retained Unknown under its original identity, when its replay policy
   * is `same_identity`. Resolves once a definite result commits; another uncertain attempt rejects
   * with `effect_outcome_unknown` and leaves the Unknown in place.
   */
  replayUnknownEffect(effectId: EffectId): Promise<void> {
    this.#guardReentrancy();
    return this.#tree.replayUnknownEffect(this.#runtime, effectId);
  }

  #guardReentrancy(): void {
    if (this.#events.inListener) {
      throw new KernelError(ErrorCode.listenerReentrancy, 'an event listener cannot wait for its own tree owner');
    }
  }
}

function controlReason(reason: string): string {
  if (!validDiagnostic(reason)) {
    throw new KernelError(ErrorCode.invalidProcessControl, 'a control reason must be non-empty trimmed UTF-8 of at most 4096 bytes');
  }
  return reason;
}
