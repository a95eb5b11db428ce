import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { openSse, streamPath, type SseSession } from '../plugins/sse-harness.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { spawnServe } from '../helpers/scope-serve.js';

/**
 * One shared Redis tail per node, with real `scope serve` processes, real HTTP and a real Redis:
 * many SSE clients cost the node no more Redis connections; a Redis allowing 20 clients serves 150
 * streams; the per-node stream cap still counts; a long poll on a node that does not run the tree is
 * answered when the tree finishes on the node that does.
 */

const children: ChildProcess[] = [];
const servers: RedisServer[] = [];

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(servers.map((server) => server.stop()));
});

async function redisServer(extraArgs: string[] = []): Promise<{ server: RedisServer; admin: Redis }> {
  const server = await startRedisServer({ extraArgs });
  servers.push(server);
  return { server, admin: new Redis(server.url, { connectionName: 'test-admin' }) };
}

async function serve(redis: RedisServer, prefix: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string }> {
  return spawnServe({ SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: prefix, ...env }, (child) => children.push(child));
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const post = (url: string, body: unknown): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** Connections Redis holds, by client name. */
async function connectionsByName(admin: Redis): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const line of ((await admin.client('LIST')) as string).split('\n')) {
    const name = / name=(\S*)/.exec(line)?.[1];
    if (name === undefined) continue;
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/** The node's connections (every name it gives: `scope-…`). */
async function nodeConnections(admin: Redis): Promise<number> {
  let total = 0;
  for (const [name, count] of await connectionsByName(admin)) if (name.startsWith('scope-')) total += count;
  return total;
}

async function eventually(condition: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Starts demo.approval on `url` and resolves once it waits: its id and wait id. */
async function waitingApproval(url: string, subject: string): Promise<{ rootId: string; waitId: string }> {
  const started = await post(`${url}/v1/processes`, { deployment: 'demo.approval', input: { subject } });
  assert.equal(started.status, 201);
  const rootId = ((await started.json()) as { processId: string }).processId;
  let waitId: string | undefined;
  await eventually(async () => {
    const waits = (await (await fetch(`${url}/v1/waits`)).json()) as { items: { processId: string; waitId: string }[] };
    waitId = waits.items.find((wait) => wait.processId === rootId)?.waitId;
    return waitId !== undefined;
  }, 'the approval to wait');
  return { rootId, waitId: waitId as string };
}

async function answer(url: string, rootId: string, waitId: string): Promise<void> {
  const answered = await post(`${url}/v1/processes/${encodeURIComponent(rootId)}/signals`, { signals: [{ id: 'answer', waitId, payload: { approved: true } }] });
  assert.equal(answered.status, 200);
}

/** Every stream saw the same events, each once, ids ascending, and ended with scope.stream.end. */
function assertComplete(sessions: readonly SseSession[], reference: readonly string[]): void {
  for (const [index, session] of sessions.entries()) {
    const ids = session.events.filter((event) => event.id !== undefined).map((event) => event.id as string);
    assert.deepEqual(ids, reference, `stream ${index} holds every event once, in order`);
    assert.equal(session.events.at(-1)?.event, 'scope.stream.end', `stream ${index} ended completed`);
  }
}

test('200 SSE clients on one node: its Redis connections stay constant; every stream gets every event once, in order', async () => {
  const { server, admin } = await redisServer();
  try {
    const node = await serve(server, `many${process.pid}`);
    const { rootId, waitId } = await waitingApproval(node.url, 'many');
    const idle = await nodeConnections(admin);
    const sessions = await Promise.all(Array.from({ length: 200 }, () => openSse(`${node.url}${streamPath(rootId)}`)));
    assert.ok(sessions.every((session) => session.status === 200));
    // Every stream is past its history and in the live tail: the shared read blocks.
    await eventually(async () => Number(/blocked_clients:(\d+)/.exec(await admin.info('clients'))?.[1]) === 1, 'the shared tail to block');
    const byName = await connectionsByName(admin);
    assert.equal(byName.get('scope-api-tail'), 1, 'one tail connection');
    const busy = await nodeConnections(admin);
    assert.ok(busy <= idle + 1, `the node holds ${busy} connections with 200 streams (${idle} with none)`);
    assert.ok(busy <= 4, `a handful: ${JSON.stringify([...byName])}`);
    await answer(node.url, rootId, waitId);
    await Promise.all(sessions.map((session) => session.done));
    const reference = sessions[0]?.events.filter((event) => event.id !== undefined).map((event) => event.id as string) ?? [];
    assert.ok(reference.length > 3);
    assertComplete(sessions, reference);
    await stop(node.child);
  } finally {
    admin.disconnect();
  }
});

test('a Redis with maxclients 20 serves 150 streams of one node', async () => {
  const { server, admin } = await redisServer(['--maxclients', '20']);
  try {
    const node = await serve(server, `capped${process.pid}`);
    const trees = await Promise.all([0, 1, 2].map((index) => waitingApproval(node.url, `capped ${index}`)));
    const sessions = await Promise.all(Array.from({ length: 150 }, (_, index) => openSse(`${node.url}${streamPath((trees[index % 3] as { rootId: string }).rootId)}`)));
    assert.ok(sessions.every((session) => session.status === 200));
    for (const { rootId, waitId } of trees) await answer(node.url, rootId, waitId);
    await Promise.all(sessions.map((session) => session.done));
    for (const [index, { rootId }] of trees.entries()) {
      const mine = sessions.filter((_, at) => at % 3 === index);
      const reference = mine[0]?.events.filter((event) => event.id !== undefined).map((event) => event.id as string) ?? [];
      assert.ok(reference.length > 3, rootId);
      assertComplete(mine, reference);
    }
    assert.ok(sessions.every((session) => !session.events.some((event) => event.data?.reason === 'log_unavailable')));
    await stop(node.child);
  } finally {
    admin.disconnect();
  }
});

test('SCOPE_SSE_MAX_STREAMS counts this node\'s open streams over the shared tail: one more is 503 with Retry-After', async () => {
  const { server, admin } = await redisServer();
  try {
    const node = await serve(server, `cap${process.pid}`, { SCOPE_SSE_MAX_STREAMS: '5' });
    const { rootId, waitId } = await waitingApproval(node.url, 'cap');
    const sessions = await Promise.all(Array.from({ length: 5 }, () => openSse(`${node.url}${streamPath(rootId)}`)));
    assert.ok(sessions.every((session) => session.status === 200));
    const refused = await fetch(`${node.url}${streamPath(rootId)}`, { headers: { accept: 'text/event-stream' } });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.equal(((await refused.json()) as { code: string }).code, 'stream_capacity');
    // A closed stream gives its place back.
    sessions[0]?.close();
    let admitted: SseSession | undefined;
    await eventually(async () => {
      const candidate = await openSse(`${node.url}${streamPath(rootId)}`);
      if (candidate.status === 200) admitted = candidate;
      else candidate.close();
      return admitted !== undefined;
    }, 'a place to free');
    await answer(node.url, rootId, waitId);
    await Promise.all([admitted, ...sessions.slice(1)].map((session) => session?.done));
    assert.equal(admitted?.events.at(-1)?.event, 'scope.stream.end');
    await stop(node.child);
  } finally {
    admin.disconnect();
  }
});

test('a long poll on node B for a tree node A runs is answered when A finishes it (no polling: B wakes on the tree log)', async () => {
  const { server, admin } = await redisServer();
  try {
    const prefix = `poll${process.pid}`;
    const [a, b] = await Promise.all([serve(server, prefix), serve(server, prefix)]);
    const { rootId, waitId } = await waitingApproval(a.url, 'across nodes');
    const path = `/v1/processes/${encodeURIComponent(rootId)}/result`;
    let settled = false;
    const polled = fetch(`${b.url}${path}?waitMs=30000`).then(async (response) => {
      settled = true;
      return { status: response.status, body: (await response.json()) as { status: string; output?: { approved?: boolean } } };
    });
    // B's wait subscribed to the tree's log on B's shared tail.
    await eventually(async () => (await connectionsByName(admin)).get('scope-api-tail') === 1, "B's tail");
    assert.equal(settled, false, 'B waits');
    const answeredAt = performance.now();
    await answer(a.url, rootId, waitId);
    const { status, body } = await polled;
    const latencyMs = performance.now() - answeredAt;
    assert.equal(status, 200);
    assert.equal(body.status, 'completed');
    assert.equal(body.output?.approved, true);
    assert.ok(latencyMs < 10_000, `answered ${latencyMs.toFixed(0)} ms after A finished, not at the 30 s deadline`);
    // A short poll on B of a tree still running elsewhere still answers 202 at its deadline.
    const other = await waitingApproval(a.url, 'still waiting');
    const short = await fetch(`${b.url}/v1/processes/${encodeURIComponent(other.rootId)}/result?waitMs=200`);
    assert.equal(short.status, 202);
    assert.equal(((await short.json()) as { work: string }).work, 'inactive');
    await Promise.all([stop(a.child), stop(b.child)]);
  } finally {
    admin.disconnect();
  }
});
