import type { RedisClient } from './connection.js';
import type { DirectoryMember } from './host-writes.js';
import { nodeEpochKey, nodeLeaseKey, nodeRegistryKey, nodeTreesKey, ownerKey } from './keys.js';
import { runScript } from './scripts.js';

/** A node's lease as stored: present while the lease lives on the server. */
export interface StoredNodeLease {
  readonly nodeId: string;
  readonly epoch: number;
  readonly url: string;
  /** Deployment refs (`<name>+sha256:<hex>`) the node can restore. */
  readonly refs: readonly string[];
  /** What is left of the lease on the server, in ms. */
  readonly ttlMs: number;
}

/**
 * The node registry in Redis (keys.ts "Nodes and ownership"): each node's lease (a hash whose TTL
 * is the lease, so it lapses on the server when the node stops renewing), the registry of node ids
 * and, per node, the directory of roots it owned. Directories are hints; the owner record under
 * each tree's hash tag is what routing believes, and the head is what safety believes.
 */
export class RedisNodeRegistry {
  readonly #redis: RedisClient;
  readonly #prefix: string;

  constructor(options: { readonly redis: RedisClient; readonly keyPrefix: string }) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
  }

  /** Registers `nodeId` under a new epoch with a lease of `leaseMs`; resolves with the epoch. */
  async register(nodeId: string, url: string, refs: readonly string[], leaseMs: number): Promise<number> {
    const epoch = await runScript(this.#redis, 'registerNode', [nodeEpochKey(this.#prefix, nodeId), nodeLeaseKey(this.#prefix, nodeId)], [
      url,
      refs.join(' '),
      String(leaseMs),
    ]);
    await this.#redis.sadd(nodeRegistryKey(this.#prefix), nodeId);
    return Number(epoch);
  }

  /** Extends the lease while it is still `epoch`'s; false once it is lost (expired, evicted, replaced). */
  async renew(nodeId: string, epoch: number, leaseMs: number): Promise<boolean> {
    return (await runScript(this.#redis, 'renewNodeLease', [nodeLeaseKey(this.#prefix, nodeId)], [String(epoch), String(leaseMs)])) === 1;
  }

  /** Every registered node id (live or not). */
  async nodeIds(): Promise<string[]> {
    return this.#redis.smembers(nodeRegistryKey(this.#prefix));
  }

  /** The live leases of `nodeIds` (absent: lapsed). */
  async leases(nodeIds: readonly string[]): Promise<Map<string, StoredNodeLease>> {
    const leases = new Map<string, StoredNodeLease>();
    if (nodeIds.length === 0) return leases;
    // One pipeline per node: each node's keys are their own cluster slot.
    const replies = await Promise.all(
      nodeIds.map(async (id) => (await this.#redis.pipeline().hgetall(nodeLeaseKey(this.#prefix, id)).pttl(nodeLeaseKey(this.#prefix, id)).exec()) ?? []),
    );
    nodeIds.forEach((nodeId, index) => {
      const [[hashError, hash] = [], [, ttl] = []] = replies[index] ?? [];
      if (hashError !== null && hashError !== undefined) throw hashError;
      const fields = hash as Record<string, string> | undefined;
      if (fields?.epoch === undefined || typeof ttl !== 'number' || ttl <= 0) return;
      leases.set(nodeId, { nodeId, epoch: Number(fields.epoch), url: fields.url ?? '', refs: (fields.refs ?? '').split(' ').filter((ref) => ref !== ''), ttlMs: ttl });
    });
    return leases;
  }

  async lease(nodeId: string): Promise<StoredNodeLease | undefined> {
    return (await this.leases([nodeId])).get(nodeId);
  }

  /** Deletes a node's lease (eviction, or a draining node leaving); true when there was one. */
  async dropLease(nodeId: string, epoch?: number): Promise<boolean> {
    const key = nodeLeaseKey(this.#prefix, nodeId);
    if (epoch !== undefined && (await this.#redis.hget(key, 'epoch')) !== String(epoch)) return false;
    return (await this.#redis.del(key)) === 1;
  }

  /** Forgets a node whose trees have all been dealt with (its epoch counter stays: epochs never repeat). */
  async forget(nodeId: string): Promise<void> {
    await Promise.all([this.#redis.srem(nodeRegistryKey(this.#prefix), nodeId), this.#redis.del(nodeTreesKey(this.#prefix, nodeId))]);
  }

  /** The directory entry {@link addTree} writes, for a commit that adds it with the head (standalone Redis). */
  treeMember(nodeId: string, root: string): DirectoryMember {
    return { key: nodeTreesKey(this.#prefix, nodeId), kind: 'set', member: root };
  }

  async addTree(nodeId: string, root: string): Promise<void> {
    await this.#redis.sadd(nodeTreesKey(this.#prefix, nodeId), root);
  }

  async removeTree(nodeId: string, root: string): Promise<void> {
    await this.#redis.srem(nodeTreesKey(this.#prefix, nodeId), root);
  }

  /** Removes several trees from a node's directory in one command. */
  async removeTrees(nodeId: string, roots: readonly string[]): Promise<void> {
    if (roots.length > 0) await this.#redis.srem(nodeTreesKey(this.#prefix, nodeId), ...roots);
  }

  /** The roots in a node's directory (hints: check each owner record). */
  async trees(nodeId: string): Promise<string[]> {
    return this.#redis.smembers(nodeTreesKey(this.#prefix, nodeId));
  }

  /** A tree's owner record, verbatim, or undefined. */
  async owner(root: string): Promise<string | undefined> {
    return (await this.#redis.get(ownerKey(this.#prefix, root))) ?? undefined;
  }
}
