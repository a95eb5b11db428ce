import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import {
  Failure,
  FailureClassification,
  isFailureKind,
  maxDiagnosticBytes,
  normalizeDiagnostic,
  validDiagnostic,
  type FailureKind,
} from './failure.js';
import { isQualifiedName } from './identity.js';

/**
 * A sentinel that owns the Failure kind and code the Engine persists when an error carrying it
 * (directly or anywhere in its `cause` chain) leaves `Execution.step`, so no separate mapping can
 * disagree with the declaration. Declare one per condition at module level and throw an error
 * that wraps it, e.g. `throw sentinel.wrap('loading plan 3')` or
 * `throw new Error('loading plan 3: quota exhausted', { cause: sentinel })`.
 *
 * The constructor rejects an invalid kind, code or message with a KernelError: a malformed
 * declaration is a programming error, not a runtime condition.
 */
export class ClassifiedError extends Error {
  readonly kind: FailureKind;
  readonly code: string;

  constructor(kind: FailureKind, code: string, message: string) {
    if (!isFailureKind(kind)) {
      throw new KernelError(ErrorCode.invalidFailure, `classified error has an invalid kind: ${describe(kind)}`);
    }
    if (!isQualifiedName(code)) {
      throw new KernelError(ErrorCode.invalidFailure, `classified error has an invalid code: ${describe(code)}`);
    }
    if (!validDiagnostic(message)) {
      throw new KernelError(
        ErrorCode.invalidFailure,
        `classified error ${code} needs a non-empty, trimmed message of at most ${maxDiagnosticBytes} UTF-8 bytes`,
      );
    }
    super(message);
    this.name = 'ClassifiedError';
    this.kind = kind;
    this.code = code;
    Object.freeze(this);
  }

  classification(): FailureClassification {
    return FailureClassification.of(this.kind, this.code);
  }

  /** A new error whose message is `context: <this message>` and whose cause is this sentinel. */
  wrap(context: string): Error {
    return new Error(`${context}: ${this.message}`, { cause: this });
  }

  /** True when `error` is this sentinel or carries it in its `cause` chain (Go's `errors.Is`). */
  isIn(error: unknown): boolean {
    return causeChain(error).includes(this);
  }
}

/** The Engine-owned sentinel for an exhausted uint64 counter (sequence, usage or identity). */
export const counterExhausted = new ClassifiedError('execution', 'engine.counter.exhausted', 'counter exhausted');

/**
 * The Failure the Engine persists when `Execution.step` throws an error carrying a ClassifiedError
 * in its `cause` chain: the sentinel's kind and code, with the complete wrapped diagnostic as the
 * message (normalised with `normalizeDiagnostic`).
 *
 * The diagnostic is built from the messages along the chain, outermost first, down to the
 * sentinel; a message already contained in the text so far is not repeated, so both
 * `new Error(`ctx: ${inner.message}`, { cause: inner })` and `new Error('ctx', { cause: inner })`
 * yield `ctx: <inner message>` (the shape of a Go `%w` chain).
 *
 * Returns `undefined` — the Engine then records `execution.step.failed` or its own
 * classification — when no ClassifiedError is found, or when the chain carries a cancellation
 * (`AbortError` / `TimeoutError`), whose classification the Engine owns.
 *
 * Determinism: depends only on the error values in the chain.
 */
export function stepFailure(error: unknown): Failure | undefined {
  const chain = causeChain(error);
  if (chain.some(isCancellation)) return undefined;
  const index = chain.findIndex((item) => item instanceof ClassifiedError);
  if (index < 0) return undefined;
  const sentinel = chain[index] as ClassifiedError;
  let text = '';
  for (const item of chain.slice(0, index + 1)) {
    const message = messageOf(item);
    if (message === '' || text.includes(message)) continue;
    text = text === '' ? message : `${text}: ${message}`;
  }
  return Failure.create(sentinel.kind, sentinel.code, normalizeDiagnostic(text));
}

/** A bound on how far a `cause` chain is followed (chains can be cyclic or adversarially long). */
const maxCauseDepth = 64;

function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = error;
  while (current !== undefined && current !== null && chain.length < maxCauseDepth && !chain.includes(current)) {
    chain.push(current);
    current = current instanceof Error ? current.cause : undefined;
  }
  return chain;
}

function messageOf(item: unknown): string {
  if (item instanceof Error) return typeof item.message === 'string' ? item.message : '';
  return typeof item === 'string' ? item : '';
}

function isCancellation(item: unknown): boolean {
  return (
    typeof item === 'object' &&
    item !== null &&
    'name' in item &&
    (item.name === 'AbortError' || item.name === 'TimeoutError')
  );
}
