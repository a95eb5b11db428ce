import type { RedisClient } from './connection.js';
import type { DirectoryMember } from './host-writes.js';
import { processRootKey } from './keys.js';

/**
 * Which tree a non-root process belongs to, for every node: a child's id does not name its root, and
 * a node that never held the tree must still find it (a signal to a child sent to any node). A
 * directory like the root index: written before the commit that adds the child (or, on standalone
 * Redis, by that commit's script: {@link members}), so it is a superset of the truth; a reader checks
 * the root's head, which is the only authority on membership.
 */
export class RedisProcessDirectory {
  readonly #redis: RedisClient;
  readonly #prefix: string;

  constructor(options: { readonly redis: RedisClient; readonly keyPrefix: string }) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
  }

  /** The entries {@link record} writes, for a commit that writes them itself (standalone Redis). */
  members(entries: ReadonlyArray<{ readonly processId: string; readonly rootId: string }>): DirectoryMember[] {
    return entries.map((entry) => ({ key: processRootKey(this.#prefix, entry.processId), kind: 'string', member: entry.rootId }));
  }

  /** Records each process's root (one key each, so the writes never cross a cluster slot). */
  async record(entries: ReadonlyArray<{ readonly processId: string; readonly rootId: string }>): Promise<void> {
    await Promise.all(entries.map((entry) => this.#redis.set(processRootKey(this.#prefix, entry.processId), entry.rootId)));
  }

  async rootOf(processId: string): Promise<string | undefined> {
    return (await this.#redis.get(processRootKey(this.#prefix, processId))) ?? undefined;
  }

  async forget(processIds: readonly string[]): Promise<void> {
    await Promise.all(processIds.map((processId) => this.#redis.del(processRootKey(this.#prefix, processId))));
  }
}
