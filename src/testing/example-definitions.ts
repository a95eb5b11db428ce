// Over 500 lines: the fixture Definitions the conformance suites share, one small class each.
import { ClassifiedError } from '../kernel/classified-error.js';
import type { Definition, Dispatcher, DeltaEmitter, Execution, ReplayPolicy } from '../kernel/definition.js';
import type { Deployment } from '../kernel/deployment.js';
import { Descriptor } from '../kernel/descriptor.js';
import { describe } from '../kernel/digest.js';
import { Effect, type EffectRequest } from '../kernel/effect.js';
import { ErrorCode, KernelError } from '../kernel/errors.js';
import { ExecutionState } from '../kernel/execution-state.js';
import { Failure } from '../kernel/failure.js';
import { EffectId, ProcessId, SignalId, WaitId, WaitKey } from '../kernel/identity.js';
import { waitOpenedPayload } from '../kernel/mailbox.js';
import { Payload } from '../kernel/payload.js';
import { Schema } from '../kernel/schema.js';
import { Settlement, type SettlementStatus } from '../kernel/settlement.js';
import { Signal } from '../kernel/signal.js';
import { Transition } from '../kernel/transition.js';

/**
 * Small deterministic Definitions for the conformance suites' self-tests and the Engine's tests.
 *
 * Every example is a pure state machine: all state lives in the ExecutionState (restore is
 * exact), a Step replaces the state only when it returns a Transition (a thrown Step leaves the
 * instance as it was), and nothing reads a clock, randomness, I/O or global mutable data. Each
 * Step and Restore honours its AbortSignal. Rejected input throws an error wrapping one of the
 * definition's ClassifiedError sentinels, so the Engine persists a stable kind and code.
 *
 * The deliberately broken definitions at the end each violate exactly one Definition rule; the
 * definition conformance suite must catch every one of them.
 */

// ---------------------------------------------------------------------------------------------
// The shared machinery: a pure reducer over an immutable, JSON-shaped state.

/** The result of one pure Step: the next state and the Transition that reports it. */
interface Reduction<S> {
  readonly state: S;
  readonly transition: Transition;
}

/** A pure state machine that {@link MachineDefinition} runs as a Definition. */
export interface Machine<S extends object> {
  readonly descriptor: Descriptor;
  /** The static child bindings (`Definition.childDeployments`); none by default. */
  readonly childDeployments?: readonly Deployment[];
  /** The ExecutionState kind (a qualified name). */
  readonly stateKind: string;
  /** The first state, from input that already satisfies the descriptor. */
  initial(input: Payload): S;
  /** Validates a decoded state payload (throws `invalid_execution_state`). */
  check(value: unknown): S;
  /** The Step: a pure function of the state and the delivered window. */
  reduce(state: S, signals: readonly Signal[]): Reduction<S>;
}

export class MachineDefinition<S extends object> implements Definition {
  readonly #machine: Machine<S>;

  constructor(machine: Machine<S>) {
    this.#machine = machine;
    Object.freeze(this);
  }

  descriptor(): Descriptor {
    return this.#machine.descriptor;
  }

  childDeployments(): readonly Deployment[] {
    return this.#machine.childDeployments ?? [];
  }

