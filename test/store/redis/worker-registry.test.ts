/**
 * The worker registry on a real Redis (src/store/redis/worker-registry.ts, lua/workers/): what a
 * heartbeat publishes is what `live()` reads back; an entry past its TTL (Redis clock) drops out and
 * a later heartbeat removes its status; the keys expire once every worker is silent; one slot.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { workerLiveKey, workerStatusKey } from '../../../src/store/redis/keys.js';
import { luaScript, workerLuaScripts } from '../../../src/store/redis/scripts.js';
import { RedisWorkerRegistry, type WorkerStatus } from '../../../src/store/redis/worker-registry.js';
import { clusterSlot, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { eventually } from '../../plugins/sse-harness.js';
import { freshPrefix } from '../../server/harness.js';

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

const shout: WorkerStatus = {
  refs: ['a'.repeat(64), 'b'.repeat(64)],
  processes: {
    ['a'.repeat(64)]: [{ key: 'shout', command: 'node', resolvable: true, lastStart: 'started', generations: [{ serial: 2, state: 'live', leases: 1, current: true }] }],
  },
};

test('worker registry: a heartbeat publishes the worker\'s refs and process keys; leave removes it at once', async () => {
  const prefix = freshPrefix();
  const registry = new RedisWorkerRegistry({ redis, keyPrefix: prefix });
  await registry.heartbeat('w1', shout, 60_000);
  await registry.heartbeat('w2', { refs: ['a'.repeat(64)], processes: {} }, 60_000);
  const live = await registry.live();
  assert.deepEqual(
    live.sort((x, y) => x.workerId.localeCompare(y.workerId)),
    [
      { workerId: 'w1', ...shout },
      { workerId: 'w2', refs: ['a'.repeat(64)], processes: {} },
    ],
  );
  assert.deepEqual([...RedisWorkerRegistry.counts(live)].sort(), [['a'.repeat(64), 2], ['b'.repeat(64), 1]]);
  // A later heartbeat replaces the worker's status (one entry per worker, however often it changes).
  await registry.heartbeat('w1', { refs: ['b'.repeat(64)], processes: {} }, 60_000);
  assert.deepEqual((await registry.live()).find((worker) => worker.workerId === 'w1')?.refs, ['b'.repeat(64)]);
  assert.equal(await redis.zcard(workerLiveKey(prefix)), 2);
  await registry.leave('w1');
  assert.deepEqual((await registry.live()).map((worker) => worker.workerId), ['w2']);
  assert.deepEqual(await redis.hkeys(workerStatusKey(prefix)), ['w2'], 'its status went with it');
});

test('worker registry: a silent worker drops out after its TTL; the next heartbeat clears its status; the keys expire with the last worker', async () => {
  const prefix = freshPrefix();
  const registry = new RedisWorkerRegistry({ redis, keyPrefix: prefix });
  await registry.heartbeat('dead', shout, 150);
  await registry.heartbeat('alive', { refs: [], processes: {} }, 60_000);
  assert.deepEqual((await registry.live()).map((worker) => worker.workerId).sort(), ['alive', 'dead']);
  await eventually(async () => !(await registry.live()).some((worker) => worker.workerId === 'dead'), 'the silent worker to drop out');
  assert.deepEqual((await redis.hkeys(workerStatusKey(prefix))).sort(), ['alive', 'dead'], 'reads never write: the status waits for a heartbeat');
  await registry.heartbeat('alive', { refs: [], processes: {} }, 60_000);
  assert.deepEqual(await redis.hkeys(workerStatusKey(prefix)), ['alive']);
  assert.deepEqual(await redis.zrange(workerLiveKey(prefix), '0', '-1'), ['alive']);
  for (const key of [workerLiveKey(prefix), workerStatusKey(prefix)]) {
    const ttl = await redis.pttl(key);
    assert.ok(ttl > 0 && ttl <= 60_000, `${key} expires with its longest-lived worker (${ttl})`);
  }
  // With every worker silent, the whole registry goes.
  const lone = freshPrefix();
  await new RedisWorkerRegistry({ redis, keyPrefix: lone }).heartbeat('w', shout, 100);
  await eventually(async () => (await redis.exists(workerLiveKey(lone), workerStatusKey(lone))) === 0, 'the registry keys to expire');
});

test('worker registry: a status it cannot read serves nothing (readiness never counts an unreadable worker)', async () => {
  const prefix = freshPrefix();
  const registry = new RedisWorkerRegistry({ redis, keyPrefix: prefix });
  await registry.heartbeat('w', shout, 60_000);
  for (const damaged of ['not json', '{"refs":"x","processes":{}}', JSON.stringify({ refs: ['a'], processes: { a: [{ key: 'k', command: 'c', resolvable: 'yes', generations: [] }] } })]) {
    await redis.hset(workerStatusKey(prefix), 'w', damaged);
    assert.deepEqual(await registry.live(), [{ workerId: 'w', refs: [], processes: {} }], damaged);
  }
});

test('worker registry scripts: documented headers, both keys in the registry\'s own slot, nothing else touched', async () => {
  const directory = new URL('../../../src/store/redis/lua/workers/', import.meta.url);
  const files = readdirSync(directory).filter((file) => file.endsWith('.lua')).sort();
  assert.deepEqual(files, ['workerBeat-2.lua', 'workerLeave-2.lua', 'workersLive-2.lua']);
  for (const file of files) {
    const name = file.replace(/-\d+\.lua$/, '');
    const header = /^--\[\[([\s\S]*?)\]\]/.exec(readFileSync(new URL(file, directory), 'utf8'))?.[1] ?? '';
    assert.match(header, new RegExp(`^\\s*${name}: `), `${file} header names the command`);
    for (const section of ['Input:', 'Output', 'KEYS[1]', 'KEYS[2]']) assert.ok(header.includes(section), `${file} header has ${section}`);
    assert.equal(luaScript(name).numKeys, 2);
  }
  assert.deepEqual([...workerLuaScripts().keys()].sort(), ['workerBeat', 'workerLeave', 'workersLive']);

  const prefix = freshPrefix();
  assert.equal(clusterSlot(workerLiveKey(prefix)), clusterSlot(workerStatusKey(prefix)));
  const registry = new RedisWorkerRegistry({ redis, keyPrefix: prefix });
  const monitoring = new Redis(server.url);
  const monitor = await monitoring.monitor();
  const seen: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => seen.push(args));
  try {
    await registry.heartbeat('old', shout, 1);
    await eventually(async () => (await registry.live()).length === 0, 'the old entry to expire');
    await registry.heartbeat('w', shout, 60_000);
    await registry.live();
    await registry.leave('w');
    const sawPing = new Promise<void>((resolve) => monitor.on('monitor', (_time: string, args: string[]) => args[0]?.toUpperCase() === 'PING' && resolve()));
    await redis.ping();
    await sawPing;
  } finally {
    monitor.disconnect();
    monitoring.disconnect();
  }
  const registryKeys = new Set([workerLiveKey(prefix), workerStatusKey(prefix)]);
  const touched = seen.filter((args) => args.some((arg) => arg.startsWith(`${prefix}:`)));
  assert.ok(touched.length > 5);
  for (const args of touched) {
    for (const arg of args.filter((value) => value.startsWith(`${prefix}:`))) assert.ok(registryKeys.has(arg), `${args[0]} touches only the registry: ${arg}`);
  }
});
