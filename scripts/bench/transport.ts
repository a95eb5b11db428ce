import { performance } from 'node:perf_hooks';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { EngineHost } from '../../src/server/engine-host.js';
import { drainStream, result, testConfig } from '../../test/server/harness.js';
import { startRedisServer, type RedisServer } from '../../test/helpers/redis-server.js';
import { cpuMsOf } from './proc-cpu.js';
import { spawnReady } from './scope-serve.js';

/**
 * Transport benchmark: what carrying one Effect through BullMQ to a `scope worker` costs, beside a
 * raw BullMQ round trip (add → worker in another process → result through QueueEvents, as
 * ../shared/bench/peers/bullmq_bench.cjs does), in one run on one private redis-server.
 *
 * The effect hop is measured as the difference between demo.echo run end to end (start → result)
 * with the BullMQ transport and the same run with in-process dispatch on the same Redis: both commit
 * the same boundaries (start, pending, settled, adoption), so the difference is the transport alone —
 * permit write, enqueue, the worker's claim, execution and settlement, the owner's wake-up and
 * inspection. Redis commands per hop are counted the same way (INFO commandstats deltas).
 *
 * The hop is timed twice: from the attempt's start to its settlement back at the owner (the effect's
 * duration_ns), and on to the acknowledgement of the settled boundary's commit (from the events the
 * Engine published), which the in-process side pays too.
 *
 * The hop is a no-op's: demo.echo of the empty string emits no delta and settles at once (the
 * `bullmq no-op` side); demo.echo of `v<n>` (a delta per character) is reported beside it.
 *
 * Sequential (one at a time, alternating the sides in rounds so load drift hits all alike) and 50 in
 * flight; AOF off, then `appendfsync always` (BENCH_TRANSPORT_FSYNC=0 skips it). Each side first runs
 * BENCH_TRANSPORT_WARMUP (20) sequential runs unmeasured; BENCH_TRANSPORT_ROUNDS rounds of
 * BENCH_TRANSPORT_N (100) follow.
 */

const sequentialPerRound = Number(process.env.BENCH_TRANSPORT_N ?? 100);
const rounds = Number(process.env.BENCH_TRANSPORT_ROUNDS ?? 3);
/** Sequential runs per side before the measured rounds; each worker process compiles its hot code meanwhile. */
const warmUpRuns = Number(process.env.BENCH_TRANSPORT_WARMUP ?? 20);
const inFlight = 50;
const concurrentTotal = Number(process.env.BENCH_TRANSPORT_CONC_N ?? 1_000);

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

interface Side {
  readonly name: string;
  once(index: number): Promise<void>;
  /** Scope sides: each run's dispatch hop (the effect's duration_ns: dispatch begun → settlement back), read from the log after the clock stops. */
  hops?(): Promise<number[]>;
  /** Scope sides: each run's pending committed → settled boundary committed (ms), from the events the Engine published. */
  committedHops?(): number[];
  /** The worker process, when the side has one (its CPU time per run is reported). */
  readonly workerPid?: number;
  close(): Promise<void>;
}

async function commandCount(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/calls=(\d+)/g)) total += Number(match[1]);
  return total;
}

/** `valueOf` picks demo.echo's input: its dispatcher emits one delta per character, so `''` is a no-op. */
async function scopeSide(server: RedisServer, name: string, transport: 'inprocess' | 'bullmq', valueOf: (index: number) => string = (index) => `v${index}`): Promise<Side> {
  const prefix = `bench${process.pid}${name.replace(/[^a-z]/g, '')}`;
  const env = { SCOPE_REDIS_URL: server.url, SCOPE_KEY_PREFIX: prefix, SCOPE_LOG_LEVEL: 'warn' };
  const worker =
    transport === 'bullmq'
      ? await spawnReady(['bin/scope.js', 'worker'], { ...env, SCOPE_LOG_LEVEL: 'info', SCOPE_WORKER_CONCURRENCY: String(inFlight) }, 'scope worker ready')
      : undefined;
  // Per root, when the Engine published each event (a committed one once its commit was acknowledged).
  const published = new Map<string, { name: string; committed: boolean; at: number }[]>();
  const host = new EngineHost({
    config: testConfig({ ...env, SCOPE_TRANSPORT: transport }),
    defaultMetrics: false,
    observeEvent: (event) => {
      const root = event.relation.rootId.toString();
      let events = published.get(root);
      if (events === undefined) published.set(root, (events = []));
      events.push({ name: event.name, committed: event.committed, at: performance.now() });
    },
  });
  let roots: string[] = [];
  return {
    name,
    ...(worker?.pid === undefined ? {} : { workerPid: worker.pid }),
    async once(index) {
      const started = await host.startProcess({ deployment: 'demo.echo', input: { value: valueOf(index) } });
      const processId = started.process.processId;
      roots.push(processId);
      const outcome = await result(host, processId);
      if (outcome.status !== 'completed') throw new Error(`${name}: ${processId} ended ${outcome.status}`);
    },
    async hops() {
      const hops: number[] = [];
      for (const root of roots) {
        for (const entry of await drainStream(host, root)) {
          if (entry.type !== 'agent.effect.finished') continue;
          const data = JSON.parse(entry.data) as { payload?: { duration_ns?: string | number } };
          const ns = data.payload?.duration_ns ?? /"duration_ns":"?(\d+)/.exec(entry.data)?.[1];
          if (ns !== undefined) hops.push(Number(ns) / 1e6);
        }
      }
      roots = [];
      return hops;
    },
    committedHops() {
      // From the attempt's start (published once the pending boundary's commit was acknowledged) to
      // the acknowledgement of the first commit after its settlement came back: the settled boundary.
      const spans: number[] = [];
      for (const events of published.values()) {
        const started = events.find((event) => event.name === 'agent.effect.started');
        const back = events.findIndex((event) => event.name === 'agent.effect.finished');
        const settled = events.slice(back + 1).find((event) => event.committed);
        if (started !== undefined && back >= 0 && settled !== undefined) spans.push(settled.at - started.at);
      }
      published.clear();
      return spans;
    },
    async close() {
      await host.close(2_000);
      worker?.kill('SIGTERM');
    },
  };
}

