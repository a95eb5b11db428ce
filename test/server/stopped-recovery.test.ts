import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix, redisHost, start, stepCommittedWith, untilEntry, untilSettled } from './harness.js';

/**
 * A runtime whose commit failed (storage too slow: here every write paused past the storage deadline)
 * stops, and the Host restores the tree from its head by itself once storage answers again — no
 * command needed: a tree with work never waits for someone to poke it.
 */

let server: RedisServer;

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await server?.stop();
});

test('a stopped runtime is restored from the head without a command once storage answers again', { timeout: 30_000 }, async () => {
  const prefix = freshPrefix();
  const { host, redis } = redisHost({ url: server.url, prefix, storageTimeoutMs: 300 });
  const admin = new Redis(server.url);
  try {
    const pid = (await start(host, 'demo.approval', { subject: 'stalled' })).processId;
    await untilSettled(host, pid, stepCommittedWith('waiting'));
    const waitId = (await host.inspectProcess(pid)).waitId as string;
    const answer = [{ id: 'answer', waitId, payload: { approved: true } }];

    // Barrier, armed first: the restore's committed event. Nobody will send a command.
    const restored = untilEntry(host, pid, (entry) => entry.type === 'agent.process.restored');
    await untilEntry(host, pid, stepCommittedWith('waiting'));
    // Writes stall for 1.5 s: the answer's commit misses its 300 ms deadline and the writer stops.
    await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE');
    await assert.rejects(host.deliverSignals(pid, answer), (error: unknown) => (error as { code?: string }).code === 'committer_unavailable' || (error as { code?: string }).code === 'runtime_stopped');
    assert.equal((await host.inspectTree(pid)).stopped, true);

    await restored;
    await untilSettled(host, pid, (entry) => entry.type === 'agent.process.restored');
    assert.equal((await host.inspectTree(pid)).stopped, false);
    // The answer's fate was unknown to the caller: sent again by its id, it is admitted exactly once.
    await host.deliverSignals(pid, answer);
    const done = await host.awaitResult(pid, 10_000);
    assert.ok(done.done);
    assert.equal(done.result.status, 'completed');
    assert.equal((await host.signals(pid, {})).items.filter((receipt) => receipt.id === 'answer').length, 1);
  } finally {
    await host.close(1_000);
    redis.disconnect();
    admin.disconnect();
  }
});
