import type { JsonNode } from './canonical-json.js';
import { parseJson } from './canonical-json.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { isQualifiedName } from './identity.js';
import { encodeWire, readString, wireError, type WireValue } from './wire.js';

/** Validates one capability: a lowercase qualified authority name. */
export function parseCapability(name: unknown): string {
  if (!isQualifiedName(name)) {
    throw new KernelError(ErrorCode.invalidCapability, `invalid capability: ${describe(name)}`);
  }
  return name;
}

/**
 * An immutable, sorted set of authority names. The kernel only enforces possession and attenuation;
 * it assigns no product meaning. Wire: a strictly ascending JSON array (`[]` when empty; null invalid).
 */
export class CapabilitySet {
  readonly #values: readonly string[];
  static readonly #empty = new CapabilitySet([]);

  private constructor(sorted: readonly string[]) {
    this.#values = Object.freeze([...sorted]);
    Object.freeze(this);
  }

  static get empty(): CapabilitySet {
    return CapabilitySet.#empty;
  }

  /** Construction describes a set, so duplicates collapse and order is normalised. */
  static of(names: Iterable<string>): CapabilitySet {
    const unique = new Set<string>();
    for (const name of names) unique.add(parseCapability(name));
    return new CapabilitySet([...unique].sort());
  }

  /** Decoding is strict: unsorted or duplicated input is rejected rather than repaired. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidCapability): CapabilitySet {
    if (node.kind !== 'array') throw wireError(code, path, 'must be an array of capabilities');
    const values: string[] = [];
    node.items.forEach((item, index) => {
      const name = readString(item, `${path}/${index}`, code);
      if (!isQualifiedName(name)) throw wireError(code, `${path}/${index}`, `is not a capability: ${describe(name)}`);
      const previous = values[values.length - 1];
      if (previous !== undefined && !(previous < name)) {
        throw wireError(code, `${path}/${index}`, 'capabilities must be strictly ascending without duplicates');
      }
      values.push(name);
    });
    return new CapabilitySet(values);
  }

  static parse(input: string | Uint8Array): CapabilitySet {
    return CapabilitySet.fromWire(parseJson(input, { code: ErrorCode.invalidCapability }));
  }

  values(): string[] {
    return [...this.#values];
  }

  get size(): number {
    return this.#values.length;
  }

  contains(name: string): boolean {
    return this.#values.includes(name);
  }

  /** Whether every requested capability is held (monotone privilege: grants only attenuate). */
  allows(requested: CapabilitySet): boolean {
    return requested.#values.every((name) => this.#values.includes(name));
  }

  equals(other: CapabilitySet): boolean {
    return this.#values.length === other.#values.length && this.allows(other);
  }

  toWire(): WireValue {
    return this.#values;
  }

  json(): string {
    return encodeWire(this.toWire());
  }
}
