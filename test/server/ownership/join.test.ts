import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { KernelError } from '../../../src/kernel/errors.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { freshPrefix, redisHost, start } from '../harness.js';

/**
 * A Host that will join (what `scope serve` builds) changes no tree until it has joined: a start
 * before the join would write no owner record, and any node could then take the tree from it.
 * Once joined, the start commit carries the owner record.
 */

let server: RedisServer;

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await server?.stop();
});

const isLeaseLost = (error: unknown) => error instanceof KernelError && error.code === 'node_lease_lost' && /not joined/.test(error.message);

test('before the join: starts are node_lease_lost and readiness says unjoined; after it: the start writes the owner record', async () => {
  const prefix = freshPrefix();
  const { host, redis } = redisHost({ url: server.url, prefix, joinsCluster: true, env: { SCOPE_NODE_ID: 'joining', SCOPE_NODE_LEASE_MS: '3000', SCOPE_NODE_RENEW_MS: '500' } });
  try {
    await assert.rejects(host.startProcess({ deployment: 'demo.echo', input: { value: 1 } }), isLeaseLost);
    const before = await host.readiness();
    assert.equal(before.ready, false);
    assert.equal(before.checks.node, 'lease unjoined');

    await host.startNode('http://127.0.0.1:9');
    assert.equal((await host.readiness()).checks.node, 'ok');
    const view = await start(host, 'demo.approval', { subject: 'joined' });
    const record = JSON.parse((await redis.get(`${prefix}:{${view.processId}}:record:owner`)) as string);
    assert.equal(record.node, 'joining');
    assert.equal(record.epoch, 1);
    assert.equal(record.incarnation, (await host.inspectTree(view.processId)).incarnationId);
    assert.deepEqual(await redis.smembers(`${prefix}:{node:joining}:trees`), [view.processId]);
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
});

test('a Host that never joins runs alone: no owner record, no lease, commands as before', async () => {
  const prefix = freshPrefix();
  const { host, redis } = redisHost({ url: server.url, prefix });
  try {
    const view = await start(host, 'demo.echo', { value: 'alone' });
    assert.equal(await redis.get(`${prefix}:{${view.processId}}:record:owner`), null);
    assert.equal((await host.readiness()).checks.node, undefined);
    assert.deepEqual(await redis.keys(`${prefix}:{node:*`), []);
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
});
