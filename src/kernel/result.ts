import { parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { ProcessId } from './identity.js';
import { Payload } from './payload.js';
import type { TerminalStatus } from './status.js';
import { Termination } from './termination.js';
import { Usage } from './usage.js';
import { encodeWire, RawJson, WireRecord, type WireValue } from './wire.js';

/**
 * A UTC timestamp as the wire carries it (Go's RFC 3339 with nanoseconds):
 * `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, the fraction 1–9 digits without trailing zeros, so every
 * instant has exactly one text form.
 */
const timestampPattern = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{0,8}[1-9]))?Z$/;

/** True for a canonical UTC RFC 3339 timestamp with up to nanosecond precision and a valid calendar date. */
export function isUtcTimestamp(text: unknown): text is string {
  if (typeof text !== 'string') return false;
  // Texts this module formatted or accepted lately are canonical: a record is re-checked each time
  // a snapshot holding it is rebuilt (a process's start time, at every commit of every live tree).
  if (text === lastFormatted.text || recentCanonical.has(text)) return true;
  const match = timestampPattern.exec(text);
  if (match === null) return false;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const valid =
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59;
  if (valid) rememberCanonical(text);
  return valid;
}

/** Canonical timestamps met lately (bounded: emptied when full, so data cannot grow it). */
const recentCanonical = new Set<string>();
const maxRecentCanonical = 4_096;

function rememberCanonical(text: string): void {
  if (recentCanonical.size >= maxRecentCanonical) recentCanonical.clear();
  recentCanonical.add(text);
}

/** The canonical timestamp of a Date (millisecond precision, trailing fraction zeros dropped). */
export function formatUtcTimestamp(date: Date): string {
  if (!(date instanceof Date) || Number.isNaN(date.getTime())) {
    throw new KernelError(ErrorCode.invalidResult, 'a timestamp needs a valid Date');
  }
  // One commit stamps several records within the same millisecond: format each instant once.
  const millis = date.getTime();
  if (millis === lastFormatted.millis && lastFormatted.text !== undefined) return lastFormatted.text;
  const iso = date.toISOString();
  if (!/^\d{4}-/.test(iso)) {
    throw new KernelError(ErrorCode.invalidResult, `timestamp ${iso} is outside years 0000–9999`);
  }
  const text = iso.replace(/\.?0+Z$/, 'Z');
  lastFormatted = { millis, text };
  rememberCanonical(text);
  return text;
}

/** The last instant formatted and its text (a one-entry cache; NaN and undefined match nothing). */
let lastFormatted: { readonly millis: number; readonly text: string | undefined } = { millis: Number.NaN, text: undefined };

