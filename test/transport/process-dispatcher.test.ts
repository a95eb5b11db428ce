import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { EffectBoundary } from '../../src/kernel/commit.js';
import type { Delta } from '../../src/kernel/delta.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import { Effect } from '../../src/kernel/effect.js';
import { Engine } from '../../src/kernel/engine.js';
import { EffectId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import type { Settlement } from '../../src/kernel/settlement.js';
import type { CommitContext } from '../../src/kernel/tree-committer.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import type { Timers } from '../../src/supervisor/timers.js';
import { echoDefinition, echoDispatchFailedCode } from '../../src/testing/example-definitions.js';
import type { JsonLinesWorker } from '../../src/transport/json-lines-worker.js';
import { ProcessDispatcher } from '../../src/transport/process-dispatcher.js';
import type { ProcessDispatcherConfig } from '../../src/transport/process-dispatcher-config.js';
import { deferred } from '../../src/kernel/deferred.js';
import { isSettled, jsonlWorkerPath, ManualTimers, PidLedger } from '../supervisor/helpers.js';

/** The memory committer, announcing every acknowledged `settled` Effect boundary. */
class WatchedCommitter extends MemoryTreeCommitter {
  readonly #settled = new Map<string, ReturnType<typeof deferred<Settlement>>>();

  override async commitEffect(boundary: EffectBoundary, _context?: CommitContext): Promise<void> {
    await super.commitEffect(boundary);
    if (boundary.kind !== 'settled') return;
    const settlement = boundary.settlement(); // also when the boundary adopted its batch
    if (settlement !== undefined) this.#entry(boundary.effectId.toString()).resolve(settlement);
  }

  /** The settlement committed for `effectId`, once its settled boundary is acknowledged. */
  settled(effectId: EffectId): Promise<Settlement> {
    return this.#entry(effectId.toString()).promise;
  }

  #entry(id: string) {
    let entry = this.#settled.get(id);
    if (entry === undefined) {
      entry = deferred<Settlement>();
      this.#settled.set(id, entry);
    }
    return entry;
  }
}

interface SetupOptions {
  readonly config?: Partial<ProcessDispatcherConfig>;
  readonly timers?: Timers;
}

function setup(t: TestContext, options: SetupOptions = {}) {
  const ledger = new PidLedger();
  const timers = options.timers;
  const supervisor = new Supervisor<JsonLinesWorker>({ timers, startTimeoutMs: 20_000 });
  const dispatcher = new ProcessDispatcher(
    {
      command: process.execPath,
      args: [jsonlWorkerPath],
      env: {},
      replayPolicy: 'never',
      requestTimeoutMs: 20_000,
      ...options.config,
    },
    { supervisor, timers, onSpawn: (pid) => ledger.record(pid) },
  );
  const deployment = Deployment.create({
    definition: echoDefinition,
    dispatcher,
    implementationDigest: Digest.of('process-dispatcher-test'),
    configurationDigest: dispatcher.configurationDigest,
  });
  const committer = new WatchedCommitter();
  const hanging: Array<(delta: Delta) => void> = [];
  const engine = new Engine({
    committer,
    deltaListeners: [(delta: Delta) => hanging.forEach((listener) => listener(delta))],
  });
  t.after(() => supervisor.close());
  /** Resolves when the worker reports (as a delta) that it holds the Effect without answering. */
  const nextHang = (): Promise<Delta> =>
    new Promise((resolve) => {
      hanging.push((delta) => {
        if ((delta.payload.decode() as { hanging?: boolean }).hanging === true) resolve(delta);
      });
    });
  const echo = (value: string) => Payload.encode({ value });
  const currentPid = (): number | undefined => supervisor.peek(dispatcher.key)?.pid;
  return {
    ledger,
    supervisor,
    dispatcher,
    deployment,
    committer,
    engine,
    nextHang,
    echo,
    currentPid,
    /** Closes Engine and supervisor and proves that every command the dispatcher spawned is gone. */
    async finish(): Promise<void> {
      await engine.close();
      assert.equal(await supervisor.close(), true);
      ledger.assertAllGone();
    },
  };
}

