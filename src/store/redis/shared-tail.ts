import { comparePositions } from '../event-log.js';
import { duplicateRedis, isCluster, type RedisClient } from './connection.js';

/**
 * One blocking reader per group of streams, shared by every tail of a node: a single connection
 * issues `XREAD BLOCK … STREAMS k1 k2 … id1 id2 …` over the streams that have subscribers and fans
 * each entry out to every subscriber whose cursor it passes. A node holds one such connection per
 * group however many tails it serves (by default one group: everything), instead of one per tail.
 *
 * - Cursors: each stream is read from one position, its `lastId`, and every live subscriber's cursor
 *   is at or past it; entries at or before a subscriber's cursor are not given to it. A subscriber
 *   that joins behind `lastId` moves the stream's read back to its cursor (the others skip what they
 *   already have), so nobody misses an entry and nobody gets one twice.
 * - Changes while a read blocks: the read is released at once with `CLIENT UNBLOCK` from the normal
 *   connection (the reply is a plain timeout), and reissued over the new set. A release that reached
 *   Redis before the read did is retried until the read returns. BLOCK stays bounded (`blockMs`) as a
 *   backstop, never as the way changes take effect.
 * - Slow subscribers: entries wait in a bounded buffer per subscriber; one that overflows is ended
 *   with the error `overflow` makes (it resumes from its last entry), and never slows the others.
 * - Batches: a subscriber takes everything buffered for it at once ({@link SharedTail.batches}), and
 *   every subscriber of a stream gets the same entry objects, so a node fanning one read out to
 *   thousands of readers does per-entry work once and per-reader work once per read.
 * - Failures: a read that fails ends every subscriber of that group with the error the caller's
 *   `failure` makes of it (they resume from their last entry); the next subscribers read again.
 * - Redis Cluster: a multi-key XREAD may only name keys of one hash slot, so on a cluster client the
 *   default `group(key)` is the key's hash tag (a tree) and each group reads on a duplicate cluster
 *   client of its own (which routes the read to the slot's master). `CLIENT UNBLOCK` would have to
 *   reach that master's connection, so on a cluster a change waits for the bounded BLOCK instead
 *   (default 1000 ms there); a group that wants more trees per connection passes `group` and `connect`.
 */

export interface SharedTailOptions<Entry extends { readonly id: string }> {
  /** The normal connection: sends `CLIENT UNBLOCK` (one server), or is duplicated per group (cluster). */
  readonly redis: RedisClient;
  /** The blocking connection of a group (default: a duplicate of `redis` named `<its name>-tail`). */
  readonly connect?: (group: string) => RedisClient;
  /** Which reader serves a key (default: one for every key; on a cluster, one per hash tag). */
  readonly group?: (key: string) => string;
  /** One stream's entries from an XREAD reply. */
  readonly parse: (raw: unknown) => Entry[];
  /** What a failed read becomes for the subscribers it ends. */
  readonly failure: (error: unknown) => Error;
  /** What ends a subscriber (named by its `label`) that left more than `maxBuffered` entries unread. */
  readonly overflow: (label: string, maxBuffered: number) => Error;
  /** Entries per stream per read (default 100). */
  readonly count?: number;
  /** Longest BLOCK of one read (default 5000 ms, on a cluster 1000 ms); changes release a read before it. */
  readonly blockMs?: number;
  /** Entries a subscriber may leave unread before it is ended (default 10 000, at least `count`). */
  readonly maxBuffered?: number;
}

/** An iteration that has already ended. */
const finished: AsyncIterator<never, void> = {
  next: async () => ({ done: true, value: undefined }),
  return: async () => ({ done: true, value: undefined }),
};

/** The default group of every key on one server. */
const everything = (): string => '';

