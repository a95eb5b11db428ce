import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { Ownership } from '../../../src/server/ownership/ownership.js';
import { RedisNodeRegistry } from '../../../src/store/redis/node-registry.js';
import { encodeOwner } from '../../../src/server/ownership/owner-record.js';
import { nodeTreesKey, ownerKey } from '../../../src/store/redis/keys.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

/**
 * The node directory lets go of finished trees together: one SREM per batch, not one per tree (a
 * command and a socket write saved per process), and never after a newer entry for the same tree — a
 * tree owned again before its batch left stays listed.
 */

let server: RedisServer;
let redis: Redis;
let prefixes = 0;

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url);
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** A real registry on the test Redis that also records each batch of removals it is asked for. */
class RecordingRegistry extends RedisNodeRegistry {
  readonly removals: string[][] = [];

  override async removeTrees(nodeId: string, roots: readonly string[]): Promise<void> {
    this.removals.push([...roots]);
    await super.removeTrees(nodeId, roots);
  }
}

async function joinedNode(): Promise<{ ownership: Ownership; registry: RecordingRegistry; key: string; own(root: string): Promise<void> }> {
  prefixes += 1;
  const keyPrefix = `dir${process.pid}-${prefixes}`;
  const registry = new RecordingRegistry({ redis, keyPrefix });
  const ownership = new Ownership({
    registry,
    node: { id: 'dir-node', advertiseUrl: undefined, leaseMs: 10_000, renewMs: 2_000 },
    refs: () => [],
    holds: () => false,
    loadHead: async () => undefined,
    isLocal: () => true,
    takeOver: async () => undefined,
  });
  await ownership.join('http://127.0.0.1:9');
  // Owned for real: the owner record names this registration, so the takeover sweep leaves the entry be.
  const own = async (root: string): Promise<void> => {
    await redis.set(ownerKey(keyPrefix, root), encodeOwner({ node: 'dir-node', epoch: ownership.lease.epoch, incarnation: 'incarnation:0' }));
    await ownership.owning(root);
  };
  return { ownership, registry, key: nodeTreesKey(keyPrefix, 'dir-node'), own };
}

test('finished trees leave the directory in one command; reading the nodes view lets the batch go first', async () => {
  const { ownership, registry, key, own } = await joinedNode();
  try {
    for (const root of ['process:a', 'process:b', 'process:c']) await own(root);
    assert.deepEqual((await redis.smembers(key)).sort(), ['process:a', 'process:b', 'process:c']);
    ownership.dropped('process:a');
    ownership.dropped('process:c');
    const [self] = (await ownership.nodes()).filter((node) => node.self);
    assert.equal(self?.trees, 1, 'the view counts only the tree still held');
    assert.deepEqual(await redis.smembers(key), ['process:b']);
    assert.deepEqual(registry.removals, [['process:a', 'process:c']], 'one removal for both');
  } finally {
    await ownership.leave();
  }
});

test('a tree owned again before its removal left stays in the directory', async () => {
  const { ownership, registry, key, own } = await joinedNode();
  try {
    await own('process:kept');
    await own('process:gone');
    ownership.dropped('process:kept');
    ownership.dropped('process:gone');
    // Restored here again (a command landed on it) before the batch left.
    ownership.adopted('process:kept');
    await ownership.nodes();
    assert.deepEqual(await redis.smembers(key), ['process:kept']);
    assert.deepEqual(registry.removals, [['process:gone']]);
    // A removal that has left is not undone by a later entry's absence: the next owning lists it again.
    ownership.dropped('process:kept');
    await ownership.nodes();
    await ownership.owning('process:kept');
    assert.deepEqual(await redis.smembers(key), ['process:kept']);
  } finally {
    await ownership.leave();
  }
});

test('leaving lets the waiting removals go before the lease', async () => {
  const { ownership, key, own } = await joinedNode();
  await own('process:done');
  ownership.dropped('process:done');
  await ownership.leave();
  assert.deepEqual(await redis.smembers(key), []);
});
