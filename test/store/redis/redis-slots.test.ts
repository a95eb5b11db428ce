import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { EffectBoundary, TreeActivation, TreeCheckpoint } from '../../../src/kernel/commit.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import { RedisIdempotencyStore } from '../../../src/store/redis/idempotency-store.js';
import { eventsKey, factsKey, headKey, idempotencyPointerKey, nodeLeaseKey, purgedKey, recordKey } from '../../../src/store/redis/keys.js';
import { RedisTreeCommitter } from '../../../src/store/redis/redis-committer.js';
import { gateLuaScripts, luaScripts } from '../../../src/store/redis/scripts.js';
import { RedisHostGateStore } from '../../../src/store/redis/host-gate-store.js';
import { hostGateKey, hostGateLiveKey } from '../../../src/store/redis/keys.js';
import { RedisWaitIndex } from '../../../src/store/redis/wait-index.js';
import { RedisUnknownIndex } from '../../../src/store/redis/unknown-index.js';
import { RedisNodeRegistry } from '../../../src/store/redis/node-registry.js';
import { conformanceTrees } from '../../../src/testing/conformance-trees.js';
import { clusterSlot, crc16, hashTagOf, startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

/**
 * Redis Cluster safety: every key a script receives, and every key the script's own commands
 * touch, hashes to one slot. Slots are computed here with our own CRC16, which is checked against
 * a cluster-enabled redis-server's `CLUSTER KEYSLOT`.
 */

let plain: RedisServer;
let cluster: RedisServer;
const clients: Redis[] = [];

before(async () => {
  [plain, cluster] = await Promise.all([
    startRedisServer(),
    startRedisServer({ extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'] }),
  ]);
});

after(async () => {
  for (const client of clients) client.disconnect();
  await Promise.all([plain?.stop(), cluster?.stop()]);
});

function connect(server: RedisServer): Redis {
  const client = new Redis(server.port, '127.0.0.1');
  clients.push(client);
  return client;
}

test('redis slots: CRC16/XMODEM and hash tags follow the Redis Cluster specification', async () => {
  assert.equal(crc16(Buffer.from('123456789')), 0x31c3);
  assert.equal(hashTagOf('scope:{process:ab}:head'), 'process:ab');
  assert.equal(hashTagOf('{}x{y}'), '{}x{y}', 'an empty tag hashes the whole key');
  assert.equal(hashTagOf('a{b'), 'a{b');
  assert.equal(hashTagOf('x{a}{b}'), 'a', 'only the first tag counts');
  const redis = connect(cluster);
  const root = ProcessId.newRoot();
  const samples = [
    'somekey',
    'foo{hash_tag}',
    '{}',
    headKey('scope', root),
    factsKey('scope', root),
    recordKey('my.prefix', root, 'idem:a'),
    ...Array.from({ length: 50 }, (_, index) => `key-${index}-${'x'.repeat(index)}`),
  ];
  for (const key of samples) {
    assert.equal(clusterSlot(key), await redis.cluster('KEYSLOT', key), key);
  }
});

interface MonitoredCommand {
  readonly source: string;
  readonly args: readonly string[];
}

/** Declared keys of an EVAL/EVALSHA line: args = [command, script|sha, numkeys, key...]. */
function declaredKeys(args: readonly string[]): string[] {
  const count = Number(args[2]);
  return args.slice(3, 3 + count);
}

/** Keys a script's inner command touches (the commands our scripts use). */
/** The idempotency scripts: their keys are directory keys (a pointer; the start fence takes the tree's own). */
const directoryScripts = ['fenceStart', 'idempotencyClaim', 'idempotencyCommitting', 'idempotencyPromote', 'idempotencyRelease', 'idempotencyReplace', 'indexEntriesRemove'];
/** The node registry's scripts: a node's keys, under its own tag `{node:<id>}` (tested below). */
const nodeScripts = ['registerNode', 'renewNodeLease'];

/**
 * The script an EVAL/EVALSHA line runs: EVALSHA names the sha; an EVAL carries the source (MONITOR
 * escapes it), whose header starts with the script's name.
 */
function scriptNameOf(args: readonly string[]): string | undefined {
  const shas = new Map([...luaScripts().values()].map((script) => [script.sha, script.name]));
  return shas.get(args[1] ?? '') ?? /^--\[\[(?:\\n|\s)+(\w+):/.exec(args[1] ?? '')?.[1];
}

function touchedKeys(args: readonly string[]): string[] {
  const command = (args[0] ?? '').toUpperCase();
  if (command === 'DEL' || command === 'EXISTS') return args.slice(1);
  return args.length > 1 ? [args[1] as string] : [];
}

test('redis slots: every key each script receives, and every key it touches, is in one slot', async () => {
  const redis = connect(plain);
  const monitor = await connect(plain).monitor();
  const seen: MonitoredCommand[] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => seen.push({ source, args }));
  try {
    const store = new RedisTreeCommitter({ redis, keyPrefix: 'slots' });
    const trees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
    const writes = { entries: [{ type: 'e' }], records: [{ suffix: 'r1', value: 'v' }, { suffix: 'r2', value: 'w', ttlMs: 1_000 }] };
    await store.commit(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: trees.running(0) }), writes);
    const pending = EffectBoundary.create({
      sequence: 2n,
      resolution: false,
      processId: trees.rootId,
      effectId: trees.effectId,
      previous: trees.running(0).digest,
      snapshot: trees.effect('pending'),
    });
    await store.commit(pending, writes);
    const activation = TreeActivation.create({
      previousIncarnationId: trees.incarnationId,
      previousDigest: trees.effect('pending').digest,
      snapshot: trees.completed().withIncarnation(TreeIncarnationId.random()),
    });
    await store.commit(activation, writes);
    const takeover = TreeActivation.create({
      previousIncarnationId: activation.snapshot.incarnationId,
      previousDigest: activation.snapshot.digest,
      snapshot: activation.snapshot.withIncarnation(TreeIncarnationId.random()),
    });
    await store.takeOverTree(takeover, '', writes);
    await store.reconcile(activation);
    await store.loadTree(trees.rootId);
    await store.events.entriesAfter(trees.rootId, '0');
    await store.readRecord(trees.rootId, 'r1');
    const root = trees.rootId.toString();
    store.events.append(root, [{ type: 'agent.delta', processId: root, data: JSON.stringify({ process_id: root }) }]);
    assert.equal(await store.purgeTree(trees.rootId), 'purged');
    // The monitor sees this PING after everything above: a barrier, not a wait.
    const sawPing = new Promise<void>((resolve) => {
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (args[0]?.toUpperCase() === 'PING') resolve();
      });
    });
    await redis.ping();
    await sawPing;
  } finally {
    monitor.disconnect();
  }

  const scriptCalls = seen.filter((command) => /^eval(sha)?$/i.test(command.args[0] ?? ''));
  const called = new Set(scriptCalls.map((command) => scriptNameOf(command.args)));
  const treeScripts = [...luaScripts().keys()].filter((name) => !directoryScripts.includes(name) && !nodeScripts.includes(name));
  assert.deepEqual([...called].sort(), treeScripts.sort(), 'every tree script was exercised');
  const declared = new Set<string>();
  for (const call of scriptCalls) {
    const keys = declaredKeys(call.args);
    assert.ok(keys.length >= (scriptNameOf(call.args) === 'appendLog' ? 1 : 2), `${scriptNameOf(call.args)} declares its keys`);
    const slots = new Set(keys.map(clusterSlot));
    assert.equal(slots.size, 1, `${scriptNameOf(call.args)} receives keys in ${slots.size} slots: ${keys.join(', ')}`);
    for (const key of keys) declared.add(key);
  }
  // The scripts' own commands only touch keys that some script call declared (never a computed key).
  const inner = seen.filter((command) => command.source === 'lua');
  assert.ok(inner.length > 10, 'the monitor saw the scripts\' commands');
  for (const command of inner) {
    for (const key of touchedKeys(command.args)) {
      assert.ok(declared.has(key), `${command.args[0]} touches undeclared key ${key}`);
    }
  }
  // And every key of the tree — whatever the kind — is in the slot of its root.
  const root = scriptCalls.length > 0 ? hashTagOf(declaredKeys(scriptCalls[0]?.args ?? [])[0] ?? '') : '';
  assert.match(root, /^process:[0-9a-f]{32}$/);
  for (const key of declared) assert.equal(clusterSlot(key), clusterSlot(`{${root}}`), key);
  assert.ok([...declared].some((key) => key === purgedKey('slots', root)));
  assert.ok([...declared].some((key) => key === eventsKey('slots', root)));
  assert.ok([...declared].some((key) => key === recordKey('slots', root, 'r2')));
});

