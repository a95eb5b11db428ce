import type { Redis } from 'ioredis';
import { ErrorCode, KernelError } from '../../kernel/errors.js';
import type { ProcessId } from '../../kernel/identity.js';
import { checkTimeoutMs, committerUnavailable, StorageDeadlines } from './errors.js';
import { checkKeyPrefix, checkRecordSuffix, defaultKeyPrefix, eventsKey, recordKey } from './keys.js';

/**
 * The durable event log of each tree: a Redis Stream (`<prefix>:{<root>}:events`) trimmed with an
 * approximate MAXLEN. Entries are written only inside a commit, through its
 * {@link RedisCommitContext} (the kernel's committed Events plus host entries), so the log never
 * disagrees with the head: an entry exists exactly when the commit that carried it was installed.
 * Entries hold string fields — a kernel Event is `{name, event: <canonical JSON>}`, host entries
 * are opaque; their ids are Redis stream ids (`<ms>-<seq>`), usable as SSE `Last-Event-ID`.
 */

/** The fields of one event-log entry, in insertion order (at least one). */
export type EventLogFields = Readonly<Record<string, string>>;

/** One entry read back from the log. */
export interface EventLogEntry {
  readonly id: string;
  /** The entry's own fields ({@link previousEntryField} is not among them). */
  readonly fields: EventLogFields;
  /**
   * The id of the entry appended just before this one (`0` for the first of the stream), recorded by
   * the script that appended it; absent on entries written before it was recorded. Trimming removes the
   * oldest entries, so an entry whose `previous` lies after a reader's last id follows trimmed entries.
   */
  readonly previous?: string;
}

/**
 * The field every append adds last to an entry: the id of the stream's last entry when it was appended
 * (`0` for none). Redis's approximate MAXLEN trims whole nodes at unpredictable points and keeps no
 * trace of what it removed (XINFO's `max-deleted-entry-id` only follows XDEL), so each entry carries
 * its own link: a read after an id can tell, from its first entry alone, whether entries in between were
 * trimmed. Reserved: host entries may not use this field name. Readers take it out of `fields`.
 */
export const previousEntryField = 'scope.prev';

/** A host idempotency record, stored at `<prefix>:{<root>}:record:<suffix>`. */
export interface IdempotencyRecord {
  /** 1–256 printable ASCII characters, no spaces. */
  readonly suffix: string;
  readonly value: string;
  /** Expiry in milliseconds; absent = no expiry (the record then outlives a purge). */
  readonly ttlMs?: number;
}

/** The fields of the log entry a kernel Event becomes: its name and its canonical JSON. */
export const eventEntryFields = { name: 'name', event: 'event' } as const;

/** What the store needs of a kernel Event (`CommitContext.events`). */
export interface LoggedEvent {
  readonly name: string;
  json(): string;
}

/**
 * Writes a host adds to one commit, beside the kernel's {@link RedisCommitContext.events}: passed
 * directly (`store.commit(commit, { entries, records })`, a wrapper around the store) or through
 * the Engine as `hostValues[hostWritesValueKey]`.
 */
export interface HostWriteSet {
  /** Extra log entries, appended after the context's kernel events. */
  readonly entries?: readonly EventLogFields[];
  /** Idempotency records. */
  readonly records?: readonly IdempotencyRecord[];
}

/**
 * The second argument of every commit: the kernel's `CommitContext` (the committed-phase Events the
 * Engine publishes once the commit is acknowledged) widened with the host's {@link HostWriteSet}.
 * The commit's script applies all of it **only when its compare-and-swap installs a new head**
 * (reply status 1), in the same atomic step:
 * 1. each kernel Event, in order, then each host entry (direct ones, then those in `hostValues`):
 *    `XADD <events> MAXLEN ~ <eventLogMaxLen> * field value … scope.prev <previous id>` — a kernel Event
 *    becomes `name <event name> event <canonical Event JSON>`; {@link previousEntryField} links each
 *    entry to the one before it;
 * 2. each record, in order: `SET <record key> <value>` (`PX <ttlMs>` when given), overwriting any
 *    previous value.
 * A conflict applies none of it. An identical retry acknowledged as a duplicate (status 2) applies
 * none of it either: the original commit already applied its own writes, so a host must build the
 * same writes for the same commit (or accept that only the first ones count). All arguments are
 * checked before anything is written.
 */
