import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KernelError } from '../../src/kernel/errors.js';
import { Failure, failureKindValues } from '../../src/kernel/failure.js';
import { EffectId, ProcessId } from '../../src/kernel/identity.js';
import {
  causeOfFailureKind,
  failureKindOfCause,
  interruptionCauseValues,
  isTerminationCause,
  parseTerminationCause,
  statusOfCause,
  Termination,
  terminationCauseValues,
  type InterruptionCause,
  type TerminationCause,
} from '../../src/kernel/termination.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const rejectsTermination = (input: string) =>
  assert.throws(() => Termination.parse(input), code('invalid_termination'), input);

const process = ProcessId.parse('process:00000000000000000000000000000001');
const [e1, e2, e3] = [0, 1, 2].map((index) => EffectId.derive(process, 1n, index)) as [EffectId, EffectId, EffectId];
const sortedIds = [e1, e2, e3].map(String).sort();
const failure = Failure.create('external', 'engine.dispatch.failed', 'dispatcher unavailable');

describe('TerminationCause', () => {
  test('accepts exactly the ten causes', () => {
    assert.deepEqual(
      [...terminationCauseValues],
      [
        'completion',
        'engine_kill',
        'parent_deadline',
        'host_deadline',
        'parent_cancellation',
        'host_cancellation',
        'execution_failure',
        'contract_failure',
        'external_failure',
        'panic',
      ],
    );
    for (const cause of terminationCauseValues) assert.equal(parseTerminationCause(cause), cause);
  });

  test('rejects anything else', () => {
    for (const value of ['', 'kill', 'deadline', 'cancellation', 'failure', 'Completion', null, 0]) {
      assert.equal(isTerminationCause(value), false);
      assert.throws(() => parseTerminationCause(value), code('invalid_termination'));
    }
  });

  test('status is derived from the cause', () => {
    const expected: Record<TerminationCause, string> = {
      completion: 'completed',
      engine_kill: 'killed',
      parent_deadline: 'timed_out',
      host_deadline: 'timed_out',
      parent_cancellation: 'canceled',
      host_cancellation: 'canceled',
      execution_failure: 'failed',
      contract_failure: 'failed',
      external_failure: 'failed',
      panic: 'failed',
    };
    for (const cause of terminationCauseValues) assert.equal(statusOfCause(cause), expected[cause], cause);
    assert.throws(() => statusOfCause('bogus' as TerminationCause), code('invalid_termination'));
  });

  test('failure kinds map to failed causes and back', () => {
    assert.equal(causeOfFailureKind('execution'), 'execution_failure');
    assert.equal(causeOfFailureKind('contract'), 'contract_failure');
    assert.equal(causeOfFailureKind('external'), 'external_failure');
    assert.equal(causeOfFailureKind('panic'), 'panic');
    for (const kind of failureKindValues) assert.equal(failureKindOfCause(causeOfFailureKind(kind)), kind);
    for (const cause of ['completion', ...interruptionCauseValues] as const) {
      assert.equal(failureKindOfCause(cause), undefined);
    }
  });
});

