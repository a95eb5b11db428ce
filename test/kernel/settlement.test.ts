import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { maxJsonDepth, parseJson } from '../../src/kernel/canonical-json.js';
import { KernelError } from '../../src/kernel/errors.js';
import { maxPayloadDepth, Payload } from '../../src/kernel/payload.js';
import {
  isSettlementStatus,
  parseSettlementStatus,
  Settlement,
  settlementStatusValues,
  type SettlementStatus,
} from '../../src/kernel/settlement.js';

const code = (expected: string) => (error: unknown) => error instanceof KernelError && error.code === expected;
const rejects = (input: string) => assert.throws(() => Settlement.parse(input), code('invalid_settlement'), input);

describe('SettlementStatus', () => {
  test('accepts exactly succeeded, failed and unknown', () => {
    assert.deepEqual([...settlementStatusValues], ['succeeded', 'failed', 'unknown']);
    for (const status of settlementStatusValues) assert.equal(parseSettlementStatus(status), status);
  });

  test('rejects anything else', () => {
    for (const value of ['', 'success', 'pending', 'Unknown', 'retry', null, true]) {
      assert.equal(isSettlementStatus(value), false);
      assert.throws(() => parseSettlementStatus(value), code('invalid_settlement'));
    }
  });
});

describe('Settlement', () => {
  const payload = Payload.parse('{"status":200,"body":"ok"}');

  test('holds status and payload', () => {
    const settlement = Settlement.of('succeeded', payload);
    assert.equal(settlement.status, 'succeeded');
    assert.ok(settlement.payload.equals(payload));
    assert.equal(settlement.definite, true);
    assert.equal(Settlement.of('failed', payload).definite, true);
    assert.equal(Settlement.of('unknown', payload).definite, false);
    assert.ok(Object.isFrozen(settlement));
  });

  test('embeds the payload as canonical JSON', () => {
    assert.equal(
      Settlement.of('unknown', payload).json(),
      '{"payload":{"body":"ok","status":200},"status":"unknown"}',
    );
  });

  test('round-trips canonically for every status and payload shape', () => {
    for (const status of settlementStatusValues) {
      for (const text of ['{}', 'null', '[1,2.50,"x"]', '"text"', '{"b":{"z":1,"a":1e3},"a":[]}']) {
        const json = Settlement.of(status, Payload.parse(text)).json();
        assert.equal(Settlement.parse(json).json(), json);
        assert.ok(Settlement.parse(json).equals(Settlement.of(status, Payload.parse(text))));
      }
    }
  });

  test('decodes any member order and whitespace to the canonical form', () => {
    const parsed = Settlement.parse('{ "status" : "failed", "payload" : { "z" : 1.0, "a" : "<b>" } }');
    assert.equal(parsed.json(), '{"payload":{"a":"\\u003cb\\u003e","z":1.0},"status":"failed"}');
  });

  test('of rejects an invalid status or a non-Payload', () => {
    assert.throws(() => Settlement.of('pending' as SettlementStatus, payload), code('invalid_settlement'));
    assert.throws(() => Settlement.of('succeeded', { a: 1 } as unknown as Payload), code('invalid_settlement'));
  });

  test('decode rejects missing, invalid and unknown members', () => {
    rejects('{"payload":{}}');
    rejects('{"status":"succeeded"}');
    rejects('{"status":"done","payload":{}}');
    rejects('{"status":1,"payload":{}}');
    rejects('{"status":"succeeded","payload":{},"effect_id":"effect:x"}');
    rejects('{"status":"succeeded","payload":{},"ok":true}');
    rejects('{"status":"succeeded","payload":{"a":1,"a":2}}');
    rejects('{"status":"succeeded","payload":"\\udc00"}');
    rejects('[]');
    rejects('not json');
  });

  test('equals compares status and payload', () => {
    const a = Settlement.of('succeeded', Payload.parse('{"x":1}'));
    assert.ok(a.equals(Settlement.parse('{"status":"succeeded","payload":{"x":1}}')));
    assert.equal(a.equals(Settlement.of('failed', Payload.parse('{"x":1}'))), false);
    assert.equal(a.equals(Settlement.of('succeeded', Payload.parse('{"x":2}'))), false);
    assert.equal(a.equals(undefined), false);
  });

  test('fromWire uses the parent code and path', () => {
    assert.throws(
      () => Settlement.fromWire(parseJson('{"status":"maybe","payload":{}}'), '/effects/0/settlement', 'invalid_snapshot'),
      (error: unknown) =>
        error instanceof KernelError &&
        error.code === 'invalid_snapshot' &&
        error.message.includes('/effects/0/settlement/status'),
    );
  });

  /** What the full decode answers for `text`: the settlement, or the error code. */
  function strictly(text: string): Settlement | string {
    try {
      return Settlement.fromWire(parseJson(text, { code: 'invalid_settlement' }));
    } catch (error) {
      return error instanceof KernelError ? error.code : String(error);
    }
  }

  function parsed(text: string): Settlement | string {
    try {
      return Settlement.parse(text);
    } catch (error) {
      return error instanceof KernelError ? error.code : String(error);
    }
  }

  function sameAnswer(text: string): void {
    const fast = parsed(text);
    const full = strictly(text);
    if (typeof fast === 'string' || typeof full === 'string') assert.equal(fast, full, text);
    else assert.ok(fast.equals(full), text);
  }

  test('parse answers exactly as the full decode does, for canonical texts (read by their payload alone) and any other', () => {
    const status = fc.constantFrom(...settlementStatusValues);
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), status, (value, chosen) => {
        const settlement = Settlement.of(chosen, Payload.encode(value));
        const text = settlement.json();
        assert.ok(Settlement.parse(text).equals(settlement));
        sameAnswer(text);
        // Near misses: whitespace, the other member order, a second status, a payload cut short or run on.
        const payload = settlement.payload.json();
        for (const variant of [
          text.replace('{"payload":', '{ "payload":'),
          `{"status":"${chosen}","payload":${payload}}`,
          `{"payload":${payload},"status":"failed","status":"${chosen}"}`,
          `{"payload":${payload.slice(0, -1)},"status":"${chosen}"}`,
          `{"payload":${payload},1,"status":"${chosen}"}`,
          `{"payload":${payload},"status":"${chosen}"} `,
        ]) {
          sameAnswer(variant);
        }
      }),
    );
    // A payload the full decode accepts one level deeper than a new payload may be: the same answer.
    const deep = `${'['.repeat(maxJsonDepth - 1)}${']'.repeat(maxJsonDepth - 1)}`;
    assert.ok(maxJsonDepth - 1 > maxPayloadDepth);
    sameAnswer(`{"payload":${deep},"status":"succeeded"}`);
    sameAnswer(`{"payload":[${deep}],"status":"succeeded"}`);
  });
});
