import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { ProcessId } from '../../src/kernel/identity.js';
import { createBackend } from '../../src/server/backend.js';
import { HostMetrics } from '../../src/server/metrics.js';
import { deltaType } from '../../src/store/event-log.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { testConfig } from './harness.js';

// SCOPE_LOG_APPEND_DELAY_MS reaches the Redis backend's log: 0 sends best-effort entries at the end of
// the turn, a delay holds them for a commit to carry (the committer's own tests cover the carrying).

let server: RedisServer;
let redis: Redis;

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.port, '127.0.0.1');
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** Appends one delta through a Redis backend configured with `delay`; the stream's length after one turn and a round trip. */
async function lengthAfterTurn(delay: string): Promise<{ length: number; elapsedMs: number }> {
  const keyPrefix = `delay${process.pid}x${delay}`;
  const backend = createBackend({
    config: testConfig({ SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: keyPrefix, SCOPE_LOG_APPEND_DELAY_MS: delay }),
    metrics: new HostMetrics({ rootProcesses: async () => 0, residentByStatus: () => new Map(), defaultMetrics: false }),
    redis,
  });
  const root = ProcessId.newRoot().toString();
  const appended = performance.now();
  backend.log.append(root, [{ type: deltaType, processId: root, data: JSON.stringify({ process_id: root }) }]);
  await new Promise((resolve) => setImmediate(resolve));
  // The backend's own client: a flush issued before this command is served before it.
  const length = await redis.xlen(`${keyPrefix}:{${root}}:events`);
  const elapsedMs = performance.now() - appended;
  await backend.close(1_000);
  assert.equal(await redis.xlen(`${keyPrefix}:{${root}}:events`), 1, 'closing the backend sends what waited');
  return { length, elapsedMs };
}

test('SCOPE_LOG_APPEND_DELAY_MS=0: a best-effort entry leaves at the end of its turn', async () => {
  assert.equal((await lengthAfterTurn('0')).length, 1);
});

test('SCOPE_LOG_APPEND_DELAY_MS=10: a best-effort entry still waits after its turn', async () => {
  const { length, elapsedMs } = await lengthAfterTurn('10');
  // Conclusive only when the turn and the round trip took less than the delay (a loaded machine may not).
  if (elapsedMs < 10) assert.equal(length, 0);
});
