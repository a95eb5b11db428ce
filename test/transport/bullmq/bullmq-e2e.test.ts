/**
 * The BullMQ transport end to end: a Redis-mode Host in this (the API) process with
 * SCOPE_TRANSPORT=bullmq, and real `scope worker` processes executing the Effects. Barriers are
 * facts (a worker's "ready" log line, committed events, an attempt record's state), never sleeps.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { RedisEffectAttempts } from '../../../src/store/redis/effect-attempts.js';
import { treeKeyBase } from '../../../src/store/redis/keys.js';
import { loadDeploymentsModule } from '../../../src/app/deployments-module.js';
import { ProcessDispatchers } from '../../../src/app/process-dispatchers.js';
import { Deployment, Digest, Payload, Settlement } from '../../../src/kernel/index.js';
import type { DeploymentEntry } from '../../../src/server/catalog.js';
import { ownerDispatched } from '../../../src/transport/placement.js';
import { bullPrefixOf } from '../../../src/transport/bullmq/names.js';
import { echoDefinition } from '../../../strategies/demo/echo.js';
import placementDeployments from '../../fixtures/placement-deployments.js';
import { startServerModel, type ServerModel } from '../../../src/server/model/server-model.js';
import { EngineHost } from '../../../src/server/engine-host.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { drainStream, effectsOf, freshPrefix, ofType, rejectsWith, result, start, testConfig, untilSettled } from '../../server/harness.js';

let server: RedisServer;
let redis: Redis;
const children = new Set<ChildProcess>();

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url);
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  redis?.disconnect();
  await server?.stop();
});

const timing = {
  SCOPE_TRANSPORT_LEASE_MS: '600',
  SCOPE_TRANSPORT_LOCK_MS: '1000',
  SCOPE_TRANSPORT_STALL_MS: '500',
  SCOPE_TRANSPORT_CLAIM_MS: '5000',
  SCOPE_TRANSPORT_DEADLINE_MS: '60000',
};

/** Spawns `scope worker` and resolves once it logged that it is ready. */
async function spawnWorker(prefix: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['bin/scope.js', 'worker'], {
    env: { ...process.env, SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix, SCOPE_LOG_LEVEL: 'info', SCOPE_WORKER_CONCURRENCY: '2', ...timing, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const output = { text: '', changed: () => {} };
  outputs.set(child, output);
  child.stdout?.on('data', (chunk: Buffer) => {
    output.text += chunk.toString();
    output.changed();
  });
  // Kept too (Node's process warnings go there), and still shown.
  child.stderr?.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    output.text += chunk.toString();
    output.changed();
  });
  await untilOutput(child, 'scope worker ready');
  return child;
}

const outputs = new WeakMap<ChildProcess, { text: string; changed: () => void }>();

