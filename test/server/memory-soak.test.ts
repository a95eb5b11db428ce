import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { EngineHost } from '../../src/server/engine-host.js';
import { embeddedHost } from './harness.js';

/**
 * What a client does thousands of times against one waiting process must not grow the heap: a long
 * poll that times out, a stream opened and dropped. Each once left ~3 KB behind (a reaction on the
 * Process's result per poll; a combined abort signal on the Host's shutdown per poll and stream), so
 * a process waiting days for a person under a 30 s poll loop grew without bound. Measured with a
 * forced GC before and after; the bounds are a fraction of what the leaks cost (about 8 MB per 3,000
 * polls, 2.7 MB per 1,000 streams).
 */

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1e6;
}

let host: EngineHost;
let processId: string;

before(async () => {
  host = embeddedHost();
  processId = (await host.startProcess({ deployment: 'demo.sleep', input: { ms: 600_000 } })).process.processId;
});

after(async () => {
  await host.close(1_000);
});

test('3,000 timed-out long polls on a waiting process leave the heap as it was', async () => {
  for (let index = 0; index < 300; index += 1) await host.awaitResult(processId, 1); // warm-up
  const before = heapMb();
  for (let index = 0; index < 3_000; index += 1) {
    const poll = await host.awaitResult(processId, 1);
    assert.equal(poll.done, false);
  }
  const grown = heapMb() - before;
  assert.ok(grown < 2, `the heap grew ${grown.toFixed(2)} MB over 3,000 polls`);
});

test('1,000 streams opened and dropped on a live tree leave the heap as it was', async () => {
  const openAndDrop = async (): Promise<void> => {
    const abort = new AbortController();
    const stream = await host.openStream(processId, { signal: abort.signal });
    const iterator = stream[Symbol.asyncIterator]();
    const first = iterator.next();
    abort.abort();
    await first.catch(() => undefined);
    await iterator.return?.();
  };
  for (let index = 0; index < 100; index += 1) await openAndDrop(); // warm-up
  const before = heapMb();
  for (let index = 0; index < 1_000; index += 1) await openAndDrop();
  const grown = heapMb() - before;
  assert.ok(grown < 1, `the heap grew ${grown.toFixed(2)} MB over 1,000 streams`);
});
