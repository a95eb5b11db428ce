import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { buildApp } from '../../src/app/app.js';
import { FaultLatch } from '../../src/server/fault-latch.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix, redisHost, start, stepCommittedWith, untilEntry, untilSettled } from './harness.js';

/**
 * Fail-secure on persistence faults (issue 16): a tree whose commit failed latches the first cause
 * (`fault` on GET /v1/trees/{rootId}), refuses input with 503 `runtime_stopped` and the next step,
 * wakes its long polls with that error at once, keeps serving reads, and recovers only through a
 * restore — a new incarnation — which the Host attempts by itself once Redis takes writes again.
 */

let server: RedisServer;

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await server?.stop();
});

interface Fault {
  code: string;
  message: string;
  since: string;
  incarnationId: string;
}

test('a failed commit latches the first fault: input 503 runtime_stopped, long polls woken, reads served; Redis back → a restore clears it', { timeout: 60_000 }, async () => {
  // Barrier: the Host's log says when a restore attempt failed (a second failure, while the fault is latched).
  let attemptFailed: () => void = () => undefined;
  const failedAttempt = new Promise<void>((resolve) => (attemptFailed = resolve));
  const logger = pino({ level: 'debug' }, { write: (line: string) => (line.includes('could not be restored yet') ? attemptFailed() : undefined) });
  const { host, redis } = redisHost({ url: server.url, prefix: freshPrefix(), storageTimeoutMs: 300, logger });
  const app = await buildApp({ host });
  const admin = new Redis(server.url);
  try {
    const pid = (await start(host, 'demo.approval', { subject: 'fault' })).processId;
    await untilSettled(host, pid, stepCommittedWith('waiting'));
    const waitId = (await host.inspectProcess(pid)).waitId as string;
    const path = encodeURIComponent(pid);
    const before = (await app.inject({ method: 'GET', url: `/v1/trees/${path}` })).json() as { incarnationId: string; fault: Fault | null };
    assert.equal(before.fault, null);

    // A long poll on the result, pending before anything fails.
    const polled = app.inject({ method: 'GET', url: `/v1/processes/${path}/result?waitMs=30000` });
    const restored = untilEntry(host, pid, (entry) => entry.type === 'agent.process.restored');
    // Writes stall for 2.5 s: the answer's commit misses its 300 ms deadline, and so do the first restore attempts.
    await admin.call('CLIENT', 'PAUSE', '2500', 'WRITE');
    const answer = { signals: [{ id: 'answer', waitId, payload: { approved: true } }] };
    const failed = await app.inject({ method: 'POST', url: `/v1/processes/${path}/signals`, payload: answer });
    assert.equal(failed.statusCode, 503, failed.body);
    const failedAt = performance.now();

    // The long poll woke with the fault at once, not at its 30 s timeout.
    const woken = await polled;
    assert.ok(performance.now() - failedAt < 1_000, 'the long poll woke promptly');
    assert.equal(woken.statusCode, 503, woken.body);
    assert.equal(woken.json().code, 'runtime_stopped');
    assert.match(woken.json().detail, /restores the tree from its stored head by itself/, 'the poll ends with the latched fault and its next step');
    assert.match(woken.json().detail, /no reply within 300 ms/, 'in the stopped runtime\'s own words');

    // The tree shows its fault; reads are served (from memory: Redis still holds this connection's writes).
    const tree = await app.inject({ method: 'GET', url: `/v1/trees/${path}` });
    assert.equal(tree.statusCode, 200);
    const fault = (tree.json() as { fault: Fault | null }).fault;
    assert.ok(fault !== null, 'the fault is shown');
    assert.equal(fault.code, 'engine.tree.committer_failed');
    assert.equal(fault.incarnationId, before.incarnationId);
    assert.match(fault.message, /\S/);
    assert.equal((await app.inject({ method: 'GET', url: `/v1/processes/${path}` })).statusCode, 200);

    // New input is refused with the fault and what to do next.
    const refused = await app.inject({ method: 'POST', url: `/v1/processes/${path}/signals`, payload: { signals: [{ id: 'other', waitId, payload: { approved: false } }] } });
    assert.equal(refused.statusCode, 503);
    assert.equal(refused.json().code, 'runtime_stopped');
    assert.equal(refused.headers['retry-after'], '1');
    assert.match(refused.json().detail, /nothing of this request was recorded/);
    assert.match(refused.json().detail, new RegExp(`POST /v1/trees/${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/restore`));
    const paused = await app.inject({ method: 'POST', url: `/v1/processes/${path}/pause`, payload: {} });
    assert.equal(paused.statusCode, 503);
    assert.equal(paused.json().code, 'runtime_stopped');

    // A later failure (an automatic restore attempt, still refused by Redis) keeps the first cause.
    await failedAttempt;
    assert.deepEqual(((await app.inject({ method: 'GET', url: `/v1/trees/${path}` })).json() as { fault: Fault }).fault, fault);

    // Redis takes writes again: the Host restores the tree by itself, under a new incarnation, and the fault is gone.
    await restored;
    await untilSettled(host, pid, (entry) => entry.type === 'agent.process.restored');
    const after = (await app.inject({ method: 'GET', url: `/v1/trees/${path}` })).json() as { incarnationId: string; stopped: boolean; fault: Fault | null };
    assert.equal(after.fault, null);
    assert.equal(after.stopped, false);
    assert.notEqual(after.incarnationId, before.incarnationId);
    // The answer's fate was unknown to the caller: sent again by its id, it completes the process.
    assert.equal((await app.inject({ method: 'POST', url: `/v1/processes/${path}/signals`, payload: answer })).statusCode, 200);
    const done = await app.inject({ method: 'GET', url: `/v1/processes/${path}/result?waitMs=10000` });
    assert.equal(done.statusCode, 200, done.body);
    assert.equal(done.json().status, 'completed');
  } finally {
    await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
    await app.close();
    redis.disconnect();
    admin.disconnect();
  }
});

