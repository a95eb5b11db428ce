import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { classifyCheckpointCut, TreeCheckpoint } from '../../src/kernel/commit.js';
import { ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { headKey, predecessorRecordSuffix, recordKey, successionKey } from '../../src/store/redis/keys.js';
import { EngineHost } from '../../src/server/engine-host.js';
import type { LogEntry } from '../../src/server/host.js';
import { RedisHostCommitter } from '../../src/server/redis-host-committer.js';
import { idempotencyHostValue, idempotencyKeyDigest } from '../../src/server/idempotency.js';
import { idempotencyRecordSuffix } from '../../src/store/idempotency.js';
import { RedisIdempotencyStore } from '../../src/store/redis/idempotency-store.js';
import { idempotencyPointerKey } from '../../src/store/redis/keys.js';
import { RedisRootIndex } from '../../src/store/redis/root-index.js';
import { conformanceTrees } from '../../src/testing/conformance-trees.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { demoFlows } from './demo-flows.js';
import { dataOf, drainStream, effectsOf, freshPrefix, steppingClock, ofType, rejectsWith, redisHost, result, start, stepCommittedWith, testConfig, untilEntry, untilSettled } from './harness.js';

let server: RedisServer;

before(async () => {
  server = await startRedisServer();
});

after(async () => {
  await server?.stop();
});

/** A Redis-mode Host that owns its connection (closed by `host.close`). */
function ownedHost(prefix = freshPrefix(), env: Record<string, string> = {}): EngineHost {
  return new EngineHost({ config: testConfig({ SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix, ...env }), defaultMetrics: false });
}

demoFlows('redis', { make: () => ownedHost() });

function committedNames(entries: readonly LogEntry[]): string[] {
  return entries.filter((entry) => (dataOf(entry) as { phase?: string }).phase === 'committed').map((entry) => entry.type);
}

test('redis committer: the idempotency record lands in the start commit itself, or not at all', async () => {
  const redis = new Redis(server.url);
  const prefix = freshPrefix();
  try {
    const store = new RedisTreeCommitter({ redis, keyPrefix: prefix });
    const lookup = new RedisIdempotencyStore({ redis, keyPrefix: prefix, committer: store });
    const committer = new RedisHostCommitter({ store, idempotency: lookup, roots: new RedisRootIndex({ redis, keyPrefix: prefix }) });
    const keyDigest = idempotencyKeyDigest('the-key');
    const intent = { keyDigest, requestDigest: 'r'.repeat(64), ttlMs: 60_000 };
    const hostValues = { [idempotencyHostValue]: intent };

    // A start commit that the store refuses (the root already has a head) writes no record.
    const taken = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    await committer.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: taken.running(0) }), { events: [] });
    const headBefore = await redis.hget(headKey(prefix, taken.rootId), 'digest');
    await rejectsWith(
      committer.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: taken.runningWithPendingInput() }), { events: [], hostValues }),
      'commit_conflict',
    );
    assert.equal(await store.readRecord(taken.rootId, idempotencyRecordSuffix), undefined);
    assert.equal(await redis.hget(headKey(prefix, taken.rootId), 'digest'), headBefore);
    // The pointer written before the script names the root, but without the record it means nothing.
    assert.equal(await redis.get(idempotencyPointerKey(prefix, keyDigest)), taken.rootId.toString());
    assert.equal(await lookup.lookup(keyDigest), undefined);

    // A purged root's tombstone refuses a replayed start: still no record.
    const purged = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    const opening = TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: purged.running(0) });
    await committer.commitCheckpoint(opening, { events: [] });
    const completed = purged.completed();
    await committer.commitCheckpoint(
      TreeCheckpoint.create({ kind: classifyCheckpointCut(completed.processSnapshots()), sequence: 2n, previous: opening.snapshot.digest, snapshot: completed }),
      { events: [] },
    );
    assert.equal(await committer.purgeTree(purged.rootId), 'purged');
    await rejectsWith(committer.commitCheckpoint(opening, { events: [], hostValues }), 'tree_incarnation_conflict');
    assert.equal(await store.readRecord(purged.rootId, idempotencyRecordSuffix), undefined);

    // An installed start carries both: the head and the record.
    const fresh = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    await committer.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: fresh.running(0) }), { events: [], hostValues });
    assert.equal(await redis.hget(headKey(prefix, fresh.rootId), 'digest'), fresh.running(0).digest.toString());
    const record = await lookup.lookup(keyDigest);
    assert.deepEqual(record, { keyDigest, requestDigest: intent.requestDigest, processId: fresh.rootId.toString() });
    const ttl = await redis.pttl(`${prefix}:{${fresh.rootId.toString()}}:record:${idempotencyRecordSuffix}`);
    assert.ok(ttl > 0 && ttl <= 60_000);
  } finally {
    redis.disconnect();
  }
});

