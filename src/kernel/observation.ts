// Over 500 lines: events, deltas and their bounded delivery pipeline, which share ordering and drop accounting.
import { systemClock, type Clock } from './clock.js';
import type { DeltaEmitter } from './definition.js';
import { Delta, isDeltaPayload } from './delta.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { Event } from './event.js';
import { EffectAttemptId, EffectId, ProcessId, TreeIncarnationId } from './identity.js';
import { maxUint64 } from './wire.js';

/**
 * The Engine's observation plumbing: synchronous, isolated Event publication and the bounded,
 * best-effort Delta pipeline. Observers never change execution: a throwing listener is counted and
 * reported in {@link ObservationFailures}, never rethrown to the Engine.
 */

/* ================================================================================================
 * Listeners
 * ============================================================================================== */

/**
 * Observes ordered Framework facts. It is called synchronously on the tree owner, in increasing
 * `processSequence` per Process, so it must return in bounded time and must not query or control
 * the observed tree (the Engine rejects such calls with `listener_reentrancy`). A thrown error, or
 * a rejected promise it returns, is isolated and counted; a returned promise is never awaited.
 */
export interface EventListener {
  onEvent(event: Event): void;
}

export type EventListenerFunc = (event: Event) => void;
export type EventListenerLike = EventListener | EventListenerFunc;

/**
 * Observes best-effort streaming increments, in queue order, serially across all listeners and
 * trees on one delivery worker, possibly lagging execution. A returned promise is awaited before
 * the next delivery (so a slow listener delays the others and can make the bounded queue drop); a
 * throw or rejection is isolated and counted. It must settle in bounded time so shutdown can drain.
 */
export interface DeltaListener {
  onDelta(delta: Delta): void | PromiseLike<void>;
}

export type DeltaListenerFunc = (delta: Delta) => void | PromiseLike<void>;
export type DeltaListenerLike = DeltaListener | DeltaListenerFunc;

/* ================================================================================================
 * Counters
 * ============================================================================================== */

/** `a + b` clamped to the uint64 range (observation counters saturate instead of wrapping). */
export function saturatingAdd(a: bigint, b: bigint): bigint {
  const sum = a + b;
  if (sum > maxUint64) return maxUint64;
  return sum < 0n ? 0n : sum;
}

/** The sequence after `last`, or undefined when the uint64 sequence space is exhausted. */
export function nextSequence(last: bigint): bigint | undefined {
  return last >= maxUint64 ? undefined : last + 1n;
}

/* ================================================================================================
 * Failure reports
 * ============================================================================================== */

/** The longest message a {@link ListenerPanic} retains (UTF-8 bytes). */
export const maxPanicMessageBytes = 4096;

/** The longest stack a {@link ListenerPanic} retains (UTF-8 bytes). */
export const maxPanicStackBytes = 64 * 1024;

/** The longest listener type name a {@link ListenerPanic} retains (UTF-8 bytes). */
const maxListenerTypeBytes = 256;

export interface ListenerPanicConfig {
  /** Zero-based position in the Engine's EventListeners or DeltaListeners. */
  readonly listenerIndex: number;
  /** The listener's class name (or `function <name>` for a plain function). */
  readonly listenerType: string;
  /** The Process whose event or delta was being delivered. */
  readonly processId?: ProcessId;
  readonly message: string;
  readonly stack?: string;
}

/**
 * A detached report of one isolated listener failure. Texts are made well-formed and cut on a code
 * point boundary: the message to {@link maxPanicMessageBytes}, the stack to
 * {@link maxPanicStackBytes} UTF-8 bytes.
 */
export class ListenerPanic {
  readonly #listenerIndex: number;
  readonly #listenerType: string;
  readonly #processId: ProcessId | undefined;
  readonly #message: string;
  readonly #stack: string;

  private constructor(index: number, type: string, processId: ProcessId | undefined, message: string, stack: string) {
    this.#listenerIndex = index;
    this.#listenerType = type;
    this.#processId = processId;
    this.#message = message;
    this.#stack = stack;
    Object.freeze(this);
  }

