import { parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { Failure, maxDiagnosticBytes, validDiagnostic, type FailureKind } from './failure.js';
import { EffectId } from './identity.js';
import { isStatus, type TerminalStatus } from './status.js';
import { encodeWire, readString, WireRecord, type WireValue } from './wire.js';

/** Why a Process terminated; the terminal Status is always derived from it (`statusOfCause`). */
export type TerminationCause =
  | 'completion'
  | 'engine_kill'
  | 'parent_deadline'
  | 'host_deadline'
  | 'parent_cancellation'
  | 'host_cancellation'
  | 'execution_failure'
  | 'contract_failure'
  | 'external_failure'
  | 'panic';

export const terminationCauseValues: readonly TerminationCause[] = Object.freeze([
  'completion',
  'engine_kill',
  'parent_deadline',
  'host_deadline',
  'parent_cancellation',
  'host_cancellation',
  'execution_failure',
  'contract_failure',
  'external_failure',
  'panic',
]);

/** The causes that come from a recorded control intent (kill, deadline, cancellation) and own a reason. */
export type InterruptionCause = Extract<
  TerminationCause,
  'engine_kill' | 'parent_deadline' | 'host_deadline' | 'parent_cancellation' | 'host_cancellation'
>;

export const interruptionCauseValues: readonly InterruptionCause[] = Object.freeze([
  'engine_kill',
  'parent_deadline',
  'host_deadline',
  'parent_cancellation',
  'host_cancellation',
]);

export function isTerminationCause(value: unknown): value is TerminationCause {
  return typeof value === 'string' && (terminationCauseValues as readonly string[]).includes(value);
}

export function parseTerminationCause(value: unknown): TerminationCause {
  if (!isTerminationCause(value)) {
    throw new KernelError(ErrorCode.invalidTermination, `invalid termination cause: ${describe(value)}`);
  }
  return value;
}

export function isInterruptionCause(value: unknown): value is InterruptionCause {
  return typeof value === 'string' && (interruptionCauseValues as readonly string[]).includes(value);
}

/** The terminal Status a cause produces. */
export function statusOfCause(cause: TerminationCause): TerminalStatus {
  switch (cause) {
    case 'completion':
      return 'completed';
    case 'engine_kill':
      return 'killed';
    case 'parent_deadline':
    case 'host_deadline':
      return 'timed_out';
    case 'parent_cancellation':
    case 'host_cancellation':
      return 'canceled';
    case 'execution_failure':
    case 'contract_failure':
    case 'external_failure':
    case 'panic':
      return 'failed';
    default:
      throw new KernelError(ErrorCode.invalidTermination, `invalid termination cause: ${describe(cause)}`);
  }
}

/** The failed cause a Failure of `kind` terminates with. */
export function causeOfFailureKind(kind: FailureKind): TerminationCause {
  switch (kind) {
    case 'execution':
      return 'execution_failure';
    case 'contract':
      return 'contract_failure';
    case 'external':
      return 'external_failure';
    case 'panic':
      return 'panic';
    default:
      throw new KernelError(ErrorCode.invalidFailure, `invalid failure kind: ${describe(kind)}`);
  }
}

/** The Failure kind behind a failed cause, or `undefined` for a cause that is not a failure. */
export function failureKindOfCause(cause: TerminationCause): FailureKind | undefined {
  switch (cause) {
    case 'execution_failure':
      return 'execution';
    case 'contract_failure':
      return 'contract';
    case 'external_failure':
      return 'external';
    case 'panic':
      return 'panic';
    default:
      return undefined;
  }
}

/**
 * The immutable terminal fact of one Process: the outcome of the termination priority matrix.
 * Only the Engine creates terminal facts (from validated control intents and Step outcomes);
 * everyone else obtains one from a Result or by decoding it.
 *
 * - The Status is always derived from the cause, never stored independently.
 * - A failed termination owns its Failure, and its reason is the Failure's message.
 * - Kill, deadline and cancellation own their control reason; completion has no reason.
 * - `unresolvedEffectIds` names external operations that may have happened but were not durably
 *   resolved when the tree stopped, in ascending string order; a completion has none.
 */
export class Termination {
  readonly #cause: TerminationCause;
  readonly #reason: string;
  readonly #failure: Failure | undefined;
  readonly #unresolved: readonly EffectId[];

  private constructor(
    cause: TerminationCause,
    reason: string,
    failure: Failure | undefined,
    unresolved: readonly EffectId[],
  ) {
    this.#cause = cause;
    this.#reason = reason;
    this.#failure = failure;
    this.#unresolved = Object.freeze([...unresolved]);
    Object.freeze(this);
  }

  static completed(): Termination {
    return new Termination('completion', '', undefined, []);
  }

  /** A failed termination; its cause follows the Failure kind and its reason is the Failure message. */
  static failed(failure: Failure, unresolvedEffectIds: readonly EffectId[] = []): Termination {
    if (!(failure instanceof Failure)) {
      throw new KernelError(ErrorCode.invalidTermination, 'a failed termination needs a Failure');
    }
    return new Termination(
      causeOfFailureKind(failure.kind),
      failure.message,
      failure,
      canonicalIds(unresolvedEffectIds),
    );
  }

  /**
   * A termination by kill, deadline or cancellation. The reason must be a valid diagnostic
   * (non-empty, trimmed, at most 4096 UTF-8 bytes); unresolved ids are put in canonical order and
   * must be distinct.
   */
  static interrupted(
    cause: InterruptionCause,
    reason: string,
    unresolvedEffectIds: readonly EffectId[] = [],
  ): Termination {
    if (!isInterruptionCause(cause)) {
      throw new KernelError(
        ErrorCode.invalidTermination,
        `an interrupted termination needs one of ${interruptionCauseValues.join(', ')}, got ${describe(cause)}`,
      );
    }
    if (!validDiagnostic(reason)) {
      throw new KernelError(
        ErrorCode.invalidTermination,
        `invalid termination reason ${describe(reason)}: it must be non-empty, trimmed, well-formed text ` +
          `of at most ${maxDiagnosticBytes} UTF-8 bytes`,
      );
    }
    return new Termination(cause, reason, undefined, canonicalIds(unresolvedEffectIds));
  }

  /**
   * Strict decode of `{"status","cause","reason"?,"failure"?,"unresolved_effect_ids"?}`: the
   * status must equal the one derived from the cause; every reason/failure/unresolved rule of the
   * factories holds, and unresolved ids must already be sorted and distinct. Every rejection
   * (nested Failure included) throws `code`, so a parent record passes its own.
   */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidTermination): Termination {
    const record: WireRecord = new WireRecord(node, path, code);
    const status = record.string('status');
    const cause = record.string('cause');
    const reason = record.optionalString('reason');
    const failureNode = record.optional('failure');
    const idNodes = record.optionalArray('unresolved_effect_ids') ?? [];
    record.finish();

    if (!isTerminationCause(cause)) record.fail(`must be one of ${terminationCauseValues.join(', ')}`, 'cause');
    if (!isStatus(status)) record.fail('must be a status', 'status');
    if (status !== statusOfCause(cause)) {
      record.fail(`must be ${statusOfCause(cause)} for cause ${cause}, got ${status}`, 'status');
    }
    if (reason !== undefined && !validDiagnostic(reason)) {
      record.fail(
        `must be non-empty, trimmed, well-formed text of at most ${maxDiagnosticBytes} UTF-8 bytes`,
        'reason',
      );
    }

    const ids = idNodes.map((item, index) => {
      const itemPath = `unresolved_effect_ids/${index}`;
      const text = readString(item, record.childPath(itemPath), record.code);
      try {
        return EffectId.parse(text);
      } catch {
        return record.fail('must be an effect id', itemPath);
      }
    });
    for (let index = 1; index < ids.length; index += 1) {
      if ((ids[index - 1] as EffectId).compare(ids[index] as EffectId) >= 0) {
        record.fail('must be sorted ascending and distinct', `unresolved_effect_ids/${index}`);
      }
    }

    if (cause === 'completion') {
      if (reason !== undefined) record.fail('must be absent for a completion', 'reason');
      if (failureNode !== undefined) record.fail('must be absent for a completion', 'failure');
      if (ids.length > 0) record.fail('must be empty for a completion', 'unresolved_effect_ids');
      return new Termination(cause, '', undefined, []);
    }
    if (reason === undefined) record.fail('is required for a termination other than completion', 'reason');

    const kind = failureKindOfCause(cause);
    if (kind === undefined) {
      if (failureNode !== undefined) record.fail(`must be absent for cause ${cause}`, 'failure');
      return new Termination(cause, reason, undefined, ids);
    }
    if (failureNode === undefined) record.fail(`is required for cause ${cause}`, 'failure');
    const failure = Failure.fromWire(failureNode, record.childPath('failure'), code);
    if (failure.kind !== kind) record.fail(`must have kind ${kind} for cause ${cause}`, 'failure/kind');
    if (failure.message !== reason) record.fail('must equal failure.message for a failed termination', 'reason');
    return new Termination(cause, reason, failure, ids);
  }

  static parse(input: string | Uint8Array): Termination {
    return Termination.fromWire(parseJson(input, { code: ErrorCode.invalidTermination }));
  }

  get status(): TerminalStatus {
    return statusOfCause(this.#cause);
  }

  get cause(): TerminationCause {
    return this.#cause;
  }

  /** The bounded diagnostic reason; the empty string for a completion. */
  get reason(): string {
    return this.#reason;
  }

  /** The classified Failure, present exactly when the status is `failed`. */
  get failure(): Failure | undefined {
    return this.#failure;
  }

  /** Canonical (ascending) identities of operations not durably resolved at termination; a copy. */
  get unresolvedEffectIds(): EffectId[] {
    return [...this.#unresolved];
  }

  toWire(): WireValue {
    return {
      status: this.status,
      cause: this.#cause,
      reason: this.#reason === '' ? undefined : this.#reason,
      failure: this.#failure?.toWire(),
      unresolved_effect_ids: this.#unresolved.length === 0 ? undefined : this.#unresolved.map(String),
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: Termination | undefined): boolean {
    return other !== undefined && other.json() === this.json();
  }
}

function canonicalIds(ids: readonly EffectId[]): EffectId[] {
  if (!Array.isArray(ids) || ids.some((id) => !(id instanceof EffectId))) {
    throw new KernelError(ErrorCode.invalidTermination, 'unresolved effect ids must be EffectId values');
  }
  const sorted = [...ids].sort((a, b) => a.compare(b));
  for (let index = 1; index < sorted.length; index += 1) {
    if ((sorted[index - 1] as EffectId).equals(sorted[index])) {
      throw new KernelError(
        ErrorCode.invalidTermination,
        `unresolved effect id ${String(sorted[index])} appears more than once`,
      );
    }
  }
  return sorted;
}
