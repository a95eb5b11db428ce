/**
 * Redis killed and restarted (AOF, fsync always) under a running `scope worker` with a `never`
 * effect in flight: the worker reconnects and serves on, the in-flight attempt is never run twice and
 * ends settled or Unknown. Barriers are facts: log lines, committed events, records in Redis.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { loadDeploymentsModule } from '../../../src/app/deployments-module.js';
import { EngineHost } from '../../../src/server/engine-host.js';
import { RedisEffectAttempts } from '../../../src/store/redis/effect-attempts.js';
import { treeKeyBase } from '../../../src/store/redis/keys.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { effectsOf, freshPrefix, result, start, testConfig } from '../../server/harness.js';
import { ProcessDispatchers } from '../../../src/app/process-dispatchers.js';

let server: RedisServer;
let redis: Redis;
const children = new Set<ChildProcess>();

before(async () => {
  server = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  redis?.disconnect();
  await server?.stop();
});

const module = 'test/fixtures/never-sleep-deployments.ts';
const timing = {
  SCOPE_DEMOS: 'off',
  SCOPE_TRANSPORT_LEASE_MS: '600',
  SCOPE_TRANSPORT_LOCK_MS: '1000',
  SCOPE_TRANSPORT_STALL_MS: '500',
  SCOPE_TRANSPORT_CLAIM_MS: '30000',
};

/** `scope worker` with its log collected; resolves once ready. */
async function spawnWorker(prefix: string): Promise<{ child: ChildProcess; until: (text: string, times?: number) => Promise<void> }> {
  const child = spawn(process.execPath, ['bin/scope.js', 'worker'], {
    env: { ...process.env, SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix, SCOPE_LOG_LEVEL: 'info', SCOPE_DEPLOYMENTS: module, ...timing },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  let output = '';
  let changed = (): void => {};
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    changed();
  });
  const until = (text: string, times = 1) =>
    new Promise<void>((resolve, reject) => {
      changed = () => {
        if (output.split(text).length - 1 >= times) resolve();
      };
      child.once('exit', (code) => reject(new Error(`worker exited (${code}) before saying ${JSON.stringify(text)}: ${output}`)));
      changed();
    });
  await until('scope worker ready');
  return { child, until };
}

async function untilClaimed(prefix: string, rootId: string): Promise<void> {
  for (;;) {
    const keys = await redis.keys(`${treeKeyBase(prefix, rootId)}:attempt:*`);
    const states = await Promise.all(keys.map((key) => redis.hget(key, 'state')));
    if (states.includes('claimed')) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Retries a Host call while the Host's own Redis connection is still coming back. */
async function retrying<T>(call: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if ((error as { code?: string }).code !== 'committer_unavailable' && (error as { code?: string }).code !== 'storage_unavailable') throw error;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

test('bullmq: Redis restarted under a running worker: it reconnects and serves on; the in-flight never effect runs once and ends settled or Unknown', async () => {
  const prefix = freshPrefix();
  const worker = await spawnWorker(prefix);
  const shutdown = new AbortController();
  const deployments = await loadDeploymentsModule(module, { shutdown: shutdown.signal, processes: new ProcessDispatchers() });
  const host = new EngineHost({
    config: testConfig({ SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix, SCOPE_TRANSPORT: 'bullmq', ...timing }),
    defaultMetrics: false,
    deployments,
  });
  const attempts = new RedisEffectAttempts({ redis, keyPrefix: prefix });
  try {
    const root = (await start(host, 'demo.sleep', { ms: 600_000 })).processId;
    await untilClaimed(prefix, root);
    await server.kill('SIGKILL');
    await worker.until('redis connection error');
    await server.restart();
    // The owner kept following its attempt (its client queued and retried); the worker renewed the
    // lease once Redis was back. A cancel now reaches the attempt, which settles or is Unknown.
    await retrying(() => host.control(root, 'cancel', 'after the restart'));
    assert.equal((await result(host, root)).status, 'canceled');
    const [effect] = await effectsOf(host, root);
    assert.ok(effect?.status === 'settled' || effect?.status === 'unknown', JSON.stringify(effect));
    assert.equal(await attempts.executions(root, effect?.effectId as string), 1, 'never executed twice');
    // The worker reconnected its queues: a new effect is claimed and executed there.
    const next = (await retrying(() => start(host, 'demo.sleep', { ms: 1 }))).processId;
    assert.equal((await result(host, next)).status, 'completed');
    const [served] = await effectsOf(host, next);
    assert.equal(await attempts.executions(next, served?.effectId as string), 1);
  } finally {
    shutdown.abort();
    await host.close(2_000);
    worker.child.kill('SIGKILL');
  }
});