  /** Validates the index and identities and bounds the texts; rejections are `invalid_engine_config`. */
  static of(config: ListenerPanicConfig): ListenerPanic {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidEngineConfig, `invalid listener panic: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected the report members, got ${describe(config)}`);
    if (!Number.isSafeInteger(config.listenerIndex) || config.listenerIndex < 0) {
      fail(`listenerIndex must be a non-negative integer, got ${describe(config.listenerIndex)}`);
    }
    if (typeof config.listenerType !== 'string') fail('listenerType must be a string');
    if (config.processId !== undefined && !(config.processId instanceof ProcessId)) fail('processId must be a ProcessId');
    if (typeof config.message !== 'string') fail('message must be a string');
    if (config.stack !== undefined && typeof config.stack !== 'string') fail('stack must be a string');
    return new ListenerPanic(
      config.listenerIndex,
      boundText(config.listenerType, maxListenerTypeBytes),
      config.processId,
      boundText(config.message, maxPanicMessageBytes),
      boundText(config.stack ?? '', maxPanicStackBytes),
    );
  }

  /**
   * The report of `thrown` from the listener at `listenerIndex`. It never throws, whatever was
   * thrown (hostile `toString` and `stack` getters included).
   */
  static capture(
    thrown: unknown,
    listener: { readonly listenerIndex: number; readonly listenerType: string; readonly processId?: ProcessId },
  ): ListenerPanic {
    return new ListenerPanic(
      listener.listenerIndex,
      boundText(listener.listenerType, maxListenerTypeBytes),
      listener.processId,
      boundText(formatThrown(thrown), maxPanicMessageBytes),
      boundText(stackOf(thrown), maxPanicStackBytes),
    );
  }

  get listenerIndex(): number {
    return this.#listenerIndex;
  }

  get listenerType(): string {
    return this.#listenerType;
  }

  get processId(): ProcessId | undefined {
    return this.#processId;
  }

  get message(): string {
    return this.#message;
  }

  get stack(): string {
    return this.#stack;
  }

  toJSON(): Record<string, unknown> {
    return {
      listenerIndex: this.#listenerIndex,
      listenerType: this.#listenerType,
      processId: this.#processId?.toString(),
      message: this.#message,
      stack: this.#stack,
    };
  }
}

export interface ObservationFailuresConfig {
  readonly eventListenerPanics?: bigint;
  readonly deltaListenerPanics?: bigint;
  readonly droppedEvents?: bigint;
  readonly lastEventPanic?: ListenerPanic;
  readonly lastDeltaPanic?: ListenerPanic;
}

interface FailureCounts {
  readonly eventListenerPanics: bigint;
  readonly deltaListenerPanics: bigint;
  readonly droppedEvents: bigint;
  readonly lastEventPanic: ListenerPanic | undefined;
  readonly lastDeltaPanic: ListenerPanic | undefined;
}

/**
 * An immutable snapshot of the event loss and listener panics one Engine isolated. Counts are
 * monotonic and saturate at 2^64−1; only the latest panic of each listener kind is retained.
 */
export class ObservationFailures {
  static readonly none: ObservationFailures = ObservationFailures.of({});

  readonly #eventListenerPanics: bigint;
  readonly #deltaListenerPanics: bigint;
  readonly #droppedEvents: bigint;
  readonly #lastEventPanic: ListenerPanic | undefined;
  readonly #lastDeltaPanic: ListenerPanic | undefined;

  private constructor(config: FailureCounts) {
    this.#eventListenerPanics = config.eventListenerPanics;
    this.#deltaListenerPanics = config.deltaListenerPanics;
    this.#droppedEvents = config.droppedEvents;
    this.#lastEventPanic = config.lastEventPanic;
    this.#lastDeltaPanic = config.lastDeltaPanic;
    Object.freeze(this);
  }

