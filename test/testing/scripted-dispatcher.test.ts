import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DeltaEmitter } from '../../src/kernel/definition.js';
import { Effect, EffectRequest } from '../../src/kernel/effect.js';
import { KernelError } from '../../src/kernel/errors.js';
import { Event, eventNames } from '../../src/kernel/event.js';
import { EffectAttemptId, ProcessId } from '../../src/kernel/identity.js';
import { DeltaPipeline, EventPublisher } from '../../src/kernel/observation.js';
import { Payload } from '../../src/kernel/payload.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { Settlement } from '../../src/kernel/settlement.js';
import { ObservationRecorder, ScriptedDispatcher, TestingErrorCode, type ScriptedCall } from '../../src/testing/scripted-dispatcher.js';
import { testDeploymentRef } from '../../src/testing/snapshot-fixtures.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const invalidScript = code('invalid_dispatch_script');

const processId = ProcessId.parse('process:scripted');
const relation = ProcessRelation.root(processId);
const effectA = Effect.dispatcher(Payload.encode({ tool: 'a' }));
const effectB = Effect.dispatcher(Payload.encode({ tool: 'b' }));

function request(effect: Effect, stepSequence = 1n, batchIndex = 0): EffectRequest {
  return EffectRequest.create({
    processId,
    relation,
    deploymentRef: testDeploymentRef,
    stepSequence,
    batchIndex,
    effect,
    attemptId: EffectAttemptId.random(),
  });
}

const ok = (value: unknown) => ({ status: 'succeeded' as const, payload: Payload.encode(value) });
const signal = () => new AbortController().signal;

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

function event(sequence: bigint, name: (typeof eventNames)[keyof typeof eventNames] = eventNames.processStarted): Event {
  return Event.create({
    processSequence: sequence,
    processId,
    deploymentRef: testDeploymentRef,
    relation,
    name,
    occurredAt: '2025-01-01T00:00:00Z',
  });
}

describe('ScriptedDispatcher script validation', () => {
  test('the error codes are stable', () => {
    assert.deepEqual({ ...TestingErrorCode }, {
      invalidDispatchScript: 'invalid_dispatch_script',
      unexpectedDispatch: 'unexpected_dispatch',
      effectMismatch: 'effect_mismatch',
      invalidEventPredicate: 'invalid_event_predicate',
    });
  });

  test('rejects a bad replay policy or calls list', () => {
    assert.throws(() => new ScriptedDispatcher({ replayPolicy: 'always' as never, calls: [] }), invalidScript);
    assert.throws(() => new ScriptedDispatcher({ replayPolicy: 'never', calls: undefined as never }), invalidScript);
    assert.throws(() => new ScriptedDispatcher(null as never), invalidScript);
  });

  const badCalls: Record<string, ScriptedCall> = {
    'neither settlement nor error': {},
    'both settlement and error': { settlement: ok(1), error: new Error('x') },
    'an invalid settlement status': { settlement: { status: 'done' as never, payload: Payload.emptyObject } },
    'a settlement without a Payload': { settlement: { status: 'succeeded', payload: { a: 1 } as never } },
    'a non-Effect expectation': { expectedEffect: { target: 'dispatcher' } as never, settlement: ok(1) },
    'non-Payload deltas': { deltas: ['text' as never], settlement: ok(1) },
    'deltas that are not an array': { deltas: 'x' as never, settlement: ok(1) },
    'a gate that is not a promise': { gate: 5 as never, settlement: ok(1) },
  };
  for (const [label, call] of Object.entries(badCalls)) {
    test(`rejects a call with ${label}`, () => {
      assert.throws(() => new ScriptedDispatcher({ replayPolicy: 'never', calls: [call] }), invalidScript);
    });
  }

  test('accepts a Settlement instance and any non-undefined error value', () => {
    const dispatcher = new ScriptedDispatcher({
      replayPolicy: 'never',
      calls: [{ settlement: Settlement.of('failed', Payload.encode('no')) }, { error: 'timeout' }, { error: null }],
    });
    assert.equal(dispatcher.remaining(), 3);
  });
});

