import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { TailOverflowError, type LogRecord, type StoredLogRecord } from '../../../src/store/event-log.js';
import { RedisEventLog } from '../../../src/store/redis/event-log.js';
import type { StreamBatch, StreamItem } from '../../../src/server/host.js';
import { LogReader } from '../../../src/server/log-reader.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';

let server: RedisServer;
let admin: Redis;
let prefixes = 0;

before(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
});

after(async () => {
  admin?.disconnect();
  await server?.stop();
});

const record = (n: number, root: string): LogRecord => ({ type: 'agent.delta', processId: root, data: JSON.stringify({ process_id: root, n }) });

/** A log on its own named client (`<name>` and `<name>:tail`) and key prefix. */
function eventLog(name: string, options: ConstructorParameters<typeof RedisEventLog>[0]['tail'] = {}): { log: RedisEventLog; redis: Redis } {
  prefixes += 1;
  const redis = new Redis(server.url, { connectionName: name });
  return { log: new RedisEventLog({ redis, keyPrefix: `st${process.pid}-${prefixes}`, tail: options }), redis };
}

/** Connections the server holds, by name. */
async function connectionsNamed(name: string): Promise<number> {
  const list = (await admin.client('LIST')) as string;
  return list.split('\n').filter((line) => line.includes(` name=${name} `)).length;
}

async function blockedClients(): Promise<number> {
  return Number(/blocked_clients:(\d+)/.exec(await admin.info('clients'))?.[1] ?? '0');
}

