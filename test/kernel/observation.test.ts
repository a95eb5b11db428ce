import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Clock } from '../../src/kernel/clock.js';
import { systemClock } from '../../src/kernel/clock.js';
import type { Delta } from '../../src/kernel/delta.js';
import { maxDeltaBytes } from '../../src/kernel/delta.js';
import { KernelError } from '../../src/kernel/errors.js';
import { Event, eventNames } from '../../src/kernel/event.js';
import { EffectAttemptId, EffectId, ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import {
  boundText,
  defaultDeltaCapacity,
  defaultDeltaFlushTimeoutMs,
  DeltaPipeline,
  EventPublisher,
  ListenerPanic,
  maxPanicMessageBytes,
  maxPanicStackBytes,
  nextSequence,
  ObservationFailureLog,
  ObservationFailures,
  saturatingAdd,
  type DeltaAttempt,
} from '../../src/kernel/observation.js';
import { Payload } from '../../src/kernel/payload.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { maxUint64 } from '../../src/kernel/wire.js';
import { testDeploymentRef } from '../../src/testing/snapshot-fixtures.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;

const processId = ProcessId.parse('process:observed');
const relation = ProcessRelation.root(processId);
const attempt: DeltaAttempt = {
  attemptId: EffectAttemptId.parse(`attempt:${'1'.repeat(32)}`),
  processId,
  effectId: EffectId.derive(processId, 1n, 0),
  treeIncarnationId: TreeIncarnationId.parse(`incarnation:${'2'.repeat(32)}`),
};
const fixedClock: Clock = { now: () => new Date('2025-01-01T00:00:00.250Z') };

function event(sequence: bigint, name = eventNames.processStarted): Event {
  return Event.create({ processSequence: sequence, processId, deploymentRef: testDeploymentRef, relation, name, occurredAt: '2025-01-01T00:00:00Z' });
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/** Lets already-queued promise reactions run (a bounded number of microtask turns; no timers). */
async function drainMicrotasks(): Promise<void> {
  for (let turn = 0; turn < 20; turn += 1) await Promise.resolve();
}

const payload = (value: unknown) => Payload.encode(value);
const sequences = (deltas: readonly Delta[]) => deltas.map((delta) => delta.effectSequence);

describe('counters', () => {
  test('saturatingAdd clamps at 2^64−1 and never goes negative', () => {
    assert.equal(saturatingAdd(1n, 2n), 3n);
    assert.equal(saturatingAdd(maxUint64 - 1n, 1n), maxUint64);
    assert.equal(saturatingAdd(maxUint64, 1n), maxUint64);
    assert.equal(saturatingAdd(maxUint64, maxUint64), maxUint64);
    assert.equal(saturatingAdd(0n, -5n), 0n);
  });

  test('nextSequence is one-based and stops at the end of the uint64 space', () => {
    assert.equal(nextSequence(0n), 1n);
    assert.equal(nextSequence(41n), 42n);
    assert.equal(nextSequence(maxUint64 - 1n), maxUint64);
    assert.equal(nextSequence(maxUint64), undefined);
  });

  test('the failure log saturates every count', () => {
    const log = new ObservationFailureLog();
    log.recordDroppedEvents(maxUint64 - 1n);
    log.recordDroppedEvents(5n);
    assert.equal(log.snapshot().droppedEvents, maxUint64);
    const panic = ListenerPanic.of({ listenerIndex: 0, listenerType: 'T', message: 'm' });
    log.recordEventPanic(panic);
    log.recordDeltaPanic(panic);
    assert.equal(log.snapshot().eventListenerPanics, 1n);
    assert.equal(log.snapshot().deltaListenerPanics, 1n);
  });

  test('ObservationFailures snapshots are immutable uint64 values', () => {
    const none = ObservationFailures.none;
    assert.equal(none.eventListenerPanics, 0n);
    assert.equal(none.deltaListenerPanics, 0n);
    assert.equal(none.droppedEvents, 0n);
    assert.equal(none.lastEventPanic, undefined);
    assert.equal(none.lastDeltaPanic, undefined);
    assert.ok(Object.isFrozen(none));
    assert.equal(ObservationFailures.of({ droppedEvents: maxUint64 }).droppedEvents, maxUint64);
    assert.throws(() => ObservationFailures.of({ droppedEvents: maxUint64 + 1n }), code('invalid_engine_config'));
    assert.throws(() => ObservationFailures.of({ eventListenerPanics: -1n }), code('invalid_engine_config'));
    assert.throws(() => ObservationFailures.of({ lastEventPanic: {} as never }), code('invalid_engine_config'));
  });

  test('a snapshot does not change when the log moves on', () => {
    const log = new ObservationFailureLog();
    const before = log.snapshot();
    log.recordDroppedEvents();
    assert.equal(before.droppedEvents, 0n);
    assert.equal(log.snapshot().droppedEvents, 1n);
  });
});

describe('ListenerPanic', () => {
  test('captures an Error with its message and stack', () => {
    const error = new TypeError('listener broke');
    const panic = ListenerPanic.capture(error, { listenerIndex: 2, listenerType: 'Exporter', processId });
    assert.equal(panic.listenerIndex, 2);
    assert.equal(panic.listenerType, 'Exporter');
    assert.ok(panic.processId?.equals(processId));
    assert.equal(panic.message, 'TypeError: listener broke');
    assert.ok(panic.stack.includes('listener broke'));
    assert.ok(Object.isFrozen(panic));
  });

  test('formats thrown non-errors without throwing', () => {
    const at = { listenerIndex: 0, listenerType: 'function' };
    assert.equal(ListenerPanic.capture('plain', at).message, 'plain');
    assert.equal(ListenerPanic.capture({ reason: 'x' }, at).message, '{"reason":"x"}');
    assert.equal(ListenerPanic.capture(42, at).message, '42');
    assert.equal(ListenerPanic.capture(undefined, at).message, 'undefined');
    assert.equal(ListenerPanic.capture(Symbol('s'), at).message, 'Symbol(s)');
    assert.equal(ListenerPanic.capture({ big: 1n }, at).message, '[object Object]');
    const hostile = {
      toJSON() {
        throw new Error('no json');
      },
      get stack(): string {
        throw new Error('no stack');
      },
    };
    const panic = ListenerPanic.capture(hostile, at);
    assert.equal(panic.message, '[object Object]');
    assert.equal(panic.stack, '');
    const hostileError = new Error('x');
    Object.defineProperty(hostileError, 'toString', {
      value: () => {
        throw new Error('no string');
      },
    });
    assert.equal(ListenerPanic.capture(hostileError, at).message, '[object Error]');
  });

  test('bounds the message to 4 KiB and the stack to 64 KiB on code point boundaries', () => {
    const at = { listenerIndex: 0, listenerType: 'T' };
    const message = ListenerPanic.capture('€'.repeat(5000), at).message; // 3 bytes each
    assert.equal(maxPanicMessageBytes, 4096);
    assert.equal(Buffer.byteLength(message), 4095);
    assert.equal(message, '€'.repeat(1365));
    const error = new Error('e');
    error.stack = '😀'.repeat(20_000); // 4 bytes each
    const stack = ListenerPanic.capture(error, at).stack;
    assert.equal(maxPanicStackBytes, 65536);
    assert.equal(Buffer.byteLength(stack), 65536);
    assert.equal(stack, '😀'.repeat(16384));
  });

  test('makes lone surrogates well-formed', () => {
    assert.equal(boundText('a\uD800b', 100), 'a\uFFFDb');
    assert.equal(boundText('ab', 1), 'a');
  });

  test('of validates its members', () => {
    assert.throws(() => ListenerPanic.of({ listenerIndex: -1, listenerType: 'T', message: '' }), code('invalid_engine_config'));
    assert.throws(() => ListenerPanic.of({ listenerIndex: 0.5, listenerType: 'T', message: '' }), code('invalid_engine_config'));
    assert.throws(
      () => ListenerPanic.of({ listenerIndex: 0, listenerType: 'T', message: '', processId: 'p' as never }),
      code('invalid_engine_config'),
    );
    assert.equal(ListenerPanic.of({ listenerIndex: 0, listenerType: 'T', message: 'x'.repeat(5000) }).message.length, 4096);
  });
});

describe('EventPublisher', () => {
  test('calls every listener synchronously, in order, for every event', () => {
    const calls: string[] = [];
    const publisher = new EventPublisher([
      (e: Event) => calls.push(`a${e.processSequence}`),
      { onEvent: (e: Event) => calls.push(`b${e.processSequence}`) },
    ]);
    publisher.publish(event(1n));
    publisher.publish(event(2n));
    assert.deepEqual(calls, ['a1', 'b1', 'a2', 'b2']);
    assert.equal(publisher.hasListeners, true);
    assert.equal(publisher.listenerCount, 2);
  });

  test('calls object listeners as methods', () => {
    class Counter {
      count = 0;
      onEvent(): void {
        this.count += 1;
      }
    }
    const counter = new Counter();
    new EventPublisher([counter]).publish(event(1n));
    assert.equal(counter.count, 1);
  });

  test('isolates and counts a throwing listener; publish never throws and later listeners still run', () => {
    const seen: bigint[] = [];
    class Exploder {
      onEvent(): void {
        throw new Error('boom');
      }
    }
    const publisher = new EventPublisher([new Exploder(), (e: Event) => seen.push(e.processSequence)]);
    assert.doesNotThrow(() => publisher.publish(event(1n)));
    assert.doesNotThrow(() => publisher.publish(event(2n)));
    assert.deepEqual(seen, [1n, 2n]);
    const failures = publisher.failures();
    assert.equal(failures.eventListenerPanics, 2n);
    assert.equal(failures.deltaListenerPanics, 0n);
    assert.equal(failures.lastEventPanic?.listenerIndex, 0);
    assert.equal(failures.lastEventPanic?.listenerType, 'Exploder');
    assert.equal(failures.lastEventPanic?.message, 'Error: boom');
    assert.ok(failures.lastEventPanic?.processId?.equals(processId));
  });

  test('retains only the latest panic', () => {
    let round = 0;
    const publisher = new EventPublisher([
      function failing() {
        round += 1;
        throw new Error(`round ${round}`);
      },
    ]);
    publisher.publish(event(1n));
    publisher.publish(event(2n));
    assert.equal(publisher.failures().lastEventPanic?.message, 'Error: round 2');
    assert.equal(publisher.failures().lastEventPanic?.listenerType, 'function failing');
  });

  test('counts the rejection of a promise a listener returned', async () => {
    const rejected = Promise.reject(new Error('async boom'));
    const publisher = new EventPublisher([() => rejected as unknown as void]);
    publisher.publish(event(1n));
    assert.equal(publisher.failures().eventListenerPanics, 0n);
    // The publisher's reaction was registered first, so it has run once this one settles.
    await rejected.catch(() => undefined);
    assert.equal(publisher.failures().eventListenerPanics, 1n);
    assert.equal(publisher.failures().lastEventPanic?.message, 'Error: async boom');
  });

  test('inListener and activeEvent are set exactly while a listener runs', () => {
    const observed: Array<[boolean, bigint | undefined]> = [];
    const publisher: EventPublisher = new EventPublisher([
      (e: Event) => observed.push([publisher.inListener, publisher.activeEvent?.processSequence]),
      () => {
        throw new Error('x');
      },
    ]);
    assert.equal(publisher.inListener, false);
    publisher.publish(event(5n));
    assert.deepEqual(observed, [[true, 5n]]);
    assert.equal(publisher.inListener, false, 'cleared after a throwing listener too');
    assert.equal(publisher.activeEvent, undefined);
  });

  test('nested publication keeps the guard until the outer listener returns', () => {
    const trace: string[] = [];
    let nested = false;
    const publisher: EventPublisher = new EventPublisher([
      (e: Event) => {
        trace.push(`in ${e.processSequence} ${publisher.activeEvent?.processSequence}`);
        if (!nested) {
          nested = true;
          publisher.publish(event(9n));
          trace.push(`back ${publisher.inListener} ${publisher.activeEvent?.processSequence}`);
        }
      },
    ]);
    publisher.publish(event(1n));
    assert.deepEqual(trace, ['in 1 1', 'in 9 9', 'back true 1']);
    assert.equal(publisher.inListener, false);
  });

  test('rejects invalid listeners and non-events', () => {
    const invalidConfig = code('invalid_engine_config');
    assert.throws(() => new EventPublisher([{} as never]), invalidConfig);
    assert.throws(() => new EventPublisher([{ onDelta: () => undefined } as never]), invalidConfig);
    assert.throws(() => new EventPublisher([null as never]), invalidConfig);
    assert.throws(() => new EventPublisher('x' as never), invalidConfig);
    assert.throws(() => new EventPublisher([], { failures: {} as never }), invalidConfig);
    assert.throws(() => new EventPublisher([]).publish({} as never), code('invalid_event'));
  });

  test('without listeners publication is a no-op', () => {
    const publisher = new EventPublisher();
    assert.equal(publisher.hasListeners, false);
    publisher.publish(event(1n));
    assert.equal(publisher.failures().eventListenerPanics, 0n);
  });

  test('counts dropped events', () => {
    const publisher = new EventPublisher();
    publisher.recordDroppedEvent();
    publisher.recordDroppedEvent();
    assert.equal(publisher.failures().droppedEvents, 2n);
  });

  test('a shared log reports event and delta failures together', async () => {
    const failures = new ObservationFailureLog();
    const publisher = new EventPublisher(
      [
        () => {
          throw new Error('event');
        },
      ],
      { failures },
    );
    const pipeline = new DeltaPipeline({
      listeners: [
        () => {
          throw new Error('delta');
        },
      ],
      failures,
    });
    publisher.publish(event(1n));
    pipeline.emitterFor(attempt).emit(payload(1));
    await pipeline.flush();
    const snapshot = failures.snapshot();
    assert.equal(snapshot.eventListenerPanics, 1n);
    assert.equal(snapshot.deltaListenerPanics, 1n);
    assert.equal(snapshot.lastEventPanic?.message, 'Error: event');
    assert.equal(snapshot.lastDeltaPanic?.message, 'Error: delta');
    assert.equal(publisher.failures().deltaListenerPanics, 1n);
  });
});

describe('DeltaPipeline configuration', () => {
  test('capacity defaults to 1024 for zero or omitted and rejects negative or fractional values', () => {
    assert.equal(defaultDeltaCapacity, 1024);
    assert.equal(new DeltaPipeline().capacity, 1024);
    assert.equal(new DeltaPipeline({ capacity: 0 }).capacity, 1024);
    assert.equal(new DeltaPipeline({ capacity: 3 }).capacity, 3);
    for (const capacity of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '4' as never]) {
      assert.throws(() => new DeltaPipeline({ capacity }), code('invalid_engine_config'), String(capacity));
    }
  });

  test('rejects invalid listeners, clocks and attempts', () => {
    assert.throws(() => new DeltaPipeline({ listeners: [{ onEvent: () => undefined } as never] }), code('invalid_engine_config'));
    assert.throws(() => new DeltaPipeline({ clock: {} as never }), code('invalid_engine_config'));
    const pipeline = new DeltaPipeline();
    assert.throws(() => pipeline.emitterFor({ ...attempt, attemptId: 'attempt:x' as never }), code('invalid_delta'));
    assert.throws(() => pipeline.emitterFor({ ...attempt, processId: undefined as never }), code('invalid_delta'));
    assert.throws(() => pipeline.emitterFor({ ...attempt, effectId: {} as never }), code('invalid_delta'));
    assert.throws(() => pipeline.emitterFor({ ...attempt, treeIncarnationId: 'x' as never }), code('invalid_delta'));
  });

  test('hasListeners reports whether dispatchers get an emitter', () => {
    assert.equal(new DeltaPipeline().hasListeners, false);
    assert.equal(new DeltaPipeline({ listeners: [() => undefined] }).hasListeners, true);
  });

  test('the system clock is the default clock', () => {
    assert.ok(systemClock.now() instanceof Date);
    assert.ok(Object.isFrozen(systemClock));
  });
});

describe('DeltaPipeline delivery', () => {
  test('delivers accepted deltas in order with attempt identities, 1-based sequences and clock stamps', async () => {
    const received: Delta[] = [];
    const pipeline = new DeltaPipeline({ listeners: [(d: Delta) => void received.push(d)], clock: fixedClock });
    const emitter = pipeline.emitterFor(attempt);
    emitter.emit(payload('a'));
    emitter.emit(payload('b'));
    emitter.emit(payload('c'));
    await pipeline.flush();
    assert.deepEqual(sequences(received), [1n, 2n, 3n]);
    assert.deepEqual(
      received.map((d) => d.payload.json()),
      ['"a"', '"b"', '"c"'],
    );
    for (const delta of received) {
      assert.ok(delta.attemptId.equals(attempt.attemptId));
      assert.ok(delta.processId.equals(processId));
      assert.ok(delta.effectId.equals(attempt.effectId));
      assert.ok(delta.treeIncarnationId?.equals(attempt.treeIncarnationId));
      assert.equal(delta.emittedAt, '2025-01-01T00:00:00.25Z');
    }
    assert.deepEqual(emitter.close(), { dropped: 0n, lastSequence: 3n });
  });

  test('never delivers inside the emit call', async () => {
    const received: Delta[] = [];
    const pipeline = new DeltaPipeline({ listeners: [(d: Delta) => void received.push(d)] });
    pipeline.emitterFor(attempt).emit(payload(1));
    assert.equal(received.length, 0);
    assert.equal(pipeline.queued, 1);
    await pipeline.flush();
    assert.equal(received.length, 1);
    assert.equal(pipeline.queued, 0);
  });

  test('sequences are scoped to one attempt', async () => {
    const received: Delta[] = [];
    const pipeline = new DeltaPipeline({ listeners: [(d: Delta) => void received.push(d)] });
    const first = pipeline.emitterFor(attempt);
    const second = pipeline.emitterFor({ ...attempt, attemptId: EffectAttemptId.parse(`attempt:${'3'.repeat(32)}`) });
    first.emit(payload(1));
    second.emit(payload(2));
    first.emit(payload(3));
    await pipeline.flush();
    assert.deepEqual(sequences(received), [1n, 1n, 2n]);
  });

  test('invalid payloads are dropped, counted and leave sequence gaps', async () => {
    const received: Delta[] = [];
    const drops: bigint[] = [];
    const pipeline = new DeltaPipeline({ listeners: [(d: Delta) => void received.push(d)] });
    const emitter = pipeline.emitterFor(attempt, (count) => drops.push(count));
    emitter.emit(payload('ok'));
    emitter.emit({ not: 'a payload' } as never);
    emitter.emit(Payload.encode('x'.repeat(maxDeltaBytes)));
    emitter.emit(undefined as never);
    emitter.emit(payload('also ok'));
    await pipeline.flush();
    assert.deepEqual(sequences(received), [1n, 5n]);
    assert.deepEqual(drops, [1n, 1n, 1n]);
    assert.deepEqual(emitter.close(), { dropped: 3n, lastSequence: 5n });
  });

  test('a full queue drops, counts and leaves a gap; delivery resumes once there is room', async () => {
    const gate = deferred();
    const entered = deferred();
    const received: Delta[] = [];
    const drops: bigint[] = [];
    const pipeline = new DeltaPipeline({
      capacity: 2,
      listeners: [
        async (d: Delta) => {
          received.push(d);
          if (d.effectSequence === 1n) {
            entered.resolve();
            await gate.promise;
          }
        },
      ],
    });
    const emitter = pipeline.emitterFor(attempt, (count) => drops.push(count));
    emitter.emit(payload(1));
    await entered.promise; // delta 1 is being delivered; the queue is empty again
    emitter.emit(payload(2));
    emitter.emit(payload(3));
    assert.equal(pipeline.queued, 2);
    emitter.emit(payload(4)); // the queue holds `capacity` deltas: dropped
    assert.deepEqual(drops, [1n]);
    gate.resolve();
    await pipeline.flush();
    emitter.emit(payload(5));
    await pipeline.flush();
    assert.deepEqual(sequences(received), [1n, 2n, 3n, 5n]);
    assert.deepEqual(emitter.close(), { dropped: 1n, lastSequence: 5n });
  });

  test('a burst larger than the capacity keeps the first capacity deltas', async () => {
    const received: Delta[] = [];
    const pipeline = new DeltaPipeline({ capacity: 3, listeners: [(d: Delta) => void received.push(d)] });
    const emitter = pipeline.emitterFor(attempt);
    for (let index = 0; index < 6; index += 1) emitter.emit(payload(index));
    await pipeline.flush();
    assert.deepEqual(sequences(received), [1n, 2n, 3n]);
    assert.deepEqual(emitter.close(), { dropped: 3n, lastSequence: 6n });
  });

  test('emit after the attempt closed is a no-op and is not counted', async () => {
    const received: Delta[] = [];
    const drops: bigint[] = [];
    const pipeline = new DeltaPipeline({ listeners: [(d: Delta) => void received.push(d)] });
    const emitter = pipeline.emitterFor(attempt, (count) => drops.push(count));
    emitter.emit(payload(1));
    assert.equal(emitter.closed, false);
    const summary = emitter.close();
    assert.equal(emitter.closed, true);
    emitter.emit(payload(2));
    emitter.emit({} as never);
    await pipeline.flush();
    assert.deepEqual(sequences(received), [1n]);
    assert.deepEqual(drops, []);
    assert.deepEqual(summary, { dropped: 0n, lastSequence: 1n });
    assert.deepEqual(emitter.close(), summary, 'close is idempotent');
  });

  test('a throwing onDrop or clock never reaches the dispatcher', async () => {
    const received: Delta[] = [];
    const brokenClock: Clock = {
      now: () => {
        throw new Error('clock');
      },
    };
    const pipeline = new DeltaPipeline({ listeners: [(d: Delta) => void received.push(d)], clock: brokenClock });
    const emitter = pipeline.emitterFor(attempt, () => {
      throw new Error('onDrop');
    });
    assert.doesNotThrow(() => emitter.emit(payload(1)));
    assert.doesNotThrow(() => emitter.emit({} as never));
    await pipeline.flush();
    assert.equal(received.length, 0);
    assert.deepEqual(emitter.close(), { dropped: 2n, lastSequence: 2n });
  });

  test('without listeners, emit still sequences and validates but queues nothing', async () => {
    const pipeline = new DeltaPipeline({ capacity: 1 });
    const emitter = pipeline.emitterFor(attempt);
    emitter.emit(payload(1));
    emitter.emit(payload(2));
    emitter.emit({} as never);
    assert.equal(pipeline.queued, 0);
    await pipeline.flush();
    assert.deepEqual(emitter.close(), { dropped: 1n, lastSequence: 3n });
  });

  test('listener throws and rejections are isolated and counted; other listeners still receive', async () => {
    const received: Delta[] = [];
    class Broken {
      onDelta(): void {
        throw new Error('sync');
      }
    }
    const pipeline = new DeltaPipeline({
      listeners: [
        new Broken(),
        async () => {
          throw new Error('async');
        },
        (d: Delta) => void received.push(d),
      ],
    });
    const emitter = pipeline.emitterFor(attempt);
    emitter.emit(payload(1));
    emitter.emit(payload(2));
    await pipeline.flush();
    assert.deepEqual(sequences(received), [1n, 2n]);
    const failures = pipeline.failures();
    assert.equal(failures.deltaListenerPanics, 4n);
    assert.equal(failures.eventListenerPanics, 0n);
    assert.equal(failures.lastDeltaPanic?.listenerIndex, 1);
    assert.equal(failures.lastDeltaPanic?.message, 'Error: async');
    assert.ok(failures.lastDeltaPanic?.processId?.equals(processId));
  });

  test('listeners run serially: the next delivery waits for a returned promise', async () => {
    const trace: string[] = [];
    const gate = deferred();
    const pipeline = new DeltaPipeline({
      listeners: [
        async (d: Delta) => {
          trace.push(`a${d.effectSequence} start`);
          if (d.effectSequence === 1n) await gate.promise;
          trace.push(`a${d.effectSequence} end`);
        },
        (d: Delta) => void trace.push(`b${d.effectSequence}`),
      ],
    });
    const emitter = pipeline.emitterFor(attempt);
    emitter.emit(payload(1));
    emitter.emit(payload(2));
    const flushed = pipeline.flush();
    await drainMicrotasks();
    assert.deepEqual(trace, ['a1 start']);
    gate.resolve();
    await flushed;
    assert.deepEqual(trace, ['a1 start', 'a1 end', 'b1', 'a2 start', 'a2 end', 'b2']);
  });
});

describe('DeltaPipeline attempt finish', () => {
  const otherAttempt: DeltaAttempt = { ...attempt, attemptId: EffectAttemptId.parse(`attempt:${'b'.repeat(32)}`) };

  test('the flush timeout defaults to 1000 ms and must be a positive integer', () => {
    assert.equal(defaultDeltaFlushTimeoutMs, 1000);
    new DeltaPipeline({ flushTimeoutMs: 1 });
    for (const flushTimeoutMs of [0, -1, 1.5, Number.NaN, '5' as never]) {
      assert.throws(() => new DeltaPipeline({ flushTimeoutMs }), code('invalid_engine_config'), String(flushTimeoutMs));
    }
  });

  test('finish resolves once the attempt\'s own deltas were delivered, not later ones', async () => {
    const gate = deferred();
    const log: string[] = [];
    const pipeline = new DeltaPipeline({
      listeners: [
        async (d: Delta) => {
          if (d.attemptId.equals(otherAttempt.attemptId)) await gate.promise;
          log.push(`${d.attemptId.equals(attempt.attemptId) ? 'mine' : 'other'} ${d.effectSequence}`);
        },
      ],
    });
    const mine = pipeline.emitterFor(attempt);
    mine.emit(payload(1));
    mine.emit(payload(2));
    const other = pipeline.emitterFor(otherAttempt);
    other.emit(payload(1));
    const summary = await mine.finish();
    log.push('finished');
    assert.deepEqual(summary, { dropped: 0n, lastSequence: 2n });
    assert.equal(mine.closed, true);
    mine.emit(payload(3));
    gate.resolve();
    await pipeline.flush();
    assert.deepEqual(log, ['mine 1', 'mine 2', 'finished', 'other 1']);
    // An attempt with nothing queued finishes at once.
    assert.deepEqual(await pipeline.emitterFor(attempt).finish(), { dropped: 0n, lastSequence: 0n });
  });

  test('past the timeout the attempt\'s queued deltas are dropped, counted and never delivered', async () => {
    const stuck = deferred();
    const entered = deferred();
    const delivered: bigint[] = [];
    const drops: bigint[] = [];
    const pipeline = new DeltaPipeline({
      flushTimeoutMs: 5,
      capacity: 2,
      listeners: [
        async (d: Delta) => {
          delivered.push(d.effectSequence);
          entered.resolve();
          await stuck.promise;
        },
      ],
    });
    const emitter = pipeline.emitterFor(attempt, (count) => drops.push(count));
    emitter.emit(payload(1));
    await entered.promise;
    emitter.emit(payload(2));
    emitter.emit(payload(3));
    assert.equal(pipeline.queued, 2);
    const summary = await emitter.finish();
    assert.deepEqual(summary, { dropped: 2n, lastSequence: 3n });
    assert.deepEqual(drops, [2n]);
    assert.equal(pipeline.queued, 0, 'dropped deltas free their queue slots');
    const next = pipeline.emitterFor(otherAttempt);
    next.emit(payload('after'));
    stuck.resolve();
    await pipeline.flush();
    assert.deepEqual(delivered, [1n, 1n], 'delta 1, then the next attempt\'s; never 2 or 3');
  });
});

describe('DeltaPipeline flush and close', () => {
  test('flush with nothing pending resolves', async () => {
    await new DeltaPipeline().flush();
    await new DeltaPipeline({ listeners: [() => undefined] }).flush();
  });

  test('flush is an ordering barrier: it resolves only after every earlier delta was delivered', async () => {
    const gate = deferred();
    const entered = deferred();
    const log: string[] = [];
    const pipeline = new DeltaPipeline({
      listeners: [
        async (d: Delta) => {
          if (d.effectSequence === 1n) {
            entered.resolve();
            await gate.promise;
          }
          log.push(`delivered ${d.effectSequence}`);
        },
      ],
    });
    const emitter = pipeline.emitterFor(attempt);
    emitter.emit(payload(1));
    emitter.emit(payload(2));
    await entered.promise;
    let flushedEarly = false;
    const flushed = pipeline.flush().then(() => {
      flushedEarly = true;
      log.push('flushed');
    });
    await drainMicrotasks();
    assert.equal(flushedEarly, false, 'flush resolved while delta 1 was still blocked');
    log.push('gate opened');
    gate.resolve();
    await flushed;
    assert.deepEqual(log, ['gate opened', 'delivered 1', 'delivered 2', 'flushed']);
  });

  test('successive flushes resolve in order', async () => {
    const gate = deferred();
    const log: string[] = [];
    const pipeline = new DeltaPipeline({ listeners: [async () => gate.promise] });
    const emitter = pipeline.emitterFor(attempt);
    emitter.emit(payload(1));
    const first = pipeline.flush().then(() => void log.push('first'));
    emitter.emit(payload(2));
    const second = pipeline.flush().then(() => void log.push('second'));
    gate.resolve();
    await Promise.all([first, second]);
    assert.deepEqual(log, ['first', 'second']);
  });

  test('close stops admission, drains what was accepted and is idempotent', async () => {
    const gate = deferred();
    const entered = deferred();
    const received: Delta[] = [];
    const drops: bigint[] = [];
    const pipeline = new DeltaPipeline({
      listeners: [
        async (d: Delta) => {
          if (d.effectSequence === 1n) {
            entered.resolve();
            await gate.promise;
          }
          received.push(d);
        },
      ],
    });
    const emitter = pipeline.emitterFor(attempt, (count) => drops.push(count));
    emitter.emit(payload(1));
    emitter.emit(payload(2));
    await entered.promise;
    emitter.emit(payload(3));
    const closing = pipeline.close();
    assert.equal(pipeline.closed, true);
    assert.equal(pipeline.close(), closing);
    emitter.emit(payload(4)); // ignored and not counted
    let closed = false;
    void closing.then(() => {
      closed = true;
    });
    await drainMicrotasks();
    assert.equal(closed, false, 'close resolved before draining');
    gate.resolve();
    await closing;
    assert.deepEqual(sequences(received), [1n, 2n, 3n]);
    assert.deepEqual(drops, []);
    assert.deepEqual(emitter.close(), { dropped: 0n, lastSequence: 3n });
    const late = pipeline.emitterFor(attempt);
    late.emit(payload(5));
    await pipeline.flush();
    assert.equal(received.length, 3);
    assert.deepEqual(late.close(), { dropped: 0n, lastSequence: 0n });
  });

  test('close of an idle pipeline resolves', async () => {
    const pipeline = new DeltaPipeline({ listeners: [() => undefined] });
    await pipeline.close();
    assert.equal(pipeline.closed, true);
  });

  test('flush and close from inside a delta listener reject with listener_reentrancy', async () => {
    const outcomes: unknown[] = [];
    let inside: boolean | undefined;
    let active: bigint | undefined;
    const pipeline: DeltaPipeline = new DeltaPipeline({
      listeners: [
        (d: Delta) => {
          inside = pipeline.inListener;
          active = pipeline.activeDelta?.effectSequence;
          outcomes.push(pipeline.flush().catch((error: unknown) => error));
          outcomes.push(pipeline.close().catch((error: unknown) => error));
          void d;
        },
      ],
    });
    pipeline.emitterFor(attempt).emit(payload(1));
    assert.equal(pipeline.inListener, false);
    await pipeline.flush();
    assert.equal(inside, true);
    assert.equal(active, 1n);
    assert.equal(pipeline.inListener, false);
    assert.equal(pipeline.activeDelta, undefined);
    const errors = await Promise.all(outcomes);
    assert.equal(errors.length, 2);
    for (const error of errors) assert.ok(code('listener_reentrancy')(error));
    assert.equal(pipeline.closed, false, 'a rejected close does not close');
  });
});
