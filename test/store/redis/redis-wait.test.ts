/**
 * `waitReplicas` (SCOPE_REDIS_WAIT_REPLICAS) against a real primary + replica: a commit is
 * acknowledged only once the replica holds it; with the replica paused or dead the commit is
 * `committer_unavailable` (it may have landed — never a false success); a refusal stays a refusal;
 * without the option the same commit is acknowledged with the replica behind (the gap docs/redis.md
 * describes).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { TreeCheckpoint } from '../../../src/kernel/commit.js';
import { KernelError } from '../../../src/kernel/errors.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import { headKey } from '../../../src/store/redis/keys.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { conformanceTrees, type ConformanceTrees } from '../../../src/testing/conformance-trees.js';
import { startReplicatedRedis, type ReplicatedRedis } from '../../helpers/redis-replica.js';

let pair: ReplicatedRedis;
let primary: Redis;
let replica: Redis;
let prefixes = 0;
const waitTimeoutMs = 300;

before(async () => {
  pair = await startReplicatedRedis();
  primary = new Redis(pair.primary.port, '127.0.0.1');
  replica = new Redis(pair.replica.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  replica.on('error', () => undefined);
});

const stores: RedisTreeCommitter[] = [];

after(async () => {
  // A WAITing committer holds a connection of its own until it is closed.
  await Promise.all(stores.map((store) => store.close()));
  primary?.disconnect();
  replica?.disconnect();
  await pair?.stop();
});

/**
 * A committer under a fresh prefix (or `prefix`), WAITing for the replica `timeoutMs` (0 = no WAIT).
 * Healthy phases get a generous timeout (a loaded CI machine may be slow to ack), failure phases a short one.
 */
function committer(timeoutMs = 3_000, prefix?: string): RedisTreeCommitter {
  prefixes += 1;
  const store = new RedisTreeCommitter({
    redis: primary,
    keyPrefix: prefix ?? `w${process.pid}-${prefixes}`,
    ...(timeoutMs > 0 ? { waitReplicas: { replicas: 1, timeoutMs } } : {}),
  });
  stores.push(store);
  return store;
}

function fresh(): ConformanceTrees {
  return conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
}

function opening(trees: ConformanceTrees): TreeCheckpoint {
  return TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) });
}

function step(trees: ConformanceTrees, sequence: bigint): TreeCheckpoint {
  return TreeCheckpoint.create({ kind: 'progress', sequence, previous: trees.running(Number(sequence) - 2).digest, snapshot: trees.running(Number(sequence) - 1) });
}

async function rejection(operation: Promise<unknown>): Promise<KernelError> {
  try {
    await operation;
  } catch (error) {
    assert.ok(error instanceof KernelError, String(error));
    return error;
  }
  assert.fail('the commit was acknowledged');
}

test('redis WAIT: an acknowledged commit is already on the replica', async () => {
  const store = committer();
  for (let round = 0; round < 20; round += 1) {
    const trees = fresh();
    const commit = opening(trees);
    await store.commitCheckpoint(commit);
    // No polling: WAIT returned only after the replica acknowledged the script's writes.
    assert.equal(await replica.hget(headKey(store.keyPrefix, trees.rootId), 'digest'), commit.snapshot.digest.toString());
  }
});

test('redis WAIT: with the replica paused, a commit is committer_unavailable (it landed on the primary only); the retry after it resumes is acknowledged', async () => {
  const store = committer();
  const impatient = committer(waitTimeoutMs, store.keyPrefix);
  const trees = fresh();
  await store.commitCheckpoint(opening(trees));
  const next = step(trees, 2n);
  pair.replica.pause();
  try {
    const began = performance.now();
    const error = await rejection(impatient.commitCheckpoint(next));
    assert.equal(error.code, 'committer_unavailable');
    assert.match(error.message, /0 of 1 replicas acknowledged within 300 ms/);
    assert.ok(performance.now() - began >= waitTimeoutMs - 5, 'WAIT waited its timeout');
    // "It may have landed": here it did, on the primary — the caller was told the truth is unknown.
    assert.equal(await primary.hget(headKey(store.keyPrefix, trees.rootId), 'digest'), next.snapshot.digest.toString());
    // A refusal writes nothing, so it needs no replica: a stale proposal is still a conflict.
    const rival = TreeCheckpoint.create({ kind: 'progress', sequence: 2n, previous: trees.running(0).digest, snapshot: trees.running(2) });
    const stale = await rejection(impatient.commitCheckpoint(rival));
    assert.ok(stale.code === 'commit_conflict' || stale.code === 'tree_incarnation_conflict', stale.code);
  } finally {
    pair.replica.resume();
  }
  // The identical retry is acknowledged (a duplicate) once the replica holds it.
  await store.commitCheckpoint(next);
  assert.equal(await replica.hget(headKey(store.keyPrefix, trees.rootId), 'digest'), next.snapshot.digest.toString());
  assert.equal(await store.reconcile(next), true);
});

