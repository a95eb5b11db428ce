import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { corked } from '../../../src/store/redis/connection.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

// Commands issued together leave in one socket write, in order, with their own replies.

let server: RedisServer;
let redis: Redis;

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.port, '127.0.0.1');
  await redis.ping();
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** Counts the socket's writes (a corked batch reaches `_writev` once; single writes reach `_write`). */
function countWrites(socket: Socket): { writes: () => number; restore: () => void } {
  const internals = socket as unknown as { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void };
  const write = internals._write;
  const writev = internals._writev;
  let writes = 0;
  internals._write = function (this: unknown, ...args: unknown[]) {
    writes += 1;
    return write.apply(this, args);
  };
  internals._writev = function (this: unknown, ...args: unknown[]) {
    writes += 1;
    return writev.apply(this, args);
  };
  return {
    writes: () => writes,
    restore: () => {
      internals._write = write;
      internals._writev = writev;
    },
  };
}

test('commands sent inside corked leave in one write and keep their order and replies', async () => {
  const key = `corked:${process.pid}`;
  const counter = countWrites(redis.stream as Socket);
  try {
    const replies = await corked(redis, () => Promise.all([redis.rpush(key, 'a'), redis.rpush(key, 'b'), redis.lrange(key, 0, -1)]));
    assert.equal(counter.writes(), 1);
    assert.deepEqual(replies, [1, 2, ['a', 'b']]);
    // Outside, each command is its own write.
    await Promise.all([redis.del(key), redis.ping()]);
    assert.equal(counter.writes(), 3);
  } finally {
    counter.restore();
  }
});

test('corked returns what the sender returns and uncorks when the tick ends, even when it throws', async () => {
  assert.equal(corked(redis, () => 42), 42);
  assert.throws(() => corked(redis, () => {
    throw new Error('boom');
  }), /boom/);
  assert.equal((redis.stream as Socket).writableCorked, 1);
  await new Promise((resolve) => process.nextTick(resolve));
  assert.equal((redis.stream as Socket).writableCorked, 0);
  assert.equal(await redis.ping(), 'PONG');
});

test('commands corked in separate continuations of one tick leave in one write (group commit across trees)', async () => {
  const key = `grouped:${process.pid}`;
  const counter = countWrites(redis.stream as Socket);
  try {
    // Like commits of several trees that the replies of one socket read resolve: each continuation
    // issues its own, none waits for the others.
    const replies = await Promise.all(
      ['a', 'b', 'c', 'd'].map(async (value) => {
        await Promise.resolve();
        return corked(redis, () => redis.rpush(key, value));
      }),
    );
    assert.equal(counter.writes(), 1);
    assert.deepEqual(replies, [1, 2, 3, 4]);
    assert.deepEqual(await redis.lrange(key, 0, -1), ['a', 'b', 'c', 'd']);
  } finally {
    counter.restore();
    await redis.del(key);
  }
});
