import type { SupersedeOutcome, SuccessionStore } from '../succession.js';
import type { RedisClient } from './connection.js';
import { headKey, ownerKey, predecessorRecordSuffix, recordKey, successionKey } from './keys.js';
import { runScript } from './scripts.js';

/**
 * Redis mode's {@link SuccessionStore}: the succession record lives beside the predecessor's head
 * (its hash tag), written by `supersedeTree` together with an owner marker that fences takeovers;
 * the predecessor link lives beside the successor's head.
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

  async supersede(root: string, headDigest: string, record: string): Promise<SupersedeOutcome> {
    // The marker names no node: decodeOwner reads it as "no owner", and no takeover's compare matches it.
    const marker = JSON.stringify({ superseded: true });
    const reply = (await runScript(this.#redis, 'supersedeTree', [headKey(this.#prefix, root), successionKey(this.#prefix, root), ownerKey(this.#prefix, root)], [headDigest, record, marker])) as [number, string?];
    switch (reply[0]) {
      case 1:
        return { kind: 'written' };
      case 0:
        return { kind: 'absent' };
      case 2:
        return { kind: 'exists', record: String(reply[1]) };
      case -2:
        return { kind: 'head_moved' };
      default:
        throw new Error(`supersedeTree: unexpected reply ${JSON.stringify(reply)}`);
    }
  }

  async complete(root: string, record: string, successor: string): Promise<void> {
    // Each key in its own slot: two writes; a retry of the move-on repeats both.
    await this.#redis.set(recordKey(this.#prefix, successor, predecessorRecordSuffix), root);
    await this.#redis.set(successionKey(this.#prefix, root), record);
  }
}