  static of(config: ObservationFailuresConfig): ObservationFailures {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidEngineConfig, `invalid observation failures: ${message}`);
    };
    const counts = {
      eventListenerPanics: config.eventListenerPanics ?? 0n,
      deltaListenerPanics: config.deltaListenerPanics ?? 0n,
      droppedEvents: config.droppedEvents ?? 0n,
    };
    for (const [name, value] of Object.entries(counts)) {
      if (typeof value !== 'bigint' || value < 0n || value > maxUint64) fail(`${name} must be a uint64, got ${describe(value)}`);
    }
    for (const name of ['lastEventPanic', 'lastDeltaPanic'] as const) {
      if (config[name] !== undefined && !(config[name] instanceof ListenerPanic)) fail(`${name} must be a ListenerPanic`);
    }
    return new ObservationFailures({ ...counts, lastEventPanic: config.lastEventPanic, lastDeltaPanic: config.lastDeltaPanic });
  }

  get eventListenerPanics(): bigint {
    return this.#eventListenerPanics;
  }

  get deltaListenerPanics(): bigint {
    return this.#deltaListenerPanics;
  }

  /** Events omitted because their Process publication sequence exhausted uint64. */
  get droppedEvents(): bigint {
    return this.#droppedEvents;
  }

  get lastEventPanic(): ListenerPanic | undefined {
    return this.#lastEventPanic;
  }

  get lastDeltaPanic(): ListenerPanic | undefined {
    return this.#lastDeltaPanic;
  }
}

/**
 * The mutable accumulator behind {@link ObservationFailures}. One Engine shares one log between
 * its EventPublisher and DeltaPipeline so a single snapshot covers both.
 */
export class ObservationFailureLog {
  #eventListenerPanics = 0n;
  #deltaListenerPanics = 0n;
  #droppedEvents = 0n;
  #lastEventPanic: ListenerPanic | undefined;
  #lastDeltaPanic: ListenerPanic | undefined;

  recordEventPanic(panic: ListenerPanic): void {
    this.#eventListenerPanics = saturatingAdd(this.#eventListenerPanics, 1n);
    this.#lastEventPanic = panic;
  }

  recordDeltaPanic(panic: ListenerPanic): void {
    this.#deltaListenerPanics = saturatingAdd(this.#deltaListenerPanics, 1n);
    this.#lastDeltaPanic = panic;
  }

  /** Counts events that were not published because their Process sequence space was exhausted. */
  recordDroppedEvents(count = 1n): void {
    this.#droppedEvents = saturatingAdd(this.#droppedEvents, count);
  }

  snapshot(): ObservationFailures {
    return ObservationFailures.of({
      eventListenerPanics: this.#eventListenerPanics,
      deltaListenerPanics: this.#deltaListenerPanics,
      droppedEvents: this.#droppedEvents,
      lastEventPanic: this.#lastEventPanic,
      lastDeltaPanic: this.#lastDeltaPanic,
    });
  }
}

/* ================================================================================================
 * Event publication
 * ============================================================================================== */

export interface EventPublisherOptions {
  /** The shared failure log; a private one by default. */
  readonly failures?: ObservationFailureLog;
}

interface BoundListener<T> {
  readonly index: number;
  readonly type: string;
  readonly call: (value: T) => unknown;
}

/**
 * Calls every EventListener synchronously, in configuration order, for each published Event.
 * Listener throws (and rejections of promises they return) are isolated, counted and retained as
 * the last event panic; `publish` never throws because of a listener.
 *
 * Re-entrancy: `inListener` is true, and `activeEvent` names the event being delivered, while a
 * listener callback runs synchronously, so the Engine can reject calls that would wait for the
 * listener's own tree (`listener_reentrancy`).
 */
export class EventPublisher {
  readonly #listeners: readonly BoundListener<Event>[];
  readonly #failures: ObservationFailureLog;
  readonly #active: Event[] = [];

  /** Throws `invalid_engine_config` for a listener that is neither a function nor has `onEvent`. */
  constructor(listeners: readonly EventListenerLike[] = [], options: EventPublisherOptions = {}) {
    this.#listeners = bindListeners(listeners, 'onEvent', 'event');
    this.#failures = checkLog(options.failures);
  }

