// Over 500 lines: one tokenizer and encoder over the whole JSON grammar; splitting would expose their shared internals.
import { Buffer, isUtf8 } from 'node:buffer';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';

/**
 * Canonical JSON: the strict I-JSON (RFC 7493) parser and the one canonical writer behind every
 * payload byte the kernel hashes or persists. Canonical text has no whitespace, members sorted by
 * UTF-16 code units, number literals kept verbatim, and `<`, `>`, `&`, U+2028, U+2029 escaped.
 */

/**
 * One parsed JSON value. Object members are sorted by UTF-16 code units and carry no duplicate
 * names; numbers keep the verbatim literal so that re-writing a parsed value reproduces its bytes.
 * Nodes are immutable by convention (readonly types); nothing is frozen, to keep parsing cheap.
 */
export type JsonNode =
  | { readonly kind: 'object'; readonly members: ReadonlyArray<readonly [string, JsonNode]> }
  | { readonly kind: 'array'; readonly items: readonly JsonNode[] }
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'number'; readonly text: string }
  | { readonly kind: 'boolean'; readonly value: boolean }
  | { readonly kind: 'null' };

/**
 * The seed's `MaxPayloadBytes` (64 MiB): both the supplied bytes and the canonical encoding of a
 * payload must fit, so a payload accepted once is accepted everywhere it travels.
 */
export const maxPayloadBytes = 64 * 1024 * 1024;

/**
 * The deepest nesting of arrays and objects accepted anywhere in this module. Parsing, writing and
 * conversion are iterative, so the bound exists to cap work and memory, not to protect the stack.
 */
export const maxJsonDepth = 10_000;

/** Options of {@link parseJson} and {@link canonicalize}. */
export interface ParseJsonOptions {
  /** Bound in UTF-8 bytes on the input and, for `canonicalize`, the output; default {@link maxPayloadBytes}. */
  maxBytes?: number;
  /** What the text is, for error messages (`'payload'`, `'event'`, ...); default `'payload'`. */
  what?: string;
  /** The KernelError code thrown on rejection; default `invalid_payload`. */
  code?: string;
}

/**
 * A method key through which a value hands {@link encodeCanonical} (and {@link nodeFromValue}) its
 * exact JSON node instead of a plain value, so that a record embedding a Payload keeps the
 * payload's verbatim number literals.
 */
export const toJsonNode: unique symbol = Symbol.for('scope.kernel.toJsonNode');

/**
 * Kernel-internal (not in index.ts): a method key through which a value hands {@link encodeCanonical}
 * its exact canonical text, spliced verbatim instead of walked or re-written. Only a Payload has it: its
 * text is canonical by construction, and the canonical text of a composite is made of its members'
 * canonical texts, so splicing changes no byte and saves re-encoding a large embedded value.
 */
export const canonicalText: unique symbol = Symbol('scope.kernel.canonicalText');

/** A value that supplies its own JSON node (see {@link toJsonNode}). */
export interface JsonNodeSource {
  [toJsonNode](): JsonNode;
}

const trueNode: JsonNode = Object.freeze({ kind: 'boolean', value: true });
const falseNode: JsonNode = Object.freeze({ kind: 'boolean', value: false });
const nullNode: JsonNode = Object.freeze({ kind: 'null' });

const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Decodes bytes this module produced (already valid UTF-8). */
const utf8Output = new TextDecoder('utf-8', { ignoreBOM: true });
const utf8Encoder = new TextEncoder();

/**
 * Parses strict I-JSON text into a {@link JsonNode}. The input is rejected when it is empty, starts
 * with a BOM, is not valid UTF-8 (bytes) or holds a lone surrogate (strings or `\u` escapes), breaks
 * the RFC 8259 grammar, repeats a member name (compared after unescaping), nests deeper than
 * {@link maxJsonDepth}, or exceeds `maxBytes` UTF-8 bytes. Rejections throw a KernelError with
 * `options.code` whose message names the problem and its offset (bytes for byte input, UTF-16
 * units for string input).
 */
export function parseJson(input: string | Uint8Array, options?: ParseJsonOptions): JsonNode {
  return parseText(prepare(input, options));
}

/**
 * Writes the canonical text of a node. Members are sorted if the node was built unsorted; duplicate
 * names, lone surrogates, malformed number literals and nesting beyond {@link maxJsonDepth} are
 * rejected with `invalid_payload`, because a hand-built node must not yield non-canonical bytes.
 */
export function writeCanonical(node: JsonNode): string {
  return write(node, true);
}

/**
 * Parses `input` and returns its canonical text, checking the `maxBytes` bound on both the input
 * and the output (escaping `<`, `>` and `&` can make the output longer than the input).
 */
export function canonicalize(input: string | Uint8Array, options?: ParseJsonOptions): string {
  try {
    const source = prepareBytes(input, options);
    const bytes = canonicalBytes(source);
    if (bytes.length > source.maxBytes) {
      throw new KernelError(
        source.code,
        `invalid ${source.what}: canonical encoding of ${bytes.length} bytes exceeds the ${source.maxBytes}-byte bound`,
      );
    }
    if (bytes === source.bytes && source.text !== undefined) return source.text;
    return utf8Output.decode(bytes);
  } finally {
    releaseScratch();
  }
}

/**
 * The canonical JSON string literal of `value`: the shortest JSON escape plus `<`, `>`, `&`, U+2028
 * and U+2029 as `\u` escapes (lowercase hex). Throws `invalid_payload` for a lone surrogate, which
 * has no UTF-8 encoding.
 */
export function quoteString(value: string): string {
  if (!isWellFormed(value)) {
    throw new KernelError(
      ErrorCode.invalidPayload,
      `invalid payload: string holds a lone surrogate at offset ${firstLoneSurrogate(value)}`,
    );
  }
  return quote(value);
}

/**
 * In JSON text whose string literal opens at `open` (a `"`), the index of the quote closing it, or
 * `text.length` when it does not close: a backslash escapes the unit after it. For scanners that read
 * the structure of text already known to be JSON and must not count brackets inside strings.
 */
export function closingQuote(text: string, open: number): number {
  let index = open + 1;
  for (; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    if (unit === 0x5c) index += 1;
    else if (unit === 0x22) return index;
  }
  return text.length;
}

/**
 * Converts a JS value to a node by the rules of {@link encodeCanonical}: the node of
 * `encodeCanonical(value)`, so both always agree.
 */
export function nodeFromValue(value: unknown): JsonNode {
  return parseJson(encodeCanonical(value), { maxBytes: Number.MAX_SAFE_INTEGER });
}

/**
 * The canonical JSON text of a JS value, encoded the way `JSON.stringify` would but strictly:
 * plain objects (own enumerable string keys; `undefined` members skipped), arrays (`undefined`
 * items become null), strings, finite numbers (literal `String(n)`, so `-0` becomes `0`), bigints
 * (decimal literal), booleans and null. `toJSON()` is honoured (so a Date becomes its ISO string)
 * and {@link toJsonNode} is preferred to it. Functions, symbols, non-finite numbers, cycles, lone
 * surrogates, class instances without `toJSON` (Map, Set, ...), nesting beyond
 * {@link maxJsonDepth} and a top-level `undefined` throw `invalid_payload` instead of being
 * silently dropped or mangled. No size bound is applied here.
 */
export function encodeCanonical(value: unknown): string {
  const ancestors = new Set<object>();
  const frames: EncodeFrame[] = [];
  let current = resolveValue(value, '');
  if (current === undefined) throw cannotEncode(`cannot encode ${describe(value)}`);
  let out = '';
  for (;;) {
    if (typeof current === 'object' && current !== null) {
      if (current instanceof NodeText) {
        out += current.text;
      } else {
        const frame = openFrame(current, ancestors, frames.length);
        frames.push(frame);
        out += frame.keys === undefined ? '[' : '{';
      }
    } else {
      out += scalarText(current);
    }

    // The value is written: find the next one, closing every container that ends here.
    for (;;) {
      const frame = frames[frames.length - 1];
      if (frame === undefined) return out;
      const next = nextChild(frame);
      if (next !== undefined) {
        out += next;
        current = frame.value;
        break;
      }
      out += frame.keys === undefined ? ']' : '}';
      frames.pop();
      ancestors.delete(frame.source);
    }
  }
}

/**
 * The plain JS value of a node, as `JSON.parse` of its canonical text would give it. Numbers pass
 * through JS numbers (`Number(text)`), so big or precise literals may lose precision here.
 */
export function valueFromNode(node: JsonNode): unknown {
  const holder: { value: unknown } = { value: undefined };
  const work: Array<[JsonNode, Record<string, unknown> | unknown[], string | number]> = [[node, holder, 'value']];
  for (let task = work.pop(); task !== undefined; task = work.pop()) {
    const [current, target, key] = task;
    let value: unknown;
    switch (current.kind) {
      case 'object': {
        const object: Record<string, unknown> = {};
        for (let k = current.members.length - 1; k >= 0; k--) {
          const [name, child] = current.members[k]!;
          work.push([child, object, name]);
        }
        value = object;
        break;
      }
      case 'array': {
        const array: unknown[] = new Array<unknown>(current.items.length);
        for (let k = current.items.length - 1; k >= 0; k--) work.push([current.items[k]!, array, k]);
        value = array;
        break;
      }
      case 'string':
      case 'boolean':
        value = current.value;
        break;
      case 'number':
        value = Number(current.text);
        break;
      case 'null':
        value = null;
        break;
    }
    if (key === '__proto__') {
      Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
    } else {
      (target as Record<string | number, unknown>)[key] = value;
    }
  }
  return holder.value;
}