test('the first Effect starts the command, later Effects reuse it', async (t) => {
  const { engine, deployment, echo, currentPid, ledger, finish } = setup(t);
  const first = await engine.run(deployment, echo('one'));
  assert.equal(first.status, 'completed');
  assert.deepEqual(first.output?.decode(), { value: 'one' });
  const pid = currentPid();
  assert.ok(pid !== undefined);
  for (const value of ['two', 'three']) {
    const result = await engine.run(deployment, echo(value));
    assert.deepEqual(result.output?.decode(), { value });
    assert.equal(currentPid(), pid, 'the same process serves every Effect');
  }
  // Overlapping Effects share the process too, matched by effect id whatever the answer order.
  const values = [40, 10, 30, 0, 20].map((delay) => `worker:delay_ms=${delay}`);
  const results = await Promise.all(values.map((value) => engine.run(deployment, echo(value))));
  assert.deepEqual(
    results.map((result) => (result.output?.decode() as { value: string }).value),
    values,
  );
  assert.deepEqual(ledger.pids, [pid], 'one command was ever spawned');
  await finish();
});

test('the command’s failed answer is a definite failed Settlement', async (t) => {
  const { engine, deployment, echo, finish } = setup(t);
  const result = await engine.run(deployment, echo('worker:fail'));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.code, echoDispatchFailedCode);
  assert.deepEqual(result.termination.unresolvedEffectIds, []);
  await finish();
});

test('a killed command turns the in-flight Effect Unknown, never Failed, and the next Effect gets a new process', async (t) => {
  const { engine, deployment, echo, currentPid, committer, nextHang, ledger, finish } = setup(t);
  assert.equal((await engine.run(deployment, echo('warm'))).status, 'completed');
  const pid = currentPid() as number;
  const hang = nextHang();
  const process_ = await engine.start(deployment, echo('worker:hang'));
  const effectId = EffectId.derive(process_.id, 1n, 0);
  await hang;
  process.kill(pid, 'SIGKILL');
  const settlement = await committer.settled(effectId);
  assert.equal(settlement.status, 'unknown');
  assert.equal((settlement.payload.decode() as { code: string }).code, 'command_exited');
  await process_.kill('test over');
  const parked = await process_.await();
  assert.notEqual(parked.status, 'failed');
  assert.deepEqual(parked.termination.unresolvedEffectIds.map(String), [effectId.toString()]);

  const next = await engine.run(deployment, echo('after'));
  assert.deepEqual(next.output?.decode(), { value: 'after' });
  const replacement = currentPid();
  assert.ok(replacement !== undefined && replacement !== pid, 'a new process serves the next Effect');
  assert.deepEqual(ledger.pids, [pid, replacement]);
  await finish();
});

test('a command that crashes mid-request makes the Effect Unknown', async (t) => {
  const { engine, deployment, echo, committer, finish } = setup(t);
  const process_ = await engine.start(deployment, echo('worker:crash'));
  const settlement = await committer.settled(EffectId.derive(process_.id, 1n, 0));
  assert.equal(settlement.status, 'unknown');
  assert.equal((settlement.payload.decode() as { code: string }).code, 'command_exited');
  await process_.kill('test over');
  await process_.await();
  await finish();
});