  get hasListeners(): boolean {
    return this.#listeners.length > 0;
  }

  get listenerCount(): number {
    return this.#listeners.length;
  }

  /** True while a listener callback is running (synchronously) inside `publish`. */
  get inListener(): boolean {
    return this.#active.length > 0;
  }

  /** The event whose listener callback is running, innermost first; undefined outside callbacks. */
  get activeEvent(): Event | undefined {
    return this.#active.at(-1);
  }

  /**
   * Delivers `event` to every listener in order. Throws `invalid_event` only when `event` is not an
   * Event (a caller bug); listener failures are isolated.
   */
  publish(event: Event): void {
    if (!(event instanceof Event)) throw new KernelError(ErrorCode.invalidEvent, `publish needs an Event, got ${describe(event)}`);
    for (const listener of this.#listeners) {
      this.#active.push(event);
      let result: unknown;
      try {
        result = listener.call(event);
      } catch (thrown) {
        this.#recordPanic(thrown, listener, event);
        continue;
      } finally {
        this.#active.pop();
      }
      // The panic handler is built only for an asynchronous listener (most return nothing).
      if (isThenable(result)) watchRejection(result, (thrown) => this.#recordPanic(thrown, listener, event));
    }
  }

  /** Counts an event omitted because its Process sequence space was exhausted. */
  recordDroppedEvent(): void {
    this.#failures.recordDroppedEvents(1n);
  }

  failures(): ObservationFailures {
    return this.#failures.snapshot();
  }

  #recordPanic(thrown: unknown, listener: BoundListener<Event>, event: Event): void {
    this.#failures.recordEventPanic(
      ListenerPanic.capture(thrown, { listenerIndex: listener.index, listenerType: listener.type, processId: event.processId }),
    );
  }
}

/* ================================================================================================
 * Delta pipeline
 * ============================================================================================== */

/** The queue capacity selected by a zero or omitted `capacity`. */
export const defaultDeltaCapacity = 1024;

/** How long {@link DeltaAttemptEmitter.finish} waits for an attempt's deltas by default (ms). */
export const defaultDeltaFlushTimeoutMs = 1000;

export interface DeltaPipelineOptions {
  readonly listeners?: readonly DeltaListenerLike[];
  /** Bound of queued (not yet delivering) deltas; 0 or omitted selects {@link defaultDeltaCapacity}. */
  readonly capacity?: number;
  /** Stamps `emittedAt`; the system clock by default. */
  readonly clock?: Clock;
  /**
   * Bounds {@link DeltaAttemptEmitter.finish}: after this many milliseconds (a positive integer;
   * {@link defaultDeltaFlushTimeoutMs} when omitted) the attempt's still-queued deltas are dropped.
   */
  readonly flushTimeoutMs?: number;
  /** The shared failure log; a private one by default. */
  readonly failures?: ObservationFailureLog;
}

/** The identities of one physical Effect attempt whose increments an emitter stamps. */
export interface DeltaAttempt {
  readonly attemptId: EffectAttemptId;
  readonly processId: ProcessId;
  readonly effectId: EffectId;
  readonly treeIncarnationId?: TreeIncarnationId;
}

/** What one attempt's emitter admitted: payloads dropped and the last sequence it assigned (0 for none). */
export interface DeltaAttemptSummary {
  readonly dropped: bigint;
  readonly lastSequence: bigint;
}

/** The emitter of one Effect attempt; valid only until `close()` (that is, during dispatch). */
export interface DeltaAttemptEmitter {
  /** Validates, sequences and enqueues one payload; it never throws and is a no-op once closed. */
  readonly emit: DeltaEmitter;
  /** Ends the attempt (idempotent); later `emit` calls are ignored and not counted. */
  close(): DeltaAttemptSummary;
  /**
   * Ends the attempt and resolves once every delta it enqueued has been delivered to every
   * listener — or, after the pipeline's flush timeout, once the ones still queued are dropped
   * (counted in the summary and through `onDrop`, never delivered later). A delta already being
   * delivered is not waited for past the timeout. It never rejects.
   */
  finish(): Promise<DeltaAttemptSummary>;
  readonly closed: boolean;
}

