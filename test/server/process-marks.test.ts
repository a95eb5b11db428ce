import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { echoDefinition } from '../../strategies/demo/echo.js';
import { fanoutDefinition } from '../../strategies/demo/fanout.js';
import { Deployment, Digest, type ReplayPolicy } from '../../src/kernel/index.js';
import type { EngineHost } from '../../src/server/engine-host.js';
import type { ProcessListQuery } from '../../src/server/host.js';
import { unknownIndexShardKey } from '../../src/store/redis/keys.js';
import { defaultUnknownIndexShards, RedisUnknownIndex } from '../../src/store/redis/unknown-index.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { embeddedHost, freshPrefix, redisHost, result, start } from './harness.js';

/**
 * The process list's `hasUnknown` / `hasOpenGate` filters (and the bulk filter that reuses them), and the
 * Unknown list across nodes: embedded, and in Redis mode on a Host that never held the trees, after the
 * writer closed (a restart on the same Redis).
 */

let server: RedisServer;
let raw: Redis;
const hosts: EngineHost[] = [];
const clients: Redis[] = [];

before(async () => {
  server = await startRedisServer();
  raw = new Redis(server.url);
});

after(async () => {
  for (const host of hosts) await host.close(1_000).catch(() => undefined);
  for (const client of clients) client.disconnect();
  raw?.disconnect();
  await server?.stop();
});

function onRedis(prefix: string): EngineHost {
  const made = redisHost({ url: server.url, prefix });
  hosts.push(made.host);
  clients.push(made.redis);
  return made.host;
}

