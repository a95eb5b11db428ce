import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { TreeCheckpoint, type EffectBoundary, type TreeActivation } from '../../src/kernel/commit.js';
import { Engine } from '../../src/kernel/engine.js';
import { Payload } from '../../src/kernel/payload.js';
import type { CommitContext, TreeCommitter } from '../../src/kernel/tree-committer.js';
import { demoDeployments } from '../../src/server/demos.js';
import { RedisHostCommitter } from '../../src/server/redis-host-committer.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { RedisIdempotencyStore } from '../../src/store/redis/idempotency-store.js';
import { processRootKey } from '../../src/store/redis/keys.js';
import { RedisProcessDirectory } from '../../src/store/redis/process-directory.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { RedisRootIndex } from '../../src/store/redis/root-index.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix } from './harness.js';

/**
 * The process directory (`process-root:<child>` → root, how any node finds a child's tree): on
 * standalone Redis a commit that adds children writes their entries in its own script. The host
 * committer takes them for written only once that commit is acknowledged, so a commit that was
 * refused leaves them to the next commit of the same children.
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

/** The checkpoints a real Engine commits (over the memory committer), in order. */
class Recording implements TreeCommitter {
  readonly checkpoints: TreeCheckpoint[] = [];
  readonly #inner = new MemoryTreeCommitter();

  async commitCheckpoint(checkpoint: TreeCheckpoint, _context?: CommitContext): Promise<void> {
    await this.#inner.commitCheckpoint(checkpoint);
    this.checkpoints.push(checkpoint);
  }

  commitEffect(boundary: EffectBoundary, _context?: CommitContext): Promise<void> {
    return this.#inner.commitEffect(boundary);
  }

  activateTree(activation: TreeActivation, _context?: CommitContext): Promise<void> {
    return this.#inner.activateTree(activation);
  }
}

test('a refused commit that adds children leaves their directory entries to the next commit, which writes them', async () => {
  // A real demo.fanout of three: its child_start checkpoint adds the three echo children.
  const recording = new Recording();
  const engine = new Engine({ committer: recording });
  const fanout = demoDeployments().find((deployment) => deployment.ref.name === 'demo.fanout');
  assert.ok(fanout !== undefined);
  const finished = await engine.run(fanout, Payload.encode({ values: ['a', 'b', 'c'] }));
  await engine.close();
  assert.equal(finished.status, 'completed');
  const [opening] = recording.checkpoints;
  const adding = recording.checkpoints.find((checkpoint) => checkpoint.kind === 'child_start');
  assert.ok(opening?.kind === 'start' && adding !== undefined);
  const root = opening.rootId.toString();
  const children = adding.snapshot
    .processSnapshots()
    .map((process) => process.processId.toString())
    .filter((id) => id !== root);
  assert.ok(children.length >= 1, 'the checkpoint adds children');

  // The same commits through a Redis host committer with a process directory (standalone Redis).
  const keyPrefix = freshPrefix();
  const store = new RedisTreeCommitter({ redis, keyPrefix });
  const committer = new RedisHostCommitter({
    store,
    idempotency: new RedisIdempotencyStore({ redis, keyPrefix, committer: store }),
    roots: new RedisRootIndex({ redis, keyPrefix }),
    processes: new RedisProcessDirectory({ redis, keyPrefix }),
  });
  try {
    await committer.commitCheckpoint(opening, { events: [] });
    // One child's directory key holds another type: the script refuses the whole commit before writing.
    const blocked = processRootKey(keyPrefix, children[0] as string);
    await redis.rpush(blocked, 'not a directory entry');
    await assert.rejects(committer.commitCheckpoint(adding, { events: [] }), (error: unknown) => (error as { code?: string }).code === 'invalid_commit');
    for (const child of children.slice(1)) assert.equal(await redis.get(processRootKey(keyPrefix, child)), null, `${child}: nothing was written`);

    // The same commit again, the key repaired: it installs, and writes every child's entry itself.
    await redis.del(blocked);
    await committer.commitCheckpoint(adding, { events: [] });
    for (const child of children) assert.equal(await redis.get(processRootKey(keyPrefix, child)), root, `${child} is found under its root`);
  } finally {
    await store.close();
  }
});
