import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { TreeCheckpoint } from '../../../src/kernel/commit.js';
import { KernelError } from '../../../src/kernel/errors.js';
import { ProcessId, TreeIncarnationId } from '../../../src/kernel/identity.js';
import type { TreeSnapshot } from '../../../src/kernel/tree-snapshot.js';
import type { EventLogEntry, EventLogFields } from '../../../src/store/redis/log-entry.js';
import { RedisTreeCommitter, type RedisTreeCommitterOptions } from '../../../src/store/redis/redis-committer.js';
import { conformanceTrees, type ConformanceTrees } from '../../../src/testing/conformance-trees.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

let server: RedisServer;
let redis: Redis;
let prefixes = 0;

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.port, '127.0.0.1');
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

function committer(options: Partial<RedisTreeCommitterOptions> = {}): RedisTreeCommitter {
  prefixes += 1;
  return new RedisTreeCommitter({ redis, keyPrefix: `e${process.pid}-${prefixes}`, ...options });
}

/** A tree whose every commit carries event-log entries. */
class Tree {
  readonly trees: ConformanceTrees = conformanceTrees(ProcessId.newRoot(), TreeIncarnationId.random());
  #head: TreeSnapshot | undefined;
  #sequence = 0n;

  constructor(readonly store: RedisTreeCommitter) {}

  get rootId(): ProcessId {
    return this.trees.rootId;
  }

  async commit(...events: EventLogFields[]): Promise<readonly string[]> {
    const snapshot = this.trees.running(Number(this.#sequence));
    const checkpoint =
      this.#head === undefined
        ? TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot })
        : TreeCheckpoint.create({ kind: 'progress', sequence: this.#sequence + 1n, previous: this.#head.digest, snapshot });
    const receipt = await this.store.commit(checkpoint, { entries: events });
    this.#head = snapshot;
    this.#sequence = checkpoint.sequence;
    return receipt.eventIds;
  }
}

/** Resolves once `count` clients are blocked (in XREAD) on the server: a barrier, not a sleep. */
async function blockedClients(count: number): Promise<void> {
  for (;;) {
    const info = await redis.info('clients');
    const blocked = Number(/blocked_clients:(\d+)/.exec(info)?.[1] ?? '0');
    if (blocked >= count) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

test('event log: readAfter returns committed entries after an id, oldest first, with their fields', async () => {
  const tree = new Tree(committer());
  assert.deepEqual(await tree.store.events.entriesAfter(tree.rootId), []);
  const first = await tree.commit({ type: 'started', data: '{"a":1}' });
  const second = await tree.commit({ type: 'step', data: '1' }, { type: 'step', data: '2' });
  const all = await tree.store.events.entriesAfter(tree.rootId, '0');
  assert.deepEqual(
    all.map((entry) => entry.id),
    [...first, ...second],
  );
  assert.deepEqual(all[0]?.fields, { type: 'started', data: '{"a":1}' });
  assert.deepEqual(
    (await tree.store.events.entriesAfter(tree.rootId, first[0])).map((entry) => entry.fields.data),
    ['1', '2'],
  );
  assert.deepEqual(
    (await tree.store.events.entriesAfter(tree.rootId, '0', 2)).map((entry) => entry.id),
    [first[0], second[0]],
  );
  assert.deepEqual(await tree.store.events.entriesAfter(tree.rootId, second[1]), []);
  await assert.rejects(tree.store.events.entriesAfter(tree.rootId, 'not-an-id'), TypeError);
  await assert.rejects(tree.store.events.entriesAfter(tree.rootId, '0', 0), TypeError);
});

test('event log: tail yields entries as commits append them (blocking reads) and ends on abort', async () => {
  const tree = new Tree(committer());
  const [startId] = await tree.commit({ type: 'started' });
  const controller = new AbortController();
  const seen: EventLogEntry[] = [];
  const tail = (async () => {
    for await (const entry of tree.store.events.tailEntries(tree.rootId, startId, { signal: controller.signal })) {
      seen.push(entry);
      if (seen.length === 3) controller.abort();
    }
  })();
  await blockedClients(1);
  const ids = [...(await tree.commit({ type: 'a' })), ...(await tree.commit({ type: 'b' }, { type: 'c' }))];
  await tail;
  assert.deepEqual(seen.map((entry) => entry.id), ids);
  assert.deepEqual(seen.map((entry) => entry.fields.type), ['a', 'b', 'c']);
});

test('event log: tail from "$" skips existing entries; abort while blocked ends the iteration and frees the connection', async () => {
  const tree = new Tree(committer());
  await tree.commit({ type: 'old' });
  const controller = new AbortController();
  const iterator = tree.store.events.tailEntries(tree.rootId, '$', { signal: controller.signal });
  const next = iterator.next();
  await blockedClients(1);
  const [fresh] = await tree.commit({ type: 'new' });
  const first = await next;
  assert.equal(first.done, false);
  assert.equal((first.value as EventLogEntry).id, fresh);
  // Blocked again with nothing to read: abort releases it.
  const pending = iterator.next();
  await blockedClients(1);
  controller.abort();
  assert.deepEqual(await pending, { done: true, value: undefined });
  // The dedicated connection is gone.
  for (;;) {
    const info = await redis.info('clients');
    if (Number(/blocked_clients:(\d+)/.exec(info)?.[1]) === 0) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
});

test('event log: close() ends every tail; a tail on a closed log is refused', async () => {
  const store = committer();
  const tree = new Tree(store);
  await tree.commit({ type: 'started' });
  const iterator = store.events.tailEntries(tree.rootId, '$');
  const pending = iterator.next();
  await blockedClients(1);
  await store.close();
  assert.deepEqual(await pending, { done: true, value: undefined });
  await assert.rejects(store.events.tailEntries(tree.rootId, '0').next(), (error) => error instanceof KernelError && error.code === 'committer_unavailable');
});

test('event log: the stream is trimmed to an approximate MAXLEN', async () => {
  const tree = new Tree(committer({ eventLogMaxLen: 100 }));
  const batch = Array.from({ length: 50 }, (_, index) => ({ type: 'e', n: String(index) }));
  let last: readonly string[] = [];
  for (let round = 0; round < 20; round += 1) last = await tree.commit(...batch);
  const length = await tree.store.events.length(tree.rootId);
  // 1000 appended; `MAXLEN ~ 100` trims whole stream nodes (100 entries each by default), so the
  // log keeps at least 100 and well under 1000.
  assert.ok(length >= 100 && length <= 200, `length ${length}`);
  const kept = await tree.store.events.entriesAfter(tree.rootId, '0', 1_000);
  assert.equal(kept.length, length);
  assert.equal(kept.at(-1)?.id, last.at(-1), 'the newest entries are kept');
  const ids = kept.map((entry) => entry.id);
  assert.deepEqual([...ids].sort(compareIds), ids, 'ids ascend');
});

function compareIds(left: string, right: string): number {
  const [lm, ls] = left.split('-').map(BigInt) as [bigint, bigint];
  const [rm, rs] = right.split('-').map(BigInt) as [bigint, bigint];
  return lm === rm ? Number(ls - rs) : lm < rm ? -1 : 1;
}
