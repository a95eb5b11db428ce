import { parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { Effect } from './effect.js';
import { ErrorCode, KernelError } from './errors.js';
import { Failure, maxDiagnosticBytes, validDiagnostic } from './failure.js';
import { WaitId } from './identity.js';
import { Payload } from './payload.js';
import { encodeWire, RawJson, WireRecord, type WireValue } from './wire.js';

/** The lifecycle intent of one Step. */
export type TransitionKind = 'continue' | 'checkpoint' | 'wait' | 'pause' | 'complete' | 'fail';

export const transitionKindValues: readonly TransitionKind[] = Object.freeze([
  'continue',
  'checkpoint',
  'wait',
  'pause',
  'complete',
  'fail',
]);

export function isTransitionKind(value: unknown): value is TransitionKind {
  return typeof value === 'string' && (transitionKindValues as readonly string[]).includes(value);
}

export function parseTransitionKind(value: unknown): TransitionKind {
  if (!isTransitionKind(value)) {
    throw new KernelError(ErrorCode.invalidTransition, `invalid transition kind: ${describe(value)}`);
  }
  return value;
}

/** The wire member each kind owns; every other kind-specific member must be absent. */
const ownMember: Readonly<Record<TransitionKind, string | undefined>> = Object.freeze({
  continue: 'effects',
  checkpoint: undefined,
  wait: 'wait_id',
  pause: 'reason',
  complete: 'output',
  fail: 'failure',
});

const kindMembers = ['effects', 'wait_id', 'reason', 'output', 'failure'] as const;

interface Fields {
  readonly effects?: readonly Effect[];
  readonly waitId?: WaitId;
  readonly reason?: string;
  readonly output?: Payload;
  readonly failure?: Failure;
}

/**
 * An immutable candidate lifecycle intent returned by one Step. It states how many delivered
 * Signals the Step consumed (a prefix of its window, uint32) and carries exactly its kind's own
 * field: effects on `continue` only, a WaitID on `wait`, a reason on `pause`, the output on
 * `complete`, the Failure on `fail`, nothing on `checkpoint`. The Engine validates the consumed
 * count against the delivered window, captures the candidate state and assigns EffectIds before
 * committing anything.
 *
 * Wire: `{"kind","consumed_signals","effects"?,"wait_id"?,"reason"?,"output"?,"failure"?}`.
 *
 * Determinism: a Step must return the same Transition for the same state and Signal prefix.
 */
export class Transition {
  readonly #kind: TransitionKind;
  readonly #consumed: number;
  readonly #effects: readonly Effect[];
  readonly #waitId: WaitId | undefined;
  readonly #reason: string | undefined;
  readonly #output: Payload | undefined;
  readonly #failure: Failure | undefined;

  private constructor(kind: TransitionKind, consumed: number, fields: Fields) {
    this.#kind = kind;
    this.#consumed = consumed;
    this.#effects = Object.freeze([...(fields.effects ?? [])]);
    this.#waitId = fields.waitId;
    this.#reason = fields.reason;
    this.#output = fields.output;
    this.#failure = fields.failure;
    Object.freeze(this);
  }

  /**
   * Keeps the Process schedulable after consuming `consumed` Signals. The Effects are dispatched
   * in declaration order, only after the Engine has prepared the Step.
   */
  static continue(consumed: number, effects: readonly Effect[] = []): Transition {
    if (!Array.isArray(effects) || effects.some((effect) => !(effect instanceof Effect))) {
      throw new KernelError(ErrorCode.invalidTransition, 'continue effects must be Effect values');
    }
    return new Transition('continue', checkConsumed(consumed), { effects });
  }

  /**
   * Commits the consumed prefix and candidate state; the whole tree must be durably acknowledged
   * before this Process runs anything else. It creates no settlement Signal.
   */
  static checkpoint(consumed: number): Transition {
    return new Transition('checkpoint', checkConsumed(consumed), {});
  }

  /** Moves the Process to waiting for an Engine-minted WaitID already recorded in the candidate state. */
  static wait(consumed: number, waitId: WaitId): Transition {
    if (!(waitId instanceof WaitId)) throw new KernelError(ErrorCode.invalidTransition, 'wait needs a WaitId');
    return new Transition('wait', checkConsumed(consumed), { waitId });
  }

  /** Pauses the Process; the reason is a valid diagnostic (non-empty, trimmed, ≤ 4096 UTF-8 bytes). */
  static pause(consumed: number, reason: string): Transition {
    const checked = checkConsumed(consumed);
    if (!validDiagnostic(reason)) {
      throw new KernelError(
        ErrorCode.invalidTransition,
        `invalid pause reason ${describe(reason)}: it must be non-empty, trimmed, well-formed text ` +
          `of at most ${maxDiagnosticBytes} UTF-8 bytes`,
      );
    }
    return new Transition('pause', checked, { reason });
  }

  /** Supplies the final output; the Engine validates it against the Descriptor before committing. */
  static complete(consumed: number, output: Payload): Transition {
    if (!(output instanceof Payload)) throw new KernelError(ErrorCode.invalidTransition, 'complete needs a Payload');
    return new Transition('complete', checkConsumed(consumed), { output });
  }

  /** Declares a stable Strategy failure (the Execution instance stays trusted, unlike a thrown Step error). */
  static fail(consumed: number, failure: Failure): Transition {
    if (!(failure instanceof Failure)) throw new KernelError(ErrorCode.invalidTransition, 'fail needs a Failure');
    return new Transition('fail', checkConsumed(consumed), { failure });
  }

  /** Strict decode; a member owned by another kind is rejected. Rejections throw `code`. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidTransition): Transition {
    const record: WireRecord = new WireRecord(node, path, code);
    const kind = record.string('kind');
    if (!isTransitionKind(kind)) record.fail(`must be one of ${transitionKindValues.join(', ')}`, 'kind');
    const consumed = record.uint32('consumed_signals');
    for (const member of kindMembers) {
      if (member !== ownMember[kind] && record.has(member)) {
        record.fail(`is not allowed on a ${kind} transition`, member);
      }
    }
    const fields = readFields(record, kind, code);
    record.finish();
    return new Transition(kind, consumed, fields);
  }

  static parse(input: string | Uint8Array): Transition {
    return Transition.fromWire(parseJson(input, { code: ErrorCode.invalidTransition }));
  }

  get kind(): TransitionKind {
    return this.#kind;
  }

  /** How many Signals of the delivered window this Step consumed (a prefix). */
  get consumedSignals(): number {
    return this.#consumed;
  }

  /** The operation intents in declaration order (a copy; empty for every kind but `continue`). */
  get effects(): Effect[] {
    return [...this.#effects];
  }

  get waitId(): WaitId | undefined {
    return this.#waitId;
  }

  get reason(): string | undefined {
    return this.#reason;
  }

  get output(): Payload | undefined {
    return this.#output;
  }

  get failure(): Failure | undefined {
    return this.#failure;
  }

  /**
   * This intent with its Effects stripped: a prepared Step persists the intent without Effects,
   * because the prepared effects are recorded separately. Other kinds are returned unchanged.
   */
  withoutEffects(): Transition {
    if (this.#effects.length === 0) return this;
    return new Transition(this.#kind, this.#consumed, {});
  }

  toWire(): WireValue {
    return {
      kind: this.#kind,
      consumed_signals: this.#consumed,
      effects: this.#effects.length === 0 ? undefined : this.#effects.map((effect) => effect.toWire()),
      wait_id: this.#waitId?.toString(),
      reason: this.#reason,
      output: this.#output === undefined ? undefined : new RawJson(this.#output.json()),
      failure: this.#failure?.toWire(),
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: Transition | undefined): boolean {
    return other !== undefined && other.json() === this.json();
  }
}

function checkConsumed(consumed: unknown): number {
  if (typeof consumed !== 'number' || !Number.isInteger(consumed) || consumed < 0 || consumed > 0xffff_ffff) {
    throw new KernelError(
      ErrorCode.invalidTransition,
      `consumed signals must be a uint32, got ${typeof consumed === 'number' ? consumed : describe(consumed)}`,
    );
  }
  return consumed;
}

function readFields(record: WireRecord, kind: TransitionKind, code: string): Fields {
  switch (kind) {
    case 'continue': {
      const items = record.optionalArray('effects') ?? [];
      return {
        effects: items.map((item, index) => Effect.fromWire(item, record.childPath(`effects/${index}`), code)),
      };
    }
    case 'checkpoint':
      return {};
    case 'wait': {
      const text = record.string('wait_id');
      try {
        return { waitId: WaitId.parse(text) };
      } catch {
        return record.fail('must be a wait id', 'wait_id');
      }
    }
    case 'pause': {
      const reason = record.string('reason');
      if (!validDiagnostic(reason)) {
        record.fail(
          `must be non-empty, trimmed, well-formed text of at most ${maxDiagnosticBytes} UTF-8 bytes`,
          'reason',
        );
      }
      return { reason };
    }
    case 'complete': {
      const node = record.required('output');
      try {
        return { output: Payload.fromNode(node) };
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new KernelError(code, `${record.childPath('output')} is not a valid payload: ${reason}`, {
          cause: error,
        });
      }
    }
    case 'fail':
      return { failure: Failure.fromWire(record.required('failure'), record.childPath('failure'), code) };
  }
}
