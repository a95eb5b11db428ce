import type { IdempotencyClaim, IdempotencyIntent, IdempotencyRecord, IdempotencyStore } from './idempotency.js';

/** Embedded mode: records in memory, expired lazily; at most `maxEntries` are kept (oldest dropped). */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly #records = new Map<string, { record: IdempotencyRecord; expiresAt: number }>();
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: { maxEntries?: number; now?: () => number } = {}) {
    this.#maxEntries = options.maxEntries ?? 100_000;
    this.#now = options.now ?? Date.now;
  }

  /** A lookup: same-key starts never overlap inside one server (the Host runs them one after the other). */
  async claim(keyDigest: string): Promise<IdempotencyClaim> {
    const record = await this.lookup(keyDigest);
    return record === undefined ? { kind: 'reserved', token: undefined } : { kind: 'existing', record };
  }

  async release(): Promise<void> {}

  async lookup(keyDigest: string): Promise<IdempotencyRecord | undefined> {
    const entry = this.#records.get(keyDigest);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#records.delete(keyDigest);
      return undefined;
    }
    return entry.record;
  }

  /** Called by the committer decorator right after the start commit is acknowledged. */
  set(intent: IdempotencyIntent, processId: string): void {
    this.#records.delete(intent.keyDigest);
    this.#records.set(intent.keyDigest, {
      record: { keyDigest: intent.keyDigest, requestDigest: intent.requestDigest, processId },
      expiresAt: this.#now() + intent.ttlMs,
    });
    // Insertion order is age order: drop the oldest beyond the bound.
    while (this.#records.size > this.#maxEntries) {
      const oldest = this.#records.keys().next().value as string;
      this.#records.delete(oldest);
    }
  }

  get size(): number {
    return this.#records.size;
  }
}
