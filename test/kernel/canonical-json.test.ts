import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  canonicalize,
  encodeCanonical,
  maxJsonDepth,
  maxPayloadBytes,
  nodeFromValue,
  parseJson,
  quoteString,
  toJsonNode,
  utf8Length,
  valueFromNode,
  writeCanonical,
  type JsonNode,
  type ParseJsonOptions,
} from '../../src/kernel/canonical-json.js';
import { KernelError } from '../../src/kernel/errors.js';

const encoder = new TextEncoder();
const hasCode = (code: string) => (error: unknown) => error instanceof KernelError && error.code === code;

/** Canonical text through every route: string and byte input, fast path and AST path. */
function everyRoute(input: string, options?: ParseJsonOptions): string {
  const fromText = canonicalize(input, options);
  assert.equal(canonicalize(encoder.encode(input), options), fromText, 'byte input');
  assert.equal(writeCanonical(parseJson(input, options)), fromText, 'parseJson + writeCanonical');
  assert.equal(writeCanonical(parseJson(encoder.encode(input), options)), fromText, 'parseJson(bytes)');
  return fromText;
}

/** The error every route throws; all must throw a KernelError with `code` and the same message. */
function rejection(input: string | Uint8Array, options?: ParseJsonOptions, code = 'invalid_payload'): KernelError {
  const errors = [() => canonicalize(input, options), () => parseJson(input, options)].map((run) => {
    try {
      run();
    } catch (error) {
      return error;
    }
    assert.fail(`accepted ${typeof input === 'string' ? JSON.stringify(input.slice(0, 60)) : 'bytes'}`);
  });
  for (const error of errors) assert.ok(hasCode(code)(error), `expected ${code}, got ${String(error)}`);
  const [fast, tree] = errors as [KernelError, KernelError];
  assert.equal(fast.message, tree.message);
  return fast;
}

