import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { openSse, readSse, streamPath, type SseEvent } from '../plugins/sse-harness.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { spawnServe } from '../helpers/scope-serve.js';

/**
 * The restart scenario with real processes: `scope serve` in Redis mode, demo.approval
 * started and waiting, the server SIGKILLed, a new server started over the same Redis, the tree
 * taken over by it once the dead server's lease lapsed (no manual restore), the wait answered, the result read; the SSE stream resumed from the last id
 * seen before the crash shows every later committed event exactly once.
 */

let redis: RedisServer;
const children: ChildProcess[] = [];

before(async () => {
  redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await redis?.stop();
});

async function serve(prefix: string): Promise<{ child: ChildProcess; url: string }> {
  // A short node lease: the crashed server's trees are ownerless soon after the crash.
  return spawnServe({ SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: prefix, SCOPE_NODE_LEASE_MS: '1500', SCOPE_NODE_RENEW_MS: '250' }, (child) => children.push(child));
}

async function json(response: Response): Promise<any> {
  return response.json();
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

test('redis mode survives a SIGKILLed server: restore, answer, result; the resumed stream repeats and skips nothing', async () => {
  const prefix = `e2e${process.pid}`;
  const first = await serve(prefix);
  const started = await post(`${first.url}/v1/processes`, { deployment: 'demo.approval', input: { subject: 'restart' } });
  assert.equal(started.status, 201);
  const rootId = (await json(started)).processId as string;

  // Follow the live stream until the process waits; remember the last id seen before the crash.
  const live = await openSse(`${first.url}${streamPath(rootId)}`);
  await live.waitFor((event) => event.event === 'agent.step.committed' && event.data.payload?.status === 'waiting', 'the waiting commit');
  const before = live.events.filter((event) => event.id !== undefined);
  const lastId = before.at(-1)?.id as string;
  live.close();
  const waits = await json(await fetch(`${first.url}/v1/waits`));
  const waitId = waits.items.find((wait: { processId: string }) => wait.processId === rootId).waitId as string;

  first.child.kill('SIGKILL');
  await new Promise((resolve) => first.child.once('exit', resolve));

  const second = await serve(prefix);
  // Reads come from the stored head.
  const inspected = await json(await fetch(`${second.url}/v1/processes/${encodeURIComponent(rootId)}`));
  assert.equal(inspected.status, 'waiting');
  // The tree is parked (waiting for its answer): no node takes it over; it is ownerless once the dead
  // server's lease lapses, and a command restores it where it lands. Nothing is active meanwhile.
  assert.equal((await json(await fetch(`${second.url}/v1/trees/${encodeURIComponent(rootId)}`))).active, false);
  // While the dead server's lease is live the answer is 503 owner_unreachable (Retry-After: 1); the
  // client retries the same signal by its id until the lease lapsed and the answer restores the tree.
  const answer = () =>
    post(`${second.url}/v1/processes/${encodeURIComponent(rootId)}/signals`, {
      signals: [{ id: 'answer', waitId, payload: { approved: true, comment: 'after the crash' } }],
    });
  let answered = await answer();
  const deadline = performance.now() + 10_000;
  while (answered.status === 503) {
    assert.equal((await json(answered)).code, 'owner_unreachable');
    assert.ok(performance.now() < deadline, 'the lease lapsed');
    await new Promise((resolve) => setTimeout(resolve, 100));
    answered = await answer();
  }
  assert.equal(answered.status, 200);
  assert.deepEqual(await json(answered), { accepted: true });
  const result = await json(await fetch(`${second.url}/v1/processes/${encodeURIComponent(rootId)}/result?waitMs=10000`));
  assert.equal(result.status, 'completed');
  assert.equal(result.output.comment, 'after the crash');

  const resumed = await readSse(`${second.url}${streamPath(rootId)}`, { 'last-event-id': lastId });
  const full = await readSse(`${second.url}${streamPath(rootId)}`);
  const committed = (events: SseEvent[]) => events.filter((event) => event.id !== undefined && event.data.phase === 'committed');
  const ids = (events: SseEvent[]) => events.map((event) => event.id as string);
  // Exactly once: no position repeats, and resume = the full log after the cursor.
  assert.equal(new Set(ids(full.events.filter((e) => e.id !== undefined))).size, full.events.filter((e) => e.id !== undefined).length);
  const fullIds = ids(full.events.filter((event) => event.id !== undefined));
  assert.deepEqual(ids(resumed.events.filter((event) => event.id !== undefined)), fullIds.slice(fullIds.indexOf(lastId) + 1));
  // Every committed event before the crash is still in the log, and the restore and finish are after it.
  for (const event of committed(before)) assert.ok(fullIds.includes(event.id as string), `committed ${event.event} ${event.id} survived`);
  const afterNames = committed(resumed.events).map((event) => event.event);
  assert.ok(afterNames.includes('agent.process.restored'));
  assert.ok(afterNames.includes('agent.signal.accepted'));
  assert.equal(afterNames.at(-1), 'agent.process.finished');
  assert.equal(resumed.events.at(-1)?.event, 'scope.stream.end');

  second.child.kill('SIGTERM');
  await new Promise((resolve) => second.child.once('exit', resolve));
});