/** Delivery bookkeeping of one attempt's deltas inside the shared queue. */
interface AttemptDeliveries {
  /** Enqueued, not yet handed to the listeners. */
  queued: number;
  /** True while one of its deltas is being delivered. */
  delivering: boolean;
  /** Set when its queued deltas were dropped: the worker skips them. */
  cancelled: boolean;
  readonly idle: Array<() => void>;
}

interface QueuedDelta {
  readonly delta: Delta;
  readonly attempt: AttemptDeliveries;
}

interface FlushWaiter {
  readonly target: number;
  readonly resolve: () => void;
}

/**
 * The bounded, best-effort Delta queue and its single delivery worker.
 *
 * Admission (`emitterFor(...).emit`) is synchronous: each call takes the attempt's next 1-based
 * `effect_sequence`, then the payload is dropped when it is not a Payload of at most 1 MiB, when
 * the queue already holds `capacity` deltas, or when the attempt's sequence space is exhausted
 * (which takes no number); every drop calls `onDrop(1n)` and leaves a gap. Accepted deltas are
 * delivered by one asynchronous worker to every listener serially, in queue order; listener
 * failures are isolated and counted.
 *
 * `flush()` is an ordering barrier (it resolves once every delta enqueued before the call has been
 * delivered; it never recovers drops); an attempt's `finish()` is the same barrier for that attempt
 * alone, bounded by `flushTimeoutMs`, so an Engine can put an attempt's deltas before the commit of
 * its settlement without letting a stuck listener hold that commit; `close()` stops admission,
 * drains and resolves when the worker is idle. Both reject with `listener_reentrancy` when called from inside a delta listener
 * callback, which could otherwise wait for itself.
 */
export class DeltaPipeline {
  readonly #listeners: readonly BoundListener<Delta>[];
  readonly #capacity: number;
  readonly #flushTimeoutMs: number;
  readonly #clock: Clock;
  readonly #failures: ObservationFailureLog;
  #queue: (QueuedDelta | undefined)[] = [];
  #head = 0;
  /** Queued deltas still to be delivered (dropped attempts' entries excluded). */
  #pending = 0;
  #enqueued = 0;
  #delivered = 0;
  #working = false;
  #closed = false;
  #closing: Promise<void> | undefined;
  #inCallback = 0;
  #activeDelta: Delta | undefined;
  readonly #waiters: FlushWaiter[] = [];

  /** Throws `invalid_engine_config` for a negative or non-integer capacity or an invalid listener. */
  constructor(options: DeltaPipelineOptions = {}) {
    const capacity = options.capacity ?? 0;
    if (!Number.isSafeInteger(capacity) || capacity < 0) {
      throw new KernelError(
        ErrorCode.invalidEngineConfig,
        `invalid engine config: delta buffer capacity must be a non-negative integer, got ${describe(capacity)}`,
      );
    }
    this.#capacity = capacity === 0 ? defaultDeltaCapacity : capacity;
    const flushTimeoutMs = options.flushTimeoutMs ?? defaultDeltaFlushTimeoutMs;
    if (!Number.isSafeInteger(flushTimeoutMs) || flushTimeoutMs <= 0) {
      throw new KernelError(
        ErrorCode.invalidEngineConfig,
        `invalid engine config: delta flush timeout must be a positive integer of milliseconds, got ${describe(flushTimeoutMs)}`,
      );
    }
    this.#flushTimeoutMs = flushTimeoutMs;
    this.#listeners = bindListeners(options.listeners ?? [], 'onDelta', 'delta');
    const clock = options.clock ?? systemClock;
    if (typeof clock !== 'object' || clock === null || typeof clock.now !== 'function') {
      throw new KernelError(ErrorCode.invalidEngineConfig, 'invalid engine config: clock must have a now() method');
    }
    this.#clock = clock;
    this.#failures = checkLog(options.failures);
  }

