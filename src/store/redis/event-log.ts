import { corked, type RedisClient } from './connection.js';
import type { ProcessId } from '../../kernel/index.js';
import { linkedAbort, type LinkedAbort } from '../../kernel/deferred.js';
import { sharedAbortController } from '../shared-abort.js';
import { deltaType, TailOverflowError, type EventLog, type LogRecord, type StoredLogRecord } from '../event-log.js';
import { committerUnavailable, StorageDeadlines } from './errors.js';
import { checkKeyPrefix, defaultKeyPrefix, eventsKey, headKey } from './keys.js';
import { LogRefs } from './log-refs.js';
import { runScript } from './scripts.js';
import { SharedTail, type SharedTailOptions } from './shared-tail.js';
import { checkStreamId, deltaField, entriesOf, type EventLogEntry, eventEntryFields, recordShapeOf } from './log-entry.js';

/**
 * The event log of each tree: a Redis Stream (`<prefix>:{<root>}:events`) trimmed with an
 * approximate MAXLEN, the one Redis implementation of the server's {@link EventLog}.
 *
 * - Committed entries are written only inside a commit, through its `RedisCommitContext`
 *   (host-writes.ts: the kernel's committed Events plus host entries), so they never disagree with
 *   the head: such an entry exists exactly when the commit that carried it was installed.
 * - Best-effort entries (attempt events, deltas: no committed fact) are appended with
 *   {@link RedisEventLog.append} (lua/appendLog-1.lua), issued on the commits' own client so an
 *   attempt event published before a commit is also ordered before that commit's entries — or carried
 *   by the tree's next commit script itself, ahead of its own entries ({@link RedisEventLog.takeUnsent}).
 * - Entries hold string fields: a kernel Event is `{name, event: <canonical JSON>}`, a Delta
 *   `{name: "agent.delta", delta: <canonical JSON>}`, other host entries are opaque. Ids are Redis
 *   stream ids (`<ms>-<seq>`), the positions clients resume from (SSE `Last-Event-ID`).
 *
 * Raw entries (every field) are read with {@link RedisEventLog.entriesAfter} and
 * {@link RedisEventLog.tailEntries}; the server reads records ({@link StoredLogRecord}: type,
 * process, data, link) with `readAfter` and `tail`, which skip entries of no known shape.
 */

/** Entries of one coalesced append script: bounds one script's run (Redis serves nothing else meanwhile). */
const maxEntriesPerAppend = 100;

export interface EventLogOptions {
  readonly redis: RedisClient;
  /** Default `scope`. */
  readonly keyPrefix?: string;
  /** Deadline of each non-blocking read; default 5000 ms. */
  readonly timeoutMs?: number;
  /** Host shutdown: rejects reads and ends every tail. */
  readonly shutdown?: AbortSignal;
  /** Approximate MAXLEN of best-effort appends (default 10 000, as the commits'). */
  readonly maxLen?: number;
  /** Called with each failed best-effort append and the number of entries it lost. */
  readonly onAppendError?: (error: unknown, lost: number) => void;
  /**
   * Best-effort appends wait for the end of the event loop turn (setImmediate) and leave as one
   * script per tree: a Step's attempt events and an attempt's deltas are one command, not one each.
   * Whoever issues other commands on the same client must call {@link RedisEventLog.flush} first,
   * so that an append still precedes what follows it (the tree committer does, before each commit).
   * Default false: each append is issued at once.
   */
  readonly coalesceAppends?: boolean;
  /**
   * With `coalesceAppends`, how long appends wait (ms) instead of the end of the turn, so that the
   * tree's next commit usually carries them: a quick effect's attempt events then cost no script of
   * their own, and no command of this node's meets a worker's claim in Redis. A read through this log
   * (a page, a length, opening a tail) sends them first; a tail already open (an SSE stream, on this
   * node or another) sees them up to this much later, and a crash in between loses them (best-effort
   * entries may show gaps). Default 0: end of turn.
   */
  readonly appendDelayMs?: number;
  /** The shared tail's reads: entries per read, longest BLOCK, entries a tail may leave unread; its grouping (Redis Cluster). */
  readonly tail?: Pick<SharedTailOptions<EventLogEntry>, 'count' | 'blockMs' | 'maxBuffered' | 'group' | 'connect'>;
}

export interface TailOptions {
  /** Ends the iteration (without an error) when aborted. */
  readonly signal?: AbortSignal;
}

