/**
 * The per-tree event log behind `/events` and the SSE stream, as the server sees it, whatever the
 * store (the in-memory ring of embedded mode, the Redis Stream of Redis mode).
 *
 * - Committed events enter the log with the commit that makes them true: in Redis mode inside the
 *   commit's Lua script, in embedded mode right after the synchronous memory commit is acknowledged
 *   (the server's committer decorator does both; this interface only reads them back).
 * - Attempt events and deltas are appended best-effort with {@link EventLog.append}.
 * - Every entry has a position: `<n>` or `<n>-<m>` in decimal, compared numerically part by part
 *   ({@link comparePositions}), never as strings. `0` is "before everything".
 * - The log is bounded: the oldest entries are trimmed. Each entry also records the position of the
 *   entry appended just before it ({@link StoredLogRecord.previous}), so a reader can tell a read that
 *   continues from its cursor from one that skipped trimmed entries ({@link followsDirectly}) — with no
 *   extra query, exactly, also under Redis's approximate trimming.
 */

/** The type of a Delta's entry (events are typed by their name). */
export const deltaType = 'agent.delta';

/** One entry to append. */
export interface LogRecord {
  /** The event name (`agent.step.started`, …) or `agent.delta`. */
  readonly type: string;
  /** The process the entry is about. */
  readonly processId: string;
  /** The canonical wire JSON of the Event or Delta. */
  readonly data: string;
}

/** One entry read back, with its position. */
export interface StoredLogRecord extends LogRecord {
  readonly position: string;
  /**
   * The position of the entry appended just before this one (`0` for the first entry of the log), as
   * recorded when this one was appended. Entries are trimmed oldest first, so an entry whose `previous`
   * lies after a reader's cursor follows entries the reader never saw and never will: they were trimmed.
   * Absent on entries written before the log recorded it (their continuity is not checked).
   */
  readonly previous?: string;
}

export interface EventLog {
  /**
   * Best-effort append of entries that carry no committed fact (attempt events, deltas). It never
   * throws and never waits for storage: a failure only loses the entries (counted by the log).
   */
  append(rootId: string, records: readonly LogRecord[]): void;
  /**
   * Up to `limit` entries strictly after `after`, oldest first, from what the log retains: when entries
   * after `after` were trimmed, the read starts at the oldest retained entry (check the first entry with
   * {@link followsDirectly}).
   */
  readAfter(rootId: string, after: string, limit: number): Promise<StoredLogRecord[]>;
  /**
   * Every entry after `after` as it is appended, until `signal` aborts (the iteration then ends
   * without an error) or the log is closed. A tail that falls behind the log's retention continues at
   * the oldest retained entry; {@link followsDirectly} tells. A reader that leaves more entries unread
   * than the log buffers for it is ended with {@link TailOverflowError} (resume from its last position).
   */
  tail(rootId: string, after: string, signal: AbortSignal): AsyncIterable<StoredLogRecord>;
  /**
   * The records of {@link tail}, in the batches they became available together (each non-empty,
   * oldest first): a reader that fans entries out (the SSE stream) does its per-reader work once per
   * batch. Records of one entry are the same object for every tail of the log.
   */
  tailBatches(rootId: string, after: string, signal: AbortSignal): AsyncIterable<readonly StoredLogRecord[]>;
  /**
   * The newest position of the tree's log (`0` when it holds nothing): a cursor beyond it was never
   * issued. Trimming removes the oldest entries, never the newest.
   */
  lastPosition(rootId: string): Promise<string>;
  /** Entries lost by best-effort appends (storage errors), for diagnostics. */
  readonly failedAppends: number;
  /** Ends every tail and refuses new ones. */
  close(): Promise<void>;
}

/**
 * A tail's reader left more than the log's bound of entries unread, so the log ended that tail (it
 * never slows the others down): whatever was read is valid, and a new tail from the last position read
 * resumes with nothing lost.
 */
export class TailOverflowError extends Error {
  constructor(
    readonly rootId: string,
    readonly maxBuffered: number,
  ) {
    super(`the tail of ${rootId} was ended: its reader left more than ${maxBuffered} entries unread; resume from the last position read`);
    this.name = 'TailOverflowError';
  }
}

const positionPattern = /^(0|[1-9]\d{0,19})(?:-(0|[1-9]\d{0,19}))?$/;

/** Whether `text` is a syntactically valid position (`<n>` or `<n>-<m>`, decimal). */
export function isPosition(text: unknown): text is string {
  if (typeof text !== 'string' || !positionPattern.test(text)) return false;
  const [major, minor] = text.split('-');
  return BigInt(major as string) <= 0xffff_ffff_ffff_ffffn && BigInt(minor ?? '0') <= 0xffff_ffff_ffff_ffffn;
}

/**
 * Numeric order of two decimal digit strings without leading zeros: the longer is larger, equal lengths
 * compare as text. No number is built, so the shared tail can compare every entry with every
 * subscriber's cursor cheaply (a BigInt per comparison showed up in the fan-out profile).
 */
function compareDecimal(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  if (a === b) return 0;
  return a < b ? -1 : 1;
}

/** Numeric order of two valid positions (`<n>` equals `<n>-0`): negative, zero or positive. */
export function comparePositions(a: string, b: string): number {
  const aDash = a.indexOf('-');
  const bDash = b.indexOf('-');
  const major = compareDecimal(aDash < 0 ? a : a.slice(0, aDash), bDash < 0 ? b : b.slice(0, bDash));
  if (major !== 0) return major;
  return compareDecimal(aDash < 0 ? '0' : a.slice(aDash + 1), bDash < 0 ? '0' : b.slice(bDash + 1));
}

/**
 * Whether `record`, read strictly after `cursor`, directly follows it: false when entries between the
 * cursor and the record were appended and then trimmed before the reader got them. Records that do not
 * carry their predecessor's position (written before the log recorded it) count as following.
 */
export function followsDirectly(record: StoredLogRecord, cursor: string): boolean {
  return record.previous === undefined || comparePositions(record.previous, cursor) <= 0;
}
