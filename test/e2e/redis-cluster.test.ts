/**
 * `scope serve` and `scope worker` as real processes on a 3-master Redis Cluster
 * (SCOPE_REDIS_CLUSTER), with the BullMQ transport: demo.echo runs its Effect on the worker and
 * completes; demo.approval waits, is answered, completes; the SSE stream (a tail on the cluster)
 * carries the whole log. Barriers are observed facts: log lines, HTTP answers, the stream's end.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { closeRedis, connectRedis } from '../../src/store/redis/connection.js';
import { RedisEffectAttempts } from '../../src/store/redis/effect-attempts.js';
import { readSse, streamPath } from '../plugins/sse-harness.js';
import { startRedisCluster, type RedisCluster } from '../helpers/redis-cluster.js';
import { spawnServe } from '../helpers/scope-serve.js';

let cluster: RedisCluster;
const children = new Set<ChildProcess>();
const prefix = `cluster${process.pid}`;
const timing = { SCOPE_TRANSPORT_LEASE_MS: '600', SCOPE_TRANSPORT_LOCK_MS: '1000', SCOPE_TRANSPORT_STALL_MS: '500', SCOPE_TRANSPORT_CLAIM_MS: '10000' };

before(async () => {
  cluster = await startRedisCluster();
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await cluster?.stop();
});

function track(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** `scope worker` on the cluster; resolves once it logged that it is ready. */
async function spawnWorker(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [new URL('../../bin/scope.js', import.meta.url).pathname, 'worker'], {
    env: { PATH: process.env.PATH ?? '', SCOPE_REDIS_CLUSTER: cluster.urls, SCOPE_KEY_PREFIX: prefix, SCOPE_LOG_LEVEL: 'info', ...timing },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  track(child);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const scan = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (output.includes('scope worker ready')) resolve();
    };
    child.stdout?.on('data', scan);
    child.stderr?.on('data', scan);
    child.once('exit', (code) => reject(new Error(`scope worker exited (${code}) before it was ready:\n${output}`)));
  });
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const post = (url: string, body: unknown): Promise<Response> =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function json(response: Response): Promise<any> {
  return response.json();
}

test('scope serve + scope worker on a Redis Cluster: demo.echo completes on the worker, demo.approval waits, is answered and completes', async () => {
  const worker = await spawnWorker();
  const server = await spawnServe({ SCOPE_REDIS_CLUSTER: cluster.urls, SCOPE_KEY_PREFIX: prefix, SCOPE_TRANSPORT: 'bullmq', SCOPE_RATE_LIMIT: '100000/1m', ...timing }, track);
  try {
    // Ready once the cluster client knows the slot map and every master answers (polled: a loaded machine is slow).
    const readyBy = Date.now() + 20_000;
    for (;;) {
      const ready = await fetch(`${server.url}/readyz`);
      const text = await ready.text();
      if (ready.status === 200) break;
      assert.ok(Date.now() < readyBy, `not ready within 20 s: ${text}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The rate limit counts on the cluster (a failing store would let requests through uncounted).
    const remaining = async (): Promise<number> => {
      const response = await fetch(`${server.url}/v1/processes?limit=1`);
      await response.body?.cancel();
      const header = response.headers.get('x-ratelimit-remaining') ?? response.headers.get('ratelimit-remaining');
      assert.ok(header !== null, JSON.stringify([...response.headers]));
      return Number(header);
    };
    const before = await remaining();
    assert.ok((await remaining()) < before);

    // demo.echo: the Effect is executed by the worker (BullMQ queue on the cluster), the result committed.
    const echo = await post(`${server.url}/v1/processes`, { deployment: 'demo.echo', input: { value: 'cluster' } });
    assert.equal(echo.status, 201);
    const echoId = (await json(echo)).processId as string;
    const echoResult = await json(await fetch(`${server.url}/v1/processes/${encodeURIComponent(echoId)}/result?waitMs=20000`));
    assert.equal(echoResult.status, 'completed', JSON.stringify(echoResult));
    const stream = await readSse(`${server.url}${streamPath(echoId)}`);
    const names = stream.events.map((event) => event.event);
    assert.equal(names.filter((name) => name === 'agent.delta').length, 'cluster'.length, names.join(' '));
    assert.ok(names.includes('agent.process.finished'), names.join(' '));
    // The worker ran it: its claim counted one execution, under the tree's hash tag on its master.
    const effects = await json(await fetch(`${server.url}/v1/processes/${encodeURIComponent(echoId)}/effects`));
    const effectId = effects.items[0]?.effectId as string;
    const evidence = connectRedis({ cluster: cluster.urls.split(',') });
    try {
      assert.equal(await new RedisEffectAttempts({ redis: evidence, keyPrefix: prefix }).executions(echoId, effectId), 1);
    } finally {
      await closeRedis(evidence, 500);
    }

    // demo.approval: wait → answer → complete.
    const approval = await post(`${server.url}/v1/processes`, { deployment: 'demo.approval', input: { subject: 'cluster' } });
    assert.equal(approval.status, 201);
    const approvalId = (await json(approval)).processId as string;
    let waitId: string | undefined;
    const deadline = Date.now() + 20_000;
    while (waitId === undefined) {
      assert.ok(Date.now() < deadline, 'demo.approval never waited');
      const waits = await json(await fetch(`${server.url}/v1/waits`));
      waitId = waits.items.find((wait: { processId: string }) => wait.processId === approvalId)?.waitId;
      if (waitId === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const answered = await post(`${server.url}/v1/processes/${encodeURIComponent(approvalId)}/signals`, {
      signals: [{ id: 'answer-1', waitId, payload: { approved: true, comment: 'from the cluster' } }],
    });
    assert.equal(answered.status, 200, await answered.clone().text());
    const approvalResult = await json(await fetch(`${server.url}/v1/processes/${encodeURIComponent(approvalId)}/result?waitMs=20000`));
    assert.equal(approvalResult.status, 'completed', JSON.stringify(approvalResult));
    assert.equal(approvalResult.output.comment, 'from the cluster');

    // Both roots are listed (the root index is one key on one master; the heads on others).
    const listed = await json(await fetch(`${server.url}/v1/processes?limit=10`));
    assert.deepEqual(new Set(listed.items.map((item: { processId: string }) => item.processId)), new Set([echoId, approvalId]));
  } finally {
    await stop(server.child);
    await stop(worker);
  }
});
