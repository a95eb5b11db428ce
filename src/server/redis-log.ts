import type { Redis } from 'ioredis';
import { ProcessId } from '../kernel/identity.js';
import type { EventLog, LogRecord, StoredLogRecord } from '../store/event-log.js';
import { eventEntryFields, type EventLogEntry, type RedisEventLog } from '../store/redis/event-log.js';
import { eventsKey } from '../store/redis/keys.js';

/**
 * The Redis Stream log of each tree behind the server's {@link EventLog} interface: a thin adapter
 * over the store's {@link RedisEventLog} (reads and blocking tails), plus the one write the store
 * does not offer — the best-effort XADD of attempt events and deltas, which carry no committed fact
 * and therefore ride in no commit.
 *
 * Entry fields: a kernel Event is `{name, event}` (exactly what the commit scripts write for the
 * committed ones), a Delta is `{name: "agent.delta", delta}`. Positions are the stream ids.
 * Appends go through the same client as the commits, so an attempt event published before a
 * commit is also ordered before that commit's events in the stream.
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
    for (const record of records) {
      const field = record.type === deltaType ? deltaField : eventEntryFields.event;
      // Issued synchronously (ordered with the commits on this client), never awaited.
      this.#redis.xadd(key, 'MAXLEN', '~', String(this.#maxLen), '*', eventEntryFields.name, record.type, field, record.data).catch((error: unknown) => {
        this.#failed += 1;
        this.#onAppendError?.(error);
      });
    }
  }

  async readAfter(rootId: string, after: string, limit: number): Promise<StoredLogRecord[]> {
    const entries = await this.#log.readAfter(ProcessId.parse(rootId), after, limit);
    return entries.flatMap((entry) => recordOf(entry));
  }

  async *tail(rootId: string, after: string, signal: AbortSignal): AsyncGenerator<StoredLogRecord, void, undefined> {
    for await (const entry of this.#log.tail(ProcessId.parse(rootId), after, { signal })) {
      yield* recordOf(entry);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#log.close();
  }
}

/** The record of one stream entry; entries without a known shape are skipped. */
function recordOf(entry: EventLogEntry): StoredLogRecord[] {
  const type = entry.fields[eventEntryFields.name];
  const data = entry.fields[eventEntryFields.event] ?? entry.fields[deltaField];
  if (type === undefined || data === undefined) return [];
  let processId: unknown;
  try {
    processId = (JSON.parse(data) as { process_id?: unknown }).process_id;
  } catch {
    return [];
  }
  if (typeof processId !== 'string') return [];
  return [Object.freeze({ position: entry.id, type, processId, data })];
}
