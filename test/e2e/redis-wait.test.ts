/**
 * SCOPE_REDIS_WAIT_REPLICAS=1 through the real CLI: `scope serve` on a primary with one replica.
 * With the replica up, starts and answers are acknowledged (and are on the replica); with it dead, a
 * start and a control are 503 `committer_unavailable` — never a false success — and once the replica is
 * back, the tree is restored from the head and continues.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { headKey } from '../../src/store/redis/keys.js';
import { startReplicatedRedis, type ReplicatedRedis } from '../helpers/redis-replica.js';
import { spawnServe } from '../helpers/scope-serve.js';

let pair: ReplicatedRedis;
const children: ChildProcess[] = [];

before(async () => {
  pair = await startReplicatedRedis();
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await pair?.stop();
});

const post = (url: string, body: unknown): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function json(response: Response): Promise<any> {
  return response.json();
}

async function waitOf(url: string, rootId: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const waits = await json(await fetch(`${url}/v1/waits`));
    const found = waits.items.find((wait: { processId: string }) => wait.processId === rootId)?.waitId as string | undefined;
    if (found !== undefined) return found;
    assert.ok(Date.now() < deadline, `${rootId} never waited`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test('SCOPE_REDIS_WAIT_REPLICAS=1: acknowledged commits are on the replica; with the replica dead a start and a pause are 503 committer_unavailable', async () => {
  const prefix = `wait${process.pid}`;
  const server = await spawnServe(
    { SCOPE_REDIS_URL: pair.primary.url, SCOPE_KEY_PREFIX: prefix, SCOPE_REDIS_WAIT_REPLICAS: '1', SCOPE_REDIS_WAIT_TIMEOUT_MS: '1000' },
    (child) => children.push(child),
  );
  const replica = new Redis(pair.replica.port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  replica.on('error', () => undefined);
  try {
    const started = await post(`${server.url}/v1/processes`, { deployment: 'demo.approval', input: { subject: 'replicated' } });
    assert.equal(started.status, 201);
    const rootId = (await json(started)).processId as string;
    await waitOf(server.url, rootId);
    assert.equal(await replica.exists(headKey(prefix, rootId)), 1, 'the acknowledged start is on the replica');

    await pair.replica.kill('SIGKILL');
    await pair.untilReplicas(0);
    const refused = await post(`${server.url}/v1/processes`, { deployment: 'demo.echo', input: { value: 'lost?' } });
    assert.equal(refused.status, 503);
    assert.equal((await json(refused)).code, 'committer_unavailable');
    const paused = await post(`${server.url}/v1/processes/${encodeURIComponent(rootId)}/pause`, {});
    assert.equal(paused.status, 503, await paused.clone().text());
    assert.equal((await json(paused)).code, 'committer_unavailable');

    // The replica comes back; the tree's writer stopped at the unacknowledged commit, so it is
    // restored from whatever the head holds (the pause may have landed), then answered.
    await pair.replica.restart();
    await pair.untilReplicas(1);
    const restored = await post(`${server.url}/v1/trees/${encodeURIComponent(rootId)}/restore`, {});
    assert.equal(restored.status, 200, await restored.clone().text());
    const view = await json(await fetch(`${server.url}/v1/processes/${encodeURIComponent(rootId)}`));
    if (view.status === 'paused') assert.ok([200, 202].includes((await post(`${server.url}/v1/processes/${encodeURIComponent(rootId)}/resume`, {})).status));
    const answered = await post(`${server.url}/v1/processes/${encodeURIComponent(rootId)}/signals`, {
      signals: [{ id: 'answer', waitId: await waitOf(server.url, rootId), payload: { approved: true } }],
    });
    assert.equal(answered.status, 200, await answered.clone().text());
    const result = await json(await fetch(`${server.url}/v1/processes/${encodeURIComponent(rootId)}/result?waitMs=10000`));
    assert.equal(result.status, 'completed', JSON.stringify(result));
  } finally {
    replica.disconnect();
    server.child.kill('SIGTERM');
    await new Promise((resolve) => server.child.once('exit', resolve));
  }
});
