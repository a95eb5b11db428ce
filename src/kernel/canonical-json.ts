import { Buffer } from 'node:buffer';
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
 * A method key through which a value hands {@link nodeFromValue} its exact JSON node instead of a
 * plain value, so that a record embedding a Payload keeps the payload's verbatim number literals.
 */
export const toJsonNode: unique symbol = Symbol.for('scope.kernel.toJsonNode');

/** A value that supplies its own JSON node (see {@link toJsonNode}). */
export interface JsonNodeSource {
  [toJsonNode](): JsonNode;
}

const trueNode: JsonNode = Object.freeze({ kind: 'boolean', value: true });
const falseNode: JsonNode = Object.freeze({ kind: 'boolean', value: false });
const nullNode: JsonNode = Object.freeze({ kind: 'null' });

const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

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
  const context = prepare(input, options);
  const text = canonicalText(context);
  const size = utf8Length(text);
  if (size > context.maxBytes) {
    throw new KernelError(
      context.code,
      `invalid ${context.what}: canonical encoding of ${size} bytes exceeds the ${context.maxBytes}-byte bound`,
    );
  }
  return text;
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
 * Converts a JS value to a node the way `JSON.stringify` would, but strictly: plain objects (own
 * enumerable string keys; `undefined` members skipped), arrays (`undefined` items become null),
 * strings, finite numbers (literal `String(n)`, so `-0` becomes `0`), bigints, booleans and null.
 * `toJSON()` is honoured (so a Date becomes its ISO string) and {@link toJsonNode} is preferred to
 * it. Functions, symbols, non-finite numbers, cycles, lone surrogates, class instances without
 * `toJSON` (Map, Set, ...) and a top-level `undefined` throw `invalid_payload` instead of being
 * silently dropped or mangled.
 */
export function nodeFromValue(value: unknown): JsonNode {
  const ancestors = new Set<object>();
  const work: Array<ConversionTask | ExitTask> = [];
  const root = convert(value, '', ancestors, work);
  if (root === undefined) {
    throw new KernelError(ErrorCode.invalidPayload, `invalid payload: cannot encode ${describe(value)}`);
  }
  for (let task = work.pop(); task !== undefined; task = work.pop()) {
    if (task instanceof ExitTask) {
      ancestors.delete(task.source);
      continue;
    }
    const node = convert(task.value, task.key, ancestors, work);
    if (task.items !== undefined) task.items.push(node ?? nullNode);
    else if (node !== undefined) task.members?.push([task.key, node]);
  }
  return root;
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
          fail(context, j + 1 >= n ? 'unterminated string' : `invalid escape '\\${s[j + 1]}'`, j);
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
    members.sort(compareMembers);
    const duplicate = findDuplicate(members);
    if (duplicate !== undefined) fail(context, `duplicate member name ${describe(duplicate)} in the object`, frame.start);
    break;
  }
  return { kind: 'object', members };
}

/** The first repeated name in sorted members, if any. */
function findDuplicate(members: ReadonlyArray<readonly [string, JsonNode]>): string | undefined {
  for (let k = 1; k < members.length; k++) {
    if (members[k - 1]![0] === members[k]![0]) return members[k]![0];
  }
  return undefined;
}

/* ------------------------------------------------------------------------------------------------
 * The canonicalize fast path. It validates exactly like parseText (same checks, same messages) but
 * builds no JsonNode: each value becomes an entry (a source span, a replacement text or a container
 * record); a container whose source is already canonical collapses to one span, and the output is
 * assembled from slices of the input. Canonical input costs one validating pass and no copy.
 * ---------------------------------------------------------------------------------------------- */

/** Classes of ASCII code units inside a string literal. */
const plainUnit = 0;
const quoteUnit = 1;
const backslashUnit = 2;
const controlUnit = 3;
const rewrittenUnit = 4;

const stringUnitClass = new Uint8Array(0x80).fill(plainUnit);
stringUnitClass.fill(controlUnit, 0, 0x20);
stringUnitClass[0x22] = quoteUnit;
stringUnitClass[0x5c] = backslashUnit;
stringUnitClass[0x26] = rewrittenUnit;
stringUnitClass[0x3c] = rewrittenUnit;
stringUnitClass[0x3e] = rewrittenUnit;

/** scanString outcome: no escapes and canonical; the value is the source between the quotes. */
const rawCanonical = 0;
/** scanString outcome: canonical text with escapes; the value is in scanValue. */
const escapedCanonical = 1;
/** scanString outcome: not canonical; the value is in scanValue and the canonical literal in scanText. */
const rewrittenString = 2;

