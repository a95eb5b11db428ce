import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { TreeCheckpoint } from '../../../src/kernel/commit.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import { deltaType, type LogRecord } from '../../../src/store/event-log.js';
import { RedisEventLog } from '../../../src/store/redis/event-log.js';
import { defaultLogAppendDelayMs, RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { conformanceTrees } from '../../../src/testing/conformance-trees.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { scriptCalls } from '../../helpers/redis-stats.js';

// The committer's best-effort appends wait (for the end of the turn, or a few ms by default, so that a
// commit can carry them) and leave as one script per tree, yet an append still lands before whatever
// the committer sends after it.

let server: RedisServer;
let redis: Redis;
let prefixes = 0;

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.port, '127.0.0.1');
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

function prefix(): string {
  prefixes += 1;
  return `c${process.pid}-${prefixes}`;
}

function deltas(processId: string, count: number): LogRecord[] {
  return Array.from({ length: count }, (_, index) => ({ type: deltaType, processId, data: JSON.stringify({ process_id: processId, index }) }));
}


/** Resolves after the pending setImmediate callbacks (a coalesced flush among them) have run. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A committer whose appends wait only for the end of the turn. */
function turnEndStore(): RedisTreeCommitter {
  return new RedisTreeCommitter({ redis, keyPrefix: prefix(), logAppendDelayMs: 0 });
}

test('appends of one turn leave as one script, in order', async () => {
  const store = turnEndStore();
  const root = ProcessId.newRoot().toString();
  const before = await scriptCalls(redis);
  store.events.append(root, deltas(root, 3));
  store.events.append(root, deltas(root, 2));
  await nextTurn();
  const entries = await store.events.readAfter(root, '0', 100);
  assert.equal((await scriptCalls(redis)) - before, 1, 'one appendLog script for five entries');
  assert.deepEqual(
    entries.map((entry) => (JSON.parse(entry.data) as { index: number }).index),
    [0, 1, 2, 0, 1],
  );
  await store.close();
});

test('a commit sent in the same turn lands after the appends before it', async () => {
  const store = new RedisTreeCommitter({ redis, keyPrefix: prefix() });
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const root = trees.rootId.toString();
  store.events.append(root, deltas(root, 2));
  const checkpoint = TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) });
  await store.commit(checkpoint, { entries: [{ name: 'host.marker', event: JSON.stringify({ process_id: root }) }] });
  const raw = await store.events.entriesAfter(root, '0', 100);
  assert.deepEqual(raw.map((entry) => entry.fields.name), [deltaType, deltaType, 'host.marker']);
  await store.close();
});

test('a read through the log sees the appends issued before it, without waiting for the turn', async () => {
  const store = new RedisTreeCommitter({ redis, keyPrefix: prefix() });
  const root = ProcessId.newRoot().toString();
  store.events.append(root, deltas(root, 4));
  assert.equal(await store.events.length(root), 4);
  await store.close();
});

test('a plain event log (no coalescing asked) issues each append at once', async () => {
  const keyPrefix = prefix();
  const log = new RedisEventLog({ redis, keyPrefix });
  const root = ProcessId.newRoot().toString();
  log.append(root, deltas(root, 1));
  // Same connection, sent after the append: the append has already been issued.
  assert.equal(await redis.xlen(`${keyPrefix}:{${root}}:events`), 1);
  await log.close();
});

test('a write riding alongside leaves with the next flush: after the turn, or before a commit sent first, never before', async () => {
  const store = turnEndStore();
  const key = `${prefix()}:rider`;
  store.events.alongside(() => void redis.set(key, 'one'));
  // Issued now on the same connection, so it is served before the rider, which waits for the turn.
  assert.equal(await redis.get(key), null, 'not issued at once');
  await nextTurn();
  assert.equal(await redis.get(key), 'one', 'issued with the turn-end flush');

  // Before a commit sent in the same turn: the rider reaches Redis ahead of the commit.
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const seen: string[] = [];
  store.events.alongside(() => void redis.set(key, 'two').then(() => seen.push('rider')));
  await store.commit(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) })).then(() => seen.push('commit'));
  assert.deepEqual(seen, ['rider', 'commit']);
  assert.equal(await redis.get(key), 'two');
  await store.close();
});

test('a plain event log runs a rider at once; a closed one drops it', async () => {
  const log = new RedisEventLog({ redis, keyPrefix: prefix() });
  let ran = 0;
  log.alongside(() => (ran += 1));
  assert.equal(ran, 1);
  await log.close();
  log.alongside(() => (ran += 1));
  assert.equal(ran, 1);
});

test('a commit carries the entries queued for its tree: one script, ahead of its own entries; its receipt names only its own', async () => {
  const store = new RedisTreeCommitter({ redis, keyPrefix: prefix() });
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const root = trees.rootId.toString();
  const other = ProcessId.newRoot().toString();
  const before = await scriptCalls(redis);
  // Queued and committed in one turn (an await in between would let the turn-end flush send them).
  store.events.append(root, deltas(root, 3));
  store.events.append(other, deltas(other, 1));
  const receipt = await store.commit(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }), {
    entries: [{ name: 'host.marker', event: JSON.stringify({ process_id: root }) }],
  });
  // The commit and the other tree's appendLog: no appendLog for this tree.
  assert.equal((await scriptCalls(redis)) - before, 2);
  const raw = await store.events.entriesAfter(root, '0', 100);
  assert.deepEqual(raw.map((entry) => entry.fields.name), [deltaType, deltaType, deltaType, 'host.marker']);
  assert.deepEqual(receipt.eventIds, [raw[3]!.id], "the receipt's ids are the commit's own entries");
  // Linked like any appended entries: each names the one before it.
  assert.deepEqual(raw.map((entry) => entry.previous), ['0', raw[0]!.id, raw[1]!.id, raw[2]!.id]);
  assert.equal(await store.events.length(other), 1);
  await store.close();
});

