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
 */

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
}

export interface EventLog {
  /**
   * Best-effort append of entries that carry no committed fact (attempt events, deltas). It never
   * throws and never waits for storage: a failure only loses the entries (counted by the log).
   */
  append(rootId: string, records: readonly LogRecord[]): void;
  /** Up to `limit` entries strictly after `after`, oldest first. */
  readAfter(rootId: string, after: string, limit: number): Promise<StoredLogRecord[]>;
  /**
   * Every entry after `after` as it is appended, until `signal` aborts (the iteration then ends
   * without an error) or the log is closed.
   */
  tail(rootId: string, after: string, signal: AbortSignal): AsyncIterable<StoredLogRecord>;
  /** Entries lost by best-effort appends (storage errors), for diagnostics. */
  readonly failedAppends: number;
  /** Ends every tail and refuses new ones. */
  close(): Promise<void>;
}

const positionPattern = /^(0|[1-9]\d{0,19})(?:-(0|[1-9]\d{0,19}))?$/;

/** Whether `text` is a syntactically valid position (`<n>` or `<n>-<m>`, decimal). */
export function isPosition(text: unknown): text is string {
  if (typeof text !== 'string' || !positionPattern.test(text)) return false;
  const [major, minor] = text.split('-');
  return BigInt(major as string) <= 0xffff_ffff_ffff_ffffn && BigInt(minor ?? '0') <= 0xffff_ffff_ffff_ffffn;
}

function parts(position: string): [bigint, bigint] {
  const [major, minor] = position.split('-');
  return [BigInt(major as string), BigInt(minor ?? '0')];
}

/** Numeric order of two valid positions (`<n>` equals `<n>-0`): negative, zero or positive. */
export function comparePositions(a: string, b: string): number {
  const [aMajor, aMinor] = parts(a);
  const [bMajor, bMinor] = parts(b);
  if (aMajor !== bMajor) return aMajor < bMajor ? -1 : 1;
  if (aMinor !== bMinor) return aMinor < bMinor ? -1 : 1;
  return 0;
}
