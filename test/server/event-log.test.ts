import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { classifyCheckpointCut, TreeCheckpoint } from '../../src/kernel/commit.js';
import { ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import { comparePositions, followsDirectly, isPosition, type EventLog, type LogRecord, type StoredLogRecord } from '../../src/store/event-log.js';
import { MemoryEventLog } from '../../src/store/memory-event-log.js';
import type { RedisEventLog } from '../../src/store/redis/event-log.js';
import { previousEntryField } from '../../src/store/redis/log-entry.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
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

test('redis log: committed events and best-effort entries share one stream, read back with their process', async () => {
  const redis = new Redis(server.url);
  const prefix = freshPrefix();
  try {
    const store = new RedisTreeCommitter({ redis, keyPrefix: prefix, eventLogMaxLen: 100 });
    const log = store.events;
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

test('memory log: each entry names its predecessor, so a read after a trimmed cursor shows the gap', async () => {
  const log = new MemoryEventLog({ maxLen: 3 });
  log.append('a', [record(1), record(2), record(3), record(4), record(5)]);
  const held = await log.readAfter('a', '0', 10);
  assert.deepEqual(held.map((entry) => [entry.position, entry.previous]), [['3', '2'], ['4', '3'], ['5', '4']]);
  // Entries 1 and 2 were trimmed. After 2 (the last one trimmed) nothing is missing; after 1 or 0, entry 2 is.
  const first = (after: string) => log.readAfter('a', after, 1).then(([entry]) => entry as StoredLogRecord);
  assert.equal(followsDirectly(await first('2'), '2'), true);
  assert.equal(followsDirectly(await first('1'), '1'), false);
  assert.equal(followsDirectly(await first('0'), '0'), false, 'the log no longer holds its beginning');
  assert.equal(followsDirectly(await first('3'), '3'), true);
  assert.equal(followsDirectly(await first('3-5'), '3-5'), true, 'a Redis-shaped cursor between 3 and 4');
  // An untrimmed log starts at 0.
  const whole = new MemoryEventLog({ maxLen: 3 });
  whole.append('b', [record(1)]);
  const [only] = await whole.readAfter('b', '0', 1);
  assert.equal(only?.previous, '0');
  assert.equal(followsDirectly(only as StoredLogRecord, '0'), true);
  // A tail that falls behind the ring continues at the oldest entry held, and the link tells.
  const abort = new AbortController();
  const tail = log.tail('a', '5', abort.signal)[Symbol.asyncIterator]();
  const next = tail.next();
  log.append('a', [record(6), record(7), record(8), record(9)]);
  const caught = (await next).value as StoredLogRecord;
  assert.equal(caught.position, '7', 'entry 6 was trimmed before the tail read it');
  assert.equal(followsDirectly(caught, '5'), false);
  abort.abort();
  await tail.return?.();
});

/**
 * Appends `count` best-effort records in chunks, reading each chunk back before trimming can reach it
 * (a chunk smaller than MAXLEN: approximate trimming only drops a node once the newer ones hold MAXLEN).
 */
async function appendAndCollect(log: RedisEventLog, root: string, after: string, count: number, chunk: number): Promise<string[]> {
  const ids: string[] = [after];
  for (let appended = 0; appended < count; appended += chunk) {
    log.append(root, Array.from({ length: chunk }, (_, index) => record(appended + index + 1, root)));
    const read = await log.readAfter(root, ids.at(-1) as string, chunk * 2);
    assert.equal(read.length, chunk, 'every chunk is read back whole');
    ids.push(...read.map((entry) => entry.position));
  }
  return ids.slice(1);
}

test('redis log: every entry links to the one before it; approximate trimming is detected exactly', async () => {
  const redis = new Redis(server.url);
  const prefix = freshPrefix();
  try {
    const store = new RedisTreeCommitter({ redis, keyPrefix: prefix, eventLogMaxLen: 5 });
    const log = store.events;
    const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    const root = trees.rootId.toString();
    // A committed entry (the commit script links it) and best-effort ones (the append script links them).
    const event = { name: 'agent.process.started', json: () => JSON.stringify({ process_id: root, name: 'agent.process.started' }) };
    await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }), { events: [event] });
    const [committed] = await store.events.entriesAfter(trees.rootId, '0', 1);
    assert.equal(committed?.previous, '0', 'the first entry of a stream links to 0');
    assert.deepEqual(committed?.fields, { name: 'agent.process.started', event: event.json() }, 'the link is not one of the fields');
    const ids = [committed.id];
    ids.push(...(await appendAndCollect(log, root, committed.id, 300, 4)));
    // A later commit links to the best-effort entry before it.
    const paused = { name: 'agent.process.paused', json: () => JSON.stringify({ process_id: root, name: 'agent.process.paused' }) };
    const running = TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) });
    const next = TreeCheckpoint.create({ kind: classifyCheckpointCut(trees.completed().processSnapshots()), sequence: 2n, previous: running.snapshot.digest, snapshot: trees.completed() });
    await store.commitCheckpoint(next, { events: [paused] });
    const [last] = await log.readAfter(root, ids.at(-1) as string, 10);
    assert.equal(last?.previous, ids.at(-1));
    ids.push(last?.position as string);

    // MAXLEN ~ 5 trims whole stream nodes: some prefix is gone, at a point Redis chose.
    const held = await log.readAfter(root, '0', 1000);
    const firstHeld = held[0] as StoredLogRecord;
    const index = ids.indexOf(firstHeld.position);
    assert.ok(index > 0 && held.length < ids.length, `trimmed: ${ids.length} appended, ${held.length} held`);
    assert.deepEqual(held.map((entry) => entry.position), ids.slice(index), 'what is held is a suffix of what was appended');
    for (let at = 1; at < held.length; at += 1) assert.equal(held[at]?.previous, held[at - 1]?.position);
    // The oldest entry held names exactly the last one trimmed.
    const lastTrimmed = ids[index - 1] as string;
    assert.equal(firstHeld.previous, lastTrimmed);
    const readFrom = async (after: string) => (await log.readAfter(root, after, 1))[0] as StoredLogRecord;
    assert.equal(followsDirectly(await readFrom(lastTrimmed), lastTrimmed), true, 'a reader that saw every trimmed entry lost nothing');
    for (const cursor of [ids[index - 2] as string, ids[0] as string, '0']) {
      const next = await readFrom(cursor);
      assert.equal(next.position, firstHeld.position);
      assert.equal(followsDirectly(next, cursor), false, `entries after ${cursor} were trimmed`);
    }
    assert.equal(followsDirectly(await readFrom(firstHeld.position), firstHeld.position), true);

    // A tail that resumes from a trimmed id sees the same gap on its first entry.
    const abort = new AbortController();
    for await (const entry of log.tail(root, ids[0] as string, abort.signal)) {
      assert.equal(entry.position, firstHeld.position);
      assert.equal(followsDirectly(entry, ids[0] as string), false);
      abort.abort();
    }
    assert.equal(log.failedAppends, 0);
    await log.close();
  } finally {
    redis.disconnect();
  }
});

test('redis store: host entries may not use the reserved link field', async () => {
  const redis = new Redis(server.url);
  const prefix = freshPrefix();
  try {
    const store = new RedisTreeCommitter({ redis, keyPrefix: prefix });
    const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    await assert.rejects(
      store.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }), {
        entries: [{ [previousEntryField]: '1-0' }],
      }),
      (error: unknown) => (error as { code?: string }).code === 'invalid_commit',
    );
    assert.equal(await store.loadTree(trees.rootId), undefined, 'nothing was written');
  } finally {
    redis.disconnect();
  }
});