/** Polls an observable condition until it holds (no fixed sleeps). */
async function until(condition: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Reads a tail until `count` records arrived, then stops it. */
async function collect(log: RedisEventLog, root: string, after: string, count: number): Promise<StoredLogRecord[]> {
  const abort = new AbortController();
  const seen: StoredLogRecord[] = [];
  for await (const entry of log.tail(root, after, abort.signal)) {
    seen.push(entry);
    if (seen.length === count) abort.abort();
  }
  return seen;
}

test('shared tail: 200 tails over 4 trees use one blocking connection; each gets every entry once, in order', async () => {
  const { log, redis } = eventLog('tail-many');
  try {
    const roots = ['r0', 'r1', 'r2', 'r3'];
    const perTree = 50;
    const tails = Array.from({ length: 200 }, (_, index) => collect(log, roots[index % roots.length] as string, '0', perTree));
    await until(async () => (await blockedClients()) === 1, 'the shared read to block');
    assert.equal(await connectionsNamed('tail-many-tail'), 1, 'one tail connection for 200 tails');
    for (let n = 1; n <= perTree; n += 1) for (const root of roots) log.append(root, [record(n, root)]);
    const results = await Promise.all(tails);
    for (const [index, seen] of results.entries()) {
      assert.deepEqual(seen.map((entry) => JSON.parse(entry.data).n), Array.from({ length: perTree }, (_, n) => n + 1), `tail ${index}`);
    }
    // The last tail gone, the tail connection closes (an idle node holds none).
    await until(async () => (await connectionsNamed('tail-many-tail')) === 0, 'the idle tail connection to close');
    assert.equal(await connectionsNamed('tail-many'), 1);
  } finally {
    await log.close();
    redis.disconnect();
  }
});

test('shared tail: a tail that joins while the read blocks (BLOCK 60 s) gets its entries at once; one that leaves frees the read', async () => {
  const { log, redis } = eventLog('tail-join', { blockMs: 60_000 });
  try {
    const waiting = new AbortController();
    const idle = (async () => {
      for await (const _ of log.tail('quiet', '0', waiting.signal)) assert.fail('nothing is appended to quiet');
    })();
    await until(async () => (await blockedClients()) === 1, 'the read on quiet to block');
    const joinedAt = performance.now();
    const joined = collect(log, 'busy', '0', 1);
    // The append may land before or after the read is reissued with "busy" in it: both are covered.
    log.append('busy', [record(1, 'busy')]);
    assert.equal((await joined).length, 1);
    const joinMs = performance.now() - joinedAt;
    assert.ok(joinMs < 2_000, `joined in ${joinMs.toFixed(1)} ms, not after the 60 s block`);
    // Leaving: the iteration ends at once and the connection is not left blocked.
    await until(async () => (await blockedClients()) === 1, 'the read on quiet to block again');
    const leftAt = performance.now();
    waiting.abort();
    await idle;
    await until(async () => (await blockedClients()) === 0, 'the blocked read to be released');
    assert.ok(performance.now() - leftAt < 2_000);
  } finally {
    await log.close();
    redis.disconnect();
  }
});

test('shared tail: a reader that takes nothing is ended with TailOverflowError; the others get everything', async () => {
  const { log, redis } = eventLog('tail-slow', { maxBuffered: 10, count: 5 });
  try {
    const slow = log.tail('t', '0', new AbortController().signal)[Symbol.asyncIterator]();
    const first = slow.next();
    const fast = collect(log, 't', '0', 100);
    await until(async () => (await blockedClients()) === 1, 'the shared read to block');
    log.append('t', [record(1, 't')]);
    assert.equal(JSON.parse(((await first).value as StoredLogRecord).data).n, 1);
    // The slow reader now takes nothing while 99 more arrive.
    for (let n = 2; n <= 100; n += 1) log.append('t', [record(n, 't')]);
    assert.deepEqual((await fast).map((entry) => JSON.parse(entry.data).n), Array.from({ length: 100 }, (_, n) => n + 1));
    // It gets what it buffered (in order, from where it stood), then the overflow.
    const late: number[] = [];
    await assert.rejects(
      (async () => {
        for (let next = await slow.next(); next.done !== true; next = await slow.next()) late.push(JSON.parse(next.value.data).n);
      })(),
      (error) => error instanceof TailOverflowError && error.rootId === 't' && error.maxBuffered === 10,
    );
    assert.deepEqual(late, Array.from({ length: late.length }, (_, n) => n + 2));
    assert.ok(late.length <= 10, `${late.length} buffered`);
    // Resuming from the last entry it read misses nothing.
    const resumed = await collect(log, 't', (await log.readAfter('t', '0', 200))[late.length]?.position as string, 100 - late.length - 1);
    assert.deepEqual(resumed.map((entry) => JSON.parse(entry.data).n), Array.from({ length: 100 - late.length - 1 }, (_, n) => n + late.length + 2));
  } finally {
    await log.close();
    redis.disconnect();
  }
});

test('shared tail: a tail that joins behind the others gets its history; the others get nothing twice', async () => {
  const { log, redis } = eventLog('tail-behind');
  try {
    log.append('t', [record(1, 't'), record(2, 't'), record(3, 't')]);
    const stored = await log.readAfter('t', '0', 10);
    const ahead = collect(log, 't', stored[2]?.position as string, 2);
    await until(async () => (await blockedClients()) === 1, 'the shared read to block');
    const behind = collect(log, 't', stored[0]?.position as string, 4);
    log.append('t', [record(4, 't'), record(5, 't')]);
    assert.deepEqual((await ahead).map((entry) => JSON.parse(entry.data).n), [4, 5]);
    assert.deepEqual((await behind).map((entry) => JSON.parse(entry.data).n), [2, 3, 4, 5]);
  } finally {
    await log.close();
    redis.disconnect();
  }
});

test('shared tail: a Redis with maxclients 20 serves 150 tails', async () => {
  const small = await startRedisServer({ extraArgs: ['--maxclients', '20'] });
  const redis = new Redis(small.url, { connectionName: 'tail-capped' });
  const log = new RedisEventLog({ redis, keyPrefix: `cap${process.pid}` });
  try {
    const tails = Array.from({ length: 150 }, (_, index) => collect(log, `t${index % 10}`, '0', 3));
    for (let n = 1; n <= 3; n += 1) for (let tree = 0; tree < 10; tree += 1) log.append(`t${tree}`, [record(n, `t${tree}`)]);
    const results = await Promise.all(tails);
    assert.ok(results.every((seen) => seen.map((entry) => JSON.parse(entry.data).n).join() === '1,2,3'));
    assert.equal(log.failedAppends, 0);
  } finally {
    await log.close();
    redis.disconnect();
    await small.stop();
  }
});

test('log reader: a stream whose live reading falls behind the shared tail ends "lagging" after what it had; a new one resumes', async () => {
  const { log, redis } = eventLog('tail-lagging', { maxBuffered: 5, count: 5 });
  try {
    const reader = new LogReader({ log, rootFinished: async () => false, drain: async () => undefined, shutdown: new AbortController().signal });
    log.append('lag', [record(1, 'lag')]);
    const [first] = await log.readAfter('lag', '0', 1);
    const stream = await reader.open('lag', { after: first?.position as string, signal: new AbortController().signal });
    const iterator = stream[Symbol.asyncIterator]();
    const pending = iterator.next();
    await until(async () => (await blockedClients()) === 1, 'the live tail to block');
    log.append('lag', [record(2, 'lag')]);
    const seen = [JSON.parse(((await pending).value as StreamItem).entry.data).n as number];
    // The stream takes nothing while 30 more arrive: past its buffer it is ended.
    for (let n = 3; n <= 32; n += 1) log.append('lag', [record(n, 'lag')]);
    await until(async () => (await log.readAfter('lag', '0', 100)).length === 32, 'every append');
    await until(() => log.tailCount === 0, 'the tail to be ended');
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) seen.push(JSON.parse(next.value.entry.data).n);
    assert.equal(stream.end, 'lagging');
    assert.deepEqual(seen, Array.from({ length: seen.length }, (_, n) => n + 2), 'what it had, in order');
    const held = await log.readAfter('lag', '0', 100);
    const resumed = await reader.open('lag', { after: held[seen.length]?.position as string, signal: AbortSignal.timeout(5_000) });
    const rest: number[] = [];
    for await (const item of resumed) {
      rest.push(JSON.parse(item.entry.data).n);
      if (rest.length === 32 - seen.length - 1) break;
    }
    assert.deepEqual([...seen, ...rest], Array.from({ length: 31 }, (_, n) => n + 2), 'nothing lost across the resume');
  } finally {
    await log.close();
    redis.disconnect();
  }
});

