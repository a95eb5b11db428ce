import type { JsonNode } from './canonical-json.js';
import { parseJson } from './canonical-json.js';
import { ErrorCode, KernelError } from './errors.js';
import { encodeWire, maxUint64, readUint64, WireRecord, type WireValue } from './wire.js';

/**
 * One cumulative allowance: unlimited, or a finite maximum (a finite zero denies everything).
 * Wire: `{"maximum": null}` (unlimited) or `{"maximum": N}`; the member is required.
 */
export class Quota {
  readonly #maximum: bigint | undefined;
  static readonly #unlimited = new Quota(undefined);

  private constructor(maximum: bigint | undefined) {
    this.#maximum = maximum;
    Object.freeze(this);
  }

  static unlimited(): Quota {
    return Quota.#unlimited;
  }

  /** A finite quota; `0` is a real (denying) limit, not "unset". */
  static of(maximum: bigint | number): Quota {
    const value = typeof maximum === 'number' ? toBigInt(maximum) : maximum;
    if (value < 0n || value > maxUint64) {
      throw new KernelError(ErrorCode.invalidQuota, `quota maximum must be a uint64, got ${String(maximum)}`);
    }
    return new Quota(value);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidQuota): Quota {
    const record = new WireRecord(node, path, code);
    const maximum = record.required('maximum');
    record.finish();
    if (maximum.kind === 'null') return Quota.#unlimited;
    return new Quota(readUint64(maximum, record.childPath('maximum'), code));
  }

  static parse(input: string | Uint8Array): Quota {
    return Quota.fromWire(parseJson(input, { code: ErrorCode.invalidQuota }));
  }

  /** The finite maximum, or undefined when unlimited. */
  get maximum(): bigint | undefined {
    return this.#maximum;
  }

  get unlimited(): boolean {
    return this.#maximum === undefined;
  }

  /** Whether a cumulative total of `used` stays within this quota. */
  admits(used: bigint): boolean {
    return this.#maximum === undefined || used <= this.#maximum;
  }

  /** Finite remainder after `used`, or undefined when unlimited (never negative). */
  remaining(used: bigint): bigint | undefined {
    if (this.#maximum === undefined) return undefined;
    return used >= this.#maximum ? 0n : this.#maximum - used;
  }

  /** Whether this quota can grant `other` entirely: unlimited grants anything; finite never grants unlimited. */
  covers(other: Quota): boolean {
    if (this.#maximum === undefined) return true;
    return other.#maximum !== undefined && other.#maximum <= this.#maximum;
  }

  equals(other: Quota): boolean {
    return this.#maximum === other.#maximum;
  }

  toWire(): WireValue {
    return { maximum: this.#maximum ?? null };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  toString(): string {
    return this.#maximum === undefined ? 'unlimited' : this.#maximum.toString();
  }
}

function toBigInt(value: number): bigint {
  if (!Number.isSafeInteger(value)) {
    throw new KernelError(ErrorCode.invalidQuota, `quota maximum must be an integer, got ${value}`);
  }
  return BigInt(value);
}
