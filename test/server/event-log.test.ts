import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { TreeCheckpoint } from '../../src/kernel/commit.js';
import { ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import { comparePositions, isPosition, type EventLog, type LogRecord, type StoredLogRecord } from '../../src/store/event-log.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { RedisLog } from '../../src/server/redis-log.js';
import { conformanceTrees } from '../../src/testing/conformance-trees.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix } from './harness.js';

const record = (n: number, processId = 'process:p'): LogRecord => ({
  type: n % 2 === 0 ? 'agent.delta' : 'agent.step.started',
  processId,
  data: JSON.stringify({ process_id: processId, n }),
});

/** Collects `count` entries of a tail, then aborts it. */
async function take(log: EventLog, root: string, after: string, count: number): Promise<StoredLogRecord[]> {
  const abort = new AbortController();
  const seen: StoredLogRecord[] = [];
  for await (const entry of log.tail(root, after, abort.signal)) {
    seen.push(entry);
    if (seen.length === count) abort.abort();
  }
  return seen;
}

test('positions: decimal or <n>-<m>, compared numerically part by part', () => {
  for (const valid of ['0', '9', '10', '1712-0', '18446744073709551615-18446744073709551615']) assert.ok(isPosition(valid), valid);
  for (const invalid of ['', '-1', '01', '1-', '1-2-3', '1.5', 'abc', '18446744073709551616', ' 1', 1 as unknown as string]) {
    assert.equal(isPosition(invalid), false, String(invalid));
  }
  assert.ok(comparePositions('9', '10') < 0, '9 < 10 numerically (not as strings)');
  assert.ok(comparePositions('1712-9', '1712-10') < 0);
  assert.ok(comparePositions('1713-0', '1712-99') > 0);
  assert.equal(comparePositions('5', '5-0'), 0);
});

test('memory log: per-tree sequence positions, reads after a cursor, a bounded ring', async () => {
  const log = new MemoryEventLog({ maxLen: 3 });
  log.append('a', [record(1), record(2)]);
  log.append('b', [record(1)]);
  assert.deepEqual((await log.readAfter('a', '0', 10)).map((entry) => entry.position), ['1', '2']);
  assert.deepEqual((await log.readAfter('b', '0', 10)).map((entry) => entry.position), ['1']);
  assert.deepEqual((await log.readAfter('a', '1', 10)).map((entry) => entry.position), ['2']);
  assert.deepEqual(await log.readAfter('missing', '0', 10), []);
  log.append('a', [record(3), record(4), record(5)]);
  // Only the newest three remain; a cursor before the retained range reads from the oldest kept.
  assert.equal(log.length('a'), 3);
  assert.deepEqual((await log.readAfter('a', '0', 10)).map((entry) => entry.position), ['3', '4', '5']);
  assert.deepEqual((await log.readAfter('a', '3', 1)).map((entry) => entry.position), ['4']);
  assert.deepEqual((await log.readAfter('a', '3-5', 10)).map((entry) => entry.position), ['4', '5'], 'a Redis-shaped cursor compares by its first part');
  // Many appends keep the bound (the ring compacts).
  for (let n = 6; n < 1_000; n += 1) log.append('a', [record(n)]);
  assert.deepEqual((await log.readAfter('a', '0', 10)).map((entry) => entry.position), ['997', '998', '999']);
  await assert.rejects(log.readAfter('a', 'x', 1), TypeError);
  log.delete('a');
  assert.deepEqual(await log.readAfter('a', '0', 10), []);
});

test('memory log: a tail yields stored entries, then live ones as they are appended; abort and close end it', async () => {
  const log = new MemoryEventLog();
  log.append('t', [record(1), record(2)]);
  const live = take(log, 't', '1', 3);
  log.append('t', [record(3)]);
  log.append('t', [record(4)]);
  assert.deepEqual((await live).map((entry) => entry.position), ['2', '3', '4']);
  // A tail on a tree with no entries yet waits for the first one.
  const fresh = take(log, 'new', '0', 1);
  log.append('new', [record(1)]);
  assert.deepEqual((await fresh).map((entry) => entry.position), ['1']);
  // close() ends an idle tail.
  const idle = take(log, 't', '4', 10);
  await log.close();
  assert.deepEqual(await idle, []);
  log.append('t', [record(5)]);
  assert.equal(log.length('t'), 4, 'a closed log appends nothing');
});

let server: RedisServer;

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await server?.stop();
});

test('redis log adapter: committed events and best-effort entries share one stream, read back with their process', async () => {
  const redis = new Redis(server.url);
  const prefix = freshPrefix();
  try {
    const store = new RedisTreeCommitter({ redis, keyPrefix: prefix });
    const log = new RedisLog({ redis, keyPrefix: prefix, maxLen: 100, log: store.events });
    const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    const root = trees.rootId.toString();
    const event = { name: 'agent.process.started', json: () => JSON.stringify({ process_id: root, name: 'agent.process.started' }) };
    await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }), { events: [event] });
    log.append(root, [record(1, root), record(2, root)]);
    const entries = await log.readAfter(root, '0', 10);
    assert.deepEqual(
      entries.map((entry) => [entry.type, entry.processId]),
      [
        ['agent.process.started', root],
        ['agent.step.started', root],
        ['agent.delta', root],
      ],
    );
    assert.ok(entries.every((entry) => isPosition(entry.position)));
    assert.ok(comparePositions(entries[0]?.position as string, entries[1]?.position as string) < 0);
    const live = take(log, root, entries[2]?.position as string, 1);
    log.append(root, [record(3, root)]);
    assert.deepEqual((await live).map((entry) => JSON.parse(entry.data).n), [3]);
    assert.equal(log.failedAppends, 0);
    await log.close();
  } finally {
    redis.disconnect();
  }
});
