import type { Definition, Execution } from '../../src/kernel/definition.js';
import type { Deployment } from '../../src/kernel/deployment.js';
import type { Descriptor } from '../../src/kernel/descriptor.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { ExecutionState } from '../../src/kernel/execution-state.js';
import { Failure } from '../../src/kernel/failure.js';
import { SignalId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import type { Signal } from '../../src/kernel/signal.js';
import type { Transition } from '../../src/kernel/transition.js';

/**
 * The small state-machine frame the demo and built-in strategy Definitions share. A machine is a pure reducer over a
 * JSON-shaped state: `start` builds the first state from input, `step` maps (state, window) to the
 * next state and a Transition, and the whole state lives in the ExecutionState, so `restore` is
 * exact. Nothing reads a clock, randomness, I/O or shared mutable data; every Step and Restore
 * honours its AbortSignal.
 */
export interface StateMachine<S extends object> {
  readonly descriptor: Descriptor;
  /** The ExecutionState kind (a qualified name). */
  readonly stateKind: string;
  /** The first state, from input the Engine already validated against the descriptor. */
  initial(input: Payload): S;
  /** Validates a decoded state; throws for anything malformed. */
  check(value: unknown): S;
  /**
   * Optional: the canonical payload of a state, byte for byte `Payload.encode(state)`. A machine with a
   * large state that grows at its end supplies it to re-encode only what a Step changed.
   */
  encode?(state: S): Payload;
  /**
   * Optional, beside `encode`: `check(value)` told the payload `value` was decoded from, so that it can
   * recognise a payload its `encode` made (the candidate of the Step just taken).
   */
  checkDecoded?(value: unknown, payload: Payload): S;
  /** The child Deployments this demo binds statically (`Definition.childDeployments`); default none. */
  readonly childDeployments?: readonly Deployment[];
  /** One Step: a pure function of the state and the delivered window. */
  step(state: S, signals: readonly Signal[]): { readonly state: S; readonly transition: Transition };
}

/** A Definition over a {@link StateMachine}. */
export function machineDefinition<S extends object>(machine: StateMachine<S>): Definition {
  const restoreState = (state: ExecutionState): S => {
    if (!(state instanceof ExecutionState)) throw invalidState(machine.stateKind, 'restore needs an ExecutionState');
    const value = state.decode<unknown>(machine.stateKind);
    return machine.checkDecoded === undefined ? machine.check(value) : machine.checkDecoded(value, state.payload);
  };
  return Object.freeze({
    descriptor: (): Descriptor => machine.descriptor,
    childDeployments: (): readonly Deployment[] => machine.childDeployments ?? [],
    start(input: Payload): Execution {
      machine.descriptor.validateInput(input);
      return new MachineExecution(machine, machine.initial(input));
    },
    restore(state: ExecutionState, signal: AbortSignal): Execution {
      signal.throwIfAborted();
      return new MachineExecution(machine, restoreState(state));
    },
  });
}

class MachineExecution<S extends object> implements Execution {
  readonly #machine: StateMachine<S>;
  #state: S;

  constructor(machine: StateMachine<S>, state: S) {
    this.#machine = machine;
    this.#state = state;
  }

  step(signal: AbortSignal, signals: readonly Signal[]): Transition {
    signal.throwIfAborted();
    const next = this.#machine.step(this.#state, signals);
    this.#state = next.state;
    return next.transition;
  }

  snapshot(): ExecutionState {
    const machine = this.#machine;
    return ExecutionState.encode(machine.stateKind, machine.encode === undefined ? this.#state : machine.encode(this.#state));
  }
}

export function invalidState(kind: string, problem: string): KernelError {
  return new KernelError(ErrorCode.invalidExecutionState, `invalid ${kind} state: ${problem}`);
}

/** A decoded state object with exactly the `required` members and any of the `optional` ones. */
export function stateRecord(kind: string, value: unknown, required: readonly string[], optional: readonly string[] = []): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidState(kind, 'expected a JSON object');
  const record = value as Record<string, unknown>;
  for (const name of Object.keys(record)) {
    if (!required.includes(name) && !optional.includes(name)) throw invalidState(kind, `unknown member ${JSON.stringify(name)}`);
  }
  for (const name of required) {
    if (!Object.hasOwn(record, name)) throw invalidState(kind, `missing member ${JSON.stringify(name)}`);
  }
  return record;
}

export function stateString(kind: string, record: Record<string, unknown>, member: string): string {
  const value = record[member];
  if (typeof value !== 'string') throw invalidState(kind, `${member} must be a string`);
  return value;
}

export function stateInteger(kind: string, record: Record<string, unknown>, member: string, minimum = Number.MIN_SAFE_INTEGER): number {
  const value = record[member];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    throw invalidState(kind, `${member} must be a safe integer >= ${minimum}`);
  }
  return value;
}

export function stateBoolean(kind: string, record: Record<string, unknown>, member: string): boolean {
  const value = record[member];
  if (typeof value !== 'boolean') throw invalidState(kind, `${member} must be a boolean`);
  return value;
}

export function statePhase<T extends string>(kind: string, record: Record<string, unknown>, allowed: readonly T[]): T {
  const value = record.phase;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidState(kind, `phase must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

/** True for the Engine's acknowledgement of a `wait` Effect (engine-owned, addressed to the WaitId it opened). */
export function isWaitOpening(signal: Signal): boolean {
  return signal.waitId !== undefined && signal.status === undefined && signal.id.equals(SignalId.waitOpened(signal.waitId));
}

/** True for Host input: not engine-owned, not addressed. */
export function isUnaddressedInput(signal: Signal): boolean {
  return !signal.engineOwned && signal.waitId === undefined;
}

/** A `fail` Transition's Failure for a contract violation the demo detects in its window. */
export function contractFailure(code: string, message: string): Failure {
  return Failure.create('contract', code, message);
}

/** Decodes an object payload, or undefined when it is not a JSON object. */
export function objectOf(payload: Payload): Record<string, unknown> | undefined {
  const value = payload.decode<unknown>();
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

