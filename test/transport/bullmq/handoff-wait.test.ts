/**
 * The first attempt goes right behind its pending boundary's commit only where Redis orders the two:
 * under SCOPE_REDIS_WAIT_REPLICAS a commit counts once its replicas hold it, and a job enqueued before
 * that could run an effect whose pending boundary a failover then loses. A real primary with one
 * replica; the replica is stopped (SIGSTOP) between the start commit and the pending boundary's, so
 * that commit's WAIT cannot finish until the test lets the replica go on.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { headKey } from '../../../src/store/redis/keys.js';
import { EngineHost } from '../../../src/server/engine-host.js';
import { EffectWorker } from '../../../src/transport/bullmq/effect-worker.js';
import type { EffectJobData } from '../../../src/transport/bullmq/job-data.js';
import { bullPrefixOf, queueNameOf } from '../../../src/transport/bullmq/names.js';
import deployments, { closeGate, openGate } from '../../fixtures/gated-echo-deployments.js';
import { startReplicatedRedis, type ReplicatedRedis } from '../../helpers/redis-replica.js';
import { freshPrefix, result, start, testConfig } from '../../server/harness.js';

let pair: ReplicatedRedis;
let redis: Redis;

before(async () => {
  pair = await startReplicatedRedis();
  redis = new Redis(pair.primary.url);
});

after(async () => {
  closeGate();
  redis?.disconnect();
  await pair?.stop();
});

test('WAIT on: a first attempt is enqueued only after its pending boundary is acknowledged by the replica, never behind the commit', async () => {
  const prefix = freshPrefix();
  const [deployment] = deployments();
  const queue = new Queue(queueNameOf(deployment!.ref), { connection: redis, prefix: bullPrefixOf(prefix) });
  const worker = new EffectWorker({ redis, bullConnection: redis, keyPrefix: prefix, deployments: deployments() });
  const published: { name: string; processId: string }[] = [];
  let armed = false;
  let root: string | undefined;
  const owner = new EngineHost({
    config: testConfig({
      SCOPE_REDIS_URL: pair.primary.url,
      SCOPE_KEY_PREFIX: prefix,
      SCOPE_TRANSPORT: 'bullmq',
      SCOPE_DEMOS: 'off',
      SCOPE_REDIS_WAIT_REPLICAS: '1',
      SCOPE_REDIS_WAIT_TIMEOUT_MS: '4000',
      SCOPE_TRANSPORT_CLAIM_MS: '60000',
    }),
    defaultMetrics: false,
    deployments: deployments(),
    observeEvent: (event) => {
      published.push({ name: event.name, processId: event.processId.toString() });
      // Published once the start commit is acknowledged, before the Step that declares the effect:
      // the replica stops here, synchronously, so the pending boundary's WAIT is left waiting.
      if (armed && event.name === 'agent.process.started') {
        armed = false;
        root = event.processId.toString();
        pair.replica.pause();
      }
    },
  });
  const waitingFor = async (rootId: string): Promise<EffectJobData | undefined> =>
    (await queue.getWaiting()).map((job) => job.data as EffectJobData).find((data) => data.rootId === rootId);
  /** Polls until `read` answers, failing (instead of hanging) after 10 s. */
  const until = async <T>(what: string, read: () => Promise<T | undefined>): Promise<T> => {
    const deadline = performance.now() + 10_000;
    for (;;) {
      const value = await read();
      if (value !== undefined) return value;
      assert.ok(performance.now() < deadline, `not within 10 s: ${what}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  try {
    // A first dispatch makes the owner listen for settlements: from then on it could hand off.
    openGate();
    const warm = (await start(owner, 'demo.echo', { value: 'warm' })).processId;
    assert.equal(await worker.run(await until('the warm-up job', () => waitingFor(warm))), 'executed');
    await result(owner, warm);

    armed = true;
    const started = owner.startProcess({ deployment: 'demo.echo', input: { value: 'replicated first' } });
    const target = await until('the start commit', async () => root);
    // The pending boundary's script has run on the primary (sequence 2), its WAIT is still open.
    await until('the pending boundary on the primary', async () => ((await redis.hget(headKey(prefix, target), 'sequence')) === '2' ? true : undefined));
    await redis.ping(); // one more round trip: a job sent with the commit would have reached the primary by now
    assert.equal(await waitingFor(target), undefined, 'no job for an attempt whose pending boundary the replica does not hold yet');
    assert.equal(published.some((event) => event.processId === target && event.name === 'agent.effect.started'), false);

    pair.replica.resume();
    await started;
    const job = await until('the job once the replica holds the boundary', () => waitingFor(target));
    assert.ok(
      published.some((event) => event.processId === target && event.name === 'agent.effect.started'),
      'the attempt is enqueued after the owner saw its pending boundary acknowledged',
    );
    assert.equal(await worker.run(job), 'executed');
    assert.deepEqual((await result(owner, target)).output, { value: 'replicated first' });
  } finally {
    pair.replica.resume();
    await owner.close(500);
    await queue.close();
  }
});
