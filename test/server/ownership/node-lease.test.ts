import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { KernelError } from '../../../src/kernel/errors.js';
import { NodeLease } from '../../../src/server/ownership/node-lease.js';
import { RedisNodeRegistry } from '../../../src/store/redis/node-registry.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

/**
 * The node lease judged locally: valid while renewals get through; past `sent + lease - margin` of
 * the last renewal that did, it is not (before the server can expire it), and it comes back only if
 * the server still holds it; a lease gone on the server is lost for good.
 */

let server: RedisServer;
let redis: Redis;
let prefixes = 0;

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

function lease(leaseMs: number, renewMs: number): NodeLease {
  prefixes += 1;
  return new NodeLease({ registry: new RedisNodeRegistry({ redis, keyPrefix: `lease${process.pid}-${prefixes}` }), nodeId: 'n', leaseMs, renewMs });
}

async function until(check: () => boolean, what: string, timeoutMs = 5_000): Promise<number> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return performance.now() - started;
}

test('renewals blocked: the lease lapses locally before the server expires it, and comes back while the server still holds it', async () => {
  const held = lease(3_000, 100);
  await held.join('http://127.0.0.1:1', []);
  try {
    assert.equal(held.state(), 'held');
    held.assertValid();
    // Freeze Redis: renewals hang. The local judgement needs no answer.
    server.pause();
    const blockedAt = performance.now();
    await until(() => held.state() === 'lapsed', 'the local lapse', 6_000);
    const lapsedAfter = performance.now() - blockedAt;
    // Valid for lease - margin (3000 - 600) after the last renewal sent, which was at most one period
    // (100 ms) before the freeze (the upper bound allows for a loaded machine's polling).
    assert.ok(lapsedAfter <= 2_400 + 250, `lapsed ${lapsedAfter} ms after renewals stopped`);
    assert.ok(lapsedAfter >= 2_400 - 100 - 20, `lapsed too early: ${lapsedAfter} ms`);
    assert.equal(held.valid(), false);
    assert.throws(() => held.assertValid(), (error: unknown) => error instanceof KernelError && error.code === 'node_lease_lost');
    server.resume();
    // The server still held it (its TTL had time left): the next renewal makes it valid again.
    await until(() => held.state() === 'held', 'the lease back');
  } finally {
    server.resume();
    held.stop();
  }
});

test('a lease gone on the server (expired or evicted) is lost for good: renewals never revive it', async () => {
  const held = lease(900, 100);
  await held.join('http://127.0.0.1:1', []);
  try {
    const registry = new RedisNodeRegistry({ redis, keyPrefix: `lease${process.pid}-${prefixes}` });
    assert.equal(await registry.dropLease('n'), true);
    await until(() => held.state() === 'lost', 'the loss');
    assert.throws(() => held.assertValid(), /lease is gone/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(held.state(), 'lost');
    assert.equal(await registry.lease('n'), undefined, 'nothing renewed it');
  } finally {
    held.stop();
  }
});