describe('Termination factories', () => {
  test('completed has no reason, failure or unresolved ids', () => {
    const completed = Termination.completed();
    assert.equal(completed.status, 'completed');
    assert.equal(completed.cause, 'completion');
    assert.equal(completed.reason, '');
    assert.equal(completed.failure, undefined);
    assert.deepEqual(completed.unresolvedEffectIds, []);
    assert.equal(completed.json(), '{"cause":"completion","status":"completed"}');
  });

  test('failed derives cause from the kind and reason from the message', () => {
    for (const kind of failureKindValues) {
      const termination = Termination.failed(Failure.create(kind, 'a.b', 'went wrong'));
      assert.equal(termination.status, 'failed');
      assert.equal(termination.cause, causeOfFailureKind(kind));
      assert.equal(termination.reason, 'went wrong');
      assert.equal(termination.failure?.kind, kind);
    }
  });

  test('interrupted keeps its cause, reason and status', () => {
    const expected: Record<InterruptionCause, string> = {
      engine_kill: 'killed',
      parent_deadline: 'timed_out',
      host_deadline: 'timed_out',
      parent_cancellation: 'canceled',
      host_cancellation: 'canceled',
    };
    for (const cause of interruptionCauseValues) {
      const termination = Termination.interrupted(cause, 'operator request');
      assert.equal(termination.cause, cause);
      assert.equal(termination.status, expected[cause]);
      assert.equal(termination.reason, 'operator request');
      assert.equal(termination.failure, undefined);
    }
  });

  test('interrupted rejects completion and failed causes', () => {
    for (const cause of ['completion', 'execution_failure', 'contract_failure', 'external_failure', 'panic', 'x']) {
      assert.throws(
        () => Termination.interrupted(cause as InterruptionCause, 'reason'),
        code('invalid_termination'),
        cause,
      );
    }
  });

  test('interrupted requires a valid reason', () => {
    for (const reason of ['', ' reason', 'reason\n', 'r'.repeat(4097), 'bad\uD800']) {
      assert.throws(() => Termination.interrupted('engine_kill', reason), code('invalid_termination'));
    }
    assert.equal(Termination.interrupted('engine_kill', 'r'.repeat(4096)).reason.length, 4096);
  });

  test('failed requires a Failure', () => {
    assert.throws(() => Termination.failed(undefined as unknown as Failure), code('invalid_termination'));
  });

  test('unresolved ids are put in canonical order', () => {
    const termination = Termination.interrupted('host_cancellation', 'stop', [e3, e1, e2]);
    assert.deepEqual(termination.unresolvedEffectIds.map(String), sortedIds);
    const failed = Termination.failed(failure, [e2, e1]);
    assert.deepEqual(failed.unresolvedEffectIds.map(String), [e1, e2].map(String).sort());
  });

  test('duplicate unresolved ids are rejected', () => {
    assert.throws(() => Termination.interrupted('engine_kill', 'kill', [e1, e2, e1]), code('invalid_termination'));
    assert.throws(() => Termination.failed(failure, [e1, e1]), code('invalid_termination'));
  });

  test('unresolved ids must be EffectIds', () => {
    assert.throws(
      () => Termination.interrupted('engine_kill', 'kill', ['effect:x'] as unknown as EffectId[]),
      code('invalid_termination'),
    );
  });

  test('accessors return copies', () => {
    const termination = Termination.interrupted('engine_kill', 'kill', [e1]);
    termination.unresolvedEffectIds.pop();
    assert.equal(termination.unresolvedEffectIds.length, 1);
    assert.ok(Object.isFrozen(termination));
  });
});