/** Resolves once the worker's log has said `text` `times` times (its log lines are the barrier). */
async function untilOutput(child: ChildProcess, text: string, times = 1): Promise<void> {
  const output = outputs.get(child)!;
  await new Promise<void>((resolve, reject) => {
    const check = (): void => {
      if (output.text.split(text).length - 1 >= times) resolve();
    };
    output.changed = check;
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before saying ${JSON.stringify(text)}: ${output.text}`)));
    check();
  });
}

function apiHost(prefix: string, env: Record<string, string> = {}, deployments: DeploymentEntry[] = [], model?: ServerModel): EngineHost {
  return new EngineHost({
    config: testConfig({ SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix, SCOPE_TRANSPORT: 'bullmq', ...timing, ...env }),
    defaultMetrics: false,
    deployments,
    ...(model === undefined ? {} : { model: model.options }),
  });
}

/** Every attempt record of a tree (test-side inspection of the transport's evidence). */
async function attemptsOf(prefix: string, rootId: string): Promise<Record<string, string>[]> {
  const keys = await redis.keys(`${treeKeyBase(prefix, rootId)}:attempt:*`);
  return Promise.all(keys.map((key) => redis.hgetall(key)));
}

/** The tree's first attempt record once a worker claimed it (the claim is recorded before the dispatcher runs). */
async function untilClaimed(prefix: string, rootId: string): Promise<Record<string, string>> {
  for (;;) {
    const record = (await attemptsOf(prefix, rootId))[0];
    if (record?.state === 'claimed') return record;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function workerPidOf(record: Record<string, string>): number {
  return Number(record.worker?.split(':')[1]);
}

test('bullmq: demo.echo and demo.unreliable run on two worker processes, none in the API process', async () => {
  const prefix = freshPrefix();
  const workers = await Promise.all([spawnWorker(prefix), spawnWorker(prefix)]);
  const workerPids = new Set(workers.map((worker) => worker.pid));
  const host = apiHost(prefix);
  try {
    const echo = await start(host, 'demo.echo', { value: 'héllo' });
    const echoed = await result(host, echo.processId);
    assert.equal(echoed.status, 'completed');
    assert.deepEqual(echoed.output, { value: 'héllo' });

    const ok = await start(host, 'demo.unreliable', { mode: 'ok', replayable: false });
    assert.deepEqual((await result(host, ok.processId)).output, { mode: 'ok', attempts: 1 });
    const fail = await start(host, 'demo.unreliable', { mode: 'fail', replayable: false });
    const failed = await result(host, fail.processId);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.failure?.code, 'demo.unreliable.failed');

    const unknown = await start(host, 'demo.unreliable', { mode: 'unknown', replayable: false });
    await untilSettled(host, unknown.processId, ofType('agent.effect.finished', unknown.processId));
    const [unknownEffect] = await effectsOf(host, unknown.processId);
    assert.equal(unknownEffect?.status, 'unknown');

    for (const root of [echo, ok, fail, unknown].map((view) => view.processId)) {
      const records = await attemptsOf(prefix, root);
      assert.equal(records.length, 1, `one attempt for ${root}`);
      const record = records[0] as Record<string, string>;
      assert.equal(record.state, 'settled');
      const pid = workerPidOf(record);
      assert.notEqual(pid, process.pid, 'the API process executed nothing');
      assert.ok(workerPids.has(pid), `executed by a worker process (${record.worker})`);
    }

    // The effect view (and the Unknown list) name the worker that ran each attempt: its claim record's.
    const [unknownRecord] = await attemptsOf(prefix, unknown.processId);
    assert.deepEqual(
      unknownEffect?.attemptList.map((attempt) => attempt.worker),
      [unknownRecord?.worker],
    );
    const listed = (await host.unknownEffects({})).items.find((item) => item.processId === unknown.processId);
    assert.equal(listed?.effect.attemptList[0]?.worker, unknownRecord?.worker);
    assert.ok(workerPids.has(workerPidOf({ worker: listed?.effect.attemptList[0]?.worker ?? '' })));
  } finally {
    await host.close(2_000);
    for (const worker of workers) worker.kill('SIGTERM');
    await Promise.all(workers.map((worker) => (worker.exitCode === null ? once(worker, 'exit') : undefined)));
  }
});

test('bullmq: a worker SIGKILLed mid-effect: a same_identity effect runs again as a new attempt and the process finishes; a redelivered or new attempt of a settled never effect is refused', async () => {
  const prefix = freshPrefix();
  // Two workers, both ready before the sleep starts: the claimant dies, the other takes the new attempt.
  const workers = await Promise.all([spawnWorker(prefix), spawnWorker(prefix)]);
  const host = apiHost(prefix);
  const attempts = new RedisEffectAttempts({ redis, keyPrefix: prefix });
  try {
    // demo.sleep is `same_identity`: its claimant dies mid-sleep, the lease lapses, and the owner
    // enqueues a new attempt of the same identity, which the other worker runs to completion.
    const sleeping = await start(host, 'demo.sleep', { ms: 1_500 });
    const root = sleeping.processId;
    // Barrier: the attempt is claimed (the claim is recorded before the dispatcher runs).
    const record = await untilClaimed(prefix, root);
    const [claimant, second] = (workerPidOf(record) === workers[0]!.pid ? workers : [workers[1], workers[0]]) as [ChildProcess, ChildProcess];
    claimant.kill('SIGKILL');
    await once(claimant, 'exit');
    const slept = await result(host, root);
    assert.equal(slept.status, 'completed', JSON.stringify(slept));
    const records = await attemptsOf(prefix, root);
    assert.deepEqual(records.map((entry) => entry.state).sort(), ['lapsed', 'settled'], `the dead claim lapsed; a new attempt settled: ${JSON.stringify(records)} executions ${await attempts.executions(root, (await effectsOf(host, root))[0]?.effectId as string)}`);
    assert.equal(workerPidOf(records.find((entry) => entry.state === 'settled') as Record<string, string>), second.pid);
    const [sleptEffect] = await effectsOf(host, root);
    assert.equal(sleptEffect?.status, 'settled');
    assert.equal(await attempts.executions(root, sleptEffect?.effectId as string), 2, 'same_identity: run again under its identity');

    // A `never` effect: run it once, then deliver the same attempt again.
    const once_ = await start(host, 'demo.unreliable', { mode: 'ok', replayable: false });
    assert.deepEqual((await result(host, once_.processId)).output, { mode: 'ok', attempts: 1 });
    const [done] = await effectsOf(host, once_.processId);
    const executed = await attemptsOf(prefix, once_.processId);
    assert.equal(executed.length, 1);
    // The same attempt delivered again (as a stall redelivers it) and a new attempt of the settled
    // effect: both claims are refused, nothing runs again.
    const [settled] = executed as [Record<string, string>];
    const effectId = done?.effectId as string;
    const original = (await redis.keys(`${treeKeyBase(prefix, once_.processId)}:attempt:*`))[0] as string;
    const attemptId = original.slice(original.indexOf(':attempt:') + 1);
    const claim = (id: string) =>
      attempts.claim({ rootId: once_.processId, effectId, attemptId: id, incarnationId: settled.incarnation as string, replayPolicy: 'never', token: id, workerId: 'test', leaseMs: 1_000 });
    assert.deepEqual(await claim(attemptId), { claimed: false, reason: 'taken' });
    assert.deepEqual(await claim(`attempt:${'3'.repeat(32)}`), { claimed: false, reason: 'settled' });
    assert.equal(await attempts.executions(once_.processId, effectId), 1, 'executed once, counted at claim time');
    second.kill('SIGTERM');
    await once(second, 'exit');
  } finally {
    await host.close(2_000);
  }
});

test('bullmq: a worker SIGKILLed mid-effect of a never effect leaves it Unknown: no new attempt', async () => {
  const prefix = freshPrefix();
  const module = 'test/fixtures/never-sleep-deployments.ts';
  const own = { SCOPE_DEMOS: 'off', SCOPE_DEPLOYMENTS: module };
  const first = await spawnWorker(prefix, own);
  const shutdown = new AbortController();
  const host = apiHost(prefix, { SCOPE_DEMOS: 'off' }, await loadDeploymentsModule(module, { shutdown: shutdown.signal, processes: new ProcessDispatchers() }));
  const attempts = new RedisEffectAttempts({ redis, keyPrefix: prefix });
  try {
    const root = (await start(host, 'demo.sleep', { ms: 600_000 })).processId;
    await untilClaimed(prefix, root);
    const second = await spawnWorker(prefix, own);
    first.kill('SIGKILL');
    await once(first, 'exit');
    await untilSettled(host, root, ofType('agent.effect.finished', root));
    const [effect] = await effectsOf(host, root);
    assert.equal(effect?.status, 'unknown', 'it may have run: Unknown, never a failure or a retry');
    assert.equal((await attemptsOf(prefix, root)).length, 1, 'no new attempt, though a live worker was there to take one');
    assert.equal(await attempts.executions(root, effect?.effectId as string), 1);
    second.kill('SIGTERM');
    await once(second, 'exit');
  } finally {
    shutdown.abort();
    await host.close(2_000);
  }
});

test('bullmq: a worker whose lease is lost mid-execution (process stopped) yields Unknown; its late settlement and the stalled redelivery are refused', async () => {
  const prefix = freshPrefix();
  const module = 'test/fixtures/never-sleep-deployments.ts';
  const own = { SCOPE_DEMOS: 'off', SCOPE_DEPLOYMENTS: module };
  const first = await spawnWorker(prefix, { ...own, SCOPE_LOG_LEVEL: 'debug' });
  const shutdown = new AbortController();
  const host = apiHost(prefix, { SCOPE_DEMOS: 'off' }, await loadDeploymentsModule(module, { shutdown: shutdown.signal, processes: new ProcessDispatchers() }));
  const attempts = new RedisEffectAttempts({ redis, keyPrefix: prefix });
  let second: ChildProcess | undefined;
  try {
    const root = (await start(host, 'demo.sleep', { ms: 600_000 })).processId;
    await untilClaimed(prefix, root);
    // Stopped, the worker renews neither its lease nor BullMQ's lock: the owner declares the
    // attempt Unknown at the lease's end (it may have run), never a failure and never a retry.
    first.kill('SIGSTOP');
    await untilSettled(host, root, ofType('agent.effect.finished', root));
    const [effect] = await effectsOf(host, root);
    assert.equal(effect?.status, 'unknown');
    // BullMQ's lost lock redelivers the stalled job to another worker: the claim refuses it.
    second = await spawnWorker(prefix, own);
    await untilOutput(second, 'claim refused');
    // The first worker wakes up, finds its lease gone, aborts the dispatch; its settlement is refused.
    first.kill('SIGCONT');
    await untilOutput(first, 'attempt lease lost');
    await untilOutput(first, '"msg":"settlement '); // delivered (debug) or refused
    assert.match(outputs.get(first)?.text ?? '', /settlement refused: the owner had declared the attempt Unknown/);
    const [record] = await attemptsOf(prefix, root);
    assert.equal(record?.state, 'lapsed', JSON.stringify(record));
    assert.deepEqual(await attempts.inbox(root, effect?.effectId as string), {}, 'nothing settled into the Unknown attempt');
    assert.equal(await attempts.executions(root, effect?.effectId as string), 1, 'executed once');
    assert.equal((await effectsOf(host, root))[0]?.status, 'unknown', 'still Unknown: the head is the record');
    // And the first worker serves on.
    second.kill('SIGTERM');
    await once(second, 'exit');
    const next = (await start(host, 'demo.sleep', { ms: 1 })).processId;
    assert.equal((await result(host, next)).status, 'completed');
    const [served] = await attemptsOf(prefix, next);
    assert.equal(workerPidOf(served as Record<string, string>), first.pid);
  } finally {
    shutdown.abort();
    await host.close(2_000);
    first.kill('SIGKILL');
    second?.kill('SIGKILL');
  }
});

test('bullmq: a deployment with no worker fails definitely with transport.unclaimed at the claim deadline', async () => {
  const prefix = freshPrefix();
  const host = apiHost(prefix, { SCOPE_TRANSPORT_CLAIM_MS: '300' });
  try {
    const echo = await start(host, 'demo.echo', { value: 'nobody' });
    const outcome = await result(host, echo.processId);
    assert.equal(outcome.status, 'failed');
    const [effect] = await effectsOf(host, echo.processId);
    assert.equal(effect?.status, 'settled');
    // The settlement the process received (its receipt keeps the payload's digest once consumed).
    const unclaimed = Payload.encode({ code: 'transport.unclaimed', error: 'no worker claimed the attempt within 300 ms' });
    const receipts = (await host.signals(echo.processId, {})).items;
    assert.deepEqual(receipts.map((receipt) => receipt.payloadDigest), [unclaimed.digest().toString()], 'settled with code transport.unclaimed');
    // A definite failed settlement (not Unknown), as the log records it.
    const finished = (await drainStream(host, echo.processId)).filter((entry) => entry.type === 'agent.effect.finished');
    assert.ok(finished.some((entry) => entry.data.includes('"settlement_status":"failed"')), finished.map((entry) => entry.data).join('\n'));
    const [record] = await attemptsOf(prefix, echo.processId);
    assert.equal(record?.state, 'revoked', 'no claim can succeed after the revocation');
  } finally {
    await host.close(2_000);
  }
});

test('bullmq: readiness and metrics say which deployments a live worker serves', async () => {
  const prefix = freshPrefix();
  // The scripted model endpoint `scope serve` would run, so the example agents bind the worker's refs.
  const model = await startServerModel(testConfig({}).model);
  const host = apiHost(prefix, {}, [], model);
  let worker: ChildProcess | undefined;
  try {
    const before = await host.readiness();
    assert.equal(before.ready, false, 'no worker holds the demo refs yet');
    assert.match(before.checks['worker:demo.echo'] ?? '', /^no live worker holds demo\.echo\+sha256:/);
    assert.equal(before.checks['worker:demo.approval'], undefined, 'a deployment without a dispatcher needs no worker');
    // The worker joins the registry before it says it is ready.
    worker = await spawnWorker(prefix);
    const after = await host.readiness();
    assert.equal(after.checks['worker:demo.echo'], 'ok');
    assert.equal(after.ready, true, JSON.stringify(after.checks));
    const metrics = await host.metrics();
    assert.match(metrics.body, /scope_transport_live_workers\{ref="[0-9a-f]{64}"\} 1/);
  } finally {
    await host.close(2_000);
    await model.close();
    worker?.kill('SIGTERM');
    if (worker !== undefined && worker.exitCode === null) await once(worker, 'exit');
  }
});

test('bullmq: your own deployments module on both sides; a never-replay effect whose worker died stays Unknown for good', async () => {
  const prefix = freshPrefix();
  const module = 'test/fixtures/never-sleep-deployments.ts';
  const own = { SCOPE_DEMOS: 'off', SCOPE_DEPLOYMENTS: module };
  const worker = await spawnWorker(prefix, own);
  const shutdown = new AbortController();
  const host = apiHost(prefix, { SCOPE_DEMOS: 'off' }, await loadDeploymentsModule(module, { shutdown: shutdown.signal, processes: new ProcessDispatchers() }));
  const attempts = new RedisEffectAttempts({ redis, keyPrefix: prefix });
  try {
    assert.deepEqual(host.deployments().map((deployment) => deployment.name), ['demo.sleep'], 'the module is the whole catalog');
    assert.equal((await host.readiness()).checks['worker:demo.sleep'], 'ok', 'the worker holds the exact same ref');
    const sleeping = await start(host, 'demo.sleep', { ms: 600_000 });
    const root = sleeping.processId;
    await untilClaimed(prefix, root);
    worker.kill('SIGKILL');
    await once(worker, 'exit');
    await untilSettled(host, root, ofType('agent.effect.finished', root));
    const [effect] = await effectsOf(host, root);
    assert.equal(effect?.status, 'unknown');
    await rejectsWith(host.replayEffect(root, effect?.effectId as string), 'effect_replay_forbidden');
    assert.equal(await attempts.executions(root, effect?.effectId as string), 1, 'it ran once and will not run again');
    // A person decides what happened; the process goes on from that.
    await host.resolveEffect(root, effect?.effectId as string, { status: 'succeeded', payload: { sleptMs: 600_000 } });
    assert.equal((await result(host, root)).status, 'completed');
  } finally {
    shutdown.abort();
    await host.close(2_000);
  }
});

test('bullmq: a process deployment runs its command under the worker, never under the API process', async () => {
  const prefix = freshPrefix();
  const module = 'test/fixtures/process-deployments.ts';
  const worker = await spawnWorker(prefix, { SCOPE_DEMOS: 'off', SCOPE_DEPLOYMENTS: module });
  const shutdown = new AbortController();
  const processes = new ProcessDispatchers();
  const host = apiHost(prefix, { SCOPE_DEMOS: 'off' }, await loadDeploymentsModule(module, { shutdown: shutdown.signal, processes }));
  try {
    assert.equal((await host.readiness()).checks['worker:example.shout'], 'ok', 'the worker holds the same ref: the secret value is not part of it');
    const shout = await start(host, 'example.shout', { text: 'far away' });
    const done = await result(host, shout.processId);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    const output = done.output as unknown as { text: string; ppid: number };
    assert.equal(output.text, 'FAR AWAY!');
    assert.equal(output.ppid, worker.pid, 'the worker supervises the command');
    assert.deepEqual(processes.status().map((status) => status.generations.length), [0], 'the API process started no command');
    worker.kill('SIGTERM');
    await once(worker, 'exit');
  } finally {
    shutdown.abort();
    await host.close(2_000);
    await processes.close(0);
  }
});

test('bullmq: a dispatcher marked ownerDispatched runs in the owner process, needs no worker and no queue', async () => {
  const prefix = freshPrefix();
  const ran: number[] = [];
  const local = Deployment.create({
    definition: echoDefinition,
    dispatcher: ownerDispatched({
      async dispatch(request) {
        ran.push(process.pid);
        return Settlement.of('succeeded', request.effect.payload);
      },
      replayPolicy: () => 'same_identity' as const,
    }),
    implementationDigest: Digest.of('test:owner-echo:implementation:v1'),
    configurationDigest: Digest.of('test:owner-echo:configuration:v1'),
  });
  const host = apiHost(prefix, { SCOPE_DEMOS: 'off' }, [local]);
  try {
    const readiness = await host.readiness();
    assert.equal(readiness.checks['worker:demo.echo'], undefined, 'no worker is awaited for it');
    assert.equal(readiness.ready, true, JSON.stringify(readiness));
    const echo = await start(host, 'demo.echo', { value: 'here' });
    const done = await result(host, echo.processId);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.deepEqual(ran, [process.pid], 'it ran here, once, with no worker running');
    const [effect] = await effectsOf(host, echo.processId);
    assert.deepEqual(
      effect?.attemptList.map((attempt) => attempt.worker),
      [host.nodeId],
      'an attempt run in the owner names the node that ran it',
    );
    assert.deepEqual(await redis.keys(`${bullPrefixOf(prefix)}*`), [], 'no queue was written');
  } finally {
    await host.close(2_000);
  }
});

test('per deployment: a queueDispatched deployment runs on a worker under SCOPE_TRANSPORT=inprocess, the others in the API; without Redis the server refuses to start', async () => {
  const prefix = freshPrefix();
  const module = 'test/fixtures/placement-deployments.ts';
  const worker = await spawnWorker(prefix, { SCOPE_DEMOS: 'off', SCOPE_DEPLOYMENTS: module });
  const host = apiHost(prefix, { SCOPE_DEMOS: 'off', SCOPE_TRANSPORT: 'inprocess' }, placementDeployments());
  try {
    const readiness = await host.readiness();
    assert.equal(readiness.checks['worker:test.where.queued'], 'ok', JSON.stringify(readiness));
    assert.equal(readiness.checks['worker:test.where.default'], undefined, 'the in-process deployment awaits no worker');
    const queued = await result(host, (await start(host, 'test.where.queued', {})).processId);
    const local = await result(host, (await start(host, 'test.where.default', {})).processId);
    assert.deepEqual(queued.output, { pid: worker.pid }, 'the queued deployment ran on the worker');
    assert.deepEqual(local.output, { pid: process.pid }, 'the other one ran in the API process');
  } finally {
    await host.close(2_000);
    worker.kill('SIGTERM');
    await once(worker, 'exit');
  }
  // Embedded mode has no queue: a deployment bound to one must not quietly run in-process.
  await rejectsWith(
    async () => new EngineHost({ config: testConfig({ SCOPE_DEMOS: 'off' }), defaultMetrics: false, deployments: placementDeployments() }),
    'invalid_server_config',
  );
});

test('bullmq: a cancel reaches the attempt running in another process, and its settlement is still collected', async () => {
  const prefix = freshPrefix();
  const worker = await spawnWorker(prefix);
  const host = apiHost(prefix);
  try {
    const sleeping = await start(host, 'demo.sleep', { ms: 600_000 });
    const root = sleeping.processId;
    await untilClaimed(prefix, root);
    await host.control(root, 'cancel', 'no longer needed');
    const outcome = await result(host, root);
    assert.equal(outcome.status, 'canceled');
    assert.equal(outcome.reason, 'no longer needed');
    // The worker aborted the sleep (it did not run for ten minutes) and reported back, and it lives on.
    const [record] = await attemptsOf(prefix, root);
    assert.equal(record?.state, 'settled', JSON.stringify(record));
    assert.equal(worker.exitCode, null, 'the worker process is still running');
    const next = await start(host, 'demo.echo', { value: 'after the cancel' });
    assert.equal((await result(host, next.processId)).status, 'completed', 'and it keeps serving');
  } finally {
    await host.close(2_000);
    worker.kill('SIGTERM');
    if (worker.exitCode === null) await once(worker, 'exit');
  }
});

test('bullmq: twelve sleeps at once on one worker raise no listener-leak warning on its shutdown signal', async () => {
  const prefix = freshPrefix();
  const worker = await spawnWorker(prefix, { SCOPE_WORKER_CONCURRENCY: '12', SCOPE_SHUTDOWN_MS: '300' });
  const host = apiHost(prefix);
  try {
    // Each running sleep links its abort to the worker's shutdown signal; Node warns past 10 listeners.
    const roots = await Promise.all(Array.from({ length: 12 }, async () => (await start(host, 'demo.sleep', { ms: 600_000 })).processId));
    await Promise.all(roots.map((root) => untilClaimed(prefix, root)));
    worker.kill('SIGTERM');
    const [code] = (await once(worker, 'exit')) as [number | null];
    assert.equal(code, 0, 'a graceful stop');
    // Every sleep was running when the worker stopped: each ends Unknown, cut short.
    for (const root of roots) await untilSettled(host, root, ofType('agent.effect.finished', root));
    for (const root of roots) assert.equal((await effectsOf(host, root))[0]?.status, 'unknown');
    assert.doesNotMatch(outputs.get(worker)?.text ?? '', /MaxListenersExceededWarning/);
  } finally {
    await host.close(2_000);
  }
});

test('bullmq: SIGTERM stops a worker within its deadline; the attempt it had to abort is Unknown, not failed', async () => {
  const prefix = freshPrefix();
  const worker = await spawnWorker(prefix, { SCOPE_SHUTDOWN_MS: '300' });
  const host = apiHost(prefix);
  try {
    const sleeping = await start(host, 'demo.sleep', { ms: 600_000 });
    const root = sleeping.processId;
    await untilClaimed(prefix, root);
    worker.kill('SIGTERM');
    const [code] = (await once(worker, 'exit')) as [number | null];
    assert.equal(code, 0, 'a graceful stop');
    await untilSettled(host, root, ofType('agent.effect.finished', root));
    const [effect] = await effectsOf(host, root);
    assert.equal(effect?.status, 'unknown', 'an effect cut short by a stopping worker may or may not have happened');
  } finally {
    await host.close(2_000);
  }
});
