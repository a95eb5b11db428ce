import { eventNames } from '../kernel/index.js';
import { linkedAbort } from '../kernel/deferred.js';
import { comparePositions, followsDirectly, isPosition, TailOverflowError, type EventLog, type StoredLogRecord } from '../store/event-log.js';
import { invalidRequest } from '../errors.js';
import { CursorAheadError, HistoryTrimmedError } from './errors.js';
import type { LogEntry, LogPage, LogQuery, StreamBatch, StreamEnd, StreamItem, StreamOptions, TreeStream } from './host.js';

/**
 * Reads a tree's log for `/events` (pages) and the SSE stream (history, then the live tail). Both
 * start through {@link LogReader.#start}, the one place that checks a cursor against the log: beyond
 * its newest position is `cursor_ahead`; a cursor whose successors retention trimmed is
 * `history_trimmed`; reading from the beginning (`0`) of a trimmed log just starts at the oldest entry
 * kept. Continuing reads check every entry follows the one before it, so trimmed entries are reported,
 * never skipped. Entries pass through as the canonical text the log holds.
 */

export interface LogReaderOptions {
  readonly log: EventLog;
  /** Whether the tree's root is terminal (the stream then ends once the log is drained). */
  readonly rootFinished: (root: string) => Promise<boolean>;
  /** Waits until the subtree's trailing entries (attempt events, deltas) reached the log. */
  readonly drain: (root: string, signal: AbortSignal) => Promise<void>;
  /** Aborted when the Host shuts down: every stream ends with `shutdown`. */
  readonly shutdown: AbortSignal;
}

const readBatch = 500;
/** Batches a filtered `/events` page may scan before it returns short (with a cursor to continue). */
const pageScanBatches = 20;

type Filter = (record: StoredLogRecord) => boolean;

function filterOf(query: Pick<LogQuery, 'types' | 'processId'>): Filter {
  const types = query.types === undefined || query.types.length === 0 ? undefined : new Set(query.types);
  const processId = query.processId;
  return (record) => (types === undefined || types.has(record.type)) && (processId === undefined || record.processId === processId);
}

function entryOf(record: StoredLogRecord): LogEntry {
  return { position: record.position, type: record.type, processId: record.processId, data: record.data };
}

/**
 * Stream entries by record. The logs hand every tail the same record object for one entry, so every
 * stream of the node gets the same entry object too, and the SSE writer encodes its frame once.
 */
const streamEntries = new WeakMap<StoredLogRecord, LogEntry>();

function streamEntryOf(record: StoredLogRecord): LogEntry {
  let entry = streamEntries.get(record);
  if (entry === undefined) {
    entry = Object.freeze(entryOf(record));
    streamEntries.set(record, entry);
  }
  return entry;
}

/** What one batch of records gives a stream: its matching entries, up to an error the batch met. */
class BatchBuilder {
  readonly entries: LogEntry[] = [];
  failure: unknown;

  constructor(
    private readonly continuity: Continuity,
    private readonly matches: Filter,
  ) {}

  /** Follows `record` and keeps it when it matches; false (the failure kept) when trimmed entries precede it. */
  add(record: StoredLogRecord): boolean {
    try {
      this.continuity.follow(record);
    } catch (error) {
      this.failure = error;
      return false;
    }
    if (this.matches(record)) this.entries.push(streamEntryOf(record));
    return true;
  }
}

/** Whether a cursor means "from the beginning" (`0`, or `0-0`): the oldest entry the log still holds. */
function isLogStart(position: string): boolean {
  return comparePositions(position, '0') === 0;
}

/**
 * Continuity from a cursor: each record must directly follow the last one read, except that a read
 * from the beginning may start at the oldest retained entry.
 */
class Continuity {
  #cursor: string;
  #fromStart: boolean;

  constructor(
    readonly root: string,
    cursor: string,
  ) {
    this.#cursor = cursor;
    this.#fromStart = isLogStart(cursor);
  }

  get cursor(): string {
    return this.#cursor;
  }

  /** Whether `record` continues the read (no trimmed entries in between). */
  continues(record: StoredLogRecord): boolean {
    return this.#fromStart || followsDirectly(record, this.#cursor);
  }

