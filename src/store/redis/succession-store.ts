import type { SuccessionRecordWrite, SuccessionStore } from '../succession.js';
import type { RedisClient } from './connection.js';
import { ownerRecordSuffix, predecessorRecordSuffix, recordKey, successionKey, successionRecordSuffix } from './keys.js';

/**
 * Redis mode's {@link SuccessionStore}: the succession record lives beside the predecessor's head
 * (its hash tag), written by the commit that installs the superseded tree's final head together with
 * an owner marker that fences takeovers; the predecessor link lives beside the successor's head.
 */
export class RedisSuccessionStore implements SuccessionStore {
  readonly #redis: RedisClient;
  readonly #prefix: string;

  constructor(options: { readonly redis: RedisClient; readonly keyPrefix: string }) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
  }

  async read(root: string): Promise<string | undefined> {
    return (await this.#redis.get(successionKey(this.#prefix, root))) ?? undefined;
  }

  async predecessorOf(root: string): Promise<string | undefined> {
    return (await this.#redis.get(recordKey(this.#prefix, root, predecessorRecordSuffix))) ?? undefined;
  }

  supersedeRecords(record: string): readonly SuccessionRecordWrite[] {
    // The owner record becomes a marker naming no node: decodeOwner reads it as "no owner", and a
    // takeover that read the previous owner record fails its compare, reads the route again and
    // finds the tree superseded.
    return [
      { suffix: successionRecordSuffix, value: record },
      { suffix: ownerRecordSuffix, value: JSON.stringify({ superseded: true }) },
    ];
  }

  async complete(root: string, record: string, successor: string): Promise<void> {
    // Each key in its own slot: two writes; a retry of the move-on repeats both.
    await this.#redis.set(recordKey(this.#prefix, successor, predecessorRecordSuffix), root);
    await this.#redis.set(successionKey(this.#prefix, root), record);
  }
}
