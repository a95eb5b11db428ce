import { parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { EffectId, SignalId, WaitId } from './identity.js';
import { Payload } from './payload.js';
import { isSettlementStatus, settlementStatusValues, type SettlementStatus } from './settlement.js';
import { encodeWire, RawJson, WireRecord, type WireValue } from './wire.js';

/** The members of a {@link Signal}. */
export interface SignalConfig {
  readonly id: SignalId;
  /** The Engine-minted wait this Signal answers or opens; absent for unaddressed input. */
  readonly waitId?: WaitId;
  readonly payload: Payload;
  /** Only on a Dispatcher settlement delivery (then the id is engine-owned and there is no wait). */
  readonly status?: SettlementStatus;
}

/**
 * The immutable input envelope the Engine delivers to an Execution. The SignalId identifies the
 * delivery (deduplication); an optional WaitId names the Engine-created wait it addresses. `status`
 * is present only on a Dispatcher settlement delivery, which carries an engine-owned id and no wait.
 *
 * Wire: `{"id","payload","status"?,"wait_id"?}`.
 */
export class Signal {
  readonly #id: SignalId;
  readonly #waitId: WaitId | undefined;
  readonly #payload: Payload;
  readonly #status: SettlementStatus | undefined;

  private constructor(id: SignalId, waitId: WaitId | undefined, payload: Payload, status: SettlementStatus | undefined) {
    this.#id = id;
    this.#waitId = waitId;
    this.#payload = payload;
    this.#status = status;
    Object.freeze(this);
  }

  /**
   * Builds one delivery envelope, for Definition tests and conformance cases and for the Engine.
   * Constructing one neither admits nor delivers it. Rejections are `invalid_signal`.
   */
  static create(config: SignalConfig): Signal {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidSignal, `invalid signal: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected signal members, got ${describe(config)}`);
    const { id, waitId, payload, status } = config;
    if (!(id instanceof SignalId)) fail(`id must be a SignalId, got ${describe(id)}`);
    if (waitId !== undefined && !(waitId instanceof WaitId)) fail(`waitId must be a WaitId, got ${describe(waitId)}`);
    if (!(payload instanceof Payload)) fail('payload must be a Payload');
    if (status !== undefined) {
      if (!isSettlementStatus(status)) fail(`status must be one of ${settlementStatusValues.join(', ')}`);
      if (waitId !== undefined) fail('a settlement delivery (with a status) cannot address a wait');
      if (!id.engineOwned) fail('a settlement delivery (with a status) must carry an engine-owned id');
    }
    return new Signal(id, waitId, payload, status);
  }

  /** Strict decode; rejections throw `code` (a parent record passes its own) with the JSON path. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidSignal): Signal {
    const record: WireRecord = new WireRecord(node, path, code);
    const id = record.identity('id', (text) => SignalId.parse(text));
    const waitId = record.has('wait_id') ? record.identity('wait_id', (text) => WaitId.parse(text)) : undefined;
    const payload = record.payload('payload');
    const status = record.optionalString('status');
    record.finish();
    if (status !== undefined) {
      if (!isSettlementStatus(status)) record.fail(`must be one of ${settlementStatusValues.join(', ')}`, 'status');
      if (waitId !== undefined) record.fail('a settlement delivery (with a status) cannot address a wait', 'wait_id');
      if (!id.engineOwned) record.fail('a settlement delivery (with a status) must carry an engine-owned id', 'id');
    }
    return new Signal(id, waitId, payload, status);
  }

  static parse(input: string | Uint8Array): Signal {
    return Signal.fromWire(parseJson(input, { code: ErrorCode.invalidSignal, what: 'signal' }));
  }

  get id(): SignalId {
    return this.#id;
  }

  get waitId(): WaitId | undefined {
    return this.#waitId;
  }

  get payload(): Payload {
    return this.#payload;
  }

  /** The settlement status of a Dispatcher settlement delivery; undefined otherwise. */
  get status(): SettlementStatus | undefined {
    return this.#status;
  }

  /**
   * Whether the Engine minted this delivery (its id is in the reserved `signal:engine:` namespace).
   * Like every restored execution fact, a decoded Signal is trustworthy only from trusted storage.
   */
  get engineOwned(): boolean {
    return this.#id.engineOwned;
  }

  /** Whether the Engine minted this delivery as `effectId`'s settlement. */
  settles(effectId: EffectId): boolean {
    return effectId instanceof EffectId && this.#id.equals(SignalId.settlement(effectId));
  }

  toWire(): WireValue {
    return {
      id: this.#id.toString(),
      wait_id: this.#waitId?.toString(),
      payload: new RawJson(this.#payload.json()),
      status: this.#status,
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: Signal | undefined): boolean {
    return other instanceof Signal && other.json() === this.json();
  }
}

/** The members of a {@link SignalRequest}. */
export interface SignalRequestConfig {
  /** A caller-chosen identity outside the reserved `signal:engine:` namespace. */
  readonly id: SignalId | string;
  /** Absent for ordinary next-boundary input; the Engine-minted WaitId for an external wait answer. */
  readonly waitId?: WaitId;
  readonly payload: Payload;
}

/**
 * A Host's (or a parent's `signal_child`) request to deliver Strategy-owned input to a Process.
 * The caller-chosen id makes a retry after an ambiguous failure one logical delivery; the
 * engine-owned namespace is rejected so a request can never impersonate Engine evidence.
 *
 * Wire: `{"id","payload","wait_id"?}`.
 */
export class SignalRequest {
  readonly #id: SignalId;
  readonly #waitId: WaitId | undefined;
  readonly #payload: Payload;

  private constructor(id: SignalId, waitId: WaitId | undefined, payload: Payload) {
    this.#id = id;
    this.#waitId = waitId;
    this.#payload = payload;
    Object.freeze(this);
  }

  /** Rejections (engine-owned or malformed id, wrong member types) are `invalid_signal_request`. */
  static create(config: SignalRequestConfig): SignalRequest {
    const fail = (message: string, cause?: unknown): never => {
      throw new KernelError(ErrorCode.invalidSignalRequest, `invalid signal request: ${message}`, { cause });
    };
    if (typeof config !== 'object' || config === null) fail(`expected request members, got ${describe(config)}`);
    const { waitId, payload } = config;
    let id: SignalId | undefined;
    try {
      id = SignalId.parseExternal(config.id instanceof SignalId ? config.id.toString() : config.id);
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error), error);
    }
    if (waitId !== undefined && !(waitId instanceof WaitId)) fail(`waitId must be a WaitId, got ${describe(waitId)}`);
    if (!(payload instanceof Payload)) fail('payload must be a Payload');
    return new SignalRequest(id as SignalId, waitId, payload);
  }

  /** Strict decode; rejections throw `code` (a parent record passes its own) with the JSON path. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidSignalRequest): SignalRequest {
    const record: WireRecord = new WireRecord(node, path, code);
    const id = record.identity('id', (text) => SignalId.parseExternal(text));
    const waitId = record.has('wait_id') ? record.identity('wait_id', (text) => WaitId.parse(text)) : undefined;
    const payload = record.payload('payload');
    record.finish();
    return new SignalRequest(id, waitId, payload);
  }

  static parse(input: string | Uint8Array): SignalRequest {
    return SignalRequest.fromWire(parseJson(input, { code: ErrorCode.invalidSignalRequest, what: 'signal request' }));
  }

  /** The stable delivery and deduplication identity (never engine-owned). */
  get id(): SignalId {
    return this.#id;
  }

  get waitId(): WaitId | undefined {
    return this.#waitId;
  }

  get payload(): Payload {
    return this.#payload;
  }

  /** The delivery envelope this request becomes once admitted (same id, wait and payload). */
  toSignal(): Signal {
    return Signal.create({ id: this.#id, waitId: this.#waitId, payload: this.#payload });
  }

  toWire(): WireValue {
    return {
      id: this.#id.toString(),
      wait_id: this.#waitId?.toString(),
      payload: new RawJson(this.#payload.json()),
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: SignalRequest | undefined): boolean {
    return other instanceof SignalRequest && other.json() === this.json();
  }
}