async function rawSide(server: RedisServer): Promise<Side> {
  const queueName = `raw${process.pid}`;
  const connection = { host: '127.0.0.1', port: server.port };
  const worker = await spawnReady(['--import', 'tsx', 'scripts/bench/raw-bullmq-worker.ts', queueName, String(server.port), String(inFlight)], {}, 'raw worker ready');
  const queue = new Queue(queueName, { connection });
  const events = new QueueEvents(queueName, { connection });
  queue.setMaxListeners(inFlight * 4 + 50);
  events.setMaxListeners(inFlight * 4 + 50);
  await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
  return {
    name: 'raw bullmq',
    ...(worker.pid === undefined ? {} : { workerPid: worker.pid }),
    async once(index) {
      const job = await queue.add('noop', { i: index });
      const value = (await job.waitUntilFinished(events, 30_000)) as { ok?: boolean; i?: number };
      if (value?.ok !== true || value.i !== index) throw new Error(`raw: bad result ${JSON.stringify(value)}`);
    },
    async close() {
      await Promise.all([queue.close(), events.close()]);
      worker.kill('SIGTERM');
    },
  };
}

interface Figures {
  samples: number[];
  hops: number[];
  committedHops: number[];
  perSecond: number;
  commands: number;
  /** CPU time the side's worker process used over the sequential runs (ms). */
  workerCpuMs: number;
}

async function sequential(side: Side, redis: Redis, count: number, offset: number, figures: Figures): Promise<void> {
  const before = await commandCount(redis);
  const workerBefore = cpuMsOf(side.workerPid);
  for (let index = 0; index < count; index += 1) {
    const start = performance.now();
    await side.once(offset + index);
    figures.samples.push(performance.now() - start);
  }
  figures.workerCpuMs += cpuMsOf(side.workerPid) - workerBefore;
  // INFO itself is one command; per-run noise from it is negligible over `count` runs.
  figures.commands += (await commandCount(redis)) - before;
  figures.hops.push(...((await side.hops?.()) ?? []));
  figures.committedHops.push(...(side.committedHops?.() ?? []));
}

async function concurrent(side: Side, total: number, offset: number): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) {
        const index = next;
        next += 1;
        await side.once(offset + index);
      }
    }),
  );
  return (total * 1_000) / (performance.now() - start);
}

const ms = (value: number): string => value.toFixed(2).padStart(8);