test('redis WAIT: a commit blocked in WAIT does not hold up reads (it runs on a connection of its own)', async () => {
  const store = committer(1_000);
  const trees = fresh();
  await store.commitCheckpoint(opening(trees));
  pair.replica.pause();
  try {
    const blocked = rejection(store.commitCheckpoint(step(trees, 2n)));
    // While that WAIT holds its connection for a second, the shared one answers at once.
    const began = performance.now();
    assert.ok((await store.loadTree(trees.rootId)) !== undefined);
    assert.ok(performance.now() - began < 500, `a read waited ${(performance.now() - began).toFixed(0)} ms behind the WAIT`);
    assert.equal((await blocked).code, 'committer_unavailable');
  } finally {
    pair.replica.resume();
  }
});

test('redis WAIT off: the same commit with the replica paused is acknowledged while the replica is behind (the loss window)', async () => {
  const store = committer(0);
  const trees = fresh();
  pair.replica.pause();
  try {
    await store.commitCheckpoint(opening(trees));
    assert.equal(await primary.exists(headKey(store.keyPrefix, trees.rootId)), 1);
  } finally {
    pair.replica.resume();
  }
});

test('redis WAIT: with the replica dead, commits and reconcile are committer_unavailable; after its restart they are acknowledged again', async () => {
  const store = committer();
  const impatient = committer(waitTimeoutMs, store.keyPrefix);
  const trees = fresh();
  const first = opening(trees);
  await store.commitCheckpoint(first);
  await pair.replica.kill('SIGKILL');
  try {
    await pair.untilReplicas(0);
    const next = step(trees, 2n);
    assert.equal((await rejection(impatient.commitCheckpoint(next))).code, 'committer_unavailable');
    assert.equal((await rejection(impatient.reconcile(next))).code, 'committer_unavailable');
    // A read-only question with a "no" answer claims nothing, so it needs no replica.
    assert.equal(await impatient.reconcile(first), false);
  } finally {
    await pair.replica.restart();
    await pair.untilReplicas(1);
  }
  await store.commitCheckpoint(step(trees, 2n));
  await store.commitCheckpoint(step(trees, 3n));
  assert.equal(await replica.hget(headKey(store.keyPrefix, trees.rootId), 'digest'), trees.running(2).digest.toString());
});

test('redis WAIT: after SCRIPT FLUSH the commit is sent again with EVAL, and WAIT still follows the write', async () => {
  const store = committer();
  const trees = fresh();
  await store.commitCheckpoint(opening(trees));
  await primary.script('FLUSH');
  const next = step(trees, 2n);
  await store.commitCheckpoint(next);
  assert.equal(await replica.hget(headKey(store.keyPrefix, trees.rootId), 'digest'), next.snapshot.digest.toString());
});

test('redis WAIT: the options are checked (at least one replica, a timeout below the call deadline)', () => {
  assert.throws(() => new RedisTreeCommitter({ redis: primary, waitReplicas: { replicas: 0, timeoutMs: 100 } }), TypeError);
  assert.throws(() => new RedisTreeCommitter({ redis: primary, waitReplicas: { replicas: 1, timeoutMs: 0 } }), TypeError);
  assert.throws(() => new RedisTreeCommitter({ redis: primary, timeoutMs: 1_000, waitReplicas: { replicas: 1, timeoutMs: 1_000 } }), TypeError);
  assert.doesNotThrow(() => new RedisTreeCommitter({ redis: primary, timeoutMs: 1_000, waitReplicas: { replicas: 1, timeoutMs: 999 } }));
});

test('redis WAIT: a committer that waits for replicas orders nothing behind its commits (a first attempt is enqueued only after the acknowledgement); without WAIT its client does', () => {
  assert.equal(committer().orderedClient, undefined, 'a job behind a commit could run while a failover can still lose the commit');
  assert.equal(committer(0).orderedClient, primary);
});
