import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { Ownership } from '../../../src/server/ownership/ownership.js';
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