async function benchServer(title: string, server: RedisServer): Promise<void> {
  const redis = new Redis(server.port, '127.0.0.1');
  const sides = [
    await scopeSide(server, 'scope in-process', 'inprocess'),
    await scopeSide(server, 'scope bullmq', 'bullmq'),
    await rawSide(server),
    await scopeSide(server, 'bullmq no-op', 'bullmq', () => ''),
  ];
  const figures = new Map<Side, Figures>(sides.map((side) => [side, { samples: [], hops: [], committedHops: [], perSecond: 0, commands: 0, workerCpuMs: 0 }]));
  try {
    for (const side of sides) await sequential(side, redis, warmUpRuns, 1_000_000, { samples: [], hops: [], committedHops: [], perSecond: 0, commands: 0, workerCpuMs: 0 }); // warm-up
    for (let round = 0; round < rounds; round += 1) {
      for (const side of sides) await sequential(side, redis, sequentialPerRound, round * sequentialPerRound, figures.get(side)!);
    }
    for (const side of sides) {
      figures.get(side)!.perSecond = await concurrent(side, concurrentTotal, 2_000_000);
      await side.hops?.(); // forget the concurrent runs' hops
      side.committedHops?.();
    }
  } finally {
    for (const side of sides) await side.close();
    redis.disconnect();
  }
  const runs = sequentialPerRound * rounds;
  console.log(`## transport: ${title} (sequential ${runs} per side after ${warmUpRuns} to warm up; ${inFlight} in flight, ${concurrentTotal} per side)`);
  console.log(
    ['side'.padEnd(18), 'p50 ms'.padStart(8), 'p99 ms'.padStart(8), 'hop p50'.padStart(8), 'hop p99'.padStart(8), 'commit p50'.padStart(11), 'commit p99'.padStart(11), 'cmds/run'.padStart(9), 'wkr cpu'.padStart(8), `/s@${inFlight}`.padStart(9)].join(' '),
  );
  type Row = { p50: number; p99: number; commands: number; workerCpuMs: number; perSecond: number; hopP50: number; hopP99: number; committedP50: number; committedP99: number };
  const stats = new Map<Side, Row>();
  for (const side of sides) {
    const figure = figures.get(side)!;
    const sorted = [...figure.samples].sort((a, b) => a - b);
    const hops = [...figure.hops].sort((a, b) => a - b);
    const committed = [...figure.committedHops].sort((a, b) => a - b);
    const row = {
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      commands: figure.commands / runs,
      workerCpuMs: figure.workerCpuMs / runs,
      perSecond: figure.perSecond,
      hopP50: percentile(hops, 50),
      hopP99: percentile(hops, 99),
      committedP50: percentile(committed, 50),
      committedP99: percentile(committed, 99),
    };
    stats.set(side, row);
    console.log(
      [side.name.padEnd(18), ms(row.p50), ms(row.p99), ms(row.hopP50), ms(row.hopP99), ms(row.committedP50).padStart(11), ms(row.committedP99).padStart(11), row.commands.toFixed(1).padStart(9), (Number.isNaN(row.workerCpuMs) ? '-' : row.workerCpuMs.toFixed(2)).padStart(8), row.perSecond.toFixed(0).padStart(9)].join(' '),
    );
  }
  const [inprocess, bullmq, raw, noop] = sides.map((side) => stats.get(side)!) as [Row, Row, Row, Row];
  for (const [label, hop] of [
    ['no-op effect (demo.echo of "")', noop],
    ['demo.echo of "v<n>" (a delta per character)', bullmq],
  ] as const) {
    console.log(
      `dispatch hop, ${label} (pending committed → settlement back at the owner): p50 ${hop.hopP50.toFixed(2)} ms, p99 ${hop.hopP99.toFixed(2)} ms ` +
        `vs raw round trip p50 ${raw.p50.toFixed(2)} ms, p99 ${raw.p99.toFixed(2)} ms → ${(hop.hopP50 / raw.p50).toFixed(2)}× p50, ${(hop.hopP99 / raw.p99).toFixed(2)}× p99`,
    );
    console.log(
      `  to the settled boundary's commit (pending committed → settlement committed): p50 ${hop.committedP50.toFixed(2)} ms → ${(hop.committedP50 / raw.p50).toFixed(2)}× raw p50; ` +
        `in-process dispatch, the same span: p50 ${inprocess.committedP50.toFixed(2)} ms`,
    );
  }
  console.log(
    `end to end, bullmq − in-process: p50 ${(bullmq.p50 - inprocess.p50).toFixed(2)} ms; Redis commands per effect through the transport ${(bullmq.commands - inprocess.commands).toFixed(1)} ` +
      `(raw ${raw.commands.toFixed(1)} per round trip, QueueEvents reads included); ${inFlight} in flight: bullmq/in-process ${(bullmq.perSecond / inprocess.perSecond).toFixed(2)}×, raw ${raw.perSecond.toFixed(0)}/s`,
  );
  console.log(
    `worker CPU per effect (sequential; /proc, 10 ms ticks): no-op ${noop.workerCpuMs.toFixed(2)} ms, demo.echo of "v<n>" ${bullmq.workerCpuMs.toFixed(2)} ms vs raw ${raw.workerCpuMs.toFixed(2)} ms per job → ${(noop.workerCpuMs / raw.workerCpuMs).toFixed(2)}× (no-op)`,
  );
}

export async function benchTransport(): Promise<void> {
  const plain = await startRedisServer({ appendOnly: false });
  try {
    await benchServer('AOF off', plain);
  } finally {
    await plain.stop();
  }
  if (process.env.BENCH_TRANSPORT_FSYNC === '0') return;
  const durable = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
  try {
    await benchServer('appendfsync always', durable);
  } finally {
    await durable.stop();
  }
}