describe('canonical form: golden vectors', () => {
  const vectors: Array<[string, string, string]> = [
    ['members sorted', '{"b":1,"a":2}', '{"a":2,"b":1}'],
    ['nested members sorted, arrays keep order', '{"b":{"d":[{"y":1,"x":2},3,1],"c":0},"a":[]}', '{"a":[],"b":{"c":0,"d":[{"x":2,"y":1},3,1]}}'],
    [
      'numbers verbatim',
      '[1.0,1e2,-0,1E+400,1.50,0.000001,-1.5e-7,0,-1,12345678901234567890123,1E-2,0e0]',
      '[1.0,1e2,-0,1E+400,1.50,0.000001,-1.5e-7,0,-1,12345678901234567890123,1E-2,0e0]',
    ],
    [
      'names sorted by UTF-16 code units, not code points',
      '{"｡":3,"😀":2,"\ue000":4,"é":1,"z":0,"Z":-1,"":5}',
      '{"":5,"Z":-1,"z":0,"é":1,"😀":2,"\ue000":4,"｡":3}',
    ],
    ['a prefix sorts first', '{"ab":1,"a":2,"abc":3,"aa":4}', '{"a":2,"aa":4,"ab":1,"abc":3}'],
    ['names compare after unescaping', '{"\\u0062":1,"a":2}', '{"a":2,"b":1}'],
    ['escaped and raw names order by value', '{"\\u00e9":1,"z":2,"a<":3,"a":4}', '{"a":4,"a\\u003c":3,"z":2,"é":1}'],
    ['whitespace removed', ' \t\n\r{ "a" : [ 1 , 2 ] ,\n "b" : { } , "c" : [ ] } \n', '{"a":[1,2],"b":{},"c":[]}'],
    ['string scalar', '"x"', '"x"'],
    ['number scalar', '1', '1'],
    ['true', 'true', 'true'],
    ['false', 'false', 'false'],
    ['null', 'null', 'null'],
    ['scalar with whitespace', '  -0.5e-3  ', '-0.5e-3'],
    ['short escapes kept', '"\\" \\\\ \\b \\f \\n \\r \\t"', '"\\" \\\\ \\b \\f \\n \\r \\t"'],
    ['unicode escapes of short-escape characters shortened', '"\\u0008\\u000C\\u000a\\u000D\\u0009\\u0022\\u005C"', '"\\b\\f\\n\\r\\t\\"\\\\"'],
    ['other C0 controls as lowercase \\u00xx', '"\\u001F\\u0000\\u0001\\u000b"', '"\\u001f\\u0000\\u0001\\u000b"'],
    ['<>& escaped', '"<a href=x>&amp;</a>"', '"\\u003ca href=x\\u003e\\u0026amp;\\u003c/a\\u003e"'],
    ['<>& escapes lowercased', '"\\u003C\\u003E\\u0026"', '"\\u003c\\u003e\\u0026"'],
    ['U+2028 and U+2029 escaped', '"a\u2028b\u2029c"', '"a\\u2028b\\u2029c"'],
    ['U+2028 escape kept', '"\\u2028\\u2029"', '"\\u2028\\u2029"'],
    ['slash not escaped', '"a/b"', '"a/b"'],
    ['escaped slash unescaped', '"\\/"', '"/"'],
    ['DEL not escaped', '"\u007f"', '"\u007f"'],
    ['escaped DEL emitted raw', '"\\u007F"', '"\u007f"'],
    ['non-ASCII raw', '"é漢😀"', '"é漢😀"'],
    ['escaped non-ASCII emitted raw', '"\\u00e9\\u6F22"', '"é漢"'],
    ['escaped letter', '"\\u0041"', '"A"'],
    ['surrogate pair escape emitted raw', '"\\ud83d\\ude00"', '"😀"'],
    ['uppercase surrogate pair escape', '"\\uD83D\\uDE00x"', '"😀x"'],
    ['names are escaped like values', '{"<\u2028":"&"}', '{"\\u003c\\u2028":"\\u0026"}'],
    ['empty containers with whitespace', '[ [ ] , { } ]', '[[],{}]'],
    ['canonical text is unchanged', '{"a":[1.0,{"x":"\\n","y":null}],"b":"\\u003c"}', '{"a":[1.0,{"x":"\\n","y":null}],"b":"\\u003c"}'],
  ];
  for (const [name, input, expected] of vectors) {
    test(name, () => assert.equal(everyRoute(input), expected));
  }

  test('objects of one shape reuse an order without mixing up their values', () => {
    const records = Array.from({ length: 50 }, (_, k) => `{"z":${k},"b":"${k}","m":[${k}],"a":{"y":${k},"x":-${k}}}`);
    const expected = Array.from({ length: 50 }, (_, k) => `{"a":{"x":-${k},"y":${k}},"b":"${k}","m":[${k}],"z":${k}}`);
    assert.equal(everyRoute(`[${records.join(',')}]`), `[${expected.join(',')}]`);
  });

  test(`nesting of exactly ${maxJsonDepth} levels is accepted`, () => {
    const text = `${'['.repeat(maxJsonDepth)}${']'.repeat(maxJsonDepth)}`;
    assert.equal(everyRoute(text), text);
    const spaced = `${'[ '.repeat(maxJsonDepth)}${' ]'.repeat(maxJsonDepth)}`;
    assert.equal(canonicalize(spaced), text);
  });

  test('large objects (beyond the insertion-sort size) sort like small ones', () => {
    const names = Array.from({ length: 300 }, (_, k) => `k${(k * 7919) % 300}`);
    const input = `{${names.map((name, k) => `"${name}":${k}`).join(',')}}`;
    const expected = `{${[...names.keys()].sort((a, b) => (names[a]! < names[b]! ? -1 : 1)).map((k) => `"${names[k]}":${k}`).join(',')}}`;
    assert.equal(everyRoute(input), expected);
  });
});