/** The per-tree event logs: committed entries written by the commits, best-effort ones appended here. */
export class RedisEventLog implements EventLog {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #deadlines: StorageDeadlines;
  readonly #shutdown: AbortSignal | undefined;
  readonly #maxLen: string;
  readonly #onAppendError: ((error: unknown, lost: number) => void) | undefined;
  readonly #tail: SharedTail<EventLogEntry>;
  readonly #closing = sharedAbortController();
  readonly #coalesce: boolean;
  /** Coalesced appends not issued yet, per tree in arrival order (see `coalesceAppends`). */
  #unsent = new Map<string, LogRecord[]>();
  /** Other best-effort writes riding with the next flush ({@link RedisEventLog.alongside}). */
  #riders: (() => void)[] = [];
  readonly #appendDelayMs: number;
  /** The pending end-of-turn or delayed flush (see `appendDelayMs`). */
  #flushTimer: NodeJS.Immediate | NodeJS.Timeout | undefined;
  #failed = 0;
  #closed = false;
  /** The deployment refs in the heads of the trees this log writes and reads (log-refs.ts). */
  readonly refs = new LogRefs();

  constructor(options: EventLogOptions) {
    this.#redis = options.redis;
    this.#prefix = checkKeyPrefix(options.keyPrefix ?? defaultKeyPrefix);
    this.#deadlines = new StorageDeadlines(options.timeoutMs ?? 5_000, options.shutdown);
    this.#shutdown = options.shutdown;
    const maxLen = options.maxLen ?? 10_000;
    if (!Number.isSafeInteger(maxLen) || maxLen < 1) throw new TypeError(`maxLen must be a positive safe integer, got ${String(maxLen)}`);
    this.#maxLen = String(maxLen);
    this.#onAppendError = options.onAppendError;
    this.#coalesce = options.coalesceAppends === true;
    const delay = options.appendDelayMs ?? 0;
    if (!Number.isSafeInteger(delay) || delay < 0) throw new TypeError(`appendDelayMs must be a non-negative integer, got ${String(delay)}`);
    this.#appendDelayMs = delay;
    this.#tail = new SharedTail<EventLogEntry>({
      ...options.tail,
      redis: this.#redis,
      parse: entriesOf,
      failure: (error) => committerUnavailable('event log tail', `redis failed: ${(error as Error).message}`, error),
      overflow: (rootId, maxBuffered) => new TailOverflowError(rootId, maxBuffered),
    });
  }

  /** Entries lost by best-effort appends (storage errors). */
  get failedAppends(): number {
    return this.#failed;
  }

  /**
   * Best-effort append of attempt events and deltas, each linked to the entry before it. Issued
   * synchronously on the shared client (so ordered with the commits issued after it), or, when
   * coalescing, at the end of this turn (or `appendDelayMs` later) or at the next
   * {@link RedisEventLog.flush}, whichever comes first; never awaited. A failure loses the entries and is counted.
   */
  append(rootId: string, records: readonly LogRecord[]): void {
    if (this.#closed || records.length === 0) return;
    if (!this.#coalesce) {
      this.#send(rootId, records);
      return;
    }
    const unsent = this.#unsent.get(rootId);
    if (unsent === undefined) this.#unsent.set(rootId, [...records]);
    else unsent.push(...records);
    this.#scheduleFlush();
  }

  /**
   * Runs `send` — another best-effort write on the same client (a record of who ran an attempt) —
   * with the next flush, so its command leaves in the same write to Redis as the appends (and, before
   * a commit, as the commit) instead of alone. Without coalescing it runs at once. `send` must not
   * throw; it runs at most one event-loop turn (or `appendDelayMs`) later.
   */
  alongside(send: () => void): void {
    if (this.#closed) return;
    if (!this.#coalesce) {
      send();
      return;
    }
    this.#riders.push(send);
    this.#scheduleFlush();
  }

  /**
   * Takes the tree's coalesced appends out of the queue for a commit script to carry ahead of its own
   * entries (same order, same link to the entry before; one script instead of two): all of them when
   * there are at most `max`, none otherwise. The caller returns what its commit did not write with
   * {@link RedisEventLog.resend} or {@link RedisEventLog.lost}.
   */
  takeUnsent(rootId: string, max: number): readonly LogRecord[] {
    const unsent = this.#unsent.get(rootId);
    if (unsent === undefined || unsent.length > max) return [];
    this.#unsent.delete(rootId);
    return unsent;
  }

  /** Appends at once entries a commit was to carry but did not write (it was refused). */
  resend(rootId: string, records: readonly LogRecord[]): void {
    if (this.#closed || records.length === 0) return;
    this.#sendAll(rootId, records);
  }

  /** Counts entries a commit carried whose fate is unknown (the commit's reply was lost) as lost. */
  lost(error: unknown, count: number): void {
    if (count === 0) return;
    this.#failed += count;
    this.#onAppendError?.(error, count);
  }

  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined) return;
    if (this.#appendDelayMs === 0) {
      this.#flushTimer = setImmediate(() => this.flush());
    } else {
      // Unreferenced: waiting entries never keep a process alive (close() flushes them).
      this.#flushTimer = setTimeout(() => this.flush(), this.#appendDelayMs).unref();
    }
  }

  /**
   * Issues every coalesced append now, one script per tree (at most {@link maxEntriesPerAppend}
   * entries each). Synchronous: a command issued after it on the same client reaches Redis after
   * these entries.
   */
  flush(): void {
    if (this.#flushTimer !== undefined) {
      // An earlier flush (before a commit, a read) leaves the timer nothing to do: drop it.
      if (this.#appendDelayMs === 0) clearImmediate(this.#flushTimer as NodeJS.Immediate);
      else clearTimeout(this.#flushTimer as NodeJS.Timeout);
      this.#flushTimer = undefined;
    }
    if (this.#unsent.size === 0 && this.#riders.length === 0) return;
    const unsent = this.#unsent;
    const riders = this.#riders;
    this.#unsent = new Map();
    this.#riders = [];
    corked(this.#redis, () => {
      for (const [rootId, records] of unsent) this.#sendAll(rootId, records);
      for (const send of riders) send();
    });
  }

  /** One appendLog script per {@link maxEntriesPerAppend} entries, in order. */
  #sendAll(rootId: string, records: readonly LogRecord[]): void {
    for (let start = 0; start < records.length; start += maxEntriesPerAppend) this.#send(rootId, records.slice(start, start + maxEntriesPerAppend));
  }

  #send(rootId: string, records: readonly LogRecord[]): void {
    // The entry layout is log-entry.ts's logEntryFields, as a commit script carrying them writes it.
    // An Event whose ref a commit acknowledged here has defined is stored cut (log-refs.ts): `ref <id>`
    // rides between the name and the data, which appendLog writes as given.
    const cut = this.refs.cut(headKey(this.#prefix, rootId), false);
    const args: string[] = [this.#maxLen];
    for (const record of records) {
      if (record.type === deltaType) {
        args.push('2', record.type, deltaField, record.data);
        continue;
      }
      const fields = cut.fields({ [eventEntryFields.name]: record.type, [eventEntryFields.event]: record.data });
      const pairs = Object.entries(fields).slice(1);
      args.push(String(pairs.length + 1), record.type, ...pairs.flat());
    }
    runScript(this.#redis, 'appendLog', [eventsKey(this.#prefix, rootId)], args).then(
      (reply) => {
        if (typeof reply !== 'string') throw committerUnavailable('event log append', `unexpected reply ${JSON.stringify(reply)}`);
      },
    ).catch((error: unknown) => {
      this.#failed += records.length;
      this.#onAppendError?.(error, records.length);
    });
  }

  /** Tails open on this log (diagnostics, tests). */
  get tailCount(): number {
    return this.#tail.subscribers;
  }

  /** Up to `limit` records strictly after `after`, oldest first (entries of no known shape skipped). */
  async readAfter(rootId: string, after: string, limit: number): Promise<StoredLogRecord[]> {
    const links = new Links();
    return (await this.entriesAfter(rootId, after, limit)).flatMap((entry) => links.recordOf(entry));
  }

  /** Every record after `after` as it is appended, until `signal` aborts or the log closes. */
  async *tail(rootId: string, after: string, signal: AbortSignal): AsyncGenerator<StoredLogRecord, void, undefined> {
    for await (const batch of this.tailBatches(rootId, after, signal)) {
      for (const record of batch) {
        // An abort ends the iteration at once, also in the middle of a batch.
        if (signal.aborted) return;
        yield record;
      }
    }
  }

  /**
   * The records of {@link tail} in the batches the shared tail delivered them (never empty). A record
   * is one object per entry for every tail of this log, so per-entry work downstream can be cached.
   * Mapped by hand over the shared tail's own iterator: a node runs this once per read for every tail.
   */
  tailBatches(rootId: string, after: string, signal: AbortSignal): AsyncIterable<readonly StoredLogRecord[]> {
    return { [Symbol.asyncIterator]: () => new RecordBatches(() => this.#openTail(rootId, after, signal)) };
  }

  async lastPosition(rootId: string): Promise<string> {
    this.flush();
    const key = eventsKey(this.#prefix, rootId);
    const raw = await this.#deadlines.run('event log head', () => this.#redis.xrevrange(key, '+', '-', 'COUNT', 1));
    return entriesOf(raw)[0]?.id ?? '0';
  }

  /** Up to `count` raw entries strictly after `afterId` (`0` = from the start), oldest first. */
  async entriesAfter(rootId: ProcessId | string, afterId = '0', count = 100): Promise<EventLogEntry[]> {
    checkStreamId(afterId, 'afterId');
    if (!Number.isSafeInteger(count) || count < 1) throw new TypeError(`count must be a positive integer, got ${String(count)}`);
    const key = eventsKey(this.#prefix, rootId);
    this.flush();
    const raw = await this.#deadlines.run('event log read', () => this.#redis.xrange(key, `(${afterId}`, '+', 'COUNT', count));
    return this.#restored(String(rootId), entriesOf(raw));
  }

  /** The entries with each Event's deployment ref put back (log-refs.ts); one whose ref is not found stays as stored. */
  async #restored(rootId: string, entries: EventLogEntry[]): Promise<EventLogEntry[]> {
    await this.refs.resolve(this.#redis, headKey(this.#prefix, rootId), entries, (run) => this.#deadlines.run('event log refs', run));
    return entries.map((entry) => this.refs.restore(entry));
  }

  /** The number of entries the log holds now (after trimming). */
  async length(rootId: ProcessId | string): Promise<number> {
    this.flush();
    return this.#deadlines.run('event log length', () => this.#redis.xlen(eventsKey(this.#prefix, rootId)));
  }

  /**
   * Every entry after `afterId` (`$` = only entries appended from now on), as they are committed:
   * one subscription to the node's shared tail ({@link SharedTail}: one blocking connection for every
   * tail), until `signal` (or the log's shutdown or `close()`) ends the iteration. A failed read ends
   * it with `committer_unavailable`, a reader that leaves too many entries unread with
   * {@link TailOverflowError}; resume from the last id seen.
   */
  async *tailEntries(rootId: ProcessId | string, afterId = '$', options: TailOptions = {}): AsyncGenerator<EventLogEntry, void, undefined> {
    const batches = await this.#openTail(rootId, afterId, options.signal);
    if (batches === undefined) return;
    for await (const batch of batches) {
      for (const entry of batch) {
        // An abort ends the iteration at once, also in the middle of a batch.
        if (options.signal?.aborted === true) return;
        yield entry;
      }
    }
  }

  /**
   * The shared tail's batches of `rootId` after `afterId` (`$` pinned to the current last id first),
   * ending with `signal`, the log's shutdown or `close()`; undefined when already ended.
   */
  async #openTail(rootId: ProcessId | string, afterId: string, signal: AbortSignal | undefined): Promise<AsyncIterable<readonly EventLogEntry[]> | undefined> {
    if (afterId !== '$') checkStreamId(afterId, 'afterId');
    if (this.#closed) throw committerUnavailable('event log tail', 'the event log is closed');
    this.flush();
    const key = eventsKey(this.#prefix, rootId);
    const signals = [signal, this.#shutdown, this.#closing.signal].filter((candidate): candidate is AbortSignal => candidate !== undefined);
    // Linked to the log's shutdown only while the tail lives (see linkedAbort, kernel/deferred.ts).
    const link = linkedAbort(signals);
    const stop = link.signal;
    if (stop.aborted) return undefined;
    let lastId = afterId;
    if (lastId === '$') {
      // Pin '$' to the current last id: whatever is appended from here on reaches the subscription.
      try {
        lastId = await this.lastPosition(String(rootId));
      } catch (error) {
        link.release();
        if (stop.aborted) return undefined;
        throw error;
      }
    }
    return restoring(releasing(this.#tail.batches(key, lastId, stop, String(rootId)), link), (entries) => this.#restored(String(rootId), [...entries]));
  }

  /** Ends every tail and refuses new ones. The shared client is the caller's to close. */
  async close(): Promise<void> {
    this.flush();
    this.#closed = true;
    this.#closing.abort();
    this.#tail.close();
  }
}

/**
 * The record batches of one tail: the shared tail's entry batches (opened on the first `next()`),
 * each turned into records, batches with no record of known shape skipped.
 */
/** `iterable`, releasing `link` once an iteration of it ends (done, returned or thrown). */
function releasing<T>(iterable: AsyncIterable<T>, link: LinkedAbort): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const inner = iterable[Symbol.asyncIterator]();
      return {
        async next(): Promise<IteratorResult<T>> {
          try {
            const result = await inner.next();
            if (result.done === true) link.release();
            return result;
          } catch (error) {
            link.release();
            throw error;
          }
        },
        async return(value?: unknown): Promise<IteratorResult<T>> {
          link.release();
          return (await inner.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}

/** `iterable` with each batch mapped by `restore` (which a failure of ends the iteration). */
function restoring<T>(iterable: AsyncIterable<readonly T[]>, restore: (batch: readonly T[]) => Promise<readonly T[]>): AsyncIterable<readonly T[]> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<readonly T[]> {
      const inner = iterable[Symbol.asyncIterator]();
      return {
        async next(): Promise<IteratorResult<readonly T[]>> {
          const result = await inner.next();
          if (result.done === true) return result;
          try {
            return { done: false, value: await restore(result.value) };
          } catch (error) {
            await inner.return?.();
            throw error;
          }
        },
        async return(value?: unknown): Promise<IteratorResult<readonly T[]>> {
          return (await inner.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}

class RecordBatches implements AsyncIterator<readonly StoredLogRecord[], void> {
  readonly #links = new Links();
  readonly #open: () => Promise<AsyncIterable<readonly EventLogEntry[]> | undefined>;
  #entries: AsyncIterator<readonly EventLogEntry[], void> | undefined;
  #opening: Promise<AsyncIterator<readonly EventLogEntry[], void> | undefined> | undefined;
  #done = false;

  constructor(open: () => Promise<AsyncIterable<readonly EventLogEntry[]> | undefined>) {
    this.#open = open;
  }

  async next(): Promise<IteratorResult<readonly StoredLogRecord[], void>> {
    if (this.#done) return { done: true, value: undefined };
    this.#opening ??= this.#open().then((iterable) => iterable?.[Symbol.asyncIterator]());
    this.#entries ??= await this.#opening;
    const entries = this.#entries;
    if (entries === undefined) return this.#finish();
    // Returned while the tail was being opened: it ends here.
    if (this.#done) {
      await entries.return?.();
      return this.#finish();
    }
    for (;;) {
      const result = await entries.next();
      if (result.done === true) return this.#finish();
      const records = this.#links.recordsOf(result.value);
      if (records.length > 0) return { done: false, value: records };
    }
  }

  async return(): Promise<IteratorResult<readonly StoredLogRecord[], void>> {
    this.#done = true;
    const entries = this.#entries ?? (await this.#opening?.catch(() => undefined));
    await entries?.return?.();
    return { done: true, value: undefined };
  }

  #finish(): IteratorResult<readonly StoredLogRecord[], void> {
    this.#done = true;
    return { done: true, value: undefined };
  }
}

/**
 * Turns consecutive raw entries into records. Entries of no known shape are skipped; the record after
 * a skipped run inherits the run's own `previous`, so skipping is never mistaken for a trimmed gap.
 */
class Links {
  /** The `previous` of the first entry of the current skipped run, if any. */
  #skipped: { previous: string | undefined } | undefined;

  recordOf(entry: EventLogEntry): StoredLogRecord[] {
    const record = recordShapeOf(entry);
    if (record === undefined) {
      this.#skipped ??= { previous: entry.previous };
      return [];
    }
    const skipped = this.#skipped;
    this.#skipped = undefined;
    // Only a record after a skipped run needs a link of its own; every other is the entry's shared record.
    if (skipped === undefined || skipped.previous === entry.previous) return [record];
    const unlinked: StoredLogRecord = { position: record.position, type: record.type, processId: record.processId, data: record.data };
    return [Object.freeze(skipped.previous === undefined ? unlinked : { ...unlinked, previous: skipped.previous })];
  }

  recordsOf(entries: readonly EventLogEntry[]): StoredLogRecord[] {
    const records: StoredLogRecord[] = [];
    for (const entry of entries) records.push(...this.recordOf(entry));
    return records;
  }
}
