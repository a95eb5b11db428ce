import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { KernelError } from '../../../src/kernel/errors.js';
import { luaScripts } from '../../../src/store/redis/scripts.js';
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

test('the start commit writes the node directory entry and the root index in its own script, with the owner record; a purge takes the owner record along', async () => {
  const prefix = freshPrefix();
  // MONITOR is entered before the Host exists: ioredis mistakes a monitor line that arrives with the
  // MONITOR reply for a command's reply ("Command queue state error"), and a Host polls its timers.
  const monitor = await new Redis(server.url, { lazyConnect: true }).monitor();
  const { host, redis } = redisHost({ url: server.url, prefix, joinsCluster: true, env: { SCOPE_NODE_ID: 'ordered', SCOPE_NODE_LEASE_MS: '3000', SCOPE_NODE_RENEW_MS: '500' } });
  try {
    await host.startNode('http://127.0.0.1:9');
    const seen: { args: string[]; source: string }[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => seen.push({ args, source }));
    const view = await start(host, 'demo.echo', { value: 'ordered' });
    // A barrier: the monitor sees this PING after everything the start sent.
    const sawPing = new Promise<void>((resolve) => monitor.on('monitor', (_time: string, args: string[]) => args[0]?.toUpperCase() === 'PING' && resolve()));
    await redis.ping();
    await sawPing;
    const startSha = luaScripts().get('commitCheckpoint')?.sha;
    // EVALSHA, or the EVAL that loads the script on its first use.
    const isStartCommit = (args: string[]) =>
      (args[0]?.toLowerCase() === 'evalsha' && args[1] === startSha) || (args[0]?.toLowerCase() === 'eval' && (args[1] ?? '').includes('commitCheckpoint:'));
    const commit = seen.findIndex(({ args }) => isStartCommit(args) && args.includes(`${prefix}:{${view.processId}}:head`));
    const isDirectoryWrite = (args: string[]) => args[0]?.toLowerCase() === 'sadd' && args[1] === `${prefix}:{node:ordered}:trees` && args[2] === view.processId;
    const directory = seen.findIndex(({ args }) => isDirectoryWrite(args));
    const rootIndex = seen.findIndex(({ args }) => args[0]?.toLowerCase() === 'zadd' && args[1] === `${prefix}:roots` && (args[3] ?? '').endsWith(view.processId));
    assert.ok(directory >= 0 && commit >= 0 && rootIndex >= 0, 'the writes were seen');
    // A node killed right after its start commit must leave the tree findable for a takeover: the
    // entry is written by the commit's script itself, so no reader sees the owner record without it.
    for (const [what, at] of [['the directory entry', directory], ['the root index entry', rootIndex]] as const) {
      assert.ok(at > commit, `${what} (#${at}) is written by the start commit (#${commit})`);
      assert.ok(seen.slice(commit + 1, at + 1).every(({ source }) => source === 'lua'), `${what} is written inside the commit's script`);
    }
    // Written once: no separate write before or after the start.
    assert.equal(seen.filter(({ args }) => isDirectoryWrite(args)).length, 1, 'one directory write per start');

    await host.awaitResult(view.processId, 10_000);
    await host.releaseTree(view.processId, true);
    assert.equal(await redis.get(`${prefix}:{${view.processId}}:record:owner`), null);
  } finally {
    monitor.disconnect();
    await host.close(1_000);
    redis.disconnect();
  }
});

test('a commit that adds children writes their process-directory entries in its own script, once each', async () => {
  const prefix = freshPrefix();
  const monitor = await new Redis(server.url, { lazyConnect: true }).monitor();
  const { host, redis } = redisHost({ url: server.url, prefix });
  try {
    const seen: { args: string[]; source: string }[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => seen.push({ args, source }));
    const parent = await start(host, 'demo.fanout', { values: ['a', 'b', 'c'] });
    await host.awaitResult(parent.processId, 10_000);
    const sawPing = new Promise<void>((resolve) => monitor.on('monitor', (_time: string, args: string[]) => args[0]?.toUpperCase() === 'PING' && resolve()));
    await redis.ping();
    await sawPing;
    const entries = seen.map((line, at) => ({ ...line, at })).filter(({ args }) => args[0]?.toLowerCase() === 'set' && (args[1] ?? '').startsWith(`${prefix}:process-root:`));
    assert.equal(entries.length, 3, 'one entry per child, written once');
    for (const entry of entries) {
      assert.equal(entry.args[2], parent.processId, 'each names the root');
      assert.equal(entry.source, 'lua', 'written by a commit script, not ahead of it');
      // The nearest command a client sent before it is the commit whose script wrote it.
      const sent = seen.slice(0, entry.at).reverse().find(({ source }) => source !== 'lua');
      assert.match(sent?.args[0]?.toLowerCase() ?? '', /^evalsha$|^eval$/);
      assert.ok(sent?.args.includes(`${prefix}:{${parent.processId}}:head`), 'the tree’s commit');
    }
  } finally {
    monitor.disconnect();
    await host.close(1_000);
    redis.disconnect();
  }
});
