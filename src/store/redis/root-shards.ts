/**
 * How an index that spans trees spreads its entries over N keys: shard = FNV-1a of the root id mod N,
 * so a root's entries share one key. No commit script can write such an index (a script touches one
 * tree's slot); every node must use the same count, since it decides where an entry lives.
 */
export class RootShards {
  readonly count: number;

  /** `count` must be an integer in 1..1024; `what` names the index in the error. */
  constructor(count: number, what: string) {
    if (!Number.isInteger(count) || count < 1 || count > 1024) throw new TypeError(`${what} shards must be an integer in 1..1024, got ${String(count)}`);
    this.count = count;
  }

  /** The shard of a root's entries. */
  of(rootId: string): number {
    let hash = 0x811c9dc5;
    for (let index = 0; index < rootId.length; index += 1) {
      hash ^= rootId.charCodeAt(index);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return hash % this.count;
  }

  /** Every shard number, in order. */
  all(): number[] {
    return Array.from({ length: this.count }, (_unused, shard) => shard);
  }

  /** `entries` grouped by their root's shard, each group in the given order. */
  group<T extends { readonly rootId: string }>(entries: readonly T[]): Map<number, T[]> {
    const groups = new Map<number, T[]>();
    for (const entry of entries) {
      const shard = this.of(entry.rootId);
      const group = groups.get(shard);
      if (group === undefined) groups.set(shard, [entry]);
      else group.push(entry);
    }
    return groups;
  }
}
