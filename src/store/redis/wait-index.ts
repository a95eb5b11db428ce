import type { RedisClient } from './connection.js';
import { waitIndexShardKey } from './keys.js';
import { RootShards } from './root-shards.js';
import { runScript } from './scripts.js';

/**
 * The open-wait index behind `GET /v1/waits` in Redis mode: a directory of every wait some commit
 * opened, spread over N hash keys (`<prefix>:waits:<shard>`, shard = FNV-1a of the root mod N), one
 * field per wait. It spans trees, so no commit script can write it (a script touches one tree's slot):
 * entries are written just before the commit that opens their wait and removed after the one that
 * closes it. It is a superset of the truth, never a fact: readers verify each entry against the head
 * it names (`server/indexed-inbox.ts`) and remove a stale one with a compare-and-delete
 * (`indexEntriesRemove-1.lua`).
 *
 * Every node must use the same shard count (it decides where an entry lives).
 */

export const defaultWaitIndexShards = 16;

/** What a writer records for one open wait. */
export interface WaitIndexEntry {
  readonly rootId: string;
  readonly processId: string;
  readonly waitId: string;
  /** The writer's incarnation and the sequence of the commit that opens the wait (decimal). */
  readonly incarnation: string;
  readonly sequence: string;
  /** When the wait opened (the opening commit's event time). */
  readonly since: string;
  /** The effective answer schema as JSON text (null: any value), for a reader without the descriptor. */
  readonly answerSchema: string | null;
  readonly description: string | null;
}

/** An entry as read, with the exact stored value (what a compare-and-delete compares). */
export interface StoredWaitEntry extends WaitIndexEntry {
  readonly value: string;
}

export class RedisWaitIndex {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #shards: RootShards;

  constructor(options: { redis: RedisClient; keyPrefix: string; shards?: number }) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#shards = new RootShards(options.shards ?? defaultWaitIndexShards, 'wait index');
  }

  get shards(): number {
    return this.#shards.count;
  }

  /** The shard of a root's entries. */
  shardOf(rootId: string): number {
    return this.#shards.of(rootId);
  }

  /** Writes (or overwrites) entries. */
  async write(entries: readonly WaitIndexEntry[]): Promise<void> {
    await Promise.all(
      [...this.#shards.group(entries)].map(([shard, group]) => this.#redis.hset(waitIndexShardKey(this.#prefix, shard), ...group.flatMap((entry) => [fieldOf(entry), encode(entry)]))),
    );
  }

  /** Writes entries whose field is absent (an existing entry keeps its `since`). */
  async writeMissing(entries: readonly WaitIndexEntry[]): Promise<void> {
    await Promise.all(entries.map((entry) => this.#redis.hsetnx(waitIndexShardKey(this.#prefix, this.shardOf(entry.rootId)), fieldOf(entry), encode(entry))));
  }

  /**
   * Deletes entries whatever they hold: the writer of the commit that closed their wait (a wait id
   * derives from its opening effect, and no later head can reopen a wait a committed head answered).
   */
  async forget(entries: readonly Pick<WaitIndexEntry, 'rootId' | 'processId' | 'waitId'>[]): Promise<void> {
    await Promise.all([...this.#shards.group(entries)].map(([shard, group]) => this.#redis.hdel(waitIndexShardKey(this.#prefix, shard), ...group.map(fieldOf))));
  }

  /** The stored values of these waits' entries (undefined where absent). */
  async read(entries: readonly Pick<WaitIndexEntry, 'rootId' | 'processId' | 'waitId'>[]): Promise<(string | undefined)[]> {
    return Promise.all(entries.map(async (entry) => (await this.#redis.hget(waitIndexShardKey(this.#prefix, this.shardOf(entry.rootId)), fieldOf(entry))) ?? undefined));
  }

  /** Removes entries that still hold the value they were read (or written) with; returns how many went. */
  async remove(entries: readonly StoredWaitEntry[]): Promise<number> {
    const counts = await Promise.all(
      [...this.#shards.group(entries)].map(async ([shard, group]) =>
        Number(await runScript(this.#redis, 'indexEntriesRemove', [waitIndexShardKey(this.#prefix, shard)], group.flatMap((entry) => [fieldOf(entry), entry.value]))),
      ),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /** Every entry (or one root's), unverified. An entry that does not parse is skipped. */
  async entries(rootId?: string): Promise<StoredWaitEntry[]> {
    const shards = rootId === undefined ? this.#shards.all() : [this.shardOf(rootId)];
    const hashes = await Promise.all(shards.map((shard) => this.#redis.hgetall(waitIndexShardKey(this.#prefix, shard))));
    const entries: StoredWaitEntry[] = [];
    for (const hash of hashes) {
      for (const [field, value] of Object.entries(hash)) {
        const entry = decode(field, value);
        if (entry !== undefined && (rootId === undefined || entry.rootId === rootId)) entries.push(entry);
      }
    }
    return entries;
  }

}

function fieldOf(entry: Pick<WaitIndexEntry, 'rootId' | 'processId' | 'waitId'>): string {
  return `${entry.rootId} ${entry.processId} ${entry.waitId}`;
}

function encode(entry: WaitIndexEntry): string {
  const { incarnation, sequence, since, answerSchema, description } = entry;
  return JSON.stringify({ incarnation, sequence, since, answerSchema, description });
}

function decode(field: string, value: string): StoredWaitEntry | undefined {
  const [rootId, processId, waitId, extra] = field.split(' ');
  if (rootId === undefined || processId === undefined || waitId === undefined || extra !== undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { incarnation, sequence, since, answerSchema, description } = parsed as Record<string, unknown>;
  if (typeof incarnation !== 'string' || typeof sequence !== 'string' || !/^(0|[1-9]\d{0,19})$/.test(sequence) || typeof since !== 'string') return undefined;
  if (answerSchema !== null && typeof answerSchema !== 'string') return undefined;
  if (description !== null && typeof description !== 'string') return undefined;
  return { rootId, processId, waitId, incarnation, sequence, since, answerSchema, description, value };
}