  start(input: Payload): Execution {
    if (!(input instanceof Payload)) {
      throw new KernelError(ErrorCode.invalidPayload, `${this.#machine.descriptor.name} input must be a Payload`);
    }
    this.#machine.descriptor.validateInput(input);
    return new MachineExecution(this.#machine, this.#machine.initial(input));
  }

  restore(state: ExecutionState, signal: AbortSignal): Execution {
    signal.throwIfAborted();
    if (!(state instanceof ExecutionState)) {
      throw new KernelError(ErrorCode.invalidExecutionState, `${this.#machine.stateKind} restore needs an ExecutionState`);
    }
    return new MachineExecution(this.#machine, this.#machine.check(state.decode(this.#machine.stateKind)));
  }
}

class MachineExecution<S extends object> implements Execution {
  readonly #machine: Machine<S>;
  #state: S;

  constructor(machine: Machine<S>, state: S) {
    this.#machine = machine;
    this.#state = Object.freeze({ ...state });
  }

  step(signal: AbortSignal, signals: readonly Signal[]): Transition {
    signal.throwIfAborted();
    const reduction = this.#machine.reduce(this.#state, Object.freeze([...signals]));
    this.#state = Object.freeze({ ...reduction.state });
    return reduction.transition;
  }

  snapshot(): ExecutionState {
    return ExecutionState.encode(this.#machine.stateKind, this.#state);
  }
}

function invalidState(kind: string, problem: string): KernelError {
  return new KernelError(ErrorCode.invalidExecutionState, `invalid ${kind} state: ${problem}`);
}

/** A decoded state object with exactly the `required` members and any of the `optional` ones. */
export function stateRecord(
  kind: string,
  value: unknown,
  required: readonly string[],
  optional: readonly string[] = [],
): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidState(kind, `expected a JSON object, got ${describe(value)}`);
  }
  const record = value as Record<string, unknown>;
  for (const name of Object.keys(record)) {
    if (!required.includes(name) && !optional.includes(name)) throw invalidState(kind, `unknown member ${describe(name)}`);
  }
  for (const name of required) {
    if (!Object.hasOwn(record, name)) throw invalidState(kind, `missing member ${describe(name)}`);
  }
  return record;
}

export function oneOf<T extends string>(kind: string, member: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidState(kind, `${member} must be one of ${allowed.join(', ')}, got ${describe(value)}`);
  }
  return value as T;
}

export function text(kind: string, member: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidState(kind, `${member} must be a string, got ${describe(value)}`);
  return value;
}

function integer(kind: string, member: string, value: unknown, minimum = Number.MIN_SAFE_INTEGER): number {
  if (!Number.isSafeInteger(value) || (value as number) < minimum) {
    throw invalidState(kind, `${member} must be a safe integer >= ${minimum}, got ${describe(value)}`);
  }
  return value as number;
}

/** `{"value": string}`: the input and output of echo, pause and progress. */
const valueObjectSchema = {
  type: 'object',
  properties: { value: { type: 'string' } },
  required: ['value'],
  additionalProperties: false,
} as const;

/** A rejection the Engine persists with the sentinel's kind and code and `context` as diagnostic. */
function rejected(sentinel: ClassifiedError, context: string): Error {
  return sentinel.wrap(context);
}

// ---------------------------------------------------------------------------------------------
// Signal fixtures: deliveries shaped exactly as the Engine builds them.

/** The ProcessId the fixtures below derive Engine identities from. */
export const exampleProcessId: ProcessId = ProcessId.parse('process:example');

/** The EffectId the Engine assigns to the Effect at `index` of Step `stepSequence` (1-based) of `processId`. */
export function exampleEffectId(stepSequence = 1n, index = 0, processId: ProcessId = exampleProcessId): EffectId {
  return EffectId.derive(processId, stepSequence, index);
}

/** A Dispatcher settlement delivery for `effectId` (engine-owned id, a status, no wait). */
export function settlementSignal(effectId: EffectId, status: SettlementStatus, payload: Payload): Signal {
  return Signal.create({ id: SignalId.settlement(effectId), status, payload });
}

/** The Engine's acknowledgement that opened `waitId` (a `wait` Effect's settlement). */
export function waitOpenedSignal(waitId: WaitId): Signal {
  return Signal.create({ id: SignalId.waitOpened(waitId), waitId, payload: waitOpenedPayload });
}

/** A Host answer to the external wait `waitId`. */
export function waitAnswerSignal(id: string, waitId: WaitId, payload: Payload): Signal {
  return Signal.create({ id: SignalId.parseExternal(id), waitId, payload });
}

/** Unaddressed Host input. */
export function hostSignal(id: string, payload: Payload): Signal {
  return Signal.create({ id: SignalId.parseExternal(id), payload });
}

// ---------------------------------------------------------------------------------------------
// echo: the seed's example. Step 1 declares one dispatcher Effect carrying the input value;
// Step 2 consumes its settlement and completes with `{"value": …}`.

