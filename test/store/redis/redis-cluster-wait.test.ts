/**
 * `waitReplicas` on a Redis Cluster with one replica per master: the WAIT goes, in the commit's
 * pipeline, to the master of the tree's slot, so an acknowledged commit is on that master's replica;
 * with one replica dead, exactly the trees of its master are `committer_unavailable` and the others
 * commit on.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { TreeCheckpoint } from '../../../src/kernel/commit.js';
import { KernelError } from '../../../src/kernel/errors.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import { closeRedis, connectRedis, type RedisClient } from '../../../src/store/redis/connection.js';
import { headKey } from '../../../src/store/redis/keys.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { conformanceTrees, type ConformanceTrees } from '../../../src/testing/conformance-trees.js';
import { startRedisCluster, type RedisCluster } from '../../helpers/redis-cluster.js';
import { clusterSlot } from '../../helpers/redis-server.js';

let cluster: RedisCluster;
let redis: RedisClient;
/** The master whose replica the first test killed (its trees have no failover target). */
let orphanedMaster: number | undefined;
/** The master the failover test killed. */
let failedMaster: number | undefined;

before(async () => {
  // A short node timeout, so a dead master is failed over to its replica within a few seconds.
  cluster = await startRedisCluster({ replicas: true, nodeTimeoutMs: 1_000 });
  redis = connectRedis({ cluster: cluster.urls.split(',') });
});

const stores: RedisTreeCommitter[] = [];

/** A committer closed after the file (a WAITing one holds a connection of its own). */
function committer(keyPrefix: string, waitTimeoutMs?: number): RedisTreeCommitter {
  const store = new RedisTreeCommitter({ redis, keyPrefix, ...(waitTimeoutMs === undefined ? {} : { waitReplicas: { replicas: 1, timeoutMs: waitTimeoutMs } }) });
  stores.push(store);
  return store;
}

after(async () => {
  await Promise.all(stores.map((store) => store.close()));
  if (redis !== undefined) await closeRedis(redis, 500);
  await cluster?.stop();
});

/** A direct connection to one node (READONLY on a replica, so it answers reads of its master's slots). */
async function nodeClient(port: number, replica: boolean): Promise<Redis> {
  const client = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  if (replica) await client.call('READONLY');
  return client;
}

/** The master port holding `key`'s slot, as the first live node that answers tells it. */
async function masterOf(key: string): Promise<number> {
  for (const node of cluster.nodes) {
    const client = new Redis(node.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const owners = (await client.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      const slot = clusterSlot(key);
      const range = owners.find(([first, last]) => slot >= first && slot <= last);
      if (range !== undefined) return range[2][1];
    } catch {
      // a killed node: ask the next one
    } finally {
      client.disconnect();
    }
  }
  throw new Error(`no node knows the master of ${key}`);
}

function opening(trees: ConformanceTrees): TreeCheckpoint {
  return TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) });
}

test('redis cluster WAIT: each acknowledged commit is on the replica of its slot\'s master; a dead replica fails only its master\'s trees', async () => {
  // A generous WAIT while every replica is up (a loaded CI machine may be slow to ack), a short one for the failure.
  const store = committer(`cw${process.pid}`, 3_000);
  const impatient = committer(store.keyPrefix, 300);
  const trees = Array.from({ length: 12 }, () => conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random()));
  const masters = new Map<string, number>();
  for (const tree of trees) {
    await store.commitCheckpoint(opening(tree));
    const key = headKey(store.keyPrefix, tree.rootId);
    const master = await masterOf(key);
    masters.set(tree.rootId.toString(), master);
    const replicaPort = cluster.nodes.find((node) => node.masterPort === master)?.port as number;
    const replica = await nodeClient(replicaPort, true);
    try {
      assert.equal(await replica.hget(key, 'digest'), tree.running(0).digest.toString(), `${key} on the replica of ${master}`);
    } finally {
      replica.disconnect();
    }
  }
  assert.ok(new Set(masters.values()).size >= 2, 'the trees span masters');

  const victim = cluster.nodes.find((node) => node.masterPort !== undefined) as { port: number; masterPort: number };
  await cluster.kill(victim.port);
  orphanedMaster = victim.masterPort;
  for (const tree of trees) {
    const next = TreeCheckpoint.create({ kind: 'progress', sequence: 2n, previous: tree.running(0).digest, snapshot: tree.running(1) });
    const onVictim = masters.get(tree.rootId.toString()) === victim.masterPort;
    if (onVictim) {
      await assert.rejects(impatient.commitCheckpoint(next), (error: unknown) => error instanceof KernelError && error.code === 'committer_unavailable' && /0 of 1 replicas/.test(error.message));
    } else {
      await store.commitCheckpoint(next);
    }
  }
});

