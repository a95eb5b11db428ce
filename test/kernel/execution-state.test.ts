import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseJson } from '../../src/kernel/canonical-json.js';
import { KernelError } from '../../src/kernel/errors.js';
import { ExecutionState } from '../../src/kernel/execution-state.js';
import { Payload } from '../../src/kernel/payload.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const rejects = (input: string) =>
  assert.throws(() => ExecutionState.parse(input), code('invalid_execution_state'), input);

interface Counter {
  count: number;
  label: string;
}

describe('ExecutionState', () => {
  test('encode seals a typed state under its kind', () => {
    const state = ExecutionState.encode('workflow.state.v1', { label: 'x', count: 3 });
    assert.equal(state.kind, 'workflow.state.v1');
    assert.equal(state.payload.json(), '{"count":3,"label":"x"}');
    assert.deepEqual(state.decode<Counter>('workflow.state.v1'), { count: 3, label: 'x' });
    assert.ok(Object.isFrozen(state));
  });

  test('of keeps an existing payload', () => {
    const payload = Payload.parse('[1,2,3]');
    const state = ExecutionState.of('planning.goap', payload);
    assert.ok(state.payload.equals(payload));
    assert.equal(state.json(), '{"kind":"planning.goap","payload":[1,2,3]}');
  });

  test('decode fails when the kind differs', () => {
    const state = ExecutionState.encode('workflow.state.v1', { count: 1, label: 'a' });
    assert.throws(() => state.decode<Counter>('workflow.state.v2'), code('invalid_execution_state'));
    assert.throws(() => state.decode<Counter>(''), code('invalid_execution_state'));
  });

  test('the kind must be a qualified name', () => {
    for (const kind of ['', 'Workflow', '1state', 'has space', `a${'b'.repeat(128)}`]) {
      assert.throws(() => ExecutionState.encode(kind, {}), code('invalid_execution_state'), kind);
      assert.throws(() => ExecutionState.of(kind, Payload.emptyObject), code('invalid_execution_state'), kind);
    }
    assert.equal(ExecutionState.of(`a${'b'.repeat(127)}`, Payload.emptyObject).kind.length, 128);
  });

  test('of requires a Payload', () => {
    assert.throws(() => ExecutionState.of('a.b', '{}' as unknown as Payload), code('invalid_execution_state'));
  });

  test('encode rejects values that are not JSON', () => {
    assert.throws(() => ExecutionState.encode('a.b', { f: () => 1 }), code('invalid_payload'));
    assert.throws(() => ExecutionState.encode('a.b', Number.NaN), code('invalid_payload'));
  });

  test('round-trips canonically, keeping number literals', () => {
    for (const text of ['{}', 'null', '{"n":1.50,"big":12345678901234567890}', '["b","a"]']) {
      const json = ExecutionState.of('interaction.react', Payload.parse(text)).json();
      assert.equal(ExecutionState.parse(json).json(), json);
    }
    assert.equal(
      ExecutionState.parse('{"kind":"a.b","payload":{"n":1.50}}').json(),
      '{"kind":"a.b","payload":{"n":1.50}}',
    );
  });

  test('decodes any member order to the canonical form', () => {
    assert.equal(
      ExecutionState.parse('{"payload":{"z":0,"a":[]},"kind":"a.b"}').json(),
      '{"kind":"a.b","payload":{"a":[],"z":0}}',
    );
  });

  test('decode rejects missing, invalid and unknown members', () => {
    rejects('{"payload":{}}');
    rejects('{"kind":"a.b"}');
    rejects('{"kind":"A.B","payload":{}}');
    rejects('{"kind":7,"payload":{}}');
    rejects('{"kind":"a.b","payload":{},"version":1}');
    rejects('{"kind":"a.b","payload":{"x":1,"x":1}}');
    rejects('{"kind":"a.b","payload":"\\ud800"}');
    rejects('"a.b"');
  });

  test('equals compares kind and payload', () => {
    const state = ExecutionState.encode('a.b', { x: 1 });
    assert.ok(state.equals(ExecutionState.parse('{"kind":"a.b","payload":{"x":1}}')));
    assert.equal(state.equals(ExecutionState.encode('a.c', { x: 1 })), false);
    assert.equal(state.equals(ExecutionState.encode('a.b', { x: 2 })), false);
  });

  test('fromWire uses the parent code and path', () => {
    assert.throws(
      () => ExecutionState.fromWire(parseJson('{"kind":"Bad","payload":{}}'), '/committed_execution_state', 'invalid_snapshot'),
      (error: unknown) =>
        error instanceof KernelError &&
        error.code === 'invalid_snapshot' &&
        error.message.includes('/committed_execution_state/kind'),
    );
  });
});
