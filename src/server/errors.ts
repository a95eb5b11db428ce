import { KernelError } from '../kernel/errors.js';

/**
 * Stable codes of the errors the Host adds to the kernel's (`ErrorCode`). Every Host failure is a
 * KernelError with one of these or a kernel code; the problem registry maps codes to HTTP statuses
 * (rest-api.md, "Errors").
 */
export const ServerErrorCode = {
  /** 404: no process with this id in this runtime or the store. */
  processNotFound: 'process_not_found',
  /** 404: no tree (runtime or stored head) with this root id. */
  treeNotFound: 'tree_not_found',
  /** 404: no deployment with this name in the catalog. */
  deploymentNotFound: 'deployment_not_found',
  /** 404: the process has no effect with this id. */
  effectNotFound: 'effect_not_found',
  /** 409: an Idempotency-Key reused with another request body. */
  idempotencyKeyConflict: 'idempotency_key_conflict',
  /** 409: another start with this Idempotency-Key is still unfinished (retry shortly). */
  idempotencyKeyInProgress: 'idempotency_key_in_progress',
  /** 410: the log no longer holds entries after the cursor (retention trimmed them). */
  historyTrimmed: 'history_trimmed',
  /** 403: a start asks for more budget, limits or capabilities than the server grants. */
  authorityExceeded: 'authority_exceeded',
  /** 409: the tree is stored but no runtime in this server owns it (restore it first). */
  treeNotActive: 'tree_not_active',
  /** 503: the server is shutting down and admits no new work. */
  shuttingDown: 'shutting_down',
  /** 400: a malformed request (shape, identity syntax, cursor, range). */
  invalidRequest: 'invalid_request',
  /** 500: a stored uint64 counter does not fit a JSON-safe number (never expected in practice). */
  valueNotRepresentable: 'value_not_representable',
} as const;

export type ServerErrorCode = (typeof ServerErrorCode)[keyof typeof ServerErrorCode];

/** A KernelError with a server code. */
export function serverError(code: ServerErrorCode, message: string, cause?: unknown): KernelError {
  return new KernelError(code, message, cause === undefined ? undefined : { cause });
}

/** `invalid_request` with `message`. */
export function invalidRequest(message: string, cause?: unknown): KernelError {
  return serverError(ServerErrorCode.invalidRequest, message, cause);
}

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
      ServerErrorCode.historyTrimmed,
      `the event log of ${rootId} no longer holds the entries after ${cursor}: retention trimmed them; ` +
        `the oldest entry it holds is ${firstAvailable} (read without a cursor, or after=0, to start there)`,
    );
    this.name = 'HistoryTrimmedError';
    this.cursor = cursor;
    this.firstAvailable = firstAvailable;
  }
}
