import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { EffectBoundary, TreeActivation, TreeCheckpoint } from '../../../src/kernel/commit.js';
import { KernelError } from '../../../src/kernel/errors.js';
import { Event, eventNames } from '../../../src/kernel/event.js';
import { ProcessRelation } from '../../../src/kernel/relation.js';
import type { TreeStore } from '../../../src/kernel/tree-committer.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import type { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import { hostWritesValueKey } from '../../../src/store/redis/host-writes.js';
import { eventsKey, factsKey, headKey, purgedKey, recordKey, snapshotKey } from '../../../src/store/redis/keys.js';
import { RedisTreeCommitter, type RedisTreeCommitterOptions } from '../../../src/store/redis/redis-committer.js';
import { runTreeCommitterConformance } from '../../../src/testing/committer-conformance.js';
import { conformanceTrees, type ConformanceTrees } from '../../../src/testing/conformance-trees.js';
import { fixtureStartedAt, testDeploymentRef } from '../../../src/testing/snapshot-fixtures.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

let server: RedisServer;
let redis: Redis;
let prefixes = 0;

before(async () => {
  server = await startRedisServer({ appendOnly: false });
  redis = new Redis(server.port, '127.0.0.1');
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** A committer on the shared server under a key prefix no other test uses. */
function committer(options: Partial<RedisTreeCommitterOptions> = {}): RedisTreeCommitter {
  prefixes += 1;
  return new RedisTreeCommitter({ redis, keyPrefix: `t${process.pid}-${prefixes}`, ...options });
}

const isCode = (code: string) => (error: unknown) => error instanceof KernelError && error.code === code;

runTreeCommitterConformance('redis committer:', () => committer());

// ---------------------------------------------------------------------------------------------
// A small writer over one tree, for the store-specific cases below.

function start(snapshot: TreeSnapshot): TreeCheckpoint {
  return TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot });
}

function progress(sequence: bigint, previous: TreeSnapshot, snapshot: TreeSnapshot): TreeCheckpoint {
  return TreeCheckpoint.create({ kind: 'progress', sequence, previous: previous.digest, snapshot });
}

function fresh(): ConformanceTrees {
  return conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
}

test('redis committer: the head hash holds digest, incarnation and a decimal sequence; the snapshot key the bytes verbatim', async () => {
  const store = committer();
  const trees = fresh();
  await store.commitCheckpoint(start(trees.running(0)));
  await store.commitCheckpoint(progress(2n, trees.running(0), trees.running(1)));
  const stored = await redis.hgetall(headKey(store.keyPrefix, trees.rootId));
  assert.deepEqual(Object.keys(stored).sort(), ['digest', 'incarnation', 'sequence']);
  assert.equal(await redis.get(snapshotKey(store.keyPrefix, trees.rootId)), trees.running(1).json());
  assert.equal(stored.digest, trees.running(1).digest.toString());
  assert.equal(stored.incarnation, trees.incarnationId.toString());
  assert.equal(stored.sequence, '2');
  const facts = await redis.hgetall(factsKey(store.keyPrefix, trees.rootId));
  assert.equal(Object.keys(facts).length, 2);
  assert.equal(facts[start(trees.running(0)).identity()], start(trees.running(0)).contentDigest().toString());
  const head = await store.loadHead(trees.rootId);
  assert.equal(head?.sequence, 2n);
  assert.equal(head?.digest, trees.running(1).digest.toString());
});

test('redis committer: a head written with its bytes in the head hash (before the snapshot key) loads, and the next commit writes the key', async () => {
  const store = committer();
  const trees = fresh();
  await store.commitCheckpoint(start(trees.running(0)));
  // The earlier layout: the bytes in the head's `snapshot` field, no snapshot key.
  const head = headKey(store.keyPrefix, trees.rootId);
  await redis.hset(head, 'snapshot', trees.running(0).json());
  await redis.del(snapshotKey(store.keyPrefix, trees.rootId));
  const loaded = await store.loadHead(trees.rootId);
  assert.equal(loaded?.snapshot.json(), trees.running(0).json());
  assert.equal(loaded?.sequence, 1n);
  await store.commitCheckpoint(progress(2n, trees.running(0), trees.running(1)));
  assert.equal(await redis.get(snapshotKey(store.keyPrefix, trees.rootId)), trees.running(1).json());
  assert.equal((await store.loadHead(trees.rootId))?.snapshot.json(), trees.running(1).json(), 'the key wins over the stale field');
});

