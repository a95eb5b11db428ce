import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Delta, isDeltaPayload, maxDeltaBytes, type DeltaConfig } from '../../src/kernel/delta.js';
import { KernelError } from '../../src/kernel/errors.js';
import { EffectAttemptId, EffectId, ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';

const invalidDelta = (error: unknown) => error instanceof KernelError && error.code === 'invalid_delta';

const processId = ProcessId.parse('process:root');
const effectId = EffectId.derive(processId, 2n, 0);
const attemptId = EffectAttemptId.parse(`attempt:${'b'.repeat(32)}`);
const incarnation = TreeIncarnationId.parse(`incarnation:${'c'.repeat(32)}`);

function config(overrides: Partial<DeltaConfig> = {}): DeltaConfig {
  return {
    attemptId,
    processId,
    effectId,
    treeIncarnationId: incarnation,
    effectSequence: 1n,
    emittedAt: '2025-06-01T12:00:00.000000001Z',
    payload: Payload.encode({ token: 'hel' }),
    ...overrides,
  };
}

describe('Delta.create', () => {
  test('holds its members and round-trips through the wire', () => {
    const delta = Delta.create(config());
    assert.ok(delta.attemptId.equals(attemptId));
    assert.ok(delta.processId.equals(processId));
    assert.ok(delta.effectId.equals(effectId));
    assert.ok(delta.treeIncarnationId?.equals(incarnation));
    assert.equal(delta.effectSequence, 1n);
    assert.equal(delta.emittedAt, '2025-06-01T12:00:00.000000001Z');
    assert.equal(delta.payload.json(), '{"token":"hel"}');
    assert.ok(Object.isFrozen(delta));
    const decoded = Delta.parse(delta.json());
    assert.ok(decoded.equals(delta));
    assert.equal(decoded.json(), delta.json());
  });

  test('the wire form has exactly the contract members, sorted', () => {
    const wire = JSON.parse(Delta.create(config()).json()) as Record<string, unknown>;
    assert.deepEqual(Object.keys(wire), [
      'attempt_id',
      'effect_id',
      'effect_sequence',
      'emitted_at',
      'payload',
      'process_id',
      'tree_incarnation_id',
    ]);
    assert.deepEqual(wire.payload, { token: 'hel' });
  });

  test('the incarnation is optional and omitted when absent', () => {
    const delta = Delta.create(config({ treeIncarnationId: undefined }));
    assert.equal(delta.json().includes('tree_incarnation_id'), false);
    assert.equal(Delta.parse(delta.json()).treeIncarnationId, undefined);
  });

  test('the sequence is a uint64 of at least one, exact beyond 2^53', () => {
    assert.throws(() => Delta.create(config({ effectSequence: 0n })), invalidDelta);
    assert.throws(() => Delta.create(config({ effectSequence: 1n << 64n })), invalidDelta);
    assert.throws(() => Delta.create(config({ effectSequence: 1 as never })), invalidDelta);
    const big = (1n << 64n) - 1n;
    assert.equal(Delta.parse(Delta.create(config({ effectSequence: big })).json()).effectSequence, big);
  });

  test('emittedAt accepts a canonical timestamp or a Date', () => {
    assert.equal(Delta.create(config({ emittedAt: new Date('2025-06-01T12:00:00Z') })).emittedAt, '2025-06-01T12:00:00Z');
    assert.throws(() => Delta.create(config({ emittedAt: '2025-06-01T12:00:00.0Z' })), invalidDelta);
    assert.throws(() => Delta.create(config({ emittedAt: new Date(Number.NaN) })), invalidDelta);
  });

  test('members must have their kernel types', () => {
    assert.throws(() => Delta.create(config({ attemptId: 'attempt:x' as never })), invalidDelta);
    assert.throws(() => Delta.create(config({ processId: 'process:root' as never })), invalidDelta);
    assert.throws(() => Delta.create(config({ effectId: undefined as never })), invalidDelta);
    assert.throws(() => Delta.create(config({ treeIncarnationId: 'incarnation:x' as never })), invalidDelta);
    assert.throws(() => Delta.create(config({ payload: { token: 'x' } as never })), invalidDelta);
    assert.throws(() => Delta.create(undefined as never), invalidDelta);
  });

  test('the payload bound is 1 MiB of canonical JSON', () => {
    assert.equal(maxDeltaBytes, 1 << 20);
    const exact = Payload.encode('x'.repeat(maxDeltaBytes - 2)); // two quotes
    assert.equal(exact.size, maxDeltaBytes);
    assert.ok(isDeltaPayload(exact));
    assert.ok(Delta.create(config({ payload: exact })));
    const over = Payload.encode('x'.repeat(maxDeltaBytes - 1));
    assert.equal(isDeltaPayload(over), false);
    assert.throws(() => Delta.create(config({ payload: over })), invalidDelta);
    // Escaping counts: `<` is six canonical bytes.
    const escaped = Payload.encode('<'.repeat(maxDeltaBytes / 6 + 1));
    assert.throws(() => Delta.create(config({ payload: escaped })), invalidDelta);
    assert.equal(isDeltaPayload('{}'), false);
  });
});

describe('Delta.parse is strict', () => {
  const valid = JSON.parse(Delta.create(config()).json()) as Record<string, unknown>;
  const variant = (change: (wire: Record<string, unknown>) => void): string => {
    const copy = structuredClone(valid);
    change(copy);
    return JSON.stringify(copy);
  };

  const rejections: Record<string, (wire: Record<string, unknown>) => void> = {
    'unknown member': (w) => (w.extra = true),
    'missing attempt id': (w) => delete w.attempt_id,
    'missing process id': (w) => delete w.process_id,
    'missing effect id': (w) => delete w.effect_id,
    'missing sequence': (w) => delete w.effect_sequence,
    'missing emitted at': (w) => delete w.emitted_at,
    'missing payload': (w) => delete w.payload,
    'null incarnation': (w) => (w.tree_incarnation_id = null),
    'bad attempt id': (w) => (w.attempt_id = 'attempt:XYZ'),
    'bad process id': (w) => (w.process_id = 'has space'),
    'zero sequence': (w) => (w.effect_sequence = 0),
    'negative sequence': (w) => (w.effect_sequence = -3),
    'string sequence': (w) => (w.effect_sequence = '1'),
    'bad timestamp': (w) => (w.emitted_at = 'yesterday'),
    'oversized payload': (w) => (w.payload = 'x'.repeat(maxDeltaBytes)),
  };
  for (const [label, change] of Object.entries(rejections)) {
    test(`rejects ${label}`, () => {
      assert.throws(() => Delta.parse(variant(change)), invalidDelta);
    });
  }

  test('rejects sequence literals that are not plain unsigned integers', () => {
    for (const literal of ['1e3', '1.0', '01', '-0']) {
      assert.throws(() => Delta.parse(JSON.stringify(valid).replace('"effect_sequence":1', `"effect_sequence":${literal}`)), invalidDelta, literal);
    }
  });

  test('any JSON value is a payload, null included', () => {
    for (const payload of [null, 3, 'text', [1, 2], { nested: { a: true } }]) {
      const delta = Delta.parse(variant((w) => (w.payload = payload)));
      assert.equal(delta.payload.json(), JSON.stringify(payload));
    }
  });

  test('number literals in the payload survive verbatim', () => {
    const text = Delta.create(config()).json().replace('{"token":"hel"}', '{"n":1.50}');
    assert.equal(Delta.parse(text).payload.json(), '{"n":1.50}');
  });

  test('rejects malformed JSON and non-objects', () => {
    for (const input of ['', 'null', '[]', '{"attempt_id":1,"attempt_id":2}']) {
      assert.throws(() => Delta.parse(input), invalidDelta, input);
    }
  });
});