test('redis: idempotent start through the Host survives a restart (new Host, same prefix)', async () => {
  const prefix = freshPrefix();
  const first = ownedHost(prefix);
  const request = { deployment: 'demo.approval', input: { subject: 'once' } };
  let processId: string;
  try {
    const created = await first.startProcess(request, 'order-42');
    assert.equal(created.created, true);
    processId = created.process.processId;
    assert.equal((await first.startProcess(request, 'order-42')).created, false);
  } finally {
    await first.close(1_000);
  }
  const second = ownedHost(prefix);
  try {
    const replay = await second.startProcess({ input: { subject: 'once' }, deployment: 'demo.approval' }, 'order-42');
    assert.equal(replay.created, false);
    assert.equal(replay.process.processId, processId);
    assert.equal(replay.process.work, 'inactive');
    await rejectsWith(second.startProcess({ deployment: 'demo.approval', input: { subject: 'twice' } }, 'order-42'), 'idempotency_key_conflict');
  } finally {
    await second.close(1_000);
  }
});

test('redis: after a crash, a new Host serves the stored tree read-only, restores it, and the log holds every committed event once', async () => {
  const prefix = freshPrefix();
  const crashed = redisHost({ url: server.url, prefix });
  const pid = (await start(crashed.host, 'demo.approval', { subject: 'survive' })).processId;
  await untilSettled(crashed.host, pid, stepCommittedWith('waiting', pid));
  await crashed.host.deliverSignals(pid, [{ id: 'note-1', payload: { note: 'before the crash' } }]);
  const beforeCrash = (await crashed.host.events(pid, { limit: 1000 })).items;
  const cut = beforeCrash.at(-1)?.position as string;
  const waitId = (await crashed.host.inspectProcess(pid)).waitId as string;
  // The crash: the first server loses its connection and is never closed.
  crashed.redis.disconnect();

  const { host, redis } = redisHost({ url: server.url, prefix });
  try {
    // Reads come from the stored head and log.
    const stored = await host.inspectProcess(pid);
    assert.equal(stored.status, 'waiting');
    assert.equal(stored.work, 'inactive');
    assert.equal(stored.waitId, waitId);
    assert.equal((await host.inspectTree(pid)).active, false);
    assert.equal((await host.awaitResult(pid, 0)).done, false);
    assert.equal((await host.snapshot(pid)).digest, (await host.inspectTree(pid)).headDigest);
    assert.ok((await host.listProcesses({})).items.some((item) => item.processId === pid));
    assert.deepEqual((await host.events(pid, { limit: 1000 })).items, beforeCrash);
    // Commands wait for a restore.
    await rejectsWith(host.deliverSignals(pid, [{ id: 'answer', waitId, payload: { approved: true } }]), 'tree_not_active');
    await rejectsWith(host.control(pid, 'cancel'), 'tree_not_active');
    // The inbox lists from the wait index: complete before any restore.
    assert.equal((await host.waits()).find((wait) => wait.processId === pid)?.waitId, waitId);
    // A client resuming from its last id before the crash, on the new server.
    const resumed = drainStream(host, pid, cut);

    const restored = await host.restoreTree(pid);
    assert.equal(restored.active, true);
    assert.equal((await host.waits()).find((wait) => wait.processId === pid)?.waitId, waitId);
    await host.deliverSignals(pid, [{ id: 'answer', waitId, payload: { approved: true, comment: 'after' } }]);
    const outcome = await result(host, pid);
    assert.deepEqual(outcome.output, { subject: 'survive', approved: true, comment: 'after', notes: ['before the crash'] });

    const log = (await host.events(pid, { limit: 1000 })).items;
    assert.deepEqual(log.slice(0, beforeCrash.length), beforeCrash);
    assert.deepEqual(committedNames(log), [
      'agent.process.started',
      'agent.step.committed',
      'agent.step.committed',
      'agent.signal.accepted',
      'agent.process.restored',
      'agent.signal.accepted',
      'agent.step.committed',
      'agent.process.finished',
    ]);
    const identities = log.map((entry) => {
      const data = dataOf(entry) as { tree_incarnation_id?: string; process_sequence?: number };
      return `${entry.type}/${data.tree_incarnation_id}/${data.process_sequence}`;
    });
    assert.equal(new Set(identities.filter((id) => !id.startsWith('agent.delta'))).size, identities.filter((id) => !id.startsWith('agent.delta')).length);
    // The resumed stream: exactly what followed the cut, ending after the terminal event.
    const rest = await resumed;
    const index = log.findIndex((entry) => entry.position === cut);
    assert.deepEqual(rest, log.slice(index + 1));
    assert.ok(rest.some((entry) => entry.type === 'agent.process.finished'));
  } finally {
    await host.close(1_000);
    redis.disconnect();
  }
});