test('redis committer: sequences are decimal strings: carries, beyond 2^53, and a head at 2^64-1 refuses to advance', async () => {
  const store = committer();
  const trees = fresh();
  await store.commitCheckpoint(start(trees.running(0)));
  const key = headKey(store.keyPrefix, trees.rootId);
  let previous = trees.running(0);
  let step = 1;
  for (const [head, next] of [
    ['9', 10n],
    ['1999', 2000n],
    ['9999999999999', 10000000000000n], // the last successor Lua computes with doubles
    ['99999999999999', 100000000000000n], // the first it computes digit by digit
    ['9007199254740992', 9007199254740993n], // 2^53: doubles cannot tell 2^53 from 2^53+1
    ['9007199254740993', 9007199254740994n],
    ['18446744073709551614', 18446744073709551615n],
  ] as const) {
    await redis.hset(key, 'sequence', head);
    const snapshot = trees.running(step);
    // The same snapshot at the head's own sequence is not its successor; head+1 lands.
    // (commit_conflict when the previous round installed exactly that sequence).
    await assert.rejects(store.commitCheckpoint(progress(BigInt(head), previous, snapshot)), (error) =>
      isCode('tree_incarnation_conflict')(error) || isCode('commit_conflict')(error),
    );
    await store.commitCheckpoint(progress(next, previous, snapshot));
    assert.equal(await redis.hget(key, 'sequence'), next.toString());
    previous = snapshot;
    step += 1;
  }
  // At 2^64-1 there is no successor: any advance is an incarnation conflict (the boundary itself
  // cannot carry 2^64, so try the largest value and a sequence that would wrap).
  for (const sequence of [18446744073709551615n, 1n, 2n]) {
    const attempt = progress(sequence, previous, trees.running(step));
    await assert.rejects(store.commitCheckpoint(attempt), (error) =>
      isCode('tree_incarnation_conflict')(error) || isCode('commit_conflict')(error),
    );
  }
  assert.equal(await redis.hget(key, 'sequence'), '18446744073709551615');
  assert.equal((await store.loadTree(trees.rootId))?.digest.equals(previous.digest), true);
});

