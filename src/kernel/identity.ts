import { Buffer } from 'node:buffer';
import { randomFillSync } from 'node:crypto';
import { describe, sha256Hex } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';

/** Generic identity text: 1–256 bytes of `[A-Za-z0-9]`, `-`, `_`, `.`, `:`. */
const identityPattern = /^[A-Za-z0-9._:-]{1,256}$/;

/** The Signal identity namespace reserved for Engine-minted deliveries. */
export const engineSignalPrefix = 'signal:engine:';

/**
 * derive(prefix, tag, parts) = prefix + hex(sha256(tag ‖ 0x00 ‖ part1 ‖ 0x00 ‖ part2 …)).
 * No part can contain NUL (identity text is ASCII without controls), so the join is unambiguous.
 */
export function deriveIdentityText(prefix: string, tag: string, parts: readonly string[]): string {
  return prefix + sha256Hex([tag, ...parts].join('\u0000'));
}

export function isIdentityText(text: unknown): text is string {
  return typeof text === 'string' && identityPattern.test(text);
}

function parseIdentityText(text: unknown, what: string): string {
  if (!isIdentityText(text)) {
    throw new KernelError(ErrorCode.invalidIdentity, `invalid ${what}: ${describe(text)}`);
  }
  return text;
}

/** Shared behaviour of text identities; each subclass is a distinct nominal type. */
abstract class TextIdentity {
  readonly #text: string;

  protected constructor(text: string) {
    this.#text = text;
  }

  toString(): string {
    return this.#text;
  }

  toJSON(): string {
    return this.#text;
  }

  equals(other: TextIdentity | undefined): boolean {
    return other !== undefined && other.constructor === this.constructor && other.#text === this.#text;
  }

  /** Ordinal comparison of the identity text, for canonical (sorted) orders. */
  compare(other: TextIdentity): number {
    return this.#text < other.#text ? -1 : this.#text > other.#text ? 1 : 0;
  }
}

/** The stable identity of one Engine-owned Process. Roots are random; children derive from their start Effect. */
export class ProcessId extends TextIdentity {
  declare private readonly brand: 'ProcessId';

  private constructor(text: string) {
    super(text);
    Object.freeze(this);
  }

  static parse(text: unknown): ProcessId {
    return new ProcessId(parseIdentityText(text, 'process id'));
  }

  /** A fresh root identity: `process:` + 32 hex (16 random bytes). */
  static newRoot(): ProcessId {
    return new ProcessId(`process:${randomHex16()}`);
  }

  /** A child identity, deterministic from the start-child Effect so retries and restores agree. */
  static child(startEffect: EffectId): ProcessId {
    return new ProcessId(deriveIdentityText('process:', 'child', [startEffect.toString()]));
  }
}

/** Identifies one Effect at a stable Process, Step sequence (1-based) and batch index (0-based). */
export class EffectId extends TextIdentity {
  declare private readonly brand: 'EffectId';

  private constructor(text: string) {
    super(text);
    Object.freeze(this);
  }

  static parse(text: unknown): EffectId {
    return new EffectId(parseIdentityText(text, 'effect id'));
  }

  static derive(process: ProcessId, stepSequence: bigint, batchIndex: number): EffectId {
    if (stepSequence < 1n || !Number.isInteger(batchIndex) || batchIndex < 0 || batchIndex > 0xffff_ffff) {
      throw new KernelError(ErrorCode.invalidIdentity, 'effect id needs a step sequence >= 1 and a uint32 batch index');
    }
    return new EffectId(
      deriveIdentityText('effect:', 'effect', [process.toString(), stepSequence.toString(), String(batchIndex)]),
    );
  }
}

/** An Engine-minted wait identity, derived from the wait (or wait_children) Effect that opened it. */
export class WaitId extends TextIdentity {
  declare private readonly brand: 'WaitId';

  private constructor(text: string) {
    super(text);
    Object.freeze(this);
  }

  /** Parsing validates syntax only; it does not open or accept anything. */
  static parse(text: unknown): WaitId {
    return new WaitId(parseIdentityText(text, 'wait id'));
  }

  static derive(openingEffect: EffectId): WaitId {
    return new WaitId(deriveIdentityText('wait:', 'wait', [openingEffect.toString()]));
  }
}

/** The stable identity used to deduplicate one Signal delivery. */
export class SignalId extends TextIdentity {
  declare private readonly brand: 'SignalId';

  private constructor(text: string) {
    super(text);
    Object.freeze(this);
  }

  /** Validates syntax only (any namespace); parsing does not accept or deliver the Signal. */
  static parse(text: unknown): SignalId {
    return new SignalId(parseIdentityText(text, 'signal id'));
  }