export interface RedisCommitContext extends HostWriteSet {
  readonly events?: readonly LoggedEvent[];
  /**
   * The kernel's host values (`StartOptions.hostValues` reach the start checkpoint this way). A
   * {@link HostWriteSet} under {@link hostWritesValueKey} is applied like `entries` and `records`
   * (after them); every other value is ignored.
   */
  readonly hostValues?: Readonly<Record<string, unknown>>;
}

/** The `hostValues` member that carries a {@link HostWriteSet} through the Engine to this store. */
export const hostWritesValueKey = 'scope.redis.hostWrites';

/** Upper bounds that keep one commit's write set a reasonable single script call. */
export const hostWriteLimits = { entries: 1_024, fieldsPerEntry: 256, records: 256 } as const;

/** The default approximate MAXLEN of each tree's event log. */
export const defaultEventLogMaxLen = 10_000;

function invalid(message: string): KernelError {
  return new KernelError(ErrorCode.invalidCommit, `invalid host write set: ${message}`);
}

/** Checks an event-log MAXLEN option. */
export function checkMaxLen(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`eventLogMaxLen must be a positive safe integer, got ${String(value)}`);
  }
  return value;
}

/** The extra KEYS and ARGV a commit script receives for its context (see includes/hostWrites.lua). */
export interface EncodedHostWrites {
  readonly keys: readonly string[];
  readonly args: readonly string[];
}

function hostWritesOf(hostValues: Readonly<Record<string, unknown>> | undefined): HostWriteSet | undefined {
  const value = hostValues?.[hostWritesValueKey];
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(`hostValues['${hostWritesValueKey}'] must be a host write set ({ entries?, records? })`);
  }
  return value as HostWriteSet;
}

function eventFields(event: LoggedEvent, index: number): EventLogFields {
  if (typeof event !== 'object' || event === null || typeof event.json !== 'function' || typeof event.name !== 'string') {
    throw invalid(`events[${index}] must be a kernel Event`);
  }
  return { [eventEntryFields.name]: event.name, [eventEntryFields.event]: event.json() };
}

const noHostWrites: EncodedHostWrites = Object.freeze({ keys: Object.freeze([]), args: Object.freeze([]) });

/**
 * Validates a commit context and encodes it for the commit scripts (nothing at all when it writes
 * nothing); throws `invalid_commit`.
 */
export function encodeHostWrites(prefix: string, rootId: ProcessId, context: RedisCommitContext | undefined, maxLen: number): EncodedHostWrites {
  const events = context?.events ?? [];
  const extra = context?.entries ?? [];
  const direct = context?.records ?? [];
  const carried = hostWritesOf(context?.hostValues);
  if (!Array.isArray(events)) throw invalid('events must be an array');
  if (!Array.isArray(extra)) throw invalid('entries must be an array');
  if (!Array.isArray(direct)) throw invalid('records must be an array');
  if (events.length === 0 && extra.length === 0 && direct.length === 0 && carried === undefined) {
    return noHostWrites; // the scripts' fast path: ARGV ends at the snapshot
  }
  const carriedEntries = carried?.entries ?? [];
  const carriedRecords = carried?.records ?? [];
  if (!Array.isArray(carriedEntries)) throw invalid(`hostValues['${hostWritesValueKey}'].entries must be an array`);
  if (!Array.isArray(carriedRecords)) throw invalid(`hostValues['${hostWritesValueKey}'].records must be an array`);
  const entries: [string, EventLogFields][] = [
    ...events.map((event, index): [string, EventLogFields] => [`events[${index}]`, eventFields(event, index)]),
    ...extra.map((fields, index): [string, EventLogFields] => [`entries[${index}]`, fields]),
    ...carriedEntries.map((fields, index): [string, EventLogFields] => [`hostValues entries[${index}]`, fields]),
  ];
  const records = [...direct, ...carriedRecords];
  if (entries.length > hostWriteLimits.entries) throw invalid(`at most ${hostWriteLimits.entries} log entries per commit`);
  if (records.length > hostWriteLimits.records) throw invalid(`at most ${hostWriteLimits.records} records per commit`);
  const args: string[] = [String(maxLen), String(entries.length)];
  for (const [where, fields] of entries) {
    if (typeof fields !== 'object' || fields === null) throw invalid(`${where} must be an object of string fields`);
    const pairs = Object.entries(fields);
    if (pairs.length === 0) throw invalid(`${where} needs at least one field`);
    if (pairs.length > hostWriteLimits.fieldsPerEntry) throw invalid(`${where} has more than ${hostWriteLimits.fieldsPerEntry} fields`);
    args.push(String(pairs.length));
    for (const [field, value] of pairs) {
      if (field === previousEntryField) throw invalid(`${where} uses the reserved field ${previousEntryField}`);
      if (typeof value !== 'string') throw invalid(`${where}.${field} must be a string`);
      args.push(field, value);
    }
  }
  const keys: string[] = [];
  const seen = new Set<string>();
  records.forEach((record, index) => {
    if (typeof record !== 'object' || record === null) throw invalid(`records[${index}] must be an object`);
    let suffix: string;
    try {
      suffix = checkRecordSuffix(record.suffix);
    } catch (error) {
      throw invalid(`records[${index}]: ${(error as Error).message}`);
    }
    if (seen.has(suffix)) throw invalid(`records[${index}] repeats the suffix ${suffix}`);
    seen.add(suffix);
    if (typeof record.value !== 'string') throw invalid(`records[${index}].value must be a string`);
    const ttl = record.ttlMs;
    if (ttl !== undefined && (typeof ttl !== 'number' || !Number.isSafeInteger(ttl) || ttl < 1)) {
      throw invalid(`records[${index}].ttlMs must be a positive safe integer`);
    }
    keys.push(recordKey(prefix, rootId, suffix));
    args.push(record.value, ttl === undefined ? '0' : String(ttl));
  });
  return { keys, args };
}