let scanValue = '';
let scanText = '';

/** Validates the string literal at `start` and classifies its source text; sets scanEnd. */
function scanString(context: ParseContext, s: string, start: number): number {
  const n = s.length;
  let j = start + 1;
  for (;;) {
    const c = s.charCodeAt(j);
    if (c < 0x80) {
      const unit = stringUnitClass[c]!;
      if (unit !== plainUnit) {
        if (unit === quoteUnit) {
          scanEnd = j + 1;
          return rawCanonical;
        }
        if (unit === controlUnit) fail(context, 'raw control character in string', j);
        return scanSpecialString(context, s, start, j);
      }
    } else if (c === 0x2028 || c === 0x2029) {
      return scanSpecialString(context, s, start, j);
    } else if (j >= n) {
      fail(context, 'unterminated string', start);
    }
    j++;
  }
}

/** Finishes a string literal that has an escape or a unit canonical form escapes, from `j` on. */
function scanSpecialString(context: ParseContext, s: string, start: number, j: number): number {
  const value = readEscapedString(context, s, start, j);
  const text = quote(value);
  scanValue = value;
  if (text.length === scanEnd - start && s.startsWith(text, start)) return escapedCanonical;
  scanText = text;
  return rewrittenString;
}

/** Entry reference: the canonical text is the entry's source span. */
const spanRef = 0;
/** Entry references for `{}` and `[]` written with whitespace inside (texts 0 and 1). */
const emptyObjectRef = 1;
const emptyArrayRef = 2;
/** Entry reference of an array, or an object already in order, whose source is not canonical. */
const arrayRef = -1;
const objectRef = -2;
/** Entry references below this name an object reordered by `orders[orderRefBase - ref]`. */
const orderRefBase = -3;

/**
 * The entries of one canonicalize run, in document order (a container's entry precedes its
 * children). An entry is (start, end, ref): ref 0 means the source span `[start, end)` is canonical;
 * ref > 0 names `texts[ref - 1]`; ref < 0 marks a container whose source is not canonical, whose
 * children follow it and whose `end` is the index just past its last descendant. A container that
 * turns out canonical when it closes drops its children and becomes a span. Nothing is copied.
 */
class Tape {
  /** Entries as (start, end, ref) triples. */
  entries: Int32Array;
  top = 0;
  /** Member names of the open objects and the entry index of each, for ordering and duplicates. */
  readonly names: string[] = [];
  readonly nameEntries: number[] = [];
  nameTop = 0;
  /** Member orders of reordered objects: name entry indices by UTF-16 code units. */
  readonly orders: number[][] = [];
  readonly texts: string[] = ['{}', '[]'];