export const echoStateKind = 'example.echo';
export const echoInputSchema: Schema = Schema.of(valueObjectSchema);
export const echoOutputSchema: Schema = Schema.of(valueObjectSchema);
export const echoDescriptor: Descriptor = Descriptor.create({
  name: 'example.echo',
  description: 'Echoes a value through an Engine-managed Effect.',
  inputSchema: echoInputSchema,
  outputSchema: echoOutputSchema,
});

export type EchoPhase = 'ready' | 'awaiting_echo' | 'completed' | 'failed';
export const echoPhaseValues: readonly EchoPhase[] = Object.freeze(['ready', 'awaiting_echo', 'completed', 'failed']);

export interface EchoState {
  readonly phase: EchoPhase;
  readonly value: string;
}

/** The echo Step's rejections (thrown wrapped; the Engine persists kind and code). */
export const echoFailures = Object.freeze({
  /** A signal arrived before the Effect was declared. */
  unexpectedSignal: new ClassifiedError('contract', 'example.echo.unexpected_signal', 'unexpected signal'),
  /** Step 2 ran without the Effect's settlement. */
  missingSettlement: new ClassifiedError('contract', 'example.echo.missing_settlement', 'the echo settlement is missing'),
  /** The settlement payload is not `{"value": string}`. */
  invalidSettlement: new ClassifiedError('contract', 'example.echo.invalid_settlement', 'the echo settlement is invalid'),
  /** A Step after the echo completed or failed. */
  finished: new ClassifiedError('execution', 'example.echo.finished', 'the echo has finished'),
});

/** Codes of the `fail` Transitions echo returns for a non-succeeded settlement. */
export const echoDispatchFailedCode = 'example.echo.dispatch_failed';
export const echoOutcomeUnknownCode = 'example.echo.outcome_unknown';

/** The dispatcher Effect echo's first Step declares for `value`. */
export function echoEffect(value: string): Effect {
  return Effect.dispatcher(Payload.encode({ value }));
}

export const echoDefinition: Definition = new MachineDefinition<EchoState>({
  descriptor: echoDescriptor,
  stateKind: echoStateKind,
  initial: (input) => ({ phase: 'ready', value: input.decode<{ value: string }>().value }),
  check(value) {
    const record = stateRecord(echoStateKind, value, ['phase', 'value']);
    return {
      phase: oneOf(echoStateKind, 'phase', record.phase, echoPhaseValues),
      value: text(echoStateKind, 'value', record.value),
    };
  },
  reduce(state, signals) {
    switch (state.phase) {
      case 'ready':
        if (signals.length !== 0) throw rejected(echoFailures.unexpectedSignal, `the ready echo received ${signals.length} signal(s)`);
        return { state: { ...state, phase: 'awaiting_echo' }, transition: Transition.continue(0, [echoEffect(state.value)]) };
      case 'awaiting_echo': {
        const settlement = signals[0];
        if (settlement === undefined) throw rejected(echoFailures.missingSettlement, 'the echo step received no signal');
        if (settlement.status === undefined) {
          throw rejected(echoFailures.unexpectedSignal, `signal ${settlement.id.toString()} is not a dispatcher settlement`);
        }
        if (settlement.status === 'failed') {
          const failure = Failure.create('external', echoDispatchFailedCode, 'the echo dispatcher failed the effect');
          return { state: { ...state, phase: 'failed' }, transition: Transition.fail(1, failure) };
        }
        if (settlement.status === 'unknown') {
          const failure = Failure.create('external', echoOutcomeUnknownCode, 'the echo outcome is unknown');
          return { state: { ...state, phase: 'failed' }, transition: Transition.fail(1, failure) };
        }
        if (!echoOutputSchema.accepts(settlement.payload)) {
          throw rejected(echoFailures.invalidSettlement, `settlement payload ${settlement.payload.json()}`);
        }
        const { value } = settlement.payload.decode<{ value: string }>();
        return { state: { phase: 'completed', value }, transition: Transition.complete(1, Payload.encode({ value })) };
      }
      case 'completed':
      case 'failed':
        throw rejected(echoFailures.finished, `the echo is ${state.phase}`);
    }
  },
});

/**
 * Settles every echo Effect `succeeded` with the Effect's own payload, after emitting it once as
 * a Delta. It has no external mutation, so repeating an identity is safe (`same_identity`).
 */