test('redis slots: the idempotency scripts take one pointer key each; the start fence takes its tree keys, in one slot', async () => {
  const redis = connect(plain);
  const monitor = await connect(plain).monitor();
  const seen: MonitoredCommand[] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => seen.push({ source, args }));
  const prefix = 'slots-idem';
  try {
    const store = new RedisTreeCommitter({ redis, keyPrefix: prefix });
    const idempotency = new RedisIdempotencyStore({ redis, keyPrefix: prefix, committer: store, waitMs: 0 });
    const digest = (n: number): string => String(n).repeat(64).slice(0, 64);
    const intent = (n: number, token: string) => ({ keyDigest: digest(n), requestDigest: 'r'.repeat(64), ttlMs: 60_000, token });
    // claim → committing → release: the root never committed, so the release fences it first.
    const first = await idempotency.claim(digest(1));
    assert.equal(first.kind, 'reserved');
    const lost = ProcessId.newRoot().toString();
    assert.equal(await idempotency.markCommitting(intent(1, first.kind === 'reserved' ? (first.token as string) : ''), lost), true);
    await idempotency.release(digest(1), first.kind === 'reserved' ? first.token : undefined);
    // claim → committing → promote.
    const second = await idempotency.claim(digest(2));
    const token = second.kind === 'reserved' ? (second.token as string) : '';
    const root = ProcessId.newRoot().toString();
    await idempotency.markCommitting(intent(2, token), root);
    await idempotency.promote(intent(2, token), root);
    // A pointer to a root without its record is free: the claim replaces it.
    await redis.set(idempotencyPointerKey(prefix, digest(3)), ProcessId.newRoot().toString());
    assert.equal((await idempotency.claim(digest(3))).kind, 'reserved');
    // The wait index's compare-and-delete takes one shard key.
    const root4 = ProcessId.newRoot().toString();
    const waitEntry = { rootId: root4, processId: root4, waitId: 'wait:x', incarnation: 'i', sequence: '1', since: 's', answerSchema: null, description: null, value: 'v' };
    await new RedisWaitIndex({ redis, keyPrefix: prefix }).remove([waitEntry]);
    // So does the Unknown index's.
    await new RedisUnknownIndex({ redis, keyPrefix: prefix }).remove([{ rootId: root4, processId: root4, effectId: 'effect:x', incarnation: 'i', sequence: '1', value: 'i 1' }]);
    const sawPing = new Promise<void>((resolve) => {
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (args[0]?.toUpperCase() === 'PING') resolve();
      });
    });
    await redis.ping();
    await sawPing;
  } finally {
    monitor.disconnect();
  }
  const calls = seen.filter((command) => /^eval(sha)?$/i.test(command.args[0] ?? ''));
  assert.deepEqual([...new Set(calls.map((call) => scriptNameOf(call.args)))].sort(), [...directoryScripts].sort(), 'every idempotency script was exercised');
  for (const call of calls) {
    const keys = declaredKeys(call.args);
    const name = scriptNameOf(call.args);
    if (name === 'fenceStart') {
      assert.equal(keys.length, 2);
      assert.equal(new Set(keys.map(clusterSlot)).size, 1, `fenceStart keys in one slot: ${keys.join(', ')}`);
    } else if (name === 'indexEntriesRemove') {
      assert.equal(keys.length, 1, 'indexEntriesRemove takes one shard');
      assert.match(keys[0] as string, new RegExp(`^${prefix}:(waits|unknowns):\\d+$`));
    } else {
      assert.equal(keys.length, 1, `${name} takes the pointer alone`);
      assert.match(keys[0] as string, new RegExp(`^${prefix}:idempotency:[0-9a-f]{64}$`));
    }
  }
});

