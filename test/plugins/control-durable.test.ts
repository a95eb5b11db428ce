import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { ProcessId } from '../../src/kernel/identity.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { isSettled } from '../kernel/engine/harness.js';
import { expectProblem, resultOf, start, startServer, until, type TestServer } from './server.js';

/**
 * Issue 10, fix 4, over HTTP in Redis mode: a control's 202 is sent only once the intent is in the
 * authoritative head — read straight from Redis, on a connection of its own, right after the 202 —
 * and storage that cannot take the commit is 503 `committer_unavailable`.
 */

let redis: RedisServer;
let server: TestServer;
let head: RedisTreeCommitter;
let reader: Redis;
const prefix = `control-durable${process.pid}`;

before(async () => {
  // AOF with fsync always: the head written before the SIGKILL is still there after the restart.
  redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
  server = await startServer({ env: { SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: prefix } });
  reader = new Redis(redis.url);
  reader.on('error', () => {});
  head = new RedisTreeCommitter({ redis: reader, keyPrefix: prefix });
});
after(async () => {
  reader?.disconnect();
  await server?.close();
  await redis?.stop();
});

const view = (id: string) => server.client.GET('/v1/processes/{id}', { params: { path: { id } } });
const control = (id: string, action: 'pause' | 'cancel' | 'kill', reason: string) =>
  server.client.POST(`/v1/processes/{id}/${action}`, { params: { path: { id } }, body: { reason } });
const storedRoot = async (id: string) => (await head.loadTree(ProcessId.parse(id)))?.root;

test('pause during a dispatch: the 202 comes after the head records the pending pause', async () => {
  const { processId } = await start(server, 'demo.sleep', { ms: 60_000 });
  await until(() => view(processId), (r) => r.data?.work === 'dispatch');
  const pause = await control(processId, 'pause', 'hold on');
  assert.equal(pause.response.status, 202);
  const root = await storedRoot(processId);
  assert.equal(root?.status, 'running', 'the in-flight Effect settles before the pause applies');
  assert.equal(root?.pendingControl.pauseReason, 'hold on');
  await control(processId, 'kill', 'cleanup');
});

for (const action of ['cancel', 'kill'] as const) {
  test(`${action} during a dispatch: the 202 comes after the head records the intent`, async () => {
    const { processId } = await start(server, 'demo.sleep', { ms: 60_000 });
    await until(() => view(processId), (r) => r.data?.work === 'dispatch');
    assert.equal((await control(processId, action, 'operator')).response.status, 202);
    const root = await storedRoot(processId);
    // Either still settling with the intent recorded, or already ended by it: never without it.
    const recorded = action === 'cancel' ? root?.pendingControl.cancellation?.reason : root?.pendingControl.killReason;
    assert.ok(recorded === 'operator' || root?.termination?.reason === 'operator', `the head holds the ${action}: ${root?.json()}`);
    assert.equal((await resultOf(server, processId)).status, action === 'cancel' ? 'canceled' : 'killed');
  });
}

for (const action of ['pause', 'cancel', 'kill'] as const) {
  test(`${action} while Redis holds the commit (SIGSTOP): no 202 until the commit is acknowledged`, async () => {
    const { processId } = await start(server, 'demo.approval', { subject: `held ${action}` });
    await until(() => view(processId), (r) => r.data?.status === 'waiting');
    redis.pause();
    let answered: Awaited<ReturnType<typeof control>>;
    try {
      const pending = control(processId, action, 'operator');
      // The intent's commit is in flight (the tree view is served from memory) ...
      await until(() => server.client.GET('/v1/trees/{rootId}', { params: { path: { rootId: processId } } }), (r) => r.data?.commitPending === true);
      // ... and the control has not been answered.
      assert.equal(await isSettled(pending), false, 'a 202 before the commit acknowledged nothing durable');
      redis.resume();
      answered = await pending;
    } finally {
      redis.resume();
    }
    assert.equal(answered.response.status, 202);
    assert.equal((await storedRoot(processId))?.status, action === 'pause' ? 'paused' : action === 'cancel' ? 'canceled' : 'killed');
  });
}

test('storage down at cancel: 503 committer_unavailable, and no 202 was ever sent', async () => {
  const { processId } = await start(server, 'demo.approval', { subject: 'storage down' });
  await until(() => view(processId), (r) => r.data?.status === 'waiting');
  await redis.kill('SIGKILL');
  try {
    expectProblem(await control(processId, 'cancel', 'operator'), 503, 'committer_unavailable');
  } finally {
    await redis.restart();
  }
  // The head never took the cancellation. The stopped writer is restored from it (by the Host on its
  // own, or by this command joining that restore): the next control is acknowledged once committed.
  assert.equal((await storedRoot(processId))?.status, 'waiting');
  // Until the tree runs again the answer is a retryable 503: committer_unavailable while the connection is
  // down, runtime_stopped while the tree's fault is latched (until its restore); a client retries.
  let again = await control(processId, 'kill', 'again');
  for (let tries = 0; again.response.status === 503 && tries < 50; tries += 1) {
    assert.ok(['committer_unavailable', 'runtime_stopped'].includes(String((again.error as { code?: string } | undefined)?.code)), JSON.stringify(again.error));
    await new Promise((resolve) => setTimeout(resolve, 100));
    again = await control(processId, 'kill', 'again');
  }
  assert.equal(again.response.status, 202, JSON.stringify(again.data));
  assert.equal((await storedRoot(processId))?.status, 'killed');
});
