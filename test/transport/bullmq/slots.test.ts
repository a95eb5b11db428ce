/**
 * Redis Cluster safety of the transport: every transport script receives keys of one slot — the
 * tree's — and every non-BullMQ key the transport touches for a tree carries the tree's hash tag
 * (keys outside any tree: the worker registry only). Observed with MONITOR while an effect goes
 * through claim, lease renewal, settlement, inspection, cancel and a restore's look at earlier attempts.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { EngineHost } from '../../../src/server/engine-host.js';
import { RedisEffectAttempts } from '../../../src/store/redis/effect-attempts.js';
import { transportLuaScripts } from '../../../src/store/redis/scripts.js';
import { workerLiveKey, workerStatusKey } from '../../../src/store/redis/keys.js';
import { RedisWorkerRegistry } from '../../../src/store/redis/worker-registry.js';
import { EffectWorker } from '../../../src/transport/bullmq/effect-worker.js';
import type { EffectJobData } from '../../../src/transport/bullmq/job-data.js';
import { bullPrefixOf, queueNameOf } from '../../../src/transport/bullmq/names.js';
import deployments, { openGate } from '../../fixtures/gated-echo-deployments.js';
import { clusterSlot, hashTagOf, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { effectsOf, result, start, testConfig } from '../../server/harness.js';

let server: RedisServer;
const clients: Redis[] = [];

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  for (const client of clients) client.disconnect();
  await server?.stop();
});

test('transport slots: each script takes the tree’s slot; every non-BullMQ key carries the tree’s hash tag', async () => {
  const prefix = 'slots-transport';
  const redis = new Redis(server.url);
  const monitoring = new Redis(server.url);
  const monitor = await monitoring.monitor();
  clients.push(redis, monitoring, monitor);
  const seen: { source: string; args: string[] }[] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => seen.push({ source, args }));
  const host = new EngineHost({
    config: testConfig({ SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix, SCOPE_TRANSPORT: 'bullmq', SCOPE_DEMOS: 'off' }),
    defaultMetrics: false,
    deployments: deployments(),
  });
  const queue = new Queue(queueNameOf(deployments()[0]!.ref), { connection: redis, prefix: bullPrefixOf(prefix) });
  const attempts = new RedisEffectAttempts({ redis, keyPrefix: prefix });
  const worker = new EffectWorker({ redis, bullConnection: redis, keyPrefix: prefix, deployments: deployments() });
  let root = '';
  try {
    openGate();
    root = (await start(host, 'demo.echo', { value: 'slots' })).processId;
    let job: EffectJobData | undefined;
    while (job === undefined) job = (await queue.getWaiting())[0]?.data as EffectJobData | undefined;
    assert.equal(await worker.run(job), 'executed');
    await result(host, root);
    const [effect] = await effectsOf(host, root);
    const ref = { rootId: root, attemptId: job.attemptId, effectId: effect?.effectId as string };
    // The owner took the settlement from its announcement; inspect as a restored owner would.
    await attempts.inspect(ref);
    await attempts.renew(ref, 'no-such-token', 1_000);
    await attempts.cancel(ref);
    await attempts.prior(root, ref.effectId);
    await new RedisWorkerRegistry({ redis, keyPrefix: prefix }).heartbeat('w', { refs: ['r'], processes: {} }, 1_000);
    const sawPing = new Promise<void>((resolve) => monitor.on('monitor', (_time: string, args: string[]) => args[0]?.toUpperCase() === 'PING' && resolve()));
    await redis.ping();
    await sawPing;
  } finally {
    await queue.close();
    await host.close(500);
    await worker.stop(0);
    monitor.disconnect();
  }

  const transportShas = new Map([...transportLuaScripts().values()].map((script) => [script.sha, script.name]));
  const nameOf = (args: string[]) => transportShas.get(args[1] ?? '') ?? /^--\[\[(?:\\n|\s)+(\w+):/.exec(args[1] ?? '')?.[1];
  const calls = seen.filter((command) => /^eval(sha)?$/i.test(command.args[0] ?? '') && [...transportShas.values()].includes(nameOf(command.args) ?? ''));
  assert.deepEqual([...new Set(calls.map((call) => nameOf(call.args)))].sort(), [...transportShas.values()].sort(), 'every transport script ran');
  const treeSlot = clusterSlot(`{${root}}`);
  for (const call of calls) {
    const keys = call.args.slice(3, 3 + Number(call.args[2]));
    for (const key of keys) assert.equal(clusterSlot(key), treeSlot, `${nameOf(call.args)} receives ${key}`);
  }
  // Every key any command touched under our prefix, BullMQ's own keys aside.
  const bull = `${bullPrefixOf(prefix)}:`;
  const keyed = seen.filter((command) => (command.args[1] ?? '').startsWith(`${prefix}:`) && !/^(eval|evalsha|script|publish|subscribe|monitor)/i.test(command.args[0] ?? ''));
  const treeKeys = keyed.map((command) => command.args[1] as string).filter((key) => !key.startsWith(bull));
  assert.ok(treeKeys.some((key) => key.includes(':attempt:')), 'the attempt records were seen');
  assert.ok(treeKeys.some((key) => key.includes(':inbox:')), 'the inbox was seen');
  for (const key of new Set(treeKeys)) {
    // Cross-tree records by design: the worker registry, the roots, idempotency pointers, and the durable
    // timer index shards the Host's sweeper polls (read whenever a poll falls inside this window).
    const crossTree = [`${prefix}:roots`, `${prefix}:idempotency:`, `${prefix}:timers:`];
    if (key === workerLiveKey(prefix) || key === workerStatusKey(prefix) || crossTree.some((start) => key.startsWith(start))) continue;
    assert.equal(hashTagOf(key), root, `${key} carries the tree's hash tag`);
  }
});