/** The default group of a key on a cluster: its hash tag (every key of a tree), else the key. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  const close = open < 0 ? -1 : key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

export class SharedTail<Entry extends { readonly id: string }> {
  readonly #options: SharedTailOptions<Entry>;
  readonly #readers = new Map<string, GroupReader<Entry>>();
  #closed = false;

  constructor(options: SharedTailOptions<Entry>) {
    for (const [name, value] of [['count', options.count], ['blockMs', options.blockMs], ['maxBuffered', options.maxBuffered]] as const) {
      if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) throw new TypeError(`${name} must be a positive integer, got ${String(value)}`);
    }
    // One read hands a subscriber up to `count` entries at once, before it can take any.
    if ((options.maxBuffered ?? 10_000) < (options.count ?? 100)) throw new TypeError('maxBuffered must be at least count');
    this.#options = options;
  }

  /** Open tails, for diagnostics and tests. */
  get subscribers(): number {
    let total = 0;
    for (const reader of this.#readers.values()) total += reader.subscribers;
    return total;
  }

  /**
   * Every entry of `key` after `after` (a stream id), until `signal` aborts (the iteration then ends)
   * or the tail closes; a failed read or an overflow throws. `label` names the tail in its errors.
   */
  async *entries(key: string, after: string, signal: AbortSignal, label = key): AsyncGenerator<Entry, void, undefined> {
    for await (const batch of this.batches(key, after, signal, label)) {
      for (const entry of batch) {
        // An abort ends the iteration at once, also in the middle of a batch.
        if (signal.aborted) return;
        yield entry;
      }
    }
  }

  /**
   * The same entries as {@link entries}, as the batches they arrived in: everything that reached this
   * tail since its reader last took some, oldest first (never empty). Every subscriber of a stream
   * gets the same entry objects, so work done once per entry (parsing, encoding) can be shared. The
   * subscription starts when the iteration does, and is its iterator (no generator in between: a
   * node runs this once per read for every subscriber).
   */
  batches(key: string, after: string, signal: AbortSignal, label = key): AsyncIterable<readonly Entry[]> {
    return {
      [Symbol.asyncIterator]: (): AsyncIterator<readonly Entry[], void> => {
        if (this.#closed || signal.aborted) return finished;
        const subscription = this.#readerOf(key).subscribe(key, after, label);
        subscription.endOn(signal);
        return subscription;
      },
    };
  }

  /** Ends every tail, closes the blocking connections, refuses new tails. */
  close(): void {
    this.#closed = true;
    for (const reader of this.#readers.values()) reader.close();
    this.#readers.clear();
  }

  #readerOf(key: string): GroupReader<Entry> {
    const group = (this.#options.group ?? (isCluster(this.#options.redis) ? hashTagOf : everything))(key);
    let reader = this.#readers.get(group);
    if (reader === undefined) {
      const connect = this.#options.connect ?? ((): RedisClient => duplicateForTail(this.#options.redis));
      const created = new GroupReader(this.#options, connect(group), () => {
        if (this.#readers.get(group) === created) this.#readers.delete(group);
      });
      reader = created;
      this.#readers.set(group, reader);
    }
    return reader;
  }
}

/** A duplicate of `redis` for blocking reads, named after it so `CLIENT LIST` tells what it is. */
function duplicateForTail(redis: RedisClient): RedisClient {
  const name = isCluster(redis) ? redis.options.redisOptions?.connectionName : redis.options.connectionName;
  return duplicateRedis(redis, { lazyConnect: false, connectionName: `${name === undefined || name === '' ? 'scope' : name}-tail` });
}

/** The read position of one stream, and the subscribers that follow it. */
interface StreamState<Entry extends { readonly id: string }> {
  lastId: string;
  readonly subscribers: Set<Subscription<Entry>>;
}

/** The one reader (and blocking connection) of a group. */
class GroupReader<Entry extends { readonly id: string }> {
  readonly #options: SharedTailOptions<Entry>;
  readonly #connection: RedisClient;
  /** `CLIENT UNBLOCK` reaches the blocked connection only on one server (see the class comment). */
  readonly #releasable: boolean;
  readonly #blockMs: number;
  readonly #streams = new Map<string, StreamState<Entry>>();
  /** Bumped by every change the blocked read must be released for. */
  #generation = 0;
  /** The read in flight: the generation it was built from. */
  #inFlight: { readonly generation: number } | undefined;
  #clientId: Promise<number> | undefined;
  #releasing = false;
  #wake: (() => void) | undefined;
  #running = false;
  #closed = false;

  constructor(
    options: SharedTailOptions<Entry>,
    connection: RedisClient,
    private readonly onRetired: () => void,
  ) {
    this.#options = options;
    this.#connection = connection;
    this.#releasable = !isCluster(connection) && !isCluster(options.redis);
    this.#blockMs = options.blockMs ?? (this.#releasable ? 5_000 : 1_000);
    // A reconnected socket is another client: its id is asked again.
    connection.on('close', () => {
      this.#clientId = undefined;
    });
    // Errors reach the reads; ioredis reconnects by itself.
    connection.on('error', () => undefined);
  }

  get subscribers(): number {
    let total = 0;
    for (const state of this.#streams.values()) total += state.subscribers.size;
    return total;
  }

  subscribe(key: string, after: string, label: string): Subscription<Entry> {
    const maxBuffered = this.#options.maxBuffered ?? 10_000;
    const subscription = new Subscription<Entry>(key, after, maxBuffered, () => this.#options.overflow(label, maxBuffered), (ended) => this.#unsubscribe(ended));
    const state = this.#streams.get(key);
    if (state === undefined) {
      this.#streams.set(key, { lastId: after, subscribers: new Set([subscription]) });
      this.#changed();
    } else {
      state.subscribers.add(subscription);
      if (comparePositions(after, state.lastId) < 0) {
        state.lastId = after;
        this.#changed();
      }
    }
    if (!this.#running) void this.#run();
    return subscription;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const state of [...this.#streams.values()]) for (const subscription of [...state.subscribers]) subscription.end();
    this.#streams.clear();
    this.#wake?.();
    this.#connection.disconnect();
  }

  #unsubscribe(subscription: Subscription<Entry>): void {
    const state = this.#streams.get(subscription.key);
    if (state === undefined || !state.subscribers.delete(subscription)) return;
    if (state.subscribers.size > 0) return;
    this.#streams.delete(subscription.key);
    // A stream nobody follows may stay in the blocked read until it returns. With no stream left the
    // reader retires (its connection closes, so an idle node holds none and an abandoned log keeps
    // no process alive); the next subscription opens a new one.
    if (this.#streams.size === 0) {
      this.close();
      this.onRetired();
    }
  }

  /** The set or a position changed: wake an idle loop, release a blocked read. */
  #changed(): void {
    this.#generation += 1;
    this.#wake?.();
    void this.#release();
  }

  /** `CLIENT UNBLOCK` until the in-flight read (built before the change) returns. */
  async #release(): Promise<void> {
    if (this.#releasing || !this.#releasable) return;
    this.#releasing = true;
    try {
      for (let pauseMs = 1; !this.#closed && this.#inFlight !== undefined && this.#inFlight.generation < this.#generation; pauseMs = Math.min(pauseMs * 2, 50)) {
        const flight = this.#inFlight;
        const id = await this.#clientId?.catch(() => undefined);
        if (id !== undefined && this.#inFlight === flight) {
          const released = await this.#options.redis.client('UNBLOCK', id).catch(() => 0);
          if (released === 1) return;
        }
        // Not blocked yet (the read is still on its way), already answering, or reconnecting: look again shortly.
        if (this.#inFlight === flight) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      }
    } finally {
      this.#releasing = false;
    }
  }

  async #run(): Promise<void> {
    this.#running = true;
    try {
      while (!this.#closed) {
        if (this.#streams.size === 0) {
          await new Promise<void>((resolve) => {
            this.#wake = resolve;
          });
          this.#wake = undefined;
          continue;
        }
        const keys = [...this.#streams.keys()];
        const ids = keys.map((key) => (this.#streams.get(key) as StreamState<Entry>).lastId);
        const flight = { generation: this.#generation };
        this.#inFlight = flight;
        if (this.#clientId === undefined && this.#releasable) {
          // Asked before the read on the same connection, so it answers before the read blocks.
          const id = this.#connection.client('ID') as Promise<number>;
          id.catch(() => undefined); // a connection closed meanwhile: the release just finds no id
          this.#clientId = id;
        }
        let raw: unknown;
        try {
          raw = await this.#connection.xread('COUNT', this.#options.count ?? 100, 'BLOCK', this.#blockMs, 'STREAMS', ...keys, ...ids);
        } catch (error) {
          this.#inFlight = undefined;
          if (this.#closed) return;
          this.#fail(keys, this.#options.failure(error));
          continue;
        }
        this.#inFlight = undefined;
        this.#dispatch(raw, keys, ids);
      }
    } finally {
      this.#running = false;
    }
  }

  /** Hands each stream's entries to its subscribers, unless its position moved while the read was out. */
  #dispatch(raw: unknown, keys: readonly string[], ids: readonly string[]): void {
    if (!Array.isArray(raw)) return;
    const readFrom = new Map(keys.map((key, index) => [key, ids[index]]));
    for (const item of raw as unknown[]) {
      const [rawKey, rawEntries] = item as [unknown, unknown];
      const key = String(rawKey);
      const state = this.#streams.get(key);
      if (state === undefined || state.lastId !== readFrom.get(key)) continue;
      const entries = this.#options.parse(rawEntries);
      // One pass per subscriber over the whole read, not one offer per entry and subscriber.
      for (const subscription of [...state.subscribers]) subscription.offer(entries);
      const last = entries.at(-1);
      if (last !== undefined) state.lastId = last.id;
    }
  }

  #fail(keys: readonly string[], error: Error): void {
    for (const key of keys) {
      const state = this.#streams.get(key);
      if (state === undefined) continue;
      for (const subscription of [...state.subscribers]) subscription.fail(error);
    }
  }
}

type BatchResult<Entry> = IteratorResult<readonly Entry[], void>;

/**
 * One tail: a bounded buffer of entries past its cursor, read as batches by one iteration (it is its
 * own async iterator): each `next()` takes everything buffered, or waits for the next read.
 */
class Subscription<Entry extends { readonly id: string }> implements AsyncIterator<readonly Entry[], void> {
  #buffer: Entry[] = [];
  #cursor: string;
  #error: Error | undefined;
  #errorTaken = false;
  #ended = false;
  #waiting: { resolve(result: BatchResult<Entry>): void; reject(error: Error): void } | undefined;
  #signal: AbortSignal | undefined;
  readonly #abort = (): void => this.end();

  constructor(
    readonly key: string,
    after: string,
    private readonly maxBuffered: number,
    private readonly overflow: () => Error,
    private readonly onEnd: (subscription: Subscription<Entry>) => void,
  ) {
    this.#cursor = after;
  }

  /** Ends the subscription when `signal` aborts. */
  endOn(signal: AbortSignal): void {
    this.#signal = signal;
    signal.addEventListener('abort', this.#abort, { once: true });
  }

  /**
   * Takes the entries of one read (ascending) that lie past the cursor; ends the subscription, after
   * what it buffered, when the buffer would exceed its bound.
   */
  offer(entries: readonly Entry[]): void {
    if (this.#ended) return;
    // Entries ascend: once one lies past the cursor, every later one does.
    let from = 0;
    while (from < entries.length && comparePositions((entries[from] as Entry).id, this.#cursor) <= 0) from += 1;
    if (from === entries.length) return;
    for (let index = from; index < entries.length; index += 1) {
      if (this.#buffer.length >= this.maxBuffered) {
        this.fail(this.overflow());
        return;
      }
      this.#buffer.push(entries[index] as Entry);
    }
    this.#cursor = (entries[entries.length - 1] as Entry).id;
    this.#wake();
  }

  fail(error: Error): void {
    if (this.#ended) return;
    this.#error = error;
    this.end();
  }

  /** Ends the iteration after what is buffered when failed, at once otherwise (aborted, closed). */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#error === undefined) this.#buffer.length = 0;
    this.#signal?.removeEventListener('abort', this.#abort);
    this.onEnd(this);
    this.#wake();
  }

  /** Everything buffered, as one batch: a reader that falls behind catches up in one step. */
  next(): Promise<BatchResult<Entry>> {
    if (this.#waiting !== undefined) return Promise.reject(new TypeError('a tail is read by one iteration at a time'));
    const ready = this.#take();
    if (ready !== undefined) return ready instanceof Error ? Promise.reject(ready) : Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
    });
  }

  /** The reader stopped: the subscription ends. */
  async return(): Promise<BatchResult<Entry>> {
    this.end();
    return { done: true, value: undefined };
  }

  /** What the next `next()` answers at once: a batch, the failure (once), the end; undefined: wait. */
  #take(): BatchResult<Entry> | Error | undefined {
    if (this.#buffer.length > 0) {
      const batch = this.#buffer;
      this.#buffer = [];
      return { done: false, value: batch };
    }
    if (this.#error !== undefined && !this.#errorTaken) {
      this.#errorTaken = true;
      return this.#error;
    }
    if (this.#ended) return { done: true, value: undefined };
    return undefined;
  }

  #wake(): void {
    const waiting = this.#waiting;
    if (waiting === undefined) return;
    const ready = this.#take();
    if (ready === undefined) return;
    this.#waiting = undefined;
    if (ready instanceof Error) waiting.reject(ready);
    else waiting.resolve(ready);
  }
}