/** The UTF-8 byte length of a well-formed string, computed without encoding it. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/* ------------------------------------------------------------------------------------------------
 * Input preparation: size bound, UTF-8 / surrogate validation, BOM and emptiness.
 * ---------------------------------------------------------------------------------------------- */

interface ParseContext {
  readonly text: string;
  readonly fromBytes: boolean;
  readonly what: string;
  readonly code: string;
  readonly maxBytes: number;
}

function prepare(input: string | Uint8Array, options: ParseJsonOptions | undefined): ParseContext {
  const what = options?.what ?? 'payload';
  const code = options?.code ?? ErrorCode.invalidPayload;
  const maxBytes = options?.maxBytes ?? maxPayloadBytes;
  let text: string;
  let fromBytes: boolean;
  if (typeof input === 'string') {
    // A UTF-16 unit never encodes to fewer than one UTF-8 byte, so the length alone can reject.
    const size = input.length > maxBytes ? input.length : utf8Length(input);
    if (size > maxBytes) throw tooLarge(code, what, size, maxBytes, input.length > maxBytes);
    if (!isWellFormed(input)) {
      throw new KernelError(
        code,
        `invalid ${what}: lone surrogate at offset ${firstLoneSurrogate(input)} (text must be valid Unicode)`,
      );
    }
    text = input;
    fromBytes = false;
  } else if (input instanceof Uint8Array) {
    if (input.byteLength > maxBytes) throw tooLarge(code, what, input.byteLength, maxBytes, false);
    try {
      text = utf8Decoder.decode(input);
    } catch (error) {
      const offset = firstInvalidUtf8(input);
      throw new KernelError(code, `invalid ${what}: invalid UTF-8 at byte offset ${offset < 0 ? 0 : offset}`, {
        cause: error,
      });
    }
    fromBytes = true;
  } else {
    throw new KernelError(code, `invalid ${what}: expected JSON text as a string or bytes, got ${describe(input)}`);
  }
  const context: ParseContext = { text, fromBytes, what, code, maxBytes };
  if (text.length === 0) fail(context, 'empty input', 0);
  if (text.charCodeAt(0) === 0xfeff) fail(context, 'a byte order mark is not allowed', 0);
  return context;
}

function tooLarge(code: string, what: string, size: number, maxBytes: number, atLeast: boolean): KernelError {
  const amount = atLeast ? `at least ${size}` : `${size}`;
  return new KernelError(code, `invalid ${what}: input of ${amount} bytes exceeds the ${maxBytes}-byte bound`);
}

function fail(context: ParseContext, problem: string, position: number): never {
  const where = context.fromBytes
    ? `byte offset ${utf8Length(context.text.slice(0, position))}`
    : `offset ${position}`;
  throw new KernelError(context.code, `invalid ${context.what}: ${problem} at ${where}`);
}

const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

function isWellFormed(text: string): boolean {
  return nativeIsWellFormed !== undefined ? nativeIsWellFormed.call(text) : firstLoneSurrogate(text) < 0;
}

/** The offset of the first unpaired surrogate code unit, or -1. */
function firstLoneSurrogate(text: string): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
    }
    return i;
  }
  return -1;
}

/**
 * The byte offset of the first ill-formed UTF-8 sequence, or -1 (Unicode Table 3-7: no overlongs,
 * no encoded surrogates, nothing above U+10FFFF). Only runs on the error path, for the message.
 */
function firstInvalidUtf8(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let length: number;
    let low = 0x80;
    let high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b === 0xe0) low = 0xa0;
      else if (b === 0xed) high = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b === 0xf0) low = 0x90;
      else if (b === 0xf4) high = 0x8f;
    } else return i;
    if (i + length > n) return i;
    const second = bytes[i + 1]!;
    if (second < low || second > high) return i;
    for (let k = 2; k < length; k++) {
      const next = bytes[i + k]!;
      if (next < 0x80 || next > 0xbf) return i;
    }
    i += length;
  }
  return -1;
}

/* ------------------------------------------------------------------------------------------------
 * The parser: one iterative pass over UTF-16 code units with an explicit container stack.
 * ---------------------------------------------------------------------------------------------- */

const unusedItems: JsonNode[] = [];
const unusedMembers: Array<[string, JsonNode]> = [];

/** An open array or object on the parser's stack. */
class Frame {
  readonly isObject: boolean;
  readonly start: number;
  /** The items of an array (for an object, a shared empty array that is never written). */
  readonly items: JsonNode[];
  /** The members of an object (for an array, a shared empty array that is never written). */
  readonly members: Array<[string, JsonNode]>;
  key = '';

  constructor(isObject: boolean, start: number) {
    this.isObject = isObject;
    this.start = start;
    this.items = isObject ? unusedItems : [];
    this.members = isObject ? [] : unusedMembers;
  }
}

/** The end offset of the last token read by a scanning helper (the parser is synchronous). */
let scanEnd = 0;

function parseText(context: ParseContext): JsonNode {
  const s = context.text;
  const n = s.length;
  const stack: Frame[] = [];
  let i = 0;
  let c: number;
  let value: JsonNode;
  for (;;) {
    c = s.charCodeAt(i);
    if (c <= 0x20) {
      i = skipWhitespace(s, i);
      c = s.charCodeAt(i);
    }
    if (c === 0x22) {
      value = { kind: 'string', value: readString(context, s, i) };
      i = scanEnd;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      value = { kind: 'number', text: readNumber(context, s, i) };
      i = scanEnd;
    } else if (c === 0x7b || c === 0x5b) {
      const start = i;
      const isObject = c === 0x7b;
      if (stack.length >= maxJsonDepth) fail(context, `nesting deeper than ${maxJsonDepth} levels`, start);
      i++;
      c = s.charCodeAt(i);
      if (c <= 0x20) {
        i = skipWhitespace(s, i);
        c = s.charCodeAt(i);
      }
      if (isObject && c === 0x7d) {
        i++;
        value = { kind: 'object', members: [] };
      } else if (!isObject && c === 0x5d) {
        i++;
        value = { kind: 'array', items: [] };
      } else {
        const frame = new Frame(isObject, start);
        if (isObject) {
          frame.key = readMemberName(context, s, i);
          i = scanEnd;
        }
        stack.push(frame);
        continue;
      }
    } else if (c === 0x74 && s.startsWith('true', i)) {
      value = trueNode;
      i += 4;
    } else if (c === 0x66 && s.startsWith('false', i)) {
      value = falseNode;
      i += 5;
    } else if (c === 0x6e && s.startsWith('null', i)) {
      value = nullNode;
      i += 4;
    } else {
      fail(context, i >= n ? 'unexpected end of input, expected a value' : `expected a value, found ${charAt(s, i)}`, i);
    }

    // A value is complete: attach it to the open containers, closing as many as end here.
    for (;;) {
      const top = stack[stack.length - 1];
      c = s.charCodeAt(i);
      if (c <= 0x20) {
        i = skipWhitespace(s, i);
        c = s.charCodeAt(i);
      }
      if (top === undefined) {
        if (i < n) fail(context, `unexpected ${charAt(s, i)} after the JSON value`, i);
        return value;
      }
      if (top.isObject) {
        top.members.push([top.key, value]);
        if (c === 0x2c) {
          top.key = readMemberName(context, s, i + 1);
          i = scanEnd;
          break;
        }
        if (c !== 0x7d) fail(context, `expected ',' or '}', found ${charAt(s, i)}`, i);
        i++;
        stack.pop();
        value = finishObject(context, top);
      } else {
        top.items.push(value);
        if (c === 0x2c) {
          i++;
          c = s.charCodeAt(i);
          if (c <= 0x20) i = skipWhitespace(s, i);
          if (s.charCodeAt(i) === 0x5d) fail(context, 'trailing comma in array', i);
          break;
        }
        if (c !== 0x5d) fail(context, `expected ',' or ']', found ${charAt(s, i)}`, i);
        i++;
        stack.pop();
        value = { kind: 'array', items: top.items };
      }
    }
  }
}

