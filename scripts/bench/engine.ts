import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import type { Definition, Execution } from '../../src/kernel/definition.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Digest } from '../../src/kernel/digest.js';
import { Engine } from '../../src/kernel/engine.js';
import { ExecutionState } from '../../src/kernel/execution-state.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import { Transition } from '../../src/kernel/transition.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { echoDefinition, echoDispatcher } from '../../src/testing/example-definitions.js';

/**
 * Engine throughput on the memory committer: Steps per second of a pure Definition (no Effects:
 * every Step is one progress commit) and of the echo Definition (one dispatched Effect per run:
 * pending, settled, two Steps), for 1 and 100 concurrent trees; then a CPU profile of the pure
 * run attributing self time to canonical JSON encoding and SHA-256 digests.
 */

const loopSteps = 200;

/** Counts down `remaining` with effect-free `continue` Steps, then completes. */
const loopDefinition: Definition = {
  descriptor: () => loopDescriptor,
  childDeployments: () => [],
  start: (input) => new LoopExecution(input.decode<{ steps: number }>().steps),
  restore: (state) => new LoopExecution(state.decode<{ remaining: number }>('bench.loop').remaining),
};

const loopDescriptor = Descriptor.create({
  name: 'bench.loop',
  description: 'Counts down with effect-free steps.',
  inputSchema: Schema.of({ type: 'object', properties: { steps: { type: 'integer', minimum: 0 } }, required: ['steps'] }),
  outputSchema: Schema.of(true),
});

class LoopExecution implements Execution {
  constructor(private remaining: number) {}
  step(): Transition {
    if (this.remaining === 0) return Transition.complete(0, Payload.encode({ done: true }));
    this.remaining -= 1;
    return Transition.continue(0);
  }
  snapshot(): ExecutionState {
    return ExecutionState.encode('bench.loop', { remaining: this.remaining });
  }
}

const digests = { implementationDigest: Digest.of('bench-implementation'), configurationDigest: Digest.of('bench-configuration') };
const loop = Deployment.create({ definition: loopDefinition, ...digests });
const echo = Deployment.create({ definition: echoDefinition, dispatcher: echoDispatcher, ...digests });

async function runTrees(deployment: Deployment, input: Payload, trees: number, rounds: number): Promise<{ steps: bigint; ms: number }> {
  const engine = new Engine({ committer: new MemoryTreeCommitter() });
  let steps = 0n;
  const started = performance.now();
  for (let round = 0; round < rounds; round += 1) {
    const results = await Promise.all(Array.from({ length: trees }, () => engine.run(deployment, input)));
    for (const result of results) steps += result.usage.committedSteps;
  }
  const ms = performance.now() - started;
  await engine.close();
  return { steps, ms };
}

function line(label: string, { steps, ms }: { steps: bigint; ms: number }): string {
  const perSecond = (Number(steps) / ms) * 1000;
  return `${label.padEnd(34)} ${perSecond.toFixed(0).padStart(8)} steps/s  (${steps} steps in ${ms.toFixed(0)} ms)`;
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly hitCount?: number;
}

/** Self-time share of canonical JSON (canonical-json.ts, wire.ts) and hashing (digest.ts + crypto). */
async function profileShare(run: () => Promise<unknown>): Promise<{ canonical: number; digest: number; total: number }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  await run();
  const { profile } = (await session.post('Profiler.stop')) as { profile: { nodes: ProfileNode[] } };
  session.disconnect();
  let total = 0;
  let canonical = 0;
  let digest = 0;
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    const { url, functionName } = node.callFrame;
    if (functionName === '(idle)' || functionName === '(program)' || functionName === '(garbage collector)') continue;
    total += hits;
    if (url.endsWith('canonical-json.ts') || url.endsWith('wire.ts')) canonical += hits;
    else if (url.endsWith('digest.ts') || url.includes('node:internal/crypto') || functionName === 'digest' || functionName === 'update') digest += hits;
  }
  return { canonical, digest, total };
}

export async function benchEngine(): Promise<void> {
  const loopInput = Payload.encode({ steps: loopSteps });
  const echoInput = Payload.encode({ value: 'hello' });
  await runTrees(loop, loopInput, 4, 2); // warm-up
  console.log(`engine on the memory committer (pure: ${loopSteps + 1} steps per tree; echo: 2 steps + 1 effect per tree)`);
  console.log(line('pure, 1 tree', await runTrees(loop, loopInput, 1, 10)));
  console.log(line('pure, 100 concurrent trees', await runTrees(loop, loopInput, 100, 1)));
  console.log(line('echo, 1 tree', await runTrees(echo, echoInput, 1, 500)));
  console.log(line('echo, 100 concurrent trees', await runTrees(echo, echoInput, 100, 10)));
  const share = await profileShare(() => runTrees(loop, loopInput, 10, 2));
  const percent = (part: number) => ((100 * part) / Math.max(1, share.total)).toFixed(1);
  console.log(`profile of the pure run: canonical JSON ${percent(share.canonical)}% and digests ${percent(share.digest)}% of sampled self time`);
}