describe('canonical form: rejections', () => {
  const vectors: Array<[string, string]> = [
    ['empty input', ''],
    ['whitespace only', ' \n'],
    ['a BOM', '\ufeff{}'],
    ['duplicate names', '{"a":1,"a":2}'],
    ['duplicate names differing only by escaping', '{"a":1,"\\u0061":2}'],
    ['duplicate names found after reordering', '{"b":1,"a":1,"b":2}'],
    ['duplicate names in a nested object', '[{"x":{"k":1,"k":2}}]'],
    ['lone high surrogate escape', '"\\ud800"'],
    ['high surrogate escape followed by a non-surrogate escape', '"\\ud800\\u0041"'],
    ['high surrogate escape followed by text', '"\\ud83dx"'],
    ['two high surrogate escapes', '"\\ud83d\\ud83d"'],
    ['lone low surrogate escape', '"\\udc00"'],
    ['lone low surrogate escape after a pair', '"\\ud83d\\ude00\\ude00"'],
    ['raw lone high surrogate', '"\ud800"'],
    ['raw lone low surrogate in a name', '{"\udc00":1}'],
    ['raw lone surrogate outside a string', '[1,\ud800]'],
    ['trailing data', '1 2'],
    ['trailing data after an object', '{} x'],
    ['trailing comma in an array', '[1,]'],
    ['trailing comma in an object', '{"a":1,}'],
    ['leading zero', '01'],
    ['negative leading zero', '-01'],
    ['plus sign', '+1'],
    ['missing integer part', '.5'],
    ['missing fraction digits', '1.'],
    ['missing exponent digits', '1e'],
    ['signed exponent without digits', '1e+'],
    ['lone minus', '-'],
    ['NaN', 'NaN'],
    ['Infinity', 'Infinity'],
    ['negative Infinity', '-Infinity'],
    ['truncated literal', 'tru'],
    ['literal followed by junk', 'nullx'],
    ['missing comma', '[1 2]'],
    ['missing colon', '{"a" 1}'],
    ['unquoted name', '{a:1}'],
    ['single quotes', "{'a':1}"],
    ['comment', '/*c*/1'],
    ['line comment', '1//c'],
    ['raw control character in a string', '"a\u0001"'],
    ['raw newline in a string', '"a\nb"'],
    ['raw tab in a string', '"a\tb"'],
    ['invalid escape', '"\\x"'],
    ['short unicode escape', '"\\u12"'],
    ['non-hex unicode escape', '"\\u12g4"'],
    ['unterminated string', '"abc'],
    ['unterminated escape', '"\\'],
    ['unclosed array', '[1'],
    ['unclosed object', '{"a":1'],
    ['missing value', '{"a":}'],
    ['NBSP is not whitespace', '\u00a01'],
    ['vertical tab is not whitespace', '\u000b1'],
    ['two values', '[] []'],
  ];
  for (const [name, input] of vectors) {
    test(name, () => {
      rejection(input);
      if (isWellFormedText(input)) rejection(encoder.encode(input));
    });
  }

  test('messages name the problem and its offset', () => {
    assert.match(rejection('{"a":1,"a":2}').message, /duplicate member name "a" .*offset 0/);
    assert.match(rejection('[1,]').message, /trailing comma in array at offset 3/);
    assert.match(rejection('"\\udc00"').message, /lone low surrogate escape at offset 1/);
    assert.match(rejection('"\ud800"').message, /lone surrogate at offset 1/);
    assert.match(rejection('["é",01]').message, /leading zeros .* at offset 5/);
    assert.match(rejection(encoder.encode('["é",01]')).message, /leading zeros .* at byte offset 6/);
    assert.match(rejection('["é",x]').message, /expected a value, found 'x' at offset 5/);
    assert.match(rejection('["é"]é').message, /unexpected U\+00E9 after the JSON value at offset 5/);
    assert.match(rejection('[😀]').message, /expected a value, found U\+D83D at offset 1/);
  });

  const invalidUtf8: Array<[string, number[]]> = [
    ['0xff', [0x22, 0xff, 0x22]],
    ['overlong 0xc0 0xaf', [0x22, 0xc0, 0xaf, 0x22]],
    ['overlong three-byte 0xe0 0x80 0xaf', [0x22, 0xe0, 0x80, 0xaf, 0x22]],
    ['an encoded surrogate 0xed 0xa0 0x80', [0x22, 0xed, 0xa0, 0x80, 0x22]],
    ['a code point above U+10FFFF', [0x22, 0xf4, 0x90, 0x80, 0x80, 0x22]],
    ['a truncated sequence', [0x22, 0xe2, 0x82, 0x22]],
    ['a stray continuation byte', [0x5b, 0x31, 0x2c, 0x80, 0x5d]],
  ];
  for (const [name, bytes] of invalidUtf8) {
    test(`invalid UTF-8: ${name}`, () => {
      assert.match(rejection(new Uint8Array(bytes)).message, /invalid UTF-8 at byte offset \d+/);
    });
  }

  test('a byte-order mark in byte input is rejected', () => {
    assert.match(rejection(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d])).message, /byte order mark/);
  });

  test('inputs that are neither strings nor bytes are rejected', () => {
    for (const input of [undefined, null, 42, {}, ['{}']]) {
      assert.throws(() => canonicalize(input as never), hasCode('invalid_payload'));
      assert.throws(() => parseJson(input as never), hasCode('invalid_payload'));
    }
  });

  test('deep nesting gives a typed error, not a RangeError', () => {
    for (const input of ['['.repeat(100_000), '{"a":'.repeat(100_000), `${'['.repeat(maxJsonDepth + 1)}${']'.repeat(maxJsonDepth + 1)}`]) {
      assert.match(rejection(input).message, /nesting deeper than 10000 levels/);
    }
  });

  test('maxBytes bounds the input', () => {
    assert.equal(canonicalize('[1, 2]', { maxBytes: 6 }), '[1,2]');
    assert.match(rejection('[1,  2]', { maxBytes: 6 }).message, /7 bytes exceeds the 6-byte bound/);
    assert.match(rejection(encoder.encode('[1,  2]'), { maxBytes: 6 }).message, /exceeds the 6-byte bound/);
    // Bytes, not UTF-16 units, are counted: "é" is two bytes.
    rejection('"éé"', { maxBytes: 5 });
  });

  test('maxBytes bounds the canonical output too', () => {
    assert.equal(canonicalize('"<"', { maxBytes: 8 }), '"\\u003c"');
    assert.throws(() => canonicalize('"<"', { maxBytes: 7 }), /canonical encoding of 8 bytes exceeds the 7-byte bound/);
  });

  test('what and code options shape the error', () => {
    assert.throws(
      () => canonicalize('[1,]', { what: 'event', code: 'invalid_event' }),
      (error: unknown) => hasCode('invalid_event')(error) && /^invalid event: trailing comma/.test((error as Error).message),
    );
    rejection('{', { code: 'custom_code' }, 'custom_code');
  });

  test(`input over maxPayloadBytes (${maxPayloadBytes} bytes) is rejected`, () => {
    const size = maxPayloadBytes + 2;
    const bytes = new Uint8Array(size).fill(0x61);
    bytes[0] = 0x22;
    bytes[size - 1] = 0x22;
    assert.match(rejection(bytes).message, /exceeds the 67108864-byte bound/);
    rejection(`"${'a'.repeat(maxPayloadBytes)}"`);
  });
});