function skipWhitespace(s: string, i: number): number {
  for (;;) {
    const c = s.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

function charAt(s: string, i: number): string {
  if (i >= s.length) return 'end of input';
  const c = s.charCodeAt(i);
  return c >= 0x20 && c < 0x7f ? `'${s[i]}'` : `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Reads `"name"` and the `:` after it, starting at (whitespace before) the name; sets scanEnd past the colon. */
function readMemberName(context: ParseContext, s: string, i: number): string {
  let c = s.charCodeAt(i);
  if (c <= 0x20) {
    i = skipWhitespace(s, i);
    c = s.charCodeAt(i);
  }
  if (c !== 0x22) {
    fail(context, c === 0x7d ? 'trailing comma in object' : `expected a member name, found ${charAt(s, i)}`, i);
  }
  const name = readString(context, s, i);
  i = scanEnd;
  c = s.charCodeAt(i);
  if (c <= 0x20) {
    i = skipWhitespace(s, i);
    c = s.charCodeAt(i);
  }
  if (c !== 0x3a) fail(context, `expected ':' after a member name, found ${charAt(s, i)}`, i);
  scanEnd = i + 1;
  return name;
}

/** Reads the string literal whose opening quote is at `start`; sets scanEnd past the closing quote. */
function readString(context: ParseContext, s: string, start: number): string {
  const n = s.length;
  let j = start + 1;
  for (;;) {
    const c = s.charCodeAt(j);
    if (c === 0x22) {
      scanEnd = j + 1;
      return s.slice(start + 1, j);
    }
    if (c === 0x5c) return readEscapedString(context, s, start, j);
    if (c < 0x20) fail(context, 'raw control character in string', j);
    if (j >= n) fail(context, 'unterminated string', start);
    j++;
  }
}

function readEscapedString(context: ParseContext, s: string, start: number, j: number): string {
  const n = s.length;
  let out = s.slice(start + 1, j);
  let run = j;
  for (;;) {
    const c = s.charCodeAt(j);
    if (c === 0x22) {
      scanEnd = j + 1;
      return out + s.slice(run, j);
    }
    if (c === 0x5c) {
      out += s.slice(run, j);
      switch (s.charCodeAt(j + 1)) {
        case 0x22:
          out += '"';
          break;
        case 0x5c:
          out += '\\';
          break;
        case 0x2f:
          out += '/';
          break;
        case 0x62:
          out += '\b';
          break;
        case 0x66:
          out += '\f';
          break;
        case 0x6e:
          out += '\n';
          break;
        case 0x72:
          out += '\r';
          break;
        case 0x74:
          out += '\t';
          break;
        case 0x75: {
          const unit = readHex4(s, j + 2);
          if (unit < 0) fail(context, 'invalid \\u escape (expected four hex digits)', j);
          if (unit >= 0xd800 && unit <= 0xdfff) {
            if (unit >= 0xdc00) fail(context, 'lone low surrogate escape', j);
            const low = s.charCodeAt(j + 6) === 0x5c && s.charCodeAt(j + 7) === 0x75 ? readHex4(s, j + 8) : -1;
            if (low < 0xdc00 || low > 0xdfff) fail(context, 'high surrogate escape without a low surrogate escape', j);
            out += String.fromCharCode(unit, low);
            j += 6;
          } else {
            out += String.fromCharCode(unit);
          }
          j += 4;
          break;
        }
        default:
          if (j + 1 >= n) fail(context, 'unterminated string', start);
          fail(context, `invalid escape: found ${charAt(s, j + 1)} after a backslash`, j);
      }
      j += 2;
      run = j;
      continue;
    }
    if (c < 0x20) fail(context, 'raw control character in string', j);
    if (j >= n) fail(context, 'unterminated string', start);
    j++;
  }
}

function readHex4(s: string, k: number): number {
  let value = 0;
  for (let m = 0; m < 4; m++) {
    const c = s.charCodeAt(k + m);
    let digit: number;
    if (c >= 0x30 && c <= 0x39) digit = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) digit = c - 0x57;
    else if (c >= 0x41 && c <= 0x46) digit = c - 0x37;
    else return -1;
    value = value * 16 + digit;
  }
  return value;
}

/** Reads an RFC 8259 number literal starting at `start`; sets scanEnd past it and returns it verbatim. */
function readNumber(context: ParseContext, s: string, start: number): string {
  return s.slice(start, scanNumber(context, s, start));
}

/** Validates the number literal starting at `start`; returns (and sets scanEnd to) its end. */
function scanNumber(context: ParseContext, s: string, start: number): number {
  let j = start;
  let c = s.charCodeAt(j);
  if (c === 0x2d) c = s.charCodeAt(++j);
  if (c === 0x30) {
    c = s.charCodeAt(++j);
    if (c >= 0x30 && c <= 0x39) fail(context, 'leading zeros are not allowed in numbers', start);
  } else if (c >= 0x31 && c <= 0x39) {
    do c = s.charCodeAt(++j);
    while (c >= 0x30 && c <= 0x39);
  } else {
    fail(context, `expected a digit in number, found ${charAt(s, j)}`, j);
  }
  if (c === 0x2e) {
    c = s.charCodeAt(++j);
    if (!(c >= 0x30 && c <= 0x39)) fail(context, `expected a digit after the decimal point, found ${charAt(s, j)}`, j);
    do c = s.charCodeAt(++j);
    while (c >= 0x30 && c <= 0x39);
  }
  if (c === 0x65 || c === 0x45) {
    c = s.charCodeAt(++j);
    if (c === 0x2b || c === 0x2d) c = s.charCodeAt(++j);
    if (!(c >= 0x30 && c <= 0x39)) fail(context, `expected a digit in the exponent, found ${charAt(s, j)}`, j);
    do c = s.charCodeAt(++j);
    while (c >= 0x30 && c <= 0x39);
  }
  scanEnd = j;
  return j;
}

function compareMembers(a: readonly [string, JsonNode], b: readonly [string, JsonNode]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

/** Sorts members by UTF-16 code units (already-sorted input costs one pass) and rejects duplicates. */
function finishObject(context: ParseContext, frame: Frame): JsonNode {
  const members = frame.members;
  for (let k = 1; k < members.length; k++) {
    if (members[k - 1]![0] < members[k]![0]) continue;
    sortMembers(members);
    const duplicate = findDuplicate(members);
    if (duplicate !== undefined) fail(context, `duplicate member name ${describe(duplicate)} in the object`, frame.start);
    break;
  }
  return { kind: 'object', members };
}

/** Sorts members in place by UTF-16 code units; stable, and an insertion sort for small objects. */
function sortMembers(members: Array<readonly [string, JsonNode]>): void {
  if (members.length > 16) {
    members.sort(compareMembers);
    return;
  }
  for (let k = 1; k < members.length; k++) {
    const member = members[k]!;
    const name = member[0];
    let j = k - 1;
    while (j >= 0 && members[j]![0] > name) {
      members[j + 1] = members[j]!;
      j--;
    }
    members[j + 1] = member;
  }
}

/** The first repeated name in sorted members, if any. */
function findDuplicate(members: ReadonlyArray<readonly [string, JsonNode]>): string | undefined {
  for (let k = 1; k < members.length; k++) {
    if (members[k - 1]![0] === members[k]![0]) return members[k]![0];
  }
  return undefined;
}

/* ------------------------------------------------------------------------------------------------
 * The canonicalize fast path, over UTF-8 bytes. It validates exactly like parseText (same checks,
 * same messages) but builds no JsonNode: each value becomes a tape entry (a source span, a span of
 * rewritten bytes, or a container); a container whose source is already canonical collapses to
 * one span, and the output is assembled by copying bytes, then decoded once. Canonical input costs
 * one validating pass and no copy.
 * ---------------------------------------------------------------------------------------------- */

/** A validated UTF-8 source for the fast path. */
interface ByteSource {
  readonly bytes: Uint8Array;
  /** The original text when the input was a string (offsets in messages are then UTF-16 units). */
  readonly text: string | undefined;
  readonly what: string;
  readonly code: string;
  readonly maxBytes: number;
}

function prepareBytes(input: string | Uint8Array, options: ParseJsonOptions | undefined): ByteSource {
  const what = options?.what ?? 'payload';
  const code = options?.code ?? ErrorCode.invalidPayload;
  const maxBytes = options?.maxBytes ?? maxPayloadBytes;
  let bytes: Uint8Array;
  let text: string | undefined;
  if (typeof input === 'string') {
    if (input.length > maxBytes) throw tooLarge(code, what, input.length, maxBytes, true);
    bytes = encodeUtf8(input);
    if (bytes.length > maxBytes) throw tooLarge(code, what, bytes.length, maxBytes, false);
    text = input;
  } else if (input instanceof Uint8Array) {
    if (input.byteLength > maxBytes) throw tooLarge(code, what, input.byteLength, maxBytes, false);
    if (!isUtf8(input)) {
      throw new KernelError(code, `invalid ${what}: invalid UTF-8 at byte offset ${Math.max(firstInvalidUtf8(input), 0)}`);
    }
    bytes = input;
  } else {
    throw new KernelError(code, `invalid ${what}: expected JSON text as a string or bytes, got ${describe(input)}`);
  }
  const source: ByteSource = { bytes, text, what, code, maxBytes };
  if (bytes.length === 0) failAt(source, 'empty input', 0);
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) failAt(source, 'a byte order mark is not allowed', 0);
  return source;
}

/**
 * UTF-8 bytes of a string, with lone surrogates replaced by U+FFFD (EF BF BD): the fast path
 * checks well-formedness only when it meets that sequence or fails, not on every input.
 */
function encodeUtf8(text: string): Uint8Array {
  // One pass into a buffer that fits most text; text of mostly three-byte characters re-encodes.
  scratchText = sized(scratchText, text.length + (text.length >> 1) + 8);
  const { read, written } = utf8Encoder.encodeInto(text, scratchText);
  return read === text.length ? scratchText.subarray(0, written) : utf8Encoder.encode(text);
}

/*
 * Scratch memory reused across canonicalize calls. The work is synchronous and its result is
 * decoded into a string before canonicalize returns, so one set of buffers serves every call and
 * payloads do not each allocate and fault in fresh memory. Buffers grown beyond
 * `retainedScratchBytes` are dropped after the call that needed them.
 */
const retainedScratchBytes = 4 * 1024 * 1024;
let scratchText: Uint8Array = new Uint8Array(4096);
let scratchWork: Uint8Array = new Uint8Array(4096);

/** `buffer` if it holds `size` bytes, else a larger one (contents are not kept). */
function sized(buffer: Uint8Array, size: number): Uint8Array {
  return buffer.length >= size ? buffer : new Uint8Array(Math.max(size, 2 * buffer.length));
}

function releaseScratch(): void {
  if (scratchText.length > retainedScratchBytes) scratchText = new Uint8Array(4096);
  if (scratchWork.length > retainedScratchBytes) scratchWork = new Uint8Array(4096);
  sharedTape.release();
}

/** Throws, for string input holding a lone surrogate, the error parseText throws for it. */
function checkWellFormed(source: ByteSource): void {
  const text = source.text;
  if (text !== undefined && !isWellFormed(text)) {
    throw new KernelError(
      source.code,
      `invalid ${source.what}: lone surrogate at offset ${firstLoneSurrogate(text)} (text must be valid Unicode)`,
    );
  }
}

/** Throws for a problem at byte `position`, worded exactly as parseText words it. */
function failAt(source: ByteSource, problem: string, position: number): never {
  checkWellFormed(source);
  const where =
    source.text === undefined
      ? `byte offset ${position}`
      : `offset ${utf8Output.decode(source.bytes.subarray(0, position)).length}`;
  throw new KernelError(source.code, `invalid ${source.what}: ${problem} at ${where}`);
}

/** Describes the byte at `i` the way charAt describes a UTF-16 unit. */
function byteAt(b: Uint8Array, i: number): string {
  if (i >= b.length) return 'end of input';
  const c = b[i]!;
  if (c >= 0x20 && c < 0x7f) return `'${String.fromCharCode(c)}'`;
  const length = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
  const point = utf8Output.decode(b.subarray(i, i + length)).codePointAt(0) ?? c;
  return `U+${(point > 0xffff ? 0xd800 + ((point - 0x10000) >> 10) : point).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Classes of bytes inside a string literal. */
const plainByte = 0;
const quoteByte = 1;
const backslashByte = 2;
const controlByte = 3;
/** `<`, `>`, `&`: canonical text escapes them. */
const escapedByte = 4;
/** 0xE2 leads U+2028 and U+2029 (E2 80 A8/A9), which canonical text escapes. */
const lineSeparatorLead = 5;

const stringByteClass = new Uint8Array(0x100).fill(plainByte);
stringByteClass.fill(controlByte, 0, 0x20);
stringByteClass[0x22] = quoteByte;
stringByteClass[0x5c] = backslashByte;
stringByteClass[0x26] = escapedByte;
stringByteClass[0x3c] = escapedByte;
stringByteClass[0x3e] = escapedByte;
stringByteClass[0xe2] = lineSeparatorLead;
/** 0xEF leads U+FFFD (EF BF BD), which also stands for a lone surrogate of string input. */
const replacementLead = 6;
stringByteClass[0xef] = replacementLead;

/** Set when a string literal held U+FFFD, so string input must be checked for lone surrogates. */
let sawReplacement = false;

/**
 * The rank of each byte such that comparing ranks byte by byte orders UTF-8 strings by UTF-16
 * code units: supplementary characters (lead bytes F0-F4, surrogate pairs in UTF-16) sort after
 * U+D7FF and before U+E000 (lead bytes EE, EF). Every other byte keeps its value.
 */
const utf16Rank = new Uint8Array(0x100).map((_, b) => (b >= 0xf0 && b <= 0xf4 ? b - 2 : b === 0xee || b === 0xef ? b + 5 : b));

/** scanBytesString outcome: the source literal is canonical and has no escapes. */
const rawCanonical = 0;
/** scanBytesString outcome: the source literal is canonical and has escapes. */
const escapedCanonical = 1;
/** scanBytesString outcome: the source literal is not canonical and has no escapes. */
const rawRewritten = 2;
/** scanBytesString outcome: the source literal is not canonical and has escapes. */
const escapedRewritten = 3;

/** Whether a `\u` escape of `unit` is the canonical spelling of that unit (lowercase hex assumed). */
function isCanonicalUnicodeEscape(unit: number): boolean {
  if (unit < 0x20) return unit !== 0x08 && unit !== 0x09 && unit !== 0x0a && unit !== 0x0c && unit !== 0x0d;
  return unit === 0x26 || unit === 0x3c || unit === 0x3e || unit === 0x2028 || unit === 0x2029;
}

/** Reads four hex digits at `k`: the value, -1 if invalid, or -2 - value when any digit is uppercase. */
function readHexBytes(b: Uint8Array, k: number): number {
  if (k + 4 > b.length) return -1;
  let value = 0;
  let upper = false;
  for (let m = 0; m < 4; m++) {
    const c = b[k + m]!;
    let digit: number;
    if (c >= 0x30 && c <= 0x39) digit = c - 0x30;
    else if (c >= 0x61 && c <= 0x66) digit = c - 0x57;
    else if (c >= 0x41 && c <= 0x46) {
      digit = c - 0x37;
      upper = true;
    } else return -1;
    value = value * 16 + digit;
  }
  return upper ? -2 - value : value;
}

/** Validates the string literal whose quote is at `start`, classifies it, and sets scanEnd past it. */
function scanBytesString(source: ByteSource, b: Uint8Array, start: number): number {
  const n = b.length;
  let canonical = true;
  let escaped = false;
  let j = start + 1;
  while (j < n) {
    const unit = stringByteClass[b[j]!]!;
    if (unit === plainByte) {
      j++;
    } else if (unit === quoteByte) {
      scanEnd = j + 1;
      return escaped ? (canonical ? escapedCanonical : escapedRewritten) : canonical ? rawCanonical : rawRewritten;
    } else if (unit === backslashByte) {
      escaped = true;
      const e = b[j + 1];
      if (e === 0x75) {
        let value = readHexBytes(b, j + 2);
        if (value === -1) failAt(source, 'invalid \\u escape (expected four hex digits)', j);
        const upper = value < -1;
        if (upper) value = -2 - value;
        if (value >= 0xd800 && value <= 0xdfff) {
          if (value >= 0xdc00) failAt(source, 'lone low surrogate escape', j);
          let low = b[j + 6] === 0x5c && b[j + 7] === 0x75 ? readHexBytes(b, j + 8) : -1;
          if (low < -1) low = -2 - low;
          if (low < 0xdc00 || low > 0xdfff) failAt(source, 'high surrogate escape without a low surrogate escape', j);
          canonical = false;
          j += 12;
        } else {
          if (upper || !isCanonicalUnicodeEscape(value)) canonical = false;
          j += 6;
        }
      } else if (e === 0x22 || e === 0x5c || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        j += 2;
      } else if (e === 0x2f) {
        canonical = false;
        j += 2;
      } else {
        if (e === undefined) failAt(source, 'unterminated string', start);
        failAt(source, `invalid escape: found ${byteAt(b, j + 1)} after a backslash`, j);
      }
    } else if (unit === controlByte) {
      failAt(source, 'raw control character in string', j);
    } else if (unit === escapedByte) {
      canonical = false;
      j++;
    } else if (unit === lineSeparatorLead) {
      if (b[j + 1] === 0x80 && (b[j + 2] === 0xa8 || b[j + 2] === 0xa9)) canonical = false;
      j++;
    } else {
      if (b[j + 1] === 0xbf && b[j + 2] === 0xbd) sawReplacement = true;
      j++;
    }
  }
  return failAt(source, 'unterminated string', start);
}

/** Validates the number literal at `start`; returns its end. */
function scanBytesNumber(source: ByteSource, b: Uint8Array, start: number): number {
  let j = start;
  let c = b[j];
  if (c === 0x2d) c = b[++j];
  if (c === 0x30) {
    c = b[++j];
    if (c !== undefined && c >= 0x30 && c <= 0x39) failAt(source, 'leading zeros are not allowed in numbers', start);
  } else if (c !== undefined && c >= 0x31 && c <= 0x39) {
    do c = b[++j];
    while (c !== undefined && c >= 0x30 && c <= 0x39);
  } else {
    failAt(source, `expected a digit in number, found ${byteAt(b, j)}`, j);
  }
  if (c === 0x2e) {
    c = b[++j];
    if (c === undefined || c < 0x30 || c > 0x39) {
      failAt(source, `expected a digit after the decimal point, found ${byteAt(b, j)}`, j);
    }
    do c = b[++j];
    while (c !== undefined && c >= 0x30 && c <= 0x39);
  }
  if (c === 0x65 || c === 0x45) {
    c = b[++j];
    if (c === 0x2b || c === 0x2d) c = b[++j];
    if (c === undefined || c < 0x30 || c > 0x39) failAt(source, `expected a digit in the exponent, found ${byteAt(b, j)}`, j);
    do c = b[++j];
    while (c !== undefined && c >= 0x30 && c <= 0x39);
  }
  return j;
}

function skipBytesWhitespace(b: Uint8Array, i: number): number {
  for (;;) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** Growable byte buffer for rewritten string literals and other replacement text. */
class ByteBuffer {
  bytes: Uint8Array;
  length = 0;

  constructor(capacity: number) {
    this.bytes = new Uint8Array(capacity);
  }

  reserve(extra: number): void {
    if (this.length + extra <= this.bytes.length) return;
    const larger = new Uint8Array(Math.max(2 * this.bytes.length, this.length + extra));
    larger.set(this.bytes.subarray(0, this.length));
    this.bytes = larger;
  }

  /** Appends a code point as UTF-8 (capacity reserved by the caller). */
  pushCodePoint(point: number): void {
    const out = this.bytes;
    let k = this.length;
    if (point < 0x80) {
      out[k++] = point;
    } else if (point < 0x800) {
      out[k++] = 0xc0 | (point >> 6);
      out[k++] = 0x80 | (point & 0x3f);
    } else if (point < 0x10000) {
      out[k++] = 0xe0 | (point >> 12);
      out[k++] = 0x80 | ((point >> 6) & 0x3f);
      out[k++] = 0x80 | (point & 0x3f);
    } else {
      out[k++] = 0xf0 | (point >> 18);
      out[k++] = 0x80 | ((point >> 12) & 0x3f);
      out[k++] = 0x80 | ((point >> 6) & 0x3f);
      out[k++] = 0x80 | (point & 0x3f);
    }
    this.length = k;
  }

  /** Appends an ASCII string (capacity reserved by the caller). */
  pushAscii(text: string): void {
    for (let k = 0; k < text.length; k++) this.bytes[this.length++] = text.charCodeAt(k);
  }
}

/** The canonical escape of a code point, as ASCII text, or undefined when it is written raw. */
function canonicalEscapeOf(point: number): string | undefined {
  if (point < 0x80) return asciiEscapes[point];
  if (point === 0x2028) return '\\u2028';
  if (point === 0x2029) return '\\u2029';
  return undefined;
}

/**
 * Appends the canonical literal of the validated string literal `[start, end)` to `out`; returns
 * its unescaped value when `wantValue` (names with escapes are compared by value).
 */
function rewriteString(b: Uint8Array, start: number, end: number, out: ByteBuffer, wantValue: boolean): string | undefined {
  out.reserve(6 * (end - start) + 2);
  let value = wantValue ? '' : undefined;
  let run = start + 1;
  out.bytes[out.length++] = 0x22;
  let j = start + 1;
  const last = end - 1;
  const point = (p: number): void => {
    const escape = canonicalEscapeOf(p);
    if (escape !== undefined) out.pushAscii(escape);
    else out.pushCodePoint(p);
    if (value !== undefined) value += String.fromCodePoint(p);
  };
  const flush = (to: number): void => {
    for (let k = run; k < to; k++) out.bytes[out.length++] = b[k]!;
    if (value !== undefined && to > run) value += utf8Decoder.decode(b.subarray(run, to));
  };
  while (j < last) {
    const c = b[j]!;
    if (c === 0x5c) {
      flush(j);
      const e = b[j + 1]!;
      if (e === 0x75) {
        let unit = readHexBytes(b, j + 2);
        if (unit < -1) unit = -2 - unit;
        if (unit >= 0xd800 && unit <= 0xdbff) {
          let low = readHexBytes(b, j + 8);
          if (low < -1) low = -2 - low;
          point(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00));
          j += 12;
        } else {
          point(unit);
          j += 6;
        }
      } else {
        point(e === 0x62 ? 0x08 : e === 0x66 ? 0x0c : e === 0x6e ? 0x0a : e === 0x72 ? 0x0d : e === 0x74 ? 0x09 : e);
        j += 2;
      }
      run = j;
    } else if (c === 0x26 || c === 0x3c || c === 0x3e) {
      flush(j);
      point(c);
      j++;
      run = j;
    } else if (c === 0xe2 && b[j + 1] === 0x80 && (b[j + 2] === 0xa8 || b[j + 2] === 0xa9)) {
      flush(j);
      point(b[j + 2] === 0xa8 ? 0x2028 : 0x2029);
      j += 3;
      run = j;
    } else {
      j++;
    }
  }
  flush(last);
  out.bytes[out.length++] = 0x22;
  return value;
}

/** Entry reference: the canonical bytes are the entry's source span. */
const sourceRef = 0;
/** Entry reference: the canonical bytes are the entry's span of the rewritten-bytes buffer. */
const rewrittenRef = 1;
/** Entry reference of an array, or an object already in order, whose source is not canonical. */
const arrayRef = -1;
const objectRef = -2;
/** Entry references at or below this name an object reordered by the tape's order at `orderRefBase - ref`. */
const orderRefBase = -3;

/**
 * The entries of one canonicalize run, in document order (a container's entry precedes its
 * children). An entry is (start, end, ref): ref 0 means the source span `[start, end)` is canonical;
 * ref 1 names a span of `rewritten`; ref < 0 marks a container whose source is not canonical, whose
 * children follow it and whose `end` is the index just past its last descendant. A container that
 * turns out canonical when it closes drops its children and becomes a span, so entries are never
 * moved. One instance is reused by every call (see the scratch memory notes).
 */
class Tape {
  /** Entries as (start, end, ref) triples. */
  entries: Int32Array;
  top = 0;
  /**
   * Member names of the open objects, four ints each: byte span of the contents, entry index, and
   * a prefix ordering names by their first three bytes (-1 for a name with escapes, whose value
   * is kept in `nameValues`).
   */
  names: Int32Array = new Int32Array(64);
  readonly nameValues: Array<string | undefined> = [];
  nameTop = 0;
  /**
   * Member orders of reordered objects, back to back: the member count, then the name entry
   * indices in UTF-16 code unit order.
   */
  orders: Int32Array = new Int32Array(1024);
  orderTop = 0;
  /** Per member count (below 32), the names and order of the last reordered object of that size. */
  readonly shapes: Array<{ readonly names: Int32Array; readonly order: number[] } | undefined> = new Array(32).fill(undefined);
  /** Canonical bytes of rewritten string literals and of `{}` / `[]` written with whitespace. */
  rewritten = new ByteBuffer(4096);

  constructor() {
    this.entries = new Int32Array(3 * 4096);
    this.rewritten.pushAscii('{}[]');
  }

  /** Empties the tape for a new source. */
  reset(): void {
    this.top = 0;
    this.nameTop = 0;
    this.nameValues.length = 0;
    this.orderTop = 0;
    this.shapes.fill(undefined);
    this.rewritten.length = 4;
  }

  /** Drops what the last source referenced, and buffers grown beyond the retained size. */
  release(): void {
    this.reset();
    if (this.entries.byteLength > retainedScratchBytes) this.entries = new Int32Array(3 * 4096);
    if (this.names.byteLength > retainedScratchBytes) this.names = new Int32Array(64);
    if (this.orders.byteLength > retainedScratchBytes) this.orders = new Int32Array(1024);
    if (this.rewritten.bytes.length > retainedScratchBytes) {
      this.rewritten = new ByteBuffer(4096);
      this.rewritten.pushAscii('{}[]');
    }
  }

  pushName(start: number, end: number, entry: number, prefix: number): void {
    const k = 4 * this.nameTop;
    if (k === this.names.length) {
      const larger = new Int32Array(2 * this.names.length);
      larger.set(this.names);
      this.names = larger;
    }
    const names = this.names;
    names[k] = start;
    names[k + 1] = end;
    names[k + 2] = entry;
    names[k + 3] = prefix;
    this.nameTop++;
  }

  /** Appends a member order (see `orders`); returns its offset. */
  pushOrder(names: Int32Array, base: number, relative: readonly number[]): number {
    const offset = this.orderTop;
    const count = relative.length;
    if (offset + count + 1 > this.orders.length) {
      const larger = new Int32Array(Math.max(2 * this.orders.length, offset + count + 1));
      larger.set(this.orders);
      this.orders = larger;
    }
    const orders = this.orders;
    orders[offset] = count;
    for (let k = 0; k < count; k++) orders[offset + 1 + k] = names[4 * (base + relative[k]!) + 2]!;
    this.orderTop = offset + count + 1;
    return offset;
  }

  push(start: number, end: number, ref: number): void {
    const t = 3 * this.top;
    if (t === this.entries.length) this.grow();
    const entries = this.entries;
    entries[t] = start;
    entries[t + 1] = end;
    entries[t + 2] = ref;
    this.top++;
  }

  private grow(): void {
    const larger = new Int32Array(2 * this.entries.length);
    larger.set(this.entries);
    this.entries = larger;
  }
}

/** The tape every canonicalize call uses (see the scratch memory above). */
const sharedTape = new Tape();

/** An open container of the fast path; instances are reused per depth. */
class OpenContainer {
  isObject = false;
  /** Tape index of the container's own entry. */
  entry = 0;
  /** Name stack index of the first member name. */
  nameBase = 0;
  /** The source so far is canonical: no whitespace, no rewritten child, names ascending. */
  verbatim = true;
  /** Member names so far are strictly ascending (hence also free of duplicates). */
  sorted = true;

  reset(isObject: boolean, entry: number, nameBase: number, verbatim: boolean): void {
    this.isObject = isObject;
    this.entry = entry;
    this.nameBase = nameBase;
    this.verbatim = verbatim;
    this.sorted = true;
  }
}

/** Canonical UTF-8 bytes of the source (the source itself, or a subarray of it, when already canonical). */
function canonicalBytes(source: ByteSource): Uint8Array {
  const b = source.bytes;
  const n = b.length;
  const tape = sharedTape;
  tape.reset();
  sawReplacement = false;
  const open: OpenContainer[] = [];
  let depth = 0;
  let frame: OpenContainer | undefined;
  let i = 0;
  let c: number | undefined;
  for (;;) {
    c = b[i];
    if (c !== undefined && c <= 0x20) {
      i = skipBytesWhitespace(b, i);
      c = b[i];
      if (frame !== undefined) frame.verbatim = false;
    }
    if (c === 0x22) {
      const outcome = scanBytesString(source, b, i);
      const end = scanEnd;
      if (outcome >= rawRewritten) {
        const first = tape.rewritten.length;
        rewriteString(b, i, end, tape.rewritten, false);
        tape.push(first, tape.rewritten.length, rewrittenRef);
        if (frame !== undefined) frame.verbatim = false;
      } else {
        tape.push(i, end, sourceRef);
      }
      i = end;
    } else if (c === 0x2d || (c !== undefined && c >= 0x30 && c <= 0x39)) {
      const end = scanBytesNumber(source, b, i);
      tape.push(i, end, sourceRef);
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      const start = i;
      const isObject = c === 0x7b;
      if (depth >= maxJsonDepth) failAt(source, `nesting deeper than ${maxJsonDepth} levels`, start);
      let verbatim = true;
      i++;
      c = b[i];
      if (c !== undefined && c <= 0x20) {
        i = skipBytesWhitespace(b, i);
        c = b[i];
        verbatim = false;
      }
      if (c === (isObject ? 0x7d : 0x5d)) {
        i++;
        if (verbatim) {
          tape.push(start, i, sourceRef);
        } else {
          tape.push(isObject ? 0 : 2, isObject ? 2 : 4, rewrittenRef);
          if (frame !== undefined) frame.verbatim = false;
        }
      } else {
        let next = open[depth];
        if (next === undefined) {
          next = new OpenContainer();
          open[depth] = next;
        }
        next.reset(isObject, tape.top, tape.nameTop, verbatim);
        tape.push(start, 0, isObject ? objectRef : arrayRef);
        depth++;
        frame = next;
        if (isObject) i = scanBytesMember(source, b, i, frame, tape);
        continue;
      }
    } else if (c === 0x74 && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65) {
      tape.push(i, i + 4, sourceRef);
      i += 4;
    } else if (c === 0x66 && b[i + 1] === 0x61 && b[i + 2] === 0x6c && b[i + 3] === 0x73 && b[i + 4] === 0x65) {
      tape.push(i, i + 5, sourceRef);
      i += 5;
    } else if (c === 0x6e && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c) {
      tape.push(i, i + 4, sourceRef);
      i += 4;
    } else {
      failAt(source, i >= n ? 'unexpected end of input, expected a value' : `expected a value, found ${byteAt(b, i)}`, i);
    }

    // A value is complete: continue its container, closing as many as end here.
    for (;;) {
      c = b[i];
      if (c !== undefined && c <= 0x20) {
        i = skipBytesWhitespace(b, i);
        c = b[i];
        if (frame !== undefined) frame.verbatim = false;
      }
      if (frame === undefined) {
        if (i < n) failAt(source, `unexpected ${byteAt(b, i)} after the JSON value`, i);
        if (sawReplacement) checkWellFormed(source);
        return renderBytes(b, tape);
      }
      if (frame.isObject) {
        if (c === 0x2c) {
          i = scanBytesMember(source, b, i + 1, frame, tape);
          break;
        }
        if (c !== 0x7d) failAt(source, `expected ',' or '}', found ${byteAt(b, i)}`, i);
      } else {
        if (c === 0x2c) {
          i++;
          c = b[i];
          if (c !== undefined && c <= 0x20) {
            i = skipBytesWhitespace(b, i);
            frame.verbatim = false;
          }
          if (b[i] === 0x5d) failAt(source, 'trailing comma in array', i);
          break;
        }
        if (c !== 0x5d) failAt(source, `expected ',' or ']', found ${byteAt(b, i)}`, i);
      }
      i++;
      const verbatim = closeBytesContainer(source, b, frame, tape, i);
      depth--;
      frame = depth > 0 ? open[depth - 1] : undefined;
      if (!verbatim && frame !== undefined) frame.verbatim = false;
    }
  }
}

/** Reads a member name (after optional whitespace) and its colon into the tape; returns the offset after the colon. */
function scanBytesMember(source: ByteSource, b: Uint8Array, i: number, frame: OpenContainer, tape: Tape): number {
  let c = b[i];
  if (c !== undefined && c <= 0x20) {
    i = skipBytesWhitespace(b, i);
    c = b[i];
    frame.verbatim = false;
  }
  if (c !== 0x22) {
    failAt(source, c === 0x7d ? 'trailing comma in object' : `expected a member name, found ${byteAt(b, i)}`, i);
  }
  const outcome = scanBytesString(source, b, i);
  const end = scanEnd;
  const k = tape.nameTop;
  const entry = tape.top;
  let value: string | undefined;
  if (outcome === rawCanonical || outcome === escapedCanonical) {
    tape.push(i, end, sourceRef);
    if (outcome === escapedCanonical) {
      const mark = tape.rewritten.length;
      value = rewriteString(b, i, end, tape.rewritten, true);
      tape.rewritten.length = mark;
    }
  } else {
    const first = tape.rewritten.length;
    value = rewriteString(b, i, end, tape.rewritten, outcome === escapedRewritten);
    tape.push(first, tape.rewritten.length, rewrittenRef);
    frame.verbatim = false;
  }
  if (value !== undefined) tape.nameValues[k] = value;
  tape.pushName(i + 1, end - 1, entry, value === undefined ? namePrefix(b, i + 1, end - 1) : -1);
  if (k > frame.nameBase && compareNames(b, tape, k - 1, k) >= 0) {
    frame.sorted = false;
    frame.verbatim = false;
  }
  i = end;
  c = b[i];
  if (c !== undefined && c <= 0x20) {
    i = skipBytesWhitespace(b, i);
    c = b[i];
    frame.verbatim = false;
  }
  if (c !== 0x3a) failAt(source, `expected ':' after a member name, found ${byteAt(b, i)}`, i);
  return i + 1;
}

/** A number ordering names by their first three bytes' UTF-16 ranks (a missing byte ranks lowest). */
function namePrefix(b: Uint8Array, start: number, end: number): number {
  const r0 = start < end ? utf16Rank[b[start]!]! + 1 : 0;
  const r1 = start + 1 < end ? utf16Rank[b[start + 1]!]! + 1 : 0;
  const r2 = start + 2 < end ? utf16Rank[b[start + 2]!]! + 1 : 0;
  return r0 * 0x40000 + r1 * 0x200 + r2;
}

/** Compares two names on the name stack by UTF-16 code units. */
function compareNames(b: Uint8Array, tape: Tape, x: number, y: number): number {
  const names = tape.names;
  const px = names[4 * x + 3]!;
  const py = names[4 * y + 3]!;
  if (px >= 0 && py >= 0) {
    if (px !== py) return px < py ? -1 : 1;
    const xs = names[4 * x]!;
    const ys = names[4 * y]!;
    const xl = names[4 * x + 1]! - xs;
    const yl = names[4 * y + 1]! - ys;
    const length = xl < yl ? xl : yl;
    for (let k = 3; k < length; k++) {
      const bx = b[xs + k]!;
      const by = b[ys + k]!;
      if (bx !== by) return utf16Rank[bx]! < utf16Rank[by]! ? -1 : 1;
    }
    return xl - yl;
  }
  const vx = nameValue(b, tape, x);
  const vy = nameValue(b, tape, y);
  return vx < vy ? -1 : vx > vy ? 1 : 0;
}

function nameValue(b: Uint8Array, tape: Tape, k: number): string {
  const names = tape.names;
  if (names[4 * k + 3]! < 0) return tape.nameValues[k]!;
  return utf8Decoder.decode(b.subarray(names[4 * k]!, names[4 * k + 1]!));
}

/**
 * Completes a closed container's entry: a canonical one collapses to its source span, any other
 * records where its descendants end and, for an out-of-order object, its member order. Returns
 * whether the container was canonical as written.
 */
function closeBytesContainer(source: ByteSource, b: Uint8Array, frame: OpenContainer, tape: Tape, end: number): boolean {
  const entry = frame.entry;
  const entries = tape.entries;
  if (frame.verbatim) {
    tape.top = entry + 1;
    entries[3 * entry + 1] = end;
    entries[3 * entry + 2] = sourceRef;
  } else {
    entries[3 * entry + 1] = tape.top;
    if (!frame.sorted) {
      entries[3 * entry + 2] = orderRefBase - memberOrder(source, b, tape, frame.nameBase, entries[3 * entry]!);
    }
  }
  tape.nameTop = frame.nameBase;
  return frame.verbatim;
}

/**
 * Appends the order of the member names `[base, nameTop)` by UTF-16 code units to the tape and
 * returns its offset; throws for a duplicate name. Objects of one shape (the same names in the same order, as in arrays of
 * records) reuse the order computed for the previous such object.
 */
function memberOrder(source: ByteSource, b: Uint8Array, tape: Tape, base: number, objectStart: number): number {
  const count = tape.nameTop - base;
  const names = tape.names;
  const cached = count < tape.shapes.length ? tape.shapes[count] : undefined;
  let relative: number[] | undefined;
  if (cached !== undefined && sameShape(b, names, base, count, cached.names)) relative = cached.order;
  if (relative === undefined) {
    relative = [];
    for (let k = 0; k < count; k++) relative.push(k);
    if (count <= 16) {
      for (let k = 1; k < count; k++) {
        const member = relative[k]!;
        let j = k - 1;
        while (j >= 0 && compareNames(b, tape, base + relative[j]!, base + member) > 0) {
          relative[j + 1] = relative[j]!;
          j--;
        }
        relative[j + 1] = member;
      }
    } else {
      relative.sort((x, y) => compareNames(b, tape, base + x, base + y));
    }
    for (let k = 1; k < count; k++) {
      const member = base + relative[k]!;
      if (compareNames(b, tape, base + relative[k - 1]!, member) === 0) {
        failAt(source, `duplicate member name ${describe(nameValue(b, tape, member))} in the object`, objectStart);
      }
    }
    if (count < tape.shapes.length) {
      const shape = names.slice(4 * base, 4 * (base + count));
      let raw = true;
      for (let k = 3; k < shape.length; k += 4) if (shape[k]! < 0) raw = false;
      if (raw) tape.shapes[count] = { names: shape, order: relative };
    }
  }
  return tape.pushOrder(names, base, relative);
}

/** Whether the names `[base, base + count)` equal, in order, the cached names of a shape. */
function sameShape(b: Uint8Array, names: Int32Array, base: number, count: number, shape: Int32Array): boolean {
  for (let k = 0; k < count; k++) {
    const x = 4 * (base + k);
    const y = 4 * k;
    if (names[x + 3] !== shape[y + 3]) return false;
    const xs = names[x]!;
    const ys = shape[y]!;
    const length = names[x + 1]! - xs;
    if (length !== shape[y + 1]! - ys) return false;
    if (xs === ys) continue;
    for (let m = 3; m < length; m++) if (b[xs + m] !== b[ys + m]) return false;
  }
  return true;
}

/** Copies `work[start, end)` to `work[at ...)`; returns the new write offset. */
function copyWithin(work: Uint8Array, start: number, end: number, at: number): number {
  if (end - start > 8) {
    work.copyWithin(at, start, end);
    return at + end - start;
  }
  for (let k = start; k < end; k++) work[at++] = work[k]!;
  return at;
}

/**
 * Writes the canonical bytes of the tape's root entry. Source bytes are copied in runs: a span
 * that continues the pending run extends it, and so does a separator or bracket when the next
 * source byte is that same byte, so stretches of the input that stay in place cost one copy.
 */
function renderBytes(b: Uint8Array, tape: Tape): Uint8Array {
  const { entries, orders } = tape;
  const extra = tape.rewritten.bytes;
  const rootRef = entries[2]!;
  if (rootRef === sourceRef) return entries[0] === 0 && entries[1] === b.length ? b : b.subarray(entries[0]!, entries[1]!);
  if (rootRef === rewrittenRef) return extra.subarray(entries[0]!, entries[1]!);

  // One buffer holds the source, the rewritten bytes and the output, so every copy is a
  // copyWithin. Every source byte is written at most once, plus rewritten bytes; separators move.
  const n = b.length;
  const r = tape.rewritten.length;
  scratchWork = sized(scratchWork, 2 * (n + r));
  const work = scratchWork;
  work.set(b);
  work.set(extra.subarray(0, r), n);
  const first = n + r;
  let at = first;
  // The pending source run [runStart, runEnd), not yet copied to the output.
  let runStart = entries[0]!;
  let runEnd = runStart + 1;
  const openEntries: number[] = [];
  const openCursors: number[] = [];
  let depth = 0;
  let container = 0;
  let ref = rootRef;
  // For a reordered object, the offset of its order and the cursor is a position in it; otherwise
  // -1 and the cursor is the next child entry.
  let order = ref <= orderRefBase ? orderRefBase - ref : -1;
  let cursor = order >= 0 ? 0 : 1;
  for (;;) {
    if (order >= 0 ? cursor === orders[order] : cursor === entries[3 * container + 1]!) {
      const close = ref === arrayRef ? 0x5d : 0x7d;
      if (b[runEnd] === close) {
        runEnd++;
      } else {
        at = copyWithin(work, runStart, runEnd, at);
        work[at++] = close;
        runStart = runEnd;
      }
      if (depth === 0) break;
      depth--;
      container = openEntries[depth]!;
      cursor = openCursors[depth]!;
      ref = entries[3 * container + 2]!;
      order = ref <= orderRefBase ? orderRefBase - ref : -1;
      continue;
    }
    if (order >= 0 ? cursor > 0 : cursor > container + 1) {
      if (b[runEnd] === 0x2c) {
        runEnd++;
      } else {
        at = copyWithin(work, runStart, runEnd, at);
        work[at++] = 0x2c;
        runStart = runEnd;
      }
    }
    let entry = order >= 0 ? orders[order + 1 + cursor]! : cursor;
    if (ref !== arrayRef) {
      const t = 3 * entry;
      const start = entries[t]!;
      if (entries[t + 2] !== sourceRef) {
        at = copyWithin(work, runStart, runEnd, at);
        at = copyWithin(work, n + start, n + entries[t + 1]!, at);
        runStart = runEnd;
      } else if (start === runEnd) {
        runEnd = entries[t + 1]!;
      } else {
        at = copyWithin(work, runStart, runEnd, at);
        runStart = start;
        runEnd = entries[t + 1]!;
      }
      if (b[runEnd] === 0x3a) {
        runEnd++;
      } else {
        at = copyWithin(work, runStart, runEnd, at);
        work[at++] = 0x3a;
        runStart = runEnd;
      }
      entry++;
    }
    const t = 3 * entry;
    const valueRef = entries[t + 2]!;
    const start = entries[t]!;
    if (valueRef === rewrittenRef) {
      at = copyWithin(work, runStart, runEnd, at);
      at = copyWithin(work, n + start, n + entries[t + 1]!, at);
      runStart = runEnd;
      cursor = order >= 0 ? cursor + 1 : entry + 1;
      continue;
    }
    // A source span, or the opening bracket of a container that is not canonical as written.
    const end = valueRef === sourceRef ? entries[t + 1]! : start + 1;
    if (start === runEnd) {
      runEnd = end;
    } else {
      at = copyWithin(work, runStart, runEnd, at);
      runStart = start;
      runEnd = end;
    }
    if (valueRef === sourceRef) {
      cursor = order >= 0 ? cursor + 1 : entry + 1;
      continue;
    }
    openEntries[depth] = container;
    openCursors[depth] = order >= 0 ? cursor + 1 : entries[t + 1]!;
    depth++;
    container = entry;
    ref = valueRef;
    order = ref <= orderRefBase ? orderRefBase - ref : -1;
    cursor = order >= 0 ? 0 : entry + 1;
  }
  at = copyWithin(work, runStart, runEnd, at);
  return work.subarray(first, at);
}

/* ------------------------------------------------------------------------------------------------
 * The writer: iterative, so depth costs heap rather than stack.
 * ---------------------------------------------------------------------------------------------- */

const needsEscape = /[\u0000-\u001f"\\<>&\u2028\u2029]/;

/** The escape of each ASCII code unit that needs one (index = code unit). */
const asciiEscapes: Array<string | undefined> = Array.from({ length: 0x80 }, (_, c) =>
  c < 0x20 ? `\\u00${c.toString(16).padStart(2, '0')}` : undefined,
);
asciiEscapes[0x08] = '\\b';
asciiEscapes[0x09] = '\\t';
asciiEscapes[0x0a] = '\\n';
asciiEscapes[0x0c] = '\\f';
asciiEscapes[0x0d] = '\\r';
asciiEscapes[0x22] = '\\"';
asciiEscapes[0x5c] = '\\\\';
asciiEscapes[0x26] = '\\u0026';
asciiEscapes[0x3c] = '\\u003c';
asciiEscapes[0x3e] = '\\u003e';

/** Quotes a well-formed string canonically. */
function quote(value: string): string {
  if (!needsEscape.test(value)) return `"${value}"`;
  let out = '"';
  let run = 0;
  for (let k = 0; k < value.length; k++) {
    const c = value.charCodeAt(k);
    let escape: string | undefined;
    if (c < 0x80) {
      escape = asciiEscapes[c];
      if (escape === undefined) continue;
    } else if (c === 0x2028) {
      escape = '\\u2028';
    } else if (c === 0x2029) {
      escape = '\\u2029';
    } else {
      continue;
    }
    out += value.slice(run, k) + escape;
    run = k + 1;
  }
  return `${out}${value.slice(run)}"`;
}

const numberLiteral = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

function invalidNode(problem: string): KernelError {
  return new KernelError(ErrorCode.invalidPayload, `invalid payload node: ${problem}`);
}

/** Members in canonical order; validates a hand-built node (`check`), trusting parser output otherwise. */
function orderedMembers(
  node: Extract<JsonNode, { kind: 'object' }>,
  check: boolean,
): ReadonlyArray<readonly [string, JsonNode]> {
  const members = node.members;
  if (!check) return members;
  if (!Array.isArray(members)) throw invalidNode('object members must be an array');
  for (const member of members) {
    if (!Array.isArray(member) || typeof member[0] !== 'string') {
      throw invalidNode('object members must be [name, node] pairs');
    }
    if (!isWellFormed(member[0])) throw invalidNode(`member name ${describe(member[0])} holds a lone surrogate`);
  }
  for (let k = 1; k < members.length; k++) {
    if (members[k - 1]![0] < members[k]![0]) continue;
    const sorted = [...members];
    sortMembers(sorted);
    const duplicate = findDuplicate(sorted);
    if (duplicate !== undefined) throw invalidNode(`duplicate member name ${describe(duplicate)}`);
    return sorted;
  }
  return members;
}

/** Writes the text of one node that has no children, or throws for an invalid hand-built one. */
function writeLeaf(node: JsonNode, check: boolean): string {
  switch (node.kind) {
    case 'string':
      if (check && (typeof node.value !== 'string' || !isWellFormed(node.value))) {
        throw invalidNode(`string ${describe(node.value)} is not a well-formed string`);
      }
      return quote(node.value);
    case 'number':
      if (check && (typeof node.text !== 'string' || !numberLiteral.test(node.text))) {
        throw invalidNode(`${describe(node.text)} is not a JSON number literal`);
      }
      return node.text;
    case 'boolean':
      return node.value === true ? 'true' : 'false';
    case 'null':
      return 'null';
    default:
      throw invalidNode(`unknown node kind ${describe((node as { kind?: unknown } | null)?.kind)}`);
  }
}

function write(root: JsonNode, check: boolean): string {
  const nodes: JsonNode[] = [];
  const orders: Array<ReadonlyArray<readonly [string, JsonNode]>> = [];
  const positions: number[] = [];
  let out = '';
  let node = root;
  for (;;) {
    if ((node.kind === 'object' || node.kind === 'array') && nodes.length >= maxJsonDepth) {
      throw invalidNode(`nesting deeper than ${maxJsonDepth} levels`);
    }
    if (node.kind === 'object') {
      const members = orderedMembers(node, check);
      const first = members[0];
      if (first === undefined) {
        out += '{}';
      } else {
        out += `{${quote(first[0])}:`;
        nodes.push(node);
        orders.push(members);
        positions.push(0);
        node = first[1];
        continue;
      }
    } else if (node.kind === 'array') {
      if (check && !Array.isArray(node.items)) throw invalidNode('array items must be an array');
      const first = node.items[0];
      if (first === undefined) {
        if (node.items.length !== 0) throw invalidNode('array item is missing');
        out += '[]';
      } else {
        out += '[';
        nodes.push(node);
        orders.push(unusedMembers);
        positions.push(0);
        node = first;
        continue;
      }
    } else {
      out += writeLeaf(node, check);
    }

    // The node is written: move to the next sibling, closing every container that ends here.
    for (;;) {
      const depth = nodes.length - 1;
      const parent = nodes[depth];
      if (parent === undefined) return out;
      const next = positions[depth]! + 1;
      if (parent.kind === 'object') {
        const member = orders[depth]![next];
        if (member !== undefined) {
          positions[depth] = next;
          out += `,${quote(member[0])}:`;
          node = member[1];
          break;
        }
        out += '}';
      } else if (parent.kind === 'array') {
        const item = parent.items[next];
        if (item !== undefined) {
          positions[depth] = next;
          out += ',';
          node = item;
          break;
        }
        if (next < parent.items.length) throw invalidNode('array item is missing');
        out += ']';
      }
      nodes.pop();
      orders.pop();
      positions.pop();
    }
  }
}

/* ------------------------------------------------------------------------------------------------
 * Encoding of JS values.
 * ---------------------------------------------------------------------------------------------- */

/** The canonical text of a node supplied through {@link toJsonNode}. */
class NodeText {
  constructor(readonly text: string) {}
}

/** An array or plain object being encoded. */
class EncodeFrame {
  /** Sorted member names, or undefined for an array. */
  readonly keys: string[] | undefined;
  readonly length: number;
  index = 0;
  /** Whether a member has been written (objects skip `undefined` members). */
  wrote = false;
  /** The resolved value of the child `nextChild` returned text for. */
  value: unknown = undefined;

  constructor(readonly source: object) {
    if (Array.isArray(source)) {
      this.keys = undefined;
      this.length = source.length;
    } else {
      this.keys = sortedKeys(source);
      this.length = this.keys.length;
    }
  }
}

/** Own enumerable string keys in UTF-16 code unit order (already-ordered keys cost one pass). */
function sortedKeys(source: object): string[] {
  const keys = Object.keys(source);
  const count = keys.length;
  for (let k = 1; k < count; k++) {
    if (keys[k - 1]! < keys[k]!) continue;
    if (count > 16) return keys.sort();
    for (let m = k; m < count; m++) {
      const key = keys[m]!;
      let j = m - 1;
      while (j >= 0 && keys[j]! > key) {
        keys[j + 1] = keys[j]!;
        j--;
      }
      keys[j + 1] = key;
    }
    break;
  }
  return keys;
}

function cannotEncode(problem: string): KernelError {
  return new KernelError(ErrorCode.invalidPayload, `invalid payload: ${problem}`);
}

/**
 * Applies {@link canonicalText} or {@link toJsonNode} (to a NodeText) or `toJSON(key)`, and rejects
 * what has no JSON form; returns undefined for a value JSON omits (undefined).
 */
function resolveValue(input: unknown, key: string | number): unknown {
  let value = input;
  if (typeof value === 'object' && value !== null) {
    const text = (value as { [canonicalText]?: unknown })[canonicalText];
    if (typeof text === 'function') return new NodeText(text.call(value) as string);
    const source = (value as Partial<JsonNodeSource>)[toJsonNode];
    if (typeof source === 'function') return new NodeText(write(source.call(value), true));
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = toJSON.call(value, String(key));
  }
  switch (typeof value) {
    case 'string':
      if (!isWellFormed(value)) throw cannotEncode(`string ${describe(value)} holds a lone surrogate`);
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw cannotEncode(`${String(value)} is not a JSON number`);
      return value;
    case 'function':
    case 'symbol':
      throw cannotEncode(`a ${typeof value} cannot be encoded as JSON`);
    default:
      return value;
  }
}

/** The text of a resolved scalar. */
function scalarText(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
    case 'bigint':
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      return 'null';
  }
}

/** Checks a container (cycle, depth, plain object) and opens its frame. */
function openFrame(value: object, ancestors: Set<object>, depth: number): EncodeFrame {
  if (ancestors.has(value)) throw cannotEncode('the value contains a cycle');
  if (depth >= maxJsonDepth) throw cannotEncode(`nesting deeper than ${maxJsonDepth} levels`);
  if (!Array.isArray(value)) {
    const prototype = Object.getPrototypeOf(value) as object | null;
    if (prototype !== Object.prototype && prototype !== null) {
      const name = (prototype as { constructor?: { name?: unknown } }).constructor?.name;
      throw cannotEncode(
        `${typeof name === 'string' && name !== '' ? name : 'a class instance'} is not a plain object and has no toJSON()`,
      );
    }
  }
  ancestors.add(value);
  return new EncodeFrame(value);
}

/** `"name":` and `,"name":` of member names met before: a state's few names repeat in every record. */
const memberTexts = new Map<string, readonly [string, string]>();
const maxMemberTexts = 4096;
const maxCachedNameLength = 64;

/** The text that introduces member `key`: its quoted name and colon, after a comma unless it is the first. */
function memberText(key: string, afterComma: boolean): string {
  let texts = memberTexts.get(key);
  if (texts === undefined) {
    if (!isWellFormed(key)) throw cannotEncode(`member name ${describe(key)} holds a lone surrogate`);
    const first = `${quote(key)}:`;
    texts = [first, `,${first}`];
    if (key.length <= maxCachedNameLength) {
      // Payloads keyed by ids would fill the cache with names never seen again: start it afresh.
      if (memberTexts.size >= maxMemberTexts) memberTexts.clear();
      memberTexts.set(key, texts);
    }
  }
  return texts[afterComma ? 1 : 0];
}

/**
 * Advances a frame to its next child: stores the resolved child in `frame.value` and returns the
 * text that precedes it (separator, and for objects the quoted name and colon); undefined when
 * the container is exhausted.
 */
function nextChild(frame: EncodeFrame): string | undefined {
  const keys = frame.keys;
  if (keys === undefined) {
    const index = frame.index;
    if (index === frame.length) return undefined;
    frame.index = index + 1;
    frame.value = resolveValue((frame.source as unknown[])[index], index) ?? null;
    return index === 0 ? '' : ',';
  }
  while (frame.index < frame.length) {
    const key = keys[frame.index++]!;
    const value = resolveValue((frame.source as Record<string, unknown>)[key], key);
    if (value === undefined) continue;
    const wrote = frame.wrote;
    frame.wrote = true;
    frame.value = value;
    return memberText(key, wrote);
  }
  return undefined;
}
