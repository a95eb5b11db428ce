import { performance } from 'node:perf_hooks';
import { TreeCheckpoint } from '../../src/kernel/commit.js';
import { ProcessId, TreeIncarnationId } from '../../src/kernel/identity.js';
import type { TreeSnapshot } from '../../src/kernel/tree-snapshot.js';
import { closeRedis, connectRedis, type RedisClient } from '../../src/store/redis/connection.js';
import { RedisTreeCommitter } from '../../src/store/redis/redis-committer.js';
import { runningRootTree } from '../../src/testing/snapshot-fixtures.js';
import { startRedisCluster } from '../../test/helpers/redis-cluster.js';
import { startReplicatedRedis } from '../../test/helpers/redis-replica.js';

/**
 * What durability and sharding cost a commit (`npm run bench:redis:wait`): RedisTreeCommitter's
 * `progress` commit, side by side in one run —
 * - `primary`: a primary with one attached replica, no WAIT (an ack may precede the replica's copy);
 * - `primary+WAIT 1`: the same primary and client, `waitReplicas: {replicas: 1}` (the ack follows the replica's);
 * - `cluster`: a local 3-master Redis Cluster through the ioredis Cluster client, no WAIT.
 * Latency: one commit outstanding, the variants interleaved commit by commit (so load on a shared
 * machine hits all alike), p50/p99. Throughput: 16 trees in flight on one client, short alternating
 * rounds. Snapshots of ~4 KB and ~64 KB; everything on loopback (a real network adds its round trip to WAIT).
 */

const latencyBudgetMs = 1_000;
const minSamples = 200;
const throughputBudgetMs = 200;
const throughputRounds = 3;
const concurrency = 16;

/** A running root alternating between two snapshots of ~`bytes`. */
function sizedPair(rootId: ProcessId, incarnationId: TreeIncarnationId, bytes: number): readonly [TreeSnapshot, TreeSnapshot] {
  const probe = (pending: number) => runningRootTree({ pendingSignals: pending }).encodedSize;
  const base = probe(0);
  const pending = Math.max(0, Math.round((bytes - base) / ((probe(20) - base) / 20)));
  return [
    runningRootTree({ rootId, incarnationId, pendingSignals: pending, committedSteps: 1n }),
    runningRootTree({ rootId, incarnationId, pendingSignals: pending, committedSteps: 2n }),
  ];
}

class Tree {
  #sequence = 2n;
  #index = 0;

  private constructor(
    readonly store: RedisTreeCommitter,
    readonly pair: readonly [TreeSnapshot, TreeSnapshot],
  ) {}

