/**
 * Planning on Redis: a process whose server crashed while an action ran (the world changed, the
 * settlement never committed) is restored on another Host, which replays the pending action under its
 * EffectId; the world answers the replay with its first settlement, so the action takes effect once and
 * the loop carries on from the restored state. With the BullMQ transport the owner-dispatched world
 * serves the process with no worker running.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import type { Dispatcher } from '../../../src/kernel/index.js';
import type { EngineHost } from '../../../src/server/engine-host.js';
import { errandsDefinition, errandsWorld } from '../../../src/server/examples/planning.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { freshPrefix, redisHost, result, start } from '../../server/harness.js';

let server: RedisServer;

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await server?.stop();
});

/** The errands deployment over `dispatcher`, with fixed digests so both Hosts bind the same ref. */
function errandsOver(dispatcher: Dispatcher): Deployment {
  return Deployment.create({
    definition: errandsDefinition({ name: 'test.planning.restore' }),
    dispatcher,
    implementationDigest: Digest.of('test:planning:restore'),
    configurationDigest: Digest.of('test:planning:restore'),
  });
}

test('redis: an action in flight at a crash is replayed on restore, takes effect once, and the plan goes on', async () => {
  const prefix = freshPrefix();
  const world = errandsWorld();
  let applied!: () => void;
  const walked = new Promise<void>((resolve) => (applied = resolve));
  let unblock!: () => void;
  const blocked = new Promise<void>((_resolve, reject) => (unblock = () => reject(new Error('the crashed server never answers'))));
  blocked.catch(() => undefined);
  // The first server walks to the store, then crashes before the settlement commits.
  const stalling: Dispatcher = {
    async dispatch(request, emit, signal) {
      const settlement = await world.dispatch(request, emit, signal);
      if (request.effect.payload.decode<{ action?: string }>().action !== 'walk_to_store') return settlement;
      applied();
      await blocked;
      throw new Error('unreachable');
    },
    replayPolicy: (effect) => world.replayPolicy(effect),
  };
  const crashed = redisHost({ url: server.url, prefix, deployments: [errandsOver(stalling)] });
  const replays: string[] = [];
  const recording: Dispatcher = {
    dispatch(request, emit, signal) {
      replays.push(String(request.effect.payload.decode<{ action?: string; operation: string }>().action ?? 'sense'));
      return world.dispatch(request, emit, signal);
    },
    replayPolicy: (effect) => world.replayPolicy(effect),
  };
  const restored = redisHost({ url: server.url, prefix, deployments: [errandsOver(recording)] });
  const second: EngineHost = restored.host;
  try {
    const { processId } = await start(crashed.host, 'test.planning.restore', { goal: { groceries: true, at: 'home' } });
    await walked;
    crashed.redis.disconnect();

    await second.restoreTree(processId);
    const done = await result(second, processId);
    assert.equal(done.status, 'completed', JSON.stringify(done.failure));
    const output = done.output as unknown as { rounds: { action: string; outcome: string }[] };
    assert.deepEqual(
      output.rounds.map((round) => [round.action, round.outcome]),
      [['drive_to_store', 'failed'], ['walk_to_store', 'confirmed'], ['buy_groceries', 'confirmed'], ['take_bus_home', 'unconfirmed'], ['walk_home', 'confirmed']],
    );
    // The restored Host replayed the pending walk first, and the world answered it from memory: a second
    // walk from the store would have been refused (not applicable), failing the round.
    assert.equal(replays[0], 'walk_to_store');
    assert.equal(replays.filter((operation) => operation === 'walk_to_store').length, 1);
  } finally {
    unblock();
    await second.close(1_000);
    restored.redis.disconnect();
  }
});

test('redis + bullmq: example.planning.errands completes with no worker running (its world is owner-dispatched)', async () => {
  const prefix = freshPrefix();
  const { host, redis } = redisHost({ url: server.url, prefix, env: { SCOPE_TRANSPORT: 'bullmq', SCOPE_TRANSPORT_CLAIM_MS: '2000' } });
  try {
    assert.equal((await host.readiness()).checks['worker:example.planning.errands'], undefined, 'no worker is awaited for it');
    const { processId } = await start(host, 'example.planning.errands', { goal: { groceries: true, at: 'home' } });
    const done = await result(host, processId);
    assert.equal(done.status, 'completed', JSON.stringify(done.failure));
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
});
