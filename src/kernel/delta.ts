import { parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { EffectAttemptId, EffectId, ProcessId, TreeIncarnationId } from './identity.js';
import { Payload } from './payload.js';
import { formatUtcTimestamp, isUtcTimestamp, timestampToDate } from './result.js';
import { encodeWire, maxUint64, RawJson, WireRecord, type WireValue } from './wire.js';

/** Bounds the canonical encoding of one Delta payload (1 MiB). */
export const maxDeltaBytes = 1 << 20;

export interface DeltaConfig {
  readonly attemptId: EffectAttemptId;
  readonly processId: ProcessId;
  readonly effectId: EffectId;
  /** The active writer that emitted the increment. */
  readonly treeIncarnationId?: TreeIncarnationId;
  /** One-based emitter admission order within the attempt (uint64). */
  readonly effectSequence: bigint;
  /** A canonical UTC RFC 3339 timestamp or a Date. */
  readonly emittedAt: string | Date;
  /** The Strategy-defined increment, at most {@link maxDeltaBytes} canonical bytes. */
  readonly payload: Payload;
}

/** Refuses a delta being created (`invalid_delta`); one function, not a closure a call. */
function failDelta(message: string): never {
  throw new KernelError(ErrorCode.invalidDelta, `invalid delta: ${message}`);
}

/**
 * A bounded, best-effort stream increment from one Effect attempt. `effectSequence` is the
 * attempt-scoped admission order: delivered sequences increase and dropped payloads leave gaps. A
 * Delta is never replayed from a snapshot and never becomes the authoritative Output.
 *
 * Wire: `{"attempt_id","effect_id","effect_sequence","emitted_at","payload","process_id","tree_incarnation_id"?}`.
 */
export class Delta {
  readonly #attemptId: EffectAttemptId;
  readonly #processId: ProcessId;
  readonly #effectId: EffectId;
  readonly #treeIncarnationId: TreeIncarnationId | undefined;
  readonly #effectSequence: bigint;
  readonly #emittedAt: string;
  readonly #payload: Payload;
  /** The canonical encoding, made on first use (the log append and every stream reader ask for it). */
  #json: string | undefined;

  private constructor(config: DeltaConfig, emittedAt: string) {
    this.#attemptId = config.attemptId;
    this.#processId = config.processId;
    this.#effectId = config.effectId;
    this.#treeIncarnationId = config.treeIncarnationId;
    this.#effectSequence = config.effectSequence;
    this.#emittedAt = emittedAt;
    this.#payload = config.payload;
    Object.freeze(this);
  }

  /** Validates every member; rejections are `invalid_delta`. */
  static create(config: DeltaConfig): Delta {
    const fail: (message: string) => never = failDelta;
    if (typeof config !== 'object' || config === null) fail(`expected the delta members, got ${describe(config)}`);
    if (!(config.attemptId instanceof EffectAttemptId)) fail('attemptId must be an EffectAttemptId');
    if (!(config.processId instanceof ProcessId)) fail('processId must be a ProcessId');
    if (!(config.effectId instanceof EffectId)) fail('effectId must be an EffectId');
    if (config.treeIncarnationId !== undefined && !(config.treeIncarnationId instanceof TreeIncarnationId)) {
      fail('treeIncarnationId must be a TreeIncarnationId when present');
    }
    const sequence: unknown = config.effectSequence;
    if (typeof sequence !== 'bigint' || sequence < 1n || sequence > maxUint64) {
      fail(`effectSequence must be a uint64 >= 1, got ${describe(sequence)}`);
    }
    if (!(config.payload instanceof Payload)) fail('payload must be a Payload');
    checkSize(config.payload, fail);
    let emittedAt: string;
    if (config.emittedAt instanceof Date) {
      try {
        emittedAt = formatUtcTimestamp(config.emittedAt);
      } catch (error) {
        return fail(`emittedAt is not a representable time: ${error instanceof Error ? error.message : String(error)}`);
      }
    } else {
      if (!isUtcTimestamp(config.emittedAt)) {
        fail(`emittedAt must be a canonical UTC RFC 3339 timestamp or a Date, got ${describe(config.emittedAt)}`);
      }
      emittedAt = config.emittedAt;
    }
    return new Delta({ ...config }, emittedAt);
  }

  /** Strict decode; rejections throw `code` with the JSON path. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidDelta): Delta {
    const record: WireRecord = new WireRecord(node, path, code);
    const attemptId = record.identity('attempt_id', (text) => EffectAttemptId.parse(text));
    const processId = record.identity('process_id', (text) => ProcessId.parse(text));
    const effectId = record.identity('effect_id', (text) => EffectId.parse(text));
    const treeIncarnationId = record.has('tree_incarnation_id')
      ? record.identity('tree_incarnation_id', (text) => TreeIncarnationId.parse(text))
      : undefined;
    const effectSequence = record.uint64('effect_sequence');
    const emittedAt = record.string('emitted_at');
    const payloadNode = record.required('payload');
    record.finish();
    if (effectSequence === 0n) record.fail('must be at least 1', 'effect_sequence');
    if (!isUtcTimestamp(emittedAt)) record.fail('must be a canonical UTC RFC 3339 timestamp', 'emitted_at');
    let payload: Payload;
    try {
      payload = Payload.fromNode(payloadNode);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new KernelError(code, `${record.childPath('payload')} is not a valid payload: ${reason}`, { cause: error });
    }
    checkSize(payload, (message) => record.fail(message, 'payload'));
    return new Delta({ attemptId, processId, effectId, treeIncarnationId, effectSequence, emittedAt, payload }, emittedAt);
  }

  static parse(input: string | Uint8Array): Delta {
    return Delta.fromWire(parseJson(input, { code: ErrorCode.invalidDelta, what: 'delta' }));
  }

  /** Correlates the increment with the attempt's EffectStarted, EffectFinished and DeltaDropped facts. */
  get attemptId(): EffectAttemptId {
    return this.#attemptId;
  }

  get processId(): ProcessId {
    return this.#processId;
  }

  /** The logical Effect; stable across replay attempts. */
  get effectId(): EffectId {
    return this.#effectId;
  }

  get treeIncarnationId(): TreeIncarnationId | undefined {
    return this.#treeIncarnationId;
  }

  /** One-based admission order within the attempt; dropped payloads leave gaps. */
  get effectSequence(): bigint {
    return this.#effectSequence;
  }

  /** The exact canonical UTC timestamp. */
  get emittedAt(): string {
    return this.#emittedAt;
  }

  get emittedAtDate(): Date {
    return timestampToDate(this.#emittedAt);
  }

  get payload(): Payload {
    return this.#payload;
  }

  toWire(): WireValue {
    // Members in canonical order: encodeWire then skips its sort.
    return {
      attempt_id: this.#attemptId.toString(),
      effect_id: this.#effectId.toString(),
      effect_sequence: this.#effectSequence,
      emitted_at: this.#emittedAt,
      payload: new RawJson(this.#payload.json()),
      process_id: this.#processId.toString(),
      tree_incarnation_id: this.#treeIncarnationId?.toString(),
    };
  }

  json(): string {
    this.#json ??= encodeWire(this.toWire());
    return this.#json;
  }

  equals(other: Delta | undefined): boolean {
    return other instanceof Delta && other.json() === this.json();
  }

  toString(): string {
    return `delta ${this.#attemptId.toString()}#${this.#effectSequence}`;
  }
}

/** True for a Payload whose canonical encoding fits {@link maxDeltaBytes}. */
export function isDeltaPayload(value: unknown): value is Payload {
  return value instanceof Payload && value.size <= maxDeltaBytes;
}

function checkSize(payload: Payload, fail: (message: string) => never): void {
  if (payload.size > maxDeltaBytes) {
    fail(`payload of ${payload.size} bytes exceeds the ${maxDeltaBytes}-byte delta bound`);
  }
}

