import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maxPayloadDepth, Payload } from '../../src/kernel/payload.js';
import { parseWorkerLine, requestLine } from '../../src/transport/json-lines-protocol.js';
import { LineSplitter } from '../../src/transport/line-splitter.js';

test('a request is one canonical JSON line carrying the effect id and the exact payload', () => {
  const payload = Payload.parse('{"z":1,"a":"line\\nbreak","n":12345678901234567890}');
  const line = requestLine('effect:abc', payload);
  assert.equal(line, '{"effectId":"effect:abc","payload":{"a":"line\\nbreak","n":12345678901234567890,"z":1}}\n');
  assert.equal(line.indexOf('\n'), line.length - 1, 'no raw line break inside');
});

test('worker lines: handshake, answers, deltas', () => {
  assert.deepEqual(parseWorkerLine('{"ready":true}'), { kind: 'ready', version: undefined });
  assert.deepEqual(parseWorkerLine('{"ready":true,"version":"2.1"}'), { kind: 'ready', version: '2.1' });
  const answer = parseWorkerLine('{"effectId":"e1","status":"failed","payload":{"b":1,"a":2}}');
  assert.equal(answer.kind, 'answer');
  if (answer.kind === 'answer') {
    assert.equal(answer.effectId, 'e1');
    assert.equal(answer.status, 'failed');
    assert.equal(answer.payload.json(), '{"a":2,"b":1}');
  }
  const deepest = `${'['.repeat(maxPayloadDepth)}${']'.repeat(maxPayloadDepth)}`;
  const deep = parseWorkerLine(`{"effectId":"e1","status":"succeeded","payload":${deepest}}`);
  assert.equal(deep.kind === 'answer' && deep.payload.json(), deepest, 'as deep as a payload may be');
  const delta = parseWorkerLine(Buffer.from('{"effectId":"e1","delta":[1,2]}'));
  assert.equal(delta.kind, 'delta');
  if (delta.kind === 'delta') assert.equal(delta.payload.json(), '[1,2]');
});

test('invalid worker lines are reported, naming the effect id when the line had one', () => {
  const cases: Array<[string, string | undefined]> = [
    ['not json', undefined],
    ['[1]', undefined],
    ['{"ready":false}', undefined],
    ['{"ready":true,"extra":1}', undefined],
    ['{"status":"succeeded","payload":1}', undefined],
    ['{"effectId":"e","status":"done","payload":1}', 'e'],
    ['{"effectId":"e","status":"succeeded"}', 'e'],
    ['{"effectId":"e","status":"succeeded","payload":1,"more":2}', 'e'],
    ['{"effectId":"e","status":"succeeded","payload":1,"payload":2}', undefined],
    // Deeper than a payload may nest: a record carrying it could not be parsed again.
    [`{"effectId":"e","status":"succeeded","payload":${'['.repeat(maxPayloadDepth + 1)}${']'.repeat(maxPayloadDepth + 1)}}`, 'e'],
    [`{"effectId":"e","delta":${'['.repeat(maxPayloadDepth + 1)}${']'.repeat(maxPayloadDepth + 1)}}`, 'e'],
  ];
  for (const [text, effectId] of cases) {
    const line = parseWorkerLine(text);
    assert.equal(line.kind, 'invalid', text);
    if (line.kind === 'invalid') assert.equal(line.effectId, effectId, text);
  }
});

test('the line splitter follows lines across chunks, drops CR and empty lines, and stops on an overlong line', () => {
  const lines: string[] = [];
  let overflows = 0;
  const splitter = new LineSplitter(8, (line) => lines.push(line.toString()), () => (overflows += 1));
  splitter.push(Buffer.from('ab'));
  splitter.push(Buffer.from('c\r\n\nde'));
  splitter.push(Buffer.from('f\n12345678\n'));
  assert.deepEqual(lines, ['abc', 'def', '12345678']);
  splitter.push(Buffer.from('123456789'));
  splitter.push(Buffer.from('0\nnext\n'));
  assert.equal(overflows, 1);
  assert.deepEqual(lines, ['abc', 'def', '12345678'], 'nothing after an overflow');
  const single: string[] = [];
  const complete = new LineSplitter(4, (line) => single.push(line.toString()), () => assert.fail('no overflow'));
  complete.push(Buffer.from('1234\r\n'));
  assert.deepEqual(single, ['1234'], 'the CR does not count against the bound');
});
