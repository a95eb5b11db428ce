import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
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

test('running alone, a writer that another writer fenced does not take the tree back', { timeout: 30_000 }, async () => {
  const prefix = freshPrefix();
  // The first Host's log is the barrier: it says when it decided about the fenced tree.
  let decided: () => void = () => undefined;
  const decision = new Promise<void>((resolve) => (decided = resolve));
  const logger = pino({ level: 'warn' }, { write: (line: string) => (line.includes('another writer fenced this tree') ? decided() : undefined) });
  const first = redisHost({ url: server.url, prefix, logger });
  const second = redisHost({ url: server.url, prefix });
  try {
    const pid = (await start(first.host, 'demo.approval', { subject: 'fenced' })).processId;
    await untilSettled(first.host, pid, stepCommittedWith('waiting'));
    const waitId = (await first.host.inspectProcess(pid)).waitId as string;
    await second.host.restoreTree(pid);
    const taken = (await second.host.inspectTree(pid)).incarnationId;
    // The first writer's next commit meets the new incarnation: it stops, and leaves the tree alone.
    await assert.rejects(first.host.deliverSignals(pid, [{ id: 'late', waitId, payload: { approved: false } }]));
    await decision;
    const stored = JSON.parse((await second.host.snapshot(pid)).json) as { incarnation_id: string };
    assert.equal(stored.incarnation_id, taken, 'the head still belongs to the writer that took it');
    await second.host.deliverSignals(pid, [{ id: 'answer', waitId, payload: { approved: true } }]);
    assert.equal((await second.host.awaitResult(pid, 10_000)).done, true);
  } finally {
    await first.host.close(1_000);
    await second.host.close(1_000);
    first.redis.disconnect();
    second.redis.disconnect();
  }
});
