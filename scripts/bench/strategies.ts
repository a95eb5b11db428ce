import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Budget } from '../../src/kernel/budget.js';
import { Deployment } from '../../src/kernel/deployment.js';
import { Digest } from '../../src/kernel/digest.js';
import { Engine } from '../../src/kernel/engine.js';
import { Payload } from '../../src/kernel/payload.js';
import { Quota } from '../../src/kernel/quota.js';
import type { TreeCommitter } from '../../src/kernel/tree-committer.js';
import { echoDispatcher } from '../../src/server/demo-dispatchers.js';
import { MemoryTreeCommitter } from '../../src/store/memory-committer.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { echoDefinition } from '../../strategies/demo/echo.js';
import { workflow } from '../../strategies/workflow/index.js';
import { startRedisServer } from '../../test/helpers/redis-server.js';
import { CountingCommitter } from './counting-committer.js';

/**
 * Built-in strategy cost (issue 14): one workflow `map` over 100 items in windows of 10, each item a
 * demo.echo child (a real dispatcher Effect), run end to end through the Engine — start, ten windows
 * of ten starts in one batch each, ten `subtree_drained` waits, the completion — on the memory
 * committer (embedded mode) and on the Redis committer (a private redis-server, appendonly no).
 * Reported per run: wall time, time per item, and commits per item (every activation, Effect
 * boundary and checkpoint the committer acknowledged, children's included, divided by 100).
 * `BENCH_STRATEGIES_RUNS` (default 5) runs per committer after one warm-up; the median is shown.
 */

const items = 100;
const windowSize = 10;
const runs = Number(process.env.BENCH_STRATEGIES_RUNS ?? 5);

const digests = (name: string) => ({ implementationDigest: Digest.of(`bench:${name}`), configurationDigest: Digest.of(`bench:${name}`) });
const echo = Deployment.create({ definition: echoDefinition, dispatcher: echoDispatcher(), ...digests('demo.echo') });
const mapWorkflow = Deployment.create({
  definition: workflow.define({
    name: 'bench.workflow.map',
    description: 'A 100-item map over demo.echo children in windows of 10.',
    inputSchema: { type: 'array' },
    outputSchema: { type: 'array' },
    stages: [
      workflow.map({
        id: 'echo',
        deployment: echo,
        budget: Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(16) }),
        input: (item) => ({ value: item }),
        maxItems: items,
        windowSize,
      }),
    ],
  }),
  ...digests('bench.workflow.map'),
});

interface Run {
  readonly ms: number;
  readonly commits: number;
}

async function runOnce(committer: TreeCommitter): Promise<Run> {
  const counting = new CountingCommitter(committer);
  const engine = new Engine({ committer: counting });
  const input = Payload.encode(Array.from({ length: items }, (_, index) => `item-${index}`));
  const started = performance.now();
  const result = await engine.run(mapWorkflow, input);
  const ms = performance.now() - started;
  await engine.close();
  if (result.status !== 'completed' || (result.output?.decode<unknown[]>().length ?? 0) !== items) {
    throw new Error(`the bench workflow did not complete: ${result.termination.json()}`);
  }
  return { ms, commits: counting.commits };
}

async function measure(label: string, make: (run: number) => TreeCommitter): Promise<void> {
  await runOnce(make(-1)); // warm-up
  const samples: Run[] = [];
  for (let run = 0; run < runs; run += 1) samples.push(await runOnce(make(run)));
  const sorted = [...samples].sort((a, b) => a.ms - b.ms);
  const median = sorted[Math.floor(sorted.length / 2)] as Run;
  const commits = new Set(samples.map((sample) => sample.commits));
  console.log(
    `${label.padEnd(10)} ${median.ms.toFixed(0).padStart(6)} ms per run  ${(median.ms / items).toFixed(2).padStart(6)} ms/item  ` +
      `${(median.commits / items).toFixed(2)} commits/item (${[...commits].join('/')} commits per run; runs ${sorted.map((sample) => sample.ms.toFixed(0)).join(', ')} ms)`,
  );
}

export async function benchStrategies(): Promise<void> {
  console.log(`## workflow map: ${items} demo.echo items in windows of ${windowSize}, end to end through the Engine (median of ${runs})`);
  await measure('embedded', () => new MemoryTreeCommitter());
  const server = await startRedisServer({ appendOnly: false });
  const redis = new Redis(server.port, '127.0.0.1');
  const committers: RedisTreeCommitter[] = [];
  try {
    await measure('redis', (run) => {
      const committer = new RedisTreeCommitter({ redis, keyPrefix: `benchstrategies${process.pid}r${run}`, timeoutMs: 30_000 });
      committers.push(committer);
      return committer;
    });
  } finally {
    for (const committer of committers) await committer.close();
    redis.disconnect();
    await server.stop();
  }
}
