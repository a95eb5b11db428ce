import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';

/**
 * The Host callbacks whose panics a boundary contains. The list names the callbacks the kernel
 * and its conformance suites call today; a boundary may name another (the type stays open).
 */
export type CallbackOperation =
  | 'Definition.descriptor'
  | 'Definition.childDeployments'
  | 'Definition.start'
  | 'Definition.restore'
  | 'Execution.step'
  | 'Execution.snapshot'
  | 'DeploymentResolver.resolve'
  | 'Dispatcher.dispatch'
  | 'Dispatcher.replayPolicy'
  | 'ProcessAdmitter.admit'
  | 'ProcessInitializationAcknowledger.acknowledge'
  | 'TreeCommitter.commitCheckpoint'
  | 'TreeCommitter.commitEffect'
  | 'TreeCommitter.activateTree'
  | (string & {});

export const callbackOperationValues: readonly CallbackOperation[] = Object.freeze([
  'Definition.descriptor',
  'Definition.childDeployments',
  'Definition.start',
  'Definition.restore',
  'Execution.step',
  'Execution.snapshot',
  'DeploymentResolver.resolve',
  'Dispatcher.dispatch',
  'Dispatcher.replayPolicy',
  'ProcessAdmitter.admit',
  'ProcessInitializationAcknowledger.acknowledge',
  'TreeCommitter.commitCheckpoint',
  'TreeCommitter.commitEffect',
  'TreeCommitter.activateTree',
]);

/**
 * A panic contained at a Host callback boundary (`callback_panic`). `operation` names the
 * callback; `cause` (also `value`) is the thrown value, exactly as thrown.
 *
 * Go separates a returned error from a panic; a TypeScript callback only throws, so each boundary
 * documents which throws it treats as panics. The common mapping is:
 * - a callback whose contract has no error result (`Definition.descriptor`,
 *   `Execution.snapshot`, `DeploymentResolver.resolve` beyond its `deployment_unavailable`
 *   rejection) panics on any throw;
 * - a callback with an error result (`Definition.start`, `Definition.restore`,
 *   `Execution.step`, `Dispatcher.dispatch`) returns that error by throwing an `Error`, and
 *   panics only when it throws a value that is not an `Error` (a string, `undefined`, …).
 *
 * The boundary still owns the outcome: execution failures use Failure kind `panic`, an uncertain
 * dispatch stays unknown, and storage errors stop the writer. It is an in-memory diagnostic and
 * must never be serialised as a result.
 */
export class CallbackPanicError extends KernelError {
  readonly operation: CallbackOperation;

  constructor(operation: CallbackOperation, cause: unknown) {
    const name = typeof operation === 'string' && operation.trim() !== '' ? operation : 'an unnamed callback';
    super(ErrorCode.callbackPanic, `${name} panicked: ${panicDetail(cause)}`, { cause });
    this.name = 'CallbackPanicError';
    this.operation = name;
  }

  /** The thrown value (Go's recovered value); an alias of `cause`. */
  get value(): unknown {
    return this.cause;
  }

  /** True when `error` is a CallbackPanicError, naming `operation` when one is given. */
  static is(error: unknown, operation?: CallbackOperation): error is CallbackPanicError {
    return error instanceof CallbackPanicError && (operation === undefined || error.operation === operation);
  }
}

/**
 * What a callback with an error result threw, as its boundary sees it: an `Error` is the returned
 * error, unchanged; any other value is a panic, contained as a CallbackPanicError naming `operation`.
 */
export function thrownBy(operation: CallbackOperation, thrown: unknown): unknown {
  return thrown instanceof Error ? thrown : new CallbackPanicError(operation, thrown);
}

function panicDetail(value: unknown): string {
  if (value instanceof Error) {
    const message = typeof value.message === 'string' && value.message !== '' ? value.message : '(no message)';
    return `${value.name || 'Error'}: ${message}`;
  }
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return describe(value);
}
