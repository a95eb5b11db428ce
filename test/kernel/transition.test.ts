import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Effect } from '../../src/kernel/effect.js';
import { KernelError } from '../../src/kernel/errors.js';
import { Failure } from '../../src/kernel/failure.js';
import { EffectId, ProcessId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import {
  isTransitionKind,
  parseTransitionKind,
  Transition,
  transitionKindValues,
} from '../../src/kernel/transition.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const rejects = (input: string) => assert.throws(() => Transition.parse(input), code('invalid_transition'), input);

const process = ProcessId.parse('process:0123456789abcdef0123456789abcdef');
const waitId = WaitId.derive(EffectId.derive(process, 1n, 0));
const fetchEffect = Effect.dispatcher(Payload.parse('{"url":"https://example.test","method":"GET"}'));
const waitEffect = Effect.wait(WaitKey.parse('approval'));
const failure = Failure.create('execution', 'workflow.task.not_completed', 'task did not complete');
const output = Payload.parse('{"answer":42}');

describe('TransitionKind', () => {
  test('accepts exactly the six kinds', () => {
    assert.deepEqual([...transitionKindValues], ['continue', 'checkpoint', 'wait', 'pause', 'complete', 'fail']);
    for (const kind of transitionKindValues) assert.equal(parseTransitionKind(kind), kind);
  });

  test('rejects anything else', () => {
    for (const value of ['', 'Continue', 'resume', 'cancel', 'kill', null, 1]) {
      assert.equal(isTransitionKind(value), false);
      assert.throws(() => parseTransitionKind(value), code('invalid_transition'));
    }
  });
});

describe('Transition factories', () => {
  test('continue carries effects in declaration order', () => {
    const transition = Transition.continue(2, [waitEffect, fetchEffect]);
    assert.equal(transition.kind, 'continue');
    assert.equal(transition.consumedSignals, 2);
    assert.deepEqual(
      transition.effects.map((effect) => effect.json()),
      [waitEffect.json(), fetchEffect.json()],
    );
    assert.equal(transition.waitId, undefined);
    assert.equal(transition.reason, undefined);
    assert.equal(transition.output, undefined);
    assert.equal(transition.failure, undefined);
    assert.deepEqual(Transition.continue(0).effects, []);
  });

  test('effects are copied in and out', () => {
    const effects = [fetchEffect];
    const transition = Transition.continue(0, effects);
    effects.push(waitEffect);
    transition.effects.push(waitEffect);
    assert.equal(transition.effects.length, 1);
    assert.ok(Object.isFrozen(transition));
  });

  test('each kind carries exactly its own field', () => {
    const checkpoint = Transition.checkpoint(1);
    assert.equal(checkpoint.kind, 'checkpoint');
    assert.deepEqual(checkpoint.effects, []);
    assert.equal(checkpoint.json(), '{"consumed_signals":1,"kind":"checkpoint"}');

    const wait = Transition.wait(1, waitId);
    assert.ok(wait.waitId?.equals(waitId));
    assert.equal(wait.json(), `{"consumed_signals":1,"kind":"wait","wait_id":"${waitId}"}`);

    const pause = Transition.pause(0, 'awaiting operator');
    assert.equal(pause.reason, 'awaiting operator');
    assert.equal(pause.json(), '{"consumed_signals":0,"kind":"pause","reason":"awaiting operator"}');

    const complete = Transition.complete(3, output);
    assert.ok(complete.output?.equals(output));
    assert.equal(complete.json(), '{"consumed_signals":3,"kind":"complete","output":{"answer":42}}');

    const fail = Transition.fail(0, failure);
    assert.ok(fail.failure?.equals(failure));
    assert.equal(fail.json(), `{"consumed_signals":0,"failure":${failure.json()},"kind":"fail"}`);
  });

  test('consumed must be a uint32', () => {
    for (const consumed of [-1, 1.5, 2 ** 32, Number.NaN, Number.POSITIVE_INFINITY, '1' as unknown as number]) {
      assert.throws(() => Transition.checkpoint(consumed), code('invalid_transition'), String(consumed));
      assert.throws(() => Transition.continue(consumed), code('invalid_transition'), String(consumed));
    }
    assert.equal(Transition.checkpoint(2 ** 32 - 1).consumedSignals, 4_294_967_295);
  });

  test('pause reason must be non-empty, trimmed, well-formed and at most 4096 bytes', () => {
    for (const reason of ['', ' paused', 'paused\t', 'p\uD800', 'p'.repeat(4097), `${'p'.repeat(4095)}é`]) {
      assert.throws(() => Transition.pause(0, reason), code('invalid_transition'));
    }
    assert.equal(Transition.pause(0, 'é'.repeat(2048)).reason, 'é'.repeat(2048));
  });

  test('factories reject values of the wrong type', () => {
    assert.throws(() => Transition.continue(0, ['x'] as unknown as Effect[]), code('invalid_transition'));
    assert.throws(() => Transition.wait(0, 'wait:x' as unknown as WaitId), code('invalid_transition'));
    assert.throws(() => Transition.complete(0, { a: 1 } as unknown as Payload), code('invalid_transition'));
    assert.throws(() => Transition.fail(0, { kind: 'execution' } as unknown as Failure), code('invalid_transition'));
  });

  test('withoutEffects strips effects and keeps the rest', () => {
    const transition = Transition.continue(4, [fetchEffect, waitEffect]);
    const stripped = transition.withoutEffects();
    assert.equal(stripped.kind, 'continue');
    assert.equal(stripped.consumedSignals, 4);
    assert.deepEqual(stripped.effects, []);
    assert.equal(stripped.json(), '{"consumed_signals":4,"kind":"continue"}');
    assert.equal(transition.effects.length, 2);
    for (const other of [Transition.checkpoint(1), Transition.wait(1, waitId), Transition.fail(0, failure)]) {
      assert.equal(other.withoutEffects().json(), other.json());
    }
  });
});

describe('Transition wire', () => {
  const samples = [
    Transition.continue(0),
    Transition.continue(5, [fetchEffect, waitEffect]),
    Transition.checkpoint(0),
    Transition.wait(2, waitId),
    Transition.pause(1, 'operator pause'),
    Transition.complete(0, Payload.parse('[1.50,{"b":1,"a":2}]')),
    Transition.fail(7, failure),
  ];

  test('round-trips canonically', () => {
    for (const transition of samples) {
      const json = transition.json();
      assert.equal(Transition.parse(json).json(), json);
      assert.ok(Transition.parse(json).equals(transition));
    }
  });

  test('continue encodes its effects', () => {
    assert.equal(
      Transition.continue(1, [fetchEffect]).json(),
      `{"consumed_signals":1,"effects":[${fetchEffect.json()}],"kind":"continue"}`,
    );
  });

  test('decodes any member order to the canonical form', () => {
    const parsed = Transition.parse(
      `{"effects":[{"payload":{"method":"GET","url":"https://example.test"},"target":"dispatcher"}],"kind":"continue","consumed_signals":1}`,
    );
    assert.equal(parsed.json(), Transition.continue(1, [fetchEffect]).json());
    assert.equal(
      Transition.parse('{"output":{"z":1,"a":0},"kind":"complete","consumed_signals":0}').json(),
      '{"consumed_signals":0,"kind":"complete","output":{"a":0,"z":1}}',
    );
  });

  test('an empty effects list on continue is accepted and omitted on encode', () => {
    assert.equal(
      Transition.parse('{"consumed_signals":0,"effects":[],"kind":"continue"}').json(),
      '{"consumed_signals":0,"kind":"continue"}',
    );
  });

  test('a field of another kind is rejected', () => {
    const fields: Record<string, string> = {
      effects: `[${fetchEffect.json()}]`,
      wait_id: `"${waitId}"`,
      reason: '"why"',
      output: '{}',
      failure: failure.json(),
    };
    const own: Record<string, string | undefined> = {
      continue: 'effects',
      checkpoint: undefined,
      wait: 'wait_id',
      pause: 'reason',
      complete: 'output',
      fail: 'failure',
    };
    for (const kind of transitionKindValues) {
      const base = own[kind] === undefined ? '' : `,"${own[kind]}":${fields[own[kind] as string]}`;
      assert.ok(Transition.parse(`{"consumed_signals":0,"kind":"${kind}"${base}}`), kind);
      for (const [member, value] of Object.entries(fields)) {
        if (member === own[kind]) continue;
        rejects(`{"consumed_signals":0,"kind":"${kind}"${base},"${member}":${value}}`);
      }
    }
    rejects('{"consumed_signals":0,"effects":[],"kind":"checkpoint"}');
  });

  test('a kind without its own field is rejected', () => {
    rejects('{"consumed_signals":0,"kind":"wait"}');
    rejects('{"consumed_signals":0,"kind":"pause"}');
    rejects('{"consumed_signals":0,"kind":"complete"}');
    rejects('{"consumed_signals":0,"kind":"fail"}');
  });

  test('kind and consumed_signals are required and valid', () => {
    rejects('{"consumed_signals":0}');
    rejects('{"kind":"checkpoint"}');
    rejects('{"consumed_signals":0,"kind":"resume"}');
    rejects('{"consumed_signals":-1,"kind":"checkpoint"}');
    rejects('{"consumed_signals":1.0,"kind":"checkpoint"}');
    rejects('{"consumed_signals":4294967296,"kind":"checkpoint"}');
    rejects('{"consumed_signals":"1","kind":"checkpoint"}');
    assert.equal(Transition.parse('{"consumed_signals":4294967295,"kind":"checkpoint"}').consumedSignals, 4294967295);
  });

  test('kind-specific values are validated', () => {
    rejects('{"consumed_signals":0,"kind":"wait","wait_id":"not a wait id"}');
    rejects('{"consumed_signals":0,"kind":"wait","wait_id":5}');
    rejects('{"consumed_signals":0,"kind":"pause","reason":""}');
    rejects('{"consumed_signals":0,"kind":"pause","reason":" why"}');
    rejects(`{"consumed_signals":0,"kind":"pause","reason":"${'r'.repeat(4097)}"}`);
    rejects('{"consumed_signals":0,"kind":"pause","reason":"\\udc00"}');
    rejects('{"consumed_signals":0,"kind":"fail","failure":{"kind":"execution","code":"a.b"}}');
    rejects('{"consumed_signals":0,"kind":"fail","failure":null}');
    rejects('{"consumed_signals":0,"kind":"continue","effects":{}}');
    rejects('{"consumed_signals":0,"kind":"continue","effects":[{"target":"nowhere","payload":{}}]}');
    rejects('{"consumed_signals":0,"kind":"complete","output":"\\ud800"}');
  });

  test('unknown members are rejected', () => {
    rejects('{"consumed_signals":0,"kind":"checkpoint","state":{}}');
    rejects('{"consumed_signals":0,"kind":"complete","output":{},"status":"completed"}');
  });

  test('errors name the JSON path', () => {
    assert.throws(
      () => Transition.parse('{"consumed_signals":0,"kind":"continue","effects":[{"target":"nowhere","payload":{}}]}'),
      (error: unknown) =>
        error instanceof KernelError &&
        error.code === 'invalid_transition' &&
        error.message.includes('/effects/0/target'),
    );
  });
});
