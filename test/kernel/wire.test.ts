import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { encodedWireLength, encodeWire, RawJson, wirePieces, type WireValue } from '../../src/kernel/wire.js';

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

// encodeWire skips its sort when a record's members already come in canonical order: whatever order
// they are written in (integer-like names, which objects enumerate first, and names past the BMP
// included), the text is the members sorted by UTF-16 code units, and wirePieces agrees.
test('records encode in canonical member order whatever order their members were written in', () => {
  const name = fc.oneof(
    fc.string({ maxLength: 6 }),
    fc.constantFrom('0', '1', '9', '10', '01', 'a', 'B', '_', 'ü', '\u{1d11e}', '\uffff', 'process_id', 'process_sequence'),
  );
  fc.assert(
    fc.property(fc.uniqueArray(fc.tuple(name, fc.integer()), { selector: ([key]) => key, maxLength: 12 }), (members) => {
      const record: Record<string, WireValue> = {};
      for (const [key, value] of members) record[key] = value;
      const sorted = [...members].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      const expected = `{${sorted.map(([key, value]) => `${encodeWire(key)}:${value}`).join(',')}}`;
      assert.equal(encodeWire(record), expected);
      assert.equal(wirePieces(record).join(''), expected);
    }),
    { numRuns: 5_000 },
  );
});
