import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batchFrames, entryFrame } from '../../plugins/stream/entry-frames.js';
import { encodeMessage } from '../../plugins/stream/sse-writer.js';
import type { LogEntry } from '../../src/server/host.js';

const entry = (n: number, data = JSON.stringify({ process_id: 'process:a', n })): LogEntry =>
  Object.freeze({ position: `1700000000000-${n}`, type: 'agent.delta', processId: 'process:a', data });

test('entry frames: one entry is encoded once; every stream that writes it writes the same bytes object', () => {
  const delta = entry(1);
  const frame = entryFrame(delta);
  assert.equal(entryFrame(delta), frame, 'the second stream gets the cached bytes, not a new encoding');
  assert.equal(frame.toString('utf8'), encodeMessage({ id: delta.position, event: delta.type, json: delta.data }));
  assert.equal(frame.toString('utf8'), `id: ${delta.position}\nevent: agent.delta\ndata: ${delta.data}\n\n`);
  // An equal entry that is another object is encoded on its own (the cache is by entry, never by text).
  assert.notEqual(entryFrame(entry(1)), frame);
  assert.deepEqual(entryFrame(entry(1)), frame);
});

test('entry frames: a batch is joined once for the streams that get the same entries, in order; other entries are not served stale', () => {
  const [one, two, three] = [entry(1), entry(2), entry(3)];
  const batch = batchFrames([one, two, three]);
  assert.equal(batch.frames.length, 3);
  assert.deepEqual(batch.frames, [entryFrame(one), entryFrame(two), entryFrame(three)]);
  assert.equal(Buffer.from(batch.bytes).toString('utf8'), [one, two, three].map((item) => entryFrame(item).toString('utf8')).join(''));
  assert.equal(batchFrames([one, two, three]), batch, 'another array of the same entries: the same joined bytes');
  // Same first entry, same length, another entry in between (a stream with another filter).
  const other = batchFrames([one, three, two]);
  assert.notEqual(other, batch);
  assert.equal(Buffer.from(other.bytes).toString('utf8'), [one, three, two].map((item) => entryFrame(item).toString('utf8')).join(''));
  assert.equal(batchFrames([two]).bytes, entryFrame(two), 'a batch of one is the entry frame itself');
});

test('entry frames: data with a line break is refused, never written as a broken frame', () => {
  assert.throws(() => entryFrame(entry(9, '{"a":"x"}\ndata: injected')), TypeError);
  assert.throws(() => entryFrame({ ...entry(10), type: 'agent.delta\nevent: x' }), TypeError);
});

test('entry frames: only recent frames are kept (a log that keeps its entries does not keep a second copy as frames)', () => {
  const old = entry(1);
  const frame = entryFrame(old);
  for (let n = 2; n <= 5_000; n += 1) entryFrame(entry(n));
  const again = entryFrame(old);
  assert.notEqual(again, frame, 'the old frame was let go, and is encoded afresh');
  assert.deepEqual(again, frame);
});