test('redis committer: a successful commit applies its host write set atomically; receipts say what happened', async () => {
  const store = committer();
  const trees = fresh();
  const first = await store.commit(start(trees.running(0)), {
    entries: [{ type: 'started', body: '{"n":0}' }, { type: 'note' }],
    records: [{ suffix: 'idem:start', value: 'response-0', ttlMs: 60_000 }, { suffix: 'plain', value: 'kept' }],
  });
  assert.equal(first.outcome, 'installed');
  assert.equal(first.eventIds.length, 2);
  const entries = await store.events.entriesAfter(trees.rootId, '0');
  assert.deepEqual(entries.map((entry) => entry.id), first.eventIds);
  assert.deepEqual(entries.map((entry) => entry.fields), [{ type: 'started', body: '{"n":0}' }, { type: 'note' }]);
  assert.equal(await store.readRecord(trees.rootId, 'idem:start'), 'response-0');
  const ttl = await redis.pttl(recordKey(store.keyPrefix, trees.rootId, 'idem:start'));
  assert.ok(ttl > 0 && ttl <= 60_000, `ttl ${ttl}`);
  assert.equal(await redis.pttl(recordKey(store.keyPrefix, trees.rootId, 'plain')), -1);
  // An identical retry is acknowledged as a duplicate and applies nothing again.
  const retry = await store.commit(start(trees.running(0)), { entries: [{ type: 'started' }], records: [{ suffix: 'plain', value: 'changed' }] });
  assert.deepEqual(retry, { outcome: 'duplicate', eventIds: [] });
  assert.equal(await store.events.length(trees.rootId), 2);
  assert.equal(await store.readRecord(trees.rootId, 'plain'), 'kept');
  // Effect boundaries and activations carry write sets too.
  const pending = EffectBoundary.create({
    sequence: 2n,
    resolution: false,
    processId: trees.rootId,
    effectId: trees.effectId,
    previous: trees.running(0).digest,
    snapshot: trees.effect('pending'),
  });
  const effect = await store.commit(pending, { entries: [{ type: 'effect' }] });
  assert.equal(effect.outcome, 'installed');
  const activation = TreeActivation.create({
    previousIncarnationId: trees.incarnationId,
    previousDigest: trees.effect('pending').digest,
    snapshot: trees.effect('pending').withIncarnation(TreeIncarnationId.random()),
  });
  const activated = await store.commit(activation, { entries: [{ type: 'activated' }], records: [{ suffix: 'restore', value: '1' }] });
  assert.equal(activated.outcome, 'installed');
  const all = await store.events.entriesAfter(trees.rootId, '0');
  assert.deepEqual(all.map((entry) => entry.fields.type), ['started', 'note', 'effect', 'activated']);
  assert.deepEqual(all.slice(2).map((entry) => entry.id), [...effect.eventIds, ...activated.eventIds]);
  assert.equal(await store.readRecord(trees.rootId, 'restore'), '1');
});

test('redis committer: the kernel CommitContext events land in the event log with the commit (and only then)', async () => {
  const redisStore = committer();
  const store: TreeStore = redisStore; // what the Engine sees
  const trees = fresh();
  const event = (processSequence: bigint, name: (typeof eventNames)[keyof typeof eventNames]) =>
    Event.create({
      processSequence,
      processId: trees.rootId,
      deploymentRef: testDeploymentRef,
      relation: ProcessRelation.root(trees.rootId),
      treeIncarnationId: trees.incarnationId,
      name,
      occurredAt: fixtureStartedAt,
    });
  const started = event(1n, eventNames.processStarted);
  await store.commitCheckpoint(start(trees.running(0)), { events: [started] });
  const paused = event(2n, eventNames.processPaused);
  await assert.rejects(store.commitCheckpoint(progress(3n, trees.running(0), trees.running(1)), { events: [paused] }), isCode('tree_incarnation_conflict'));
  await store.commitCheckpoint(progress(2n, trees.running(0), trees.running(1)), { events: [paused] });
  // Kernel events first, then the host's own entries.
  const receipt = await redisStore.commit(progress(3n, trees.running(1), trees.running(2)), {
    events: [event(3n, eventNames.processResumed)],
    entries: [{ host: 'note' }],
  });
  assert.equal(receipt.eventIds.length, 2);
  const log = await redisStore.events.entriesAfter(trees.rootId, '0');
  assert.deepEqual(
    log.map((entry) => entry.fields.name ?? entry.fields.host),
    ['agent.process.started', 'agent.process.paused', 'agent.process.resumed', 'note'],
  );
  assert.equal(log[0]?.fields.event, started.json());
  assert.equal(Event.parse(log[1]?.fields.event as string).json(), paused.json());
  await assert.rejects(
    redisStore.commit(progress(4n, trees.running(2), trees.running(3)), { events: [{ name: 'x' } as never] }),
    isCode('invalid_commit'),
  );
  // Host values reach the store through the Engine: a write set under hostWritesValueKey is applied
  // with the commit; other host values are ignored; a malformed one is refused before writing.
  const finished = event(4n, eventNames.processPaused);
  await assert.rejects(
    store.commitCheckpoint(progress(4n, trees.running(2), trees.running(3)), { events: [finished], hostValues: { [hostWritesValueKey]: 'nope' } }),
    isCode('invalid_commit'),
  );
  await store.commitCheckpoint(progress(4n, trees.running(2), trees.running(3)), {
    events: [finished],
    hostValues: { [hostWritesValueKey]: { records: [{ suffix: 'idem:req-1', value: '{"status":201}', ttlMs: 60_000 }], entries: [{ host: 'carried' }] }, other: 42 },
  });
  assert.equal(await redisStore.readRecord(trees.rootId, 'idem:req-1'), '{"status":201}');
  const tail = await redisStore.events.entriesAfter(trees.rootId, log.at(-1)?.id);
  assert.deepEqual(tail.map((entry) => entry.fields.name ?? entry.fields.host), ['agent.process.paused', 'carried']);
});

