import { quoteString, utf8Length, type JsonNode } from './canonical-json.js';
import { KernelError } from './errors.js';
import { Payload } from './payload.js';

/**
 * Wire records: every typed record the kernel persists or hashes is written as canonical JSON
 * (members sorted by UTF-16 code units, the same rule as Payload), so one record has exactly one
 * byte form and re-encoding a parsed record reproduces its digest.
 */

/**
 * Already-canonical JSON text spliced verbatim into a record (payloads, nested records). A spliced
 * value ({@link RawJson.spliced}) is given as its parts and joined only when its text is asked for:
 * a mailbox of thousands of cached records is measured, hashed and written part by part.
 */
export class RawJson {
  #text: string | undefined;
  #byteLength: number | undefined;
  readonly #parts: readonly (string | RawJson)[] | undefined;

  constructor(source: string | SplicedSource) {
    if (typeof source === 'string') {
      this.#text = source;
      this.#parts = undefined;
    } else {
      this.#parts = source.parts;
      this.#byteLength = source.byteLength;
    }
  }

  /** A value whose text is the concatenation of `parts`, `byteLength` UTF-8 bytes long (the caller's sum). */
  static spliced(parts: readonly (string | RawJson)[], byteLength: number): RawJson {
    return new RawJson({ parts, byteLength });
  }

  get text(): string {
    this.#text ??= (this.#parts as readonly (string | RawJson)[]).map((part) => (typeof part === 'string' ? part : part.text)).join('');
    return this.#text;
  }

  /** The parts of a spliced value (undefined for a plain one). */
  get parts(): readonly (string | RawJson)[] | undefined {
    return this.#parts;
  }

  /** The text's UTF-8 length (measured once; keep one instance per cached text to reuse it). */
  get byteLength(): number {
    this.#byteLength ??= utf8Length(this.text);
    return this.#byteLength;
  }
}

interface SplicedSource {
  readonly parts: readonly (string | RawJson)[];
  readonly byteLength: number;
}

export type WireValue =
  | string
  | number
  | bigint
  | boolean
  | null
  | RawJson
  | readonly WireValue[]
  | { readonly [name: string]: WireValue | undefined };

/**
 * `"<name>":` of each member name met so far: records repeat a small set of names, and quoting
 * (well-formedness check, escape scan) each one on every encoding was a visible share of a commit.
 * Bounded, so names that come from data cannot grow it without limit.
 */
const memberPrefixes = new Map<string, { readonly text: string; readonly byteLength: number }>();
const maxMemberPrefixes = 4_096;

function memberPrefix(name: string): { readonly text: string; readonly byteLength: number } {
  let prefix = memberPrefixes.get(name);
  if (prefix === undefined) {
    const text = `${quoteString(name)}:`;
    prefix = { text, byteLength: utf8Length(text) };
    if (memberPrefixes.size < maxMemberPrefixes) memberPrefixes.set(name, prefix);
  }
  return prefix;
}

/**
 * A record's member names sorted by UTF-16 code units (the default sort's order, which `<` on strings
 * shares). The kernel writes its hot records with their members already in that order, so the check
 * usually spares the sort and the arrays it allocates.
 */
function canonicalNames(record: { readonly [name: string]: WireValue | undefined }): string[] {
  const names = Object.keys(record);
  for (let index = 1; index < names.length; index++) {
    if ((names[index - 1] as string) > (names[index] as string)) return names.sort();
  }
  return names;
}

/** Encodes a record canonically; `undefined` members are omitted (the wire's "optional"). */
export function encodeWire(value: WireValue): string {
  if (typeof value === 'string') return quoteString(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`wire numbers must be safe integers, got ${value}`);
    return String(value);
  }
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value === null) return 'null';
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) {
    let text = '[';
    for (let index = 0; index < value.length; index++) text += (index === 0 ? '' : ',') + encodeWire(value[index] as WireValue);
    return `${text}]`;
  }
  const record = value as { readonly [name: string]: WireValue | undefined };
  const names = canonicalNames(record);
  let text = '{';
  let first = true;
  for (const name of names) {
    const member = record[name];
    if (member === undefined) continue;
    text += (first ? '' : ',') + memberPrefix(name).text + encodeWire(member);
    first = false;
  }
  return `${text}}`;
}

