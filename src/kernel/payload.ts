import {
  canonicalize,
  canonicalText,
  closingQuote,
  encodeCanonical,
  maxJsonDepth,
  maxPayloadBytes,
  parseJson,
  toJsonNode,
  utf8Length,
  writeCanonical,
  type JsonNode,
  type JsonNodeSource,
} from './canonical-json.js';
import { Digest } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';

/**
 * Payload: the immutable canonical JSON value carried as Process input and output, Effect and
 * Signal content and settlement data.
 */

const utf8Encoder = new TextEncoder();

/**
 * Levels of nesting kept free for the records that carry a payload: a tree snapshot holds one inside
 * a process, its prepared step or mailbox, a settlement or a child's answer, a framework operation
 * (itself a payload) around another. The deepest of them adds well under this many.
 */
const carrierLevels = 64;

/**
 * The deepest nesting a Payload may have. A record is parsed with the {@link maxJsonDepth} bound, so
 * a payload as deep as that bound, once committed inside a tree, would leave a head that no restore
 * could read again; payloads stop {@link carrierLevels} short of it.
 */
export const maxPayloadDepth = maxJsonDepth - carrierLevels;

/** How deeply canonical JSON text nests (containers open at once; strings skipped). */
function nestingDepth(json: string): number {
  let depth = 0;
  let deepest = 0;
  for (let index = 0; index < json.length; index += 1) {
    const code = json.charCodeAt(index);
    if (code === 0x22) {
      index = closingQuote(json, index);
    } else if (code === 0x5b || code === 0x7b) {
      depth += 1;
      if (depth > deepest) deepest = depth;
    } else if (code === 0x5d || code === 0x7d) {
      depth -= 1;
    }
  }
  return deepest;
}

/** Throws `invalid_payload` for canonical text nested deeper than {@link maxPayloadDepth}. */
function checkDepth(json: string): string {
  // Each level takes an opening and a closing character: shorter text cannot be that deep.
  if (json.length <= 2 * maxPayloadDepth + 1) return json;
  const depth = nestingDepth(json);
  if (depth > maxPayloadDepth) {
    throw new KernelError(
      ErrorCode.invalidPayload,
      `invalid payload: nested ${depth} levels deep, beyond the ${maxPayloadDepth}-level bound (the records that carry a payload need the rest of the ${maxJsonDepth} levels a record may have)`,
    );
  }
  return json;
}

/** Set by Payload's static block: its private constructor, for {@link payloadOfWire}. */
let wrapCanonicalWire: (json: string) => Payload;

/**
 * An immutable canonical JSON value. Every factory copies and normalises its input to the canonical
 * form (sorted members, verbatim numbers, `<>&` and U+2028/9 escaped, at most
 * {@link maxPayloadBytes} bytes), so two payloads with the same meaning-preserving text have the
 * same bytes and the same digest wherever they are produced.
 *
 * Determinism: {@link Payload.json}, {@link Payload.bytes} and {@link Payload.digest} depend only on
 * the canonical text, never on input whitespace, member order or escape spelling.
 *
 * @example
 * ```ts
 * const input = Payload.encode({ topic: 'agent runtimes' });
 * input.json(); // '{"topic":"agent runtimes"}'
 * input.decode<{ topic: string }>().topic; // 'agent runtimes'
 * ```
 */
export class Payload implements JsonNodeSource {
  /** The canonical empty object `{}`, a common "no arguments" payload. */
  static readonly emptyObject: Payload = Payload.parse('{}');

  readonly #json: string;
  /** UTF-8 length of `#json`, computed on first use (-1 until then). */
  #size = -1;
  #node: JsonNode | undefined;
  #digest: Digest | undefined;

  private constructor(json: string) {
    this.#json = json;
    Object.freeze(this);
  }

  /**
   * Validates one I-JSON text (string or UTF-8 bytes) and returns its canonical payload. Throws
   * `invalid_payload` for anything `parseJson` rejects, when the input or its canonical form
   * exceeds {@link maxPayloadBytes}, or when it nests deeper than {@link maxPayloadDepth}.
   */
  static parse(input: string | Uint8Array): Payload {
    return new Payload(checkDepth(canonicalize(input)));
  }

  /**
   * Encodes a JS value strictly (see `encodeCanonical`: no functions, symbols, non-finite numbers,
   * cycles, lone surrogates or non-plain objects without `toJSON`; nesting deeper than
   * {@link maxPayloadDepth}). A nested Payload keeps its exact canonical text, number literals included.
   */
  static encode(value: unknown): Payload {
    if (value instanceof Payload) return value;
    return Payload.#bounded(checkDepth(encodeCanonical(value)));
  }