  constructor(sourceLength: number) {
    this.entries = new Int32Array(3 * Math.min(Math.max(sourceLength >>> 3, 16), 1 << 20));
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

  text(text: string): number {
    return this.texts.push(text);
  }

  private grow(): void {
    const larger = new Int32Array(2 * this.entries.length);
    larger.set(this.entries);
    this.entries = larger;
  }
}

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

function canonicalText(context: ParseContext): string {
  const s = context.text;
  const n = s.length;
  const tape = new Tape(n);
  const open: OpenContainer[] = [];
  let depth = 0;
  let frame: OpenContainer | undefined;
  let i = 0;
  let c: number;
  for (;;) {
    c = s.charCodeAt(i);
    if (c <= 0x20) {
      i = skipWhitespace(s, i);
      c = s.charCodeAt(i);
      if (frame !== undefined) frame.verbatim = false;
    }
    if (c === 0x22) {
      if (scanString(context, s, i) === rewrittenString) {
        tape.push(i, scanEnd, tape.text(scanText));
        if (frame !== undefined) frame.verbatim = false;
      } else {
        tape.push(i, scanEnd, spanRef);
      }
      i = scanEnd;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const end = scanNumber(context, s, i);
      tape.push(i, end, spanRef);
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      const start = i;
      const isObject = c === 0x7b;
      if (depth >= maxJsonDepth) fail(context, `nesting deeper than ${maxJsonDepth} levels`, start);
      let verbatim = true;
      i++;
      c = s.charCodeAt(i);
      if (c <= 0x20) {
        i = skipWhitespace(s, i);
        c = s.charCodeAt(i);
        verbatim = false;
      }
      if (c === (isObject ? 0x7d : 0x5d)) {
        i++;
        if (verbatim) {
          tape.push(start, i, spanRef);
        } else {
          tape.push(start, i, isObject ? emptyObjectRef : emptyArrayRef);
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
        if (isObject) i = scanMember(context, s, i, frame, tape);
        continue;
      }
    } else if (c === 0x74 && s.startsWith('true', i)) {
      tape.push(i, i + 4, spanRef);
      i += 4;
    } else if (c === 0x66 && s.startsWith('false', i)) {
      tape.push(i, i + 5, spanRef);
      i += 5;
    } else if (c === 0x6e && s.startsWith('null', i)) {
      tape.push(i, i + 4, spanRef);
      i += 4;
    } else {
      fail(context, i >= n ? 'unexpected end of input, expected a value' : `expected a value, found ${charAt(s, i)}`, i);
    }

    // A value is complete: continue its container, closing as many as end here.
    for (;;) {
      c = s.charCodeAt(i);
      if (c <= 0x20) {
        i = skipWhitespace(s, i);
        c = s.charCodeAt(i);
        if (frame !== undefined) frame.verbatim = false;
      }
      if (frame === undefined) {
        if (i < n) fail(context, `unexpected ${charAt(s, i)} after the JSON value`, i);
        return render(s, tape);
      }
      if (frame.isObject) {
        if (c === 0x2c) {
          i = scanMember(context, s, i + 1, frame, tape);
          break;
        }
        if (c !== 0x7d) fail(context, `expected ',' or '}', found ${charAt(s, i)}`, i);
      } else {
        if (c === 0x2c) {
          i++;
          if (s.charCodeAt(i) <= 0x20) {
            i = skipWhitespace(s, i);
            frame.verbatim = false;
          }
          if (s.charCodeAt(i) === 0x5d) fail(context, 'trailing comma in array', i);
          break;
        }
        if (c !== 0x5d) fail(context, `expected ',' or ']', found ${charAt(s, i)}`, i);
      }
      i++;
      const verbatim = closeContainer(context, frame, tape, i);
      depth--;
      frame = depth > 0 ? open[depth - 1] : undefined;
      if (!verbatim && frame !== undefined) frame.verbatim = false;
    }
  }
}

/** Reads a member name (after optional whitespace) and its colon into the tape; returns the offset after the colon. */
function scanMember(context: ParseContext, s: string, i: number, frame: OpenContainer, tape: Tape): number {
  let c = s.charCodeAt(i);
  if (c <= 0x20) {
    i = skipWhitespace(s, i);
    c = s.charCodeAt(i);
    frame.verbatim = false;
  }
  if (c !== 0x22) {
    fail(context, c === 0x7d ? 'trailing comma in object' : `expected a member name, found ${charAt(s, i)}`, i);
  }
  const outcome = scanString(context, s, i);
  const end = scanEnd;
  const k = tape.nameTop;
  tape.nameEntries[k] = tape.top;
  let name: string;
  if (outcome === rawCanonical) {
    name = s.slice(i + 1, end - 1);
    tape.push(i, end, spanRef);
  } else {
    name = scanValue;
    if (outcome === rewrittenString) {
      tape.push(i, end, tape.text(scanText));
      frame.verbatim = false;
    } else {
      tape.push(i, end, spanRef);
    }
  }
  const names = tape.names;
  if (k > frame.nameBase && !(names[k - 1]! < name)) {
    frame.sorted = false;
    frame.verbatim = false;
  }
  names[k] = name;
  tape.nameTop = k + 1;
  i = end;
  c = s.charCodeAt(i);
  if (c <= 0x20) {
    i = skipWhitespace(s, i);
    c = s.charCodeAt(i);
    frame.verbatim = false;
  }
  if (c !== 0x3a) fail(context, `expected ':' after a member name, found ${charAt(s, i)}`, i);
  return i + 1;
}

/**
 * Completes a closed container's entry: a canonical one collapses to its source span, any other
 * records where its descendants end and, for an out-of-order object, its member order. Returns
 * whether the container was canonical as written.
 */
function closeContainer(context: ParseContext, frame: OpenContainer, tape: Tape, end: number): boolean {
  const entry = frame.entry;
  const entries = tape.entries;
  if (frame.verbatim) {
    tape.top = entry + 1;
    entries[3 * entry + 1] = end;
    entries[3 * entry + 2] = spanRef;
  } else {
    entries[3 * entry + 1] = tape.top;
    if (!frame.sorted) {
      const { names, nameEntries } = tape;
      const base = frame.nameBase;
      const order = memberOrder(names, base, tape.nameTop - base);
      let previous: string | undefined;
      for (let k = 0; k < order.length; k++) {
        const member = order[k]!;
        const name = names[base + member]!;
        if (name === previous) fail(context, `duplicate member name ${describe(name)} in the object`, entries[3 * entry]!);
        previous = name;
        order[k] = nameEntries[base + member]!;
      }
      entries[3 * entry + 2] = orderRefBase - (tape.orders.push(order) - 1);
    }
  }
  tape.nameTop = frame.nameBase;
  return frame.verbatim;
}

/** The member indices of `names[base .. base + count)` ordered by UTF-16 code units (stable). */
function memberOrder(names: readonly string[], base: number, count: number): number[] {
  const order: number[] = [];
  for (let k = 0; k < count; k++) order.push(k);
  if (count <= 16) {
    for (let k = 1; k < count; k++) {
      const member = order[k]!;
      const name = names[base + member]!;
      let j = k - 1;
      while (j >= 0 && names[base + order[j]!]! > name) {
        order[j + 1] = order[j]!;
        j--;
      }
      order[j + 1] = member;
    }
    return order;
  }
  return order.sort((a, b) => {
    const x = names[base + a]!;
    const y = names[base + b]!;
    return x < y ? -1 : x > y ? 1 : 0;
  });
}

/**
 * Writes the canonical text of the tape's root entry from source slices and replacement texts. A
 * piece that continues the current source slice extends it instead (a separator or bracket
 * extends it when the next source unit is that same character), so canonical stretches of the
 * input become one slice each.
 */
function render(s: string, tape: Tape): string {
  const { entries, texts, orders } = tape;
  const rootRef = entries[2]!;
  if (rootRef === spanRef) {
    const start = entries[0]!;
    const end = entries[1]!;
    return start === 0 && end === s.length ? s : s.slice(start, end);
  }
  if (rootRef > 0) return texts[rootRef - 1]!;

  let out = '';
  // The current source slice [runStart, runEnd), or none when runStart < 0.
  let runStart = entries[0]!;
  let runEnd = runStart + 1;
  // Open containers: entry index and cursor (next child entry, or next position in the order).
  const openEntries: number[] = [];
  const openCursors: number[] = [];
  let depth = 0;
  let container = 0;
  let cursor = rootRef <= orderRefBase ? 0 : 1;
  let ref = rootRef;
  for (;;) {
    const ordered = ref <= orderRefBase;
    const order = ordered ? orders[orderRefBase - ref]! : undefined;
    if (order !== undefined ? cursor === order.length : cursor === entries[3 * container + 1]!) {
      const close = ref === arrayRef ? 0x5d : 0x7d;
      if (runStart >= 0 && s.charCodeAt(runEnd) === close) {
        runEnd++;
      } else {
        if (runStart >= 0) out += s.slice(runStart, runEnd);
        out += close === 0x5d ? ']' : '}';
        runStart = -1;
      }
      if (depth === 0) break;
      depth--;
      container = openEntries[depth]!;
      cursor = openCursors[depth]!;
      ref = entries[3 * container + 2]!;
      continue;
    }
    const first = order !== undefined ? cursor === 0 : cursor === container + 1;
    if (!first) {
      if (runStart >= 0 && s.charCodeAt(runEnd) === 0x2c) {
        runEnd++;
      } else {
        if (runStart >= 0) out += s.slice(runStart, runEnd);
        out += ',';
        runStart = -1;
      }
    }
    let entry = order !== undefined ? order[cursor]! : cursor;
    if (ref !== arrayRef) {
      // The member name, then the colon; `entry` moves on to the member value.
      const nameRef = entries[3 * entry + 2]!;
      if (nameRef === spanRef) {
        const start = entries[3 * entry]!;
        if (runStart >= 0 && start === runEnd) {
          runEnd = entries[3 * entry + 1]!;
        } else {
          if (runStart >= 0) out += s.slice(runStart, runEnd);
          runStart = start;
          runEnd = entries[3 * entry + 1]!;
        }
      } else {
        if (runStart >= 0) out += s.slice(runStart, runEnd);
        out += texts[nameRef - 1]!;
        runStart = -1;
      }
      if (runStart >= 0 && s.charCodeAt(runEnd) === 0x3a) {
        runEnd++;
      } else {
        if (runStart >= 0) out += s.slice(runStart, runEnd);
        out += ':';
        runStart = -1;
      }
      entry++;
    }
    const valueRef = entries[3 * entry + 2]!;
    const next = valueRef < 0 ? entries[3 * entry + 1]! : entry + 1;
    cursor = order !== undefined ? cursor + 1 : next;
    if (valueRef > 0) {
      if (runStart >= 0) out += s.slice(runStart, runEnd);
      out += texts[valueRef - 1]!;
      runStart = -1;
      continue;
    }
    const start = entries[3 * entry]!;
    const end = valueRef === spanRef ? entries[3 * entry + 1]! : start + 1;
    if (runStart >= 0 && start === runEnd) {
      runEnd = end;
    } else {
      if (runStart >= 0) out += s.slice(runStart, runEnd);
      runStart = start;
      runEnd = end;
    }
    if (valueRef < 0) {
      openEntries[depth] = container;
      openCursors[depth] = cursor;
      depth++;
      container = entry;
      cursor = valueRef <= orderRefBase ? 0 : entry + 1;
      ref = valueRef;
    }
  }
  return runStart >= 0 ? out + s.slice(runStart, runEnd) : out;
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
    const sorted = [...members].sort(compareMembers);
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
 * Conversion from JS values.
 * ---------------------------------------------------------------------------------------------- */

/** A child value still to convert, and where its node goes. */
class ConversionTask {
  constructor(
    readonly value: unknown,
    readonly key: string,
    readonly items: JsonNode[] | undefined,
    readonly members: Array<[string, JsonNode]> | undefined,
  ) {}
}

/** Marks the end of a container's subtree, so it leaves the ancestor set used for cycle detection. */
class ExitTask {
  constructor(readonly source: object) {}
}

function cannotEncode(problem: string): KernelError {
  return new KernelError(ErrorCode.invalidPayload, `invalid payload: ${problem}`);
}

/**
 * Converts one value; containers come back empty and their children are queued on `work` (in
 * reverse, so they are converted, and appended, in order). `undefined` means "omit".
 */
function convert(
  input: unknown,
  key: string,
  ancestors: Set<object>,
  work: Array<ConversionTask | ExitTask>,
): JsonNode | undefined {
  let value = input;
  if (typeof value === 'object' && value !== null) {
    const source = (value as Partial<JsonNodeSource>)[toJsonNode];
    if (typeof source === 'function') return source.call(value);
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = toJSON.call(value, key);
  }
  switch (typeof value) {
    case 'string':
      if (!isWellFormed(value)) throw cannotEncode(`string ${describe(value)} holds a lone surrogate`);
      return { kind: 'string', value };
    case 'number':
      if (!Number.isFinite(value)) throw cannotEncode(`${String(value)} is not a JSON number`);
      return { kind: 'number', text: String(value) };
    case 'bigint':
      return { kind: 'number', text: value.toString() };
    case 'boolean':
      return value ? trueNode : falseNode;
    case 'undefined':
      return undefined;
    case 'function':
    case 'symbol':
      throw cannotEncode(`a ${typeof value} cannot be encoded as JSON`);
  }
  if (value === null) return nullNode;
  const object = value as object;
  if (ancestors.has(object)) throw cannotEncode('the value contains a cycle');
  if (ancestors.size >= maxJsonDepth) throw cannotEncode(`nesting deeper than ${maxJsonDepth} levels`);
  if (Array.isArray(object)) {
    const items: JsonNode[] = [];
    ancestors.add(object);
    work.push(new ExitTask(object));
    for (let k = object.length - 1; k >= 0; k--) {
      work.push(new ConversionTask(object[k], String(k), items, undefined));
    }
    return { kind: 'array', items };
  }
  const prototype = Object.getPrototypeOf(object) as object | null;
  if (prototype !== Object.prototype && prototype !== null) {
    const name = (prototype as { constructor?: { name?: unknown } }).constructor?.name;
    throw cannotEncode(
      `${typeof name === 'string' && name !== '' ? name : 'a class instance'} is not a plain object and has no toJSON()`,
    );
  }
  const record = object as Record<string, unknown>;
  const names = Object.keys(record).sort();
  const members: Array<[string, JsonNode]> = [];
  ancestors.add(object);
  work.push(new ExitTask(object));
  for (let k = names.length - 1; k >= 0; k--) {
    const name = names[k]!;
    if (!isWellFormed(name)) throw cannotEncode(`member name ${describe(name)} holds a lone surrogate`);
    work.push(new ConversionTask(record[name], name, undefined, members));
  }
  return { kind: 'object', members };
}
