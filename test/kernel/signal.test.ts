import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { EffectId, ProcessId, SignalId, WaitId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Signal, SignalRequest, type SignalConfig } from '../../src/kernel/signal.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const invalidSignal = code(ErrorCode.invalidSignal);
const invalidRequest = code(ErrorCode.invalidSignalRequest);

const effect = EffectId.derive(ProcessId.parse('process:p'), 1n, 0);
const otherEffect = EffectId.derive(ProcessId.parse('process:p'), 1n, 1);
const wait = WaitId.derive(effect);
const payload = Payload.parse('{"b":2,"a":1}');

test('an unaddressed host signal carries only id and payload', () => {
  const signal = Signal.create({ id: SignalId.parse('host-1'), payload });
  assert.equal(signal.json(), '{"id":"host-1","payload":{"a":1,"b":2}}');
  assert.equal(signal.waitId, undefined);
  assert.equal(signal.status, undefined);
  assert.equal(signal.engineOwned, false);
  assert.ok(signal.payload.equals(payload));
  assert.ok(Object.isFrozen(signal));
});

test('a wait answer carries its wait id', () => {
  const signal = Signal.create({ id: SignalId.parse('host-2'), waitId: wait, payload });
  assert.equal(signal.json(), `{"id":"host-2","payload":{"a":1,"b":2},"wait_id":"${wait.toString()}"}`);
  assert.ok(signal.waitId?.equals(wait));
});

test('a dispatcher settlement delivery carries a status and an engine-owned id', () => {
  const id = SignalId.settlement(effect);
  const signal = Signal.create({ id, payload, status: 'unknown' });
  assert.equal(signal.status, 'unknown');
  assert.equal(signal.engineOwned, true);
  assert.equal(signal.json(), `{"id":"${id.toString()}","payload":{"a":1,"b":2},"status":"unknown"}`);
});

test('status requires an engine-owned id and no wait; it must be a settlement status', () => {
  assert.throws(() => Signal.create({ id: SignalId.parse('host-3'), payload, status: 'succeeded' }), invalidSignal);
  assert.throws(() => Signal.create({ id: SignalId.settlement(effect), waitId: wait, payload, status: 'failed' }), invalidSignal);
  assert.throws(
    () => Signal.create({ id: SignalId.settlement(effect), payload, status: 'done' as unknown as 'failed' }),
    invalidSignal,
  );
  // An engine-owned id without status (wait openings, child answers) is fine.
  Signal.create({ id: SignalId.waitOpened(wait), waitId: wait, payload });
});

test('Signal.create rejects members of the wrong type', () => {
  assert.throws(() => Signal.create({ id: 'host-1' as unknown as SignalId, payload }), invalidSignal);
  assert.throws(() => Signal.create({ id: SignalId.parse('host-1'), payload: '{}' as unknown as Payload }), invalidSignal);
  assert.throws(
    () => Signal.create({ id: SignalId.parse('host-1'), waitId: 'wait:x' as unknown as WaitId, payload }),
    invalidSignal,
  );
  assert.throws(() => Signal.create(null as unknown as SignalConfig), invalidSignal);
});

test('engineOwned and settles identify Engine settlement deliveries', () => {
  const settlement = Signal.create({ id: SignalId.settlement(effect), payload, status: 'succeeded' });
  assert.equal(settlement.settles(effect), true);
  assert.equal(settlement.settles(otherEffect), false);
  const opening = Signal.create({ id: SignalId.waitOpened(wait), waitId: wait, payload });
  assert.equal(opening.engineOwned, true);
  assert.equal(opening.settles(effect), false);
  const host = Signal.create({ id: SignalId.parse('host-1'), payload });
  assert.equal(host.settles(effect), false);
});

