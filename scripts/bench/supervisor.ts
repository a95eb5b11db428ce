import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Dispatcher, DeltaEmitter } from '../../src/kernel/definition.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import { EffectRequest } from '../../src/kernel/effect.js';
import { Engine } from '../../src/kernel/engine.js';
import { ProcessId } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { ProcessRelation } from '../../src/kernel/relation.js';
import { Settlement } from '../../src/kernel/settlement.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import type { Child } from '../../src/supervisor/child.js';
import { Child as ChildProcess } from '../../src/supervisor/child.js';
import { Supervisor } from '../../src/supervisor/supervisor.js';
import { echoDefinition, echoDispatcher, echoEffect } from '../../src/testing/example-definitions.js';
import { JsonLinesWorker } from '../../src/transport/json-lines-worker.js';
import { ProcessDispatcher } from '../../src/transport/process-dispatcher.js';
import type { ProcessDispatcherConfig } from '../../src/transport/process-dispatcher-config.js';

/**
 * The supervisor's costs, side by side:
 * - lease + release on a warm process (the supervisor's bookkeeping alone, no I/O);
 * - one Effect round trip, `Dispatcher.dispatch()` alone: through the process dispatcher on a
 *   warm long-lived command, through a dispatcher that spawns a fresh command per Effect (spawn,
 *   handshake, one request, kill — the cost the supervisor avoids), and settled in process;
 * - the same three under the Engine (echo Definition, memory committer), where the Engine's own
 *   commits and Steps are added to every round trip.
 */

const workerPath = fileURLToPath(new URL('../jsonl-worker.mjs', import.meta.url));
const config: ProcessDispatcherConfig = {
  command: process.execPath,
  args: [workerPath],
  env: {},
  replayPolicy: 'never',
  requestTimeoutMs: 30_000,
};
const digests = { implementationDigest: Digest.of('bench-supervisor'), configurationDigest: Digest.of('bench-supervisor-configuration') };

interface Measure {
  readonly operations: number;
  readonly ms: number;
}

async function measure(operations: number, run: (index: number) => Promise<unknown>): Promise<Measure> {
  const started = performance.now();
  for (let index = 0; index < operations; index += 1) await run(index);
  return { operations, ms: performance.now() - started };
}

function perOperationUs({ operations, ms }: Measure): number {
  return (ms * 1000) / operations;
}

function row(label: string, result: Measure, baseline?: Measure): string {
  const us = perOperationUs(result);
  const perSecond = (result.operations / result.ms) * 1000;
  const ratio = baseline === undefined ? '' : `  ${(us / perOperationUs(baseline)).toFixed(1).padStart(7)}×`;
  return `${label.padEnd(46)} ${us.toFixed(1).padStart(10)} µs/op ${perSecond.toFixed(0).padStart(9)} op/s  (${result.operations} in ${result.ms.toFixed(0)} ms)${ratio}`;
}

/** Spawns, handshakes, sends one request and kills a fresh command for every Effect. */
class SpawnPerEffectDispatcher implements Dispatcher {
  async dispatch(request: EffectRequest, _emit: DeltaEmitter | undefined, signal: AbortSignal): Promise<Settlement> {
    const worker = await JsonLinesWorker.start({ command: config.command, args: config.args, env: config.env, signal });
    try {
      const outcome = await worker.request(request.id.toString(), request.effect.payload, { timeoutMs: config.requestTimeoutMs, signal });
      if (outcome.kind !== 'answered') throw new Error(`the fresh command lost the request: ${outcome.code}`);
      return Settlement.of(outcome.status, outcome.payload);
    } finally {
      await worker.close();
    }
  }

  replayPolicy(): 'never' {
    return 'never';
  }
}

async function benchLeases(): Promise<Measure> {
  const supervisor = new Supervisor<Child>();
  const start = async () => ({ process: await ChildProcess.spawn({ command: process.execPath, args: [workerPath] }) });
  const warm = await supervisor.lease('bench', 'fp', start);
  warm.release();
  const result = await measure(200_000, async () => {
    const lease = await supervisor.lease('bench', 'fp', start);
    lease.release();
  });
  await supervisor.close();
  return result;
}