describe('Termination wire', () => {
  const samples = [
    Termination.completed(),
    Termination.failed(failure),
    Termination.failed(failure, [e1, e3]),
    Termination.interrupted('engine_kill', 'operator kill'),
    Termination.interrupted('parent_deadline', 'deadline passed', [e2]),
    Termination.interrupted('host_cancellation', 'user canceled', [e1, e2, e3]),
  ];

  test('round-trips canonically', () => {
    for (const termination of samples) {
      const json = termination.json();
      assert.equal(Termination.parse(json).json(), json);
      assert.ok(Termination.parse(json).equals(termination));
    }
  });

  test('encodes the exact members', () => {
    assert.equal(
      Termination.failed(failure, [e1]).json(),
      `{"cause":"external_failure","failure":${failure.json()},"reason":"dispatcher unavailable",` +
        `"status":"failed","unresolved_effect_ids":["${e1}"]}`,
    );
    assert.equal(
      Termination.interrupted('host_deadline', 'late').json(),
      '{"cause":"host_deadline","reason":"late","status":"timed_out"}',
    );
  });

  test('decodes members in any order to the canonical form', () => {
    const parsed = Termination.parse(
      `{"unresolved_effect_ids":["${sortedIds[0]}"],"status":"canceled","reason":"stop","cause":"parent_cancellation"}`,
    );
    assert.equal(
      parsed.json(),
      `{"cause":"parent_cancellation","reason":"stop","status":"canceled","unresolved_effect_ids":["${sortedIds[0]}"]}`,
    );
  });

  test('an empty unresolved list is accepted and omitted on encode', () => {
    assert.equal(
      Termination.parse('{"cause":"engine_kill","reason":"k","status":"killed","unresolved_effect_ids":[]}').json(),
      '{"cause":"engine_kill","reason":"k","status":"killed"}',
    );
    assert.equal(
      Termination.parse('{"cause":"completion","status":"completed","unresolved_effect_ids":[]}').json(),
      '{"cause":"completion","status":"completed"}',
    );
  });

  test('status must match the cause', () => {
    rejectsTermination('{"cause":"completion","status":"failed"}');
    rejectsTermination('{"cause":"engine_kill","reason":"k","status":"canceled"}');
    rejectsTermination('{"cause":"host_deadline","reason":"k","status":"killed"}');
    rejectsTermination('{"cause":"parent_cancellation","reason":"k","status":"timed_out"}');
    rejectsTermination(`{"cause":"panic","failure":${failure.json()},"reason":"k","status":"completed"}`);
    rejectsTermination('{"cause":"engine_kill","reason":"k","status":"running"}');
    rejectsTermination('{"cause":"engine_kill","reason":"k","status":"bogus"}');
  });

  test('cause and status are required and known', () => {
    rejectsTermination('{"status":"completed"}');
    rejectsTermination('{"cause":"completion"}');
    rejectsTermination('{"cause":"finished","status":"completed"}');
    rejectsTermination('{"cause":1,"status":"completed"}');
  });

  test('reason is absent exactly for completion', () => {
    rejectsTermination('{"cause":"completion","reason":"done","status":"completed"}');
    rejectsTermination('{"cause":"completion","reason":"","status":"completed"}');
    rejectsTermination('{"cause":"engine_kill","status":"killed"}');
    rejectsTermination('{"cause":"host_cancellation","status":"canceled"}');
  });

  test('reason must be non-empty, trimmed, well-formed and bounded', () => {
    rejectsTermination('{"cause":"engine_kill","reason":"","status":"killed"}');
    rejectsTermination('{"cause":"engine_kill","reason":" k","status":"killed"}');
    rejectsTermination('{"cause":"engine_kill","reason":"k\\n","status":"killed"}');
    rejectsTermination('{"cause":"engine_kill","reason":"\\ud800","status":"killed"}');
    rejectsTermination(`{"cause":"engine_kill","reason":"${'k'.repeat(4097)}","status":"killed"}`);
    rejectsTermination('{"cause":"engine_kill","reason":7,"status":"killed"}');
    assert.equal(
      Termination.parse(`{"cause":"engine_kill","reason":"${'k'.repeat(4096)}","status":"killed"}`).reason.length,
      4096,
    );
  });

  test('a failed termination carries its Failure, with matching kind and reason', () => {
    rejectsTermination('{"cause":"external_failure","reason":"dispatcher unavailable","status":"failed"}');
    const contractFailure = Failure.create('contract', 'engine.dispatch.failed', 'dispatcher unavailable');
    rejectsTermination(
      `{"cause":"external_failure","failure":${contractFailure.json()},"reason":"dispatcher unavailable","status":"failed"}`,
    );
    rejectsTermination(`{"cause":"external_failure","failure":${failure.json()},"reason":"other","status":"failed"}`);
    rejectsTermination(`{"cause":"external_failure","failure":${failure.json()},"status":"failed"}`);
    rejectsTermination(
      '{"cause":"external_failure","failure":{"kind":"external","code":"a.b"},"reason":"r","status":"failed"}',
    );
    rejectsTermination(
      '{"cause":"external_failure","failure":null,"reason":"dispatcher unavailable","status":"failed"}',
    );
  });

  test('a non-failed termination carries no Failure', () => {
    rejectsTermination(`{"cause":"completion","failure":${failure.json()},"status":"completed"}`);
    rejectsTermination(
      `{"cause":"engine_kill","failure":${failure.json()},"reason":"dispatcher unavailable","status":"killed"}`,
    );
  });

  test('completion has no unresolved ids', () => {
    rejectsTermination(`{"cause":"completion","status":"completed","unresolved_effect_ids":["${sortedIds[0]}"]}`);
  });

  test('unresolved ids must be sorted, distinct effect ids', () => {
    const [a, b] = sortedIds as [string, string];
    rejectsTermination(`{"cause":"engine_kill","reason":"k","status":"killed","unresolved_effect_ids":["${b}","${a}"]}`);
    rejectsTermination(`{"cause":"engine_kill","reason":"k","status":"killed","unresolved_effect_ids":["${a}","${a}"]}`);
    rejectsTermination('{"cause":"engine_kill","reason":"k","status":"killed","unresolved_effect_ids":["bad id"]}');
    rejectsTermination('{"cause":"engine_kill","reason":"k","status":"killed","unresolved_effect_ids":[1]}');
    rejectsTermination('{"cause":"engine_kill","reason":"k","status":"killed","unresolved_effect_ids":"x"}');
    rejectsTermination('{"cause":"engine_kill","reason":"k","status":"killed","unresolved_effect_ids":null}');
  });

  test('unknown members are rejected', () => {
    rejectsTermination('{"cause":"completion","status":"completed","output":{}}');
    rejectsTermination('{"cause":"engine_kill","reason":"k","status":"killed","failure_code":"x"}');
  });

  test('errors name the JSON path and use the parent code', () => {
    assert.throws(
      () => Termination.parse(`{"cause":"engine_kill","reason":"k","status":"killed","unresolved_effect_ids":["x y"]}`),
      (error: unknown) => error instanceof KernelError && error.message.includes('/unresolved_effect_ids/0'),
    );
    assert.throws(
      () =>
        Termination.parse(
          '{"cause":"panic","failure":{"kind":"panic","code":"a.b","message":" m"},"reason":"m","status":"failed"}',
        ),
      (error: unknown) =>
        error instanceof KernelError &&
        error.code === 'invalid_termination' &&
        error.message.includes('/failure/message'),
    );
  });
});