describe('ScriptedDispatcher dispatch', () => {
  test('answers in script order and records every request', async () => {
    const dispatcher = new ScriptedDispatcher({
      replayPolicy: 'same_identity',
      calls: [{ expectedEffect: effectA, settlement: ok('first') }, { settlement: { status: 'unknown', payload: Payload.encode('?') } }],
    });
    assert.equal(dispatcher.replayPolicy(effectA), 'same_identity');
    const first = request(effectA);
    const settlement = await dispatcher.dispatch(first, undefined, signal());
    assert.equal(settlement.status, 'succeeded');
    assert.equal(settlement.payload.json(), '"first"');
    assert.equal(dispatcher.remaining(), 1);
    const second = await dispatcher.dispatch(request(effectB, 2n), undefined, signal());
    assert.equal(second.status, 'unknown');
    assert.equal(dispatcher.remaining(), 0);
    assert.equal(dispatcher.requests().length, 2);
    assert.equal(dispatcher.requests()[0], first);
    assert.equal(dispatcher.requests()[1]?.stepSequence, 2n);
  });

  test('a scripted error rejects with exactly that value (an unknown outcome)', async () => {
    const failure = new Error('connection reset');
    const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ error: failure }, { error: 'text' }] });
    await assert.rejects(dispatcher.dispatch(request(effectA), undefined, signal()), (error) => error === failure);
    await assert.rejects(dispatcher.dispatch(request(effectA), undefined, signal()), (error) => error === 'text');
    assert.equal(dispatcher.remaining(), 0);
  });

  test('calls beyond the script reject with unexpected_dispatch and are still recorded', async () => {
    const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ settlement: ok(1) }] });
    await dispatcher.dispatch(request(effectA), undefined, signal());
    const extra = request(effectB);
    await assert.rejects(dispatcher.dispatch(extra, undefined, signal()), code('unexpected_dispatch'));
    await assert.rejects(dispatcher.dispatch(extra, undefined, signal()), code('unexpected_dispatch'));
    assert.equal(dispatcher.requests().length, 3);
    assert.equal(dispatcher.requests()[2], extra);
    assert.equal(dispatcher.remaining(), 0);
  });

  test('a request is recorded synchronously, before the dispatch settles', () => {
    const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [] });
    const pending = dispatcher.dispatch(request(effectA), undefined, signal());
    assert.equal(dispatcher.requests().length, 1);
    return assert.rejects(pending, code('unexpected_dispatch'));
  });

  test('an effect mismatch rejects with effect_mismatch and consumes the call', async () => {
    const dispatcher = new ScriptedDispatcher({
      replayPolicy: 'never',
      calls: [{ expectedEffect: effectA, settlement: ok(1) }, { settlement: ok(2) }],
    });
    await assert.rejects(dispatcher.dispatch(request(effectB), undefined, signal()), code('effect_mismatch'));
    assert.equal(dispatcher.remaining(), 1);
    assert.equal((await dispatcher.dispatch(request(effectB), undefined, signal())).payload.json(), '2');
    assert.equal(dispatcher.requests().length, 2);
  });

  test('emits scripted deltas in order when an emitter is supplied, and skips them otherwise', async () => {
    const emitted: string[] = [];
    const emit: DeltaEmitter = (payload) => void emitted.push(payload.json());
    const dispatcher = new ScriptedDispatcher({
      replayPolicy: 'never',
      calls: [
        { deltas: [Payload.encode('a'), Payload.encode('b')], settlement: ok(1) },
        { deltas: [Payload.encode('c')], settlement: ok(2) },
      ],
    });
    await dispatcher.dispatch(request(effectA), emit, signal());
    await dispatcher.dispatch(request(effectA), undefined, signal());
    assert.deepEqual(emitted, ['"a"', '"b"']);
    assert.deepEqual(
      dispatcher.records().map((record) => record.hadEmitter),
      [true, false],
    );
  });

  test('a gate holds the answer; deltas are emitted before it', async () => {
    const gate = deferred();
    const emitted: string[] = [];
    const dispatcher = new ScriptedDispatcher({
      replayPolicy: 'never',
      calls: [{ deltas: [Payload.encode('partial')], gate: gate.promise, settlement: ok('done') }],
    });
    const trace: string[] = [];
    const pending = dispatcher.dispatch(request(effectA), (payload) => void emitted.push(payload.json()), signal()).then((s) => {
      trace.push('settled');
      return s;
    });
    assert.deepEqual(emitted, ['"partial"']);
    trace.push('opening');
    gate.resolve();
    assert.equal((await pending).payload.json(), '"done"');
    assert.deepEqual(trace, ['opening', 'settled']);
  });

  test('records the abort signal of each dispatch', async () => {
    const controller = new AbortController();
    const dispatcher = new ScriptedDispatcher({ replayPolicy: 'never', calls: [{ settlement: ok(1) }] });
    await dispatcher.dispatch(request(effectA), undefined, controller.signal);
    assert.equal(dispatcher.records()[0]?.signal, controller.signal);
  });

  test('deltas flow through a DeltaPipeline to an ObservationRecorder', async () => {
    const recorder = new ObservationRecorder();
    const pipeline = new DeltaPipeline({ listeners: [recorder] });
    const req = request(effectA);
    const attemptId = req.attemptId as EffectAttemptId;
    const emitter = pipeline.emitterFor({ attemptId, processId, effectId: req.id });
    const dispatcher = new ScriptedDispatcher({
      replayPolicy: 'never',
      calls: [{ deltas: [Payload.encode(1), Payload.encode(2)], settlement: ok('done') }],
    });
    await dispatcher.dispatch(req, emitter.emit, signal());
    emitter.close();
    await pipeline.flush();
    assert.deepEqual(
      recorder.deltas().map((d) => [d.effectSequence, d.payload.json()]),
      [
        [1n, '1'],
        [2n, '2'],
      ],
    );
  });
});