  static async start(store: RedisTreeCommitter, bytes: number): Promise<Tree> {
    const start = runningRootTree({ rootId: ProcessId.newRoot(), incarnationId: TreeIncarnationId.random() });
    const pair = sizedPair(start.rootId, start.incarnationId, bytes);
    await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'start', sequence: 1n, snapshot: start }));
    await store.commitCheckpoint(TreeCheckpoint.create({ kind: 'progress', sequence: 2n, previous: start.digest, snapshot: pair[0] }));
    return new Tree(store, pair);
  }

  next(): TreeCheckpoint {
    const previous = this.pair[this.#index] as TreeSnapshot;
    const snapshot = this.pair[1 - this.#index] as TreeSnapshot;
    const checkpoint = TreeCheckpoint.create({ kind: 'progress', sequence: this.#sequence + 1n, previous: previous.digest, snapshot });
    checkpoint.contentDigest(); // Engine work, kept off the clock
    return checkpoint;
  }

  async commit(checkpoint: TreeCheckpoint): Promise<void> {
    await this.store.commitCheckpoint(checkpoint);
    this.#sequence = checkpoint.sequence;
    this.#index = 1 - this.#index;
  }
}

interface Variant {
  readonly label: string;
  readonly store: RedisTreeCommitter;
}

function percentile(sorted: readonly number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

async function latency(variants: readonly Variant[], bytes: number): Promise<number[][]> {
  const trees = await Promise.all(variants.map((variant) => Tree.start(variant.store, bytes)));
  for (let warm = 0; warm < 20; warm += 1) for (const tree of trees) await tree.commit(tree.next());
  const samples = variants.map(() => [] as number[]);
  const end = performance.now() + latencyBudgetMs;
  for (let round = 0; round < minSamples || performance.now() < end; round += 1) {
    for (const [index, tree] of trees.entries()) {
      const checkpoint = tree.next();
      const began = performance.now();
      await tree.commit(checkpoint);
      samples[index]?.push(performance.now() - began);
    }
  }
  return samples.map((list) => list.sort((a, b) => a - b));
}

async function throughput(variants: readonly Variant[], bytes: number): Promise<number[]> {
  const fleets = await Promise.all(variants.map((variant) => Promise.all(Array.from({ length: concurrency }, () => Tree.start(variant.store, bytes)))));
  const best = variants.map(() => 0);
  for (let round = 0; round < throughputRounds; round += 1) {
    for (const [index, fleet] of fleets.entries()) {
      let done = 0;
      const began = performance.now();
      const end = began + throughputBudgetMs;
      await Promise.all(
        fleet.map(async (tree) => {
          while (performance.now() < end) {
            await tree.commit(tree.next());
            done += 1;
          }
        }),
      );
      best[index] = Math.max(best[index] as number, (done * 1_000) / (performance.now() - began));
    }
  }
  return best;
}

export async function benchRedisWait(): Promise<void> {
  const pair = await startReplicatedRedis();
  const cluster = await startRedisCluster();
  const clients: RedisClient[] = [];
  const stores: RedisTreeCommitter[] = [];
  try {
    const single = connectRedis(pair.primary.url);
    const sharded = connectRedis({ cluster: cluster.urls.split(',') });
    clients.push(single, sharded);
    const prefix = `benchwait${process.pid}`;
    const variants: Variant[] = [
      { label: 'primary', store: new RedisTreeCommitter({ redis: single, keyPrefix: `${prefix}a`, timeoutMs: 30_000 }) },
      { label: 'primary+WAIT 1', store: new RedisTreeCommitter({ redis: single, keyPrefix: `${prefix}b`, timeoutMs: 30_000, waitReplicas: { replicas: 1, timeoutMs: 10_000 } }) },
      { label: 'cluster (3 masters)', store: new RedisTreeCommitter({ redis: sharded, keyPrefix: `${prefix}c`, timeoutMs: 30_000 }) },
    ];
    stores.push(...variants.map((variant) => variant.store));
    console.log('## redis commit: WAIT and Cluster side by side');
    console.log(['case'.padEnd(16), 'variant'.padEnd(20), 'p50 ms'.padStart(8), 'p99 ms'.padStart(8), 'p50 ×'.padStart(6), `commits/s@${concurrency}`.padStart(14), 'tput ×'.padStart(7)].join(' '));
    for (const [label, bytes] of [['snapshot ~4 KB', 4 * 1024], ['snapshot ~64 KB', 64 * 1024]] as const) {
      const sorted = await latency(variants, bytes);
      const rates = await throughput(variants, bytes);
      const baseP50 = percentile(sorted[0] as number[], 50);
      const baseRate = rates[0] as number;
      for (const [index, variant] of variants.entries()) {
        const samples = sorted[index] as number[];
        console.log(
          [
            label.padEnd(16),
            variant.label.padEnd(20),
            percentile(samples, 50).toFixed(3).padStart(8),
            percentile(samples, 99).toFixed(3).padStart(8),
            (percentile(samples, 50) / baseP50).toFixed(2).padStart(6),
            (rates[index] as number).toFixed(0).padStart(14),
            (baseRate / (rates[index] as number)).toFixed(2).padStart(7),
          ].join(' '),
        );
      }
    }
    console.log(
      `(one commit outstanding, variants interleaved, ≥${minSamples} samples / ${latencyBudgetMs} ms each; throughput: ${concurrency} trees in flight, best of ${throughputRounds} rounds of ${throughputBudgetMs} ms; ` +
        '× = variant / primary, tput × = primary / variant; loopback, appendonly no)',
    );
  } finally {
    await Promise.all(stores.map((store) => store.close()));
    await Promise.all(clients.map((client) => closeRedis(client, 500)));
    await cluster.stop();
    await pair.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchRedisWait();
}
