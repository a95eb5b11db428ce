import { randomUUID } from 'node:crypto';
import type { StreamSlot, StreamSlots } from '../stream-slots.js';
import type { RedisClient } from './connection.js';
import { streamSlotsKey } from './keys.js';
import { runScript } from './scripts.js';

/**
 * Stream slots counted on Redis, so a caller's cap holds across every node. Each slot is a lease
 * (`streamSlotAcquire-1.lua`) this node renews while the stream is open; a node that dies stops
 * renewing and its slots expire. Redis unreachable: the slot is granted (the per-node cap still
 * bounds this node), because refusing every stream while storage blinks would be worse.
 */
export class RedisStreamSlots implements StreamSlots {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #leaseMs: number;
  readonly #node = randomUUID();
  /** Held slots by key: member → holder. */
  readonly #held = new Map<string, Set<string>>();
  readonly #timer: NodeJS.Timeout;
  #closed = false;

  constructor(redis: RedisClient, options: { keyPrefix: string; leaseMs?: number }) {
    this.#redis = redis;
    this.#prefix = options.keyPrefix;
    this.#leaseMs = options.leaseMs ?? 30_000;
    this.#timer = setInterval(() => void this.#renew(), Math.max(10, Math.floor(this.#leaseMs / 3)));
    this.#timer.unref();
  }

  async acquire(holder: string, cap: number): Promise<StreamSlot | undefined> {
    const key = streamSlotsKey(this.#prefix, holder);
    const member = `${this.#node}:${randomUUID()}`;
    let reply: unknown;
    try {
      reply = await runScript(this.#redis, 'streamSlotAcquire', [key], [member, String(this.#leaseMs), String(cap)]);
    } catch {
      return { release: () => undefined };
    }
    const [taken] = reply as [number, number | string];
    if (taken === -4) throw new Error(`streamSlotAcquire refused its arguments: ${String((reply as unknown[])[1])}`);
    if (taken !== 1) return undefined;
    const members = this.#held.get(key) ?? new Set<string>();
    members.add(member);
    this.#held.set(key, members);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        members.delete(member);
        if (members.size === 0) this.#held.delete(key);
        void this.#redis.zrem(key, member).catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    const pending = [...this.#held].map(([key, members]) => this.#redis.zrem(key, ...members).catch(() => undefined));
    this.#held.clear();
    await Promise.all(pending);
  }

  async #renew(): Promise<void> {
    await Promise.all(
      [...this.#held].map(([key, members]) =>
        runScript(this.#redis, 'streamSlotRenew', [key], [String(this.#leaseMs), ...members]).catch(() => undefined),
      ),
    );
  }
}
