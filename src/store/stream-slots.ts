/**
 * Stream slots: how many SSE streams one caller (an API key) holds open at once. A stream takes a slot
 * before it opens and gives it back when it ends; past the cap it is refused (503 `stream_capacity`).
 * The memory slots count on this node; the Redis slots (`redis/stream-slots.ts`) count across every
 * node on one Redis, each slot a lease that a dead node's streams let expire.
 */
export interface StreamSlots {
  /** A slot for `holder`, or undefined when it already holds `cap`. */
  acquire(holder: string, cap: number): Promise<StreamSlot | undefined>;
  /** Stops renewing; the slots still held are released. */
  close(): Promise<void>;
}

export interface StreamSlot {
  /** Gives the slot back (idempotent). */
  release(): void;
}

/** Slots counted in this process. */
export class MemoryStreamSlots implements StreamSlots {
  readonly #held = new Map<string, number>();

  async acquire(holder: string, cap: number): Promise<StreamSlot | undefined> {
    const held = this.#held.get(holder) ?? 0;
    if (held >= cap) return undefined;
    this.#held.set(holder, held + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const now = (this.#held.get(holder) ?? 1) - 1;
        if (now === 0) this.#held.delete(holder);
        else this.#held.set(holder, now);
      },
    };
  }

  async close(): Promise<void> {
    this.#held.clear();
  }
}
