import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Cluster, eventually, exited, json, leaseMs, ownerOf, processUrl, startProcess, type Node } from './nodes-cluster.js';

/**
 * A takeover with effects on worker processes (SCOPE_TRANSPORT=bullmq): the attempt in flight when
 * its owner node dies keeps running on its worker and reports to the tree's inbox; the node that
 * takes the tree over waits on that live claim (demo.sleep is `same_identity`) instead of running
 * the effect again, and the process completes with the effect executed once.
 */

const cluster = new Cluster();
const transport = { SCOPE_TRANSPORT: 'bullmq', SCOPE_TRANSPORT_LEASE_MS: '600', SCOPE_TRANSPORT_LOCK_MS: '1000', SCOPE_TRANSPORT_STALL_MS: '500' };
let a: Node;
let b: Node;
let worker: ChildProcess | undefined;

before(async () => {
  await cluster.start();
  [a, b] = await Promise.all([cluster.node('a', transport), cluster.node('b', transport)]);
  const url = (await cluster.redis.config('GET', 'port')) as string[];
  worker = spawn(process.execPath, ['bin/scope.js', 'worker'], {
    env: { PATH: process.env.PATH ?? '', SCOPE_REDIS_URL: `redis://127.0.0.1:${url[1]}`, SCOPE_KEY_PREFIX: cluster.prefix, SCOPE_LOG_LEVEL: 'warn', ...transport },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await eventually(async () => ((await fetch(`${b.url}/readyz`)).status === 200 ? true : undefined), 'a live worker');
});

after(async () => {
  worker?.kill('SIGKILL');
  await cluster.stop();
});

test('SIGKILL of the owner while a worker runs its effect: the new owner waits on the live claim; one execution', async () => {
  const id = await startProcess(a, 'demo.sleep', { ms: 3_000 });
  const claimed = async (): Promise<true | undefined> => {
    const keys = await cluster.redis.keys(`${cluster.prefix}:{${id}}:attempt:*`);
    const states = await Promise.all(keys.map((key) => cluster.redis.hget(key, 'state')));
    return states.includes('claimed') ? true : undefined;
  };
  await eventually(claimed, 'the worker claiming the sleep');
  a.child.kill('SIGKILL');
  await exited(a.child);
  await eventually(async () => ((await ownerOf(cluster, id))?.node === 'b' ? true : undefined), 'b taking the tree over', leaseMs + 5_000);
  const result = await json(await fetch(processUrl(b, id, '/result?waitMs=20000')));
  assert.equal(result.status, 'completed');
  assert.deepEqual(result.output, { sleptMs: 3_000 });
  const executions = await cluster.redis.hgetall(`${cluster.prefix}:{${id}}:executions`);
  assert.deepEqual(Object.values(executions), ['1'], 'the sleep ran once, on the worker that claimed it first');
});