async function hostState(store: RedisTreeCommitter, rootId: ProcessId, suffixes: readonly string[]) {
  return {
    head: await redis.hgetall(headKey(store.keyPrefix, rootId)),
    facts: await redis.hgetall(factsKey(store.keyPrefix, rootId)),
    events: await redis.xlen(eventsKey(store.keyPrefix, rootId)),
    records: await Promise.all(suffixes.map((suffix) => store.readRecord(rootId, suffix))),
  };
}

test('redis committer: a failed compare-and-swap applies none of the host writes', async () => {
  const store = committer();
  const trees = fresh();
  await store.commit(start(trees.running(0)), { entries: [{ type: 'started' }], records: [{ suffix: 'a', value: 'original' }] });
  await store.commitCheckpoint(progress(2n, trees.running(0), trees.running(1)));
  const writes = { entries: [{ type: 'must-not-land' }, { type: 'nor-this' }], records: [{ suffix: 'a', value: 'overwritten' }, { suffix: 'b', value: 'new' }] };
  const before = await hostState(store, trees.rootId, ['a', 'b']);
  assert.deepEqual(before.records, ['original', undefined]);
  const rival = conformanceTrees(trees.rootId, TreeIncarnationId.random());
  const attempts: [string, () => Promise<unknown>][] = [
    ['stale predecessor', () => store.commit(progress(3n, trees.running(0), trees.running(2)), writes)],
    ['skipped sequence', () => store.commit(progress(4n, trees.running(1), trees.running(2)), writes)],
    ['another writer', () => store.commit(progress(3n, trees.running(1), rival.running(2)), writes)],
    ['second start', () => store.commit(start(rival.running(0)), writes)],
    ['stale duplicate', () => store.commit(start(trees.running(0)), writes)],
    ['reused identity', () => store.commit(progress(2n, trees.running(0), trees.running(3)), writes)],
    [
      'activation from a stale head',
      () =>
        store.commit(
          TreeActivation.create({
            previousIncarnationId: trees.incarnationId,
            previousDigest: trees.running(0).digest,
            snapshot: trees.running(1).withIncarnation(TreeIncarnationId.random()),
          }),
          writes,
        ),
    ],
  ];
  for (const [what, attempt] of attempts) {
    await assert.rejects(attempt(), (error) => isCode('tree_incarnation_conflict')(error) || isCode('commit_conflict')(error), what);
    assert.deepEqual(await hostState(store, trees.rootId, ['a', 'b']), before, what);
  }
});

