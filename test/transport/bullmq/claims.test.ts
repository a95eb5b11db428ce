/**
 * The claim rules of the BullMQ transport against real Redis: the dispatch permit the pending
 * boundary's host write set writes with the head, fencing by incarnation, at-most-once claims of
 * `never` effects, refusals that write nothing, the inbox consumed by the settled boundary, and
 * restore-time adoption of an earlier attempt's settlement, and the first attempt enqueued right
 * behind its pending boundary's commit. Jobs are taken from the real queue and run by an EffectWorker
 * in this process (no BullMQ consumer), so each delivery is explicit.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { Queue } from 'bullmq';
import { type Command, Redis } from 'ioredis';
import { inlineSettlementLimit, parseSettledMessage, RedisEffectAttempts } from '../../../src/store/redis/effect-attempts.js';
import { luaScript } from '../../../src/store/redis/scripts.js';
import { attemptKey, dispatchPermitSuffix, headKey, recordKey } from '../../../src/store/redis/keys.js';
import { Deployment, Digest } from '../../../src/kernel/index.js';
import { EngineHost, type EngineHostOptions } from '../../../src/server/engine-host.js';
import { deferred } from '../../../src/kernel/deferred.js';
import { EffectWorker } from '../../../src/transport/bullmq/effect-worker.js';
import { resolvesFromLateReports } from '../../../src/transport/late-reports.js';
import type { EffectJobData } from '../../../src/transport/bullmq/job-data.js';
import { bullPrefixOf, queueNameOf } from '../../../src/transport/bullmq/names.js';
import deployments, { closeGate, openGate } from '../../fixtures/gated-echo-deployments.js';
import { startRedisServer, type RedisServer } from '../../helpers/redis-server.js';
import { effectsOf, freshPrefix, ofType, redisHost, result, start, testConfig, untilEntry } from '../../server/harness.js';

let server: RedisServer;
let redis: Redis;
const closers: (() => Promise<unknown>)[] = [];

before(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url);
});

afterEach(async () => {
  closeGate();
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

after(async () => {
  redis?.disconnect();
  await server?.stop();
});

const env = (prefix: string) => ({
  SCOPE_REDIS_URL: server.url,
  SCOPE_KEY_PREFIX: prefix,
  SCOPE_TRANSPORT: 'bullmq',
  SCOPE_DEMOS: 'off',
  SCOPE_TRANSPORT_CLAIM_MS: '60000',
  SCOPE_TRANSPORT_LEASE_MS: '5000',
});

function host(prefix: string): EngineHost {
  const created = new EngineHost({ config: testConfig(env(prefix)), defaultMetrics: false, deployments: deployments() });
  closers.push(() => created.close(500));
  return created;
}

/** A host on its own client, which the test cuts to make that owner vanish mid-dispatch. */
function crashableHost(prefix: string): { host: EngineHost; crash: () => void } {
  const { host: created, redis: client } = redisHost({ url: server.url, prefix, env: env(prefix), deployments: deployments() });
  closers.push(() => created.close(200));
  return { host: created, crash: () => client.disconnect() };
}

interface Rig {
  readonly worker: EffectWorker;
  readonly attempts: RedisEffectAttempts;
  readonly refusals: string[];
  /** The next job waiting in the deployment's queue (the one after `skip` jobs). */
  job(skip?: number): Promise<EffectJobData>;
}