/** The Date of a canonical timestamp, truncated to milliseconds (a Date cannot hold more). */
export function timestampToDate(text: string): Date {
  if (!isUtcTimestamp(text)) throw new KernelError(ErrorCode.invalidResult, `invalid timestamp: ${describe(text)}`);
  const dot = text.indexOf('.');
  const fraction = dot < 0 ? '' : text.slice(dot + 1, -1);
  const millis = fraction.slice(0, 3).padEnd(3, '0');
  return new Date(`${text.slice(0, 19)}.${millis}Z`);
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

export interface ResultOptions {
  readonly processId: ProcessId;
  /** A canonical UTC timestamp string (nanoseconds kept) or a Date. */
  readonly startedAt: string | Date;
  readonly finishedAt: string | Date;
  /** Required exactly when the termination status is `completed`. */
  readonly output?: Payload;
  readonly termination: Termination;
  readonly usage: Usage;
}

/**
 * The immutable terminal outcome of one Process. A failed, canceled, timed-out or killed execution
 * is represented by its Termination, not by an error. The output is present exactly when the
 * Process completed.
 *
 * Times are the observed UTC wall-clock stamps, kept as their exact canonical text (nanoseconds
 * included). `finishedAt` can be earlier than `startedAt` after a wall-clock adjustment or a
 * restore on another writer, so no order between them is required.
 *
 * Wire: `{"process_id","started_at","finished_at","output"?,"termination","usage"}`.
 */
export class Result {
  readonly #processId: ProcessId;
  readonly #startedAt: string;
  readonly #finishedAt: string;
  readonly #output: Payload | undefined;
  readonly #termination: Termination;
  readonly #usage: Usage;

  private constructor(
    processId: ProcessId,
    startedAt: string,
    finishedAt: string,
    output: Payload | undefined,
    termination: Termination,
    usage: Usage,
  ) {
    this.#processId = processId;
    this.#startedAt = startedAt;
    this.#finishedAt = finishedAt;
    this.#output = output;
    this.#termination = termination;
    this.#usage = usage;
    Object.freeze(this);
  }

  static create(options: ResultOptions): Result {
    const { processId, output, termination, usage } = options;
    if (!(processId instanceof ProcessId)) throw new KernelError(ErrorCode.invalidResult, 'a result needs a ProcessId');
    if (!(termination instanceof Termination)) {
      throw new KernelError(ErrorCode.invalidResult, 'a result needs a Termination');
    }
    if (!(usage instanceof Usage)) throw new KernelError(ErrorCode.invalidResult, 'a result needs a Usage');
    if (output !== undefined && !(output instanceof Payload)) {
      throw new KernelError(ErrorCode.invalidResult, 'a result output must be a Payload');
    }
    checkOutput(output !== undefined, termination.status, (message) => {
      throw new KernelError(ErrorCode.invalidResult, `result output ${message}`);
    });
    return new Result(
      processId,
      timestampOf(options.startedAt, 'started at'),
      timestampOf(options.finishedAt, 'finished at'),
      output,
      termination,
      usage,
    );
  }

  /** Strict decode; nested termination and usage rejections also throw `code`. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidResult): Result {
    const record: WireRecord = new WireRecord(node, path, code);
    const processText = record.string('process_id');
    const startedAt = record.string('started_at');
    const finishedAt = record.string('finished_at');
    const outputNode = record.optional('output');
    const termination = Termination.fromWire(record.required('termination'), record.childPath('termination'), code);
    const usage = Usage.fromWire(record.required('usage'), record.childPath('usage'), code);
    record.finish();

    let processId: ProcessId;
    try {
      processId = ProcessId.parse(processText);
    } catch {
      record.fail('must be a process id', 'process_id');
    }
    if (!isUtcTimestamp(startedAt)) record.fail('must be a canonical UTC RFC 3339 timestamp', 'started_at');
    if (!isUtcTimestamp(finishedAt)) record.fail('must be a canonical UTC RFC 3339 timestamp', 'finished_at');
    checkOutput(outputNode !== undefined, termination.status, (message) => record.fail(message, 'output'));
    let output: Payload | undefined;
    if (outputNode !== undefined) {
      try {
        output = Payload.fromNode(outputNode);
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new KernelError(code, `${record.childPath('output')} is not a valid payload: ${reason}`, {
          cause: error,
        });
      }
    }
    return new Result(processId, startedAt, finishedAt, output, termination, usage);
  }

  static parse(input: string | Uint8Array): Result {
    return Result.fromWire(parseJson(input, { code: ErrorCode.invalidResult }));
  }

  get processId(): ProcessId {
    return this.#processId;
  }

  /** The exact canonical UTC start timestamp (nanoseconds kept). */
  get startedAt(): string {
    return this.#startedAt;
  }

  /** The start time as a new Date (truncated to milliseconds). */
  get startedAtDate(): Date {
    return timestampToDate(this.#startedAt);
  }

  /** The exact canonical UTC timestamp of the committed termination (nanoseconds kept). */
  get finishedAt(): string {
    return this.#finishedAt;
  }

  /** The finish time as a new Date (truncated to milliseconds); it may precede `startedAtDate`. */
  get finishedAtDate(): Date {
    return timestampToDate(this.#finishedAt);
  }

  /** The final output, present exactly when the status is `completed`. */
  get output(): Payload | undefined {
    return this.#output;
  }

  get termination(): Termination {
    return this.#termination;
  }

  /** The terminal status (the termination's). */
  get status(): TerminalStatus {
    return this.#termination.status;
  }

  get usage(): Usage {
    return this.#usage;
  }

  toWire(): WireValue {
    return {
      process_id: this.#processId.toString(),
      started_at: this.#startedAt,
      finished_at: this.#finishedAt,
      output: this.#output === undefined ? undefined : new RawJson(this.#output.json()),
      termination: this.#termination.toWire(),
      usage: this.#usage.toWire(),
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: Result | undefined): boolean {
    return other !== undefined && other.json() === this.json();
  }
}

function checkOutput(present: boolean, status: TerminalStatus, fail: (message: string) => never): void {
  if (status === 'completed' && !present) fail('is required for a completed result');
  if (status !== 'completed' && present) fail(`must be absent for a ${status} result`);
}

function timestampOf(value: string | Date, what: string): string {
  if (value instanceof Date) return formatUtcTimestamp(value);
  if (!isUtcTimestamp(value)) {
    throw new KernelError(
      ErrorCode.invalidResult,
      `${what} must be a canonical UTC RFC 3339 timestamp, got ${describe(value)}`,
    );
  }
  return value;
}
