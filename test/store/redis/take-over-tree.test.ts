import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { TreeActivation, TreeCheckpoint } from '../../../src/kernel/commit.js';
import { KernelError } from '../../../src/kernel/errors.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import type { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import { headKey, nodeLeaseKey, ownerKey, ownerRecordSuffix } from '../../../src/store/redis/keys.js';
import { RedisNodeRegistry } from '../../../src/store/redis/node-registry.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { conformanceTrees } from '../../../src/testing/conformance-trees.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

/**
 * The ownership scripts against a real Redis: takeOverTree (an activation guarded by the owner
 * record it replaces; the new record lands with the head or not at all), registerNode and
 * renewNodeLease (epochs, server-side expiry, no revival of a lost lease).
 */

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
  return `own${process.pid}-${prefixes}`;
}

const isConflict = (error: unknown) => error instanceof KernelError && error.code === 'tree_incarnation_conflict';

function takeover(head: TreeSnapshot): TreeActivation {
  return TreeActivation.create({ previousIncarnationId: head.incarnationId, previousDigest: head.digest, snapshot: head.withIncarnation(TreeIncarnationId.random()) });
}

function owner(node: string, activation: TreeActivation | TreeSnapshot): { suffix: string; value: string } {
  const incarnation = activation instanceof TreeActivation ? activation.snapshot.incarnationId : activation.incarnationId;
  return { suffix: ownerRecordSuffix, value: JSON.stringify({ node, epoch: 1, incarnation: incarnation.toString() }) };
}

async function startedTree(store: RedisTreeCommitter): Promise<{ head: TreeSnapshot; record: string }> {
  const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  const head = trees.running(0);
  const record = owner('dead', head);
  await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: head }), { records: [record] });
  return { head, record: record.value };
}

test('takeOverTree installs only over the owner record it names, and writes the new one with the head', async () => {
  const store = new RedisTreeCommitter({ redis, keyPrefix: prefix() });
  const { head, record } = await startedTree(store);
  assert.equal(await redis.get(ownerKey(store.keyPrefix, head.rootId)), record);

  const stale = takeover(head);
  await assert.rejects(store.takeOverTree(stale, '{"node":"someone else"}', { records: [owner('b', stale)] }), isConflict);
  await assert.rejects(store.takeOverTree(stale, '', { records: [owner('b', stale)] }), isConflict, "'' means no record, and there is one");
  assert.equal(await redis.get(ownerKey(store.keyPrefix, head.rootId)), record, 'a refused takeover writes nothing');
  assert.equal(await redis.hget(headKey(store.keyPrefix, head.rootId), 'incarnation'), head.incarnationId.toString());

  const won = takeover(head);
  const receipt = await store.takeOverTree(won, record, { records: [owner('a', won)] });
  assert.equal(receipt.outcome, 'installed');
  assert.equal(await redis.get(ownerKey(store.keyPrefix, head.rootId)), owner('a', won).value);
  // A lost reply retried: acknowledged as the same takeover, although the record now names its winner.
  assert.equal((await store.takeOverTree(won, record, { records: [owner('a', won)] })).outcome, 'duplicate');
  // A second takeover from the same stale reading of the record loses, even over the current head.
  await assert.rejects(store.takeOverTree(takeover(won.snapshot), record, { records: [owner('b', won)] }), isConflict);
});

test('takeOverTree: of many concurrent takeovers of one tree exactly one installs (50 rounds)', async () => {
  const store = new RedisTreeCommitter({ redis, keyPrefix: prefix() });
  for (let round = 0; round < 50; round += 1) {
    const { head, record } = await startedTree(store);
    // Some contenders read the head before, some after the winner: the record guard refuses them all.
    const contenders = ['a', 'b', 'c', 'd'].map((node) => {
      const activation = takeover(head);
      return store.takeOverTree(activation, record, { records: [owner(node, activation)] }).then(
        () => node,
        (error: unknown) => {
          if (!isConflict(error)) throw error;
          return undefined;
        },
      );
    });
    const winners = (await Promise.all(contenders)).filter((node) => node !== undefined);
    assert.equal(winners.length, 1, `round ${round}: ${winners.join(', ')}`);
    const stored = JSON.parse((await redis.get(ownerKey(store.keyPrefix, head.rootId))) as string);
    assert.equal(stored.node, winners[0]);
    assert.equal(stored.incarnation, await redis.hget(headKey(store.keyPrefix, head.rootId), 'incarnation'));
  }
});

test('takeOverTree refuses a stale head even with the right owner record', async () => {
  const store = new RedisTreeCommitter({ redis, keyPrefix: prefix() });
  const { head, record } = await startedTree(store);
  const first = takeover(head);
  await store.activateTree(first);
  await assert.rejects(store.takeOverTree(takeover(head), record, { records: [owner('b', head)] }), isConflict);
});

test('node leases: a registration is a new epoch; the lease expires on the server; a lost lease is never renewed', async () => {
  const keyPrefix = prefix();
  const registry = new RedisNodeRegistry({ redis, keyPrefix });
  const first = await registry.register('n1', 'http://127.0.0.1:1', ['demo.echo+sha256:00'], 300);
  assert.equal(await registry.renew('n1', first, 300), true);
  const lease = await registry.lease('n1');
  assert.equal(lease?.epoch, first);
  assert.equal(lease?.url, 'http://127.0.0.1:1');
  assert.deepEqual(lease?.refs, ['demo.echo+sha256:00']);
  assert.ok((lease?.ttlMs ?? 0) > 0 && (lease?.ttlMs ?? 0) <= 300);

  // A restart under the same id: the old epoch's renewals fail from now on.
  const second = await registry.register('n1', 'http://127.0.0.1:2', [], 300);
  assert.equal(second, first + 1);
  assert.equal(await registry.renew('n1', first, 300), false);
  assert.equal(await registry.renew('n1', second, 300), true);

  // Expiry on the server (no renewal): gone, and not revived by a late renewal.
  const deadline = Date.now() + 5_000;
  while ((await redis.exists(nodeLeaseKey(keyPrefix, 'n1'))) === 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(await registry.lease('n1'), undefined);
  assert.equal(await registry.renew('n1', second, 300), false);
  assert.equal(await redis.exists(nodeLeaseKey(keyPrefix, 'n1')), 0);
  assert.deepEqual(await registry.nodeIds(), ['n1']);
});
