import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { spawnServe } from '../../helpers/scope-serve.js';
import { openSse, streamPath } from '../../plugins/sse-harness.js';

/**
 * example.collaboration.research survives a SIGKILLed `scope serve` in Redis mode: the server is
 * killed once the first turn's two tasks are published (the survey task is then sleeping), a new
 * server over the same Redis takes the tree over after the dead server's lease lapsed, and the
 * collaboration completes with exactly the output of an uninterrupted run. The coordinator is
 * order-insensitive, so how many turns either run took does not change the output.
 */

let redis: RedisServer;
const servers: ChildProcess[] = [];

before(async () => {
  redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
});

after(async () => {
  for (const server of servers) server.kill('SIGKILL');
  await redis?.stop();
});

const prefix = `collabcrash${process.pid}`;

function serve(): Promise<{ child: ChildProcess; url: string }> {
  return spawnServe({ SCOPE_REDIS_URL: redis.url, SCOPE_KEY_PREFIX: prefix, SCOPE_NODE_LEASE_MS: '1500', SCOPE_NODE_RENEW_MS: '250' }, (child) => servers.push(child));
}

const input = { topic: 'durable agents', surveyMs: 1500 };

async function start(url: string): Promise<string> {
  const response = await fetch(`${url}/v1/processes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ deployment: 'example.collaboration.research', input }),
  });
  assert.equal(response.status, 201, await response.clone().text());
  return ((await response.json()) as { processId: string }).processId;
}

async function result(url: string, rootId: string): Promise<{ status: string; output: unknown }> {
  const response = await fetch(`${url}/v1/processes/${encodeURIComponent(rootId)}/result?waitMs=30000`);
  return (await response.json()) as { status: string; output: unknown };
}

interface TreeEntry {
  readonly processId: string;
  readonly parentId: string | null;
  readonly status: string;
  readonly deployment: string;
}

test('a SIGKILL mid-collaboration: after takeover the research completes with the output of an uninterrupted run', async () => {
  const first = await serve();
  const uninterrupted = await result(first.url, await start(first.url));
  assert.equal(uninterrupted.status, 'completed', JSON.stringify(uninterrupted));

  const rootId = await start(first.url);
  // Follow the tree's log live: kill once turn 1 and both of its tasks are published.
  const live = await openSse(`${first.url}${streamPath(rootId)}`);
  const published = new Set<string>();
  await live.waitFor((event) => {
    if (event.event === 'agent.process.started' && event.data.phase === 'committed' && event.data.process_id !== rootId) published.add(event.data.process_id as string);
    return published.size >= 3;
  }, 'turn 1 and its two tasks published');
  first.child.kill('SIGKILL');
  await new Promise((resolve) => first.child.once('exit', resolve));
  live.close();

  const second = await serve();
  const treeOf = async (): Promise<{ active: boolean; processes: TreeEntry[] }> =>
    (await (await fetch(`${second.url}/v1/trees/${encodeURIComponent(rootId)}`)).json()) as { active: boolean; processes: TreeEntry[] };
  const crashed = await treeOf();
  assert.ok(crashed.processes.some((entry) => entry.processId === rootId && entry.status === 'running'), 'the collaboration had not finished at the crash');
  // The dead server's lease lapses and this one takes the tree over.
  const deadline = performance.now() + 10_000;
  while ((await treeOf()).active !== true) {
    assert.ok(performance.now() < deadline, 'the tree was taken over');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const restored = await result(second.url, rootId);
  assert.equal(restored.status, 'completed', JSON.stringify(restored));
  assert.deepEqual(restored.output, uninterrupted.output);

  // One notes task and one survey task, each published once; every process finished.
  const tree = await treeOf();
  const children = tree.processes.filter((entry) => entry.parentId === rootId);
  assert.equal(children.filter((entry) => entry.deployment === 'example.collaboration.research.notes').length, 1);
  assert.equal(children.filter((entry) => entry.deployment === 'example.collaboration.research.survey').length, 1);
  assert.ok(tree.processes.every((entry) => entry.status === 'completed'), JSON.stringify(tree.processes));

  second.child.kill('SIGTERM');
  await new Promise((resolve) => second.child.once('exit', resolve));
});