  /**
   * Validates a caller-chosen identity: the `signal:engine:` namespace is reserved, so a Host retry
   * can never impersonate an Engine-minted settlement or wait answer.
   */
  static parseExternal(text: unknown): SignalId {
    const id = SignalId.parse(text);
    if (id.engineOwned) {
      throw new KernelError(
        ErrorCode.invalidIdentity,
        `signal id ${describe(text)} uses the reserved ${engineSignalPrefix} namespace`,
      );
    }
    return id;
  }

  /** The delivery identity of an Effect's settlement Signal. */
  static settlement(effect: EffectId): SignalId {
    return new SignalId(deriveIdentityText(engineSignalPrefix, 'signal', [effect.toString()]));
  }

  /** The delivery identity of the acknowledgement that opened `wait`. */
  static waitOpened(wait: WaitId): SignalId {
    return new SignalId(deriveIdentityText(engineSignalPrefix, 'wait-opened', [wait.toString()]));
  }

  /** The delivery identity of the Engine's answer to a child wait. */
  static childWaitSatisfied(wait: WaitId): SignalId {
    return new SignalId(deriveIdentityText(engineSignalPrefix, 'child-wait-satisfied', [wait.toString()]));
  }

  /** True for identities in the Engine-reserved namespace. */
  get engineOwned(): boolean {
    return this.toString().startsWith(engineSignalPrefix);
  }
}

/** An Execution-owned stable key for one logical child start. */
export class ChildKey extends TextIdentity {
  declare private readonly brand: 'ChildKey';

  private constructor(text: string) {
    super(text);
    Object.freeze(this);
  }

  static parse(text: unknown): ChildKey {
    return new ChildKey(parseIdentityText(text, 'child key'));
  }
}

/** An Execution-owned logical key naming what a wait is about. */
export class WaitKey extends TextIdentity {
  declare private readonly brand: 'WaitKey';

  private constructor(text: string) {
    super(text);
    Object.freeze(this);
  }

  static parse(text: unknown): WaitKey {
    return new WaitKey(parseIdentityText(text, 'wait key'));
  }
}

const incarnationPattern = /^incarnation:[0-9a-f]{32}$/;
const attemptPattern = /^attempt:[0-9a-f]{32}$/;

/** The one active writer generation of a durable Process tree: `incarnation:` + 32 lowercase hex. */
export class TreeIncarnationId extends TextIdentity {
  declare private readonly brand: 'TreeIncarnationId';

  private constructor(text: string) {
    super(text);
    Object.freeze(this);
  }

  static parse(text: unknown): TreeIncarnationId {
    if (typeof text !== 'string' || !incarnationPattern.test(text)) {
      throw new KernelError(ErrorCode.invalidTreeIncarnationId, `invalid tree incarnation id: ${describe(text)}`);
    }
    return new TreeIncarnationId(text);
  }

  static random(): TreeIncarnationId {
    return new TreeIncarnationId(`incarnation:${randomHex16()}`);
  }
}

/** One physical Effect invocation (replays included): `attempt:` + 32 lowercase hex. Observation only. */
export class EffectAttemptId extends TextIdentity {
  declare private readonly brand: 'EffectAttemptId';

  private constructor(text: string) {
    super(text);
    Object.freeze(this);
  }

  static parse(text: unknown): EffectAttemptId {
    if (typeof text !== 'string' || !attemptPattern.test(text)) {
      throw new KernelError(ErrorCode.invalidEffectAttemptId, `invalid effect attempt id: ${describe(text)}`);
    }
    return new EffectAttemptId(text);
  }

  static random(): EffectAttemptId {
    return new EffectAttemptId(`attempt:${randomHex16()}`);
  }
}

/** Qualified names: 1–128 bytes, a lowercase letter then `[a-z0-9._-]`. */
const qualifiedNamePattern = /^[a-z][a-z0-9._-]{0,127}$/;

/** Descriptor names, capabilities, failure codes, event names and ExecutionState kinds. */
export function isQualifiedName(name: unknown): name is string {
  return typeof name === 'string' && qualifiedNamePattern.test(name);
}

export function parseQualifiedName(name: unknown, what = 'qualified name'): string {
  if (!isQualifiedName(name)) {
    throw new KernelError(ErrorCode.invalidQualifiedName, `invalid ${what}: ${describe(name)}`);
  }
  return name;
}

const randomPool = Buffer.alloc(4096);
/** Starts exhausted, so the first identity fills the pool. */
let randomPoolOffset = randomPool.length;

/**
 * 16 random bytes as 32 hex digits, cut from a pool refilled 4 KiB at a time: every start draws
 * three identities, and one CSPRNG call per 256 of them costs less than one per identity.
 */
function randomHex16(): string {
  if (randomPoolOffset + 16 > randomPool.length) {
    randomFillSync(randomPool);
    randomPoolOffset = 0;
  }
  const hex = randomPool.toString('hex', randomPoolOffset, randomPoolOffset + 16);
  randomPoolOffset += 16;
  return hex;
}
