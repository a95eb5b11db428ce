import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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

/** A Redis backend configured with `delay`, a fresh root, and the length of its event stream. */
function backendWith(delay: string) {
  const keyPrefix = `delay${process.pid}x${delay}`;
  const backend = createBackend({
    config: testConfig({ SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: keyPrefix, SCOPE_LOG_APPEND_DELAY_MS: delay }),
    metrics: new HostMetrics({ rootProcesses: async () => 0, residentByStatus: () => new Map(), defaultMetrics: false }),
    redis,
  });
  const root = ProcessId.newRoot().toString();
  return {
    backend,
    append: () => backend.log.append(root, [{ type: deltaType, processId: root, data: JSON.stringify({ process_id: root }) }]),
    // The backend's own client: a flush issued before this command is served before it.
    length: () => redis.xlen(`${keyPrefix}:{${root}}:events`),
  };
}

const endOfTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('SCOPE_LOG_APPEND_DELAY_MS=0: a best-effort entry leaves at the end of its turn', async () => {
  const { backend, append, length } = backendWith('0');
  append();
  await endOfTurn();
  assert.equal(await length(), 1);
  await backend.close(1_000);
});

test('SCOPE_LOG_APPEND_DELAY_MS=10: a best-effort entry waits 10 ms (mocked clock), and closing the backend sends what waits', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const first = backendWith('10');
  first.append();
  await endOfTurn();
  assert.equal(await first.length(), 0, 'still waiting after its turn');
  t.mock.timers.tick(9);
  assert.equal(await first.length(), 0, 'still waiting at 9 ms');
  t.mock.timers.tick(1);
  assert.equal(await first.length(), 1, 'sent at 10 ms');
  await first.backend.close(1_000);

  const second = backendWith('10');
  second.append();
  await endOfTurn();
  assert.equal(await second.length(), 0);
  await second.backend.close(1_000);
  assert.equal(await second.length(), 1, 'closing the backend sends what waited');
});
