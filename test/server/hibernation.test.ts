import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { EngineHost } from '../../src/server/engine-host.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { Deployment, Digest } from '../../src/kernel/index.js';
import { sleepDispatcher } from '../../src/server/demo-dispatchers.js';
import { sleepDefinition } from '../../strategies/demo/sleep.js';
import { embeddedHost, freshPrefix, redisHost, rejectsWith, start, stepCommittedWith, untilEntry, untilSettled } from './harness.js';

/**
 * Hibernation (docs/host.md "Hibernation"): a parked tree idle for SCOPE_HIBERNATE_AFTER_MS leaves
 * the Engine's memory without a write, keeps being listed and read from its head, and the next
 * command restores it. Idle time runs on an injected monotonic clock; sweeps are run by hand.
 */

let server: RedisServer;

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await server?.stop();
});

function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let now = 0;
  return { now: () => now, advance: (ms) => (now += ms) };
}

const hibernating = { SCOPE_HIBERNATE_AFTER_MS: '1000' };

async function metric(host: EngineHost, name: string): Promise<number> {
  const { body } = await host.metrics();
  const line = body.split('\n').find((text) => text.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

type Mode = 'embedded' | 'redis' | 'redis joined';

function hostFor(mode: Mode, now: () => number): { host: EngineHost; done: () => Promise<void> } {
  if (mode === 'embedded') {
    const host = embeddedHost({ env: hibernating, monotonic: now });
    return { host, done: () => host.close(1_000) };
  }
  const env = mode === 'redis joined' ? { ...hibernating, SCOPE_NODE_ID: `hib-${Math.random().toString(36).slice(2)}` } : hibernating;
  const { host, redis } = redisHost({ url: server.url, prefix: freshPrefix(), env, monotonic: now, joinsCluster: mode === 'redis joined' });
  return {
    host,
    done: async () => {
      await host.close(1_000);
      redis.disconnect();
    },
  };
}

for (const mode of ['embedded', 'redis', 'redis joined'] as const) {
  test(`${mode}: a parked tree hibernates once idle, stays listed and readable, and the next signal restores it`, async () => {
    const clock = manualClock();
    const { host, done } = hostFor(mode, clock.now);
    try {
      if (mode === 'redis joined') await host.startNode('http://127.0.0.1:9');
      const view = await start(host, 'demo.approval', { subject: 'sleepy' });
      const pid = view.processId;
      await untilSettled(host, pid, stepCommittedWith('waiting'));
      const waitId = (await host.inspectProcess(pid)).waitId as string;
      const longPoll = host.awaitResult(pid, 30_000);

      clock.advance(999);
      assert.equal(await host.hibernateIdle(), 0, 'not idle long enough');
      clock.advance(1);
      assert.equal(await host.hibernateIdle(), 1);
      assert.equal(await metric(host, 'scope_trees_hibernated_total'), 1);
      const resting = await host.inspectProcess(pid);
      assert.equal(resting.status, 'waiting');
      assert.equal(resting.work, 'inactive', 'no runtime holds it now');
      assert.deepEqual((await host.waits()).map((wait) => wait.processId), [pid], 'the inbox still lists its wait');
      assert.deepEqual((await host.listProcesses({})).items.map((item) => item.processId), [pid]);
      assert.equal((await host.captureTree(pid)).digest, (await host.snapshot(pid)).digest, 'a capture of a hibernated tree is its head');

      await host.deliverSignals(pid, [{ id: 'answer', waitId, payload: { approved: true } }]);
      const answered = await longPoll;
      assert.ok(answered.done, 'the long poll taken before the release is answered');
      assert.equal(answered.result.status, 'completed');
      assert.equal(await metric(host, 'scope_trees_woken_total'), 1);
      assert.deepEqual(await host.waits(), []);
    } finally {
      await done();
    }
  });
}

/** A sleep on a plain in-memory timer (not the Host's durable timers): a dispatch that is not parkable. */
const plainSleep = Deployment.create({
  definition: sleepDefinition,
  dispatcher: sleepDispatcher(),
  implementationDigest: Digest.of('test:plain-sleep:implementation:v1'),
  configurationDigest: Digest.of('test:plain-sleep:configuration:v1'),
});

test('activity keeps a tree resident; a tree with a dispatch in flight (not a durable timer) is not parked and stays', async () => {
  const clock = manualClock();
  const host = embeddedHost({ env: hibernating, monotonic: clock.now, deployments: [plainSleep] });
  const done = () => host.close(1_000);
  try {
    const approval = await start(host, 'demo.approval', { subject: 'busy' });
    await untilSettled(host, approval.processId, stepCommittedWith('waiting'));
    // Registered after the demos, the plain sleep is the version of demo.sleep new starts use.
    const sleeper = await start(host, 'demo.sleep', { ms: 60_000 });
    await untilEntry(host, sleeper.processId, (entry) => entry.type === 'agent.effect.started');
    clock.advance(800);
    // A command is activity: the approval's idle time starts again.
    await host.control(approval.processId, 'pause');
    clock.advance(800);
    assert.equal(await host.hibernateIdle(), 0, 'the sleeper has a dispatch in flight; the approval was commanded 800 ms ago');
    clock.advance(200);
    assert.equal(await host.hibernateIdle(), 1, 'the paused approval leaves; the sleeper stays');
    assert.equal((await host.inspectProcess(sleeper.processId)).work, 'dispatch');
    assert.equal((await host.inspectProcess(approval.processId)).work, 'inactive');
    await host.control(approval.processId, 'resume');
    assert.equal((await host.inspectProcess(approval.processId)).work, 'idle', 'resumed here, waiting again');
    await host.control(sleeper.processId, 'cancel');
  } finally {
    await done();
  }
});

test('a signal racing the release is admitted exactly once, whichever wins', async () => {
  const clock = manualClock();
  const { host, done } = hostFor('embedded', clock.now);
  try {
    const pids: string[] = [];
    for (let index = 0; index < 20; index += 1) pids.push((await start(host, 'demo.counter', { target: 1000 })).processId);
    for (const pid of pids) await untilSettled(host, pid, stepCommittedWith('waiting'));
    clock.advance(1_000);
    const waitIds = await Promise.all(pids.map(async (pid) => (await host.inspectProcess(pid)).waitId as string));
    // The sweep and the signals start together: some trees leave first, some see the signal queued.
    const [, ...outcomes] = await Promise.all([host.hibernateIdle(), ...pids.map((pid, index) => host.deliverSignals(pid, [{ id: 'add', waitId: waitIds[index]!, payload: { add: 1 } }]))]);
    assert.ok(outcomes.every((outcome) => outcome.accepted), 'each signal admitted, whether its tree left first or not');
    for (const pid of pids) {
      const receipts = (await host.signals(pid, {})).items.filter((receipt) => receipt.id === 'add');
      assert.equal(receipts.length, 1, `one receipt for ${pid}`);
      // A retry by id after whatever happened is a duplicate, not a second admission.
      const again = await host.deliverSignals(pid, [{ id: 'add', waitId: waitIds[pids.indexOf(pid)]!, payload: { add: 1 } }]);
      assert.equal(again.accepted, false);
    }
  } finally {
    await done();
  }
});

test('joined: waking a tree another node took over meanwhile fails the guarded takeover and follows the new owner', async () => {
  const clock = manualClock();
  const prefix = freshPrefix();
  const first = redisHost({ url: server.url, prefix, env: { ...hibernating, SCOPE_NODE_ID: 'hib-a' }, monotonic: clock.now, joinsCluster: true });
  const second = redisHost({ url: server.url, prefix, env: { ...hibernating, SCOPE_NODE_ID: 'hib-b' }, monotonic: clock.now, joinsCluster: true });
  try {
    await first.host.startNode('http://127.0.0.1:9');
    await second.host.startNode('http://127.0.0.1:10');
    const pid = (await start(first.host, 'demo.approval', { subject: 'moved' })).processId;
    await untilSettled(first.host, pid, stepCommittedWith('waiting'));
    const waitId = (await first.host.inspectProcess(pid)).waitId as string;
    clock.advance(1_000);
    assert.equal(await first.host.hibernateIdle(), 1);
    // An operator takes the tree to b while a holds it only as hibernated.
    await second.host.restoreTree(pid, { force: true });
    const owner = JSON.parse((await first.redis.get(`${prefix}:{${pid}}:record:owner`)) as string);
    assert.equal(owner.node, 'hib-b');

    const answer = [{ id: 'answer', waitId, payload: { approved: true } }];
    await rejectsWith(first.host.deliverSignals(pid, answer), 'tree_owned_elsewhere');
    assert.deepEqual(JSON.parse((await first.redis.get(`${prefix}:{${pid}}:record:owner`)) as string), owner, 'the failed wake moved nothing');
    assert.equal(await metric(first.host, 'scope_trees_woken_total'), 0);
    await second.host.deliverSignals(pid, answer);
    assert.equal((await second.host.awaitResult(pid, 10_000)).done, true);
  } finally {
    await first.host.close(1_000);
    await second.host.close(1_000);
    first.redis.disconnect();
    second.redis.disconnect();
  }
});