export const echoDispatcher: Dispatcher = Object.freeze({
  async dispatch(request: EffectRequest, emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
    signal.throwIfAborted();
    const payload = request.effect.payload;
    if (emit !== undefined) emit(payload);
    return Settlement.of('succeeded', payload);
  },
  replayPolicy(): ReplayPolicy {
    return 'same_identity';
  },
});

// ---------------------------------------------------------------------------------------------
// counter: sums unaddressed `{"add": n}` Signals and completes on `{"finish": true}`.

const counterBound = 1_000_000;

export const counterStateKind = 'example.counter';
export const counterInputSchema: Schema = Schema.of({
  type: 'object',
  properties: { start: { type: 'integer', minimum: -counterBound, maximum: counterBound } },
  additionalProperties: false,
});
export const counterOutputSchema: Schema = Schema.of({
  type: 'object',
  properties: { total: { type: 'integer' }, count: { type: 'integer', minimum: 0 } },
  required: ['total', 'count'],
  additionalProperties: false,
});
export const counterSignalSchema: Schema = Schema.of({
  oneOf: [
    {
      type: 'object',
      properties: { add: { type: 'integer', minimum: -counterBound, maximum: counterBound } },
      required: ['add'],
      additionalProperties: false,
    },
    {
      type: 'object',
      properties: { finish: { const: true } },
      required: ['finish'],
      additionalProperties: false,
    },
  ],
});
export const counterDescriptor: Descriptor = Descriptor.create({
  name: 'example.counter',
  description: 'Sums unaddressed add signals and completes with the total when told to finish.',
  inputSchema: counterInputSchema,
  outputSchema: counterOutputSchema,
  signalSchema: counterSignalSchema,
});

/** The reason of the `pause` a counter returns when its window is empty. */
export const counterIdleReason = 'waiting for counter signals';

export type CounterPhase = 'counting' | 'finished';
export const counterPhaseValues: readonly CounterPhase[] = Object.freeze(['counting', 'finished']);

export interface CounterState {
  readonly phase: CounterPhase;
  /** The running sum (the input's `start`, 0 by default, plus every add). */
  readonly total: number;
  /** How many add Signals were consumed. */
  readonly count: number;
}

export const counterFailures = Object.freeze({
  /** An addressed Signal or a settlement (the counter declares no waits or Effects). */
  unexpectedSignal: new ClassifiedError('contract', 'example.counter.unexpected_signal', 'unexpected signal'),
  /** A payload outside the signal schema (the Engine checks it first; a Definition still must not trust it). */
  invalidSignal: new ClassifiedError('contract', 'example.counter.invalid_signal', 'invalid counter signal'),
  finished: new ClassifiedError('execution', 'example.counter.finished', 'the counter has finished'),
});

/**
 * Each Step consumes the window in order: adds are summed; `{"finish": true}` completes with
 * `{"total","count"}` and leaves later Signals unconsumed. A window without a finish is consumed
 * with `continue`; an empty window pauses ({@link counterIdleReason}), so an idle counter does
 * not spin: the Host delivers more Signals and resumes it.
 */
export const counterDefinition: Definition = new MachineDefinition<CounterState>({
  descriptor: counterDescriptor,
  stateKind: counterStateKind,
  initial: (input) => ({ phase: 'counting', total: input.decode<{ start?: number }>().start ?? 0, count: 0 }),
  check(value) {
    const record = stateRecord(counterStateKind, value, ['phase', 'total', 'count']);
    return {
      phase: oneOf(counterStateKind, 'phase', record.phase, counterPhaseValues),
      total: integer(counterStateKind, 'total', record.total),
      count: integer(counterStateKind, 'count', record.count, 0),
    };
  },
  reduce(state, signals) {
    if (state.phase === 'finished') throw rejected(counterFailures.finished, 'the counter already completed');
    if (signals.length === 0) return { state, transition: Transition.pause(0, counterIdleReason) };
    let { total, count } = state;
    for (const [index, signal] of signals.entries()) {
      if (signal.waitId !== undefined || signal.status !== undefined) {
        throw rejected(counterFailures.unexpectedSignal, `signal ${index} (${signal.id.toString()}) is not unaddressed input`);
      }
      if (!counterSignalSchema.accepts(signal.payload)) {
        throw rejected(counterFailures.invalidSignal, `signal ${index} carries ${signal.payload.json()}`);
      }
      const body = signal.payload.decode<{ add?: number; finish?: true }>();
      if (body.finish === true) {
        return {
          state: { phase: 'finished', total, count },
          transition: Transition.complete(index + 1, Payload.encode({ total, count })),
        };
      }
      total += body.add ?? 0;
      count += 1;
    }
    return { state: { phase: 'counting', total, count }, transition: Transition.continue(signals.length) };
  },
});