  /** Advances past `record`, or throws `history_trimmed` when entries before it were trimmed. */
  follow(record: StoredLogRecord): void {
    if (!this.continues(record)) throw new HistoryTrimmedError(this.root, this.#cursor, record.position);
    this.#cursor = record.position;
    this.#fromStart = false;
  }
}

export class LogReader {
  readonly #log: EventLog;
  readonly #rootFinished: LogReaderOptions['rootFinished'];
  readonly #drain: LogReaderOptions['drain'];
  readonly #shutdown: AbortSignal;

  constructor(options: LogReaderOptions) {
    this.#log = options.log;
    this.#rootFinished = options.rootFinished;
    this.#drain = options.drain;
    this.#shutdown = options.shutdown;
  }

  /**
   * The checks every read starts with, and its first batch: the cursor parses, is not beyond the log's
   * newest position, and the log still holds what directly follows it (or the read starts at the
   * beginning, where `trimmedStart` then names the oldest entry kept).
   */
  async #start(root: string, after: string): Promise<{ first: StoredLogRecord[]; trimmedStart: string | undefined }> {
    if (!isPosition(after)) throw invalidRequest('a log cursor (after, Last-Event-ID) must be a log position: a decimal number or <n>-<m>');
    const last = await this.#log.lastPosition(root);
    if (comparePositions(after, last) > 0) throw new CursorAheadError(root, after, last);
    const first = await this.#log.readAfter(root, after, readBatch);
    const head = first[0];
    if (head === undefined || followsDirectly(head, after)) return { first, trimmedStart: undefined };
    if (!isLogStart(after)) throw new HistoryTrimmedError(root, after, head.position);
    return { first, trimmedStart: head.position };
  }

  /** A page of `/events`: a selective filter may return a short (even empty) page with a cursor to continue. */
  async page(root: string, query: LogQuery & { readonly limit: number }): Promise<LogPage> {
    const after = query.after ?? '0';
    const matches = filterOf(query);
    const { first, trimmedStart } = await this.#start(root, after);
    const trimmed = trimmedStart === undefined ? {} : { trimmed: { firstAvailable: trimmedStart } };
    const continuity = new Continuity(root, after);
    const items: LogEntry[] = [];
    let batch = first;
    for (let scanned = 1; ; scanned += 1) {
      for (const record of batch) {
        // Trimmed entries inside the page: it ends before them, and the next page is the 410.
        if (!continuity.continues(record)) return { items, nextCursor: continuity.cursor, ...trimmed };
        continuity.follow(record);
        if (!matches(record)) continue;
        items.push(entryOf(record));
        if (items.length === query.limit) return { items, nextCursor: continuity.cursor, ...trimmed };
      }
      if (batch.length < readBatch) return { items, nextCursor: null, ...trimmed };
      if (scanned === pageScanBatches) return { items, nextCursor: continuity.cursor, ...trimmed };
      batch = await this.#log.readAfter(root, continuity.cursor, readBatch);
    }
  }

  /** The stream of a tree from `options.after` (the existence of the tree is the caller's check). */
  async open(root: string, options: StreamOptions): Promise<TreeStream> {
    const after = options.after ?? '0';
    const { first, trimmedStart } = await this.#start(root, after);
    return new LogStream(this, root, after, first, trimmedStart, filterOf(options), options.signal);
  }