test('redis: a dispatch in flight at the crash is replayed under its identity on restore (same_identity)', async () => {
  const prefix = freshPrefix();
  const crashed = redisHost({ url: server.url, prefix });
  const pid = (await start(crashed.host, 'demo.sleep', { ms: 200 })).processId;
  await untilEntry(crashed.host, pid, ofType('agent.effect.started', pid));
  crashed.redis.disconnect();
  const host = ownedHost(prefix);
  try {
    const view = await host.inspectProcess(pid);
    assert.equal(view.status, 'running');
    const [pending] = await effectsOf(host, pid);
    assert.equal(pending?.status, 'pending');
    assert.equal(pending?.attempts, 1);
    await host.restoreTree(pid);
    const outcome = await result(host, pid);
    assert.deepEqual(outcome.output, { sleptMs: 200 });
    const [settled] = await effectsOf(host, pid);
    assert.equal(settled?.attempts, 2);
    assert.equal(settled?.status, 'settled');
  } finally {
    await host.close(1_000);
  }
});

test('redis: restore needs the exact deployment; purge removes a finished tree', async () => {
  const prefix = freshPrefix();
  const host = ownedHost(prefix);
  let pid: string;
  try {
    pid = (await start(host, 'demo.echo', { value: 'gone' })).processId;
    await result(host, pid);
    await host.releaseTree(pid, false);
  } finally {
    await host.close(1_000);
  }
  const bare = ownedHost(prefix, { SCOPE_DEMOS: 'off' });
  try {
    await rejectsWith(bare.restoreTree(pid), 'deployment_not_found');
    assert.equal((await bare.inspectProcess(pid)).status, 'completed');
    // Records that live as long as the tree (a succession to another version, a pointer back) go with it.
    const raw = new Redis(server.url);
    await raw.set(successionKey(prefix, pid), 'process:successor');
    await raw.set(recordKey(prefix, pid, predecessorRecordSuffix), 'process:predecessor');
    await bare.releaseTree(pid, true);
    assert.deepEqual(await raw.exists(successionKey(prefix, pid), recordKey(prefix, pid, predecessorRecordSuffix)), 0, 'a purge leaves no succession record');
    raw.disconnect();
    await rejectsWith(bare.snapshot(pid), 'tree_not_found');
    await rejectsWith(bare.inspectProcess(pid), 'process_not_found');
    assert.equal((await bare.listProcesses({})).items.length, 0);
  } finally {
    await bare.close(1_000);
  }
});

