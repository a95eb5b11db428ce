/**
 * The Redis store on a real 3-master Redis Cluster: the committer conformance suite, the demo flows
 * through a Host (committer, event logs and their tails, idempotency, root index), and the facts that
 * make it work — a tree's keys in one slot, trees spread over every master, scripts found on every
 * master even after SCRIPT FLUSH.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TreeCheckpoint } from '../../../src/kernel/commit.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import { EngineHost } from '../../../src/server/engine-host.js';
import { closeRedis, connectRedis, isCluster, masterConnections, pingRedis, type RedisClient } from '../../../src/store/redis/connection.js';
import { eventsKey, headKey } from '../../../src/store/redis/keys.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { RedisStreamSlots } from '../../../src/store/redis/stream-slots.js';
import { KernelError } from '../../../src/kernel/errors.js';
import { runTreeCommitterConformance } from '../../../src/testing/committer-conformance.js';
import { conformanceTrees } from '../../../src/testing/conformance-trees.js';
import { startRedisCluster, type RedisCluster } from '../../helpers/redis-cluster.js';
import { clusterSlot } from '../../helpers/redis-server.js';
import { demoFlows } from '../../server/demo-flows.js';
import { freshPrefix, start, result, testConfig } from '../../server/harness.js';

let cluster: RedisCluster;
let redis: RedisClient;
let prefixes = 0;

before(async () => {
  cluster = await startRedisCluster();
  redis = connectRedis({ cluster: cluster.urls.split(',') });
});

after(async () => {
  if (redis !== undefined) await closeRedis(redis, 500);
  await cluster?.stop();
});

function committer(): RedisTreeCommitter {
  prefixes += 1;
  return new RedisTreeCommitter({ redis, keyPrefix: `c${process.pid}-${prefixes}` });
}

runTreeCommitterConformance('redis cluster committer:', () => committer());

demoFlows('redis cluster', {
  make: () => new EngineHost({ config: testConfig({ SCOPE_REDIS_CLUSTER: cluster.urls, SCOPE_KEY_PREFIX: freshPrefix() }), defaultMetrics: false }),
});

test('redis cluster: the client is a Cluster, every master answers, and trees spread over all of them', async () => {
  assert.ok(isCluster(redis));
  assert.equal(await pingRedis(redis, 2_000), 'ok');
  const masters = await masterConnections(redis);
  assert.equal(masters.length, 3);
  const store = committer();
  // A queue's keys live in another slot, maybe on another master: nothing is ordered behind a commit.
  assert.equal(store.orderedClient, undefined, 'no first attempt is enqueued behind a commit on a cluster');
  const roots = Array.from({ length: 24 }, () => ProcessId.newRoot());
  for (const rootId of roots) {
    const trees = conformanceTrees(rootId, TreeIncarnationId.random());
    await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }));
  }
  // Each head lives on exactly one master, the one owning its slot; 24 random roots reach all three.
  const holders = new Set<string>();
  for (const rootId of roots) {
    const key = headKey(store.keyPrefix, rootId);
    assert.equal(clusterSlot(key), clusterSlot(eventsKey(store.keyPrefix, rootId)), 'one slot per tree');
    // Asked per node by slot (a key command to a node that does not own it would answer MOVED).
    const counts = await Promise.all(masters.map(async (node) => Number(await node.call('CLUSTER', 'COUNTKEYSINSLOT', String(clusterSlot(key))))));
    const found = masters.filter((_node, index) => (counts[index] as number) > 0).map((node) => String(node.options.port));
    assert.equal(found.length, 1, `${key} on ${found.join(',')}`);
    holders.add(found[0] as string);
    assert.ok((await store.loadTree(rootId)) !== undefined);
  }
  assert.equal(holders.size, 3, 'the trees are spread over every master');
});

test('redis cluster: a SCRIPT FLUSH on every master is survived (EVALSHA falls back to EVAL per node)', async () => {
  const store = committer();
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const opening = TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) });
  await store.commitCheckpoint(opening);
  for (const node of await masterConnections(redis)) await node.script('FLUSH');
  const next = TreeCheckpoint.create({ kind: 'progress', sequence: 2n, previous: opening.snapshot.digest, snapshot: trees.running(1) });
  await store.commitCheckpoint(next);
  assert.equal((await store.loadTree(trees.rootId))?.digest.toString(), next.snapshot.digest.toString());
});

test('redis cluster: a Host started with SCOPE_REDIS_CLUSTER lists roots held on different masters', async () => {
  const host = new EngineHost({ config: testConfig({ SCOPE_REDIS_CLUSTER: cluster.urls, SCOPE_KEY_PREFIX: freshPrefix() }), defaultMetrics: false });
  try {
    const ids: string[] = [];
    for (let index = 0; index < 6; index += 1) ids.push((await start(host, 'demo.echo', { value: `v${index}` })).processId);
    for (const id of ids) assert.equal((await result(host, id)).status, 'completed');
    const listed = await host.listProcesses({ limit: 100 });
    assert.deepEqual(new Set(listed.items.map((view) => view.processId)), new Set(ids));
  } finally {
    await host.close(2_000);
  }
});

test('redis cluster: idempotent starts racing on two Hosts give one process per key (pointer and record on different masters)', async () => {
  const prefix = freshPrefix();
  const hosts = [0, 1].map(() => new EngineHost({ config: testConfig({ SCOPE_REDIS_CLUSTER: cluster.urls, SCOPE_KEY_PREFIX: prefix }), defaultMetrics: false }));
  try {
    for (let round = 0; round < 10; round += 1) {
      const request = { deployment: 'demo.approval', input: { subject: `round ${round}` } };
      const settled = await Promise.allSettled(hosts.map((host) => host.startProcess(request, `cluster-race-${round}`)));
      const ids = new Set<string>();
      let created = 0;
      for (const [index, outcome] of settled.entries()) {
        if (outcome.status === 'fulfilled') {
          ids.add(outcome.value.process.processId);
          if (outcome.value.created) created += 1;
          continue;
        }
        assert.ok(outcome.reason instanceof KernelError && outcome.reason.code === 'idempotency_key_in_progress', String(outcome.reason));
        const retry = await (hosts[index] as EngineHost).startProcess(request, `cluster-race-${round}`);
        assert.equal(retry.created, false);
        ids.add(retry.process.processId);
      }
      assert.equal(created, 1, `round ${round}`);
      assert.equal(ids.size, 1, `round ${round}: ${[...ids].join(', ')}`);
    }
  } finally {
    await Promise.all(hosts.map((host) => host.close(2_000)));
  }
});

test('redis cluster: stream slots count one API key across two nodes', async () => {
  const prefix = freshPrefix();
  const [a, b] = [new RedisStreamSlots(redis, { keyPrefix: prefix }), new RedisStreamSlots(redis, { keyPrefix: prefix })] as const;
  try {
    const first = await a.acquire('key-1', 2);
    const second = await b.acquire('key-1', 2);
    assert.ok(first !== undefined && second !== undefined);
    assert.equal(await a.acquire('key-1', 2), undefined, 'the cap holds across nodes');
    assert.ok((await b.acquire('key-2', 2)) !== undefined, 'another key has its own count');
    first.release();
    const deadline = Date.now() + 5_000;
    let again = await b.acquire('key-1', 2);
    while (again === undefined && Date.now() < deadline) again = await b.acquire('key-1', 2);
    assert.ok(again !== undefined, 'a released slot is free again');
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