/** Texts at least this long stay pieces of their own, so a resumable hash can recognise them unchanged. */
const ownPieceLength = 256;

/**
 * `encodeWire(value)` as a list of pieces whose concatenation is that text: long spliced texts (cached
 * records, payloads) and the parts of spliced values are pieces of their own, kept as the same string
 * objects; the short text between them is merged. A value re-encoded after a small change yields mostly the same pieces, which is what
 * lets {@link HashTrail} hash only what changed.
 */
export function wirePieces(value: WireValue): string[] {
  const writer = new PieceWriter();
  writer.walk(value);
  return writer.finish();
}

/** The state of one {@link wirePieces} walk (methods, not closures made anew for every call). */
class PieceWriter {
  readonly #pieces: string[] = [];
  #literal = '';

  finish(): string[] {
    this.#flush();
    return this.#pieces;
  }

  walk(node: WireValue): void {
    if (node instanceof RawJson) {
      const parts = node.parts;
      if (parts === undefined) this.#text(node.text);
      else for (const part of parts) typeof part === 'string' ? this.#text(part) : this.#own(part);
      return;
    }
    if (Array.isArray(node)) {
      this.#literal += '[';
      for (let index = 0; index < node.length; index++) {
        if (index > 0) this.#literal += ',';
        this.walk(node[index] as WireValue);
      }
      this.#literal += ']';
      return;
    }
    if (node === null || typeof node !== 'object') {
      this.#literal += encodeWire(node);
      return;
    }
    const record = node as { readonly [name: string]: WireValue | undefined };
    this.#literal += '{';
    let first = true;
    for (const name of canonicalNames(record)) {
      const member = record[name];
      if (member === undefined) continue;
      this.#literal += (first ? '' : ',') + memberPrefix(name).text;
      first = false;
      this.walk(member);
    }
    this.#literal += '}';
  }

  #text(piece: string): void {
    if (piece.length < ownPieceLength) {
      this.#literal += piece;
      return;
    }
    this.#flush();
    this.#pieces.push(piece);
  }

  /** A spliced value's parts (a mailbox's records) are pieces of their own whatever their length. */
  #own(part: RawJson): void {
    if (part.parts !== undefined) {
      this.walk(part);
      return;
    }
    this.#flush();
    this.#pieces.push(part.text);
  }

  #flush(): void {
    if (this.#literal !== '') this.#pieces.push(this.#literal);
    this.#literal = '';
  }
}

/** Printable ASCII that canonical quoting leaves as it is (it escapes `"`, `\\`, `<`, `>` and `&`). */
const plainAscii = /^[\x20\x21\x23-\x25\x27-\x3b\x3d\x3f-\x5b\x5d-\x7e]*$/;

/**
 * The UTF-8 length of `encodeWire(value)`, computed from the structure without building the text:
 * spliced records count their (cached) length, so a record holding a large cached member is
 * measured without rescanning it.
 */
export function encodedWireLength(value: WireValue): number {
  // Most strings (ids, digests, names, timestamps) are printable ASCII with nothing to escape: two quotes
  // and one byte a character, without building the quoted text.
  if (typeof value === 'string') return plainAscii.test(value) ? value.length + 2 : utf8Length(quoteString(value));
  if (typeof value === 'bigint') return value.toString().length;
  if (typeof value === 'number') return encodeWire(value).length;
  if (typeof value === 'boolean') return value ? 4 : 5;
  if (value === null) return 4;
  if (value instanceof RawJson) return value.byteLength;
  if (Array.isArray(value)) {
    let length = 2 + Math.max(0, value.length - 1);
    for (const item of value as readonly WireValue[]) length += encodedWireLength(item);
    return length;
  }
  const record = value as { readonly [name: string]: WireValue | undefined };
  let members = 0;
  let length = 2;
  for (const name of Object.keys(record)) {
    const member = record[name];
    if (member === undefined) continue;
    length += memberPrefix(name).byteLength + encodedWireLength(member);
    members += 1;
  }
  return length + Math.max(0, members - 1);
}

const uint64Max = (1n << 64n) - 1n;

