import { parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { isQualifiedName } from './identity.js';
import { Payload } from './payload.js';
import { encodeWire, RawJson, WireRecord, type WireValue } from './wire.js';

/**
 * The immutable envelope of one Execution Strategy's state: a qualified Strategy `kind` and an
 * opaque canonical payload. The Engine persists and returns the payload without interpreting it;
 * only the Strategy that owns `kind` decodes it.
 *
 * Wire: `{"kind","payload"}` with the payload embedded as canonical JSON.
 *
 * Determinism: the envelope is canonical JSON, so equal states have equal bytes and digests.
 */
export class ExecutionState {
  readonly #kind: string;
  readonly #payload: Payload;

  private constructor(kind: string, payload: Payload) {
    this.#kind = kind;
    this.#payload = payload;
    Object.freeze(this);
  }

  /** Seals an already canonical payload under its owning Strategy kind. */
  static of(kind: string, payload: Payload): ExecutionState {
    if (!(payload instanceof Payload)) {
      throw new KernelError(ErrorCode.invalidExecutionState, 'an execution state needs a Payload');
    }
    return new ExecutionState(checkKind(kind), payload);
  }

  /** Strictly encodes a typed Strategy state (`Payload.encode`) and seals it under `kind`. */
  static encode(kind: string, value: unknown): ExecutionState {
    const checked = checkKind(kind);
    return new ExecutionState(checked, Payload.encode(value));
  }

  /** Strict decode of `{"kind","payload"}`; rejections throw `code` (a parent passes its own). */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidExecutionState): ExecutionState {
    const record: WireRecord = new WireRecord(node, path, code);
    const kind = record.string('kind');
    const payloadNode = record.required('payload');
    record.finish();
    if (!isQualifiedName(kind)) record.fail('must be a qualified name', 'kind');
    let payload: Payload;
    try {
      payload = Payload.fromNode(payloadNode);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new KernelError(code, `${record.childPath('payload')} is not a valid payload: ${reason}`, { cause: error });
    }
    return new ExecutionState(kind, payload);
  }

  static parse(input: string | Uint8Array): ExecutionState {
    return ExecutionState.fromWire(parseJson(input, { code: ErrorCode.invalidExecutionState }));
  }

  /** The qualified name of the owning Strategy state format. */
  get kind(): string {
    return this.#kind;
  }

  /** The opaque Strategy state (a Payload is immutable, so sharing it is safe). */
  get payload(): Payload {
    return this.#payload;
  }

  /**
   * Checks the Strategy kind, then strictly decodes the payload (`Payload.decode`). A different
   * kind fails with `invalid_execution_state`; the Strategy still validates its domain state.
   */
  decode<T>(kind: string): T {
    if (kind !== this.#kind) {
      throw new KernelError(
        ErrorCode.invalidExecutionState,
        `execution state has kind ${describe(this.#kind)}, not ${describe(kind)}`,
      );
    }
    return this.#payload.decode<T>();
  }

  toWire(): WireValue {
    return { kind: this.#kind, payload: new RawJson(this.#payload.json()) };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: ExecutionState | undefined): boolean {
    return other !== undefined && other.#kind === this.#kind && other.#payload.equals(this.#payload);
  }
}

function checkKind(kind: unknown): string {
  if (!isQualifiedName(kind)) {
    throw new KernelError(ErrorCode.invalidExecutionState, `invalid execution state kind: ${describe(kind)}`);
  }
  return kind;
}