test('redis committer: a malformed write set is refused before anything is written', async () => {
  const store = committer();
  const trees = fresh();
  const bad = [
    { entries: [{}] },
    { entries: [{ type: 1 as unknown as string }] },
    { records: [{ suffix: 'has space', value: 'x' }] },
    { records: [{ suffix: '', value: 'x' }] },
    { records: [{ suffix: 'dup', value: 'x' }, { suffix: 'dup', value: 'y' }] },
    { records: [{ suffix: 'ttl', value: 'x', ttlMs: 0 }] },
    { records: [{ suffix: 'ttl', value: 'x', ttlMs: 1.5 }] },
    { entries: [{ type: 'x', 'scope.prev': '0-1' }] },
    // Only own fields count: an entry whose one field is inherited has none.
    { entries: [Object.create({ type: 'x' }) as Record<string, string>] },
    { entries: [Object.fromEntries(Array.from({ length: 257 }, (_, index) => [`f${index}`, 'x']))] },
    { entries: Array.from({ length: 1025 }, () => ({ type: 'x' })) },
    { records: Array.from({ length: 257 }, (_, index) => ({ suffix: `r${index}`, value: 'x' })) },
  ];
  for (const writes of bad) {
    await assert.rejects(store.commit(start(trees.running(0)), writes), isCode('invalid_commit'), JSON.stringify(writes).slice(0, 80));
  }
  assert.equal(await store.loadTree(trees.rootId), undefined);
  // The script checks its own contract too: the event-log key holding another type aborts the
  // commit before the head changes.
  await redis.set(eventsKey(store.keyPrefix, trees.rootId), 'not a stream');
  await assert.rejects(store.commit(start(trees.running(0)), { entries: [{ type: 'x' }] }), isCode('invalid_commit'));
  assert.equal(await store.loadTree(trees.rootId), undefined);
  assert.equal(await redis.exists(factsKey(store.keyPrefix, trees.rootId)), 0);
});

test('redis committer: reconcile acknowledges only when fact content, sequence and head digest all match', async () => {
  const store = committer();
  const trees = fresh();
  const begin = start(trees.running(0));
  assert.equal(await store.reconcile(begin), false, 'nothing installed yet');
  await store.commitCheckpoint(begin);
  assert.equal(await store.reconcile(begin), true);
  const next = progress(2n, trees.running(0), trees.running(1));
  assert.equal(await store.reconcile(next), false);
  await store.commitCheckpoint(next);
  assert.equal(await store.reconcile(next), true);
  assert.equal(await store.reconcile(begin), false, 'a fact alone never acknowledges after later progress');
  // Same identity, other content.
  assert.equal(await store.reconcile(progress(2n, trees.running(0), trees.running(2))), false);
  // Fact and content match, but the head moved on under a new writer at the same digest bytes? Use activation.
  const activation = TreeActivation.create({
    previousIncarnationId: trees.incarnationId,
    previousDigest: trees.running(1).digest,
    snapshot: trees.running(1).withIncarnation(TreeIncarnationId.random()),
  });
  await store.activateTree(activation);
  assert.equal(await store.reconcile(activation), true);
  assert.equal(await store.reconcile(next), false, 'a new writer makes the old commit history');
  // Sequence mismatch with matching fact and digest: force the stored sequence.
  await redis.hset(headKey(store.keyPrefix, trees.rootId), 'sequence', '5');
  assert.equal(await store.reconcile(activation), false);
});

test('redis committer: purgeTree refuses a live tree, removes a finished one and fences replays', async () => {
  const store = committer();
  const trees = fresh();
  assert.equal(await store.purgeTree(trees.rootId), 'absent');
  const begin = start(trees.running(0));
  await store.commit(begin, { entries: [{ type: 'started' }], records: [{ suffix: 'idem', value: 'v', ttlMs: 60_000 }] });
  await assert.rejects(store.purgeTree(trees.rootId), isCode('tree_live'));
  const waiting = TreeCheckpoint.create({ kind: 'parked', sequence: 2n, previous: trees.running(0).digest, snapshot: trees.waiting() });
  await store.commitCheckpoint(waiting);
  await assert.rejects(store.purgeTree(trees.rootId), isCode('tree_live'), 'a waiting tree is not finished');
  const done = TreeCheckpoint.create({ kind: 'terminal', sequence: 3n, previous: trees.waiting().digest, snapshot: trees.completed() });
  await store.commitCheckpoint(done);
  assert.equal(await store.purgeTree(trees.rootId), 'purged');
  assert.equal(await store.loadTree(trees.rootId), undefined);
  for (const key of [headKey, factsKey, eventsKey, snapshotKey]) assert.equal(await redis.exists(key(store.keyPrefix, trees.rootId)), 0);
  assert.equal(await redis.get(purgedKey(store.keyPrefix, trees.rootId)), trees.completed().digest.toString());
  assert.equal(await store.readRecord(trees.rootId, 'idem'), 'v', 'idempotency records live by their TTL');
  // A replayed start cannot recreate the tree, nor can any advance or activation.
  await assert.rejects(store.commitCheckpoint(begin), isCode('tree_incarnation_conflict'));
  await assert.rejects(store.commitCheckpoint(done), isCode('tree_incarnation_conflict'));
  assert.equal(await store.loadTree(trees.rootId), undefined);
  assert.equal(await store.purgeTree(trees.rootId), 'absent');
});