test('the latch keeps the first cause; a restore clears it; a fenced writer is no fault', async () => {
  const latch = new FaultLatch();
  const tripped = { code: 'engine.tree.committer_failed', message: 'engine.tree.committer_failed', since: '2030-01-01T00:00:00.000Z', incarnationId: 'i1' };
  const first = { ...tripped, message: 'storage timed out' };
  const { signal, release } = latch.wakeOnFault('root');
  assert.equal(latch.trip('root', tripped, () => 'storage timed out'), true);
  assert.ok(latch.refusal('root'), 'refused from the trip on');
  // Sleepers wake once the stopped runtime's own words are in.
  await Promise.resolve();
  assert.equal(signal.aborted, true);
  assert.equal((signal.reason as { code: string }).code, 'runtime_stopped');
  assert.match((signal.reason as Error).message, /storage timed out/);
  release();
  assert.equal(latch.trip('root', { ...first, message: 'later', since: '2030-01-01T00:00:01.000Z', incarnationId: 'i2' }), false);
  assert.deepEqual(latch.get('root'), first);
  latch.clear('root');
  assert.equal(latch.refusal('root'), undefined);
  assert.equal(latch.trip('other', { ...first, code: 'engine.tree.incarnation_conflict' }), false);
});

test('another host\'s long poll on the tree wakes with the owner\'s fault; a writer fenced by a restore wakes none', { timeout: 60_000 }, async () => {
  const prefix = freshPrefix();
  const owner = redisHost({ url: server.url, prefix, storageTimeoutMs: 300 });
  const other = redisHost({ url: server.url, prefix });
  const admin = new Redis(server.url);
  try {
    // A fault: the owner's commit misses its deadline; the other host's poll waits on the tree's log.
    const pid = (await start(owner.host, 'demo.approval', { subject: 'fault elsewhere' })).processId;
    await untilSettled(owner.host, pid, stepCommittedWith('waiting'));
    const waitId = (await owner.host.inspectProcess(pid)).waitId as string;
    const poll = other.host.awaitResult(pid, 30_000);
    // Barrier: the poll follows the tree's log (the other host's shared tail blocks in XREAD) before writes stall.
    for (;;) {
      if (((await admin.call('CLIENT', 'LIST')) as string).includes('cmd=xread')) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await admin.call('CLIENT', 'PAUSE', '1500', 'WRITE');
    await assert.rejects(owner.host.deliverSignals(pid, [{ id: 'answer', waitId, payload: { approved: true } }]));
    await assert.rejects(poll, (error: unknown) => (error as { code?: string }).code === 'runtime_stopped' && /because a commit failed \(engine\./.test((error as Error).message));

    // No fault: a restore on the other host fences the owner, whose next commit stops its writer.
    const fenced = (await start(owner.host, 'demo.approval', { subject: 'fenced' })).processId;
    await untilSettled(owner.host, fenced, stepCommittedWith('waiting'));
    const fencedWait = (await owner.host.inspectProcess(fenced)).waitId as string;
    const third = redisHost({ url: server.url, prefix });
    try {
      const stopped = untilEntry(third.host, fenced, (entry) => entry.type === 'agent.runtime.stopped');
      const quiet = third.host.awaitResult(fenced, 3_000);
      await other.host.restoreTree(fenced);
      await assert.rejects(owner.host.deliverSignals(fenced, [{ id: 'late', waitId: fencedWait, payload: { approved: false } }]));
      await stopped;
      const answer = await quiet;
      assert.equal(answer.done, false, 'the poll ran to its time: a fenced writer is not the tree\'s fault');
    } finally {
      await third.host.close(1_000);
      third.redis.disconnect();
    }
  } finally {
    await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
    await owner.host.close(1_000);
    await other.host.close(1_000);
    owner.redis.disconnect();
    other.redis.disconnect();
    admin.disconnect();
  }
});
