/**
 * docs/your-own-deployment.md runs as written: the page shows test/fixtures/greeting-deployments.ts
 * byte for byte, and that module runs embedded, then in Redis mode with the Effect executed by a
 * real `scope worker` process loading the same module (SCOPE_DEPLOYMENTS on both sides).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { loadDeploymentsModule } from '../../src/app/deployments-module.js';
import { ProcessDispatchers } from '../../src/app/process-dispatchers.js';
import { EngineHost } from '../../src/server/engine-host.js';
import { RedisEffectAttempts } from '../../src/store/redis/effect-attempts.js';
import { treeKeyBase } from '../../src/store/redis/keys.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { effectsOf, freshPrefix, result, start, testConfig } from '../server/harness.js';

const module = 'test/fixtures/greeting-deployments.ts';
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

test('walkthrough: the page shows the fixture module exactly', () => {
  const page = readFileSync('docs/your-own-deployment.md', 'utf8');
  const block = /```ts\n([\s\S]*?)```/.exec(page)?.[1];
  assert.equal(block, readFileSync(module, 'utf8'));
});

test('walkthrough: the module runs embedded', async () => {
  const shutdown = new AbortController();
  const host = new EngineHost({ config: testConfig({ SCOPE_DEMOS: 'off' }), defaultMetrics: false, deployments: await loadDeploymentsModule(module, { shutdown: shutdown.signal, processes: new ProcessDispatchers() }) });
  try {
    const started = await start(host, 'example.greet', { name: 'Ada' });
    const outcome = await result(host, started.processId);
    assert.equal(outcome.status, 'completed');
    assert.deepEqual(outcome.output, { greeting: 'Hello, Ada!' });
  } finally {
    shutdown.abort();
    await host.close(1_000);
  }
});

test('walkthrough: the module runs with Redis and a scope worker executing its Effect', async () => {
  const prefix = freshPrefix();
  const env = { SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix, SCOPE_DEMOS: 'off', SCOPE_DEPLOYMENTS: module };
  const worker: ChildProcess = spawn(process.execPath, ['bin/scope.js', 'worker'], { env: { ...process.env, ...env, SCOPE_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'inherit'] });
  const shutdown = new AbortController();
  let host: EngineHost | undefined;
  try {
    let output = '';
    await new Promise<void>((resolve, reject) => {
      worker.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('scope worker ready')) resolve();
      });
      worker.once('exit', (code) => reject(new Error(`worker exited (${code}): ${output}`)));
    });
    host = new EngineHost({
      config: testConfig({ ...env, SCOPE_TRANSPORT: 'bullmq' }),
      defaultMetrics: false,
      deployments: await loadDeploymentsModule(module, { shutdown: shutdown.signal, processes: new ProcessDispatchers() }),
    });
    assert.equal((await host.readiness()).checks['worker:example.greet'], 'ok');
    const started = await start(host, 'example.greet', { name: 'Grace' });
    assert.deepEqual((await result(host, started.processId)).output, { greeting: 'Hello, Grace!' });
    const [key] = await redis.keys(`${treeKeyBase(prefix, started.processId)}:attempt:*`);
    const worked = await redis.hget(key as string, 'worker');
    assert.equal(Number(worked?.split(':')[1]), worker.pid, 'the worker process executed the Effect');
    const [effect] = await effectsOf(host, started.processId);
    assert.equal(await new RedisEffectAttempts({ redis, keyPrefix: prefix }).executions(started.processId, effect?.effectId as string), 1);
  } finally {
    shutdown.abort();
    await host?.close(1_000);
    worker.kill('SIGTERM');
    if (worker.exitCode === null) await once(worker, 'exit');
  }
});