test('redis committer: purgeTree refuses when the head changes between its check and its script', async () => {
  const store = committer({ purgeTombstoneTtlMs: 60_000 });
  const trees = fresh();
  await store.commitCheckpoint(start(trees.running(0)));
  await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'terminal', sequence: 2n, previous: trees.running(0).digest, snapshot: trees.completed() }));
  // Race an activation in right after purgeTree has read the head: the script's digest check refuses.
  // (The head is read in one MULTI: the activation lands once that transaction has answered.)
  const originalMulti = redis.multi.bind(redis);
  const activation = TreeActivation.create({
    previousIncarnationId: trees.incarnationId,
    previousDigest: trees.completed().digest,
    snapshot: trees.completed().withIncarnation(TreeIncarnationId.random()),
  });
  (redis as unknown as { multi: unknown }).multi = (...args: Parameters<typeof originalMulti>) => {
    (redis as unknown as { multi: unknown }).multi = originalMulti;
    const transaction = originalMulti(...args);
    const exec = transaction.exec.bind(transaction);
    (transaction as unknown as { exec: unknown }).exec = async () => {
      const replies = await exec();
      await store.activateTree(activation);
      return replies;
    };
    return transaction;
  };
  try {
    await assert.rejects(store.purgeTree(trees.rootId), isCode('tree_incarnation_conflict'));
  } finally {
    (redis as unknown as { multi: unknown }).multi = originalMulti;
  }
  assert.equal((await store.loadTree(trees.rootId))?.digest.equals(activation.snapshot.digest), true);
  assert.equal(await store.purgeTree(trees.rootId), 'purged');
  const ttl = await redis.pttl(purgedKey(store.keyPrefix, trees.rootId));
  assert.ok(ttl > 0 && ttl <= 60_000, `tombstone ttl ${ttl}`);
});

test('redis committer: loadTree rejects a stored head whose digest does not match its bytes', async () => {
  const store = committer();
  const trees = fresh();
  await store.commitCheckpoint(start(trees.running(0)));
  await redis.hset(headKey(store.keyPrefix, trees.rootId), 'digest', trees.running(1).digest.toString());
  await assert.rejects(store.loadTree(trees.rootId), isCode('invalid_tree_snapshot'));
});

test('redis committer: options are checked', () => {
  assert.throws(() => new RedisTreeCommitter({ redis, keyPrefix: 'has{brace}' }), TypeError);
  assert.throws(() => new RedisTreeCommitter({ redis, keyPrefix: '' }), TypeError);
  assert.throws(() => new RedisTreeCommitter({ redis, timeoutMs: 0 }), TypeError);
  assert.throws(() => new RedisTreeCommitter({ redis, eventLogMaxLen: 0 }), TypeError);
  assert.throws(() => new RedisTreeCommitter({ redis, purgeTombstoneTtlMs: -1 }), TypeError);
  const prefixed = new Redis(server.port, '127.0.0.1', { keyPrefix: 'x:', lazyConnect: true });
  try {
    assert.throws(() => new RedisTreeCommitter({ redis: prefixed }), /keyPrefix/);
  } finally {
    prefixed.disconnect();
  }
  assert.equal(new RedisTreeCommitter({ redis }).keyPrefix, 'scope');
});

test('redis committer: after close() every call rejects with committer_unavailable', async () => {
  const store = committer();
  await store.close();
  const trees = fresh();
  await assert.rejects(store.commitCheckpoint(start(trees.running(0))), isCode('committer_unavailable'));
  await assert.rejects(store.loadTree(trees.rootId), isCode('committer_unavailable'));
});