test('shared tail: every tail of a stream gets the same record objects; one that reads late takes all it missed as one batch, in order', async () => {
  const { log, redis } = eventLog('tail-batches');
  try {
    const prompt = new AbortController();
    const late = new AbortController();
    const eager = log.tailBatches('b', '0', prompt.signal)[Symbol.asyncIterator]();
    const lagging = log.tailBatches('b', '0', late.signal)[Symbol.asyncIterator]();
    const eagerFirst = eager.next();
    const lateFirst = lagging.next();
    await until(async () => (await blockedClients()) === 1, 'the shared read to block');
    log.append('b', [record(1, 'b')]);
    const seen = [...((await eagerFirst).value as readonly StoredLogRecord[])];
    const lateSeen = [...((await lateFirst).value as readonly StoredLogRecord[])];
    // Five appends, each its own script (one or more reads); only one of the tails reads meanwhile.
    for (let n = 2; n <= 6; n += 1) log.append('b', [record(n, 'b')]);
    while (seen.length < 6) seen.push(...((await eager.next()).value as readonly StoredLogRecord[]));
    const caughtUp = (await lagging.next()).value as readonly StoredLogRecord[];
    assert.deepEqual(caughtUp.map((entry) => JSON.parse(entry.data).n), [2, 3, 4, 5, 6], 'everything buffered, in one batch, in order');
    lateSeen.push(...caughtUp);
    assert.deepEqual(seen.map((entry) => JSON.parse(entry.data).n), [1, 2, 3, 4, 5, 6]);
    seen.forEach((entry, index) => assert.equal(lateSeen[index], entry, `record ${index + 1} is one object for both tails`));
    prompt.abort();
    late.abort();
    assert.equal((await eager.next()).done, true);
    assert.equal((await lagging.next()).done, true);
    await until(() => log.tailCount === 0, 'both tails to end');
  } finally {
    await log.close();
    redis.disconnect();
  }
});

test('log reader: the live batches of two streams hold the same entry objects (their SSE frame is encoded once)', async () => {
  const { log, redis } = eventLog('tail-shared-entries');
  try {
    const reader = new LogReader({ log, rootFinished: async () => false, drain: async () => undefined, shutdown: new AbortController().signal });
    const abort = new AbortController();
    const [one, two] = await Promise.all([reader.open('s', { signal: abort.signal }), reader.open('s', { signal: abort.signal })]);
    const first = (one?.batches?.() as AsyncIterable<StreamBatch>)[Symbol.asyncIterator]();
    const second = (two?.batches?.() as AsyncIterable<StreamBatch>)[Symbol.asyncIterator]();
    const [nextOne, nextTwo] = [first.next(), second.next()];
    await until(async () => (await blockedClients()) === 1, 'the live tails to block');
    log.append('s', [record(1, 's'), record(2, 's')]);
    const [batchOne, batchTwo] = [(await nextOne).value as StreamBatch, (await nextTwo).value as StreamBatch];
    assert.equal(batchOne.live, true);
    assert.deepEqual(batchOne.entries.map((entry) => JSON.parse(entry.data).n), [1, 2]);
    assert.equal(batchTwo.entries.length, 2);
    batchOne.entries.forEach((entry, index) => assert.equal(batchTwo.entries[index], entry, `entry ${index + 1}`));
    assert.ok(Object.isFrozen(batchOne.entries[0]), 'a shared entry cannot be changed by one stream');
    abort.abort();
    assert.equal((await first.next()).done, true);
    assert.equal((await second.next()).done, true);
    assert.equal(one?.end, 'aborted');
  } finally {
    await log.close();
    redis.disconnect();
  }
});
