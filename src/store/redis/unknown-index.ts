import type { RedisClient } from './connection.js';
import { unknownIndexShardKey } from './keys.js';
import { RootShards } from './root-shards.js';
import { runScript } from './scripts.js';

/**
 * The Unknown-outcome index behind `GET /v1/effects?status=unknown` in Redis mode: a directory of every
 * effect some commit settled as Unknown, spread over N hash keys (`<prefix>:unknowns:<shard>`, shard =
 * FNV-1a of the root mod N), one field per effect. It spans trees, so no commit script can write it:
 * entries are written just before the commit that makes their effect Unknown and removed after the one
 * that resolves it (or ends its process). A superset of the truth, never a fact: readers verify each
 * entry against the head it names (`server/indexed-unknowns.ts`) and remove a stale one with a
 * compare-and-delete (`indexEntriesRemove-1.lua`). Every node must use the same shard count.
 */

export const defaultUnknownIndexShards = 16;

/** What a writer records for one Unknown effect. */
export interface UnknownIndexEntry {
  readonly rootId: string;
  readonly processId: string;
  readonly effectId: string;
  /** The writer's incarnation and the sequence of the commit it was written for (decimal). */
  readonly incarnation: string;
  readonly sequence: string;
}

/** An entry as read, with the exact stored value (what a compare-and-delete compares). */
export interface StoredUnknownEntry extends UnknownIndexEntry {
  readonly value: string;
}

export class RedisUnknownIndex {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #shards: RootShards;

  constructor(options: { redis: RedisClient; keyPrefix: string; shards?: number }) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#shards = new RootShards(options.shards ?? defaultUnknownIndexShards, 'unknown index');
  }

  /** Writes (or overwrites) entries; returns them as stored (what a later compare-and-delete names). */
  async write(entries: readonly UnknownIndexEntry[]): Promise<StoredUnknownEntry[]> {
    const stored = entries.map((entry) => ({ ...entry, value: encode(entry) }));
    await Promise.all([...this.#shards.group(stored)].map(([shard, group]) => this.#redis.hset(unknownIndexShardKey(this.#prefix, shard), ...group.flatMap((entry) => [fieldOf(entry), entry.value]))));
    return stored;
  }

  /** Removes entries that still hold the value they were read (or written) with; returns how many went. */
  async remove(entries: readonly StoredUnknownEntry[]): Promise<number> {
    const counts = await Promise.all(
      [...this.#shards.group(entries)].map(async ([shard, group]) =>
        Number(await runScript(this.#redis, 'indexEntriesRemove', [unknownIndexShardKey(this.#prefix, shard)], group.flatMap((entry) => [fieldOf(entry), entry.value]))),
      ),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /** Every entry, unverified. An entry that does not parse is skipped. */
  async entries(): Promise<StoredUnknownEntry[]> {
    const hashes = await Promise.all(this.#shards.all().map((shard) => this.#redis.hgetall(unknownIndexShardKey(this.#prefix, shard))));
    const entries: StoredUnknownEntry[] = [];
    for (const hash of hashes) {
      for (const [field, value] of Object.entries(hash)) {
        const entry = decode(field, value);
        if (entry !== undefined) entries.push(entry);
      }
    }
    return entries;
  }

}

function fieldOf(entry: Pick<UnknownIndexEntry, 'rootId' | 'processId' | 'effectId'>): string {
  return `${entry.rootId} ${entry.processId} ${entry.effectId}`;
}

function encode(entry: UnknownIndexEntry): string {
  return `${entry.incarnation} ${entry.sequence}`;
}

function decode(field: string, value: string): StoredUnknownEntry | undefined {
  const [rootId, processId, effectId, extra] = field.split(' ');
  const [incarnation, sequence, rest] = value.split(' ');
  if (rootId === undefined || processId === undefined || effectId === undefined || extra !== undefined) return undefined;
  if (incarnation === undefined || incarnation === '' || sequence === undefined || rest !== undefined || !/^(0|[1-9]\d{0,19})$/.test(sequence)) return undefined;
  return { rootId, processId, effectId, incarnation, sequence, value };
}
