import type { DeltaEmitter, Dispatcher, ReplayPolicy } from '../kernel/definition.js';
import { isReplayPolicy, replayPolicyValues } from '../kernel/definition.js';
import type { Delta } from '../kernel/delta.js';
import { describe } from '../kernel/digest.js';
import { Effect, type EffectRequest } from '../kernel/effect.js';
import { KernelError } from '../kernel/errors.js';
import type { Event } from '../kernel/event.js';
import type { DeltaListener, EventListener } from '../kernel/observation.js';
import { Payload } from '../kernel/payload.js';
import { Settlement, type SettlementStatus } from '../kernel/settlement.js';

/**
 * Consumer-side fixtures for Engine tests: a Dispatcher that answers from a script and records
 * every request, and a listener that records every Event and Delta and lets a test await one
 * without polling or sleeping.
 */

/** Stable codes of the fixtures' errors (thrown as KernelError). */
export const TestingErrorCode = Object.freeze({
  /** The script itself is malformed (thrown by the constructor). */
  invalidDispatchScript: 'invalid_dispatch_script',
  /** A dispatch arrived after every scripted call was used (the request is still recorded). */
  unexpectedDispatch: 'unexpected_dispatch',
  /** A dispatch's Effect differs from the call's `expectedEffect` (the call is consumed). */
  effectMismatch: 'effect_mismatch',
  /** `awaitEvent` / `awaitDelta` was given something that is not a function. */
  invalidEventPredicate: 'invalid_event_predicate',
} as const);

/** A scripted definite or unknown settlement (a Settlement instance also fits). */
export interface ScriptedSettlement {
  readonly status: SettlementStatus;
  readonly payload: Payload;
}

/** One scripted answer, consumed by one dispatch in order. */
export interface ScriptedCall {
  /** When set, the dispatched Effect must equal it, or the dispatch rejects with `effect_mismatch`. */
  readonly expectedEffect?: Effect;
  /** Emitted in order before answering, when the Engine supplied an emitter (listeners exist). */
  readonly deltas?: readonly Payload[];
  /** The Settlement to return. Exactly one of `settlement` and `error` is required. */
  readonly settlement?: ScriptedSettlement;
  /** Rejects the dispatch with this value: the external outcome is unknown. */
  readonly error?: unknown;
  /** Awaited after the deltas and before answering, so a test can hold a dispatch open. */
  readonly gate?: PromiseLike<void>;
}

export interface ScriptedDispatcherConfig {
  readonly replayPolicy: ReplayPolicy;
  readonly calls: readonly ScriptedCall[];
}

/** One observed dispatch, expected or not. */
export interface DispatchRecord {
  readonly request: EffectRequest;
  /** Whether the Engine supplied a DeltaEmitter. */
  readonly hadEmitter: boolean;
  readonly signal: AbortSignal;
}

interface NormalizedCall {
  readonly expectedEffect: Effect | undefined;
  readonly deltas: readonly Payload[];
  readonly settlement: Settlement | undefined;
  readonly error: unknown;
  readonly gate: PromiseLike<void> | undefined;
}

/**
 * A Dispatcher that answers each dispatch with the next scripted call, in order. Every dispatch is
 * recorded — including unexpected ones — before it is answered. A dispatch beyond the script
 * rejects with `unexpected_dispatch`; one whose Effect differs from `expectedEffect` consumes its
 * call and rejects with `effect_mismatch`. A scripted `error` rejects with exactly that value,
 * which the Engine must treat as an unknown external outcome.
 *
 * The abort signal is recorded, not acted on: the script (and its `gate`) decides when to answer.
 */
export class ScriptedDispatcher implements Dispatcher {
  readonly #replayPolicy: ReplayPolicy;
  readonly #calls: readonly NormalizedCall[];
  readonly #records: DispatchRecord[] = [];
  #next = 0;