// ---------------------------------------------------------------------------------------------
// wait: opens an external wait, records the WaitId from its opening, waits, and completes with
// the answer payload verbatim.

/** The key a wait input may choose (WaitKey syntax); `question` by default. */
export const defaultWaitKey = 'question';

export const waitStateKind = 'example.wait';
export const waitInputSchema: Schema = Schema.of({
  type: 'object',
  properties: { key: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,256}$' } },
  additionalProperties: false,
});
/** Any JSON value: the output is the Host's answer. */
export const waitOutputSchema: Schema = Schema.of(true);
export const waitDescriptor: Descriptor = Descriptor.create({
  name: 'example.wait',
  description: 'Opens one external wait and completes with the answer it receives.',
  inputSchema: waitInputSchema,
  outputSchema: waitOutputSchema,
});

export type WaitPhase = 'ready' | 'opening' | 'waiting' | 'completed';
export const waitPhaseValues: readonly WaitPhase[] = Object.freeze(['ready', 'opening', 'waiting', 'completed']);

export interface WaitState {
  readonly phase: WaitPhase;
  /** The WaitKey the wait Effect names. */
  readonly key: string;
  /** The Engine-minted WaitId, once its opening was consumed (`waiting` and `completed`). */
  readonly wait_id?: string;
}

export const waitFailures = Object.freeze({
  unexpectedSignal: new ClassifiedError('contract', 'example.wait.unexpected_signal', 'unexpected signal'),
  /** The Step after the wait Effect ran without the opening Signal. */
  missingOpening: new ClassifiedError('contract', 'example.wait.missing_opening', 'the wait opening is missing'),
  finished: new ClassifiedError('execution', 'example.wait.finished', 'the wait has finished'),
});

/** True for the Engine's acknowledgement of a `wait` Effect: engine-owned, addressed to the WaitId it opened. */
function isWaitOpening(signal: Signal): signal is Signal & { readonly waitId: WaitId } {
  return signal.waitId !== undefined && signal.status === undefined && signal.id.equals(SignalId.waitOpened(signal.waitId));
}

/**
 * Step 1 declares `Effect.wait(key)`. Step 2 consumes the opening Signal (addressed to the minted
 * WaitId), records the WaitId and returns `wait(1, id)`; an answer that arrived early stays
 * queued. Step 3 consumes the answer and completes with its payload. A Step while waiting with
 * an empty window re-declares `wait(0, id)`.
 */