function isWellFormedText(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

describe('writeCanonical', () => {
  const string = (value: string): JsonNode => ({ kind: 'string', value });
  const number = (text: string): JsonNode => ({ kind: 'number', text });

  test('writes hand-built nodes, sorting unsorted members', () => {
    const node: JsonNode = {
      kind: 'object',
      members: [
        ['b', { kind: 'array', items: [number('1.50'), { kind: 'boolean', value: true }, { kind: 'null' }] }],
        ['a', string('<&>')],
      ],
    };
    assert.equal(writeCanonical(node), '{"a":"\\u003c\\u0026\\u003e","b":[1.50,true,null]}');
  });

  test('rejects duplicate names, bad number literals, lone surrogates and unknown kinds', () => {
    const invalid: unknown[] = [
      { kind: 'object', members: [['a', number('1')], ['a', number('2')]] },
      number('01'),
      number('NaN'),
      number('1.'),
      number(''),
      string('\ud800'),
      { kind: 'object', members: [['\udc00', number('1')]] },
      { kind: 'date' },
      { kind: 'array', items: [undefined] },
    ];
    for (const node of invalid) assert.throws(() => writeCanonical(node as JsonNode), hasCode('invalid_payload'));
  });

  test('deep hand-built nodes give a typed error, not a RangeError', () => {
    let node: JsonNode = { kind: 'null' };
    for (let k = 0; k < 20_000; k++) node = { kind: 'array', items: [node] };
    assert.throws(() => writeCanonical(node), hasCode('invalid_payload'));
  });
});

describe('quoteString', () => {
  test('quotes with the canonical escapes', () => {
    assert.equal(quoteString('a"\\\b\f\n\r\t\u0000\u001f\u007f/<>&\u2028\u2029é😀'), '"a\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\u007f/\\u003c\\u003e\\u0026\\u2028\\u2029é😀"');
    assert.equal(quoteString(''), '""');
  });

  test('rejects lone surrogates', () => {
    for (const value of ['\ud800', 'a\udc00', '\ude00\ud83d']) assert.throws(() => quoteString(value), hasCode('invalid_payload'));
  });
});

describe('nodeFromValue and encodeCanonical', () => {
  test('convert like JSON.stringify, canonically', () => {
    const value = {
      b: [1, undefined, -0, 10n, 'x', true, null, 1e21, 0.1],
      a: new Date(0),
      skipped: undefined,
      nested: { z: 1, y: { '<': '>' } },
    };
    const text = '{"a":"1970-01-01T00:00:00.000Z","b":[1,null,0,10,"x",true,null,1e+21,0.1],"nested":{"y":{"\\u003c":"\\u003e"},"z":1}}';
    assert.equal(encodeCanonical(value), text);
    assert.equal(writeCanonical(nodeFromValue(value)), text);
  });

  test('accept null-prototype objects, shared references and toJSON results', () => {
    const shared = { x: 1 };
    assert.equal(encodeCanonical({ a: shared, b: [shared, shared] }), '{"a":{"x":1},"b":[{"x":1},{"x":1}]}');
    assert.equal(encodeCanonical(Object.assign(Object.create(null) as object, { b: 1, a: 2 })), '{"a":2,"b":1}');
    assert.equal(encodeCanonical({ toJSON: (key: string) => ({ key }) }), '{"key":""}');
    assert.equal(encodeCanonical([{ toJSON: (key: string) => key }]), '["0"]');
  });

  test('member names are written the same the first time and every later time, escaped, and a lone surrogate is always refused', () => {
    const names = ['role', '<tag>', 'a\u2028b', 'é', 'x'.repeat(100)];
    const value = Object.fromEntries(names.map((name, index) => [name, index]));
    const text = encodeCanonical(value);
    assert.equal(text, canonicalize(JSON.stringify(value)));
    for (let round = 0; round < 3; round += 1) assert.equal(encodeCanonical([value, { role: round }]), `[${text},{"role":${round}}]`);
    for (let round = 0; round < 2; round += 1) assert.throws(() => encodeCanonical({ ok: 1, '\ud800': 1 }), hasCode('invalid_payload'));
    // More distinct names than the cache keeps: it starts afresh and still writes every name right.
    const many = Object.fromEntries(Array.from({ length: 5000 }, (_, index) => [`k${index}`, index]));
    assert.equal(encodeCanonical(many), canonicalize(JSON.stringify(many)));
    assert.equal(encodeCanonical(value), text);
  });

  test('prefer the exact node of a toJsonNode source', () => {
    const source = { [toJsonNode]: (): JsonNode => ({ kind: 'number', text: '1.50' }), toJSON: () => 1.5 };
    assert.equal(encodeCanonical({ v: source }), '{"v":1.50}');
  });

  test('reject what has no faithful JSON form', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = { back: cycle };
    let deep: unknown[] = [];
    for (let k = 0; k < 20_000; k++) deep = [deep];
    const rejected: unknown[] = [
      undefined,
      () => 1,
      Symbol('s'),
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      { f: () => 1 },
      [Symbol('s')],
      new Map([['a', 1]]),
      new Set([1]),
      new (class Point {
        x = 1;
      })(),
      new Uint8Array(2),
      '\ud800',
      { ['\udc00']: 1 },
      { a: 'x\ud83d' },
      cycle,
      deep,
      { toJSON: () => Number.NaN },
    ];
    for (const value of rejected) {
      assert.throws(() => encodeCanonical(value), hasCode('invalid_payload'));
      assert.throws(() => nodeFromValue(value), hasCode('invalid_payload'));
    }
  });
});

