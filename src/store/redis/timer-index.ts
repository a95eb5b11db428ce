import { corked, type RedisClient } from './connection.js';
import { timerIndexShardKey } from './keys.js';
import { RootShards } from './root-shards.js';
import { parseTimerMember, type TimerEntry, type TimerIndex, type TimerRef, timerMember } from '../timer-index.js';

/**
 * Redis mode's durable timer index: N sorted sets (`<prefix>:timers:<shard>`, shard = FNV-1a of the
 * root mod N, as the open-wait and Unknown indexes shard), member `<root> <process> <effect>`, score
 * the due instant in epoch ms. It spans trees, so no commit script can write it (a script touches
 * one tree's slot): an entry is written just before the commit that makes its timer pending (the
 * due instant itself lands in that commit's write set, under the tree: the timer record) and removed
 * after the commit that settles or drops it. Sweepers verify entries against the heads.
 *
 * Every node must use the same shard count.
 */
export const defaultTimerIndexShards = 16;

export class RedisTimerIndex implements TimerIndex {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #shards: RootShards;

  constructor(options: { redis: RedisClient; keyPrefix: string; shards?: number }) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#shards = new RootShards(options.shards ?? defaultTimerIndexShards, 'timer index');
  }

  // One command per shard, all issued at once: corked, they leave in one write (one syscall, not N).

  async write(entries: readonly TimerEntry[]): Promise<void> {
    await corked(this.#redis, () =>
      Promise.all(
        [...this.#shards.group(entries)].map(([shard, group]) => this.#redis.zadd(timerIndexShardKey(this.#prefix, shard), ...group.flatMap((entry) => [String(entry.dueMs), timerMember(entry)]))),
      ),
    );
  }

  async remove(refs: readonly TimerRef[]): Promise<void> {
    await corked(this.#redis, () =>
      Promise.all([...this.#shards.group(refs)].map(([shard, group]) => this.#redis.zrem(timerIndexShardKey(this.#prefix, shard), ...group.map(timerMember)))),
    );
  }

  async dueBy(untilMs: number, limit: number): Promise<TimerEntry[]> {
    const replies = await corked(this.#redis, () =>
      Promise.all(this.#shards.all().map((shard) => this.#redis.zrangebyscore(timerIndexShardKey(this.#prefix, shard), '-inf', String(untilMs), 'WITHSCORES', 'LIMIT', 0, limit))),
    );
    const entries: TimerEntry[] = [];
    for (const reply of replies) {
      for (let at = 0; at + 1 < reply.length; at += 2) {
        const entry = parseTimerMember(reply[at] as string, Number(reply[at + 1]));
        if (entry !== undefined) entries.push(entry);
      }
    }
    return entries.sort((a, b) => a.dueMs - b.dueMs).slice(0, limit);
  }

}