  /** False when nobody listens: the Engine then passes no emitter to Dispatchers. */
  get hasListeners(): boolean {
    return this.#listeners.length > 0;
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** Deltas accepted but not yet handed to the listeners. */
  get queued(): number {
    return this.#pending;
  }

  /** True once `close()` was called: emitters ignore further payloads. */
  get closed(): boolean {
    return this.#closed;
  }

  /** True while a delta listener callback runs synchronously. */
  get inListener(): boolean {
    return this.#inCallback > 0;
  }

  /** The delta whose listener callback is running synchronously, if any. */
  get activeDelta(): Delta | undefined {
    return this.#activeDelta;
  }

  /**
   * A fresh emitter for one Effect attempt (sequences restart at 1 per attempt). `onDrop` is called
   * synchronously with `1n` for every dropped payload so the Engine can count `dropped_deltas`; a
   * throw from it is ignored, since the emitter must not fail the Dispatcher. After `close()` of
   * the pipeline the emitter is inert. Throws `invalid_delta` for invalid attempt identities.
   */
  emitterFor(attempt: DeltaAttempt, onDrop?: (count: bigint) => void): DeltaAttemptEmitter {
    checkAttempt(attempt);
    const identities = {
      attemptId: attempt.attemptId,
      processId: attempt.processId,
      effectId: attempt.effectId,
      treeIncarnationId: attempt.treeIncarnationId,
    };
    let open = true;
    let lastSequence = 0n;
    let dropped = 0n;
    const deliveries: AttemptDeliveries = { queued: 0, delivering: false, cancelled: false, idle: [] };
    const drop = (count = 1n): void => {
      dropped = saturatingAdd(dropped, count);
      try {
        onDrop?.(count);
      } catch {
        // The emitter reports no error to the Dispatcher; the count above still holds.
      }
    };
    const emit: DeltaEmitter = (payload) => {
      if (!open || this.#closed) return;
      const sequence = nextSequence(lastSequence);
      if (sequence === undefined) {
        drop();
        return;
      }
      lastSequence = sequence;
      if (!isDeltaPayload(payload)) {
        drop();
        return;
      }
      if (this.#listeners.length === 0) return;
      if (this.queued >= this.#capacity) {
        drop();
        return;
      }
      let delta: Delta;
      try {
        delta = Delta.create({ ...identities, effectSequence: sequence, emittedAt: this.#clock.now(), payload });
      } catch {
        drop();
        return;
      }
      this.#enqueue({ delta, attempt: deliveries });
    };
    const summary = (): DeltaAttemptSummary => Object.freeze({ dropped, lastSequence });
    const timeoutMs = this.#flushTimeoutMs;
    const handle: DeltaAttemptEmitter = {
      emit,
      close(): DeltaAttemptSummary {
        open = false;
        return summary();
      },
      finish: (): Promise<DeltaAttemptSummary> => {
        open = false;
        if (deliveries.queued === 0 && !deliveries.delivering) return Promise.resolve(summary());
        return new Promise((resolve) => {
          const timer = setTimeout(() => {
            // Past the bound the rest is dropped rather than delivered after what it preceded.
            const abandoned = this.#abandon(deliveries);
            if (abandoned > 0) drop(BigInt(abandoned));
            resolve(summary());
          }, timeoutMs);
          deliveries.idle.push(() => {
            clearTimeout(timer);
            resolve(summary());
          });
        });
      },
      get closed(): boolean {
        return !open;
      },
    };
    return Object.freeze(handle);
  }

  /** Resolves once every delta enqueued before this call has been delivered to every listener. */
  flush(): Promise<void> {
    if (this.#inCallback > 0) return Promise.reject(reentrancy('flush'));
    return this.#barrier();
  }

  /** Stops admission, drains the queue and resolves when delivery is done (idempotent). */
  close(): Promise<void> {
    if (this.#inCallback > 0) return Promise.reject(reentrancy('close'));
    if (this.#closing === undefined) {
      this.#closed = true;
      this.#closing = this.#barrier();
    }
    return this.#closing;
  }

  failures(): ObservationFailures {
    return this.#failures.snapshot();
  }

  #barrier(): Promise<void> {
    const target = this.#enqueued;
    if (this.#delivered >= target) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#waiters.push({ target, resolve });
    });
  }

  #enqueue(entry: QueuedDelta): void {
    this.#queue.push(entry);
    entry.attempt.queued += 1;
    this.#pending += 1;
    this.#enqueued += 1;
    if (!this.#working) {
      this.#working = true;
      void this.#drain();
    }
  }

  /** Drops the still-queued deltas of one attempt (the worker skips them); returns how many. */
  #abandon(attempt: AttemptDeliveries): number {
    const count = attempt.queued;
    attempt.cancelled = true;
    attempt.queued = 0;
    this.#pending -= count;
    this.#settleAttempt(attempt);
    return count;
  }

  #settleAttempt(attempt: AttemptDeliveries): void {
    if (attempt.queued > 0 || attempt.delivering) return;
    for (const wake of attempt.idle.splice(0)) wake();
  }

  #dequeue(): QueuedDelta | undefined {
    if (this.#head >= this.#queue.length) return undefined;
    const delta = this.#queue[this.#head];
    this.#queue[this.#head] = undefined;
    this.#head += 1;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return delta;
  }

  /** The worker: yields first, so delivery never runs inside the Dispatcher's `emit` call. */
  async #drain(): Promise<void> {
    await Promise.resolve();
    try {
      for (let entry = this.#dequeue(); entry !== undefined; entry = this.#dequeue()) {
        const { delta, attempt } = entry;
        if (!attempt.cancelled) {
          attempt.queued -= 1;
          this.#pending -= 1;
          attempt.delivering = true;
          for (const listener of this.#listeners) await this.#deliver(listener, delta);
          attempt.delivering = false;
          this.#settleAttempt(attempt);
        }
        this.#delivered += 1;
        this.#release();
      }
    } finally {
      this.#working = false;
    }
  }

  async #deliver(listener: BoundListener<Delta>, delta: Delta): Promise<void> {
    let result: unknown;
    this.#inCallback += 1;
    this.#activeDelta = delta;
    try {
      result = listener.call(delta);
    } catch (thrown) {
      this.#recordPanic(thrown, listener, delta);
      return;
    } finally {
      this.#inCallback -= 1;
      this.#activeDelta = undefined;
    }
    if (!isThenable(result)) return;
    try {
      await result;
    } catch (thrown) {
      this.#recordPanic(thrown, listener, delta);
    }
  }

  #release(): void {
    while (this.#waiters.length > 0 && (this.#waiters[0] as FlushWaiter).target <= this.#delivered) {
      (this.#waiters.shift() as FlushWaiter).resolve();
    }
  }

  #recordPanic(thrown: unknown, listener: BoundListener<Delta>, delta: Delta): void {
    this.#failures.recordDeltaPanic(
      ListenerPanic.capture(thrown, { listenerIndex: listener.index, listenerType: listener.type, processId: delta.processId }),
    );
  }
}

