import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodedWireLength, encodeWire, RawJson, type WireValue } from '../../src/kernel/wire.js';

test('encodedWireLength equals the UTF-8 length of encodeWire, spliced records included', () => {
  const values: WireValue[] = [
    '',
    'plain',
    'quote " backslash \\ newline \n control \u0001',
    'é ☃ 𝄞 (two, three and four UTF-8 bytes)',
    'escaped for HTML safety: <a href="x">&amp;</a>',
    'sha256:0123456789abcdef ~!#$%()*+,-./:;=?@[]^_`{|}',
    'DEL \u007f and the line separators \u2028 \u2029',
    0,
    -12,
    18446744073709551615n,
    true,
    false,
    null,
    [],
    [1, 'two', [3, null], {}],
    { b: 1, a: 'x', skipped: undefined, 'ü-key': { nested: ['☃', 2n] } },
    new RawJson('{"spliced":"☃","n":[1,2]}'),
    { record: new RawJson('[1,"é"]'), list: [new RawJson('"x"'), new RawJson('{}')] },
  ];
  for (const value of values) {
    assert.equal(encodedWireLength(value), Buffer.byteLength(encodeWire(value)), encodeWire(value));
  }
});

test('encodedWireLength refuses a lone surrogate as encodeWire does', () => {
  assert.throws(() => encodeWire('a\ud800b'), /lone surrogate/);
  assert.throws(() => encodedWireLength('a\ud800b'), /lone surrogate/);
});

test('a RawJson measures its text once and reports its UTF-8 length', () => {
  const raw = new RawJson('"𝄞"');
  assert.equal(raw.byteLength, 6);
  assert.equal(raw.byteLength, Buffer.byteLength(raw.text));
});