test('redis slots: the node scripts take one node\'s keys, in one slot', async () => {
  const redis = connect(plain);
  const registry = new RedisNodeRegistry({ redis, keyPrefix: 'slots' });
  const monitor = await connect(plain).monitor();
  const seen: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => seen.push(args));
  try {
    const epoch = await registry.register('node-1', 'http://127.0.0.1:1', [], 1_000);
    await registry.renew('node-1', epoch, 1_000);
    const sawPing = new Promise<void>((resolve) => {
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (args[0]?.toUpperCase() === 'PING') resolve();
      });
    });
    await redis.ping();
    await sawPing;
  } finally {
    monitor.disconnect();
  }
  const calls = seen.filter((args) => /^eval(sha)?$/i.test(args[0] ?? ''));
  assert.deepEqual([...new Set(calls.map(scriptNameOf))].sort(), nodeScripts);
  for (const call of calls) {
    const keys = declaredKeys(call);
    assert.deepEqual([...new Set(keys.map(clusterSlot))], [clusterSlot(nodeLeaseKey('slots', 'node-1'))]);
  }
});


test('redis slots: the host-owned gate scripts take one gate\'s keys, or the caps\' {gates} keys, in one slot', async () => {
  const redis = connect(plain);
  const prefix = 'slots-gates';
  const store = new RedisHostGateStore({ redis, keyPrefix: prefix });
  const monitor = await connect(plain).monitor();
  const seen: MonitoredCommand[] = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => seen.push({ source, args }));
  const id = 'hostgate:0123456789abcdef0123456789abcdef';
  try {
    const reserved = await store.reserve({ id, tenant: 'acme', requestDigest: 'd', timeoutMs: 60_000 }, { perTenant: 5, cluster: 5 });
    assert.equal(reserved.kind, 'reserved');
    if (reserved.kind !== 'reserved') return;
    const spec = { id, tenant: 'acme', kind: 'form' as const, prompt: null, answerSchema: null, url: null, actor: null, requestId: null, requestDigest: 'd' };
    await store.write({ ...spec, createdAt: reserved.createdAt, expiresAt: reserved.expiresAt, state: 'open', closedAt: null, answerMeta: null, answer: null, tokenUsed: false });
    assert.equal((await store.answer(id, { answer: '1', digest: 'x', provenance: 'api', actor: null, requestId: null, viaToken: true })).kind, 'answered');
    assert.equal((await store.close(id))?.state, 'closed');
    const sawPing = new Promise<void>((resolve) => {
      monitor.on('monitor', (_time: string, args: string[]) => {
        if (args[0]?.toUpperCase() === 'PING') resolve();
      });
    });
    await redis.ping();
    await sawPing;
  } finally {
    monitor.disconnect();
    await store.shutdown();
  }
  const shas = new Map([...gateLuaScripts().values()].map((script) => [script.sha, script.name]));
  const calls = seen.filter((command) => /^eval(sha)?$/i.test(command.args[0] ?? ''));
  const nameOf = (args: readonly string[]) => shas.get(args[1] ?? '') ?? /^--\[\[(?:\\n|\s)+(\w+):/.exec(args[1] ?? '')?.[1];
  assert.deepEqual([...new Set(calls.map((call) => nameOf(call.args)))].sort(), [...gateLuaScripts().keys()].sort(), 'every gate script was exercised');
  const declared = new Set<string>();
  for (const call of calls) {
    const keys = declaredKeys(call.args);
    const expected = nameOf(call.args) === 'hostGateReserve' ? clusterSlot(hostGateLiveKey(prefix)) : clusterSlot(hostGateKey(prefix, id));
    assert.deepEqual([...new Set(keys.map(clusterSlot))], [expected], `${nameOf(call.args)}: ${keys.join(', ')}`);
    for (const key of keys) declared.add(key);
  }
  // The scripts' own commands touch only declared keys (PUBLISH names a channel; TIME nothing).
  const inner = seen.filter((command) => command.source === 'lua' && !['PUBLISH', 'TIME'].includes((command.args[0] ?? '').toUpperCase()));
  assert.ok(inner.length > 5);
  for (const command of inner) {
    for (const key of touchedKeys(command.args)) assert.ok(declared.has(key), `${command.args[0]} touches undeclared key ${key}`);
  }
});