describe('valueFromNode and utf8Length', () => {
  test('valueFromNode gives plain values, numbers through JS numbers', () => {
    assert.deepEqual(valueFromNode(parseJson('{"a":[1.50,-0,1e2,"x",true,null],"b":{}}')), {
      a: [1.5, -0, 100, 'x', true, null],
      b: {},
    });
  });

  test('valueFromNode keeps "__proto__" as an own member, like JSON.parse', () => {
    const value = valueFromNode(parseJson('{"__proto__":{"x":1},"a":1}')) as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(value), Object.prototype);
    assert.deepEqual(Object.keys(value).sort(), ['__proto__', 'a']);
    assert.deepEqual(value, JSON.parse('{"__proto__":{"x":1},"a":1}'));
  });

  test('valueFromNode handles deep nesting', () => {
    let value = valueFromNode(parseJson(`${'['.repeat(maxJsonDepth)}${']'.repeat(maxJsonDepth)}`));
    let depth = 0;
    while (Array.isArray(value) && value.length === 1) {
      value = value[0];
      depth++;
    }
    assert.equal(depth, maxJsonDepth - 1);
    assert.deepEqual(value, []);
  });

  test('utf8Length counts UTF-8 bytes', () => {
    assert.equal(utf8Length(''), 0);
    assert.equal(utf8Length('aé漢😀'), 1 + 2 + 3 + 4);
  });
});

