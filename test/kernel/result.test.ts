import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KernelError } from '../../src/kernel/errors.js';
import { Failure } from '../../src/kernel/failure.js';
import { EffectId, ProcessId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import {
  formatUtcTimestamp,
  isUtcTimestamp,
  Result,
  timestampToDate,
  type ResultOptions,
} from '../../src/kernel/result.js';
import { Termination } from '../../src/kernel/termination.js';
import { Usage } from '../../src/kernel/usage.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const rejects = (input: string) => assert.throws(() => Result.parse(input), code('invalid_result'), input);

const processId = ProcessId.parse('process:0123456789abcdef0123456789abcdef');
const usage = Usage.of({ committedSteps: 3n, preparedEffects: 2n, acceptedSignals: 1n, droppedDeltas: 0n });
const output = Payload.parse('{"answer":42}');
const failure = Failure.create('execution', 'workflow.task.not_completed', 'task did not complete');
const unknownEffect = EffectId.derive(processId, 2n, 0);

function options(overrides: Partial<ResultOptions> = {}): ResultOptions {
  return {
    processId,
    startedAt: '2025-03-01T10:00:00.123456789Z',
    finishedAt: '2025-03-01T10:00:05Z',
    output,
    termination: Termination.completed(),
    usage,
    ...overrides,
  };
}

const usageJson = '{"accepted_signals":1,"committed_steps":3,"dropped_deltas":0,"prepared_effects":2}';

describe('timestamps', () => {
  test('accept canonical UTC RFC 3339 with up to nanoseconds', () => {
    for (const text of [
      '2025-03-01T10:00:00Z',
      '2025-03-01T10:00:00.1Z',
      '2025-03-01T10:00:00.123456789Z',
      '2024-02-29T23:59:59.999Z',
      '2000-02-29T00:00:00Z',
      '0001-01-01T00:00:00Z',
      '9999-12-31T23:59:59.000000001Z',
    ]) {
      assert.equal(isUtcTimestamp(text), true, text);
    }
  });

  test('reject offsets, trailing zeros, extra precision and impossible dates', () => {
    for (const text of [
      '',
      '2025-03-01T10:00:00+00:00',
      '2025-03-01T10:00:00.100Z',
      '2025-03-01T10:00:00.Z',
      '2025-03-01T10:00:00.1234567891Z',
      '2025-03-01 10:00:00Z',
      '2025-03-01t10:00:00z',
      '2025-03-01T10:00Z',
      '2025-13-01T10:00:00Z',
      '2025-00-01T10:00:00Z',
      '2025-02-29T10:00:00Z',
      '1900-02-29T10:00:00Z',
      '2025-04-31T10:00:00Z',
      '2025-03-00T10:00:00Z',
      '2025-03-01T24:00:00Z',
      '2025-03-01T10:60:00Z',
      '2025-03-01T10:00:60Z',
      '+12025-03-01T10:00:00Z',
    ]) {
      assert.equal(isUtcTimestamp(text), false, text);
    }
    assert.equal(isUtcTimestamp(1), false);
  });

  test('format a Date canonically and convert back', () => {
    assert.equal(formatUtcTimestamp(new Date(Date.UTC(2025, 2, 1, 10, 0, 0, 0))), '2025-03-01T10:00:00Z');
    assert.equal(formatUtcTimestamp(new Date(Date.UTC(2025, 2, 1, 10, 0, 0, 500))), '2025-03-01T10:00:00.5Z');
    assert.equal(formatUtcTimestamp(new Date(Date.UTC(2025, 2, 1, 10, 0, 10, 120))), '2025-03-01T10:00:10.12Z');
    assert.equal(timestampToDate('2025-03-01T10:00:00.123456789Z').getTime(), Date.UTC(2025, 2, 1, 10, 0, 0, 123));
    assert.equal(timestampToDate('0001-01-01T00:00:00.5Z').toISOString(), '0001-01-01T00:00:00.500Z');
    assert.throws(() => formatUtcTimestamp(new Date(Number.NaN)), code('invalid_result'));
    assert.throws(() => formatUtcTimestamp(new Date(Date.UTC(10000, 0, 1))), code('invalid_result'));
    assert.throws(() => timestampToDate('yesterday'), code('invalid_result'));
  });
});

describe('Result', () => {
  test('create keeps every field', () => {
    const result = Result.create(options());
    assert.ok(result.processId.equals(processId));
    assert.equal(result.startedAt, '2025-03-01T10:00:00.123456789Z');
    assert.equal(result.finishedAt, '2025-03-01T10:00:05Z');
    assert.equal(result.startedAtDate.getTime(), Date.UTC(2025, 2, 1, 10, 0, 0, 123));
    assert.equal(result.finishedAtDate.getTime(), Date.UTC(2025, 2, 1, 10, 0, 5, 0));
    assert.ok(result.output?.equals(output));
    assert.equal(result.status, 'completed');
    assert.ok(result.termination.equals(Termination.completed()));
    assert.ok(result.usage.equals(usage));
    assert.ok(Object.isFrozen(result));
  });

  test('Date accessors return fresh copies', () => {
    const result = Result.create(options());
    result.startedAtDate.setUTCFullYear(1999);
    assert.equal(result.startedAtDate.getUTCFullYear(), 2025);
  });

  test('create accepts Dates', () => {
    const result = Result.create(
      options({ startedAt: new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 60)), finishedAt: new Date(Date.UTC(2025, 0, 2)) }),
    );
    assert.equal(result.startedAt, '2025-01-02T03:04:05.06Z');
    assert.equal(result.finishedAt, '2025-01-02T00:00:00Z');
  });

  test('finished before started is allowed (wall clocks move)', () => {
    const result = Result.create(options({ startedAt: '2025-03-01T10:00:00Z', finishedAt: '2025-03-01T09:00:00Z' }));
    assert.ok(result.finishedAtDate < result.startedAtDate);
  });

  test('encodes the exact wire members', () => {
    assert.equal(
      Result.create(options()).json(),
      '{"finished_at":"2025-03-01T10:00:05Z","output":{"answer":42},' +
        '"process_id":"process:0123456789abcdef0123456789abcdef","started_at":"2025-03-01T10:00:00.123456789Z",' +
        `"termination":{"cause":"completion","status":"completed"},"usage":${usageJson}}`,
    );
  });

  test('output is present exactly when completed', () => {
    assert.throws(() => Result.create(options({ output: undefined })), code('invalid_result'));
    assert.throws(
      () => Result.create(options({ termination: Termination.failed(failure) })),
      code('invalid_result'),
    );
    assert.throws(
      () => Result.create(options({ termination: Termination.interrupted('engine_kill', 'kill') })),
      code('invalid_result'),
    );
    const failed = Result.create(options({ output: undefined, termination: Termination.failed(failure) }));
    assert.equal(failed.output, undefined);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.json().includes('"output"'), false);
  });

  test('create rejects invalid times and parts', () => {
    assert.throws(() => Result.create(options({ startedAt: '2025-03-01T10:00:00+01:00' })), code('invalid_result'));
    assert.throws(() => Result.create(options({ finishedAt: 'now' })), code('invalid_result'));
    assert.throws(() => Result.create(options({ startedAt: new Date(Number.NaN) })), code('invalid_result'));
    assert.throws(
      () => Result.create(options({ processId: 'process:x' as unknown as ProcessId })),
      code('invalid_result'),
    );
    assert.throws(
      () => Result.create(options({ termination: {} as unknown as Termination })),
      code('invalid_result'),
    );
    assert.throws(() => Result.create(options({ usage: {} as unknown as Usage })), code('invalid_result'));
    assert.throws(
      () => Result.create(options({ output: '{}' as unknown as Payload })),
      code('invalid_result'),
    );
  });

  test('round-trips canonically', () => {
    const samples = [
      Result.create(options()),
      Result.create(options({ output: undefined, termination: Termination.failed(failure, [unknownEffect]) })),
      Result.create(
        options({ output: undefined, termination: Termination.interrupted('host_cancellation', 'user canceled') }),
      ),
      Result.create(options({ output: Payload.parse('null') })),
    ];
    for (const result of samples) {
      const json = result.json();
      assert.equal(Result.parse(json).json(), json);
      assert.ok(Result.parse(json).equals(result));
    }
  });

  test('decodes any member order to the canonical form, keeping nanoseconds', () => {
    const input =
      `{"usage":${usageJson},"termination":{"status":"completed","cause":"completion"},"output":{"z":1,"a":2},` +
      '"started_at":"2025-03-01T10:00:00.000000001Z","process_id":"process:0123456789abcdef0123456789abcdef",' +
      '"finished_at":"2025-03-01T10:00:00.000000002Z"}';
    const result = Result.parse(input);
    assert.equal(result.startedAt, '2025-03-01T10:00:00.000000001Z');
    assert.equal(
      result.json(),
      '{"finished_at":"2025-03-01T10:00:00.000000002Z","output":{"a":2,"z":1},' +
        '"process_id":"process:0123456789abcdef0123456789abcdef","started_at":"2025-03-01T10:00:00.000000001Z",' +
        `"termination":{"cause":"completion","status":"completed"},"usage":${usageJson}}`,
    );
  });

  test('decode rejects invalid members', () => {
    const valid = JSON.parse(Result.create(options()).json()) as Record<string, unknown>;
    const variant = (changes: Record<string, unknown>) => {
      const copy: Record<string, unknown> = { ...valid, ...changes };
      for (const [name, value] of Object.entries(changes)) if (value === undefined) delete copy[name];
      return JSON.stringify(copy);
    };
    assert.equal(Result.parse(variant({})).json(), Result.create(options()).json());
    for (const name of ['process_id', 'started_at', 'finished_at', 'termination', 'usage', 'output']) {
      rejects(variant({ [name]: undefined }));
    }
    rejects(variant({ process_id: 'not an id' }));
    rejects(variant({ process_id: 7 }));
    rejects(variant({ started_at: '2025-03-01T10:00:00.500Z' }));
    rejects(variant({ finished_at: '2025-03-01T10:00:00+00:00' }));
    rejects(variant({ finished_at: '2025-02-30T10:00:00Z' }));
    rejects(variant({ usage: { committed_steps: 1 } }));
    rejects(variant({ usage: { ...(valid.usage as object), committed_steps: -1 } }));
    rejects(variant({ termination: { cause: 'completion', status: 'failed' } }));
    rejects(variant({ output: null, termination: { cause: 'engine_kill', reason: 'k', status: 'killed' } }));
    rejects(variant({ termination: { cause: 'engine_kill', reason: 'k', status: 'killed' } }));
    rejects(variant({ duration: 5 }));
    rejects('[]');
  });

  test('nested errors carry the result code and path', () => {
    const json = Result.create(options()).json().replace('"cause":"completion"', '"cause":"completed"');
    assert.throws(
      () => Result.parse(json),
      (error: unknown) =>
        error instanceof KernelError && error.code === 'invalid_result' && error.message.includes('/termination/cause'),
    );
  });
});