const streamIdPattern = /^\d{1,20}(-\d{1,20})?$/;

function checkStreamId(id: unknown, what: string): string {
  if (typeof id !== 'string' || !streamIdPattern.test(id)) {
    throw new TypeError(`${what} must be a stream id (<ms>-<seq>), got ${JSON.stringify(id)}`);
  }
  return id;
}

function pairsOf(raw: unknown): [string, string][] {
  if (Array.isArray(raw)) {
    const pairs: [string, string][] = [];
    for (let index = 0; index + 1 < raw.length; index += 2) pairs.push([String(raw[index]), String(raw[index + 1])]);
    return pairs;
  }
  if (raw instanceof Map) return [...raw].map(([field, value]): [string, string] => [String(field), String(value)]);
  if (typeof raw === 'object' && raw !== null) return Object.entries(raw).map(([field, value]): [string, string] => [field, String(value)]);
  return [];
}

/** Normalises XRANGE entries: `[[id, [field, value, …]], …]`; the link to the previous entry is taken out of the fields. */
function entriesOf(raw: unknown): EventLogEntry[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((item: unknown) => {
    const [id, rawFields] = item as [unknown, unknown];
    const fields: Record<string, string> = {};
    let previous: string | undefined;
    for (const [field, value] of pairsOf(rawFields)) {
      if (field === previousEntryField) previous = value;
      else fields[field] = value;
    }
    const entry: EventLogEntry =
      previous !== undefined && streamIdPattern.test(previous)
        ? { id: String(id), fields: Object.freeze(fields), previous }
        : { id: String(id), fields: Object.freeze(fields) };
    return Object.freeze(entry);
  });
}

/** Normalises an XREAD reply for one stream (array, or a RESP3 map) to its entries. */
function readEntriesOf(raw: unknown): EventLogEntry[] {
  if (raw === null || raw === undefined) return [];
  if (raw instanceof Map) return entriesOf([...raw.values()][0]);
  if (Array.isArray(raw)) {
    const first = raw[0] as unknown;
    if (Array.isArray(first)) return entriesOf(first[1]);
    return entriesOf(raw[1]);
  }
  if (typeof raw === 'object') return entriesOf(Object.values(raw)[0]);
  return [];
}

export interface EventLogOptions {
  readonly redis: Redis;
  /** Default `scope`. */
  readonly keyPrefix?: string;
  /** Deadline of each non-blocking read; default 5000 ms. */
  readonly timeoutMs?: number;
  /** Host shutdown: rejects reads and ends every tail. */
  readonly shutdown?: AbortSignal;
}

export interface TailOptions {
  /** Ends the iteration (without an error) when aborted. */
  readonly signal?: AbortSignal;
  /** Entries per XREAD (default 100). */
  readonly count?: number;
  /** BLOCK milliseconds of each XREAD before it is reissued (default 5000). */
  readonly blockMs?: number;
}