/* ------------------------------------------------------------------------------------------------
 * Property tests. A random JSON tree is rendered as text with random whitespace, member order
 * and escape spellings; an independent reference writer gives the expected canonical text.
 * ---------------------------------------------------------------------------------------------- */

type Tree =
  | { readonly kind: 'number'; readonly text: string }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'literal'; readonly text: 'true' | 'false' | 'null' }
  | { readonly kind: 'array'; readonly items: readonly Tree[] }
  | { readonly kind: 'object'; readonly members: ReadonlyArray<readonly [string, Tree]> };

const digits = (min: number, max: number) =>
  fc.string({ unit: fc.constantFrom('0', '1', '2', '5', '9'), minLength: min, maxLength: max });

const numberLiteral = fc
  .tuple(
    fc.boolean(),
    fc.oneof(fc.constant('0'), fc.tuple(fc.constantFrom('1', '3', '9'), digits(0, 6)).map(([a, b]) => a + b)),
    fc.option(digits(1, 4), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(1, 3)), { nil: undefined }),
  )
  .map(([negative, integer, fraction, exponent]) => {
    let text = negative ? `-${integer}` : integer;
    if (fraction !== undefined) text += `.${fraction}`;
    if (exponent !== undefined) text += exponent.join('');
    return text;
  });

const specialUnits = ['<', '>', '&', '\u2028', '\u2029', '"', '\\', '/', '\u007f', '\u0000', '\u001f', '\n', '\b', 'é', '😀', '｡', '\ue000', 'a', 'b', 'A'];
const textString = fc.string({
  unit: fc.oneof(fc.constantFrom(...specialUnits), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })),
  maxLength: 8,
});

const { tree } = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    numberLiteral.map((text): Tree => ({ kind: 'number', text })),
    textString.map((value): Tree => ({ kind: 'string', value })),
    fc.constantFrom('true', 'false', 'null').map((text): Tree => ({ kind: 'literal', text: text as 'true' })),
    fc.array(tie('tree'), { maxLength: 5 }).map((items): Tree => ({ kind: 'array', items })),
    fc
      .uniqueArray(fc.tuple(textString, tie('tree')), { selector: ([name]) => name, maxLength: 6 })
      .map((members): Tree => ({ kind: 'object', members })),
  ),
}));

/** The expected canonical text, written independently of the module under test. */
function reference(node: Tree): string {
  switch (node.kind) {
    case 'number':
    case 'literal':
      return node.text;
    case 'string':
      return referenceQuote(node.value);
    case 'array':
      return `[${node.items.map(reference).join(',')}]`;
    case 'object':
      return `{${[...node.members]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([name, value]) => `${referenceQuote(name)}:${reference(value)}`)
        .join(',')}}`;
  }
}