  /** Throws `invalid_dispatch_script` for a malformed script. */
  constructor(config: ScriptedDispatcherConfig) {
    const fail = (message: string): never => {
      throw new KernelError(TestingErrorCode.invalidDispatchScript, `invalid dispatch script: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected a script, got ${describe(config)}`);
    if (!isReplayPolicy(config.replayPolicy)) {
      fail(`replayPolicy must be one of ${replayPolicyValues.join(', ')}, got ${describe(config.replayPolicy)}`);
    }
    if (!Array.isArray(config.calls)) fail('calls must be an array');
    this.#replayPolicy = config.replayPolicy;
    this.#calls = Object.freeze(config.calls.map((call, index) => normalizeCall(call, index, fail)));
  }

  async dispatch(request: EffectRequest, emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
    const ordinal = this.#records.length + 1;
    this.#records.push(Object.freeze({ request, hadEmitter: emit !== undefined, signal }));
    const call = this.#calls[this.#next];
    if (call === undefined) {
      throw new KernelError(
        TestingErrorCode.unexpectedDispatch,
        `unexpected dispatch #${ordinal}: the script has ${this.#calls.length} call(s)`,
      );
    }
    this.#next += 1;
    if (call.expectedEffect !== undefined && !call.expectedEffect.equals(request?.effect)) {
      throw new KernelError(
        TestingErrorCode.effectMismatch,
        `dispatch #${ordinal} does not carry the scripted effect (expected ${call.expectedEffect.json()})`,
      );
    }
    if (emit !== undefined) {
      for (const delta of call.deltas) emit(delta);
    }
    if (call.gate !== undefined) await call.gate;
    if (call.settlement !== undefined) return call.settlement;
    throw call.error;
  }

  replayPolicy(_effect: Effect): ReplayPolicy {
    return this.#replayPolicy;
  }

  /** Every dispatched request in arrival order, unexpected ones included. */
  requests(): EffectRequest[] {
    return this.#records.map((record) => record.request);
  }

  /** Every dispatch with its emitter presence and abort signal. */
  records(): DispatchRecord[] {
    return [...this.#records];
  }

  /** How many scripted calls have not been consumed yet. */
  remaining(): number {
    return this.#calls.length - this.#next;
  }
}

function normalizeCall(call: ScriptedCall, index: number, fail: (message: string) => never): NormalizedCall {
  const at = `calls[${index}]`;
  if (typeof call !== 'object' || call === null) fail(`${at} must be an object, got ${describe(call)}`);
  if (call.expectedEffect !== undefined && !(call.expectedEffect instanceof Effect)) fail(`${at}.expectedEffect must be an Effect`);
  const deltas = call.deltas ?? [];
  if (!Array.isArray(deltas)) fail(`${at}.deltas must be an array of Payloads`);
  deltas.forEach((delta, position) => {
    if (!(delta instanceof Payload)) fail(`${at}.deltas[${position}] must be a Payload`);
  });
  const hasSettlement = call.settlement !== undefined;
  const hasError = call.error !== undefined;
  if (hasSettlement === hasError) {
    fail(`${at} needs exactly one of settlement and error (error means an unknown external outcome)`);
  }
  let settlement: Settlement | undefined;
  if (hasSettlement) {
    const scripted = call.settlement as ScriptedSettlement;
    if (typeof scripted !== 'object' || scripted === null) fail(`${at}.settlement must be a status and a payload`);
    try {
      settlement = scripted instanceof Settlement ? scripted : Settlement.of(scripted.status, scripted.payload);
    } catch (error) {
      fail(`${at}.settlement is invalid: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  if (call.gate !== undefined && typeof (call.gate as { then?: unknown }).then !== 'function') {
    fail(`${at}.gate must be a promise`);
  }
  return Object.freeze({
    expectedEffect: call.expectedEffect,
    deltas: Object.freeze([...deltas]),
    settlement,
    error: call.error,
    gate: call.gate,
  });
}

/* ================================================================================================
 * ObservationRecorder
 * ============================================================================================== */

export interface AwaitOptions {
  /** Aborting rejects the wait with the signal's reason and forgets the waiter. */
  readonly signal?: AbortSignal;
}

interface Waiter<T> {
  readonly predicate: (value: T) => boolean;
  readonly resolve: (value: T) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * An EventListener and DeltaListener that records everything it receives, in order. `awaitEvent`
 * and `awaitDelta` resolve with the first recorded match — already recorded or recorded later —
 * by checking waiters on each record, never by polling.
 */
export class ObservationRecorder implements EventListener, DeltaListener {
  readonly #events: Event[] = [];
  readonly #deltas: Delta[] = [];
  readonly #eventWaiters = new Set<Waiter<Event>>();
  readonly #deltaWaiters = new Set<Waiter<Delta>>();

  onEvent(event: Event): void {
    this.#events.push(event);
    settleWaiters(this.#eventWaiters, event);
  }

  onDelta(delta: Delta): void {
    this.#deltas.push(delta);
    settleWaiters(this.#deltaWaiters, delta);
  }

  /** Every recorded Event, in delivery order. */
  events(): Event[] {
    return [...this.#events];
  }

  /** Every recorded Delta, in delivery order. */
  deltas(): Delta[] {
    return [...this.#deltas];
  }

  /**
   * The first recorded Event matching `predicate`. Rejects with `invalid_event_predicate` for a
   * non-function, with the predicate's own error if it throws, or with the abort reason.
   */
  awaitEvent(predicate: (event: Event) => boolean, options: AwaitOptions = {}): Promise<Event> {
    return awaitMatch(this.#events, this.#eventWaiters, predicate, options);
  }

  /** The first recorded Delta matching `predicate` (same rules as `awaitEvent`). */
  awaitDelta(predicate: (delta: Delta) => boolean, options: AwaitOptions = {}): Promise<Delta> {
    return awaitMatch(this.#deltas, this.#deltaWaiters, predicate, options);
  }
}

function settleWaiters<T>(waiters: Set<Waiter<T>>, value: T): void {
  for (const waiter of [...waiters]) {
    let matched: boolean;
    try {
      matched = waiter.predicate(value) === true;
    } catch (error) {
      waiters.delete(waiter);
      waiter.reject(error);
      continue;
    }
    if (matched) {
      waiters.delete(waiter);
      waiter.resolve(value);
    }
  }
}

function awaitMatch<T>(
  recorded: readonly T[],
  waiters: Set<Waiter<T>>,
  predicate: (value: T) => boolean,
  options: AwaitOptions,
): Promise<T> {
  if (typeof predicate !== 'function') {
    return Promise.reject(
      new KernelError(TestingErrorCode.invalidEventPredicate, `the predicate must be a function, got ${describe(predicate)}`),
    );
  }
  const signal = options.signal;
  if (signal?.aborted) return Promise.reject(signal.reason);
  try {
    for (const value of recorded) if (predicate(value) === true) return Promise.resolve(value);
  } catch (error) {
    return Promise.reject(error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      waiters.delete(waiter);
      reject(signal?.reason);
    };
    const waiter: Waiter<T> = {
      predicate,
      resolve: (value) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(value);
      },
      reject: (reason) => {
        signal?.removeEventListener('abort', onAbort);
        reject(reason);
      },
    };
    waiters.add(waiter);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
