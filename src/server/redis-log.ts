import type { Redis } from 'ioredis';
import { ProcessId } from '../kernel/identity.js';
import type { EventLog, LogRecord, StoredLogRecord } from '../store/event-log.js';
import { eventEntryFields, type EventLogEntry, type RedisEventLog } from '../store/redis/event-log.js';
import { eventsKey } from '../store/redis/keys.js';
import { runHostScript } from './redis-scripts.js';

/**
 * The Redis Stream log of each tree behind the server's {@link EventLog} interface: a thin adapter
 * over the store's {@link RedisEventLog} (reads and blocking tails), plus the one write the store
 * does not offer — the best-effort XADD of attempt events and deltas, which carry no committed fact
 * and therefore ride in no commit.
 *
 * Entry fields: a kernel Event is `{name, event}` (exactly what the commit scripts write for the
 * committed ones), a Delta is `{name: "agent.delta", delta}`; like the commit scripts, the append
 * script links each entry to the one before it (`scope.prev`, read back as `previous`), so readers
 * can tell trimmed history from a continuous read. Positions are the stream ids. Appends go through
 * the same client as the commits, so an attempt event published before a commit is also ordered
 * before that commit's events in the stream.
 */
export const deltaField = 'delta';
export const deltaType = 'agent.delta';

export interface RedisLogOptions {
  readonly redis: Redis;
  readonly keyPrefix: string;
  readonly maxLen: number;
  readonly log: RedisEventLog;
  /** Called with each failed best-effort append (for logging). */
  readonly onAppendError?: (error: unknown) => void;
}

export class RedisLog implements EventLog {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #maxLen: number;
  readonly #log: RedisEventLog;
  readonly #onAppendError: ((error: unknown) => void) | undefined;
  #failed = 0;
  #closed = false;

  constructor(options: RedisLogOptions) {
    this.#redis = options.redis;
    this.#prefix = options.keyPrefix;
    this.#maxLen = options.maxLen;
    this.#log = options.log;
    this.#onAppendError = options.onAppendError;
  }

  get failedAppends(): number {
    return this.#failed;
  }

  append(rootId: string, records: readonly LogRecord[]): void {
    if (this.#closed || records.length === 0) return;
    const key = eventsKey(this.#prefix, rootId);
    const args: string[] = [String(this.#maxLen)];
    for (const record of records) {
      args.push(record.type, record.type === deltaType ? deltaField : eventEntryFields.event, record.data);
    }
    // Issued synchronously (ordered with the commits on this client), never awaited.
    runHostScript(this.#redis, 'appendLog', [key], args).catch((error: unknown) => {
      this.#failed += records.length;
      this.#onAppendError?.(error);
    });
  }

  async readAfter(rootId: string, after: string, limit: number): Promise<StoredLogRecord[]> {
    const entries = await this.#log.readAfter(ProcessId.parse(rootId), after, limit);
    const links = new Links();
    return entries.flatMap((entry) => links.recordOf(entry));
  }

  async *tail(rootId: string, after: string, signal: AbortSignal): AsyncGenerator<StoredLogRecord, void, undefined> {
    const links = new Links();
    for await (const entry of this.#log.tail(ProcessId.parse(rootId), after, { signal })) {
      yield* links.recordOf(entry);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#log.close();
  }
}

/**
 * Turns consecutive stream entries into records. Entries without a known shape are skipped; the
 * record after a skipped run inherits the run's own `previous`, so skipping is never mistaken for a
 * trimmed gap.
 */
class Links {
  /** The `previous` of the first entry of the current skipped run, if any. */
  #skipped: { previous: string | undefined } | undefined;

  recordOf(entry: EventLogEntry): StoredLogRecord[] {
    const record = shapeOf(entry);
    if (record === undefined) {
      this.#skipped ??= { previous: entry.previous };
      return [];
    }
    const previous = this.#skipped === undefined ? entry.previous : this.#skipped.previous;
    this.#skipped = undefined;
    return [Object.freeze(previous === undefined ? record : { ...record, previous })];
  }
}

/** The record of one stream entry, without its link; undefined when the entry has no known shape. */
function shapeOf(entry: EventLogEntry): StoredLogRecord | undefined {
  const type = entry.fields[eventEntryFields.name];
  const data = entry.fields[eventEntryFields.event] ?? entry.fields[deltaField];
  if (type === undefined || data === undefined) return undefined;
  let processId: unknown;
  try {
    processId = (JSON.parse(data) as { process_id?: unknown }).process_id;
  } catch {
    return undefined;
  }
  if (typeof processId !== 'string') return undefined;
  return { position: entry.id, type, processId, data };
}
