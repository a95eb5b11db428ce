import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createKey } from '../../src/app/auth/key-store.js';
import { counterV1, counterV2 } from '../fixtures/counter-versions-deployments.js';
import { startRedisServer, type RedisServer } from '../helpers/redis-server.js';
import { spawnServe } from '../helpers/scope-serve.js';

/**
 * Deployment versions across a restart, with real `scope serve` processes on one Redis: v1 trees
 * stored, the server stopped, a server holding only v2 refuses them (`deployment_drift`, naming the
 * ref members that differ, logged), cannot move them on without a decider
 * (`deployment_drift_undecidable`), and with one moves a tree on for an admin only: a v2 successor
 * runs from the v1 state, the v1 tree is cancelled and superseded for good in one commit, both links recorded.
 */

const module = 'test/fixtures/counter-versions-deployments.ts';
const directory = mkdtempSync(join(tmpdir(), 'scope-versions-'));
const admin = createKey({ id: 'admin', tenant: 'acme', scopes: ['processes:read', 'processes:write', 'trees:admin'] });
const writer = createKey({ id: 'writer', tenant: 'acme', scopes: ['processes:read', 'processes:write'] });
let redis: RedisServer;
let keysFile: string;
const children: ChildProcess[] = [];

before(async () => {
  redis = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
  keysFile = join(directory, 'keys.json');
  writeFileSync(keysFile, JSON.stringify({ keys: [admin.entry, writer.entry] }));
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await redis?.stop();
  rmSync(directory, { recursive: true, force: true });
});

interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  /** Everything the server logged so far. */
  readonly output: () => string;
}

async function serve(prefix: string, env: Record<string, string>): Promise<Served> {
  let output = '';
  const served = await spawnServe(
    {
      SCOPE_REDIS_URL: redis.url,
      SCOPE_KEY_PREFIX: prefix,
      SCOPE_DEMOS: 'off',
      SCOPE_DEPLOYMENTS: module,
      SCOPE_AUTH: 'keys',
      SCOPE_API_KEYS_FILE: keysFile,
      SCOPE_RATE_LIMIT: 'off',
      ...env,
    },
    (child) => {
      children.push(child);
      child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    },
  );
  return { ...served, output: () => output };
}

async function stop(served: Served): Promise<void> {
  const exited = new Promise((resolve) => served.child.once('exit', resolve));
  served.child.kill('SIGTERM');
  await exited;
}

async function call(url: string, path: string, options: { token?: string; body?: unknown; method?: string } = {}): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${options.token ?? admin.token}` };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${url}${path}`, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: response.status, body: await response.json() };
}

const tree = (root: string): string => `/v1/trees/${encodeURIComponent(root)}`;
const proc = (id: string): string => `/v1/processes/${encodeURIComponent(id)}`;

/** Answers the counter's current round with `add`. */
async function add(url: string, processId: string, amount: number): Promise<{ status: number; body: any }> {
  const view = await call(url, proc(processId));
  assert.equal(view.status, 200, JSON.stringify(view.body));
  return call(url, `${proc(processId)}/signals`, { body: { signals: [{ id: `add-${view.body.waitId}`, waitId: view.body.waitId, payload: { add: amount } }] } });
}

async function untilWaiting(url: string, processId: string): Promise<void> {
  for (;;) {
    const view = await call(url, proc(processId));
    if (view.body.status === 'waiting' && view.body.waitId !== null) return;
    const polled = await call(url, `${proc(processId)}/result?waitMs=200`);
    assert.notEqual(polled.status, 200, 'the counter finished early');
  }
}

