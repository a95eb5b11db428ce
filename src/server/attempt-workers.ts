import type { RedisClient } from '../store/redis/connection.js';
import type { RedisEffectAttempts } from '../store/redis/effect-attempts.js';
import { recordKey } from '../store/redis/keys.js';

/**
 * Which worker ran each attempt of an effect — evidence for a person adjudicating an Unknown, never the
 * record. An attempt a BullMQ worker claimed names that worker (its claim record, src/store/redis/
 * effect-attempts.ts, kept `retentionMs`). An attempt run in the owner process (no transport, a framework
 * effect, an owner-dispatched deployment) names the node that started it: embedded, this node; in Redis
 * mode, the node wrote its id under the tree when it started the attempt (`ran:<attemptId>`, same
 * retention, best-effort). Anything else (never claimed, expired, a lost write) is null: not known.
 */

/** How long the node of an in-process attempt is kept (as long as a claim record). */
const retentionMs = 86_400_000;

export interface AttemptWorkersOptions {
  readonly nodeId: () => string;
  /**
   * Redis mode: where the node of an in-process attempt is written, and `send`, which issues that
   * write (default at once; the Host rides it on the next log flush, which leaves in one write with the
   * attempt's own events).
   */
  readonly redis?: { readonly client: RedisClient; readonly keyPrefix: string; readonly send?: (write: () => void) => void };
  /** With the BullMQ transport: the claim records. */
  readonly claims?: RedisEffectAttempts;
}

export class AttemptWorkers {
  readonly #options: AttemptWorkersOptions;

  constructor(options: AttemptWorkersOptions) {
    this.#options = options;
  }

  /** This node started an attempt it runs itself (Redis mode: recorded, best-effort, never awaited, at most one event-loop turn later). */
  ranHere(rootId: string, attemptId: string): void {
    const redis = this.#options.redis;
    if (redis === undefined) return;
    const key = recordKey(redis.keyPrefix, rootId, ranSuffix(attemptId));
    const nodeId = this.#options.nodeId();
    const write = (): void => {
      void redis.client.set(key, nodeId, 'PX', retentionMs).catch(() => undefined);
    };
    if (redis.send === undefined) write();
    else redis.send(write);
  }

  /** The worker of each attempt (null where not known), in order. */
  async workersOf(rootId: string, effectId: string, attemptIds: readonly string[]): Promise<(string | null)[]> {
    const redis = this.#options.redis;
    if (redis === undefined) return attemptIds.map(() => this.#options.nodeId());
    const claims = this.#options.claims;
    return Promise.all(
      attemptIds.map(async (attemptId) => {
        const claimed = claims === undefined ? undefined : (await claims.record({ rootId, attemptId, effectId })).worker;
        if (claimed !== undefined && claimed !== '') return claimed;
        return (await redis.client.get(recordKey(redis.keyPrefix, rootId, ranSuffix(attemptId)))) ?? null;
      }),
    );
  }
}

function ranSuffix(attemptId: string): string {
  return `ran:${attemptId}`;
}
