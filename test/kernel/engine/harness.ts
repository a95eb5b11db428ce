/**
 * Shared fixtures of the Engine behaviour tests: deferred promises and gates, a committer wrapper
 * that records (and can hold or break) every commit, a programmable Definition whose every call is
 * logged, and small helpers for deployments, signals and expected rejections. Nothing here sleeps:
 * tests synchronise on gates, recorded commits and `ObservationRecorder.awaitEvent`.
 */
import assert from 'node:assert/strict';
import { EffectBoundary, TreeCheckpoint, type TreeActivation } from '../../../src/kernel/commit.js';
import type { Definition, Dispatcher, Execution } from '../../../src/kernel/definition.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Descriptor, type DescriptorConfig } from '../../../src/kernel/descriptor.js';
import { Digest } from '../../../src/kernel/digest.js';
import { KernelError } from '../../../src/kernel/errors.js';
import { Engine, type EngineConfig } from '../../../src/kernel/engine.js';
import type { Event } from '../../../src/kernel/event.js';
import { ExecutionState } from '../../../src/kernel/execution-state.js';
import type { ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Schema } from '../../../src/kernel/schema.js';
import { SignalRequest } from '../../../src/kernel/signal.js';
import type { Signal } from '../../../src/kernel/signal.js';
import type { Transition } from '../../../src/kernel/transition.js';
import type { CommitContext, TreeStore } from '../../../src/kernel/tree-committer.js';
import type { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import { MemoryTreeCommitter } from '../../../src/store/memory-committer.js';
import { ObservationRecorder } from '../../../src/testing/scripted-dispatcher.js';

// ---------------------------------------------------------------------------------------------
// Promises

export { deferred, type Deferred } from '../../../src/kernel/deferred.js';

/**
 * Lets every already queued promise reaction and I/O callback run (one macrotask turn). It is a
 * barrier, not a sleep: it only proves that work which was *not* waiting on something else had its
 * chance to run, which is what "X must not have happened yet" assertions need.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Whether `promise` has settled (checked after a {@link settle} turn). */
export async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await settle();
  return done;
}

/** Asserts that `action` rejects (or throws) a KernelError with `code`; returns it. */
export async function rejectsWith(action: Promise<unknown> | (() => unknown), code: string): Promise<KernelError> {
  let caught: unknown;
  try {
    await (typeof action === 'function' ? action() : action);
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof KernelError, `expected a KernelError ${code}, got ${caught === undefined ? 'no error' : String(caught)}`);
  assert.equal(caught.code, code, `expected ${code}, got ${caught.code}: ${caught.message}`);
  return caught;
}

// ---------------------------------------------------------------------------------------------
// The recording committer

/** What one commit call was: a checkpoint kind, an Effect boundary kind, or an activation. */
export interface CommitRecord {
  readonly type: 'checkpoint' | 'effect' | 'activation';
  /** Checkpoint kind (`start`, `progress`, …), Effect boundary kind (`pending`, …) or `activation`. */
  readonly kind: string;
  readonly sequence: bigint;
  readonly snapshot: TreeSnapshot;
  readonly effectId?: string;
  /** The committed-phase events the Engine handed over with the commit. */
  readonly events: readonly Event[];
}

/**
 * Decides what happens to one commit: `undefined` passes it through; otherwise `before` runs (and is
 * awaited) before the store sees it, and `fail` makes the call reject — before applying (`'before'`)
 * or after applying, as a lost response (`'after'`).
 */
export interface CommitInterception {
  readonly before?: () => Promise<void> | void;
  readonly fail?: { readonly when: 'before' | 'after'; readonly error: unknown };
}

/**
 * A TreeStore over MemoryTreeCommitter that records every call: `attempts` when a call arrives,
 * `acknowledged` once it is applied and about to be acknowledged. `intercept` can hold a commit
 * open (a gate), fail it before applying, or apply it and then lose the reply.
 */
export class RecordingCommitter implements TreeStore {
  readonly store: MemoryTreeCommitter;
  readonly attempts: CommitRecord[] = [];
  readonly acknowledged: CommitRecord[] = [];
  intercept: (record: CommitRecord) => CommitInterception | undefined = () => undefined;
  readonly #arrivals: Array<{ predicate: (record: CommitRecord) => boolean; resolve: (record: CommitRecord) => void }> = [];
  readonly #acks: Array<{ predicate: (record: CommitRecord) => boolean; resolve: (record: CommitRecord) => void }> = [];

  constructor(store: MemoryTreeCommitter = new MemoryTreeCommitter()) {
    this.store = store;
  }

  /** Kinds of acknowledged commits, in order (`start`, `pending`, `settled`, `terminal`, …). */
  kinds(): string[] {
    return this.acknowledged.map((record) => record.kind);
  }

