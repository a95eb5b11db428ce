import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { ProcessId } from '../../../src/kernel/identity.js';
import { waitIndexShardKey } from '../../../src/store/redis/keys.js';
import { RedisWaitIndex, type WaitIndexEntry } from '../../../src/store/redis/wait-index.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

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

function prefix(): string {
  prefixes += 1;
  return `wi${process.pid}-${prefixes}`;
}

function entry(rootId: string, waitId: string, extra: Partial<WaitIndexEntry> = {}): WaitIndexEntry {
  return { rootId, processId: rootId, waitId, incarnation: 'incarnation:a', sequence: '3', since: '2030-01-01T00:00:00Z', answerSchema: null, description: null, ...extra };
}

test('entries spread over the shard keys by root; each root lives in exactly one shard', async () => {
  const keyPrefix = prefix();
  const index = new RedisWaitIndex({ redis, keyPrefix, shards: 8 });
  const roots = Array.from({ length: 200 }, () => ProcessId.newRoot().toString());
  await index.write(roots.flatMap((root) => [entry(root, 'wait:1'), entry(root, 'wait:2')]));
  const used = new Set(roots.map((root) => index.shardOf(root)));
  assert.equal(used.size, 8, '200 roots use every one of 8 shards');
  for (const root of roots.slice(0, 10)) {
    const fields = await redis.hkeys(waitIndexShardKey(keyPrefix, index.shardOf(root)));
    assert.equal(fields.filter((field) => field.startsWith(`${root} `)).length, 2);
  }
  assert.equal((await index.entries()).length, 400);
  const one = await index.entries(roots[0]);
  assert.deepEqual(one.map((stored) => stored.waitId).sort(), ['wait:1', 'wait:2']);
  // The shard of a root is the same in every process (nodes agree where an entry lives).
  assert.equal(new RedisWaitIndex({ redis, keyPrefix, shards: 8 }).shardOf(roots[0] as string), index.shardOf(roots[0] as string));
});

test('remove is a compare-and-delete: an entry rewritten since it was read survives', async () => {
  const keyPrefix = prefix();
  const index = new RedisWaitIndex({ redis, keyPrefix });
  const root = ProcessId.newRoot().toString();
  await index.write([entry(root, 'wait:old'), entry(root, 'wait:rewritten')]);
  const read = await index.entries(root);
  await index.write([entry(root, 'wait:rewritten', { incarnation: 'incarnation:b', sequence: '7' })]);
  assert.equal(await index.remove(read), 1);
  const left = await index.entries(root);
  assert.deepEqual(left.map((stored) => [stored.waitId, stored.incarnation]), [['wait:rewritten', 'incarnation:b']]);
});

test('writeMissing keeps an existing entry (and its since); forget deletes whatever is there', async () => {
  const keyPrefix = prefix();
  const index = new RedisWaitIndex({ redis, keyPrefix });
  const root = ProcessId.newRoot().toString();
  await index.write([entry(root, 'wait:kept', { since: '2030-01-01T00:00:00Z' })]);
  await index.writeMissing([entry(root, 'wait:kept', { since: '2031-01-01T00:00:00Z' }), entry(root, 'wait:new', { since: '2031-01-01T00:00:00Z' })]);
  const byWait = new Map((await index.entries(root)).map((stored) => [stored.waitId, stored.since]));
  assert.deepEqual(Object.fromEntries(byWait), { 'wait:kept': '2030-01-01T00:00:00Z', 'wait:new': '2031-01-01T00:00:00Z' });
  assert.deepEqual(await index.read([entry(root, 'wait:new'), entry(root, 'wait:absent')]).then((values) => values.map((value) => value !== undefined)), [true, false]);
  await index.forget([entry(root, 'wait:kept'), entry(root, 'wait:new')]);
  assert.equal((await index.entries(root)).length, 0);
});

test('a value that does not parse is skipped, not fatal', async () => {
  const keyPrefix = prefix();
  const index = new RedisWaitIndex({ redis, keyPrefix });
  const root = ProcessId.newRoot().toString();
  await index.write([entry(root, 'wait:good')]);
  await redis.hset(waitIndexShardKey(keyPrefix, index.shardOf(root)), `${root} ${root} wait:bad`, '{not json', 'no-spaces-here', '{}');
  assert.deepEqual((await index.entries()).map((stored) => stored.waitId), ['wait:good']);
});
