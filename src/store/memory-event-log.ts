import { isPosition, type EventLog, type LogRecord, type StoredLogRecord } from './event-log.js';
import { sharedAbortController } from './shared-abort.js';

/**
 * The event log of embedded mode: one bounded ring per tree, in process memory.
 *
 * Bound: each tree keeps its newest `maxLen` entries (default 10 000, `SCOPE_EVENT_LOG_MAXLEN`);
 * appending beyond that drops the oldest entry, committed or not, exactly as Redis trims its
 * stream; every entry records its predecessor's position (`previous`), so a reader whose cursor
 * precedes what the ring still holds sees the gap instead of skipping it silently.
 * Trees are kept until {@link delete} (a purge), so memory grows with the number of trees,
 * like the memory committer's heads. Positions are per-tree sequence numbers from 1, as decimal
 * strings; `0` is before everything. Appends are synchronous, so the server's committer decorator
 * can append a commit's events right after the synchronous memory commit with nothing in between.
 */
export class MemoryEventLog implements EventLog {
  readonly #maxLen: number;
  readonly #trees = new Map<string, Ring>();
  #closed = false;
  readonly #closing = sharedAbortController();

  constructor(options: { maxLen?: number } = {}) {
    const maxLen = options.maxLen ?? 10_000;
    if (!Number.isSafeInteger(maxLen) || maxLen < 1) throw new TypeError(`maxLen must be a positive integer, got ${String(maxLen)}`);
    this.#maxLen = maxLen;
  }

  get maxLen(): number {
    return this.#maxLen;
  }

  /** Always 0: a memory append cannot fail. */
  get failedAppends(): number {
    return 0;
  }

  append(rootId: string, records: readonly LogRecord[]): void {
    if (this.#closed || records.length === 0) return;
    let ring = this.#trees.get(rootId);
    if (ring === undefined) {
      ring = new Ring(this.#maxLen);
      this.#trees.set(rootId, ring);
    }
    for (const record of records) ring.push(record);
    ring.notify();
  }

  async readAfter(rootId: string, after: string, limit: number): Promise<StoredLogRecord[]> {
    return this.#read(rootId, after, limit);
  }

  async *tail(rootId: string, after: string, signal: AbortSignal): AsyncGenerator<StoredLogRecord, void, undefined> {
    for await (const batch of this.tailBatches(rootId, after, signal)) {
      for (const entry of batch) {
        yield entry;
        if (signal.aborted || this.#closed) return;
      }
    }
  }

  async *tailBatches(rootId: string, after: string, signal: AbortSignal): AsyncGenerator<readonly StoredLogRecord[], void, undefined> {
    let cursor = after;
    checkAfter(cursor);
    while (!signal.aborted && !this.#closed) {
      // Read and register the waiter in one synchronous turn, so no append can slip in between.
      const batch = this.#read(rootId, cursor, 256);
      if (batch.length === 0) {
        await this.#nextAppend(rootId, signal);
        continue;
      }
      cursor = (batch[batch.length - 1] as StoredLogRecord).position;
      yield batch;
    }
  }

  async lastPosition(rootId: string): Promise<string> {
    return this.#trees.get(rootId)?.lastPosition ?? '0';
  }

  /** The number of entries a tree holds now. */
  length(rootId: string): number {
    return this.#trees.get(rootId)?.size ?? 0;
  }

  /** Forgets a tree's log (purge); open tails end. */
  delete(rootId: string): void {
    const ring = this.#trees.get(rootId);
    this.#trees.delete(rootId);
    ring?.notify();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort();
    for (const ring of this.#trees.values()) ring.notify();
  }

  #read(rootId: string, after: string, limit: number): StoredLogRecord[] {
    checkAfter(after);
    if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`limit must be a positive integer, got ${String(limit)}`);
    const ring = this.#trees.get(rootId);
    if (ring === undefined) return [];
    const major = BigInt(after.split('-')[0] as string);
    return ring.after(major > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(major), limit);
  }

  #nextAppend(rootId: string, signal: AbortSignal): Promise<void> {
    let ring = this.#trees.get(rootId);
    if (ring === undefined) {
      // A tail may open before the tree's first entry: give it a ring to wait on.
      ring = new Ring(this.#maxLen);
      this.#trees.set(rootId, ring);
    }
    const target = ring;
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        this.#closing.signal.removeEventListener('abort', done);
        target.waiters.delete(done);
        resolve();
      };
      target.waiters.add(done);
      signal.addEventListener('abort', done, { once: true });
      this.#closing.signal.addEventListener('abort', done, { once: true });
    });
  }
}

function checkAfter(after: string): void {
  if (!isPosition(after)) throw new TypeError(`after must be a log position, got ${JSON.stringify(after)}`);
}

/** A bounded array of one tree's entries with contiguous sequence numbers. */
class Ring {
  readonly #capacity: number;
  #entries: StoredLogRecord[] = [];
  #head = 0;
  /** Sequence of the next entry. */
  #next = 1;
  readonly waiters = new Set<() => void>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#entries.length - this.#head;
  }

  /** The newest position ever appended (trimming removes the oldest, never the newest). */
  get lastPosition(): string {
    return String(this.#next - 1);
  }

  push(record: LogRecord): void {
    const position = String(this.#next);
    const previous = String(this.#next - 1);
    this.#entries.push(Object.freeze({ position, previous, type: record.type, processId: record.processId, data: record.data }));
    this.#next += 1;
    if (this.size > this.#capacity) this.#head += 1;
    // Compact once the dropped prefix is as large as the capacity (amortised O(1)).
    if (this.#head >= this.#capacity) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Up to `limit` entries with a sequence above `sequence`. */
  after(sequence: number, limit: number): StoredLogRecord[] {
    if (this.size === 0) return [];
    const first = this.#next - this.size;
    const start = this.#head + Math.max(0, sequence + 1 - first);
    return this.#entries.slice(start, Math.min(this.#entries.length, start + limit));
  }

  notify(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
