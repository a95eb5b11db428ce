import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig, redisTargetOf } from '../../src/server/config.js';
import { clusterSeeds } from '../../src/store/redis/connection.js';

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  assert.fail('the configuration was accepted');
}

test('SCOPE_REDIS_CLUSTER: comma-separated seed URLs make Redis mode on a cluster', () => {
  const config = loadConfig({ SCOPE_REDIS_CLUSTER: 'redis://10.0.0.1:7000, redis://10.0.0.2:7001,,redis://10.0.0.3' });
  assert.equal(config.mode, 'redis');
  assert.equal(config.redisUrl, undefined);
  assert.deepEqual(config.redisCluster, ['redis://10.0.0.1:7000', 'redis://10.0.0.2:7001', 'redis://10.0.0.3']);
  assert.deepEqual(redisTargetOf(config), { cluster: ['redis://10.0.0.1:7000', 'redis://10.0.0.2:7001', 'redis://10.0.0.3'] });
  assert.equal(redisTargetOf(loadConfig({ SCOPE_REDIS_URL: 'redis://127.0.0.1:6390' })), 'redis://127.0.0.1:6390');
  assert.equal(redisTargetOf(loadConfig({})), undefined);
  // The BullMQ transport needs Redis, and a cluster is Redis.
  assert.equal(loadConfig({ SCOPE_REDIS_CLUSTER: 'redis://10.0.0.1:7000', SCOPE_TRANSPORT: 'bullmq' }).transport, 'bullmq');
});

test('SCOPE_REDIS_CLUSTER: bad seeds, a database, mixed credentials and both Redis variables are refused', () => {
  assert.ok(problemsOf({ SCOPE_REDIS_CLUSTER: 'http://10.0.0.1:7000' }).some((problem) => problem.includes('not a redis://')));
  assert.ok(problemsOf({ SCOPE_REDIS_CLUSTER: 'redis://10.0.0.1:7000/2' }).some((problem) => problem.includes('only database 0')));
  assert.ok(problemsOf({ SCOPE_REDIS_CLUSTER: ' , ' }).some((problem) => problem.includes('at least one')));
  assert.ok(problemsOf({ SCOPE_REDIS_CLUSTER: 'redis://:a@10.0.0.1:7000,redis://:b@10.0.0.2:7000' }).some((problem) => problem.includes('same scheme and credentials')));
  assert.ok(problemsOf({ SCOPE_REDIS_CLUSTER: 'redis://10.0.0.1:7000,rediss://10.0.0.2:7000' }).some((problem) => problem.includes('same scheme')));
  assert.ok(problemsOf({ SCOPE_REDIS_CLUSTER: 'redis://10.0.0.1:7000', SCOPE_REDIS_URL: 'redis://10.0.0.1:6379' }).some((problem) => problem.includes('choose one')));
  // A password in a refused seed is not echoed.
  assert.ok(problemsOf({ SCOPE_REDIS_CLUSTER: 'redis://:hunter2@10.0.0.1:7000/3' }).every((problem) => !problem.includes('hunter2')));
});

test('cluster seeds: host, port (6379 when absent), and one set of credentials and TLS for every node', () => {
  const seeds = clusterSeeds(['rediss://user:p%40ss@a.example:7000', 'rediss://user:p%40ss@b.example']);
  assert.deepEqual(seeds.nodes, [
    { host: 'a.example', port: 7000 },
    { host: 'b.example', port: 6379 },
  ]);
  assert.deepEqual(seeds.redisOptions, { username: 'user', password: 'p@ss', tls: {} });
  assert.deepEqual(clusterSeeds(['redis://127.0.0.1:7000']).redisOptions, {});
  assert.throws(() => clusterSeeds([]), TypeError);
});

test('SCOPE_REDIS_WAIT_REPLICAS: off by default; n > 0 waits for n replicas within SCOPE_REDIS_WAIT_TIMEOUT_MS (default 1000)', () => {
  assert.equal(loadConfig({ SCOPE_REDIS_URL: 'redis://127.0.0.1:6390' }).redisWait, undefined);
  assert.equal(loadConfig({ SCOPE_REDIS_URL: 'redis://127.0.0.1:6390', SCOPE_REDIS_WAIT_REPLICAS: '0' }).redisWait, undefined);
  assert.deepEqual(loadConfig({ SCOPE_REDIS_URL: 'redis://127.0.0.1:6390', SCOPE_REDIS_WAIT_REPLICAS: '1' }).redisWait, { replicas: 1, timeoutMs: 1_000 });
  assert.deepEqual(
    loadConfig({ SCOPE_REDIS_CLUSTER: 'redis://127.0.0.1:7000', SCOPE_REDIS_WAIT_REPLICAS: '2', SCOPE_REDIS_WAIT_TIMEOUT_MS: '250' }).redisWait,
    { replicas: 2, timeoutMs: 250 },
  );
  assert.ok(problemsOf({ SCOPE_REDIS_WAIT_REPLICAS: '1' }).some((problem) => problem.includes('needs SCOPE_REDIS_URL')));
  assert.ok(problemsOf({ SCOPE_REDIS_URL: 'redis://127.0.0.1:6390', SCOPE_REDIS_WAIT_REPLICAS: '-1' }).some((problem) => problem.startsWith('SCOPE_REDIS_WAIT_REPLICAS')));
  // The WAIT must end before the 5 s storage deadline of the commit it follows.
  assert.ok(problemsOf({ SCOPE_REDIS_URL: 'redis://127.0.0.1:6390', SCOPE_REDIS_WAIT_REPLICAS: '1', SCOPE_REDIS_WAIT_TIMEOUT_MS: '5000' }).some((problem) => problem.startsWith('SCOPE_REDIS_WAIT_TIMEOUT_MS')));
});
