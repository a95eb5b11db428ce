import { deltaType, type LogRecord, type StoredLogRecord } from '../event-log.js';
import { refEntryField } from './log-refs.js';

/*
 * The entries of a tree's event log (a Redis Stream) as Scope writes and reads them: their fields, the
 * link each carries to the entry before it, and the record a kernel Event or Delta entry reads back as.
 * The appendLog script and the commit scripts write this layout; event-log.ts reads it.
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

/** The fields of the log entry a kernel Event becomes: its name and its canonical JSON. */
export const eventEntryFields = { name: 'name', event: 'event' } as const;

/** The data field of a Delta's entry (its name field is `agent.delta`). */
export const deltaField = 'delta';

/**
 * The fields of a best-effort record's entry: `name <type>` then `delta|event <data>` (appendLog-1.lua
 * writes the same). An Event's may be stored cut, `ref <id>` before its data (log-refs.ts); readers
 * get these fields back.
 */
export function logEntryFields(record: LogRecord): EventLogFields {
  return { name: record.type, [record.type === deltaType ? deltaField : eventEntryFields.event]: record.data };
}


const streamIdPattern = /^\d{1,20}(-\d{1,20})?$/;

export function checkStreamId(id: unknown, what: string): string {
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
export function entriesOf(raw: unknown): EventLogEntry[] {
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

/**
 * Records by entry, with their link: the shared tail hands one entry object to every subscriber of its
 * tree, so its JSON is parsed once and its record built once, not once per subscriber.
 */
const shapes = new WeakMap<EventLogEntry, StoredLogRecord | null>();

/** The record of one entry (with the entry's own link); undefined when the entry has no known shape. */
export function recordShapeOf(entry: EventLogEntry): StoredLogRecord | undefined {
  const known = shapes.get(entry);
  if (known !== undefined) return known ?? undefined;
  const shape = parseRecordShape(entry);
  const record = shape === undefined ? undefined : Object.freeze(entry.previous === undefined ? shape : { ...shape, previous: entry.previous });
  shapes.set(entry, record ?? null);
  return record;
}

function parseRecordShape(entry: EventLogEntry): StoredLogRecord | undefined {
  // An Event whose deployment ref could not be put back (log-refs.ts) is not a record anyone can read.
  if (entry.fields[refEntryField] !== undefined) return undefined;
  const type = entry.fields[eventEntryFields.name];
  const data = entry.fields[eventEntryFields.event] ?? entry.fields[deltaField];
  if (type === undefined || data === undefined) return undefined;
  const processId = processIdOf(data);
  if (processId === undefined) return undefined;
  return { position: entry.id, type, processId, data };
}

/** The `process_id` member of an Event or Delta document (user data nested inside may hold the same name). */
function processIdOf(data: string): string | undefined {
  try {
    const processId = (JSON.parse(data) as { process_id?: unknown }).process_id;
    return typeof processId === 'string' ? processId : undefined;
  } catch {
    return undefined;
  }
}
