import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { maxPayloadBytes, parseJson, type JsonNode } from '../../src/kernel/canonical-json.js';
import { Digest } from '../../src/kernel/digest.js';
import { KernelError } from '../../src/kernel/errors.js';
import { isZero, Payload } from '../../src/kernel/payload.js';

const hasCode = (code: string) => (error: unknown) => error instanceof KernelError && error.code === code;

describe('Payload', () => {
  test('parse canonicalises string and byte input alike', () => {
    const fromText = Payload.parse(' { "b" : 1.50 , "a" : "<x>" } ');
    const fromBytes = Payload.parse(new TextEncoder().encode('{"a":"\\u003Cx>","b":1.50}'));
    assert.equal(fromText.json(), '{"a":"\\u003cx\\u003e","b":1.50}');
    assert.ok(fromText.equals(fromBytes));
    assert.equal(fromText.toString(), fromText.json());
  });

  test('top-level scalars are payloads; null is present, not zero', () => {
    for (const text of ['"x"', '1', 'true', 'null']) assert.equal(Payload.parse(text).json(), text);
    assert.equal(isZero(Payload.parse('null')), false);
    assert.equal(isZero(undefined), true);
    assert.equal(isZero(null), true);
  });

  test('parse rejects invalid JSON with invalid_payload', () => {
    for (const input of ['', '{"a":1,"a":2}', '[1,]', '"\\ud800"', '01', 'NaN', '\ufeff1', new Uint8Array([0x22, 0xff, 0x22])]) {
      assert.throws(() => Payload.parse(input), hasCode('invalid_payload'));
    }
  });

  test('parse enforces maxPayloadBytes', () => {
    const bytes = new Uint8Array(maxPayloadBytes + 1).fill(0x20);
    bytes[0] = 0x31;
    assert.throws(() => Payload.parse(bytes), hasCode('invalid_payload'));
  });

  test('encode writes the canonical form of a value', () => {
    const payload = Payload.encode({ topic: 'agent runtimes', tags: ['a', 'b'], at: new Date(0), skipped: undefined, n: 10n });
    assert.equal(payload.json(), '{"at":"1970-01-01T00:00:00.000Z","n":10,"tags":["a","b"],"topic":"agent runtimes"}');
    assert.deepEqual(payload.decode(), { at: '1970-01-01T00:00:00.000Z', n: 10, tags: ['a', 'b'], topic: 'agent runtimes' });
  });

  test('encode keeps a nested payload exactly, number literals included', () => {
    const inner = Payload.parse('{"price":1.50,"big":12345678901234567890}');
    assert.equal(Payload.encode({ inner, z: 1 }).json(), '{"inner":{"big":12345678901234567890,"price":1.50},"z":1}');
    assert.equal(Payload.encode(inner), inner);
  });

  test('an embedded payload is spliced as its canonical text: the same bytes as encoding its value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), fc.jsonValue({ stringUnit: 'binary' }), (first, second) => {
        const spliced = Payload.encode({ b: Payload.encode(first), a: [Payload.encode(second), { z: Payload.encode(first) }] });
        const plain = Payload.encode({ b: first, a: [second, { z: first }] });
        assert.equal(spliced.json(), plain.json());
      }),
    );
  });

  test('concatArrays joins the items of array payloads in order, as encoding the joined array would', () => {
    const joined = Payload.concatArrays([Payload.parse('[1, 2.50]'), Payload.encode([]), Payload.encode([{ b: 1, a: '<' }])]);
    assert.equal(joined.json(), '[1,2.50,{"a":"\\u003c","b":1}]');
    assert.equal(Payload.concatArrays([]).json(), '[]');
    assert.equal(Payload.concatArrays([Payload.encode([]), Payload.encode([])]).json(), '[]');
    fc.assert(
      fc.property(fc.array(fc.array(fc.jsonValue({ stringUnit: 'binary' }), { maxLength: 4 }), { maxLength: 5 }), (parts) => {
        const joinedParts = Payload.concatArrays(parts.map((part) => Payload.encode(part)));
        const whole = Payload.encode(parts.flat());
        assert.equal(joinedParts.json(), whole.json());
        assert.ok(joinedParts.digest().equals(whole.digest()));
      }),
    );
  });

  test('concatArrays refuses a part that is not an array payload, naming it', () => {
    for (const part of [Payload.encode({}), Payload.encode('[1]'), Payload.encode(null), { json: () => '[1]' }]) {
      assert.throws(
        () => Payload.concatArrays([Payload.encode([1]), part as Payload]),
        (error: unknown) => error instanceof KernelError && error.code === 'invalid_payload' && /part 1 is not an array payload/.test(error.message),
      );
    }
  });

  test('encode rejects values without a faithful JSON form', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const value of [undefined, () => 1, Symbol('s'), Number.NaN, Number.POSITIVE_INFINITY, new Map(), cycle, '\ud800']) {
      assert.throws(() => Payload.encode(value), hasCode('invalid_payload'));
    }
  });

  test('fromNode writes a node canonically and validates it', () => {
    const node: JsonNode = { kind: 'object', members: [['b', { kind: 'number', text: '1e2' }], ['a', { kind: 'null' }]] };
    assert.equal(Payload.fromNode(node).json(), '{"a":null,"b":1e2}');
    assert.throws(() => Payload.fromNode({ kind: 'number', text: '1.' }), hasCode('invalid_payload'));
  });

  test('node() and decode() read the value; decode passes numbers through JS numbers', () => {
    const payload = Payload.parse('{"a":[1.50,"x",true,null],"b":{}}');
    assert.deepEqual(payload.node(), parseJson('{"a":[1.50,"x",true,null],"b":{}}'));
    assert.equal(payload.node(), payload.node());
    assert.deepEqual(payload.decode<{ a: unknown[] }>(), { a: [1.5, 'x', true, null], b: {} });
  });

  test('digest is the SHA-256 of the canonical UTF-8 bytes', () => {
    const payload = Payload.parse('{"b":1,"a":"<x>"}');
    // Computed independently: printf '%s' '{"a":"\u003cx\u003e","b":1}' | sha256sum
    assert.equal(payload.digest().toString(), 'sha256:1b56b73f04c544c1f66edaf241eb5c79adfc56f4141ff13afa173b4c2ad008c5');
    assert.ok(payload.digest().equals(Digest.of(payload.bytes())));
    assert.equal(payload.digest(), payload.digest());
    assert.equal(Payload.emptyObject.digest().hex, '44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  });

  test('size counts canonical UTF-8 bytes', () => {
    assert.equal(Payload.parse('"é😀"').size, 1 + 2 + 4 + 1);
    assert.equal(Payload.parse(' [ 1 ] ').size, 3);
  });

  test('equality is canonical text equality', () => {
    assert.ok(Payload.parse('{"a":1,"b":2}').equals(Payload.parse('{ "b":2, "a":1 }')));
    assert.ok(!Payload.parse('{"a":1.0}').equals(Payload.parse('{"a":1}')));
    assert.ok(!Payload.parse('1').equals(undefined));
    assert.ok(!Payload.parse('1').equals(null));
  });

  test('payloads are frozen and bytes() returns a fresh copy', () => {
    const payload = Payload.parse('{"a":"é"}');
    assert.ok(Object.isFrozen(payload));
    assert.throws(() => {
      (payload as unknown as Record<string, unknown>).extra = 1;
    }, TypeError);
    const bytes = payload.bytes();
    assert.deepEqual([...bytes], [...new TextEncoder().encode('{"a":"é"}')]);
    bytes[0] = 0x5b;
    assert.equal(payload.bytes()[0], 0x7b);
    assert.notEqual(payload.bytes(), payload.bytes());
    assert.equal(payload.json(), '{"a":"é"}');
  });

  test('JSON.stringify of a record holding a payload embeds the value', () => {
    assert.equal(JSON.stringify({ input: Payload.parse('{"b":[1],"a":"x"}') }), '{"input":{"a":"x","b":[1]}}');
  });

  test('emptyObject is {}', () => {
    assert.equal(Payload.emptyObject.json(), '{}');
    assert.ok(Payload.emptyObject.equals(Payload.encode({})));
  });

  test('encode and parse agree on every JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), (value) => {
        const encoded = Payload.encode(value);
        const parsed = Payload.parse(JSON.stringify(value));
        assert.ok(encoded.equals(parsed));
        assert.ok(encoded.digest().equals(parsed.digest()));
        assert.deepEqual(parsed.decode(), JSON.parse(JSON.stringify(value)));
        assert.ok(Payload.parse(encoded.bytes()).equals(encoded));
      }),
    );
  });
});
