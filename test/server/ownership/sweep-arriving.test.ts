import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { TreeActivation, TreeCheckpoint } from '../../../src/kernel/commit.js';
import { Digest } from '../../../src/kernel/digest.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import { Ownership } from '../../../src/server/ownership/ownership.js';
import { RedisHostCommitter } from '../../../src/server/redis-host-committer.js';
import { RedisIdempotencyStore } from '../../../src/store/redis/idempotency-store.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { RedisRootIndex } from '../../../src/store/redis/root-index.js';
import { conformanceTrees } from '../../../src/testing/conformance-trees.js';
import { encodeOwner } from '../../../src/server/ownership/owner-record.js';
import { RedisNodeRegistry } from '../../../src/store/redis/node-registry.js';
import { nodeTreesKey, ownerKey } from '../../../src/store/redis/keys.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

/**
 * A takeover (and, on a Redis Cluster, a start) writes the node directory entry before the commit
 * that writes the owner record. The sweep a node runs over its own directory right after joining must not take that
 * window for "the tree moved on" and drop the entry: a node that then died would leave a live tree
 * nobody finds to take over. This race failed `join.test.ts` in CI and, with the commit delayed a
 * little more, the SIGTERM drain e2e test.
 */

let server: RedisServer;
let redis: Redis;

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url);
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** A real registry whose sweeps can be held at their start: the first waits for `release`, the second reports that the first is over. */
class GatedRegistry extends RedisNodeRegistry {
  #calls = 0;
  #release!: () => void;
  readonly #released = new Promise<void>((resolve) => (this.#release = resolve));
  #firstOver!: () => void;
  readonly firstSweepOver = new Promise<void>((resolve) => (this.#firstOver = resolve));

  release(): void {
    this.#release();
  }

  override async nodeIds(): Promise<string[]> {
    this.#calls += 1;
    if (this.#calls === 1) await this.#released;
    if (this.#calls === 2) this.#firstOver();
    return super.nodeIds();
  }
}

/** A node on a real registry whose first sweep waits for `registry.release()`. */
function gatedNode(keyPrefix: string, nodeId: string): { ownership: Ownership; registry: GatedRegistry; key: string } {
  const registry = new GatedRegistry({ redis, keyPrefix });
  const ownership = new Ownership({
    registry,
    node: { id: nodeId, advertiseUrl: undefined, leaseMs: 10_000, renewMs: 20 },
    refs: () => [],
    holds: () => false,
    loadHead: async () => undefined,
    isLocal: () => false,
    takeOver: async () => undefined,
  });
  return { ownership, registry, key: nodeTreesKey(keyPrefix, nodeId) };
}

test('the join sweep keeps the directory entry of a start whose commit is still in flight, and drops stale ones', async () => {
  const keyPrefix = `arriving${process.pid}`;
  const { ownership, registry, key } = gatedNode(keyPrefix, 'arriving-node');
  try {
    await ownership.join('http://127.0.0.1:9');
    // A stale entry: its start never committed (no owner record), and nothing is arriving for it.
    await redis.sadd(key, 'process:stale');
    // A start in flight: the directory entry is written, the commit with the owner record not yet.
    await ownership.owning('process:starting');
    // A takeover in flight: the record still names the node it is taken from.
    await redis.set(ownerKey(keyPrefix, 'process:taken'), encodeOwner({ node: 'dead-node', epoch: 3, incarnation: 'incarnation:0' }));
    await ownership.owning('process:taken');
    registry.release();
    await registry.firstSweepOver;
    assert.deepEqual((await redis.smembers(key)).sort(), ['process:starting', 'process:taken'], 'the sweep dropped only the stale entry');
  } finally {
    await ownership.leave();
  }
});

test('arrived counts: a window closes with its arrival, and two overlapping windows for one root only with the second', async () => {
  const { ownership, registry, key } = gatedNode(`arriving${process.pid}-count`, 'counting-node');
  try {
    await ownership.join('http://127.0.0.1:9');
    // Neither commit left an owner record (both failed): once its window is closed, an entry is stale.
    await ownership.owning('process:once');
    ownership.arrived('process:once');
    await ownership.owning('process:twice');
    await ownership.owning('process:twice');
    ownership.arrived('process:twice');
    registry.release();
    await registry.firstSweepOver;
    assert.deepEqual(await redis.smembers(key), ['process:twice'], 'the closed window\'s entry went; the one still open stayed');
  } finally {
    await ownership.leave();
  }
});

test('the host committer closes an activation\'s window when its commit is over, refused included', async () => {
  const keyPrefix = `arriving${process.pid}-activation`;
  const { ownership, registry, key } = gatedNode(keyPrefix, 'activating-node');
  const store = new RedisTreeCommitter({ redis, keyPrefix });
  const committer = new RedisHostCommitter({
    store,
    idempotency: new RedisIdempotencyStore({ redis, keyPrefix, committer: store }),
    roots: new RedisRootIndex({ redis, keyPrefix }),
  });
  committer.setOwnership(ownership);
  try {
    await ownership.join('http://127.0.0.1:9');
    // A tree another writer started; this node restores it from a head that has moved on since it read it.
    const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    const root = trees.rootId.toString();
    await store.commit(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }));
    const stale = TreeActivation.create({
      previousIncarnationId: trees.incarnationId,
      previousDigest: Digest.of('a head this node read before it moved on'),
      snapshot: conformanceTrees(trees.rootId, TreeIncarnationId.random()).running(0),
    });
    await assert.rejects(committer.activateTree(stale, { events: [] }), (error: unknown) => (error as { code?: string }).code === 'tree_incarnation_conflict');
    // Its directory entry was written before the commit; the commit installed nothing, so the entry is
    // stale — and with the window closed, the sweep sees that.
    assert.deepEqual(await redis.smembers(key), [root]);
    registry.release();
    await registry.firstSweepOver;
    assert.deepEqual(await redis.smembers(key), [], 'the sweep dropped the entry of the refused activation');
  } finally {
    await ownership.leave();
    await store.close();
  }
});
