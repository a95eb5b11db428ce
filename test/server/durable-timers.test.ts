import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Redis } from 'ioredis';
import type { EngineHost } from '../../src/server/engine-host.js';
import type { ResultView } from '../../src/server/host.js';
import type { TimerClock } from '../../src/server/timers/timer-service.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { drainStream, effectsOf, embeddedHost, freshPrefix, ofType, redisHost, result, start, untilEntry } from './harness.js';

/**
 * Durable timers (docs/host.md "Durable timers"): a sleeping tree is parked, hibernates, and is woken
 * by the Host's timer service at the instant its pending commit fixed; a restore keeps that instant;
 * a cancel drops the timer. Time runs on an injected clock (hibernation's monotonic one, the timers'
 * wall clock and their one JS timer); nothing here sleeps.
 */

let server: RedisServer;

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await server?.stop();
});

/** A wall clock whose timers fire when the test advances it. */
interface ManualTimerClock extends TimerClock {
  advance(ms: number): void;
}

function manualTimerClock(start = Date.UTC(2031, 0, 1)): ManualTimerClock {
  let now = start;
  const timers = new Set<{ at: number; callback: () => void }>();
  return {
    now: () => now,
    setTimer(callback, ms) {
      const timer = { at: now + ms, callback };
      timers.add(timer);
      return timer;
    },
    clearTimer(handle) {
      timers.delete(handle as { at: number; callback: () => void });
    },
    advance(ms) {
      now += ms;
      for (const timer of [...timers].sort((a, b) => a.at - b.at)) {
        if (timer.at > now || !timers.has(timer)) continue;
        timers.delete(timer);
        timer.callback();
      }
    },
  };
}

function monotonic(): { now: () => number; advance: (ms: number) => void } {
  let now = 0;
  return { now: () => now, advance: (ms) => (now += ms) };
}

type Mode = 'embedded' | 'redis' | 'redis joined';

interface Rig {
  readonly host: EngineHost;
  readonly redis?: Redis;
  readonly prefix?: string;
  readonly timers: ManualTimerClock;
  readonly idle: { now: () => number; advance: (ms: number) => void };
  done(): Promise<void>;
}

const env = { SCOPE_HIBERNATE_AFTER_MS: '1000', SCOPE_TIMER_POLL_MS: '1000' };

async function rig(mode: Mode, options: { prefix?: string; timers?: ManualTimerClock; nodeId?: string } = {}): Promise<Rig> {
  const timers = options.timers ?? manualTimerClock();
  const idle = monotonic();
  if (mode === 'embedded') {
    const host = embeddedHost({ env, monotonic: idle.now, timerClock: timers });
    return { host, timers, idle, done: () => host.close(1_000) };
  }
  const prefix = options.prefix ?? freshPrefix();
  const joined = mode === 'redis joined';
  const nodeEnv = joined ? { ...env, SCOPE_NODE_ID: options.nodeId ?? `timers-${Math.random().toString(36).slice(2)}` } : env;
  const { host, redis } = redisHost({ url: server.url, prefix, env: nodeEnv, monotonic: idle.now, timerClock: timers, joinsCluster: joined });
  if (joined) await host.startNode('http://127.0.0.1:9');
  return {
    host,
    redis,
    prefix,
    timers,
    idle,
    done: async () => {
      await host.close(1_000);
      redis.disconnect();
    },
  };
}

/** Every member of the Redis timer index (all shards). */
async function indexedTimers(redis: Redis, prefix: string): Promise<string[]> {
  const members: string[] = [];
  for (let shard = 0; shard < 16; shard += 1) members.push(...(await redis.zrange(`${prefix}:timers:${shard}`, '0', '-1')));
  return members;
}

