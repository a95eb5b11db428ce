import { HostErrorCode } from '../errors.js';
import { KernelError } from '../kernel/index.js';

/**
 * The log errors that carry more than a code: where the log stands, so a client knows where to
 * resume. Their codes are in the catalogue (src/errors.ts) like every other.
 */

/**
 * `history_trimmed`: entries strictly after `cursor` were trimmed from the tree's bounded log before
 * they were read, so a read from there would skip them. `firstAvailable` is the oldest position the log
 * still holds (a read with no cursor, or `0`, starts there).
 */
export class HistoryTrimmedError extends KernelError {
  readonly cursor: string;
  readonly firstAvailable: string;

  constructor(rootId: string, cursor: string, firstAvailable: string) {
    super(
      HostErrorCode.historyTrimmed,
      `the event log of ${rootId} no longer holds the entries after ${cursor}: retention trimmed them; ` +
        `the oldest entry it holds is ${firstAvailable} (read without a cursor, or after=0, to start there)`,
    );
    this.name = 'HistoryTrimmedError';
    this.cursor = cursor;
    this.firstAvailable = firstAvailable;
  }
}

/**
 * `cursor_ahead`: a cursor beyond the newest position of the tree's log. No such position was ever
 * issued (a cursor from another tree, a typo, a store that was reset): reading after it would skip
 * whatever the log appends up to it, so it is refused. `lastPosition` is where the log stands.
 */
export class CursorAheadError extends KernelError {
  readonly cursor: string;
  readonly lastPosition: string;

  constructor(rootId: string, cursor: string, lastPosition: string) {
    super(
      HostErrorCode.cursorAhead,
      `the cursor ${cursor} is beyond the newest position of the event log of ${rootId} (${lastPosition}); ` +
        'it was never issued for this tree: resume from a position the log gave you, or read from the beginning',
    );
    this.name = 'CursorAheadError';
    this.cursor = cursor;
    this.lastPosition = lastPosition;
  }
}