test('entries carried by a commit that is refused (a duplicate, a conflict) are appended on their own, once', async () => {
  const store = new RedisTreeCommitter({ redis, keyPrefix: prefix() });
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const root = trees.rootId.toString();
  const start = TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) });
  await store.commit(start);
  // An identical retry is acknowledged as a duplicate and writes nothing: its carried entries still land.
  store.events.append(root, deltas(root, 2));
  assert.equal((await store.commit(start)).outcome, 'duplicate');
  // A stale proposal is refused: its carried entry still lands.
  store.events.append(root, deltas(root, 1));
  const stale = TreeCheckpoint.create({ kind: 'progress', sequence: 5n, previous: trees.running(0).digest, snapshot: trees.running(1) });
  await assert.rejects(store.commit(stale), /incarnation|conflict/);
  assert.deepEqual(
    (await store.events.readAfter(root, '0', 100)).filter((entry) => entry.type === deltaType).map((entry) => (JSON.parse(entry.data) as { index: number }).index),
    [0, 1, 0],
  );
  assert.equal(store.events.failedAppends, 0);
  await store.close();
});

test("queued entries that would push a commit past its entry bound go first on their own; the commit installs as it would have", async () => {
  const store = new RedisTreeCommitter({ redis, keyPrefix: prefix() });
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const root = trees.rootId.toString();
  // 1,000 host entries of its own, and 100 queued: together past the 1,024 one script may carry.
  const own = Array.from({ length: 1_000 }, (_, index) => ({ name: 'host.marker', event: JSON.stringify({ index }) }));
  store.events.append(root, deltas(root, 100));
  const receipt = await store.commit(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }), { entries: own });
  assert.equal(receipt.outcome, 'installed');
  assert.equal(receipt.eventIds.length, 1_000);
  const raw = await store.events.entriesAfter(root, '0', 2_000);
  assert.deepEqual(
    raw.map((entry) => entry.fields.name),
    [...Array.from({ length: 100 }, () => deltaType), ...Array.from({ length: 1_000 }, () => 'host.marker')],
  );
  await store.close();
});

test('by default an append waits past the end of its turn, at most 10 ms', async () => {
  assert.ok(defaultLogAppendDelayMs > 0 && defaultLogAppendDelayMs <= 10, `default delay ${defaultLogAppendDelayMs} ms`);
  const keyPrefix = prefix();
  const store = new RedisTreeCommitter({ redis, keyPrefix });
  const root = ProcessId.newRoot().toString();
  const appended = performance.now();
  store.events.append(root, deltas(root, 1));
  await nextTurn();
  const length = await redis.xlen(`${keyPrefix}:{${root}}:events`);
  // Conclusive only when the turn and the round trip took less than the delay (a loaded machine may not).
  if (performance.now() - appended < defaultLogAppendDelayMs) assert.equal(length, 0, 'still waiting after the turn');
  await store.close();
  assert.equal(await redis.xlen(`${keyPrefix}:{${root}}:events`), 1);
});

test('an append waits past the turn, so a commit sent within the delay carries it: no script of its own', async () => {
  const keyPrefix = prefix();
  const store = new RedisTreeCommitter({ redis, keyPrefix, logAppendDelayMs: 60_000 });
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const root = trees.rootId.toString();
  const before = await scriptCalls(redis);
  store.events.append(root, deltas(root, 2));
  await nextTurn();
  // A round trip on the committer's own connection, after the turn: a turn-end flush would be in.
  assert.equal(await redis.xlen(`${keyPrefix}:{${root}}:events`), 0, 'still waiting after the turn');
  await store.commit(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }), {
    entries: [{ name: 'host.marker', event: JSON.stringify({ process_id: root }) }],
  });
  assert.equal((await scriptCalls(redis)) - before, 1, 'the commit script alone');
  const raw = await store.events.entriesAfter(root, '0', 100);
  assert.deepEqual(raw.map((entry) => entry.fields.name), [deltaType, deltaType, 'host.marker']);
  await store.close();
});

test('a delayed append with no commit after it is sent once its delay has passed', async () => {
  const keyPrefix = prefix();
  const store = new RedisTreeCommitter({ redis, keyPrefix, logAppendDelayMs: 20 });
  const root = ProcessId.newRoot().toString();
  const key = `${keyPrefix}:{${root}}:events`;
  const reader = redis.duplicate();
  try {
    // Blocks until the entry arrives (or 10 s pass): the delay's flush is what ends it.
    const arrived = reader.xread('BLOCK', 10_000, 'STREAMS', key, '0');
    store.events.append(root, deltas(root, 1));
    const reply = await arrived;
    assert.equal(reply?.[0]?.[1].length, 1, 'the entry arrived without a commit or a read through the log');
  } finally {
    reader.disconnect();
  }
  await store.close();
});

test('closing the log sends the appends still waiting for their delay', async () => {
  const keyPrefix = prefix();
  const store = new RedisTreeCommitter({ redis, keyPrefix, logAppendDelayMs: 60_000 });
  const root = ProcessId.newRoot().toString();
  store.events.append(root, deltas(root, 3));
  await store.close();
  assert.equal(await redis.xlen(`${keyPrefix}:{${root}}:events`), 3);
});

test('an append delay must be a non-negative integer', () => {
  for (const appendDelayMs of [-1, 1.5, Number.NaN]) {
    assert.throws(() => new RedisEventLog({ redis, coalesceAppends: true, appendDelayMs }), /appendDelayMs must be a non-negative integer/);
  }
});
