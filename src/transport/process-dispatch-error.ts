/**
 * Errors and stable codes of the process dispatcher. The codes also appear in the payloads of the
 * `failed` and `unknown` Settlements it returns (`{"code","message"}`), so a Strategy or operator
 * can tell a definite rejection (nothing was sent) from a lost request (the outcome is unknown).
 */
export class ProcessDispatchError extends Error {
  readonly code: ProcessDispatchErrorCode;
  /** The command's recent stderr, for a host log; never part of a persisted Settlement. */
  readonly stderrTail: string | undefined;

  constructor(code: ProcessDispatchErrorCode, message: string, options?: { cause?: unknown; stderrTail?: string }) {
    super(message, options);
    this.name = 'ProcessDispatchError';
    this.code = code;
    this.stderrTail = options?.stderrTail;
  }
}

export const ProcessDispatchErrorCode = Object.freeze({
  /** The dispatcher configuration is invalid (thrown at construction). */
  invalidConfig: 'invalid_process_dispatcher_config',
  /** The command could not be started or exited before its handshake (definite: nothing was sent). */
  startFailed: 'start_failed',
  /** The command's first line was not the `{"ready":true}` handshake (definite: nothing was sent). */
  invalidHandshake: 'invalid_handshake',
  /** The dispatch was canceled: before sending it is definite, after sending the outcome is unknown. */
  canceled: 'canceled',
  /** The same EffectId is already in flight on the command (definite: nothing was sent). */
  duplicateEffect: 'duplicate_effect',
  /** The command died with the request in flight (unknown). */
  commandExited: 'command_exited',
  /** The command stayed silent past the request timeout (unknown). */
  requestTimeout: 'request_timeout',
  /** The command answered the request with an invalid line (unknown). */
  invalidAnswer: 'invalid_answer',
  /** The command stopped reading its input with the request queued (unknown). */
  notReading: 'not_reading',
} as const);

export type ProcessDispatchErrorCode = (typeof ProcessDispatchErrorCode)[keyof typeof ProcessDispatchErrorCode];
