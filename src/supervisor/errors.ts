/**
 * Every error the supervisor and its child-process handle throw carries a stable `code`, so
 * callers branch on codes, never on message wording.
 */
export class SupervisorError extends Error {
  readonly code: SupervisorErrorCode;

  constructor(code: SupervisorErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SupervisorError';
    this.code = code;
  }
}

/** The stable codes of {@link SupervisorError}. */
export const SupervisorErrorCode = Object.freeze({
  /** A lease, drain or start after `close()` began. */
  closed: 'closed',
  /** A drain refused: a matching process is at work, or another drain holds a matching key. */
  busy: 'busy',
  /** A start abandoned because a drain closed its key while it ran. */
  drained: 'drained',
  /** A start that did not finish within the start timeout. */
  startTimeout: 'start_timeout',
  /** A starter that resolved without a usable process. */
  invalidStart: 'invalid_start',
  /** A command that left its input queue unread past the bound; it was killed. */
  notReading: 'not_reading',
  /** The command exited on its own. */
  exited: 'exited',
  /** The command was killed (`kill()` or `close()`). */
  killed: 'killed',
  /** The command could not be spawned at all. */
  spawnFailed: 'spawn_failed',
  /** Invalid options, key, fingerprint, starter or environment. */
  invalidArgument: 'invalid_argument',
} as const);

export type SupervisorErrorCode = (typeof SupervisorErrorCode)[keyof typeof SupervisorErrorCode];

export const supervisorErrorCodeValues: readonly SupervisorErrorCode[] = Object.freeze(Object.values(SupervisorErrorCode));

export function isSupervisorError(error: unknown, code?: SupervisorErrorCode): error is SupervisorError {
  return error instanceof SupervisorError && (code === undefined || error.code === code);
}