test('a v1 tree on a server holding only v2: drift refused and logged, undecidable without a decider, moved on by an admin with one', async () => {
  const prefix = `versions${process.pid}`;

  // 1. A server holding v1: a counter to 5, two counted, waiting for round 2.
  const first = await serve(prefix, { COUNTER_VERSIONS: 'v1' });
  const started = await call(first.url, '/v1/processes', { body: { deployment: 'demo.counter', input: { target: 5 } } });
  assert.equal(started.status, 201, JSON.stringify(started.body));
  const root = started.body.processId as string;
  assert.equal(started.body.deploymentRef, counterV1.ref.toString());
  await untilWaiting(first.url, root);
  assert.equal((await add(first.url, root, 2)).status, 200);
  await untilWaiting(first.url, root);
  await stop(first);

  // 2. A server holding only v2, without a decider.
  const second = await serve(prefix, { COUNTER_VERSIONS: 'v2', COUNTER_DECIDER: 'off' });
  const read = await call(second.url, tree(root));
  assert.equal(read.status, 200, 'reads of a drifted tree still work');
  assert.equal(read.body.active, false);
  assert.equal(read.body.supersededBy, null);
  const refused = await call(second.url, `${tree(root)}/restore`, { body: {} });
  assert.equal(refused.status, 409, JSON.stringify(refused.body));
  assert.equal(refused.body.code, 'deployment_drift');
  assert.match(refused.body.detail, /differs in implementationDigest, configurationDigest\)/);
  assert.ok(refused.body.detail.includes(counterV1.ref.toString()) && refused.body.detail.includes(counterV2.ref.toString()));
  // A command that would activate the tree meets the same refusal.
  const command = await call(second.url, `${proc(root)}/cancel`, { body: {} });
  assert.equal(command.status, 409, JSON.stringify(command.body));
  assert.equal(command.body.code, 'deployment_drift');
  assert.match(second.output(), /deployment drift: refused to restore a tree whose version this node does not hold/);
  const undecidable = await call(second.url, `${tree(root)}/restore`, { body: { allowDrift: true } });
  assert.equal(undecidable.status, 409, JSON.stringify(undecidable.body));
  assert.equal(undecidable.body.code, 'deployment_drift_undecidable');
  const versions = await call(second.url, '/v1/deployments/demo.counter/versions');
  assert.equal(versions.status, 200, JSON.stringify(versions.body));
  assert.deepEqual(
    versions.body.versions.map((version: any) => [version.deploymentRef, version.current, version.registeredHere, version.liveTrees]),
    [
      [counterV2.ref.toString(), true, true, 0],
      [counterV1.ref.toString(), false, false, 1],
    ],
  );
  assert.equal(versions.body.complete, true);
  await stop(second);

  // 3. A server holding v2 with its decider: only an admin may move the tree on.
  const third = await serve(prefix, { COUNTER_VERSIONS: 'v2' });
  const forbidden = await call(third.url, `${tree(root)}/restore`, { token: writer.token, body: { allowDrift: true } });
  assert.equal(forbidden.status, 403, JSON.stringify(forbidden.body));
  assert.equal((await call(third.url, tree(root))).body.supersededBy, null, 'a refused caller changed nothing');
  const moved = await call(third.url, `${tree(root)}/restore`, { body: { allowDrift: true } });
  assert.equal(moved.status, 200, JSON.stringify(moved.body));
  const succession = moved.body.supersededBy;
  assert.equal(succession.fromRef, counterV1.ref.toString());
  assert.equal(succession.toRef, counterV2.ref.toString());
  assert.deepEqual(succession.differs, ['implementationDigest', 'configurationDigest']);
  assert.equal(succession.reason, 'v2 counts the 3 that v1 had left');
  const successor = succession.successorId as string;
  assert.ok(successor !== root);

  // The v1 tree was cancelled by the same commit that superseded it, and says so.
  const cancelled = await call(third.url, tree(root));
  assert.equal(cancelled.status, 200);
  assert.equal(cancelled.body.processes[0].status, 'canceled');
  assert.equal(cancelled.body.processes[0].result.cause, 'host_cancellation');
  assert.equal(cancelled.body.processes[0].result.reason, `superseded: moved on to a successor tree on ${counterV2.ref.toString()} (v2 counts the 3 that v1 had left)`);
  assert.equal((await call(third.url, proc(root))).body.status, 'canceled');
  const log = await call(third.url, `${proc(root)}/events?limit=1000`);
  assert.equal(log.status, 200);
  assert.deepEqual(
    log.body.items.filter((entry: any) => entry.type === 'agent.process.finished').map((entry: any) => entry.data.payload.cause),
    ['host_cancellation'],
    'the cancellation is in the old tree log',
  );
  const inbox = await call(third.url, '/v1/waits');
  assert.equal(inbox.status, 200);
  assert.deepEqual(inbox.body.items.filter((wait: any) => wait.rootId === root), [], 'its wait left the inbox');
  const versionsAfter = await call(third.url, '/v1/deployments/demo.counter/versions');
  assert.ok(!versionsAfter.body.versions.some((version: any) => version.deploymentRef === counterV1.ref.toString() && version.liveTrees > 0), 'no live v1 tree is left');

  // The successor runs on v2 from the v1 state (3 left to count) and links back.
  const successorTree = await call(third.url, tree(successor));
  assert.equal(successorTree.body.predecessorId, root);
  assert.equal(successorTree.body.processes[0].deploymentRef, counterV2.ref.toString());
  await untilWaiting(third.url, successor);
  assert.equal((await add(third.url, successor, 3)).status, 200);
  const finished = await call(third.url, `${proc(successor)}/result?waitMs=10000`);
  assert.equal(finished.status, 200);
  assert.deepEqual(finished.body.output, { total: 3, rounds: 1 });

  // The old tree is superseded for good: no restore, no command; the move-on repeats as it was.
  const again = await call(third.url, `${tree(root)}/restore`, { body: {} });
  assert.equal(again.status, 409, JSON.stringify(again.body));
  assert.equal(again.body.code, 'tree_superseded');
  const late = await call(third.url, `${proc(root)}/signals`, { body: { signals: [{ id: 'late', payload: { add: 1 } }] } });
  assert.equal(late.status, 409, JSON.stringify(late.body));
  assert.ok(['tree_superseded', 'process_finished'].includes(late.body.code), JSON.stringify(late.body));
  const repeated = await call(third.url, `${tree(root)}/restore`, { body: { allowDrift: true } });
  assert.equal(repeated.status, 200);
  assert.equal(repeated.body.supersededBy.successorId, successor);
  await stop(third);
});