function embedded(): EngineHost {
  const host = embeddedHost();
  hosts.push(host);
  return host;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, deadlineMs = 10_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** One of each: a tree with an Unknown, one with an open gate, one with neither (completed). */
async function threeTrees(host: EngineHost): Promise<{ unknown: string; gate: string; done: string }> {
  const unknown = (await start(host, 'demo.unreliable', { mode: 'unknown', replayable: false })).processId;
  const gate = (await start(host, 'demo.approval', { subject: 'marks' })).processId;
  const done = (await start(host, 'demo.echo', { value: 'plain' })).processId;
  await until('the Unknown to commit', async () => ((await host.inspectProcess(unknown)).unknownEffectIds.length === 1 ? true : undefined));
  await until('the gate to open', async () => ((await host.inspectProcess(gate)).waitKind === 'external' ? true : undefined));
  await until('the echo to complete', async () => ((await host.inspectProcess(done)).status === 'completed' ? true : undefined));
  return { unknown, gate, done };
}

async function listed(host: EngineHost, query: ProcessListQuery): Promise<string[]> {
  const page = await host.listProcesses({ limit: 100, ...query });
  return page.items.map((item) => item.processId).sort();
}

async function assertMarks(host: EngineHost, trees: { unknown: string; gate: string; done: string }): Promise<void> {
  assert.deepEqual(await listed(host, { hasUnknown: true }), [trees.unknown]);
  assert.deepEqual(await listed(host, { hasUnknown: false }), [trees.gate, trees.done].sort());
  assert.deepEqual(await listed(host, { hasOpenGate: true }), [trees.gate]);
  assert.deepEqual(await listed(host, { hasOpenGate: false }), [trees.unknown, trees.done].sort());
  assert.deepEqual(await listed(host, { hasUnknown: false, hasOpenGate: false }), [trees.done]);
  assert.deepEqual(await listed(host, { hasUnknown: true, status: 'completed' }), []);
  const all = await host.listProcesses({ limit: 100 });
  const marks = Object.fromEntries(all.items.map((item) => [item.processId, [item.hasUnknown, item.hasOpenGate]]));
  assert.deepEqual(marks, { [trees.unknown]: [true, false], [trees.gate]: [false, true], [trees.done]: [false, false] });
}

test('embedded: hasUnknown and hasOpenGate filter the list, each summary carries both marks', async () => {
  const host = embedded();
  const trees = await threeTrees(host);
  await assertMarks(host, trees);
});

test('embedded: a bulk control by hasOpenGate counts exactly what it then acts on', async () => {
  const host = embedded();
  const trees = await threeTrees(host);
  const dry = await host.bulkControl({ filter: { hasOpenGate: true }, action: 'cancel', dryRun: true });
  assert.equal(dry.matched, 1);
  const done = await host.bulkControl({ filter: { hasOpenGate: true }, action: 'cancel' });
  assert.equal(done.matched, dry.matched);
  assert.equal(done.affected, dry.matched);
  // The bulk answer means the intent is committed; the cancellation itself lands on the next turn.
  assert.equal((await result(host, trees.gate)).status, 'canceled');
  assert.equal((await host.inspectProcess(trees.unknown)).status, 'running');
  const unknownDry = await host.bulkControl({ filter: { hasUnknown: true }, action: 'kill', dryRun: true });
  const unknownRun = await host.bulkControl({ filter: { hasUnknown: true }, action: 'kill' });
  assert.equal(unknownDry.matched, 1);
  assert.equal(unknownRun.affected, unknownDry.matched);
});

test('embedded: the Unknown list and the marks include trees hibernated out of memory', async () => {
  let now = 0;
  const host = embeddedHost({ env: { SCOPE_HIBERNATE_AFTER_MS: '1000' }, monotonic: () => now });
  hosts.push(host);
  const { unknown } = await threeTrees(host);
  now += 1_000;
  assert.ok((await host.hibernateIdle()) >= 1, 'an Unknown parks its tree, so it hibernates');
  assert.equal((await host.inspectProcess(unknown)).work, 'inactive');
  const page = await host.unknownEffects({});
  assert.deepEqual(
    page.items.map((item) => item.processId),
    [unknown],
  );
  assert.deepEqual(await listed(host, { hasUnknown: true }), [unknown]);
});

test('an open wait that is not a gate (a parent waiting on its children) is no open gate', async () => {
  // Children that never settle on their own: the parent's children wait stays open.
  const stuck = Deployment.create({
    definition: echoDefinition,
    dispatcher: {
      dispatch: (_request, _emit, signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
      replayPolicy: (): ReplayPolicy => 'never',
    },
    implementationDigest: Digest.of('test:stuck-echo:implementation'),
    configurationDigest: Digest.of('test:stuck-echo:configuration'),
  });
  const fanout = Deployment.create({
    definition: fanoutDefinition(stuck),
    implementationDigest: Digest.of('test:stuck-fanout:implementation'),
    configurationDigest: Digest.of('test:stuck-fanout:configuration'),
  });
  const host = embeddedHost({ deployments: [stuck, fanout] });
  hosts.push(host);
  const parent = (await start(host, 'demo.fanout', { values: ['a'] })).processId;
  await until('the parent to wait on its children', async () => ((await host.inspectProcess(parent)).waitKind === 'children' ? true : undefined));
  assert.deepEqual(await listed(host, { hasOpenGate: true }), []);
  assert.deepEqual(await listed(host, { hasOpenGate: false }), [parent]);
  await host.controlTree(parent, 'kill');
});

test('redis: the marks hold on a Host that never held the trees, and after the writer closed (a restart on the same Redis)', async () => {
  const prefix = freshPrefix();
  const writer = onRedis(prefix);
  const trees = await threeTrees(writer);
  const other = onRedis(prefix);
  await assertMarks(other, trees);
  const dry = await other.bulkControl({ filter: { hasUnknown: true }, action: 'cancel', dryRun: true });
  assert.equal(dry.matched, 1);

  await writer.close(1_000);
  const restarted = onRedis(prefix);
  await assertMarks(restarted, trees);

  // A change committed on the restarted Host (after its restore) shows on the other one.
  const gate = await restarted.restoreTree(trees.gate);
  assert.ok(gate !== undefined);
  const waitId = (await restarted.inspectProcess(trees.gate)).waitId;
  assert.ok(waitId !== null);
  await restarted.deliverSignals(trees.gate, [{ id: 'yes', waitId, payload: { approved: true } }]);
  await until('the gate to close on the other Host', async () => ((await listed(other, { hasOpenGate: true })).length === 0 ? true : undefined));

  // A bulk control by a mark acts on exactly what its dry run counted (a Host that is no cluster node
  // controls the trees it restored).
  await restarted.restoreTree(trees.unknown);
  const dryKill = await restarted.bulkControl({ filter: { hasUnknown: true }, action: 'kill', dryRun: true });
  const kill = await restarted.bulkControl({ filter: { hasUnknown: true }, action: 'kill' });
  assert.equal(dryKill.matched, 1);
  assert.deepEqual([kill.matched, kill.affected, kill.failed], [dryKill.matched, dryKill.matched, []]);
  await until('the kill to land, seen from the other Host', async () => ((await other.inspectProcess(trees.unknown)).status === 'killed' ? true : undefined));
});

async function unknownIndexSize(prefix: string): Promise<number> {
  let size = 0;
  for (let shard = 0; shard < defaultUnknownIndexShards; shard += 1) size += await raw.hlen(unknownIndexShardKey(prefix, shard));
  return size;
}

test('redis: an Unknown committed on one Host is listed on another and after a restart; resolved, it leaves the list and the index', async () => {
  const prefix = freshPrefix();
  const writer = onRedis(prefix);
  const { unknown } = await threeTrees(writer);
  const other = onRedis(prefix);
  const seen = await other.unknownEffects({});
  assert.deepEqual(
    seen.items.map((item) => [item.processId, item.deployment, item.effect.status]),
    [[unknown, 'demo.unreliable', 'unknown']],
  );
  assert.equal(await unknownIndexSize(prefix), 1);
  assert.deepEqual(await writer.unknownEffects({}), seen);

  await writer.close(1_000);
  const restarted = onRedis(prefix);
  assert.deepEqual(
    (await restarted.unknownEffects({})).items.map((item) => item.processId),
    [unknown],
  );

  await restarted.restoreTree(unknown);
  const effectId = seen.items[0]!.effect.effectId;
  await restarted.resolveEffect(unknown, effectId, { status: 'succeeded', payload: { mode: 'unknown', attempts: 1 } });
  // Removed by its writer (no reader has looked since).
  await until('the entry to leave the index', async () => ((await unknownIndexSize(prefix)) === 0 ? true : undefined));
  assert.deepEqual((await other.unknownEffects({})).items, []);
});

test('redis: an index entry its head does not confirm is not listed, and is removed once its commit can no longer land', async () => {
  const prefix = freshPrefix();
  const host = onRedis(prefix);
  const { unknown } = await threeTrees(host);
  const index = new RedisUnknownIndex({ redis: raw, keyPrefix: prefix });
  const [real] = await index.entries();
  assert.ok(real !== undefined);
  const sequence = BigInt(real.sequence);
  await index.write([
    // A commit still in flight (ahead of the head): kept, unlisted.
    { ...real, effectId: 'effect:in-flight', sequence: (sequence + 100n).toString() },
    // One the head is past, one of another writer: never true, removed.
    { ...real, effectId: 'effect:landed-without', sequence: real.sequence },
    { ...real, effectId: 'effect:fenced', incarnation: 'incarnation:another-writer', sequence: (sequence + 100n).toString() },
  ]);
  const listedNow = await host.unknownEffects({});
  assert.deepEqual(
    listedNow.items.map((item) => item.processId),
    [unknown],
  );
  const left = await until('the stale entries to go', async () => {
    const entries = await index.entries();
    return entries.length === 2 ? entries : undefined;
  });
  assert.deepEqual(left.map((entry) => entry.effectId).sort(), [real.effectId, 'effect:in-flight'].sort());
});

test('redis: a commit that makes an effect Unknown is not sent when its index entry cannot be written', async () => {
  const prefix = freshPrefix();
  const host = onRedis(prefix);
  // Every shard of the index is a string: HSET fails (WRONGTYPE), as a failed write would.
  for (let shard = 0; shard < defaultUnknownIndexShards; shard += 1) await raw.set(unknownIndexShardKey(prefix, shard), 'blocked');
  const { processId } = await start(host, 'demo.unreliable', { mode: 'unknown', replayable: false });
  const stopped = await until('the tree to stop on the refused commit', async () => {
    const view = await host.inspectProcess(processId);
    return view.runtimeError !== null ? view : undefined;
  });
  assert.match(stopped.runtimeError!.message, /unknown index write/);
  assert.deepEqual(stopped.unknownEffectIds, [], 'no Unknown was committed without its entry');
});