test('redis: readiness follows the Redis connection', async () => {
  const own = await startRedisServer();
  const host = new EngineHost({ config: testConfig({ SCOPE_REDIS_URL: own.url, SCOPE_KEY_PREFIX: freshPrefix() }), defaultMetrics: false });
  try {
    assert.deepEqual(await host.readiness(), { ready: true, checks: { engine: 'ok', dispatch: 'ok', redis: 'ok' } });
    await own.kill();
    const readiness = await host.readiness();
    assert.equal(readiness.ready, false);
    assert.match(String(readiness.checks.redis), /^unreachable/);
  } finally {
    await host.close(500);
    await own.stop();
  }
});

// The structure issue's defect 6: a wait's `since` moved to the restore's time, and a long poll on a
// tree no runtime here owned answered "running" at once with no hint.
test('redis: a wait keeps its since across a restore; a long poll on an inactive tree says so', async () => {
  const prefix = freshPrefix();
  const first = redisHost({ url: server.url, prefix, clock: steppingClock(Date.UTC(2030, 0, 1)) });
  const pid = (await start(first.host, 'demo.approval', { subject: 'since' })).processId;
  await untilSettled(first.host, pid, stepCommittedWith('waiting', pid));
  const opened = (await first.host.waits()).find((wait) => wait.processId === pid)?.since;
  assert.match(opened ?? '', /^2030-01-01T/);
  first.redis.disconnect();

  // The second server's clock is a day later: a since taken at restore would say so.
  const second = redisHost({ url: server.url, prefix, clock: steppingClock(Date.UTC(2030, 0, 2)) });
  try {
    const poll = await second.host.awaitResult(pid, 50);
    assert.deepEqual(poll, { done: false, status: 'waiting', work: 'inactive', rootId: pid });
    await second.host.restoreTree(pid);
    const wait = (await second.host.waits()).find((entry) => entry.processId === pid);
    assert.equal(wait?.since, opened);
    assert.match((await second.host.inspectProcess(pid)).startedAt, /^2030-01-01T/);
    const active = await second.host.awaitResult(pid, 0);
    assert.equal(active.done, false);
    assert.notEqual(active.done === false && active.work, 'inactive');
  } finally {
    await second.host.close(1_000);
    second.redis.disconnect();
  }
});

// The structure issue's defect 8: scope_processes counted only what one server held in memory.
test('redis: scope_processes counts the roots that exist, whichever server started them', async () => {
  const prefix = freshPrefix();
  const a = redisHost({ url: server.url, prefix });
  const b = redisHost({ url: server.url, prefix });
  try {
    for (let index = 0; index < 3; index += 1) await result(a.host, (await start(a.host, 'demo.echo', { value: `m${index}` })).processId);
    const metrics = await b.host.metrics();
    assert.match(metrics.body, /^scope_processes 3$/m);
    assert.doesNotMatch(metrics.body, /scope_resident_processes\{/, 'none of them lives in the second server');
  } finally {
    await Promise.all([a.host.close(1_000), b.host.close(1_000)]);
    a.redis.disconnect();
    b.redis.disconnect();
  }
});

test('redis host: an attempt run in this node names the node as its worker (the record rides the next log flush)', async () => {
  const prefix = freshPrefix();
  const host = ownedHost(prefix, { SCOPE_NODE_ID: 'ran-here-node' });
  const redis = new Redis(server.url);
  try {
    const view = await start(host, 'demo.echo', { value: 'who ran it' });
    await result(host, view.processId);
    const [effect] = await effectsOf(host, view.processId);
    assert.equal(effect?.attemptList.length, 1);
    const attemptId = effect!.attemptList[0]!.attemptId;
    assert.equal(effect!.attemptList[0]!.worker, 'ran-here-node');
    assert.equal(await redis.get(recordKey(prefix, ProcessId.parse(view.processId), `ran:${attemptId}`)), 'ran-here-node');
    assert.ok((await redis.pttl(recordKey(prefix, ProcessId.parse(view.processId), `ran:${attemptId}`))) > 0, 'kept for a retention, not for good');
  } finally {
    redis.disconnect();
    await host.close(1_000);
  }
});