/** Reads the per-tree event logs that commits append to. */
export class RedisEventLog {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #deadlines: StorageDeadlines;
  readonly #shutdown: AbortSignal | undefined;
  readonly #tails = new Set<Redis>();
  #closed = false;

  constructor(options: EventLogOptions) {
    this.#redis = options.redis;
    this.#prefix = checkKeyPrefix(options.keyPrefix ?? defaultKeyPrefix);
    this.#deadlines = new StorageDeadlines(options.timeoutMs ?? 5_000, options.shutdown);
    this.#shutdown = options.shutdown;
  }

  /** Up to `count` entries strictly after `afterId` (`0` = from the start), oldest first. */
  async readAfter(rootId: ProcessId, afterId = '0', count = 100): Promise<EventLogEntry[]> {
    checkStreamId(afterId, 'afterId');
    if (!Number.isSafeInteger(count) || count < 1) throw new TypeError(`count must be a positive integer, got ${String(count)}`);
    const key = eventsKey(this.#prefix, rootId);
    const raw = await this.#deadlines.run('event log read', () => this.#redis.xrange(key, `(${afterId}`, '+', 'COUNT', count));
    return entriesOf(raw);
  }

  /** The number of entries the log holds now (after trimming). */
  async length(rootId: ProcessId): Promise<number> {
    return this.#deadlines.run('event log length', () => this.#redis.xlen(eventsKey(this.#prefix, rootId)));
  }

  /**
   * Every entry after `afterId` (`$` = only entries appended from now on), as they are committed:
   * blocking XREADs on a dedicated connection, reissued until `signal` (or the log's shutdown or
   * `close()`) ends the iteration. A connection failure ends it with `committer_unavailable`;
   * resume from the last id seen.
   */
  async *tail(rootId: ProcessId, afterId = '$', options: TailOptions = {}): AsyncGenerator<EventLogEntry, void, undefined> {
    if (afterId !== '$') checkStreamId(afterId, 'afterId');
    const count = options.count ?? 100;
    const blockMs = options.blockMs ?? 5_000;
    if (!Number.isSafeInteger(count) || count < 1) throw new TypeError(`count must be a positive integer, got ${String(count)}`);
    checkTimeoutMs(blockMs, 'blockMs');
    if (this.#closed) throw committerUnavailable('event log tail', 'the event log is closed');
    const key = eventsKey(this.#prefix, rootId);
    const signals = [options.signal, this.#shutdown].filter((signal): signal is AbortSignal => signal !== undefined);
    const stopped = (): boolean => this.#closed || signals.some((signal) => signal.aborted);
    if (stopped()) return;
    const connection = this.#redis.duplicate({ lazyConnect: false });
    this.#tails.add(connection);
    // Once only: a second disconnect() after the socket closed would leave ioredis's 2 s
    // force-destroy timer waiting for a 'close' that already happened.
    const stop = (): void => {
      if (this.#tails.delete(connection)) connection.disconnect();
    };
    for (const signal of signals) signal.addEventListener('abort', stop, { once: true });
    let lastId = afterId;
    const read = async <T>(command: () => Promise<T>): Promise<T | undefined> => {
      try {
        return await command();
      } catch (error) {
        if (stopped()) return undefined;
        throw committerUnavailable('event log tail', `redis failed: ${(error as Error).message}`, error);
      }
    };
    try {
      if (lastId === '$') {
        // Pin '$' to the current last id, so entries appended between two reads are never skipped.
        const last = await read(() => connection.xrevrange(key, '+', '-', 'COUNT', 1));
        if (last === undefined) return;
        lastId = entriesOf(last)[0]?.id ?? '0';
      }
      while (!stopped()) {
        const raw = await read(() => connection.xread('COUNT', count, 'BLOCK', blockMs, 'STREAMS', key, lastId));
        if (stopped()) return;
        for (const entry of readEntriesOf(raw)) {
          lastId = entry.id;
          yield entry;
          if (stopped()) return;
        }
      }
    } finally {
      for (const signal of signals) signal.removeEventListener('abort', stop);
      stop();
    }
  }

  /** Ends every tail and refuses new ones. The shared client is the caller's to close. */
  async close(): Promise<void> {
    this.#closed = true;
    const connections = [...this.#tails];
    this.#tails.clear();
    for (const connection of connections) connection.disconnect();
  }
}