function rig(prefix: string): Rig {
  const refusals: string[] = [];
  const worker = new EffectWorker({ redis, bullConnection: redis, keyPrefix: prefix, deployments: deployments(), onRefused: (_attempt, reason) => refusals.push(reason) });
  const [deployment] = deployments();
  const queue = new Queue(queueNameOf(deployment!.ref), { connection: redis, prefix: bullPrefixOf(prefix) });
  closers.push(() => queue.close());
  return {
    worker,
    attempts: new RedisEffectAttempts({ redis, keyPrefix: prefix }),
    refusals,
    async job(skip = 0) {
      for (;;) {
        const waiting = await queue.getWaiting();
        const job = waiting.sort((a, b) => a.timestamp - b.timestamp)[skip];
        if (job !== undefined) return job.data as EffectJobData;
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
  };
}

async function effectIdOf(owner: EngineHost, root: string): Promise<string> {
  const [effect] = await effectsOf(owner, root);
  return effect?.effectId as string;
}

test('claims: the pending boundary writes the dispatch permit with the head; a refused claim executes and writes nothing', async () => {
  const prefix = freshPrefix();
  const owner = host(prefix);
  const { worker, attempts, refusals, job } = rig(prefix);
  openGate();
  const root = (await start(owner, 'demo.echo', { value: 'permit' })).processId;
  const data = await job();
  const effectId = await effectIdOf(owner, root);
  const incarnation = await redis.hget(headKey(prefix, root), 'incarnation');
  assert.equal(await attempts.permit(root, effectId), incarnation, 'the permit names the head incarnation that committed the pending boundary');
  assert.equal(data.incarnationId, incarnation);

  // No permit (no committed pending boundary granted the effect) refuses the claim.
  const permitKey = recordKey(prefix, root, dispatchPermitSuffix(effectId));
  await redis.del(permitKey);
  assert.equal(await worker.run(data), 'refused');
  assert.deepEqual(refusals, ['unpermitted']);
  assert.deepEqual(await redis.hgetall(attemptKey(prefix, root, data.attemptId)), {}, 'a refused claim writes no attempt record');
  assert.equal(await attempts.executions(root, effectId), 0);

  await redis.set(permitKey, incarnation as string);
  assert.equal(await worker.run(data), 'executed');
  assert.deepEqual((await result(owner, root)).output, { value: 'permit' });
  assert.equal(await attempts.permit(root, effectId), 'settled', 'the settled boundary withdraws the permit');
  assert.deepEqual(await attempts.inbox(root, effectId), {}, 'and consumes the inbox entry with the head');

  // A redelivery of the same attempt, and a new attempt of the settled effect: both refused.
  assert.equal(await worker.run(data), 'refused');
  assert.equal(await worker.run({ ...data, attemptId: `attempt:${'1'.repeat(32)}` }), 'refused');
  assert.deepEqual(refusals, ['unpermitted', 'taken', 'settled']);
  assert.equal(await attempts.executions(root, effectId), 1);
});

test('claims: a job malformed in what its claim names is refused and writes nothing; one corrupted only in the rest is claimed, never executed, and fails definitely', async () => {
  const prefix = freshPrefix();
  const owner = host(prefix);
  const { worker, attempts, refusals, job } = rig(prefix);
  openGate(); // an execution would echo the value and complete the process
  const root = (await start(owner, 'demo.echo', { value: 'corrupted' })).processId;
  const data = await job();
  const effectId = await effectIdOf(owner, root);

  // The claim's own members (the effect's position, the attempt) are checked before anything is written.
  assert.equal(await worker.run({ ...data, stepSequence: '0' }), 'refused');
  assert.equal(await worker.run({ ...data, attemptId: 'attempt:not-hex' }), 'refused');
  assert.deepEqual(refusals, [], 'no claim was even asked for');
  assert.deepEqual(await redis.hgetall(attemptKey(prefix, root, data.attemptId)), {});
  assert.equal(await attempts.executions(root, effectId), 0);

  // The relation is checked while the claim is on its way: the granted claim settles a definite failure.
  const subscriber = redis.duplicate();
  closers.push(async () => subscriber.disconnect());
  const announced = deferred<string>();
  subscriber.on('message', (_channel: string, message: string) => {
    const settled = parseSettledMessage(message);
    if (settled?.attemptId === data.attemptId && settled.json !== undefined) announced.resolve(settled.json);
  });
  await subscriber.subscribe(attempts.settledChannel);
  assert.equal(await worker.run({ ...data, relation: '{"process_id":"broken"}' }), 'executed');
  const entry = JSON.parse(await announced.promise) as { outcome: string; settlement: { status: string; payload: { code?: string } } };
  assert.equal(entry.outcome, 'settled');
  assert.equal(entry.settlement.status, 'failed');
  assert.equal(entry.settlement.payload.code, 'transport.malformed_job');
  const outcome = await result(owner, root);
  assert.equal(outcome.failure?.code, 'demo.echo.failed', 'the process saw the failure: the echo (its gate open) never ran');
  const [effect] = await effectsOf(owner, root);
  assert.equal(effect?.status, 'settled');
  assert.equal(await attempts.executions(root, effectId), 1, 'claimed once');
  assert.equal(await worker.run(data), 'refused', 'and settled: the intact job cannot run it any more');
});

test('claims: a small settlement travels in its announcement, so the owner reads it without inspecting the attempt again; a large one is read from the inbox', async () => {
  const prefix = freshPrefix();
  // Entered before the Host exists (see join.test.ts): a monitor line may arrive with MONITOR's reply.
  const monitor = await new Redis(server.url, { lazyConnect: true }).monitor();
  const subscriber = new Redis(server.url);
  closers.push(async () => {
    monitor.disconnect();
    subscriber.disconnect();
  });
  const owner = host(prefix);
  const { worker, attempts, job } = rig(prefix);
  const messages: string[] = [];
  subscriber.on('message', (_channel: string, message: string) => messages.push(message));
  await subscriber.subscribe(attempts.settledChannel);
  const seen: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => seen.push(args));
  openGate();

  for (const [index, value] of ['small', 'x'.repeat(inlineSettlementLimit)].entries()) {
    const root = (await start(owner, 'demo.echo', { value })).processId;
    const data = await job(index); // the jobs stay queued: nothing consumes them here
    seen.length = 0;
    assert.equal(await worker.run(data), 'executed');
    assert.deepEqual((await result(owner, root)).output, { value });
    // A barrier: the monitor has seen everything sent before this PING.
    const sawPing = new Promise<void>((resolve) => monitor.on('monitor', (_time: string, args: string[]) => args[0]?.toUpperCase() === 'PING' && resolve()));
    await redis.ping();
    await sawPing;
    // EVALSHA, or the EVAL that loads the script on its first use.
    const forAttempt = (name: string) => (args: string[]) =>
      ((args[0]?.toLowerCase() === 'evalsha' && args[1] === luaScript(name).sha) || (args[0]?.toLowerCase() === 'eval' && (args[1] ?? '').includes(`${name}:`))) &&
      args.includes(attemptKey(prefix, root, data.attemptId));
    const settled = seen.findIndex(forAttempt('settleAttempt'));
    assert.ok(settled >= 0, 'the worker settled the attempt');
    const inspections = seen.slice(settled).filter(forAttempt('inspectAttempt')).length;
    const announced = messages.map(parseSettledMessage).find((message) => message?.attemptId === data.attemptId);
    if (value === 'small') {
      assert.match(announced?.json ?? '', /"outcome":"settled"/, 'the announcement carries the inbox entry');
      assert.equal(inspections, 0, 'the owner took the settlement from the announcement');
    } else {
      assert.equal(announced?.json, undefined, `an entry over ${inlineSettlementLimit} characters is announced by name only`);
      assert.ok(inspections >= 1, 'the owner read the large settlement from the inbox');
    }
  }
});

test('claims: a never effect is claimed at most once per tree, even after its claim lapsed; same_identity may run again', async () => {
  const prefix = freshPrefix();
  const owner = host(prefix);
  const { attempts, job } = rig(prefix);
  const root = (await start(owner, 'demo.echo', { value: 'once' })).processId;
  const data = await job();
  const effectId = await effectIdOf(owner, root);
  const claim = (attemptId: string, replayPolicy: 'never' | 'same_identity') =>
    attempts.claim({ rootId: root, effectId, attemptId, incarnationId: data.incarnationId, replayPolicy, token: attemptId, workerId: 'test', leaseMs: 60_000 });
  assert.deepEqual(await claim(data.attemptId, 'never'), { claimed: true });
  const second = `attempt:${'2'.repeat(32)}`;
  assert.deepEqual(await claim(second, 'never'), { claimed: false, reason: 'running' }, 'never beside a live claim');
  // The first claimant's lease lapses (its worker is gone): still never again.
  await redis.hset(attemptKey(prefix, root, data.attemptId), 'leaseUntil', '0');
  assert.deepEqual(await claim(second, 'never'), { claimed: false, reason: 'never_claimed' });
  assert.deepEqual(await redis.hgetall(attemptKey(prefix, root, second)), {});
  assert.deepEqual(await claim(second, 'same_identity'), { claimed: true }, 'a replayable effect may be attempted again');
  assert.equal(await attempts.executions(root, effectId), 2);
});

test('claims: after a takeover the old owner’s job is refused by the fence; the new incarnation’s attempt runs once', async () => {
  const prefix = freshPrefix();
  const { host: zombie, crash } = crashableHost(prefix);
  const { worker, attempts, refusals, job } = rig(prefix);
  openGate();
  const root = (await start(zombie, 'demo.echo', { value: 'takeover' })).processId;
  const old = await job();
  crash();
  const owner = host(prefix);
  await owner.restoreTree(root);
  const restored = await job(1);
  const effectId = await effectIdOf(owner, root);
  assert.notEqual(restored.incarnationId, old.incarnationId);
  // The activation moves no permits (so a restore of any number of pending effects fits one commit):
  // the permit still names the incarnation that granted it, and the head's incarnation is the fence.
  assert.equal(await attempts.permit(root, effectId), old.incarnationId, 'the activation wrote no permit');
  assert.equal(await worker.run(old), 'refused', 'the zombie owner’s job');
  assert.deepEqual(refusals, ['fenced']);
  assert.equal(await worker.run(restored), 'executed');
  assert.deepEqual((await result(owner, root)).output, { value: 'takeover' });
  assert.equal(await attempts.executions(root, effectId), 1);
});

test('claims: a restored owner adopts the settlement an earlier attempt left in the inbox instead of running it again', async () => {
  const prefix = freshPrefix();
  const { host: first, crash } = crashableHost(prefix);
  const { worker, attempts, job } = rig(prefix);
  openGate();
  const root = (await start(first, 'demo.echo', { value: 'adopted' })).processId;
  const data = await job();
  crash(); // the owner is gone before it could commit the settled boundary
  assert.equal(await worker.run(data), 'executed');
  const owner = host(prefix);
  await owner.restoreTree(root);
  const effectId = await effectIdOf(owner, root);
  assert.deepEqual((await result(owner, root)).output, { value: 'adopted' });
  assert.equal(await attempts.executions(root, effectId), 1, 'executed once, by the earlier attempt');
  assert.deepEqual(await attempts.inbox(root, effectId), {}, 'the settled boundary consumed the adopted entry');
});

test('claims: a restored owner waits for an earlier attempt still running, then adopts its settlement', async () => {
  const prefix = freshPrefix();
  const { host: first, crash } = crashableHost(prefix);
  const { worker, attempts, job } = rig(prefix);
  const root = (await start(first, 'demo.echo', { value: 'waited' })).processId;
  const data = await job();
  const running = worker.run(data); // claims, then waits on the closed gate
  while ((await redis.hget(attemptKey(prefix, root, data.attemptId), 'state')) !== 'claimed') await new Promise((resolve) => setImmediate(resolve));
  crash();
  const owner = host(prefix);
  await owner.restoreTree(root);
  // The restored dispatch has begun (and so looked at the earlier attempt) before the gate opens.
  await untilEntry(owner, root, (entry) => ofType('agent.effect.started')(entry) && !entry.data.includes(data.attemptId));
  openGate();
  assert.equal(await running, 'executed');
  assert.deepEqual((await result(owner, root)).output, { value: 'waited' });
  const effectId = await effectIdOf(owner, root);
  assert.equal(await attempts.executions(root, effectId), 1);
});

/**
 * A replay-forbidden gated echo (optionally trusting late reports), started on an owner that then
 * vanishes while an in-process worker holds the attempt's claim (its dispatch waits on the gate).
 */
async function neverEchoInFlight(prefix: string, value: string, trust: boolean) {
  const [gatedEcho] = deployments();
  const dispatcher = { dispatch: gatedEcho!.dispatcher!.dispatch.bind(gatedEcho!.dispatcher), replayPolicy: () => 'never' as const };
  const name = trust ? 'trusting-echo' : 'never-echo';
  const deployment = Deployment.create({
    definition: gatedEcho!.definition,
    dispatcher: trust ? resolvesFromLateReports(dispatcher) : dispatcher,
    implementationDigest: Digest.of(`test:${name}:implementation:v1`),
    configurationDigest: Digest.of(`test:${name}:configuration:v1`),
  });
  const first = redisHost({ url: server.url, prefix, env: env(prefix), deployments: [deployment] });
  closers.push(() => first.host.close(200));
  const worker = new EffectWorker({ redis, bullConnection: redis, keyPrefix: prefix, deployments: [deployment] });
  const queue = new Queue(queueNameOf(deployment.ref), { connection: redis, prefix: bullPrefixOf(prefix) });
  closers.push(() => queue.close());
  const root = (await start(first.host, 'demo.echo', { value })).processId;
  let data: EffectJobData | undefined;
  while (data === undefined) {
    data = (await queue.getWaiting())[0]?.data as EffectJobData | undefined;
    if (data === undefined) await new Promise((resolve) => setImmediate(resolve));
  }
  const running = worker.run(data); // claims, then waits on the closed gate
  while ((await redis.hget(attemptKey(prefix, root, data.attemptId), 'state')) !== 'claimed') await new Promise((resolve) => setImmediate(resolve));
  first.redis.disconnect(); // the owner vanishes with the attempt in flight
  const owner = (): EngineHost => {
    const created = new EngineHost({ config: testConfig(env(prefix)), defaultMetrics: false, deployments: [deployment] });
    closers.push(() => created.close(500));
    return created;
  };
  return { root, attemptId: data.attemptId, running, owner };
}

/** The tree's first effect once the restored owner has committed it Unknown (no event marks that: it is no attempt). */
async function declaredUnknown(owner: EngineHost, root: string) {
  let [effect] = await effectsOf(owner, root);
  while (effect?.status === 'pending') {
    await new Promise((resolve) => setImmediate(resolve));
    [effect] = await effectsOf(owner, root);
  }
  return effect;
}

test('claims: a never effect declared Unknown at a takeover shows the late report its still-running attempt left; a person resolves from it', async () => {
  const prefix = freshPrefix();
  const { root, attemptId, running, owner: restoring } = await neverEchoInFlight(prefix, 'late', false);
  const owner = restoring();
  await owner.restoreTree(root);
  const declared = await declaredUnknown(owner, root);
  assert.equal(declared?.status, 'unknown', 'a never effect in flight at restore is Unknown');
  assert.equal(declared?.lateReport, undefined, 'nothing reported yet');

  openGate();
  assert.equal(await running, 'executed');
  const [reported] = await effectsOf(owner, root);
  assert.equal(reported?.status, 'unknown', 'the report is evidence, not the record');
  assert.deepEqual(reported?.lateReport, { attemptId, status: 'succeeded', payload: { value: 'late' }, reason: null });
  await owner.resolveEffect(root, reported!.effectId, { status: 'succeeded', payload: reported!.lateReport!.payload! });
  assert.deepEqual((await result(owner, root)).output, { value: 'late' });
});

test('claims: a deployment that trusts late reports has its Unknown resolved by the owner from the definite report, with no person', async () => {
  const prefix = freshPrefix();
  const { root, running, owner: restoring } = await neverEchoInFlight(prefix, 'trusted', true);
  const owner = restoring();
  await owner.restoreTree(root);
  assert.equal((await declaredUnknown(owner, root))?.status, 'unknown', 'Unknown first: the owner never guesses');
  openGate();
  assert.equal(await running, 'executed');
  assert.deepEqual((await result(owner, root)).output, { value: 'trusted' }, 'resolved from the report, and the process went on');
  const [resolved] = await effectsOf(owner, root);
  assert.equal(resolved?.status, 'resolved');
  assert.equal(await new RedisEffectAttempts({ redis, keyPrefix: prefix }).executions(root, resolved!.effectId), 1, 'it ran once');
});

test('claims: a trusted report already in the inbox when the restore declares the effect Unknown is applied right after that commit', async () => {
  const prefix = freshPrefix();
  const { root, running, owner: restoring } = await neverEchoInFlight(prefix, 'early', true);
  openGate();
  assert.equal(await running, 'executed', 'the report is in the inbox before anyone restores the tree');
  const owner = restoring();
  await owner.restoreTree(root);
  assert.deepEqual((await result(owner, root)).output, { value: 'early' }, 'declared Unknown at the restore, then resolved from the report');
  const [resolved] = await effectsOf(owner, root);
  assert.equal(resolved?.status, 'resolved');
  assert.equal(await new RedisEffectAttempts({ redis, keyPrefix: prefix }).executions(root, resolved!.effectId), 1, 'it ran once');
});

/** A host on its own client, whose commands the test can watch as they are issued. */
function watchedHost(prefix: string, extra: Partial<EngineHostOptions> = {}): { host: EngineHost; client: Redis } {
  const { host: created, redis: client } = redisHost({ url: server.url, prefix, env: env(prefix), deployments: deployments(), ...extra });
  closers.push(async () => {
    await created.close(200);
    client.disconnect();
  });
  return { host: created, client };
}

/** Calls `onPending` for the first commit script that writes an effect's dispatch permit (a pending boundary), as it is issued. */
function onPendingCommit(client: Redis, onPending: (command: Command) => void): void {
  const send = client.sendCommand.bind(client);
  let seen = false;
  client.sendCommand = ((command: Command, stream?: unknown) => {
    if (!seen && command.name === 'evalsha' && command.args.some((arg) => typeof arg === 'string' && arg.includes(':record:dispatch:'))) {
      seen = true;
      onPending(command);
    }
    return send(command, stream as never);
  }) as Redis['sendCommand'];
}

/**
 * The first waiting job of the deployment's queue that `matches`, polled for; a failure naming `what`
 * if none is there within `boundMs` (so a missing behaviour fails the test instead of hanging it).
 */
async function jobWhere(prefix: string, matches: (data: EffectJobData) => boolean, what: string, boundMs = 10_000): Promise<EffectJobData> {
  const [deployment] = deployments();
  const queue = new Queue(queueNameOf(deployment!.ref), { connection: redis, prefix: bullPrefixOf(prefix) });
  const deadline = performance.now() + boundMs;
  try {
    for (;;) {
      const found = (await queue.getWaiting()).find((job) => matches(job.data as EffectJobData));
      if (found !== undefined) return found.data as EffectJobData;
      if (performance.now() > deadline) throw new Error(`no job within ${boundMs} ms: ${what}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    await queue.close();
  }
}

/**
 * Runs one demo.echo through `owner` and the rig's worker. The owner's first dispatch subscribes it to
 * settlements, and first attempts go behind their pending boundary only once it listens.
 */
async function listening(owner: EngineHost, { worker, job }: Rig): Promise<void> {
  openGate();
  const warm = (await start(owner, 'demo.echo', { value: 'warm' })).processId;
  assert.equal(await worker.run(await job()), 'executed');
  await result(owner, warm);
}

test('claims: the first attempt is enqueued right behind its pending boundary, so a worker claims and settles it while the owner has not yet seen that commit acknowledged', async () => {
  const prefix = freshPrefix();
  const published: string[] = [];
  const { host: owner, client } = watchedHost(prefix, { observeEvent: (event) => published.push(event.name) });
  const workers = rig(prefix);
  const { worker, attempts } = workers;
  await listening(owner, workers);

  // The next pending boundary's reply reaches the client, but its caller (the owner) is answered only on release.
  const release = deferred<void>();
  onPendingCommit(client, (command) => {
    const resolve = command.resolve;
    command.resolve = (value: unknown) => void release.promise.then(() => resolve(value));
  });
  published.length = 0;
  const root = (await start(owner, 'demo.echo', { value: 'behind' })).processId;
  const data = await jobWhere(prefix, (job) => job.rootId === root, 'enqueued before the owner saw its pending boundary acknowledged');
  assert.equal(published.includes('agent.effect.started'), false, 'the owner has not seen the pending boundary acknowledged');
  assert.equal(await worker.run(data), 'executed', 'the claim finds the permit: the commit ran before the enqueue');
  release.resolve();
  assert.deepEqual((await result(owner, root)).output, { value: 'behind' });
  const effectId = await effectIdOf(owner, root);
  assert.equal(await attempts.executions(root, effectId), 1);
  assert.deepEqual((await effectsOf(owner, root))[0]?.attemptList.map((attempt) => attempt.attemptId), [data.attemptId], 'the attempt the Engine started is the one enqueued');
});

test('claims: a first attempt enqueued behind a pending boundary that a takeover refuses is refused by the fence and runs nothing', async () => {
  const prefix = freshPrefix();
  const stopped = deferred<void>();
  const { host: zombie, client } = watchedHost(prefix, { observeEvent: (event) => event.name === 'agent.runtime.stopped' && stopped.resolve() });
  const workers = rig(prefix);
  const { worker, attempts, refusals } = workers;
  await listening(zombie, workers);

  // The zombie's pending commit and the enqueue behind it are held in its socket while another owner takes the tree over.
  const issued = deferred<void>();
  onPendingCommit(client, () => {
    (client.stream as { cork(): void }).cork();
    issued.resolve();
  });
  const root = (await start(zombie, 'demo.echo', { value: 'fenced' })).processId;
  await issued.promise;
  const zombieIncarnation = (await redis.hget(headKey(prefix, root), 'incarnation')) as string;
  const owner = host(prefix);
  await owner.restoreTree(root);
  (client.stream as { uncork(): void }).uncork();

  // The refused commit stopped the zombie's writer; the attempt it handed off is no longer followed.
  await stopped.promise;
  assert.match((await zombie.metrics()).body, /^scope_transport_followed_attempts 0$/m);

  const stale = await jobWhere(prefix, (job) => job.incarnationId === zombieIncarnation, 'the zombie’s attempt, enqueued behind its refused commit');
  assert.equal(await worker.run(stale), 'refused', 'the refused commit granted nothing to the zombie’s incarnation');
  assert.deepEqual(refusals, ['fenced']);
  const current = (await redis.hget(headKey(prefix, root), 'incarnation')) as string;
  assert.notEqual(current, zombieIncarnation);
  assert.equal(await worker.run(await jobWhere(prefix, (job) => job.incarnationId === current, 'the new owner’s attempt')), 'executed');
  assert.deepEqual((await result(owner, root)).output, { value: 'fenced' });
  assert.equal(await attempts.executions(root, await effectIdOf(owner, root)), 1);
});