test('a command silent past the request timeout makes the Effect Unknown and is retired', async (t) => {
  const timers = new ManualTimers();
  const { engine, deployment, echo, committer, nextHang, currentPid, ledger, finish } = setup(t, {
    timers,
    config: { requestTimeoutMs: 5_000 },
  });
  const hang = nextHang();
  const process_ = await engine.start(deployment, echo('worker:hang'));
  await hang;
  const pid = currentPid() as number;
  const settled = committer.settled(EffectId.derive(process_.id, 1n, 0));
  timers.advance(4_999);
  assert.equal(await isSettled(settled), false);
  timers.advance(1);
  const settlement = await settled;
  assert.equal(settlement.status, 'unknown');
  assert.equal((settlement.payload.decode() as { code: string }).code, 'request_timeout');
  // The silent command was marked broken: unleased, it closes; the next Effect starts another.
  assert.equal(currentPid(), undefined);
  const next = await engine.run(deployment, echo('after'));
  assert.equal(next.status, 'completed');
  assert.notEqual(currentPid(), pid);
  assert.equal(ledger.pids.length, 2);
  await process_.kill('test over');
  await process_.await();
  await finish();
});

test('a command that cannot start fails the Effect definitely: nothing was sent', async (t) => {
  const { engine, deployment, echo, committer, ledger, finish } = setup(t, { config: { args: [jsonlWorkerPath, '--crash-on-start'] } });
  const process_ = await engine.start(deployment, echo('never sent'));
  const settlement = await committer.settled(EffectId.derive(process_.id, 1n, 0));
  assert.equal(settlement.status, 'failed');
  const problem = settlement.payload.decode() as { code: string; message: string };
  assert.equal(problem.code, 'start_failed');
  assert.match(problem.message, /exit code 71/);
  const result = await process_.await();
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.code, echoDispatchFailedCode);
  assert.equal(ledger.pids.length, 1, 'the crashed start was spawned once');
  await finish();
});

test('a command that is not there fails the Effect definitely', async (t) => {
  const { engine, deployment, echo, ledger, finish } = setup(t, { config: { command: '/nonexistent/scope-worker', args: [] } });
  const result = await engine.run(deployment, echo('x'));
  assert.equal(result.status, 'failed');
  assert.equal(result.termination.failure?.code, echoDispatchFailedCode);
  assert.deepEqual(ledger.pids, []);
  await finish();
});

test('the replay policy, key and fingerprint come from the configuration', async (t) => {
  const { dispatcher, finish } = setup(t, { config: { replayPolicy: 'same_identity', key: 'echo-worker' } });
  assert.equal(dispatcher.replayPolicy(Effect.dispatcher(Payload.emptyObject)), 'same_identity');
  assert.equal(dispatcher.key, 'echo-worker');
  assert.equal(dispatcher.fingerprint, dispatcher.configurationDigest.toString());
  const unkeyed = setup(t);
  assert.equal(unkeyed.dispatcher.replayPolicy(Effect.dispatcher(Payload.emptyObject)), 'never');
  assert.equal(unkeyed.dispatcher.key, unkeyed.dispatcher.fingerprint, 'without a key every configuration has its own process');
  await unkeyed.finish();
  await finish();
});

test('dispatchers sharing a key share one worker, and a changed configuration replaces it', async (t) => {
  const first = setup(t, { config: { key: 'shared' } });
  const result = await first.engine.run(first.deployment, first.echo('a'));
  assert.equal(result.status, 'completed');
  const pid = first.currentPid() as number;
  // A second dispatcher on the same supervisor and key, with another configuration.
  const changed = new ProcessDispatcher(
    { command: process.execPath, args: [jsonlWorkerPath, '--version=2'], env: {}, key: 'shared', replayPolicy: 'never', requestTimeoutMs: 20_000 },
    { supervisor: first.supervisor, onSpawn: (spawned) => first.ledger.record(spawned) },
  );
  const deployment = Deployment.create({
    definition: echoDefinition,
    dispatcher: changed,
    implementationDigest: Digest.of('process-dispatcher-test'),
    configurationDigest: changed.configurationDigest,
  });
  const again = await first.engine.run(deployment, first.echo('b'));
  assert.equal(again.status, 'completed');
  const replacement = first.currentPid() as number;
  assert.notEqual(replacement, pid, 'the process started from the old configuration was retired');
  assert.deepEqual(first.ledger.pids, [pid, replacement]);
  await first.finish();
});