describe('ObservationRecorder', () => {
  test('records events and deltas in order and returns copies', async () => {
    const recorder = new ObservationRecorder();
    const publisher = new EventPublisher([recorder]);
    publisher.publish(event(1n));
    publisher.publish(event(2n, eventNames.processPaused));
    const events = recorder.events();
    assert.deepEqual(
      events.map((e) => e.name),
      [eventNames.processStarted, eventNames.processPaused],
    );
    events.pop();
    assert.equal(recorder.events().length, 2);
    assert.deepEqual(recorder.deltas(), []);
  });

  test('awaitEvent resolves with an already recorded match', async () => {
    const recorder = new ObservationRecorder();
    recorder.onEvent(event(1n));
    recorder.onEvent(event(2n, eventNames.processPaused));
    recorder.onEvent(event(3n, eventNames.processPaused));
    const found = await recorder.awaitEvent((e) => e.name === eventNames.processPaused);
    assert.equal(found.processSequence, 2n, 'the first match');
  });

  test('awaitEvent resolves when a match is recorded later', async () => {
    const recorder = new ObservationRecorder();
    const paused = recorder.awaitEvent((e) => e.name === eventNames.processPaused);
    const again = recorder.awaitEvent((e) => e.name === eventNames.processPaused);
    recorder.onEvent(event(1n));
    recorder.onEvent(event(2n, eventNames.processPaused));
    recorder.onEvent(event(3n, eventNames.processPaused));
    assert.equal((await paused).processSequence, 2n);
    assert.equal((await again).processSequence, 2n);
  });

  test('awaitEvent rejects a non-function predicate', async () => {
    await assert.rejects(new ObservationRecorder().awaitEvent('paused' as never), code('invalid_event_predicate'));
  });

  test('a throwing predicate rejects its wait without disturbing recording', async () => {
    const recorder = new ObservationRecorder();
    const failure = new Error('predicate');
    const failing = recorder.awaitEvent(() => {
      throw failure;
    });
    const publisher = new EventPublisher([recorder]);
    publisher.publish(event(1n));
    await assert.rejects(failing, (error) => error === failure);
    assert.equal(publisher.failures().eventListenerPanics, 0n);
    assert.equal(recorder.events().length, 1);
    recorder.onEvent(event(2n));
    await assert.rejects(
      recorder.awaitEvent(() => {
        throw failure;
      }),
      (error) => error === failure,
    );
  });

  test('an abort signal rejects the wait with its reason', async () => {
    const recorder = new ObservationRecorder();
    const controller = new AbortController();
    const waiting = recorder.awaitEvent((e) => e.name === eventNames.processFinished, { signal: controller.signal });
    const reason = new Error('test timeout');
    controller.abort(reason);
    await assert.rejects(waiting, (error) => error === reason);
    const aborted = AbortSignal.abort('gone');
    await assert.rejects(recorder.awaitEvent(() => true, { signal: aborted }), (error) => error === 'gone');
  });

  test('a resolved wait ignores a later abort', async () => {
    const recorder = new ObservationRecorder();
    const controller = new AbortController();
    const waiting = recorder.awaitEvent(() => true, { signal: controller.signal });
    recorder.onEvent(event(1n));
    controller.abort();
    assert.equal((await waiting).processSequence, 1n);
  });

  test('awaitDelta resolves from deltas the pipeline delivers', async () => {
    const recorder = new ObservationRecorder();
    const pipeline = new DeltaPipeline({ listeners: [recorder] });
    const req = request(effectA);
    const emitter = pipeline.emitterFor({ attemptId: req.attemptId as EffectAttemptId, processId, effectId: req.id });
    const second = recorder.awaitDelta((d) => d.effectSequence === 2n);
    emitter.emit(Payload.encode('x'));
    emitter.emit(Payload.encode('y'));
    assert.equal((await second).payload.json(), '"y"');
    await assert.rejects(recorder.awaitDelta(42 as never), code('invalid_event_predicate'));
  });
});