/* ================================================================================================
 * Helpers
 * ============================================================================================== */

function reentrancy(operation: string): KernelError {
  return new KernelError(
    ErrorCode.listenerReentrancy,
    `delta pipeline ${operation} called from inside a delta listener would wait for that listener`,
  );
}

function checkLog(log: unknown): ObservationFailureLog {
  if (log === undefined) return new ObservationFailureLog();
  if (!(log instanceof ObservationFailureLog)) {
    throw new KernelError(ErrorCode.invalidEngineConfig, 'invalid engine config: failures must be an ObservationFailureLog');
  }
  return log;
}

function checkAttempt(attempt: DeltaAttempt): void {
  const fail = (message: string): never => {
    throw new KernelError(ErrorCode.invalidDelta, `invalid delta attempt: ${message}`);
  };
  if (typeof attempt !== 'object' || attempt === null) fail(`expected the attempt identities, got ${describe(attempt)}`);
  if (!(attempt.attemptId instanceof EffectAttemptId)) fail('attemptId must be an EffectAttemptId');
  if (!(attempt.processId instanceof ProcessId)) fail('processId must be a ProcessId');
  if (!(attempt.effectId instanceof EffectId)) fail('effectId must be an EffectId');
  if (attempt.treeIncarnationId !== undefined && !(attempt.treeIncarnationId instanceof TreeIncarnationId)) {
    fail('treeIncarnationId must be a TreeIncarnationId when present');
  }
}

