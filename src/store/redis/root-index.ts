import type { RedisClient } from './connection.js';
import type { DirectoryMember } from './host-writes.js';
import { rootIndexMember, type RootIndex, type RootIndexEntry } from '../root-index.js';
import { deploymentRootIndexKey, rootIndexKey } from './keys.js';

/**
 * The root index in Redis: sorted sets, every score 0, members `<start ms>:<root>` read newest first
 * with ZREVRANGEBYLEX (byte order is start order) — one of every root, one per deployment name. They
 * span trees, so they live outside any hash tag; they are directories, never facts (store/root-index.ts).
 */
export class RedisRootIndex implements RootIndex {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #key: string;

  constructor(options: { redis: RedisClient; keyPrefix: string }) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#key = rootIndexKey(options.keyPrefix);
  }

  /** The members {@link add} writes, for a start commit that adds them with the head (standalone Redis). */
  members(entry: RootIndexEntry): DirectoryMember[] {
    const member = rootIndexMember(entry.rootId, entry.startedAt);
    return [
      { key: this.#key, kind: 'zset', member },
      { key: deploymentRootIndexKey(this.#prefix, entry.deployment), kind: 'zset', member },
    ];
  }

  async add(entry: RootIndexEntry): Promise<void> {
    const member = rootIndexMember(entry.rootId, entry.startedAt);
    await Promise.all([
      this.#redis.zadd(this.#key, 0, member),
      this.#redis.zadd(deploymentRootIndexKey(this.#prefix, entry.deployment), 0, member),
    ]);
  }

  async remove(entry: RootIndexEntry): Promise<void> {
    const member = rootIndexMember(entry.rootId, entry.startedAt);
    await Promise.all([
      this.#redis.zrem(this.#key, member),
      this.#redis.zrem(deploymentRootIndexKey(this.#prefix, entry.deployment), member),
    ]);
  }

  async page(before: string | undefined, count: number, deployment?: string): Promise<string[]> {
    const key = deployment === undefined ? this.#key : deploymentRootIndexKey(this.#prefix, deployment);
    const max = before === undefined ? '+' : `(${before}`;
    return this.#redis.zrevrangebylex(key, max, '-', 'LIMIT', 0, count);
  }

  async size(): Promise<number> {
    return this.#redis.zcard(this.#key);
  }
}
