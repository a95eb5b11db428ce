import { maxPayloadBytes, parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { Payload } from './payload.js';
import { encodeWire, RawJson, WireRecord, type WireValue } from './wire.js';

/**
 * Whether an Effect definitely succeeded, definitely failed, or has an unknown external result.
 *
 * `unknown` records that the operation may or may not have happened. It is never a licence to
 * retry: replaying an Unknown Effect is an explicit, separately authorised decision, never an
 * inference from this status.
 */
export type SettlementStatus = 'succeeded' | 'failed' | 'unknown';

export const settlementStatusValues: readonly SettlementStatus[] = Object.freeze(['succeeded', 'failed', 'unknown']);

/** A canonical settlement's text around its payload: members sorted, so `payload` first. */
const canonicalOpening = '{"payload":';
const canonicalClosings: readonly (readonly [SettlementStatus, string])[] = settlementStatusValues.map((status) => [status, `,"status":"${status}"}`] as const);

export function isSettlementStatus(value: unknown): value is SettlementStatus {
  return typeof value === 'string' && (settlementStatusValues as readonly string[]).includes(value);
}

export function parseSettlementStatus(value: unknown): SettlementStatus {
  if (!isSettlementStatus(value)) {
    throw new KernelError(ErrorCode.invalidSettlement, `invalid settlement status: ${describe(value)}`);
  }
  return value;
}

/**
 * The immutable final fact for one Effect. The payload is owned by the Effect's target and
 * becomes opaque Signal data for the next Step; it carries the result or diagnostic only, never a
 * second success flag. The Engine reads the status only to keep definite and unknown facts apart;
 * an `unknown` status is never a licence to retry.
 *
 * Wire: `{"status","payload"}` with the payload embedded as canonical JSON. The EffectId a
 * settlement belongs to is held by the enclosing record (the prepared effect or Signal).
 */
export class Settlement {
  readonly #status: SettlementStatus;
  readonly #payload: Payload;

  private constructor(status: SettlementStatus, payload: Payload) {
    this.#status = status;
    this.#payload = payload;
    Object.freeze(this);
  }

  static of(status: SettlementStatus, payload: Payload): Settlement {
    const checked = parseSettlementStatus(status);
    if (!(payload instanceof Payload)) {
      throw new KernelError(ErrorCode.invalidSettlement, 'a settlement needs a Payload');
    }
    return new Settlement(checked, payload);
  }

  /** Strict decode of `{"status","payload"}`; rejections throw `code` (a parent passes its own). */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidSettlement): Settlement {
    const record: WireRecord = new WireRecord(node, path, code);
    const status = record.string('status');
    const payload = record.payload('payload');
    record.finish();
    if (!isSettlementStatus(status)) record.fail(`must be one of ${settlementStatusValues.join(', ')}`, 'status');
    return new Settlement(status, payload);
  }

  static parse(input: string | Uint8Array): Settlement {
    if (typeof input === 'string') {
      const canonical = Settlement.#fromCanonical(input);
      if (canonical !== undefined) return canonical;
    }
    return Settlement.fromWire(parseJson(input, { code: ErrorCode.invalidSettlement }));
  }

  /**
   * The settlement whose canonical form `text` is exactly (what {@link json} writes: the common case,
   * an inbox entry or an announcement), read by parsing only its payload; undefined for any other
   * text, which the full decode then accepts or refuses. The full decode accepts whatever this does,
   * alike: the payload is canonical and within the payload bounds, and one level of wrapper keeps it
   * within the record bounds.
   */
  static #fromCanonical(text: string): Settlement | undefined {
    if (!text.startsWith(canonicalOpening) || text.length * 3 > maxPayloadBytes) return undefined;
    for (const [status, closing] of canonicalClosings) {
      if (!text.endsWith(closing)) continue;
      const json = text.slice(canonicalOpening.length, text.length - closing.length);
      let payload: Payload;
      try {
        payload = Payload.parse(json);
      } catch {
        return undefined;
      }
      return payload.json() === json ? new Settlement(status, payload) : undefined;
    }
    return undefined;
  }

  get status(): SettlementStatus {
    return this.#status;
  }

  get payload(): Payload {
    return this.#payload;
  }

  /** True for `succeeded` and `failed`: the outcome of the operation is known. */
  get definite(): boolean {
    return this.#status !== 'unknown';
  }

  toWire(): WireValue {
    return { status: this.#status, payload: new RawJson(this.#payload.json()) };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: Settlement | undefined): boolean {
    return other !== undefined && other.#status === this.#status && other.#payload.equals(this.#payload);
  }
}