function referenceQuote(value: string): string {
  // JSON.stringify already uses the short escapes and lowercase \u00xx for other C0 controls.
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A deterministic PRNG (mulberry32) so each generated seed renders one fixed text. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Renders a tree as valid JSON with random whitespace, member order and escape spellings. */
function render(node: Tree, next: () => number): string {
  const space = (): string => (next() < 0.3 ? [' ', '\n', '\t', '\r', '  '][Math.floor(next() * 5)]! : '');
  const hex = (unit: number): string => {
    const digits = unit.toString(16).padStart(4, '0');
    return `\\u${next() < 0.5 ? digits : digits.toUpperCase()}`;
  };
  const quote = (value: string): string => {
    let out = '"';
    for (const character of value) {
      const unit = character.charCodeAt(0);
      const mustEscape = character === '"' || character === '\\' || unit < 0x20;
      if (mustEscape || next() < 0.2) {
        const short = { '"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '/': '\\/' }[character];
        if (short !== undefined && next() < 0.5) out += short;
        else for (let k = 0; k < character.length; k++) out += hex(character.charCodeAt(k));
      } else {
        out += character;
      }
    }
    return `${out}"`;
  };
  const value = (current: Tree): string => {
    switch (current.kind) {
      case 'number':
      case 'literal':
        return current.text;
      case 'string':
        return quote(current.value);
      case 'array':
        return `[${space()}${current.items.map((item) => `${value(item)}${space()}`).join(`,${space()}`)}]`;
      case 'object': {
        const members = [...current.members];
        for (let k = members.length - 1; k > 0; k--) {
          const j = Math.floor(next() * (k + 1));
          [members[k], members[j]] = [members[j]!, members[k]!];
        }
        const body = members.map(([name, member]) => `${quote(name)}${space()}:${space()}${value(member)}${space()}`);
        return `{${space()}${body.join(`,${space()}`)}}`;
      }
    }
  };
  return `${space()}${value(node)}${space()}`;
}

describe('canonical form: properties', () => {
  const rendered = fc.tuple(tree, fc.integer()).map(([node, seed]) => ({ node, text: render(node, random(seed)) }));

  test('random JSON text canonicalises to the reference form through every route', () => {
    fc.assert(
      fc.property(rendered, ({ node, text }) => {
        assert.equal(everyRoute(text), reference(node));
      }),
      { numRuns: 300 },
    );
  });

  test('canonicalisation is idempotent', () => {
    fc.assert(
      fc.property(rendered, ({ text }) => {
        const once = canonicalize(text);
        assert.equal(canonicalize(once), once);
        assert.equal(canonicalize(encoder.encode(once)), once);
      }),
    );
  });

  test('canonical output never holds raw <, >, &, U+2028 or U+2029', () => {
    fc.assert(
      fc.property(rendered, ({ text }) => {
        assert.doesNotMatch(canonicalize(text), /[<>&\u2028\u2029]/);
      }),
    );
  });

  test('parsing canonical text preserves the value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), (value) => {
        const expected = JSON.parse(JSON.stringify(value)) as unknown;
        const canonical = canonicalize(JSON.stringify(value));
        assert.deepEqual(valueFromNode(parseJson(canonical)), expected);
        assert.equal(encodeCanonical(value), canonical);
      }),
    );
  });

  test('JSON.parse of the canonical text equals JSON.parse of the input', () => {
    fc.assert(
      fc.property(fc.json({ stringUnit: 'binary' }), (text) => {
        assert.deepEqual(JSON.parse(canonicalize(text)), JSON.parse(text));
      }),
    );
  });

  test('arbitrary text is accepted or rejected alike by every route, never with another error', () => {
    const alphabet = ['{', '}', '[', ']', ',', ':', '"', '\\', 'u', 'd', '8', '0', 'c', '1', '-', '.', 'e', '+', ' ', '\n', 't', 'r', 'n', 'l', 'a', '<', 'é', '😀', '\u2028', '\u0001', '\ud800'];
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...alphabet), maxLength: 24 }), (text) => {
        let expected: string | undefined;
        try {
          expected = canonicalize(text);
        } catch (error) {
          const other = rejection(text);
          assert.ok(error instanceof KernelError && error.message === other.message);
          return;
        }
        assert.equal(everyRoute(text), expected);
        assert.deepEqual(JSON.parse(expected), JSON.parse(text));
      }),
      { numRuns: 2000 },
    );
  });

  test('arbitrary bytes are accepted or rejected alike by both parsers', () => {
    const fragments = ['[', ']', '{', '}', ',', ':', '"', '\\', 'u', 'D', '8', '0', 'c', '1', '-', '.', 'E', ' ', 'n', 'é', '\u2028', '/', 'f', 'b'].map((text) => [
      ...encoder.encode(text),
    ]);
    const invalid = [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x80], [0x80], [0xef, 0xbb, 0xbf], [0xef, 0xbf, 0xbd]];
    const piece = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...fragments) }, { weight: 1, arbitrary: fc.constantFrom(...invalid) });
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 20 }), (pieces) => {
        const bytes = new Uint8Array(pieces.flat());
        let expected: string;
        try {
          expected = canonicalize(bytes);
        } catch (error) {
          assert.equal((error as Error).message, rejection(bytes).message);
          return;
        }
        assert.equal(writeCanonical(parseJson(bytes)), expected);
      }),
      { numRuns: 2000 },
    );
  });
});