/**
 * A strict reader over one parsed JSON object: every member must be read exactly once, so
 * `finish()` rejects unknown members; every type error names the JSON path and throws `code`.
 */
export class WireRecord {
  readonly #members: Map<string, JsonNode>;
  readonly #read = new Set<string>();

  constructor(
    node: JsonNode,
    readonly path: string,
    readonly code: string,
  ) {
    if (node.kind !== 'object') throw wireError(code, path, 'must be an object');
    this.#members = new Map(node.members);
  }

  fail(message: string, member?: string): never {
    throw wireError(this.code, member === undefined ? this.path : `${this.path}/${member}`, message);
  }

  has(name: string): boolean {
    return this.#members.has(name);
  }

  optional(name: string): JsonNode | undefined {
    this.#read.add(name);
    return this.#members.get(name);
  }

  required(name: string): JsonNode {
    const node = this.optional(name);
    if (node === undefined) this.fail('is required', name);
    return node;
  }

  /** `required` that also rejects JSON null. */
  present(name: string): JsonNode {
    const node = this.required(name);
    if (node.kind === 'null') this.fail('must not be null', name);
    return node;
  }

  string(name: string): string {
    return readString(this.required(name), this.childPath(name), this.code);
  }

  optionalString(name: string): string | undefined {
    const node = this.optional(name);
    return node === undefined ? undefined : readString(node, this.childPath(name), this.code);
  }

  uint64(name: string): bigint {
    return readUint64(this.required(name), this.childPath(name), this.code);
  }

  uint32(name: string): number {
    return readUint32(this.required(name), this.childPath(name), this.code);
  }

  boolean(name: string): boolean {
    const node = this.required(name);
    if (node.kind !== 'boolean') this.fail('must be a boolean', name);
    return node.value;
  }

  array(name: string): readonly JsonNode[] {
    const node = this.required(name);
    if (node.kind !== 'array') this.fail('must be an array', name);
    return node.items;
  }

  optionalArray(name: string): readonly JsonNode[] | undefined {
    const node = this.optional(name);
    if (node === undefined) return undefined;
    if (node.kind !== 'array') this.fail('must be an array', name);
    return node.items;
  }

  /**
   * Reads string member `name` and parses it with `parse` (an identity, a digest…); a rejection is
   * re-thrown under this record's code and path, keeping the original as its cause.
   */
  identity<T>(name: string, parse: (text: string) => T, text: string = this.string(name)): T {
    try {
      return parse(text);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new KernelError(this.code, `${this.childPath(name)} is not valid: ${reason}`, { cause: error });
    }
  }

  /** Reads required member `name` as a canonical payload, re-throwing a rejection under this record's code. */
  payload(name: string): Payload {
    const node = this.required(name);
    try {
      return Payload.fromNode(node);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new KernelError(this.code, `${this.childPath(name)} is not a valid payload: ${reason}`, { cause: error });
    }
  }

  childPath(name: string): string {
    return `${this.path}/${name}`;
  }

  /** Rejects members that no reader asked for. */
  finish(): void {
    for (const name of this.#members.keys()) {
      if (!this.#read.has(name)) this.fail(`has an unknown member ${JSON.stringify(name)}`);
    }
  }
}

export function wireError(code: string, path: string, message: string): KernelError {
  return new KernelError(code, `${path || '/'} ${message}`);
}

export function readString(node: JsonNode, path: string, code: string): string {
  if (node.kind !== 'string') throw wireError(code, path, 'must be a string');
  return node.value;
}

/** Reads an unsigned 64-bit integer from its literal text exactly (no float round trip). */
export function readUint64(node: JsonNode, path: string, code: string): bigint {
  if (node.kind !== 'number' || !/^(0|[1-9][0-9]*)$/.test(node.text)) {
    throw wireError(code, path, 'must be an unsigned integer');
  }
  const value = BigInt(node.text);
  if (value > uint64Max) throw wireError(code, path, 'exceeds the uint64 range');
  return value;
}

export function readUint32(node: JsonNode, path: string, code: string): number {
  const value = readUint64(node, path, code);
  if (value > 0xffff_ffffn) throw wireError(code, path, 'exceeds the uint32 range');
  return Number(value);
}

export const maxUint64 = uint64Max;