function bindListeners<T>(
  listeners: readonly unknown[],
  method: 'onEvent' | 'onDelta',
  kind: 'event' | 'delta',
): readonly BoundListener<T>[] {
  if (!Array.isArray(listeners)) {
    throw new KernelError(ErrorCode.invalidEngineConfig, `invalid engine config: ${kind} listeners must be an array`);
  }
  return Object.freeze(
    listeners.map((listener: unknown, index): BoundListener<T> => {
      if (typeof listener === 'function') {
        const fn = listener as (value: T) => unknown;
        return Object.freeze({ index, type: fn.name === '' ? 'function' : `function ${fn.name}`, call: (value: T) => fn(value) });
      }
      if (typeof listener === 'object' && listener !== null) {
        const target = listener as Record<string, unknown>;
        if (typeof target[method] === 'function') {
          const callback = target[method] as (value: T) => unknown;
          return Object.freeze({ index, type: typeNameOf(listener), call: (value: T) => callback.call(listener, value) });
        }
      }
      throw new KernelError(
        ErrorCode.invalidEngineConfig,
        `invalid engine config: ${kind} listener ${index} must be a function or have an ${method} method`,
      );
    }),
  );
}

function typeNameOf(listener: object): string {
  try {
    const name: unknown = (listener as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' ? name : 'Object';
  } catch {
    return 'Object';
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  if ((typeof value !== 'object' || value === null) && typeof value !== 'function') return false;
  try {
    return typeof (value as { then?: unknown }).then === 'function';
  } catch {
    return false;
  }
}

/** Counts a rejection of a promise a synchronous listener returned (it is not awaited). */
function watchRejection(result: unknown, onPanic: (thrown: unknown) => void): void {
  if (!isThenable(result)) return;
  try {
    result.then(undefined, onPanic);
  } catch (thrown) {
    onPanic(thrown);
  }
}

/** The formatted thrown value; never throws. */
function formatThrown(thrown: unknown): string {
  try {
    if (typeof thrown === 'string') return thrown;
    if (thrown instanceof Error) return String(thrown);
    if (typeof thrown === 'object' && thrown !== null) {
      const json = JSON.stringify(thrown);
      if (typeof json === 'string') return json;
    }
    return String(thrown);
  } catch {
    try {
      return Object.prototype.toString.call(thrown);
    } catch {
      return 'unprintable thrown value';
    }
  }
}

/** The stack of a thrown Error (empty for other values); never throws. */
function stackOf(thrown: unknown): string {
  try {
    if (typeof thrown === 'object' && thrown !== null) {
      const stack: unknown = (thrown as { stack?: unknown }).stack;
      if (typeof stack === 'string') return stack;
    }
  } catch {
    // A hostile getter leaves the stack empty.
  }
  return '';
}

const loneSurrogates = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Well-formed text cut to at most `maxBytes` UTF-8 bytes on a code point boundary. */
export function boundText(text: string, maxBytes: number): string {
  const wellFormed = text.replace(loneSurrogates, '\uFFFD');
  if (wellFormed.length * 3 <= maxBytes) return wellFormed;
  let bytes = 0;
  let index = 0;
  while (index < wellFormed.length) {
    const unit = wellFormed.charCodeAt(index);
    let width = 3;
    let units = 1;
    if (unit < 0x80) width = 1;
    else if (unit < 0x800) width = 2;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      width = 4;
      units = 2;
    }
    if (bytes + width > maxBytes) break;
    bytes += width;
    index += units;
  }
  return wellFormed.slice(0, index);
}