export const waitDefinition: Definition = new MachineDefinition<WaitState>({
  descriptor: waitDescriptor,
  stateKind: waitStateKind,
  initial: (input) => ({ phase: 'ready', key: input.decode<{ key?: string }>().key ?? defaultWaitKey }),
  check(value) {
    const record = stateRecord(waitStateKind, value, ['phase', 'key'], ['wait_id']);
    const phase = oneOf(waitStateKind, 'phase', record.phase, waitPhaseValues);
    const key = text(waitStateKind, 'key', record.key);
    try {
      WaitKey.parse(key);
    } catch {
      throw invalidState(waitStateKind, `key ${describe(key)} is not a wait key`);
    }
    const needsId = phase === 'waiting' || phase === 'completed';
    if (needsId !== Object.hasOwn(record, 'wait_id')) {
      throw invalidState(waitStateKind, `wait_id must be ${needsId ? 'present' : 'absent'} in phase ${phase}`);
    }
    if (!needsId) return { phase, key };
    const waitId = text(waitStateKind, 'wait_id', record.wait_id);
    try {
      WaitId.parse(waitId);
    } catch {
      throw invalidState(waitStateKind, `wait_id ${describe(waitId)} is not a wait id`);
    }
    return { phase, key, wait_id: waitId };
  },
  reduce(state, signals) {
    switch (state.phase) {
      case 'ready':
        if (signals.length !== 0) throw rejected(waitFailures.unexpectedSignal, 'the wait has not been opened yet');
        return {
          state: { ...state, phase: 'opening' },
          transition: Transition.continue(0, [Effect.wait(WaitKey.parse(state.key))]),
        };
      case 'opening': {
        const opening = signals[0];
        if (opening === undefined) throw rejected(waitFailures.missingOpening, 'the opening step received no signal');
        if (!isWaitOpening(opening)) {
          throw rejected(waitFailures.unexpectedSignal, `signal ${opening.id.toString()} is not a wait opening`);
        }
        const waitId = opening.waitId;
        return {
          state: { phase: 'waiting', key: state.key, wait_id: waitId.toString() },
          transition: Transition.wait(1, waitId),
        };
      }
      case 'waiting': {
        const waitId = WaitId.parse(state.wait_id);
        const answer = signals[0];
        if (answer === undefined) return { state, transition: Transition.wait(0, waitId) };
        if (!waitId.equals(answer.waitId) || answer.engineOwned) {
          throw rejected(waitFailures.unexpectedSignal, `signal ${answer.id.toString()} does not answer ${waitId.toString()}`);
        }
        return { state: { ...state, phase: 'completed' }, transition: Transition.complete(1, answer.payload) };
      }
      case 'completed':
        throw rejected(waitFailures.finished, 'the wait already completed');
    }
  },
});

// ---------------------------------------------------------------------------------------------
// pause and progress: Step 1 pauses (or checkpoints), Step 2 completes with the input value.

export const pauseStateKind = 'example.pause';
export const pauseInputSchema: Schema = Schema.of(valueObjectSchema);
export const pauseOutputSchema: Schema = Schema.of(valueObjectSchema);
export const pauseDescriptor: Descriptor = Descriptor.create({
  name: 'example.pause',
  description: 'Pauses once, then completes with its input value after it is resumed.',
  inputSchema: pauseInputSchema,
  outputSchema: pauseOutputSchema,
});

/** The reason of pause's first Step. */
export const pauseReason = 'paused by the example definition';

export type PausePhase = 'ready' | 'paused' | 'completed';
export const pausePhaseValues: readonly PausePhase[] = Object.freeze(['ready', 'paused', 'completed']);

export interface PauseState {
  readonly phase: PausePhase;
  readonly value: string;
}

export const pauseFailures = Object.freeze({
  finished: new ClassifiedError('execution', 'example.pause.finished', 'the pause example has finished'),
});

/** Step 1: `pause(0, pauseReason)`; Step 2: `complete(0, {"value"})`. Signals are left unconsumed. */
export const pauseDefinition: Definition = new MachineDefinition<PauseState>({
  descriptor: pauseDescriptor,
  stateKind: pauseStateKind,
  initial: (input) => ({ phase: 'ready', value: input.decode<{ value: string }>().value }),
  check(value) {
    const record = stateRecord(pauseStateKind, value, ['phase', 'value']);
    return {
      phase: oneOf(pauseStateKind, 'phase', record.phase, pausePhaseValues),
      value: text(pauseStateKind, 'value', record.value),
    };
  },
  reduce(state) {
    switch (state.phase) {
      case 'ready':
        return { state: { ...state, phase: 'paused' }, transition: Transition.pause(0, pauseReason) };
      case 'paused':
        return {
          state: { ...state, phase: 'completed' },
          transition: Transition.complete(0, Payload.encode({ value: state.value })),
        };
      case 'completed':
        throw rejected(pauseFailures.finished, 'the pause example already completed');
    }
  },
});

export const progressStateKind = 'example.progress';
export const progressInputSchema: Schema = Schema.of(valueObjectSchema);
export const progressOutputSchema: Schema = Schema.of(valueObjectSchema);
export const progressDescriptor: Descriptor = Descriptor.create({
  name: 'example.progress',
  description: 'Checkpoints once, then completes with its input value.',
  inputSchema: progressInputSchema,
  outputSchema: progressOutputSchema,
});