  /** Resolves with the first commit attempt (already made or later) matching `predicate`. */
  arrival(predicate: (record: CommitRecord) => boolean): Promise<CommitRecord> {
    const found = this.attempts.find(predicate);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve) => this.#arrivals.push({ predicate, resolve }));
  }

  /**
   * Resolves with the first commit (already acknowledged or later) matching `predicate`, once the
   * store applied it. The Engine installs it in memory right after; commands queued behind the
   * committing owner operation observe it.
   */
  acknowledgement(predicate: (record: CommitRecord) => boolean): Promise<CommitRecord> {
    const found = this.acknowledged.find(predicate);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve) => this.#acks.push({ predicate, resolve }));
  }

  commitCheckpoint(checkpoint: TreeCheckpoint, context?: CommitContext): Promise<void> {
    return this.#run(
      { type: 'checkpoint', kind: checkpoint.kind, sequence: checkpoint.sequence, snapshot: checkpoint.snapshot, events: context?.events ?? [] },
      () => this.store.commitCheckpoint(checkpoint),
    );
  }

  commitEffect(boundary: EffectBoundary, context?: CommitContext): Promise<void> {
    return this.#run(
      {
        type: 'effect',
        kind: boundary.kind,
        sequence: boundary.sequence,
        snapshot: boundary.snapshot,
        effectId: boundary.effectId.toString(),
        events: context?.events ?? [],
      },
      () => this.store.commitEffect(boundary),
    );
  }

  activateTree(activation: TreeActivation, context?: CommitContext): Promise<void> {
    return this.#run(
      { type: 'activation', kind: 'activation', sequence: 0n, snapshot: activation.snapshot, events: context?.events ?? [] },
      () => this.store.activateTree(activation),
    );
  }

  loadTree(rootId: ProcessId): Promise<TreeSnapshot | undefined> {
    return this.store.loadTree(rootId);
  }

  async #run(record: CommitRecord, apply: () => Promise<void>): Promise<void> {
    this.attempts.push(record);
    for (const waiter of [...this.#arrivals]) {
      if (waiter.predicate(record)) {
        this.#arrivals.splice(this.#arrivals.indexOf(waiter), 1);
        waiter.resolve(record);
      }
    }
    const interception = this.intercept(record);
    await interception?.before?.();
    if (interception?.fail?.when === 'before') throw interception.fail.error;
    await apply();
    if (interception?.fail?.when === 'after') throw interception.fail.error;
    this.acknowledged.push(record);
    for (const waiter of [...this.#acks]) {
      if (waiter.predicate(record)) {
        this.#acks.splice(this.#acks.indexOf(waiter), 1);
        waiter.resolve(record);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// A programmable Definition

/** The state of a programmed Execution: how many Steps it has taken, plus free-form notes. */
export interface ProgramState {
  readonly step: number;
  readonly note?: string;
}

/** What a programmed Step sees. */
export interface ProgramStepContext {
  /** 1-based number of this Step for this state (state.step + 1). */
  readonly step: number;
  readonly state: ProgramState;
  readonly signals: readonly Signal[];
  readonly abort: AbortSignal;
}

export interface ProgramOptions {
  readonly name?: string;
  readonly signalSchema?: Schema;
  readonly inputSchema?: Schema;
  readonly outputSchema?: Schema;
  /** Static wait declarations of the descriptor. */
  readonly waits?: DescriptorConfig['waits'];
  /**
   * The Step: returns the Transition (and optionally a note to keep in the next state) or throws.
   * The state advances only when a Transition is returned.
   */
  step(context: ProgramStepContext): { transition: Transition; note?: string } | Transition | Promise<Transition>;
  /** The static child bindings (`Definition.childDeployments`); default none. */
  readonly childDeployments?: () => readonly Deployment[];
  /** Called on every restore with the state being restored; a throw makes the restore fail. */
  onRestore?(state: ProgramState): void;
  /** Called on every snapshot with the state being captured; a throw makes the snapshot fail. */
  onSnapshot?(state: ProgramState): void;
}

/** A log entry of a programmed Definition. */
export type ProgramCall =
  | { readonly call: 'start' }
  | { readonly call: 'restore'; readonly step: number }
  | { readonly call: 'step'; readonly step: number; readonly window: number }
  | { readonly call: 'snapshot'; readonly step: number };

const anyValue = Schema.of(true);

/** A Definition driven by a test function, with a log of every start, restore, step and snapshot. */
export class ProgramDefinition implements Definition {
  readonly calls: ProgramCall[] = [];
  readonly #options: ProgramOptions;
  readonly #descriptor: Descriptor;
  readonly #kind: string;

  constructor(options: ProgramOptions) {
    this.#options = options;
    const name = options.name ?? 'test.program';
    this.#kind = name;
    this.#descriptor = Descriptor.create({
      name,
      description: 'A test Definition whose Steps are programmed by the test.',
      inputSchema: options.inputSchema ?? anyValue,
      outputSchema: options.outputSchema ?? anyValue,
      signalSchema: options.signalSchema,
      waits: options.waits,
    });
  }

  descriptor(): Descriptor {
    return this.#descriptor;
  }

  childDeployments(): readonly Deployment[] {
    return this.#options.childDeployments?.() ?? [];
  }

  start(): Execution {
    this.calls.push({ call: 'start' });
    return this.#execution({ step: 0 });
  }

  restore(state: ExecutionState, signal: AbortSignal): Execution {
    signal.throwIfAborted();
    const decoded = state.decode<ProgramState>(this.#kind);
    this.calls.push({ call: 'restore', step: decoded.step });
    this.#options.onRestore?.(decoded);
    return this.#execution(decoded);
  }

  /** The calls of one kind, in order. */
  callsOf<K extends ProgramCall['call']>(call: K): Extract<ProgramCall, { call: K }>[] {
    return this.calls.filter((entry): entry is Extract<ProgramCall, { call: K }> => entry.call === call);
  }

  #execution(initial: ProgramState): Execution {
    let state = initial;
    const options = this.#options;
    const calls = this.calls;
    const kind = this.#kind;
    return {
      async step(abort: AbortSignal, signals: readonly Signal[]): Promise<Transition> {
        const step = state.step + 1;
        calls.push({ call: 'step', step, window: signals.length });
        const outcome = await options.step({ step, state, signals, abort });
        const { transition, note } = 'transition' in outcome ? outcome : { transition: outcome, note: state.note };
        state = note === undefined ? { step } : { step, note };
        return transition;
      },
      snapshot(): ExecutionState {
        calls.push({ call: 'snapshot', step: state.step });
        options.onSnapshot?.(state);
        return ExecutionState.encode(kind, state);
      },
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Deployments, signals, events

let deploymentCounter = 0;

/** Binds `definition` (and an optional dispatcher) under fresh digests. */
export function deploy(definition: Definition, dispatcher?: Dispatcher, label = `test-${++deploymentCounter}`): Deployment {
  return Deployment.create({
    definition,
    dispatcher,
    implementationDigest: Digest.of(`implementation:${label}`),
    configurationDigest: Digest.of(`configuration:${label}`),
  });
}

/** An unaddressed Host signal request. */
export function hostRequest(id: string, value: unknown): SignalRequest {
  return SignalRequest.create({ id, payload: Payload.encode(value) });
}

/** The names of `events`, optionally only those of one Process. */
export function names(events: readonly Event[], processId?: ProcessId): string[] {
  return events.filter((event) => processId === undefined || event.processId.equals(processId)).map((event) => event.name);
}

/**
 * Resolves with the `count`-th Event (already recorded or later) for which `predicate` holds: the
 * predicate is called once per recorded Event, in order, so counting inside it is exact.
 */
export function nthEvent(recorder: ObservationRecorder, predicate: (event: Event) => boolean, count = 1): Promise<Event> {
  let seen = 0;
  return recorder.awaitEvent((event) => predicate(event) && ++seen === count);
}

/** Resolves once `processId` has committed a Step leaving it in `status` (the `count`-th time). */
export function committedStatus(recorder: ObservationRecorder, processId: ProcessId, status: string, count = 1): Promise<Event> {
  return nthEvent(
    recorder,
    (event) => event.processId.equals(processId) && event.name === 'agent.step.committed' && event.stepCommitted()?.status === status,
    count,
  );
}

/** Resolves once `processId` published `name` (the `count`-th time). */
export function published(recorder: ObservationRecorder, processId: ProcessId, name: string, count = 1): Promise<Event> {
  return nthEvent(recorder, (event) => event.processId.equals(processId) && event.name === name, count);
}

export interface Setup {
  readonly engine: Engine;
  readonly committer: RecordingCommitter;
  readonly recorder: ObservationRecorder;
}

/** An Engine over a fresh RecordingCommitter, with an ObservationRecorder as event (and delta) listener. */
export function setup(config: Partial<EngineConfig> = {}, options: { deltas?: boolean } = {}): Setup {
  const committer = config.committer instanceof RecordingCommitter ? config.committer : new RecordingCommitter();
  const recorder = new ObservationRecorder();
  const engine = new Engine({
    ...config,
    committer,
    eventListeners: [recorder, ...(config.eventListeners ?? [])],
    deltaListeners: options.deltas === true ? [recorder, ...(config.deltaListeners ?? [])] : config.deltaListeners,
  });
  return { engine, committer, recorder };
}