  /**
   * The array of every item of `arrays` (array payloads), in order: `[1,2]` and `[3]` make `[1,2,3]`.
   * The parts' canonical texts are joined, not re-encoded, so a long array that grows at its end (a
   * conversation) costs what its new items cost. Throws `invalid_payload` when a part is not an array
   * or the result exceeds {@link maxPayloadBytes}; the depth is the deepest part's, already bounded.
   */
  static concatArrays(arrays: readonly Payload[]): Payload {
    const inner: string[] = [];
    for (const [index, part] of arrays.entries()) {
      if (!(part instanceof Payload) || part.#json.charCodeAt(0) !== 0x5b) {
        throw new KernelError(ErrorCode.invalidPayload, `invalid payload: concatArrays part ${index} is not an array payload`);
      }
      if (part.#json.length > 2) inner.push(part.#json.slice(1, -1));
    }
    return Payload.#bounded(`[${inner.join(',')}]`);
  }

  /**
   * The payload of a parsed or hand-built node; throws `invalid_payload` for an invalid node or one over
   * the byte bound. A decoder's path: the node's depth was bounded by the record it was parsed from, so
   * a record the kernel wrote always decodes. New values from outside come in through `encode` or `parse`.
   */
  static fromNode(node: JsonNode): Payload {
    return Payload.#bounded(writeCanonical(node));
  }

  /** Wraps canonical text after checking {@link maxPayloadBytes}. */
  static #bounded(json: string): Payload {
    // A UTF-16 unit encodes to one to three UTF-8 bytes, so only long text needs counting.
    const size = json.length * 3 > maxPayloadBytes ? utf8Length(json) : 0;
    if (size > maxPayloadBytes) {
      throw new KernelError(
        ErrorCode.invalidPayload,
        `invalid payload: canonical encoding of ${size} bytes exceeds the ${maxPayloadBytes}-byte bound`,
      );
    }
    return new Payload(json);
  }

  /** The canonical JSON text. */
  json(): string {
    return this.#json;
  }

  /** A fresh copy of the canonical UTF-8 bytes; the caller owns it. */
  bytes(): Uint8Array {
    return utf8Encoder.encode(this.#json);
  }

  /** The parsed value as a {@link JsonNode} (parsed on first use and cached; treat it as read-only). */
  node(): JsonNode {
    this.#node ??= parseJson(this.#json);
    return this.#node;
  }

  /**
   * The value as plain JS data (objects, arrays, strings, numbers, booleans, null), typed as `T`
   * without runtime checking. Numbers pass through JS numbers, so literals beyond double precision
   * (big integers, long fractions) lose precision here; read `node()` to see the exact literal.
   */
  decode<T = unknown>(): T {
    return JSON.parse(this.#json) as T;
  }

  /** The SHA-256 digest of the canonical UTF-8 bytes (computed once). */
  digest(): Digest {
    this.#digest ??= Digest.of(this.#json);
    return this.#digest;
  }

  /** The canonical encoding's length in UTF-8 bytes. */
  get size(): number {
    if (this.#size < 0) this.#size = utf8Length(this.#json);
    return this.#size;
  }

  /** True when both payloads have the same canonical text (hence the same bytes and digest). */
  equals(other: Payload | undefined | null): boolean {
    return other instanceof Payload && other.#json === this.#json;
  }

  toString(): string {
    return this.#json;
  }

  /** The decoded value, so `JSON.stringify` of a record holding a Payload embeds the value itself. */
  toJSON(): unknown {
    return this.decode();
  }

  /** The exact node, so encoding a record that holds this payload keeps its number literals. */
  [toJsonNode](): JsonNode {
    return this.node();
  }

  /** The canonical text itself, which `encodeCanonical` splices verbatim (the same bytes as writing {@link node}). */
  [canonicalText](): string {
    return this.#json;
  }

  static {
    wrapCanonicalWire = (json) => Payload.#bounded(json);
  }
}

/**
 * The payload of a record's own `encodeWire` text, without parsing it again: the wire encoding is
 * already canonical (sorted members, the same escapes, integer numbers, spliced canonical texts),
 * so re-canonicalising what the kernel just built only repeats work. Kernel-internal (not in
 * index.ts): input from outside goes through {@link Payload.parse}.
 */
export function payloadOfWire(json: string): Payload {
  return wrapCanonicalWire(json);
}

/**
 * True when an optional payload is absent. The seed's "zero value is invalid" maps to absence in
 * TypeScript; an explicit JSON `null` is a present payload and is not zero.
 */
export function isZero(payload: Payload | undefined | null): boolean {
  return payload === undefined || payload === null;
}
