import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import type { EffectBoundary, TreeActivation, TreeCheckpoint } from '../../src/kernel/commit.js';
import type { Definition, Execution } from '../../src/kernel/definition.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { Digest } from '../../src/kernel/digest.js';
import { ChildSpec, Effect } from '../../src/kernel/effect.js';
import { Engine } from '../../src/kernel/engine.js';
import { ExecutionState } from '../../src/kernel/execution-state.js';
import { ChildKey, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import type { Signal } from '../../src/kernel/signal.js';
import { SignalRequest } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import type { CommitContext, TreeCommitter } from '../../src/kernel/tree-committer.js';
import { TreeLimits } from '../../src/kernel/tree-limits.js';
import type { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { startRedisServer } from '../../test/helpers/redis-server.js';

/**
 * Tree commit cost (issue 10): the cost of one root Step beside 0, 99 and 999 parked children
 * (each waiting on an external answer), through the real Engine. The root starts its children in
 * one batch, parks on a gate until every child is waiting, then runs `continue` Steps, each one
 * whole-tree progress commit; the per-Step cost is the time between consecutive root Steps.
 *
 * "excl. hash" subtracts the one whole-tree sha256 a commit must pay (the head's digest, hashed
 * as a commit hashes it); the goal is ≤ 5× the 0-children cost with 999 children. For the Redis
 * committer (its own redis-server), bytes shipped per commit is the server's
 * `total_net_input_bytes` growth over the measured Steps, divided by the commits acknowledged.
 */

const childCounts = [0, 99, 999] as const;
const measuredSteps = Number(process.env.BENCH_TREE_STEPS ?? 300);
const redisSteps = Number(process.env.BENCH_TREE_REDIS_STEPS ?? 100);
const goalRatio = 5;

interface RootState {
  readonly phase: 'start' | 'started' | 'opening' | 'gated' | 'loop';
  readonly children: number;
  readonly remaining: number;
  readonly waitId?: string;
}

/** Step times of the running root, for the measurement window. */
let stepTimes: number[] = [];

const anyValue = Schema.of(true);
const digests = { implementationDigest: Digest.of('bench-tree-implementation'), configurationDigest: Digest.of('bench-tree-configuration') };

/** A leaf that opens the external wait `park` and waits on it for good. */
const parkedDefinition: Definition = {
  descriptor: () => parkedDescriptor,
  childDeployments: () => [],
  start: () => new ParkedExecution(undefined),
  restore: (state) => new ParkedExecution(state.decode<{ waitId?: string }>('bench.tree.parked').waitId),
};
const parkedDescriptor = Descriptor.create({ name: 'bench.tree.parked', description: 'Parks on an external wait.', inputSchema: anyValue, outputSchema: anyValue });

class ParkedExecution implements Execution {
  constructor(private waitId: string | undefined) {}
  step(_signal: AbortSignal, signals: readonly Signal[]): Transition {
    if (this.waitId === undefined) {
      const opening = signals[0]?.waitId;
      if (opening === undefined) return Transition.continue(0, [Effect.wait(WaitKey.parse('park'))]);
      this.waitId = opening.toString();
      return Transition.wait(1, opening);
    }
    return Transition.wait(0, WaitId.parse(this.waitId));
  }
  snapshot(): ExecutionState {
    return ExecutionState.encode('bench.tree.parked', this.waitId === undefined ? {} : { waitId: this.waitId });
  }
}

const parked = Deployment.create({ definition: parkedDefinition, ...digests });

function childSpec(index: number): ChildSpec {
  return ChildSpec.create({
    key: ChildKey.parse(`child-${index}`),
    deploymentRef: parked.ref,
    input: Payload.emptyObject,
    budget: Budget.unlimited(),
    capabilities: CapabilitySet.empty,
  });
}

/** Starts `children` children, parks on the gate `go`, then runs `remaining` effect-free Steps. */
const rootDefinition: Definition = {
  descriptor: () => rootDescriptor,
  childDeployments: () => [parked],
  start: (input) => {
    const { children, steps } = input.decode<{ children: number; steps: number }>();
    return new RootExecution({ phase: 'start', children, remaining: steps });
  },
  restore: (state) => new RootExecution(state.decode<RootState>('bench.tree.root')),
};
const rootDescriptor = Descriptor.create({ name: 'bench.tree.root', description: 'A root stepping beside parked children.', inputSchema: anyValue, outputSchema: anyValue });

class RootExecution implements Execution {
  constructor(private state: RootState) {}
  step(_signal: AbortSignal, signals: readonly Signal[]): Transition {
    const state = this.state;
    switch (state.phase) {
      case 'start': {
        const starts = Array.from({ length: state.children }, (_, index) => Effect.startChild(childSpec(index)));
        this.state = { ...state, phase: 'started' };
        return Transition.continue(0, starts);
      }
      case 'started':
        this.state = { ...state, phase: 'opening' };
        return Transition.continue(state.children, [Effect.wait(WaitKey.parse('go'))]);
      case 'opening': {
        const waitId = signals[0]?.waitId as WaitId;
        this.state = { ...state, phase: 'gated', waitId: waitId.toString() };
        return Transition.wait(1, waitId);
      }
      case 'gated': {
        const waitId = WaitId.parse(state.waitId);
        const position = signals.findIndex((signal) => waitId.equals(signal.waitId) && !signal.engineOwned);
        if (position < 0) return Transition.wait(0, waitId);
        this.state = { ...state, phase: 'loop' };
        return Transition.continue(position + 1);
      }
      case 'loop': {
        stepTimes.push(performance.now());
        if (state.remaining === 0) return Transition.complete(0, Payload.encode({ done: true }));
        this.state = { ...state, remaining: state.remaining - 1 };
        return Transition.continue(0);
      }
    }
  }
  snapshot(): ExecutionState {
    return ExecutionState.encode('bench.tree.root', this.state);
  }
}

const root = Deployment.create({ definition: rootDefinition, ...digests });

/** Hands every commit to `inner`, telling `onHead` the acknowledged tree while it listens. */
class WatchedCommitter implements TreeCommitter {
  onHead: ((tree: TreeSnapshot) => void) | undefined;
  /** Acknowledged commits so far. */
  commits = 0;
  constructor(private readonly inner: TreeCommitter) {}
  async activateTree(activation: TreeActivation, context?: CommitContext): Promise<void> {
    await this.inner.activateTree(activation, context);
    this.commits += 1;
    this.onHead?.(activation.snapshot);
  }
  async commitEffect(boundary: EffectBoundary, context?: CommitContext): Promise<void> {
    await this.inner.commitEffect(boundary, context);
    this.commits += 1;
    this.onHead?.(boundary.snapshot);
  }
  async commitCheckpoint(checkpoint: TreeCheckpoint, context?: CommitContext): Promise<void> {
    await this.inner.commitCheckpoint(checkpoint, context);
    this.commits += 1;
    this.onHead?.(checkpoint.snapshot);
  }
}

interface Run {
  readonly children: number;
  /** Median time between consecutive root Steps, ms. */
  readonly stepMs: number;
  /** The head's whole-tree digest, ms. */
  readonly hashMs: number;
  /** This process's CPU time per root Step over the measured Steps, ms (load on other cores moves it little). */
  readonly cpuStepMs: number;
  /** CPU time of one whole-tree digest, ms. */
  readonly cpuHashMs: number;
  readonly treeBytes: number;
}

/** Resolves with the acknowledged head once the root waits on its gate and every child is parked. */
function parkedTree(committer: WatchedCommitter, children: number): Promise<TreeSnapshot> {
  return new Promise((resolve) => {
    committer.onHead = (tree) => {
      if (tree.size !== children + 1) return;
      if (!tree.processSnapshots().every((process) => process.status === 'waiting')) return;
      committer.onHead = undefined;
      resolve(tree);
    };
  });
}

async function runTree(inner: TreeCommitter, children: number, steps: number, measure?: () => Promise<number>): Promise<Run & { shipped?: number }> {
  const committer = new WatchedCommitter(inner);
  const limits = TreeLimits.of({ maxActiveChildren: 1_000 });
  const engine = new Engine({ committer, treeLimits: limits });
  try {
    const parkedHead = parkedTree(committer, children);
    const rootProcess = await engine.start(root, Payload.encode({ children, steps }));
    const head = await parkedHead;
    const gate = head.root.waitId as WaitId;
    stepTimes = [];
    const before = await measure?.();
    const commitsBefore = committer.commits;
    const cpuBefore = process.cpuUsage();
    await rootProcess.deliverSignals(SignalRequest.create({ id: 'bench-go', waitId: gate, payload: Payload.emptyObject }));
    await rootProcess.await();
    const cpu = process.cpuUsage(cpuBefore);
    const stopped = measure?.();
    const commits = committer.commits - commitsBefore;
    await rootProcess.join();
    const after = await stopped;
    const times = stepTimes;
    // Medians: a spike of load on a shared machine moves neither figure.
    const stepMs = median(times.slice(1).map((time, index) => time - (times[index] as number)));
    const cpuStepMs = (cpu.user + cpu.system) / 1000 / Math.max(1, times.length);
    const { hashMs, cpuHashMs } = timeTreeHash(head);
    const shipped = before === undefined || after === undefined ? undefined : (after - before) / commits;
    return { children, stepMs, hashMs, cpuStepMs, cpuHashMs, treeBytes: head.encodedSize, shipped };
  } finally {
    await engine.close();
  }
}

/**
 * The mean cost of the one whole-tree hash a commit pays: `digest` of fresh copies of the head
 * (withIncarnation keeps the cached process records but not the digest), so it is hashed exactly
 * as a commit hashes its prospective tree.
 */
function timeTreeHash(head: TreeSnapshot): { hashMs: number; cpuHashMs: number } {
  const rounds = Math.max(15, Math.min(301, Math.ceil(20_000_000 / Math.max(1, head.encodedSize))));
  const copies = Array.from({ length: rounds }, () => head.withIncarnation(head.incarnationId));
  const cpuBefore = process.cpuUsage();
  const samples = copies.map((copy) => {
    const start = performance.now();
    void copy.digest;
    return performance.now() - start;
  });
  const cpu = process.cpuUsage(cpuBefore);
  return { hashMs: median(samples), cpuHashMs: (cpu.user + cpu.system) / 1000 / rounds };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const ms = (value: number): string => value.toFixed(3).padStart(9);

function formatBytes(bytes: number): string {
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(2)} MiB`;
  if (bytes >= 1 << 10) return `${(bytes / (1 << 10)).toFixed(1)} KiB`;
  return `${bytes.toFixed(0)} B`;
}

function table(runs: readonly (Run & { shipped?: number })[], withShipped: boolean): void {
  const base = runs[0] as Run;
  const baseExcl = Math.max(1e-6, base.stepMs - base.hashMs);
  const baseCpuExcl = Math.max(1e-6, base.cpuStepMs - base.cpuHashMs);
  console.log(
    [
      'children'.padStart(8),
      'tree bytes'.padStart(11),
      'step ms'.padStart(9),
      'hash ms'.padStart(9),
      'excl. ms'.padStart(9),
      'excl. ×'.padStart(8),
      'total ×'.padStart(8),
      'cpu ms'.padStart(9),
      'cpu excl'.padStart(9),
      'cpu excl ×'.padStart(11),
      ...(withShipped ? ['shipped/commit'.padStart(15)] : []),
    ].join(' '),
  );
  for (const run of runs) {
    const excl = run.stepMs - run.hashMs;
    console.log(
      [
        String(run.children).padStart(8),
        formatBytes(run.treeBytes).padStart(11),
        ms(run.stepMs),
        ms(run.hashMs),
        ms(excl),
        (excl / baseExcl).toFixed(1).padStart(8),
        (run.stepMs / base.stepMs).toFixed(1).padStart(8),
        ms(run.cpuStepMs),
        ms(run.cpuStepMs - run.cpuHashMs),
        ((run.cpuStepMs - run.cpuHashMs) / baseCpuExcl).toFixed(1).padStart(11),
        ...(withShipped ? [formatBytes(run.shipped ?? Number.NaN).padStart(15)] : []),
      ].join(' '),
    );
  }
}

export async function benchTree(): Promise<void> {
  await runTree(new MemoryTreeCommitter(), 99, 50); // warm-up (JIT)
  console.log(`## tree commit: one root Step beside parked children, memory committer (${measuredSteps} Steps each)`);
  const memory: Run[] = [];
  for (const children of childCounts) memory.push(await runTree(new MemoryTreeCommitter(), children, measuredSteps));
  table(memory, false);
  const last = memory[memory.length - 1] as Run;
  const first = memory[0] as Run;
  const ratio = (last.stepMs - last.hashMs) / (first.stepMs - first.hashMs);
  const cpuRatio = (last.cpuStepMs - last.cpuHashMs) / (first.cpuStepMs - first.cpuHashMs);
  console.log(
    `(step ms: median time between consecutive root Steps, commit included; hash ms: one whole-tree digest of the head, as a commit computes it (both medians); ` +
      `excl. = step − hash; × against 0 children; cpu ms: this process's CPU time per Step over the run, cpu excl = cpu ms − the digest's CPU time)`,
  );
  const verdict = (value: number): string => `${value.toFixed(1)}× ${value <= goalRatio ? 'within' : 'OVER'}`;
  console.log(`## goal: excl. hash with ${last.children} children ≤ ${goalRatio}× the cost with 0 — wall ${verdict(ratio)}, cpu ${verdict(cpuRatio)}`);

  const server = await startRedisServer({ appendOnly: false });
  const redis = new Redis(server.port, '127.0.0.1');
  try {
    const netInput = async (): Promise<number> => {
      const info = await redis.info('stats');
      const match = /total_net_input_bytes:(\d+)/.exec(info);
      return Number(match?.[1]);
    };
    console.log(`## tree commit: the same on the Redis committer (appendonly no, ${redisSteps} Steps each)`);
    const runs: Array<Run & { shipped?: number }> = [];
    for (const children of childCounts) {
      const committer = new RedisTreeCommitter({ redis, keyPrefix: `benchtree${process.pid}c${children}`, timeoutMs: 30_000 });
      runs.push(await runTree(committer, children, redisSteps, netInput));
      await committer.close();
    }
    table(runs, true);
    console.log('(shipped/commit: redis-server total_net_input_bytes from the gate answer to the root\'s end / the commits in between, event-log appends included)');
  } finally {
    redis.disconnect();
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchTree();
}
