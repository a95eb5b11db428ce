import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import { Engine } from '../../src/kernel/engine.js';
import type { Event } from '../../src/kernel/event.js';
import { Payload } from '../../src/kernel/payload.js';
import type { Process } from '../../src/kernel/process.js';
import { SignalRequest } from '../../src/kernel/signal.js';
import type { TreeCommitter } from '../../src/kernel/tree-committer.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { counterDefinition } from '../../src/testing/example-definitions.js';
import { startRedisServer } from '../../test/helpers/redis-server.js';

/**
 * What accepting one Signal costs as a Process's history grows (issue 13: "accepting a signal with
 * 4,000 retained inputs ≤ 2× with 0 retained"). An `example.counter` root is fed `retained` adds in
 * batches (each batch consumed by a resume, so they stay in the mailbox as consumed records, the
 * retained history), then paused; then `BENCH_SIGNAL_ACCEPTS` (default 1,000) single Signals are
 * delivered one at a time, each awaited until its admission commit is acknowledged. Reported per
 * accept: CPU (user + system of this process, which runs the Engine and the committer's client) and
 * wall. Memory committer first (the goal's figure), Redis (a private redis-server, appendonly no)
 * reported beside it. `BENCH_SIGNAL_RETAINED` (default `0,1000,4000`) sets the history sizes.
 */

// 200 accepts (the first default) measured 30–40 ms of CPU: the ratio then moved between 1.6× and 2.05×
// from run to run (JIT and collector timing); over 1,000 it holds still.
const accepts = Number(process.env.BENCH_SIGNAL_ACCEPTS ?? 1_000);
const histories = (process.env.BENCH_SIGNAL_RETAINED ?? '0,1000,4000').split(',').map(Number);
const batch = 200;

const counter = Deployment.create({
  definition: counterDefinition,
  implementationDigest: Digest.of('bench:signal:implementation'),
  configurationDigest: Digest.of('bench:signal:configuration'),
});

interface Figures {
  readonly cpuUs: number;
  readonly wallUs: number;
}

/** Counts each Process's paused step commits; `after(id, n)` resolves once more than `n` were seen. */
function pauses(): { seen: (processId: string) => number; after: (processId: string, count: number) => Promise<void>; listener: (event: Event) => void } {
  const counts = new Map<string, number>();
  const waiters = new Set<() => void>();
  return {
    seen: (processId) => counts.get(processId) ?? 0,
    after: (processId, count) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if ((counts.get(processId) ?? 0) <= count) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
    listener: (event) => {
      if (event.name !== 'agent.step.committed' || event.stepCommitted()?.status !== 'paused') return;
      const id = event.processId.toString();
      counts.set(id, (counts.get(id) ?? 0) + 1);
      for (const check of [...waiters]) check();
    },
  };
}

let sequence = 0;
const add = (): SignalRequest => SignalRequest.create({ id: `bench-signal-${process.pid}-${(sequence += 1)}`, payload: Payload.encode({ add: 1 }) });

async function measure(committer: TreeCommitter, retained: number): Promise<Figures> {
  const paused = pauses();
  const engine = new Engine({ committer, eventListeners: [paused.listener] });
  try {
    const root: Process = await engine.start(counter, Payload.encode({}));
    const id = root.id.toString();
    await paused.after(id, 0);
    for (let fed = 0; fed < retained; fed += batch) {
      await root.deliverSignals(...Array.from({ length: Math.min(batch, retained - fed) }, add));
      const seen = paused.seen(id);
      await root.resume();
      await paused.after(id, seen);
    }
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let index = 0; index < accepts; index += 1) await root.deliverSignals(add());
    const wallUs = ((performance.now() - started) * 1000) / accepts;
    const used = process.cpuUsage(cpu);
    await root.kill('bench done');
    return { cpuUs: (used.user + used.system) / accepts, wallUs };
  } finally {
    await engine.close();
  }
}

async function report(label: string, make: () => TreeCommitter): Promise<void> {
  // A whole pass first, then the measured one: the first history measured would otherwise run on
  // code the later ones find optimised.
  for (const retained of histories) await measure(make(), retained);
  const figures = new Map<number, Figures>();
  for (const retained of histories) figures.set(retained, await measure(make(), retained));
  const base = figures.get(histories[0] as number) as Figures;
  for (const [retained, { cpuUs, wallUs }] of figures) {
    console.log(
      `${label.padEnd(9)} ${String(retained).padStart(5)} retained: ${(cpuUs / 1000).toFixed(3)} ms CPU, ${(wallUs / 1000).toFixed(3)} ms wall per accept` +
        `  (×${(cpuUs / base.cpuUs).toFixed(2)} CPU, ×${(wallUs / base.wallUs).toFixed(2)} wall vs ${histories[0]} retained)`,
    );
  }
}

export async function benchSignal(): Promise<void> {
  console.log(`## accepting one signal, ${accepts} accepts after ${histories.join(' / ')} retained inputs (example.counter, paused)`);
  await report('memory', () => new MemoryTreeCommitter());
  const redisServer = await startRedisServer({ appendOnly: false });
  const redis = new Redis(redisServer.port, '127.0.0.1');
  const committers: RedisTreeCommitter[] = [];
  try {
    await report('redis', () => {
      const committer = new RedisTreeCommitter({ redis, keyPrefix: `benchsignal${process.pid}c${committers.length}`, timeoutMs: 30_000 });
      committers.push(committer);
      return committer;
    });
  } finally {
    for (const committer of committers) await committer.close();
    redis.disconnect();
    await redisServer.stop();
  }
}