async function runDispatches(dispatcher: Dispatcher, effects: number): Promise<Measure> {
  const deployment = Deployment.create({ definition: echoDefinition, dispatcher, ...digests });
  const processId = ProcessId.parse('process:bench');
  const relation = ProcessRelation.root(processId);
  const effect = echoEffect('bench');
  const signal = new AbortController().signal;
  const request = (index: number) =>
    EffectRequest.create({ processId, relation, deploymentRef: deployment.ref, stepSequence: BigInt(index + 1), batchIndex: 0, effect });
  const warmup = await dispatcher.dispatch(request(effects), undefined, signal);
  if (warmup.status !== 'succeeded') throw new Error(`the warm-up dispatch ${warmup.status}`);
  return measure(effects, async (index) => {
    const settlement = await dispatcher.dispatch(request(index), undefined, signal);
    if (settlement.status !== 'succeeded') throw new Error(`a dispatch ${settlement.status}`);
  });
}

async function runEchoes(dispatcher: Dispatcher, effects: number): Promise<Measure> {
  const engine = new Engine({ committer: new MemoryTreeCommitter() });
  const deployment = Deployment.create({ definition: echoDefinition, dispatcher, ...digests });
  const input = Payload.encode({ value: 'bench' });
  const warmup = await engine.run(deployment, input);
  if (warmup.status !== 'completed') throw new Error(`the warm-up echo ${warmup.status}`);
  const result = await measure(effects, async () => {
    const run = await engine.run(deployment, input);
    if (run.status !== 'completed') throw new Error(`an echo ${run.status}`);
  });
  await engine.close();
  return result;
}

async function runConcurrentEchoes(dispatcher: Dispatcher, concurrency: number, rounds: number): Promise<Measure> {
  const engine = new Engine({ committer: new MemoryTreeCommitter() });
  const deployment = Deployment.create({ definition: echoDefinition, dispatcher, ...digests });
  const input = Payload.encode({ value: 'bench' });
  await engine.run(deployment, input);
  const started = performance.now();
  for (let round = 0; round < rounds; round += 1) {
    await Promise.all(Array.from({ length: concurrency }, () => engine.run(deployment, input)));
  }
  const ms = performance.now() - started;
  await engine.close();
  return { operations: concurrency * rounds, ms };
}

export async function benchSupervisor(): Promise<void> {
  console.log(`supervisor and process dispatcher (node ${process.version}, command: scripts/jsonl-worker.mjs)`);
  const leases = await benchLeases();
  console.log(row('lease + release, warm process', leases));

  const supervisor = new Supervisor<JsonLinesWorker>();
  const warm = new ProcessDispatcher(config, { supervisor });
  const spawning = new SpawnPerEffectDispatcher();

  const warmDispatch = await runDispatches(warm, 5_000);
  const freshDispatch = await runDispatches(spawning, 40);
  const inProcessDispatch = await runDispatches(echoDispatcher, 5_000);
  console.log('Effect round trip, Dispatcher.dispatch() alone (× the warm command):');
  console.log(row('  process dispatcher, warm command', warmDispatch, warmDispatch));
  console.log(row('  fresh command per Effect', freshDispatch, warmDispatch));
  console.log(row('  in-process echo (no I/O)', inProcessDispatch, warmDispatch));

  const warmEngine = await runEchoes(warm, 1_000);
  const freshEngine = await runEchoes(spawning, 20);
  const inProcessEngine = await runEchoes(echoDispatcher, 1_000);
  const concurrent = await runConcurrentEchoes(warm, 32, 30);
  console.log('echo Effect round trip through the Engine (× the warm command):');
  console.log(row('  process dispatcher, warm command', warmEngine, warmEngine));
  console.log(row('  fresh command per Effect', freshEngine, warmEngine));
  console.log(row('  in-process echo (Engine only)', inProcessEngine, warmEngine));
  console.log(row('  process dispatcher, warm, 32 concurrent', concurrent, warmEngine));
  console.log(
    `a fresh command per Effect costs ${(perOperationUs(freshDispatch) / perOperationUs(warmDispatch)).toFixed(0)}× a warm dispatch ` +
      `(${(perOperationUs(freshEngine) / perOperationUs(warmEngine)).toFixed(0)}× under the Engine)`,
  );
  await supervisor.close();
}
