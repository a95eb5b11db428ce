import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { ProcessId } from '../../src/kernel/identity.js';
import { waitIndexShardKey } from '../../src/store/redis/keys.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { defaultWaitIndexShards, RedisWaitIndex } from '../../src/store/redis/wait-index.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { spawnServe } from '../helpers/scope-serve.js';

/**
 * The inbox across real `scope serve` processes on one Redis: a wait opened on A is listed on B;
 * after SIGKILL of A and a restart (no restore) the restarted node and B both list it; answered, it
 * is gone everywhere; an index entry left by a writer that crashed before its commit is never listed.
 * `/v1/processes?status=` agrees on every node, read from the heads.
 */

let redis: RedisServer;
let raw: Redis;
const children: ChildProcess[] = [];

before(async () => {
  redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
  raw = new Redis(redis.url);
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  raw?.disconnect();
  await redis?.stop();
});

const prefix = `inbox${process.pid}`;

function serve(): Promise<{ child: ChildProcess; url: string }> {
  // Short leases: the killed node's trees are taken over within seconds.
  return spawnServe({ SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: prefix, SCOPE_NODE_LEASE_MS: '1500', SCOPE_NODE_RENEW_MS: '250' }, (child) => children.push(child));
}

interface Wait {
  processId: string;
  rootId: string;
  waitId: string;
  since: string;
  prompt: string | null;
  answerSchema: unknown;
}

async function waitsOn(url: string): Promise<Wait[]> {
  const response = await fetch(`${url}/v1/waits`);
  assert.equal(response.status, 200);
  return ((await response.json()) as { items: Wait[] }).items;
}

async function rootsOn(url: string, status: string): Promise<string[]> {
  const response = await fetch(`${url}/v1/processes?status=${status}&limit=100`);
  assert.equal(response.status, 200);
  return ((await response.json()) as { items: { processId: string }[] }).items.map((item) => item.processId).sort();
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, deadlineMs = 15_000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const listed = (url: string, processId: string) => until(`${processId} listed on ${url}`, async () => (await waitsOn(url)).find((wait) => wait.processId === processId));

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function startApproval(url: string, subject: string): Promise<string> {
  const started = await post(`${url}/v1/processes`, { deployment: 'demo.approval', input: { subject } });
  assert.equal(started.status, 201);
  return ((await started.json()) as { processId: string }).processId;
}

test('the inbox is complete on every node, after SIGKILL and a restart without restore; answered waits disappear everywhere', async () => {
  const a = await serve();
  const b = await serve();
  const fromA = await startApproval(a.url, 'opened on A');
  const fromB = await startApproval(b.url, 'opened on B');
  const waitA = await listed(a.url, fromA);
  assert.deepEqual(await listed(b.url, fromA), waitA, 'B lists A\'s wait with the same view');
  const waitB = await listed(a.url, fromB);

  a.child.kill('SIGKILL');
  await new Promise((resolve) => a.child.once('exit', resolve));
  const restarted = await serve();
  // Nobody restored anything: both nodes list both waits, as they were.
  for (const url of [restarted.url, b.url]) {
    const waits = await waitsOn(url);
    assert.deepEqual(waits.find((wait) => wait.processId === fromA), waitA);
    assert.deepEqual(waits.find((wait) => wait.processId === fromB), waitB);
  }

  // The process list agrees too, status filter included, read from the heads.
  for (const url of [restarted.url, b.url]) assert.deepEqual(await rootsOn(url, 'waiting'), [fromA, fromB].sort());

  // A writer that crashed between its index write and its commit leaves an entry its head does not
  // confirm (the entry a commit at the next sequence would have needed): listed nowhere.
  const store = new RedisTreeCommitter({ redis: raw, keyPrefix: prefix });
  const head = await store.loadHead(ProcessId.parse(fromA));
  assert.ok(head !== undefined);
  await new RedisWaitIndex({ redis: raw, keyPrefix: prefix }).write([
    { rootId: fromA, processId: fromA, waitId: 'wait:never-committed', incarnation: head.incarnationId.toString(), sequence: (head.sequence + 1n).toString(), since: '2000-01-01T00:00:00Z', answerSchema: null, description: null },
  ]);
  for (const url of [restarted.url, b.url]) assert.deepEqual((await waitsOn(url)).map((wait) => wait.waitId).sort(), [waitA.waitId, waitB.waitId].sort());

  // Answer both waits on B: A's once its dead owner's lease lapsed (until then 503 owner_unreachable,
  // which a client retries; the tree is taken over with no manual restore). Gone on every node.
  for (const [processId, waitId] of [[fromA, waitA.waitId], [fromB, waitB.waitId]] as const) {
    const answer = () => post(`${b.url}/v1/processes/${encodeURIComponent(processId)}/signals`, { signals: [{ id: `answer-${processId}`, waitId, payload: { approved: true } }] });
    const status = await until(`the answer to ${processId} admitted`, async () => {
      const answered = await answer();
      if (answered.status === 503 && ((await answered.json()) as { code: string }).code === 'owner_unreachable') return undefined;
      return answered.status;
    });
    assert.equal(status, 200);
  }
  for (const url of [restarted.url, b.url]) await until(`an empty inbox on ${url}`, async () => ((await waitsOn(url)).length === 0 ? true : undefined));
  for (const url of [restarted.url, b.url]) {
    await until(`both completed on ${url}`, async () => ((await rootsOn(url, 'completed')).length === 2 ? true : undefined));
    assert.deepEqual(await rootsOn(url, 'waiting'), []);
  }
  // The takeover moved the head to another writer: the crashed writer's entry can never land, and went.
  await until('an empty index', async () => {
    let size = 0;
    for (let shard = 0; shard < defaultWaitIndexShards; shard += 1) size += await raw.hlen(waitIndexShardKey(prefix, shard));
    return size === 0 ? true : undefined;
  });
});
