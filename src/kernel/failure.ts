import { parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { isQualifiedName } from './identity.js';
import { encodeWire, WireRecord, type WireValue } from './wire.js';

/**
 * The broad class of a Failure. It is deliberately independent of retryability, so classifying a
 * failure can never silently select a recovery or business policy.
 *
 * - `execution`: a Strategy error or an exhausted execution bound.
 * - `contract`: an invalid protocol value or an authority violation.
 * - `external`: a Host boundary error without a contained panic.
 * - `panic`: a contained callback panic at a boundary that produces a Failure. It establishes
 *   neither an external operation's outcome nor permission to replay it.
 */
export type FailureKind = 'execution' | 'contract' | 'external' | 'panic';

export const failureKindValues: readonly FailureKind[] = Object.freeze([
  'execution',
  'contract',
  'external',
  'panic',
]);

export function isFailureKind(value: unknown): value is FailureKind {
  return typeof value === 'string' && (failureKindValues as readonly string[]).includes(value);
}

export function parseFailureKind(value: unknown): FailureKind {
  if (!isFailureKind(value)) {
    throw new KernelError(ErrorCode.invalidFailure, `invalid failure kind: ${describe(value)}`);
  }
  return value;
}

/** Bounds persistable failure messages, control reasons and strategy diagnostics (UTF-8 bytes). */
export const maxDiagnosticBytes = 4096;

/** Bounds descriptions of advertised behaviour (UTF-8 bytes). */
export const maxDescriptionBytes = 4096;

/** What `normalizeDiagnostic` returns for text that holds nothing but white space. */
export const unspecifiedDiagnostic = 'unspecified diagnostic';

/**
 * True for a diagnostic that can be persisted as is: a non-empty string without leading or
 * trailing white space, well-formed (no lone UTF-16 surrogate, so it has a UTF-8 encoding) and at
 * most `maxDiagnosticBytes` UTF-8 bytes long.
 *
 * White space is the Unicode White_Space set that Go's `strings.TrimSpace` strips (it includes
 * U+0085 and excludes U+FEFF, unlike `String.prototype.trim`), so a message valid in one
 * implementation is valid in the other.
 */
export function validDiagnostic(text: unknown): text is string {
  return validBoundedText(text, maxDiagnosticBytes);
}

/** Checks descriptive text by the same rules, bounded by `maxDescriptionBytes`; it never repairs. */
export function validDescription(text: unknown): text is string {
  return validBoundedText(text, maxDescriptionBytes);
}

/**
 * Makes arbitrary external text a valid diagnostic: lone surrogates become U+FFFD, surrounding
 * white space is trimmed, the text is cut to at most `maxDiagnosticBytes` UTF-8 bytes on a code
 * point boundary and trimmed again; text with nothing left becomes `unspecifiedDiagnostic`.
 * Callers remain responsible for excluding secrets.
 *
 * Determinism: the result depends only on `text`.
 */
export function normalizeDiagnostic(text: string): string {
  const trimmed = trimSpace(toWellFormed(String(text)));
  const cut = trimSpace(truncateUtf8(trimmed, maxDiagnosticBytes));
  return cut === '' ? unspecifiedDiagnostic : cut;
}

/**
 * The stable, diagnostic-free part of a Failure. Observations carry only this part, so they can be
 * recorded and aggregated without exposing diagnostic text.
 */
export class FailureClassification {
  readonly #kind: FailureKind;
  readonly #code: string;

  private constructor(kind: FailureKind, code: string) {
    this.#kind = kind;
    this.#code = code;
    Object.freeze(this);
  }

  static of(kind: FailureKind, code: string): FailureClassification {
    return new FailureClassification(checkKind(kind), checkCode(code));
  }

  /** Strict decode of `{"kind","code"}`. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidFailure): FailureClassification {
    const record: WireRecord = new WireRecord(node, path, code);
    const kind = readKind(record);
    const failureCode = readCode(record);
    record.finish();
    return new FailureClassification(kind, failureCode);
  }

  static parse(input: string | Uint8Array): FailureClassification {
    return FailureClassification.fromWire(parseJson(input, { code: ErrorCode.invalidFailure }));
  }

  get kind(): FailureKind {
    return this.#kind;
  }

  get code(): string {
    return this.#code;
  }

  toWire(): WireValue {
    return { kind: this.#kind, code: this.#code };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: FailureClassification | undefined): boolean {
    return other !== undefined && other.#kind === this.#kind && other.#code === this.#code;
  }
}

/**
 * A classified failure: a stable kind and qualified code, kept apart from the diagnostic message so
 * that rewording a message can never change control flow. The message is bounded UTF-8 that must
 * survive snapshot JSON; it must not contain secrets.
 */
export class Failure {
  readonly #kind: FailureKind;
  readonly #code: string;
  readonly #message: string;

  private constructor(kind: FailureKind, code: string, message: string) {
    this.#kind = kind;
    this.#code = code;
    this.#message = message;
    Object.freeze(this);
  }

  /**
   * Strict: the message must already be a valid diagnostic (see `validDiagnostic`); use
   * `normalizeDiagnostic` first for text from outside the kernel.
   */
  static create(kind: FailureKind, code: string, message: string): Failure {
    return new Failure(checkKind(kind), checkCode(code), checkMessage(message));
  }

  /**
   * Strict decode of `{"kind","code","message"}`; unknown members are rejected. `code` is the
   * KernelError code thrown (a parent record passes its own).
   */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidFailure): Failure {
    const record: WireRecord = new WireRecord(node, path, code);
    const kind = readKind(record);
    const failureCode = readCode(record);
    const message = record.string('message');
    record.finish();
    if (!validDiagnostic(message)) {
      record.fail(
        `must be non-empty, trimmed, well-formed text of at most ${maxDiagnosticBytes} UTF-8 bytes`,
        'message',
      );
    }
    return new Failure(kind, failureCode, message);
  }

  static parse(input: string | Uint8Array): Failure {
    return Failure.fromWire(parseJson(input, { code: ErrorCode.invalidFailure }));
  }

  get kind(): FailureKind {
    return this.#kind;
  }

  /** The stable qualified failure code; branch on this, never on the message. */
  get code(): string {
    return this.#code;
  }

  get message(): string {
    return this.#message;
  }

  classification(): FailureClassification {
    return FailureClassification.of(this.#kind, this.#code);
  }

  toWire(): WireValue {
    return { kind: this.#kind, code: this.#code, message: this.#message };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: Failure | undefined): boolean {
    return (
      other !== undefined &&
      other.#kind === this.#kind &&
      other.#code === this.#code &&
      other.#message === this.#message
    );
  }
}

function checkKind(kind: unknown): FailureKind {
  return parseFailureKind(kind);
}

function checkCode(code: unknown): string {
  if (!isQualifiedName(code)) {
    throw new KernelError(ErrorCode.invalidFailure, `invalid failure code: ${describe(code)}`);
  }
  return code;
}

function checkMessage(message: unknown): string {
  if (!validDiagnostic(message)) {
    throw new KernelError(
      ErrorCode.invalidFailure,
      `invalid failure message ${describe(message)}: it must be non-empty, trimmed, well-formed text ` +
        `of at most ${maxDiagnosticBytes} UTF-8 bytes`,
    );
  }
  return message;
}

function readKind(record: WireRecord): FailureKind {
  const kind = record.string('kind');
  if (!isFailureKind(kind)) record.fail(`must be one of ${failureKindValues.join(', ')}`, 'kind');
  return kind;
}

function readCode(record: WireRecord): string {
  const code = record.string('code');
  if (!isQualifiedName(code)) record.fail('must be a qualified name', 'code');
  return code;
}

function validBoundedText(text: unknown, maxBytes: number): text is string {
  return (
    typeof text === 'string' &&
    text !== '' &&
    isSpace(text.charCodeAt(0)) === false &&
    isSpace(text.charCodeAt(text.length - 1)) === false &&
    !loneSurrogate.test(text) &&
    utf8LengthAtMost(text, maxBytes)
  );
}

/** Go's `unicode.IsSpace` over UTF-16 units (every White_Space code point is in the BMP). */
function isSpace(unit: number): boolean {
  switch (unit) {
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x20:
    case 0x85:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
      return true;
    default:
      return unit >= 0x2000 && unit <= 0x200a;
  }
}

function trimSpace(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isSpace(text.charCodeAt(start))) start += 1;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end -= 1;
  return text.slice(start, end);
}

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const loneSurrogates = new RegExp(loneSurrogate.source, 'g');

function toWellFormed(text: string): string {
  return text.replace(loneSurrogates, '\uFFFD');
}

/** The UTF-8 width of the code point whose first UTF-16 unit is at `index` (well-formed text). */
function codePointWidth(text: string, index: number): { units: number; bytes: number } {
  const unit = text.charCodeAt(index);
  if (unit < 0x80) return { units: 1, bytes: 1 };
  if (unit < 0x800) return { units: 1, bytes: 2 };
  if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < text.length) {
    const next = text.charCodeAt(index + 1);
    if (next >= 0xdc00 && next <= 0xdfff) return { units: 2, bytes: 4 };
  }
  return { units: 1, bytes: 3 };
}

function utf8LengthAtMost(text: string, maxBytes: number): boolean {
  if (text.length * 3 <= maxBytes) return true;
  let bytes = 0;
  for (let index = 0; index < text.length; ) {
    const width = codePointWidth(text, index);
    bytes += width.bytes;
    if (bytes > maxBytes) return false;
    index += width.units;
  }
  return true;
}

/** The longest prefix of well-formed `text` within `maxBytes` UTF-8 bytes, never splitting a code point. */
function truncateUtf8(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes) return text;
  let bytes = 0;
  let index = 0;
  while (index < text.length) {
    const width = codePointWidth(text, index);
    if (bytes + width.bytes > maxBytes) break;
    bytes += width.bytes;
    index += width.units;
  }
  return text.slice(0, index);
}