test('signals round trip and decode from any member order', () => {
  const signals = [
    Signal.create({ id: SignalId.parse('host-1'), payload }),
    Signal.create({ id: SignalId.parse('host-2'), waitId: wait, payload }),
    Signal.create({ id: SignalId.settlement(effect), payload, status: 'failed' }),
  ];
  for (const signal of signals) {
    const parsed = Signal.parse(signal.json());
    assert.ok(parsed.equals(signal));
    assert.equal(parsed.json(), signal.json());
  }
  const shuffled = '{ "payload": { "b": 2, "a": 1 }, "id": "host-1" }';
  assert.equal(Signal.parse(shuffled).json(), signals[0]?.json());
});

test('decoding rejects status rule violations, unknown members and malformed members', () => {
  const engineId = SignalId.settlement(effect).toString();
  const bad = [
    '{"id":"host-1","payload":{},"status":"succeeded"}',
    `{"id":"${engineId}","payload":{},"status":"succeeded","wait_id":"${wait.toString()}"}`,
    `{"id":"${engineId}","payload":{},"status":"maybe"}`,
    `{"id":"${engineId}","payload":{},"status":null}`,
    '{"id":"host-1","payload":{},"extra":1}',
    '{"id":"host-1"}',
    '{"payload":{}}',
    '{"id":"bad id","payload":{}}',
    '{"id":"host-1","payload":{},"wait_id":""}',
    '{"id":"host-1","payload":{},"wait_id":null}',
    '"host-1"',
  ];
  for (const text of bad) assert.throws(() => Signal.parse(text), invalidSignal, text);
});

test('a SignalRequest accepts a caller-chosen id as text or SignalId', () => {
  const fromText = SignalRequest.create({ id: 'host-1', payload });
  const fromId = SignalRequest.create({ id: SignalId.parse('host-1'), payload });
  assert.ok(fromText.equals(fromId));
  assert.equal(fromText.json(), '{"id":"host-1","payload":{"a":1,"b":2}}');
  const addressed = SignalRequest.create({ id: 'host-2', waitId: wait, payload });
  assert.equal(addressed.json(), `{"id":"host-2","payload":{"a":1,"b":2},"wait_id":"${wait.toString()}"}`);
  assert.ok(addressed.waitId?.equals(wait));
  assert.ok(Object.isFrozen(addressed));
});

test('a SignalRequest rejects the engine namespace and malformed members', () => {
  assert.throws(() => SignalRequest.create({ id: 'signal:engine:abc', payload }), invalidRequest);
  assert.throws(() => SignalRequest.create({ id: SignalId.settlement(effect), payload }), invalidRequest);
  assert.throws(() => SignalRequest.create({ id: '', payload }), invalidRequest);
  assert.throws(() => SignalRequest.create({ id: 'has space', payload }), invalidRequest);
  assert.throws(() => SignalRequest.create({ id: 'host-1', payload: {} as Payload }), invalidRequest);
  assert.throws(() => SignalRequest.create({ id: 'host-1', waitId: 'w' as unknown as WaitId, payload }), invalidRequest);
});

test('SignalRequest round trips; decoding rejects engine ids and unknown members', () => {
  const request = SignalRequest.create({ id: 'host-2', waitId: wait, payload });
  assert.ok(SignalRequest.parse(request.json()).equals(request));
  const bad = [
    `{"id":"${SignalId.settlement(effect).toString()}","payload":{}}`,
    '{"id":"host-1","payload":{},"status":"succeeded"}',
    '{"id":"host-1","payload":{},"extra":true}',
    '{"id":"host-1"}',
    '{"id":7,"payload":{}}',
  ];
  for (const text of bad) assert.throws(() => SignalRequest.parse(text), invalidRequest, text);
});

test('an admitted request becomes a Signal with the same id, wait and payload', () => {
  const request = SignalRequest.create({ id: 'host-2', waitId: wait, payload });
  const signal = request.toSignal();
  assert.ok(signal instanceof Signal);
  assert.equal(signal.json(), request.json());
  assert.equal(signal.status, undefined);
});