export type ProgressPhase = 'ready' | 'checkpointed' | 'completed';
export const progressPhaseValues: readonly ProgressPhase[] = Object.freeze(['ready', 'checkpointed', 'completed']);

export interface ProgressState {
  readonly phase: ProgressPhase;
  readonly value: string;
}

export const progressFailures = Object.freeze({
  finished: new ClassifiedError('execution', 'example.progress.finished', 'the progress example has finished'),
});

/** Step 1: `checkpoint(0)`; Step 2: `complete(0, {"value"})`. Signals are left unconsumed. */
export const progressDefinition: Definition = new MachineDefinition<ProgressState>({
  descriptor: progressDescriptor,
  stateKind: progressStateKind,
  initial: (input) => ({ phase: 'ready', value: input.decode<{ value: string }>().value }),
  check(value) {
    const record = stateRecord(progressStateKind, value, ['phase', 'value']);
    return {
      phase: oneOf(progressStateKind, 'phase', record.phase, progressPhaseValues),
      value: text(progressStateKind, 'value', record.value),
    };
  },
  reduce(state) {
    switch (state.phase) {
      case 'ready':
        return { state: { ...state, phase: 'checkpointed' }, transition: Transition.checkpoint(0) };
      case 'checkpointed':
        return {
          state: { ...state, phase: 'completed' },
          transition: Transition.complete(0, Payload.encode({ value: state.value })),
        };
      case 'completed':
        throw rejected(progressFailures.finished, 'the progress example already completed');
    }
  },
});

// ---------------------------------------------------------------------------------------------
// Deliberately broken definitions (suite self-tests). Each is echo-shaped — input
// `{"value": string}`, Step 1 declares a dispatcher Effect, Step 2 completes with the value —
// and breaks exactly one rule. Every call returns a new definition, so self-tests stay isolated.

function brokenDescriptor(name: string, description: string): Descriptor {
  return Descriptor.create({
    name,
    description,
    inputSchema: Schema.of(valueObjectSchema),
    outputSchema: Schema.of(valueObjectSchema),
  });
}

type BrokenPhase = 'ready' | 'awaiting' | 'completed';
const brokenPhaseValues: readonly BrokenPhase[] = Object.freeze(['ready', 'awaiting', 'completed']);

interface BrokenCore {
  readonly phase: BrokenPhase;
  readonly value: string;
}

function checkCore(kind: string, value: unknown, optional: readonly string[] = []): Record<string, unknown> & BrokenCore {
  const record = stateRecord(kind, value, ['phase', 'value'], optional);
  oneOf(kind, 'phase', record.phase, brokenPhaseValues);
  text(kind, 'value', record.value);
  return record as Record<string, unknown> & BrokenCore;
}

/** The echo-shaped Step shared by the broken definitions; `effectPayload` builds Step 1's Effect. */
function brokenStep(state: BrokenCore, effectPayload: unknown): { phase: BrokenPhase; transition: Transition } {
  switch (state.phase) {
    case 'ready':
      return { phase: 'awaiting', transition: Transition.continue(0, [Effect.dispatcher(Payload.encode(effectPayload))]) };
    case 'awaiting':
      return { phase: 'completed', transition: Transition.complete(0, Payload.encode({ value: state.value })) };
    case 'completed':
      throw new Error('the broken example already completed');
  }
}

/**
 * Hidden mutable input: `start` keeps a reference to one shared mutable object (the decoded
 * input, stored outside the ExecutionState), and the Step both reads and mutates it. Two equal
 * Executions therefore declare different Effects.
 */
