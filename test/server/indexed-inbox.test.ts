import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { ProcessId } from '../../src/kernel/identity.js';
import type { EngineHost } from '../../src/server/engine-host.js';
import type { WaitQuery, WaitView } from '../../src/server/host.js';
import { IndexedInbox } from '../../src/server/indexed-inbox.js';
import { readHeadVersions } from '../../src/store/redis/head-versions.js';
import { waitIndexShardKey } from '../../src/store/redis/keys.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { defaultWaitIndexShards, RedisWaitIndex, type WaitIndexEntry } from '../../src/store/redis/wait-index.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { freshPrefix, redisHost, start } from './harness.js';

/**
 * The Redis-mode inbox across Hosts on one Redis: listed from the open-wait index, verified against
 * the heads, the same on a Host that never held the tree; phantom entries (an index write whose
 * commit never landed) are never listed, and are removed once their commit can no longer land.
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

function host(prefix: string): EngineHost {
  const made = redisHost({ url: server.url, prefix });
  hosts.push(made.host);
  clients.push(made.redis);
  return made.host;
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

async function waitOf(on: EngineHost, processId: string, query: WaitQuery = {}): Promise<WaitView> {
  return until(`the wait of ${processId}`, async () => (await on.waits(query)).find((wait) => wait.processId === processId));
}

async function indexSize(prefix: string): Promise<number> {
  let size = 0;
  for (let shard = 0; shard < defaultWaitIndexShards; shard += 1) size += await raw.hlen(waitIndexShardKey(prefix, shard));
  return size;
}

test('a wait opened on one Host is listed, identically, on another; answered, it is gone from both and from the index', async () => {
  const prefix = freshPrefix();
  const a = host(prefix);
  const b = host(prefix);
  const started = await start(a, 'demo.approval', { subject: 'two hosts' }, { tenant: 'acme' });
  const onA = await waitOf(a, started.processId);
  const onB = await waitOf(b, started.processId);
  assert.deepEqual(onB, onA);
  assert.equal(onB.deployment, 'demo.approval');
  assert.equal(onB.waitKind, 'external');
  assert.notEqual(onB.answerSchema, null, 'the descriptor part of the view travels');
  assert.equal(await indexSize(prefix), 1);

  // Tenant and deployment filters apply to the indexed list.
  assert.equal((await b.waits({ tenant: 'acme' })).length, 1);
  assert.equal((await b.waits({ tenant: 'other' })).length, 0);
  assert.equal((await b.waits({ deployment: 'demo.echo' })).length, 0);
  assert.equal((await b.waits({ rootId: started.processId })).length, 1);

  await a.deliverSignals(started.processId, [{ id: 'answer', waitId: onA.waitId, payload: { approved: true } }]);
  await until('the wait to close on B', async () => ((await b.waits()).length === 0 ? true : undefined));
  assert.equal((await a.waits()).length, 0);
  await until('the entry to leave the index', async () => ((await indexSize(prefix)) === 0 ? true : undefined));
});

test('a Host that restored nothing lists the waits of trees no Host holds (the writer closed)', async () => {
  const prefix = freshPrefix();
  const a = host(prefix);
  const started = await start(a, 'demo.approval', { subject: 'orphan' });
  const before = await waitOf(a, started.processId);
  await a.close(1_000);
  const fresh = host(prefix);
  assert.deepEqual(await waitOf(fresh, started.processId), before);

  // Restoring elsewhere keeps the entry and its `since`; answering there removes it.
  await fresh.restoreTree(started.processId);
  assert.deepEqual(await waitOf(fresh, started.processId), before);
  assert.equal(await indexSize(prefix), 1);
  await fresh.deliverSignals(started.processId, [{ id: 'answer', waitId: before.waitId, payload: { approved: false } }]);
  await until('the entry to leave the index', async () => ((await indexSize(prefix)) === 0 ? true : undefined));
  assert.equal((await fresh.waits()).length, 0);
});

test('an entry whose commit never landed is not listed; it is removed once its head is at or past that commit or under another writer', async () => {
  const prefix = freshPrefix();
  const a = host(prefix);
  const started = await start(a, 'demo.approval', { subject: 'phantoms' });
  const real = await waitOf(a, started.processId);
  const store = new RedisTreeCommitter({ redis: raw, keyPrefix: prefix });
  const head = await store.loadHead(ProcessId.parse(started.processId));
  assert.ok(head !== undefined);
  const index = new RedisWaitIndex({ redis: raw, keyPrefix: prefix });
  const phantom = (waitId: string, incarnation: string, sequence: bigint): WaitIndexEntry => ({
    rootId: started.processId,
    processId: started.processId,
    waitId,
    incarnation,
    sequence: sequence.toString(),
    since: '2000-01-01T00:00:00Z',
    answerSchema: null,
    description: null,
  });
  const inFlight = phantom('wait:in-flight', head.incarnationId.toString(), head.sequence + 1n);
  const refused = phantom('wait:refused', head.incarnationId.toString(), head.sequence);
  const fenced = phantom('wait:fenced', 'incarnation:another-writer', head.sequence + 5n);
  const gone = { ...phantom('wait:no-head', head.incarnationId.toString(), 9n), rootId: ProcessId.newRoot().toString() };
  await index.write([inFlight, refused, fenced, gone]);

  const listed = await a.waits();
  assert.deepEqual(
    listed.map((wait) => wait.waitId),
    [real.waitId],
    'only the wait the head confirms',
  );
  const fields = async (): Promise<string[]> => {
    const all: string[] = [];
    for (let shard = 0; shard < defaultWaitIndexShards; shard += 1) all.push(...(await raw.hkeys(waitIndexShardKey(prefix, shard))));
    return all.map((field) => field.split(' ')[2] as string).sort();
  };
  // The removal is lazy (after the answer): poll for it.
  await until('stale entries to go', async () => ((await fields()).length === 2 ? true : undefined));
  assert.deepEqual(await fields(), [real.waitId, 'wait:in-flight'].sort());
});

test('a commit that opens a wait is not sent when its index entry cannot be written: nothing waits unlisted', async () => {
  const prefix = freshPrefix();
  const a = host(prefix);
  // Every shard a string: HSET answers WRONGTYPE, as an unreachable index would fail.
  for (let shard = 0; shard < defaultWaitIndexShards; shard += 1) await raw.set(waitIndexShardKey(prefix, shard), 'not a hash');
  const started = await start(a, 'demo.approval', { subject: 'no index' });
  const view = await until('the runtime to stop on the failed commit', async () => {
    const inspected = await a.inspectProcess(started.processId);
    return inspected.runtimeError === null ? undefined : inspected;
  });
  assert.equal(view.runtimeError?.code, 'engine.tree.committer_failed');
  const store = new RedisTreeCommitter({ redis: raw, keyPrefix: prefix });
  const head = await store.loadHead(ProcessId.parse(started.processId));
  assert.notEqual(head?.snapshot.root.status, 'waiting', 'the waiting checkpoint never landed');
});

test('the process list reads each root from its stored head: a Host whose copy another Host fenced lists the truth', async () => {
  const prefix = freshPrefix();
  const a = host(prefix);
  const b = host(prefix);
  const started = await start(a, 'demo.approval', { subject: 'list' }, { tenant: 'acme' });
  const wait = await waitOf(a, started.processId);
  const statuses = async (on: EngineHost, status?: string, tenant?: string) =>
    (await on.listProcesses({ ...(status === undefined ? {} : { status }), ...(tenant === undefined ? {} : { tenant }) })).items.map((item) => `${item.processId}:${item.status}`);
  assert.deepEqual(await statuses(b, 'waiting'), [`${started.processId}:waiting`], 'B lists a tree it never held, by status');
  assert.deepEqual(await statuses(b, undefined, 'acme'), [`${started.processId}:waiting`]);
  assert.deepEqual(await statuses(b, undefined, 'other'), []);

  // B takes the tree over and finishes it; A still holds its fenced copy in memory.
  await b.restoreTree(started.processId);
  await b.deliverSignals(started.processId, [{ id: 'answer', waitId: wait.waitId, payload: { approved: true } }]);
  await b.awaitResult(started.processId, 10_000);
  for (const on of [a, b]) {
    assert.deepEqual(await statuses(on, 'completed'), [`${started.processId}:completed`]);
    assert.deepEqual(await statuses(on, 'waiting'), []);
    assert.deepEqual(await on.waits(), []);
  }
});

test('one entry per open wait: a pause keeps the wait and its since; the next wait replaces the answered one; a cancel removes it', async () => {
  const prefix = freshPrefix();
  const a = host(prefix);
  const b = host(prefix);
  const counter = await start(a, 'demo.counter', { target: 3 });
  const first = await waitOf(b, counter.processId);
  await a.control(counter.processId, 'pause', 'hold');
  await until('paused', async () => ((await b.inspectProcess(counter.processId)).status === 'paused' ? true : undefined));
  assert.deepEqual(await waitOf(b, counter.processId), first, 'a paused process keeps its wait open');
  await a.control(counter.processId, 'resume');
  await until('waiting again', async () => ((await b.inspectProcess(counter.processId)).status === 'waiting' ? true : undefined));
  assert.deepEqual(await waitOf(b, counter.processId), first, 'resuming into the same wait does not move since');

  await a.deliverSignals(counter.processId, [{ id: 'add-1', waitId: first.waitId, payload: { add: 1 } }]);
  const second = await until('the second wait', async () => {
    const listed = (await b.waits()).find((wait) => wait.processId === counter.processId);
    return listed !== undefined && listed.waitId !== first.waitId ? listed : undefined;
  });
  assert.ok(second.since >= first.since);
  await until('one entry left', async () => ((await indexSize(prefix)) === 1 ? true : undefined));

  await a.control(counter.processId, 'cancel');
  await until('an empty inbox', async () => ((await b.waits()).length === 0 ? true : undefined));
  await until('an empty index', async () => ((await indexSize(prefix)) === 0 ? true : undefined));
});

test('a restore indexes the open waits a tree has without entries (data from before the index), since from the log', async () => {
  const prefix = freshPrefix();
  const a = host(prefix);
  const started = await start(a, 'demo.approval', { subject: 'before the index' });
  const original = await waitOf(a, started.processId);
  await a.close(1_000);
  for (let shard = 0; shard < defaultWaitIndexShards; shard += 1) await raw.del(waitIndexShardKey(prefix, shard));
  const b = host(prefix);
  assert.deepEqual(await b.waits(), []);
  await b.restoreTree(started.processId);
  assert.deepEqual(await waitOf(b, started.processId), original);
});

test('a node without the deployment lists the wait with the descriptor parts its writer stored', async () => {
  const prefix = freshPrefix();
  const a = host(prefix);
  const started = await start(a, 'demo.approval', { subject: 'no descriptor here' });
  const full = await waitOf(a, started.processId);
  const store = new RedisTreeCommitter({ redis: raw, keyPrefix: prefix });
  const blind = new IndexedInbox({
    index: new RedisWaitIndex({ redis: raw, keyPrefix: prefix }),
    headVersions: (roots) => readHeadVersions(raw, prefix, roots),
    loadHead: (root) => store.loadHead(ProcessId.parse(root)),
    describe: () => undefined,
  });
  assert.deepEqual(await blind.list(), [full]);
});
