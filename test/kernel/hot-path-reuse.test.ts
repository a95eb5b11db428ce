import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Digest } from '../../src/kernel/digest.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Engine } from '../../src/kernel/engine.js';
import type { Event } from '../../src/kernel/event.js';
import { EffectAttemptId, ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { formatUtcTimestamp, isUtcTimestamp } from '../../src/kernel/result.js';
import { encodedWireLength, encodeWire, RawJson, type WireValue } from '../../src/kernel/wire.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { echoDefinition, echoDispatcher } from '../../src/testing/example-definitions.js';

// What the hot path reuses instead of recomputing must equal what recomputing gives.

test('every fact the engine publishes carries the payload a fresh parse of its wire text gives', async () => {
  const events: Event[] = [];
  const engine = new Engine({ committer: new MemoryTreeCommitter(), eventListeners: [(event) => events.push(event)] });
  const deployment = Deployment.create({ definition: echoDefinition, dispatcher: echoDispatcher, implementationDigest: Digest.of('i'), configurationDigest: Digest.of('c') });
  await engine.run(deployment, Payload.encode({ value: 'a<b>&\u2028é' }));
  await engine.close();
  const facts = events.flatMap((event) => {
    const fact = event.fact();
    return fact === undefined ? [] : [{ event, fact }];
  });
  assert.ok(facts.length >= 3, `expected fact-carrying events, got ${events.map((event) => event.name).join(', ')}`);
  for (const { event, fact } of facts) {
    assert.equal(event.payload.json(), Payload.parse(fact.json()).json(), event.name);
    assert.equal(event.payload.size, Buffer.byteLength(Payload.parse(fact.json()).json()), event.name);
    assert.equal(event.json(), event.json(), 'the cached encoding is stable');
  }
});

test('encodeWire stays canonical with cached member names, and its length walk agrees', () => {
  const records: WireValue[] = [
    { b: 1, a: 'x', 'a<': true, é: null, '\u2028': [1n, 'y'], absent: undefined, z: new RawJson('{"k":[1,2]}') },
    { nested: { zeta: [], alpha: { b: 'é', a: '"' } }, list: [{ b: 2, a: 1 }, 'q'] },
    // The same names again, now served from the cache.
    { b: 1, a: 'x', 'a<': true, é: null, '\u2028': [1n, 'y'], absent: undefined, z: new RawJson('{"k":[1,2]}') },
  ];
  for (const record of records) {
    const text = encodeWire(record);
    assert.equal(text, Payload.parse(text).json(), 'the wire text is canonical JSON');
    assert.equal(encodedWireLength(record), Buffer.byteLength(text), 'the length walk measures the text');
  }
  assert.equal(encodeWire(records[0] as WireValue), encodeWire(records[2] as WireValue));
  assert.equal(encodeWire({ b: 1, a: undefined, c: [] }), '{"b":1,"c":[]}');
});

test('a formatted instant is reused only for the same millisecond', () => {
  const first = formatUtcTimestamp(new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 600)));
  assert.equal(first, '2025-01-02T03:04:05.6Z');
  assert.equal(formatUtcTimestamp(new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 600))), first);
  assert.equal(formatUtcTimestamp(new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 601))), '2025-01-02T03:04:05.601Z');
  assert.equal(isUtcTimestamp('2025-01-02T03:04:05.601Z'), true);
  assert.equal(isUtcTimestamp(''), false);
  assert.equal(isUtcTimestamp('2025-02-30T00:00:00Z'), false);
  assert.throws(() => formatUtcTimestamp(new Date(Number.NaN)));
  // The texts remembered as canonical never let a wrong one through, however many were met.
  for (let second = 0; second < 5_000; second++) assert.equal(isUtcTimestamp(formatUtcTimestamp(new Date(Date.UTC(2025, 0, 1, 0, 0, 0) + second * 1_001))), true);
  for (const text of ['2025-01-02T03:04:05.601Z', '2024-02-29T00:00:00Z']) {
    assert.equal(isUtcTimestamp(text), true);
    assert.equal(isUtcTimestamp(text), true);
  }
  for (const wrong of ['2025-02-29T00:00:00Z', '2025-01-02T03:04:05.600Z', '2025-01-02 03:04:05Z', '2025-01-02T24:00:00Z']) {
    assert.equal(isUtcTimestamp(wrong), false, wrong);
    assert.equal(isUtcTimestamp(wrong), false, wrong);
  }
});

test('random identities stay distinct and well formed across refills of the pool', () => {
  const seen = new Set<string>();
  for (let index = 0; index < 400; index++) {
    for (const id of [ProcessId.newRoot().toString(), TreeIncarnationId.random().toString(), EffectAttemptId.random().toString()]) {
      assert.match(id, /^(process|incarnation|attempt):[0-9a-f]{32}$/);
      seen.add(id.slice(id.indexOf(':') + 1));
    }
  }
  assert.equal(seen.size, 1200);
});