export function hiddenMutableInputDefinition(): Definition {
  const kind = 'example.broken.hidden_input';
  const descriptor = brokenDescriptor(kind, 'Keeps its input in a shared mutable object outside its state.');
  const hidden = { value: '', reads: 0 };
  class HiddenInputExecution implements Execution {
    #phase: BrokenPhase;
    constructor(phase: BrokenPhase) {
      this.#phase = phase;
    }
    step(signal: AbortSignal): Transition {
      signal.throwIfAborted();
      hidden.reads += 1;
      const next = brokenStep({ phase: this.#phase, value: hidden.value }, { value: hidden.value, read: hidden.reads });
      this.#phase = next.phase;
      return next.transition;
    }
    snapshot(): ExecutionState {
      return ExecutionState.encode(kind, { phase: this.#phase });
    }
  }
  return Object.freeze({
    descriptor: () => descriptor,
    childDeployments: () => [],
    start(input: Payload): Execution {
      descriptor.validateInput(input);
      hidden.value = input.decode<{ value: string }>().value;
      return new HiddenInputExecution('ready');
    },
    restore(state: ExecutionState, signal: AbortSignal): Execution {
      signal.throwIfAborted();
      const record = stateRecord(kind, state.decode(kind), ['phase']);
      return new HiddenInputExecution(oneOf(kind, 'phase', record.phase, brokenPhaseValues));
    },
  });
}

/**
 * Shared execution state: every Execution of one definition mutates the same state object, so
 * stepping one changes another's snapshot.
 */
export function sharedExecutionStateDefinition(): Definition {
  const kind = 'example.broken.shared_state';
  const descriptor = brokenDescriptor(kind, 'Gives every Execution the same mutable state object.');
  const shared: { phase: BrokenPhase; value: string } = { phase: 'ready', value: '' };
  class SharedStateExecution implements Execution {
    step(signal: AbortSignal): Transition {
      signal.throwIfAborted();
      const next = brokenStep(shared, { value: shared.value });
      shared.phase = next.phase;
      return next.transition;
    }
    snapshot(): ExecutionState {
      return ExecutionState.encode(kind, shared);
    }
  }
  return Object.freeze({
    descriptor: () => descriptor,
    childDeployments: () => [],
    start(input: Payload): Execution {
      descriptor.validateInput(input);
      shared.phase = 'ready';
      shared.value = input.decode<{ value: string }>().value;
      return new SharedStateExecution();
    },
    restore(state: ExecutionState, signal: AbortSignal): Execution {
      signal.throwIfAborted();
      const record = checkCore(kind, state.decode(kind));
      shared.phase = record.phase;
      shared.value = record.value;
      return new SharedStateExecution();
    },
  });
}

interface NotedState extends BrokenCore {
  readonly note?: string;
}

/** Lossy restore: the state carries a `note` that `restore` silently drops. */
export function lossyRestoreDefinition(): Definition {
  const kind = 'example.broken.lossy_restore';
  return new MachineDefinition<NotedState>({
    descriptor: brokenDescriptor(kind, 'Drops part of its state when restored.'),
    stateKind: kind,
    initial(input) {
      const { value } = input.decode<{ value: string }>();
      return { phase: 'ready', value, note: `started with ${value}` };
    },
    check(value) {
      const record = checkCore(kind, value, ['note']);
      return { phase: record.phase, value: record.value };
    },
    reduce(state) {
      const next = brokenStep(state, { value: state.value });
      return { state: { ...state, phase: next.phase }, transition: next.transition };
    },
  });
}

interface AttemptState extends BrokenCore {
  readonly attempt: number;
}

/**
 * Nondeterministic Step: it records how many Steps the definition has run so far (hidden
 * definition-wide state), so equal states and windows reach different states; the Transitions
 * themselves agree.
 */
export function nondeterministicStepDefinition(): Definition {
  const kind = 'example.broken.nondeterministic';
  let steps = 0;
  return new MachineDefinition<AttemptState>({
    descriptor: brokenDescriptor(kind, 'Records a definition-wide step counter in its state.'),
    stateKind: kind,
    initial: (input) => ({ phase: 'ready', value: input.decode<{ value: string }>().value, attempt: 0 }),
    check(value) {
      const record = checkCore(kind, value, ['attempt']);
      return { phase: record.phase, value: record.value, attempt: integer(kind, 'attempt', record.attempt ?? 0, 0) };
    },
    reduce(state) {
      steps += 1;
      const next = brokenStep(state, { value: state.value });
      return { state: { ...state, phase: next.phase, attempt: steps }, transition: next.transition };
    },
  });
}