test('redis committer: commits of several trees issued within one tick leave in one socket write (group commit), each with its own reply', async () => {
  const store = committer();
  const forest = [fresh(), fresh(), fresh(), fresh()];
  await redis.ping();
  const socket = redis.stream as unknown as { _write: (...args: unknown[]) => unknown; _writev: (...args: unknown[]) => unknown };
  const { _write: write, _writev: writev } = socket;
  let writes = 0;
  socket._write = function (this: unknown, ...args: unknown[]) {
    writes += 1;
    return write.apply(this, args);
  };
  socket._writev = function (this: unknown, ...args: unknown[]) {
    writes += 1;
    return writev.apply(this, args);
  };
  try {
    // As when one read of replies resumes several trees: each continuation commits on its own.
    const receipts = await Promise.all(
      forest.map(async (trees) => {
        await Promise.resolve();
        return store.commit(start(trees.running(0)));
      }),
    );
    assert.equal(writes, 1);
    assert.deepEqual(receipts.map((receipt) => receipt.outcome), ['installed', 'installed', 'installed', 'installed']);
  } finally {
    socket._write = write;
    socket._writev = writev;
  }
  for (const trees of forest) assert.equal((await store.loadTree(trees.rootId))?.digest.equals(trees.running(0).digest), true);
});

test('redis committer: directory members land with the head in the same script, only on an install, and a wrong-typed key refuses the commit', async () => {
  const store = committer();
  const trees = fresh();
  const prefix = store.keyPrefix;
  const root = trees.rootId.toString();
  const members = [
    { key: `${prefix}:roots`, kind: 'zset' as const, member: `000000000000001:${root}` },
    { key: `${prefix}:{node:n1}:trees`, kind: 'set' as const, member: root },
  ];
  // A directory key of the wrong type: refused before anything is written (the head stays absent).
  await redis.set(`${prefix}:{node:n1}:trees`, 'not a set');
  await assert.rejects(store.commit(start(trees.running(0)), { members }), isCode('invalid_commit'));
  assert.equal(await store.loadTree(trees.rootId), undefined);
  assert.equal(await redis.zcard(`${prefix}:roots`), 0, 'nothing was written');
  await redis.del(`${prefix}:{node:n1}:trees`);

  const receipt = await store.commit(start(trees.running(0)), { members });
  assert.equal(receipt.outcome, 'installed');
  assert.deepEqual(await redis.zrange(`${prefix}:roots`, '0', '-1', 'WITHSCORES'), [`000000000000001:${root}`, '0']);
  assert.deepEqual(await redis.smembers(`${prefix}:{node:n1}:trees`), [root]);
  // A refused commit (a second start) adds none of its members.
  const other = { key: `${prefix}:roots`, kind: 'zset' as const, member: 'must-not-land' };
  await assert.rejects(store.commit(start(conformanceTrees(trees.rootId, TreeIncarnationId.random()).running(0)), { members: [other] }), isCode('tree_incarnation_conflict'));
  assert.equal(await redis.zscore(`${prefix}:roots`, 'must-not-land'), null);
});

test('redis committer: a malformed directory member is refused before anything is written', async () => {
  const store = committer();
  const trees = fresh();
  const bad = [
    { members: [{ key: 'elsewhere:roots', kind: 'zset', member: 'm' }] },
    { members: [{ key: `${store.keyPrefix}:roots`, kind: 'list', member: 'm' }] },
    { members: [{ key: `${store.keyPrefix}:roots`, kind: 'zset', member: 7 }] },
    { members: Array.from({ length: 257 }, (_, index) => ({ key: `${store.keyPrefix}:roots`, kind: 'zset', member: String(index) })) },
  ];
  for (const writes of bad) {
    await assert.rejects(store.commit(start(trees.running(0)), writes as never), isCode('invalid_commit'), JSON.stringify(writes).slice(0, 80));
  }
  assert.equal(await store.loadTree(trees.rootId), undefined);
});