async function metric(host: EngineHost, name: string): Promise<number> {
  const { body } = await host.metrics();
  const line = body.split('\n').find((text) => text.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/** Starts demo.sleep and waits until its dispatch waits on the timer service. */
async function sleeping(host: EngineHost, ms: number): Promise<string> {
  const pid = (await start(host, 'demo.sleep', { ms })).processId;
  await untilEntry(host, pid, ofType('agent.effect.started'));
  for (let turn = 0; host.timersWaiting === 0 && turn < 1_000; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(host.timersWaiting, 1, 'the sleep waits on the timer service');
  return pid;
}

/** The result, which must come without the test advancing any clock further (a long poll, bounded). */
async function settled(host: EngineHost, pid: string): Promise<ResultView> {
  const poll = await host.awaitResult(pid, 10_000);
  assert.ok(poll.done && poll.result !== undefined, `${pid} finished by now`);
  return poll.result;
}

/** Lets hibernation release every idle tree; resolves how many left. */
async function hibernate(rig: Rig): Promise<number> {
  rig.idle.advance(1_000);
  return rig.host.hibernateIdle();
}

for (const mode of ['embedded', 'redis', 'redis joined'] as const) {
  test(`${mode}: a sleeping tree is parked and hibernates; at its instant the timer wakes it and the process completes`, async () => {
    const r = await rig(mode);
    try {
      const pid = await sleeping(r.host, 60_000);
      if (r.redis !== undefined) assert.equal((await indexedTimers(r.redis, r.prefix as string)).length, 1, 'the pending commit indexed its timer');
      assert.equal(await hibernate(r), 1, 'only a timer in flight: parked, released');
      assert.equal((await r.host.inspectProcess(pid)).work, 'inactive');
      assert.equal(r.host.timersWaiting, 0, 'the released dispatch no longer waits in memory');
      const stillSleeping = r.host.awaitResult(pid, 30_000);

      r.timers.advance(59_999);
      assert.equal(await r.host.pollTimers(), 1, 'due within the next two poll periods: its wake is scheduled');
      assert.equal((await r.host.inspectProcess(pid)).work, 'inactive', 'not due yet: still out of memory');
      r.timers.advance(1);
      const finished = await settled(r.host, pid);
      assert.equal(finished.status, 'completed');
      assert.deepEqual(finished.output, { sleptMs: 60_000 });
      assert.ok((await stillSleeping).done, 'a long poll taken before the release is answered');
      assert.equal(await metric(r.host, 'scope_timers_woken_total'), 1);
      assert.equal(await metric(r.host, 'scope_timers_fired_total'), 1);

      const [sleep] = await effectsOf(r.host, pid);
      assert.equal(sleep?.status, 'settled');
      assert.equal(sleep?.attempts, 2, 'the first attempt left with the tree; the restore replayed it');
      const entries = await drainStream(r.host, pid);
      assert.equal(entries.filter(ofType('agent.effect.finished')).length, 1, 'settled once: the released attempt published nothing');
      assert.equal(await r.host.pollTimers(), 0, 'the settled timer left the index');
      if (r.redis !== undefined) {
        assert.deepEqual(await indexedTimers(r.redis, r.prefix as string), []);
        assert.deepEqual(await r.redis.keys(`${r.prefix as string}:*record:timer:*`), [], 'its record went with it');
      }
    } finally {
      await r.done();
    }
  });

  test(`${mode}: cancel removes the timer, resident or hibernated`, async () => {
    const r = await rig(mode);
    try {
      const resident = await sleeping(r.host, 60_000);
      await r.host.control(resident, 'cancel');
      assert.equal((await result(r.host, resident)).status, 'canceled');

      const parked = await sleeping(r.host, 60_000);
      await hibernate(r);
      assert.equal((await r.host.inspectProcess(parked)).work, 'inactive', 'the second sleeper hibernated');
      await r.host.control(parked, 'cancel');
      assert.equal((await result(r.host, parked)).status, 'canceled');

      r.timers.advance(120_000);
      assert.equal(await r.host.pollTimers(), 0, 'no timer left to wake');
      assert.equal(r.host.timersWaiting, 0);
      if (r.redis !== undefined) assert.deepEqual(await indexedTimers(r.redis, r.prefix as string), []);
    } finally {
      await r.done();
    }
  });
}

test('redis: a restore on another host keeps the absolute instant (not the sleep length again)', async () => {
  const timers = manualTimerClock();
  const prefix = freshPrefix();
  const first = await rig('redis', { prefix, timers });
  let pid: string;
  try {
    pid = await sleeping(first.host, 60_000);
    assert.equal(await hibernate(first), 1);
  } finally {
    await first.done();
  }
  timers.advance(30_000);
  const second = await rig('redis', { prefix, timers });
  try {
    await second.host.restoreTree(pid);
    assert.equal(second.host.timersWaiting, 1, 'the replayed sleep waits for the recorded instant');
    timers.advance(29_999);
    assert.equal((await second.host.awaitResult(pid, 0)).done, false, '30 s after the restore the original instant has not come yet');
    timers.advance(1);
    assert.equal((await settled(second.host, pid)).status, 'completed', 'done at the original instant, 30 s after the restore, not 60');
  } finally {
    await second.done();
  }
});

test('redis joined: two live nodes race for an ownerless tree with a due timer; the timer settles once', async () => {
  const timers = manualTimerClock();
  const prefix = freshPrefix();
  const owner = await rig('redis joined', { prefix, timers, nodeId: 'timer-owner' });
  let pid: string;
  try {
    pid = await sleeping(owner.host, 10_000);
    assert.equal(await hibernate(owner), 1);
  } finally {
    // A drain deletes its lease: the hibernated tree is ownerless from now on.
    await owner.done();
  }
  const [b, c] = await Promise.all([rig('redis joined', { prefix, timers, nodeId: 'timer-b' }), rig('redis joined', { prefix, timers, nodeId: 'timer-c' })]);
  try {
    // Both nodes read the index (each also did when it started) and schedule its wake.
    await Promise.all([b.host.pollTimers(), c.host.pollTimers()]);
    timers.advance(10_000);
    const [doneB, doneC] = await Promise.all([settled(b.host, pid), settled(c.host, pid)]);
    assert.equal(doneB.status, 'completed');
    assert.equal(doneC.status, 'completed');
    const entries = await drainStream(b.host, pid);
    assert.equal(entries.filter(ofType('agent.effect.finished')).length, 1, 'one settlement');
    assert.equal(entries.filter(ofType('agent.process.finished')).length, 1);
  } finally {
    await Promise.all([b.done(), c.done()]);
  }
});

test('embedded: the Deadline example is a durable timer too', async () => {
  const r = await rig('embedded');
  try {
    const at = new Date(r.timers.now() + 5_000).toISOString();
    const pid = (await start(r.host, 'example.coordination.deadline', at)).processId;
    await untilEntry(r.host, pid, ofType('agent.effect.started'));
    assert.equal(await hibernate(r), 1);
    r.timers.advance(4_000);
    assert.equal(await r.host.pollTimers(), 1);
    r.timers.advance(1_000);
    const finished = await settled(r.host, pid);
    assert.equal(finished.status, 'completed');
    assert.equal(finished.output, at);
  } finally {
    await r.done();
  }
});

test('embedded: a sleeping first-success candidate is a durable timer: its tree hibernates and wakes at the instant', async () => {
  const r = await rig('embedded');
  try {
    const pid = (await start(r.host, 'example.coordination.first-success', [{ deployment: 'demo.sleep', input: { ms: 5_000 }, budget: { steps: 4, effects: 2, signals: 4 } }])).processId;
    for (let turn = 0; r.host.timersWaiting === 0 && turn < 10_000; turn += 1) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(r.host.timersWaiting, 1, 'the candidate sleeps on the timer service, not on a timer of its own');
    assert.equal(await hibernate(r), 1, 'the competition with its sleeping candidate is parked');
    r.timers.advance(4_000);
    assert.equal(await r.host.pollTimers(), 1);
    r.timers.advance(1_000);
    const finished = await settled(r.host, pid);
    assert.equal(finished.status, 'completed');
  } finally {
    await r.done();
  }
});
