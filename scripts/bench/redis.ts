import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { TreeCheckpoint } from '../../src/kernel/commit.js';
import { ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import { TreeLimits } from '../../src/kernel/tree-limits.js';
import type { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { runningRootTree, treeWithChildren } from '../../src/testing/snapshot-fixtures.js';
import { startRedisServer, type RedisServer } from '../../test/helpers/redis-server.js';

/**
 * Redis commit benchmark: RedisTreeCommitter.commitCheckpoint (a `progress` advance: our Lua
 * compare-and-swap with writer fencing, fact deduplication and a decimal sequence) against a raw
 * baseline — one EVALSHA that compares a digest and SETs the same snapshot bytes, nothing else —
 * side by side in the same run on the same private redis-server.
 *
 * Cases: snapshots of ~4 KB, ~64 KB and ~1 MB (a running root with pending inputs) and trees of 1,
 * 100 and 1000 Processes. Latency: one commit outstanding, ours and raw alternating commit by
 * commit (so load on a shared machine hits both alike), p50/p99 over the samples; the checkpoint
 * and its digests are built before the clock starts (Engine work). Throughput: 16 trees committing
 * concurrently on one connection, in short alternating rounds.
 *
 * Runs with `--appendonly no`, then `--appendonly yes --appendfsync always` (every ack on disk),
 * unless BENCH_REDIS_FSYNC=0.
 */

/** Latency: pairs (one of ours, then one raw) until both the budget and the minimum are reached. */
const latencyBudgetMs = 1_000;
const minPairs = 200;
/** Throughput: short alternating rounds, so load drift hits both sides alike. */
const throughputBudgetMs = 100;
const throughputRounds = 4;
const concurrency = 16;
/** Cap on checkpoints built ahead per tree for a throughput run (beyond it they are built inline). */
const maxPrebuilt = 5_000;

/** The raw baseline: compare the stored digest with the expected one, then SET the same bytes. */
const rawCasLua = `
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[3])
redis.call('SET', KEYS[1], ARGV[2])
return 1
`;

type RawCas = (digestKey: string, snapshotKey: string, expected: string, next: string, snapshot: string) => Promise<number>;

interface Case {
  readonly label: string;
  /** Two snapshots of the same shape that a running tree alternates between. */
  readonly pair: (rootId: ProcessId, incarnationId: TreeIncarnationId) => readonly [TreeSnapshot, TreeSnapshot];
}

const processLimits = TreeLimits.of({ maxActiveChildren: 1_000 });

function sizedCase(label: string, targetBytes: number): Case {
  // A pending input costs ~134 bytes; solve for the count from two probes.
  const probe = (pending: number) => runningRootTree({ pendingSignals: pending }).encodedSize;
  const base = probe(0);
  const per = (probe(20) - base) / 20;
  const pending = Math.max(0, Math.round((targetBytes - base) / per));
  return {
    label,
    pair: (rootId, incarnationId) => [
      runningRootTree({ rootId, incarnationId, pendingSignals: pending, committedSteps: 1n }),
      runningRootTree({ rootId, incarnationId, pendingSignals: pending, committedSteps: 2n }),
    ],
  };
}

function processCase(processes: number): Case {
  return {
    label: `${processes} process${processes === 1 ? '' : 'es'}`,
    pair: (rootId, incarnationId) => [
      treeWithChildren({ rootId, incarnationId, processes, fanout: 10, treeLimits: processLimits, committedSteps: 1n }),
      treeWithChildren({ rootId, incarnationId, processes, fanout: 10, treeLimits: processLimits, committedSteps: 2n }),
    ],
  };
}

/** A tree being advanced by our committer: start once, then alternate between the two snapshots. */
class OurTree {
  #sequence = 1n;
  #index = 0;
  /** Checkpoints built ahead (sequence, previous and snapshot follow the alternation). */
  readonly #ahead: TreeCheckpoint[] = [];

  private constructor(
    readonly store: RedisTreeCommitter,
    readonly pair: readonly [TreeSnapshot, TreeSnapshot],
  ) {}

  static async start(store: RedisTreeCommitter, testCase: Case): Promise<OurTree> {
    const start = runningRootTree({ rootId: ProcessId.newRoot(), incarnationId: TreeIncarnationId.random() });
    const pair = testCase.pair(start.rootId, start.incarnationId);
    await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: start }));
    const tree = new OurTree(store, pair);
    // First advance from the start snapshot onto the pair.
    await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'progress', sequence: 2n, previous: start.digest, snapshot: pair[0] }));
    tree.#sequence = 2n;
    return tree;
  }

  #build(offset: number): TreeCheckpoint {
    const index = (this.#index + offset) % 2;
    const previous = this.pair[index] as TreeSnapshot;
    const snapshot = this.pair[1 - index] as TreeSnapshot;
    const checkpoint = TreeCheckpoint.create({ kind: 'progress', sequence: this.#sequence + 1n + BigInt(offset), previous: previous.digest, snapshot });
    // The boundary's own digests are kernel values the Engine computes; keep them off the clock.
    checkpoint.contentDigest();
    return checkpoint;
  }

  /** Builds the next `count` checkpoints now, so a throughput run measures commits only. */
  prebuild(count: number): void {
    for (let offset = this.#ahead.length; offset < count; offset += 1) this.#ahead.push(this.#build(offset));
  }

  /** The next checkpoint (built outside any timing). */
  next(): TreeCheckpoint {
    return this.#ahead.shift() ?? this.#build(0);
  }

  async commit(checkpoint: TreeCheckpoint): Promise<void> {
    await this.store.commitCheckpoint(checkpoint);
    this.#sequence = checkpoint.sequence;
    this.#index = 1 - this.#index;
  }
}

/** The same alternation through the raw compare-digest-and-SET script. */
class RawTree {
  #index = 0;
  readonly #keys: readonly [string, string];

  constructor(
    readonly cas: RawCas,
    readonly pair: readonly [TreeSnapshot, TreeSnapshot],
    name: string,
  ) {
    this.#keys = [`raw:{${name}}:digest`, `raw:{${name}}:snapshot`];
  }

  args(): [string, string, string] {
    const previous = this.pair[this.#index] as TreeSnapshot;
    const snapshot = this.pair[1 - this.#index] as TreeSnapshot;
    return [previous.digest.toString(), snapshot.digest.toString(), snapshot.json()];
  }

  async commit(args: [string, string, string]): Promise<void> {
    const [expected, next, bytes] = args;
    const done = await this.cas(this.#keys[0], this.#keys[1], expected, next, bytes);
    if (done !== 1) throw new Error('raw baseline compare failed');
    this.#index = 1 - this.#index;
  }

  async prime(): Promise<void> {
    const [first] = this.pair;
    const done = await this.cas(this.#keys[0], this.#keys[1], '', first.digest.toString(), first.json());
    if (done !== 1) throw new Error('raw baseline prime failed');
  }
}

interface Stats {
  readonly samples: number[];
  opsPerSecond: number;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

/** Times one commit of ours, then one raw, alternately, so both see the same machine conditions. */
async function sampleLatencyPairs(ourTree: OurTree, rawTree: RawTree, ours: number[], raw: number[]): Promise<void> {
  const end = performance.now() + latencyBudgetMs;
  for (let pairs = 0; pairs < minPairs || performance.now() < end; pairs += 1) {
    const checkpoint = ourTree.next();
    let start = performance.now();
    await ourTree.commit(checkpoint);
    ours.push(performance.now() - start);
    const args = rawTree.args();
    start = performance.now();
    await rawTree.commit(args);
    raw.push(performance.now() - start);
  }
}

async function throughput(workers: readonly (() => Promise<void>)[]): Promise<number> {
  let done = 0;
  const start = performance.now();
  const end = start + throughputBudgetMs;
  await Promise.all(
    workers.map(async (step) => {
      while (performance.now() < end) {
        await step();
        done += 1;
      }
    }),
  );
  return (done * 1_000) / (performance.now() - start);
}

async function benchCase(redis: Redis, cas: RawCas, testCase: Case, prefix: string): Promise<{ ours: Stats; raw: Stats; bytes: number }> {
  const store = new RedisTreeCommitter({ redis, keyPrefix: prefix, timeoutMs: 30_000, eventLogMaxLen: 1_000 });
  const ours: Stats = { samples: [], opsPerSecond: 0 };
  const raw: Stats = { samples: [], opsPerSecond: 0 };
  const ourTree = await OurTree.start(store, testCase);
  const rawTree = new RawTree(cas, ourTree.pair, `${prefix}:latency`);
  await rawTree.prime();
  // Warm both paths (script load, JIT).
  for (let index = 0; index < 10; index += 1) {
    await ourTree.commit(ourTree.next());
    await rawTree.commit(rawTree.args());
  }
  await sampleLatencyPairs(ourTree, rawTree, ours.samples, raw.samples);
  const ourTrees = await Promise.all(Array.from({ length: concurrency }, () => OurTree.start(store, testCase)));
  const rawTrees = await Promise.all(
    ourTrees.map(async (tree, index) => {
      const rawOne = new RawTree(cas, tree.pair, `${prefix}:tp${index}`);
      await rawOne.prime();
      return rawOne;
    }),
  );
  // Each tree has one commit in flight, so it cannot commit more often than once per idle p50.
  const p50 = percentile([...ours.samples].sort((a, b) => a - b), 50);
  const perTree = Math.min(maxPrebuilt, Math.ceil(((throughputBudgetMs * throughputRounds) / p50) * 1.2) + 10);
  for (const tree of ourTrees) tree.prebuild(perTree);
  const ourRates: number[] = [];
  const rawRates: number[] = [];
  for (let round = 0; round < throughputRounds; round += 1) {
    ourRates.push(await throughput(ourTrees.map((tree) => () => tree.commit(tree.next()))));
    rawRates.push(await throughput(rawTrees.map((tree) => () => tree.commit(tree.args()))));
  }
  ours.opsPerSecond = Math.max(...ourRates);
  raw.opsPerSecond = Math.max(...rawRates);
  return { ours, raw, bytes: ourTree.pair[0].encodedSize };
}

function formatBytes(bytes: number): string {
  if (bytes >= 1 << 20) return `${(bytes / (1 << 20)).toFixed(2)} MiB`;
  if (bytes >= 1 << 10) return `${(bytes / (1 << 10)).toFixed(1)} KiB`;
  return `${bytes} B`;
}

const ms = (value: number): string => value.toFixed(3);

async function benchServer(server: RedisServer, title: string): Promise<string[]> {
  const redis = new Redis(server.port, '127.0.0.1');
  redis.defineCommand('benchRawCas', { numberOfKeys: 2, lua: rawCasLua });
  const cas = (redis as unknown as { benchRawCas: RawCas }).benchRawCas.bind(redis);
  const cases: Case[] = [sizedCase('snapshot ~4 KB', 4 * 1024), sizedCase('snapshot ~64 KB', 64 * 1024), sizedCase('snapshot ~1 MB', 1024 * 1024), processCase(1), processCase(100), processCase(1000)];
  const verdicts: string[] = [];
  console.log(`## redis commit: ${title}`);
  console.log(
    [
      'case'.padEnd(18),
      'bytes'.padStart(10),
      'ours p50'.padStart(9),
      'ours p99'.padStart(9),
      'raw p50'.padStart(9),
      'raw p99'.padStart(9),
      'p50 ×'.padStart(6),
      'p99 ×'.padStart(6),
      `ours/s@${concurrency}`.padStart(11),
      `raw/s@${concurrency}`.padStart(11),
      'tput ×'.padStart(7),
    ].join(' '),
  );
  try {
    let index = 0;
    for (const testCase of cases) {
      index += 1;
      const { ours, raw, bytes } = await benchCase(redis, cas, testCase, `bench${process.pid}-${title.replace(/\W+/g, '')}-${index}`);
      const oursSorted = [...ours.samples].sort((a, b) => a - b);
      const rawSorted = [...raw.samples].sort((a, b) => a - b);
      const p50 = percentile(oursSorted, 50) / percentile(rawSorted, 50);
      const p99 = percentile(oursSorted, 99) / percentile(rawSorted, 99);
      const tput = raw.opsPerSecond / ours.opsPerSecond;
      console.log(
        [
          testCase.label.padEnd(18),
          formatBytes(bytes).padStart(10),
          ms(percentile(oursSorted, 50)).padStart(9),
          ms(percentile(oursSorted, 99)).padStart(9),
          ms(percentile(rawSorted, 50)).padStart(9),
          ms(percentile(rawSorted, 99)).padStart(9),
          p50.toFixed(2).padStart(6),
          p99.toFixed(2).padStart(6),
          ours.opsPerSecond.toFixed(0).padStart(11),
          raw.opsPerSecond.toFixed(0).padStart(11),
          tput.toFixed(2).padStart(7),
        ].join(' '),
      );
      if (testCase.label.includes('4 KB') || testCase.label.includes('64 KB')) {
        verdicts.push(`${title}, ${testCase.label}: p50 ${p50.toFixed(2)}× raw — ${p50 <= 1.5 ? 'within' : 'OVER'} the 1.5× goal`);
      }
    }
    console.log(
      `(latency in ms with one commit outstanding, ours and raw alternating commit by commit, ≥${minPairs} pairs / ${latencyBudgetMs} ms; ` +
        `throughput with ${concurrency} trees in flight, ${throughputRounds} alternating rounds of ${throughputBudgetMs} ms; × = ours / raw, tput × = raw / ours)`,
    );
  } finally {
    redis.disconnect();
  }
  return verdicts;
}

export async function benchRedis(): Promise<void> {
  const verdicts: string[] = [];
  const memory = await startRedisServer({ appendOnly: false });
  try {
    verdicts.push(...(await benchServer(memory, 'appendonly no')));
  } finally {
    await memory.stop();
  }
  if (process.env.BENCH_REDIS_FSYNC !== '0') {
    const durable = await startRedisServer({ appendOnly: true, appendFsync: 'always' });
    try {
      verdicts.push(...(await benchServer(durable, 'appendonly yes, appendfsync always')));
    } finally {
      await durable.stop();
    }
  }
  console.log('## goal: ≤ 1.5× the raw baseline at 4 KB and 64 KB');
  for (const verdict of verdicts) console.log(`- ${verdict}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchRedis();
}