  /**
   * @internal The stream's body (see {@link LogStream}), as batches: each read of history, each
   * delivery of the live tail, is one batch of the entries that match. Entries before a trimmed gap are
   * yielded before the `history_trimmed` error, as an entry-by-entry read would have delivered them.
   */
  async *batches(
    root: string,
    after: string,
    first: StoredLogRecord[],
    matches: Filter,
    signal: AbortSignal,
  ): AsyncGenerator<StreamBatch, StreamEnd, undefined> {
    // Linked to the Host's shutdown only while the stream lives (see linkedAbort, kernel/deferred.ts).
    const link = linkedAbort([signal, this.#shutdown]);
    try {
      return yield* this.#batches(root, after, first, matches, link.signal);
    } finally {
      link.release();
    }
  }

  async *#batches(
    root: string,
    after: string,
    first: StoredLogRecord[],
    matches: Filter,
    stop: AbortSignal,
  ): AsyncGenerator<StreamBatch, StreamEnd, undefined> {
    const why = (): StreamEnd => (this.#shutdown.aborted ? 'shutdown' : 'aborted');
    const continuity = new Continuity(root, after);
    const isRootFinish = (record: StoredLogRecord): boolean => record.type === eventNames.processFinished && record.processId === root;
    let ended = false;

    /** The batch `records` give (up to the root's finish when `untilFinish`), and the gap met, if any. */
    const collect = (records: readonly StoredLogRecord[], live: boolean, untilFinish: boolean): { batch: StreamBatch | undefined; failure: unknown } => {
      const builder = new BatchBuilder(continuity, matches);
      for (const record of records) {
        if (!builder.add(record)) break;
        if (isRootFinish(record)) {
          ended = true;
          if (untilFinish) break;
        }
      }
      return { batch: builder.entries.length > 0 ? { entries: builder.entries, live } : undefined, failure: builder.failure };
    };

    // 1. What the log holds after the cursor, at the reader's pace.
    for (let batch = first; ; ) {
      const { batch: delivered, failure } = collect(batch, false, false);
      if (delivered !== undefined) yield delivered;
      if (failure !== undefined) throw failure;
      if (stop.aborted) return why();
      if (batch.length < readBatch) break;
      batch = await this.#log.readAfter(root, continuity.cursor, readBatch);
    }
    // 2. Live entries, unless the root already finished (its terminal event may lie before the cursor).
    if (!ended && !(await this.#rootFinished(root))) {
      try {
        for await (const records of this.#log.tailBatches(root, continuity.cursor, stop)) {
          const { batch: delivered, failure } = collect(records, true, true);
          if (delivered !== undefined) yield delivered;
          if (failure !== undefined) throw failure;
          if (ended) break;
        }
      } catch (error) {
        // The shared tail ended this reader only: it resumes from its last position.
        if (error instanceof TailOverflowError) return 'lagging';
        throw error;
      }
      // The tail ends without the root's end only when stopped (or the log closed: the Host is closing).
      if (!ended) return stop.aborted ? why() : 'shutdown';
    }
    // 3. Drain: the subtree's trailing entries (attempt events after the terminal commit, deltas).
    if (stop.aborted) return why();
    await this.#drain(root, stop).catch(() => undefined);
    for (;;) {
      if (stop.aborted) return why();
      const batch = await this.#log.readAfter(root, continuity.cursor, readBatch);
      const { batch: delivered, failure } = collect(batch, true, false);
      if (delivered !== undefined) yield delivered;
      if (failure !== undefined) throw failure;
      if (stop.aborted) return why();
      if (batch.length < readBatch) return 'completed';
    }
  }
}

/** One stream: iterable once; `end` is set when the iteration finished. */
class LogStream implements TreeStream {
  #end: StreamEnd | undefined;
  #iterated = false;

  constructor(
    private readonly reader: LogReader,
    private readonly root: string,
    private readonly after: string,
    private readonly first: StoredLogRecord[],
    readonly trimmedStart: string | undefined,
    private readonly matches: Filter,
    private readonly signal: AbortSignal,
  ) {}

  get end(): StreamEnd | undefined {
    return this.#end;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<StreamItem, void, undefined> {
    for await (const { entries, live } of this.batches()) {
      for (const entry of entries) {
        // An abort ends the iteration at once, also in the middle of a batch.
        if (this.signal.aborted) return;
        yield { entry, live };
      }
    }
  }

  /** The body's batches, through a hand-written iterator that records how the body ended. */
  batches(): AsyncIterable<StreamBatch> {
    if (this.#iterated) throw new TypeError('a tree stream is iterated once');
    this.#iterated = true;
    const body = this.reader.batches(this.root, this.after, this.first, this.matches, this.signal);
    const ended = (end: StreamEnd): void => {
      this.#end ??= end;
    };
    const iterator: AsyncIterator<StreamBatch, void> = {
      next: async () => {
        let next: IteratorResult<StreamBatch, StreamEnd>;
        try {
          next = await body.next();
        } catch (error) {
          ended('aborted');
          throw error;
        }
        if (next.done !== true) return next;
        ended(next.value);
        return { done: true, value: undefined };
      },
      // The consumer stopped early: end the body too (it closes its tail).
      return: async () => {
        ended('aborted');
        void body.return('aborted').catch(() => undefined);
        return { done: true, value: undefined };
      },
    };
    return { [Symbol.asyncIterator]: () => iterator };
  }
}