test('redis cluster WAIT across a failover: every commit acknowledged under WAIT is on the promoted replica', async () => {
  const store = committer(`cf${process.pid}`, 3_000);
  const master = cluster.nodes.find((node) => node.masterPort === undefined && node.port !== orphanedMaster)?.port as number;
  // Trees on that master, each advanced a few commits under WAIT; remember what was acknowledged last.
  const acknowledged = new Map<ConformanceTrees, string>();
  while (acknowledged.size < 4) {
    const tree = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    if ((await masterOf(headKey(store.keyPrefix, tree.rootId))) !== master) continue;
    await store.commitCheckpoint(opening(tree));
    for (let sequence = 2n; sequence <= 4n; sequence += 1n) {
      await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'progress', sequence, previous: tree.running(Number(sequence) - 2).digest, snapshot: tree.running(Number(sequence) - 1) }));
    }
    acknowledged.set(tree, tree.running(3).digest.toString());
  }
  await cluster.kill(master);
  failedMaster = master;
  // The replica is promoted once the others mark the master failed; the client follows the new slot map.
  for (const [tree, digest] of acknowledged) {
    assert.equal(await headAfterFailover(store, tree.rootId), digest, 'the promoted replica holds the last acknowledged commit');
  }
  // The promoted master has no replica of its own: WAIT commits there are refused as unknown, plain ones go on.
  const [tree] = [...acknowledged.keys()] as [ConformanceTrees];
  const next = TreeCheckpoint.create({ kind: 'progress', sequence: 5n, previous: tree.running(3).digest, snapshot: tree.running(4) });
  const impatient = committer(store.keyPrefix, 300);
  await assert.rejects(impatient.commitCheckpoint(next), (error: unknown) => error instanceof KernelError && error.code === 'committer_unavailable');
  const plain = committer(store.keyPrefix);
  await plain.commitCheckpoint(next); // the identical retry, acknowledged without WAIT
  assert.equal((await plain.loadHead(tree.rootId))?.digest, tree.running(4).digest.toString());
});

/** Polls the tree's head through the cluster client until its slot is served again. */
async function headAfterFailover(store: RedisTreeCommitter, rootId: ProcessId): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const head = await store.loadHead(rootId).catch(() => undefined);
    if (head !== undefined) return head.digest;
    assert.ok(Date.now() < deadline, 'no failover within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test('redis cluster without WAIT: a commit acknowledged while the replica is cut off is lost by the failover (the window docs/redis.md describes)', async () => {
  const store = committer(`cl${process.pid}`);
  const master = cluster.nodes.find((node) => node.masterPort === undefined && node.port !== orphanedMaster && node.port !== failedMaster)?.port as number;
  let tree: ConformanceTrees;
  do tree = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  while ((await masterOf(headKey(store.keyPrefix, tree.rootId))) !== master);
  const synced = committer(store.keyPrefix, 3_000);
  await synced.commitCheckpoint(opening(tree)); // surely on the replica
  // Freeze the replica and cut its replication link, so nothing written from now on can reach it; commit.
  const replica = cluster.nodes.find((node) => node.masterPort === master)?.port as number;
  cluster.pause(replica, true);
  try {
    const admin = await nodeClient(master, false);
    try {
      await admin.call('CLIENT', 'KILL', 'TYPE', 'replica');
    } finally {
      admin.disconnect();
    }
    const lost = TreeCheckpoint.create({ kind: 'progress', sequence: 2n, previous: tree.running(0).digest, snapshot: tree.running(1) });
    await store.commitCheckpoint(lost); // acknowledged by the primary alone
    await cluster.kill(master);
  } finally {
    cluster.pause(replica, false);
  }
  assert.equal(await headAfterFailover(store, tree.rootId), tree.running(0).digest.toString(), 'the promoted replica never had the acknowledged commit');
});
