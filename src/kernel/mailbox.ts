// Over 500 lines: the mailbox and its record kinds, whose history rules are validated as a whole.
import { parseJson, type JsonNode } from './canonical-json.js';
import { describe, Digest } from './digest.js';
import { ChildWaitSpec, readAnswerSchema } from './effect.js';
import { ErrorCode, KernelError } from './errors.js';
import { maxDescriptionBytes, validDescription } from './failure.js';
import { EffectId, ProcessId, SignalId, WaitId, WaitKey } from './identity.js';
import { Payload, payloadOfWire } from './payload.js';
import type { Result } from './result.js';
import { Schema } from './schema.js';
import { SharedMap } from './shared-map.js';
import { Signal, SignalRequest } from './signal.js';
import { TextRuns } from './text-runs.js';
import type { WaitKind } from './wait.js';
import { encodeWire, RawJson, readString, WireRecord, wireError, type WireValue } from './wire.js';

/**
 * The Process mailbox: one ordered, append-only list of admitted Signals plus the committed
 * consumption cursor. The arrival sequence of a record is its 1-based position; a Step consumes
 * a prefix of the pending suffix. Host input, Engine settlements, wait openings and child-wait
 * answers share this one order.
 *
 * Wire: `{"records":[MailboxRecordWire…],"signal_cursor":uint64}` where each record is
 *
 * | kind              | wire members                                                                 |
 * |-------------------|------------------------------------------------------------------------------|
 * | external          | `id` (not engine-owned), `wait_id`?, then `payload` (pending) or `payload_digest` (consumed) |
 * | settlement        | `id` (engine-owned), `status`? (Dispatcher deliveries only), `payload` / `payload_digest` |
 * | wait opening      | `wait_id`, `opens`: `{"key","answer_schema"?,"prompt"?}` or `{"spec":ChildWaitSpec}` — no id, no payload |
 * | child-wait answer | `wait_id`, then `answered`:[ProcessId…] (pending) or `payload_digest` (consumed) — no id |
 *
 * A record's source is derived from its identity: a non-engine id is Host input; an engine id is a
 * settlement; a record without id is a wait opening (with `opens`) or a child-wait answer. Ids left
 * out are derived from the WaitId (`SignalId.waitOpened` / `SignalId.childWaitSatisfied`). Wait
 * openings carry the fixed acknowledgement payloads below; a pending child-wait answer is rendered
 * from the captured terminal results of the children it lists, so it decodes only within its tree.
 *
 * An external wait's opening keeps the run-time answer contract its `wait` Effect carried (answer
 * schema, prompt) while the wait is open: a pending answer to it must satisfy that schema. When
 * the cursor passes the answer the wait is closed and the opening drops the contract (one byte form
 * per history, and no schema retained for a wait nobody can answer any more).
 */

/** The fixed payload acknowledging a `wait` Effect (the Signal's wait_id carries the minted WaitId). */
export const waitOpenedPayload: Payload = Payload.parse('{"operation":"wait"}');

/** The fixed payload acknowledging a `wait_children` Effect (the declaring Effect owns the spec). */
export const childWaitOpenedPayload: Payload = Payload.parse('{"operation":"child_wait_opened"}');

/**
 * What a wait opening opened: an external wait for Host input (with the run-time answer contract
 * its Effect carried, while open), or a wait over direct children.
 */
export type WaitOpening =
  | { readonly kind: 'external'; readonly key: WaitKey; readonly answerSchema?: Schema; readonly prompt?: string }
  | { readonly kind: 'children'; readonly spec: ChildWaitSpec };

/** `external` waits are answered by Host input only; `children` waits by the Engine only. */
export type { WaitKind };

export type MailboxRecordKind = 'external' | 'settlement' | 'wait_opening' | 'child_wait_answer';

/** The definite statuses a Dispatcher settlement delivery can carry (an Unknown is never adopted). */
export type DeliveredSettlementStatus = 'succeeded' | 'failed';

/** An unsettled external Effect left in a drained subtree (`{"effect_id","process_id"}`). */
export interface UnresolvedEffect {
  readonly processId: ProcessId;
  readonly effectId: EffectId;
}

/** One child's terminal facts as reported by a child-wait answer. */
export interface ChildOutcomeFacts {
  readonly result: Result;
  /** Required exactly for a `subtree_drained` wait: the child's and its descendants' Unknown effects. */
  readonly subtreeUnresolved?: readonly UnresolvedEffect[];
}

/**
 * The payload of a child-wait answer (`ChildWaitSatisfied`), rendered from the children's captured
 * terminal Results in request order: `{"operation":"child_wait_satisfied","outcomes":[{"result",
 * "subtree_unresolved_effects"?}]}`. The wait owns the key and boundary, so neither is repeated;
 * `subtree_unresolved_effects` is present (possibly empty) exactly for a `subtree_drained` wait,
 * sorted by ProcessId then EffectId.
 */
export function childWaitSatisfiedPayload(spec: ChildWaitSpec, outcomes: readonly ChildOutcomeFacts[]): Payload {
  const drained = spec.boundary === 'subtree_drained';
  const wire = outcomes.map((outcome): WireValue => {
    if (drained !== (outcome.subtreeUnresolved !== undefined)) {
      throw new KernelError(
        ErrorCode.invalidChildWait,
        `invalid child wait answer: subtree unresolved effects are reported exactly for a subtree_drained wait`,
      );
    }
    const unresolved = outcome.subtreeUnresolved === undefined ? undefined : sortUnresolved(outcome.subtreeUnresolved);
    return {
      result: outcome.result.toWire(),
      subtree_unresolved_effects: unresolved?.map((entry) => ({
        process_id: entry.processId.toString(),
        effect_id: entry.effectId.toString(),
      })),
    };
  });
  return payloadOfWire(encodeWire({ operation: 'child_wait_satisfied', outcomes: wire }));
}

function sortUnresolved(entries: readonly UnresolvedEffect[]): UnresolvedEffect[] {
  return [...entries].sort((a, b) => a.processId.compare(b.processId) || a.effectId.compare(b.effectId));
}

/* ================================================================================================
 * MailboxRecord
 * ============================================================================================== */

interface RecordFields {
  readonly kind: MailboxRecordKind;
  readonly id: SignalId;
  readonly waitId: WaitId | undefined;
  readonly payloadDigest: Digest;
  readonly payload: Payload | undefined;
  readonly status: DeliveredSettlementStatus | undefined;
  readonly opens: WaitOpening | undefined;
  readonly answered: readonly ProcessId[] | undefined;
}

/**
 * One admitted Signal. A pending record keeps its payload; a consumed one keeps only the payload
 * digest (with its id, WaitId and status, which deduplication compares). Wait openings always
 * render their fixed payload.
 */
export class MailboxRecord {
  readonly kind: MailboxRecordKind;
  /** The delivery identity (derived from the WaitId for openings and child-wait answers). */
  readonly id: SignalId;
  readonly waitId: WaitId | undefined;
  readonly payloadDigest: Digest;
  /** Present only for Dispatcher settlement deliveries. */
  readonly status: DeliveredSettlementStatus | undefined;
  readonly opens: WaitOpening | undefined;
  readonly #payload: Payload | undefined;
  readonly #answered: readonly ProcessId[] | undefined;
  #json: string | undefined;
  #raw: RawJson | undefined;

  private constructor(fields: RecordFields) {
    this.kind = fields.kind;
    this.id = fields.id;
    this.waitId = fields.waitId;
    this.payloadDigest = fields.payloadDigest;
    this.#payload = fields.payload;
    this.status = fields.status;
    this.opens = fields.opens;
    this.#answered = fields.answered === undefined ? undefined : Object.freeze([...fields.answered]);
    Object.freeze(this);
  }

  /** Host (or `signal_child`) input, admitted as requested. */
  static external(request: SignalRequest): MailboxRecord {
    if (!(request instanceof SignalRequest)) throw invalidRecord('external input needs a SignalRequest');
    return new MailboxRecord({
      kind: 'external',
      id: request.id,
      waitId: request.waitId,
      payloadDigest: request.payload.digest(),
      payload: request.payload,
      status: undefined,
      opens: undefined,
      answered: undefined,
    });
  }

  /**
   * The settlement delivery of `effectId` (id `SignalId.settlement(effectId)`). Dispatcher
   * settlements carry their definite status; Framework settlements carry none.
   */
  static settlement(effectId: EffectId, payload: Payload, status?: DeliveredSettlementStatus): MailboxRecord {
    if (!(effectId instanceof EffectId)) throw invalidRecord('a settlement record needs an EffectId');
    if (!(payload instanceof Payload)) throw invalidRecord('a settlement record needs a Payload');
    if (status !== undefined && status !== 'succeeded' && status !== 'failed') {
      throw invalidRecord(`a delivered settlement is definite (succeeded or failed), got ${describe(status)}`);
    }
    return new MailboxRecord({
      kind: 'settlement',
      id: SignalId.settlement(effectId),
      waitId: undefined,
      payloadDigest: payload.digest(),
      payload,
      status,
      opens: undefined,
      answered: undefined,
    });
  }

  /** The Engine's acknowledgement that opened `waitId` (the settlement of a wait/wait_children Effect). */
  static waitOpening(waitId: WaitId, opens: WaitOpening): MailboxRecord {
    if (!(waitId instanceof WaitId)) throw invalidRecord('a wait opening needs a WaitId');
    const checked = checkOpening(opens);
    const payload = checked.kind === 'external' ? waitOpenedPayload : childWaitOpenedPayload;
    return new MailboxRecord({
      kind: 'wait_opening',
      id: SignalId.waitOpened(waitId),
      waitId,
      payloadDigest: payload.digest(),
      payload,
      status: undefined,
      opens: checked,
      answered: undefined,
    });
  }

  /**
   * The Engine's answer to child wait `waitId`: `answered` lists the children at the boundary in
   * request order, `payload` is {@link childWaitSatisfiedPayload} rendered from their Results.
   */
  static childWaitAnswer(waitId: WaitId, answered: readonly ProcessId[], payload: Payload): MailboxRecord {
    if (!(waitId instanceof WaitId)) throw invalidRecord('a child-wait answer needs a WaitId');
    if (!Array.isArray(answered) || answered.length === 0 || answered.some((id) => !(id instanceof ProcessId))) {
      throw invalidRecord('a child-wait answer lists at least one answered child ProcessId');
    }
    if (!(payload instanceof Payload)) throw invalidRecord('a child-wait answer needs a Payload');
    return new MailboxRecord({
      kind: 'child_wait_answer',
      id: SignalId.childWaitSatisfied(waitId),
      waitId,
      payloadDigest: payload.digest(),
      payload,
      status: undefined,
      opens: undefined,
      answered,
    });
  }

  /** This wait opening without its run-time answer contract (once its wait is closed). */
  withoutAnswerContract(): MailboxRecord {
    const opens = this.opens;
    if (opens?.kind !== 'external' || (opens.answerSchema === undefined && opens.prompt === undefined)) return this;
    return MailboxRecord.waitOpening(this.waitId as WaitId, { kind: 'external', key: opens.key });
  }

  /** Whether the payload is still held (pending records and wait openings). */
  get retained(): boolean {
    return this.#payload !== undefined;
  }

  /** The payload while retained. */
  get payload(): Payload | undefined {
    return this.#payload;
  }

  /** The answered children of a pending child-wait answer (request order); a copy. */
  get answered(): ProcessId[] | undefined {
    return this.#answered === undefined ? undefined : [...this.#answered];
  }

  /** True for every record the Engine minted (all but Host input). */
  get engineOwned(): boolean {
    return this.kind !== 'external';
  }

  /** The consumed form: the payload (and a child-wait answer's children) released, the digest kept. */
  released(): MailboxRecord {
    if (this.kind === 'wait_opening' || this.#payload === undefined) return this;
    return new MailboxRecord({
      kind: this.kind,
      id: this.id,
      waitId: this.waitId,
      payloadDigest: this.payloadDigest,
      payload: undefined,
      status: this.status,
      opens: undefined,
      answered: undefined,
    });
  }

  /** The delivery envelope while the payload is retained. */
  signal(): Signal | undefined {
    if (this.#payload === undefined) return undefined;
    return Signal.create({ id: this.id, waitId: this.waitId, payload: this.#payload, status: this.status });
  }

  /** Same kind, identity, addressing, status and payload digest (the facts deduplication compares). */
  sameDelivery(other: MailboxRecord): boolean {
    return (
      other.kind === this.kind &&
      other.id.equals(this.id) &&
      sameOptional(other.waitId, this.waitId) &&
      other.status === this.status &&
      other.payloadDigest.equals(this.payloadDigest)
    );
  }

  /** The canonical record (cached: a record's wire form never changes). */
  toWire(): RawJson {
    this.#raw ??= new RawJson(this.json());
    return this.#raw;
  }

  json(): string {
    this.#json ??= encodeWire(this.#wire());
    return this.#json;
  }

  #wire(): WireValue {
    switch (this.kind) {
      case 'external':
      case 'settlement':
        // Members in canonical order (here and below): encodeWire then skips its sort.
        return {
          id: this.id.toString(),
          payload: this.#payload === undefined ? undefined : new RawJson(this.#payload.json()),
          payload_digest: this.#payload === undefined ? this.payloadDigest.toString() : undefined,
          status: this.status,
          wait_id: this.waitId?.toString(),
        };
      case 'wait_opening': {
        const opens = this.opens as WaitOpening;
        return {
          wait_id: (this.waitId as WaitId).toString(),
          opens:
            opens.kind === 'external'
              ? { key: opens.key.toString(), answer_schema: opens.answerSchema?.toWire(), prompt: opens.prompt }
              : { spec: opens.spec.toWire() },
        };
      }
      case 'child_wait_answer':
        return {
          answered: this.#answered?.map((id) => id.toString()),
          payload_digest: this.#payload === undefined ? this.payloadDigest.toString() : undefined,
          wait_id: (this.waitId as WaitId).toString(),
        };
    }
  }

  /**
   * Strict decode of one record at arrival position `index`. `pending` says which retention the
   * position implies; `waits` resolves the spec a child-wait answer refers to; `render` re-renders
   * a pending child-wait answer from the enclosing tree.
   */
  static fromWire(node: JsonNode, path: string, options: RecordDecodeOptions): MailboxRecord {
    const { code, pending } = options;
    const record: WireRecord = new WireRecord(node, path, code);
    const idText = record.optionalString('id');
    const waitText = record.optionalString('wait_id');
    const payloadNode = record.optional('payload');
    const digestText = record.optionalString('payload_digest');
    const status = record.optionalString('status');
    const opensNode = record.optional('opens');
    const answeredNodes = record.optionalArray('answered');
    record.finish();

    const id = idText === undefined ? undefined : record.identity('id', (text) => SignalId.parse(text));
    const waitId = waitText === undefined ? undefined : record.identity('wait_id', (text) => WaitId.parse(text));
    const forbid = (present: boolean, member: string, why: string): void => {
      if (present) record.fail(`is not allowed ${why}`, member);
    };

    if (id !== undefined) {
      const kind: MailboxRecordKind = id.engineOwned ? 'settlement' : 'external';
      const why = kind === 'settlement' ? 'on an engine settlement record' : 'on a host input record';
      forbid(opensNode !== undefined, 'opens', why);
      forbid(answeredNodes !== undefined, 'answered', why);
      if (kind === 'settlement') forbid(waitId !== undefined, 'wait_id', why);
      if (kind === 'external') forbid(status !== undefined, 'status', why);
      if (status !== undefined && status !== 'succeeded' && status !== 'failed') {
        record.fail('must be succeeded or failed (an Unknown settlement is never delivered)', 'status');
      }
      const { payload, payloadDigest } = readRetention(record, pending, payloadNode, digestText);
      return new MailboxRecord({
        kind,
        id,
        waitId,
        payloadDigest,
        payload,
        status: status as DeliveredSettlementStatus | undefined,
        opens: undefined,
        answered: undefined,
      });
    }

    if (waitId === undefined) record.fail('needs an id (Signal) or a wait_id (wait opening or child-wait answer)');
    forbid(status !== undefined, 'status', 'on a wait opening or child-wait answer');
    forbid(payloadNode !== undefined, 'payload', 'on a wait opening or child-wait answer (it is derived)');

    if (opensNode !== undefined) {
      forbid(digestText !== undefined, 'payload_digest', 'on a wait opening (its payload is fixed)');
      forbid(answeredNodes !== undefined, 'answered', 'on a wait opening');
      const opens = readOpening(opensNode, record.childPath('opens'), code);
      return MailboxRecord.waitOpening(waitId, opens);
    }

    if (pending) {
      forbid(digestText !== undefined, 'payload_digest', 'on a pending child-wait answer (it is rendered from the tree)');
      if (answeredNodes === undefined) record.fail('is required on a pending child-wait answer', 'answered');
      const answered = answeredNodes.map((item, index) => {
        const itemPath = `${record.childPath('answered')}/${index}`;
        const text = readString(item, itemPath, code);
        try {
          return ProcessId.parse(text);
        } catch {
          throw wireError(code, itemPath, `is not a process id: ${describe(text)}`);
        }
      });
      const spec = options.specOf(waitId);
      if (spec === undefined) record.fail(`answers ${waitId.toString()}, which no earlier record opened as a child wait`);
      const problem = answeredProblem(spec, answered);
      if (problem !== undefined) record.fail(problem, 'answered');
      if (options.render === undefined) {
        record.fail('is a pending child-wait answer, which decodes only within its tree snapshot', 'answered');
      }
      let payload: Payload;
      try {
        payload = options.render(waitId, spec, answered);
      } catch (error) {
        throw wireError(code, record.childPath('answered'), `cannot be rendered from the tree: ${messageOf(error)}`);
      }
      return MailboxRecord.childWaitAnswer(waitId, answered, payload);
    }
    forbid(answeredNodes !== undefined, 'answered', 'on a consumed child-wait answer (only its digest is kept)');
    if (digestText === undefined) record.fail('is required on a consumed record', 'payload_digest');
    const payloadDigest = record.identity('payload_digest', (text) => Digest.parse(text));
    return new MailboxRecord({
      kind: 'child_wait_answer',
      id: SignalId.childWaitSatisfied(waitId),
      waitId,
      payloadDigest,
      payload: undefined,
      status: undefined,
      opens: undefined,
      answered: undefined,
    });
  }
}

/** Re-renders a pending child-wait answer's payload from the enclosing tree. */
export type ChildWaitAnswerRenderer = (waitId: WaitId, spec: ChildWaitSpec, answered: readonly ProcessId[]) => Payload;

interface RecordDecodeOptions {
  readonly code: string;
  readonly pending: boolean;
  readonly specOf: (waitId: WaitId) => ChildWaitSpec | undefined;
  readonly render: ChildWaitAnswerRenderer | undefined;
}

function readRetention(
  record: WireRecord,
  pending: boolean,
  payloadNode: JsonNode | undefined,
  digestText: string | undefined,
): { payload: Payload | undefined; payloadDigest: Digest } {
  if (pending) {
    if (digestText !== undefined) record.fail('is not allowed on a pending record (the payload is kept)', 'payload_digest');
    if (payloadNode === undefined) record.fail('is required on a pending record', 'payload');
    let payload: Payload;
    try {
      payload = Payload.fromNode(payloadNode);
    } catch (error) {
      throw wireError(record.code, record.childPath('payload'), `is not a valid payload: ${messageOf(error)}`);
    }
    return { payload, payloadDigest: payload.digest() };
  }
  if (payloadNode !== undefined) record.fail('is not allowed on a consumed record (only its digest is kept)', 'payload');
  if (digestText === undefined) record.fail('is required on a consumed record', 'payload_digest');
  return { payload: undefined, payloadDigest: record.identity('payload_digest', (text) => Digest.parse(text)) };
}

function readOpening(node: JsonNode, path: string, code: string): WaitOpening {
  const record: WireRecord = new WireRecord(node, path, code);
  const keyText = record.optionalString('key');
  const specNode = record.optional('spec');
  const schemaNode = record.optional('answer_schema');
  const prompt = record.optionalString('prompt');
  record.finish();
  if ((keyText === undefined) === (specNode === undefined)) record.fail('must carry exactly one of key or spec');
  if (keyText !== undefined) {
    const key = record.identity('key', (text) => WaitKey.parse(text));
    if (prompt !== undefined && !validDescription(prompt)) {
      record.fail(`must be non-empty, trimmed, well-formed text of at most ${maxDescriptionBytes} UTF-8 bytes`, 'prompt');
    }
    const answerSchema = schemaNode === undefined ? undefined : readAnswerSchema(schemaNode, record.childPath('answer_schema'), code);
    return { kind: 'external', key, answerSchema, prompt };
  }
  if (schemaNode !== undefined || prompt !== undefined) record.fail('a child wait carries no answer schema or prompt');
  return { kind: 'children', spec: ChildWaitSpec.fromWire(specNode as JsonNode, record.childPath('spec'), code) };
}

function checkOpening(opens: WaitOpening): WaitOpening {
  if (typeof opens !== 'object' || opens === null) throw invalidRecord('a wait opening needs a key or a child wait spec');
  if (opens.kind === 'external' && opens.key instanceof WaitKey) {
    const { answerSchema, prompt } = opens;
    if (answerSchema !== undefined && !(answerSchema instanceof Schema)) throw invalidRecord('an answer schema must be a Schema');
    if (prompt !== undefined && !validDescription(prompt)) throw invalidRecord('a wait prompt must be valid descriptive text');
    return Object.freeze({ kind: 'external', key: opens.key, answerSchema, prompt });
  }
  if (opens.kind === 'children' && opens.spec instanceof ChildWaitSpec) {
    return Object.freeze({ kind: 'children', spec: opens.spec });
  }
  throw invalidRecord('a wait opening needs {kind:"external",key} or {kind:"children",spec}');
}

/** Children answering a child wait must be distinct awaited children in request order, enough to satisfy it. */
function answeredProblem(spec: ChildWaitSpec, answered: readonly ProcessId[]): string | undefined {
  const order = spec.children.map((child) => child.toString());
  let previous = -1;
  for (const child of answered) {
    const position = order.indexOf(child.toString());
    if (position < 0) return `lists ${child.toString()}, which the wait does not await`;
    if (position <= previous) return 'must list distinct awaited children in request order';
    previous = position;
  }
  if (answered.length < spec.requiredCount) {
    return `lists ${answered.length} children, fewer than the ${spec.requiredCount} that satisfy the wait`;
  }
  return undefined;
}

/* ================================================================================================
 * Waits and receipts
 * ============================================================================================== */

/** A wait derived from the mailbox: its opening, its answer (if any) and whether the cursor closed it. */
export class WaitRecord {
  readonly waitId: WaitId;
  readonly kind: WaitKind;
  /** The logical key: the external key, or the child wait spec's key. */
  readonly key: WaitKey;
  /** The child wait spec (children waits only). */
  readonly spec: ChildWaitSpec | undefined;
  /** The run-time answer schema the wait Effect carried (external waits, while open). */
  readonly answerSchema: Schema | undefined;
  /** The run-time prompt the wait Effect carried (external waits, while open). */
  readonly prompt: string | undefined;
  /** 0-based mailbox position of the opening. */
  readonly openedAt: number;
  /** 0-based mailbox position of the answer, if one arrived. */
  readonly answerIndex: number | undefined;
  /** True once the cursor passed the answer (the Step consumed it). */
  readonly closed: boolean;
  /** What the opening opened (to re-derive this record with an answer or a later cursor). */
  readonly opens: WaitOpening;

  constructor(waitId: WaitId, opens: WaitOpening, openedAt: number, answerIndex: number | undefined, cursor: number) {
    this.waitId = waitId;
    this.opens = opens;
    this.kind = opens.kind;
    this.key = opens.kind === 'external' ? opens.key : opens.spec.key;
    this.spec = opens.kind === 'children' ? opens.spec : undefined;
    this.answerSchema = opens.kind === 'external' ? opens.answerSchema : undefined;
    this.prompt = opens.kind === 'external' ? opens.prompt : undefined;
    this.openedAt = openedAt;
    this.answerIndex = answerIndex;
    this.closed = answerIndex !== undefined && answerIndex < cursor;
    Object.freeze(this);
  }

  get answered(): boolean {
    return this.answerIndex !== undefined;
  }
}

/**
 * An admission and consumption fact for one Signal. Consumed payloads are released while the
 * normalized digest, WaitId and status remain for duplicate reconciliation.
 */
export class SignalReceipt {
  readonly id: SignalId;
  readonly waitId: WaitId | undefined;
  readonly payloadDigest: Digest;
  /** The 1-based mailbox position. */
  readonly arrivalSequence: bigint;
  /** Committed consumption (not delivery to a candidate Step). */
  readonly consumed: boolean;
  /** The settlement status of a Dispatcher settlement delivery. */
  readonly status: DeliveredSettlementStatus | undefined;
  readonly #record: MailboxRecord;

  constructor(record: MailboxRecord, arrivalSequence: bigint, consumed: boolean) {
    this.id = record.id;
    this.waitId = record.waitId;
    this.payloadDigest = record.payloadDigest;
    this.arrivalSequence = arrivalSequence;
    this.consumed = consumed;
    this.status = record.status;
    this.#record = record;
    Object.freeze(this);
  }

  /** The retained input, only while it remains unconsumed. */
  pendingSignal(): Signal | undefined {
    return this.consumed ? undefined : this.#record.signal();
  }

  /**
   * Whether this receipt proves admission of `request`: only Host input (non-engine ids) with the
   * same id, WaitId and normalized payload digest. Engine openings and answers never match.
   */
  matches(request: SignalRequest): boolean {
    return (
      request instanceof SignalRequest &&
      !this.id.engineOwned &&
      this.id.equals(request.id) &&
      sameOptional(this.waitId, request.waitId) &&
      this.payloadDigest.equals(request.payload.digest())
    );
  }
}

/* ================================================================================================
 * Mailbox
 * ============================================================================================== */

/** Options for {@link Mailbox.fromWire}. */
export interface MailboxDecodeOptions {
  /** The KernelError code of every rejection (default `invalid_snapshot`). */
  readonly code?: string;
  /** Renders pending child-wait answers; without it such a record is rejected. */
  readonly renderChildWaitAnswer?: ChildWaitAnswerRenderer;
}

/**
 * The immutable mailbox value. Every factory validates the history: cursor within the records,
 * retention matching the cursor, unique delivery ids, unique wait openings, answers after their
 * opening and from the right source (Host input for external waits, the Engine for child waits),
 * at most one answer per wait, and one open wait per key at a time.
 */
export class Mailbox {
  readonly #records: readonly MailboxRecord[];
  readonly #cursor: number;
  /** waitId → wait, in opening order. */
  readonly #waits: ReadonlyMap<string, WaitRecord>;
  /** wait key → the latest wait opened for it. */
  readonly #latestByKey: ReadonlyMap<string, string>;
  /** signal id → 0-based position; shared with the mailbox this one was appended to. */
  readonly #positions: SharedMap<number>;
  /** UTF-8 length of the records and the commas between them (kept up to date, never re-measured). */
  readonly #recordsBytes: number;
  /** The records' texts in joined runs, shared with the versions this one was derived from. */
  readonly #runs: TextRuns;
  #json: string | undefined;
  #raw: RawJson | undefined;
  static readonly #empty = new Mailbox([], 0, new Map(), new Map(), SharedMap.of(new Map()), 0, TextRuns.empty);

  private constructor(
    records: readonly MailboxRecord[],
    cursor: number,
    waits: ReadonlyMap<string, WaitRecord>,
    latestByKey: ReadonlyMap<string, string>,
    positions: SharedMap<number>,
    recordsBytes: number,
    runs: TextRuns,
  ) {
    this.#records = Object.isFrozen(records) ? records : Object.freeze([...records]);
    this.#cursor = cursor;
    this.#waits = waits;
    this.#latestByKey = latestByKey;
    this.#positions = positions;
    this.#recordsBytes = recordsBytes;
    this.#runs = runs;
    Object.freeze(this);
  }

  static empty(): Mailbox {
    return Mailbox.#empty;
  }

  /** Validates a complete history (records in arrival order, `cursor` consumed). Rejections: `code`. */
  static create(records: readonly MailboxRecord[], cursor: number, code: string = ErrorCode.invalidSnapshot): Mailbox {
    if (!Array.isArray(records) || records.some((record) => !(record instanceof MailboxRecord))) {
      throw new KernelError(code, 'mailbox records must be MailboxRecord values');
    }
    if (!Number.isSafeInteger(cursor) || cursor < 0) throw new KernelError(code, `mailbox cursor ${describe(cursor)} is invalid`);
    return Mailbox.#validated(records, cursor, (message, index) => {
      throw new KernelError(code, index === undefined ? `mailbox ${message}` : `mailbox record ${index} ${message}`);
    });
  }

  static #validated(
    records: readonly MailboxRecord[],
    cursor: number,
    fail: (message: string, index?: number) => never,
  ): Mailbox {
    if (cursor > records.length) fail(`signal_cursor ${cursor} exceeds the ${records.length} records`);
    const positions = new Map<string, number>();
    const openings = new Map<string, { opens: WaitOpening; at: number; answer: number | undefined }>();
    const latestByKey = new Map<string, string>();
    records.forEach((record, index) => {
      const pending = index >= cursor;
      if (record.kind !== 'wait_opening' && record.retained !== pending) {
        fail(pending ? 'is pending but released its payload' : 'is consumed but still holds its payload', index);
      }
      if (record.kind === 'child_wait_answer' && pending && record.answered === undefined) {
        fail('is a pending child-wait answer without its answered children', index);
      }
      if (record.kind === 'wait_opening' && openings.has((record.waitId as WaitId).toString())) {
        fail(`opens ${(record.waitId as WaitId).toString()} a second time`, index);
      }
      const id = record.id.toString();
      if (positions.has(id)) fail(`repeats signal id ${id} (first at record ${positions.get(id)})`, index);
      positions.set(id, index);
      if (record.kind === 'wait_opening') {
        const waitId = (record.waitId as WaitId).toString();
        const opens = record.opens as WaitOpening;
        const key = (opens.kind === 'external' ? opens.key : opens.spec.key).toString();
        const previous = latestByKey.get(key);
        if (previous !== undefined) {
          const earlier = openings.get(previous);
          const answer = earlier?.answer;
          if (answer === undefined || answer >= cursor) {
            fail(`opens a second wait for key ${key} while ${previous} is still open`, index);
          }
        }
        latestByKey.set(key, waitId);
        openings.set(waitId, { opens, at: index, answer: undefined });
        return;
      }
      if (record.waitId === undefined) return;
      const waitId = record.waitId.toString();
      const opening = openings.get(waitId);
      if (opening === undefined) fail(`addresses ${waitId}, which no earlier record opened`, index);
      const problem = addressingProblem(record, opening.opens, waitId);
      if (problem !== undefined) fail(problem, index);
      if (opening.answer !== undefined) fail(`answers ${waitId} again (first answer at record ${opening.answer})`, index);
      opening.answer = index;
    });
    const waits = new Map<string, WaitRecord>();
    for (const [waitId, opening] of openings) {
      const wait = new WaitRecord(records[opening.at]?.waitId as WaitId, opening.opens, opening.at, opening.answer, cursor);
      if (wait.closed && (wait.answerSchema !== undefined || wait.prompt !== undefined)) {
        fail(`opens ${waitId}, which is closed, and still keeps its answer schema or prompt`, opening.at);
      }
      waits.set(waitId, wait);
    }
    const frozen = Object.freeze([...records]);
    return new Mailbox(frozen, cursor, waits, latestByKey, SharedMap.of(positions), recordsLength(frozen), TextRuns.of(frozen));
  }

  /** Strict decode of `{"records":[…],"signal_cursor":n}`. */
  static fromWire(node: JsonNode, path = '', options: MailboxDecodeOptions = {}): Mailbox {
    const code = options.code ?? ErrorCode.invalidSnapshot;
    const record: WireRecord = new WireRecord(node, path, code);
    const cursorValue = record.uint64('signal_cursor');
    const items = record.array('records');
    record.finish();
    if (cursorValue > BigInt(items.length)) {
      record.fail(`${cursorValue} exceeds the ${items.length} records`, 'signal_cursor');
    }
    const cursor = Number(cursorValue);
    const specs = new Map<string, ChildWaitSpec>();
    const records = items.map((item, index) => {
      const decoded = MailboxRecord.fromWire(item, `${record.childPath('records')}/${index}`, {
        code,
        pending: index >= cursor,
        specOf: (waitId) => specs.get(waitId.toString()),
        render: options.renderChildWaitAnswer,
      });
      if (decoded.kind === 'wait_opening' && decoded.opens?.kind === 'children') {
        specs.set((decoded.waitId as WaitId).toString(), decoded.opens.spec);
      }
      return decoded;
    });
    return Mailbox.#validated(records, cursor, (message, index) => {
      const at = index === undefined ? record.path : `${record.childPath('records')}/${index}`;
      throw wireError(code, at, message);
    });
  }

  static parse(input: string | Uint8Array, options: MailboxDecodeOptions = {}): Mailbox {
    const code = options.code ?? ErrorCode.invalidSnapshot;
    return Mailbox.fromWire(parseJson(input, { code, what: 'mailbox' }), '', options);
  }

  /** Accepted Signals (the mailbox length). */
  get length(): number {
    return this.#records.length;
  }

  /** Consumed records (the committed cursor). */
  get cursor(): number {
    return this.#cursor;
  }

  /** Unconsumed records. */
  get pendingCount(): number {
    return this.#records.length - this.#cursor;
  }

  /** All records in arrival order (a copy). */
  records(): MailboxRecord[] {
    return [...this.#records];
  }

  record(index: number): MailboxRecord | undefined {
    return this.#records[index];
  }

  /** The pending window in arrival order: what the next Step receives. */
  pendingSignals(): Signal[] {
    return this.#records.slice(this.#cursor).map((record) => record.signal() as Signal);
  }

  /**
   * Appends records (arrival order). The result is the history {@link create} would accept: every
   * rule is checked for the new records against the facts this mailbox already holds (ids, openings,
   * answers), so the cost is the batch's, not the history's. Rejections: `invalid_snapshot`.
   */
  append(...records: MailboxRecord[]): Mailbox {
    if (records.length === 0) return this;
    if (records.some((record) => !(record instanceof MailboxRecord))) {
      throw new KernelError(ErrorCode.invalidSnapshot, 'mailbox records must be MailboxRecord values');
    }
    const fail: (message: string, index: number) => never = (message, index) => {
      throw new KernelError(ErrorCode.invalidSnapshot, `mailbox record ${index} ${message}`);
    };
    const cursor = this.#cursor;
    const positions = new Map<string, number>();
    let waits: Map<string, WaitRecord> | undefined;
    let latestByKey: Map<string, string> | undefined;
    const waitOf = (waitId: string): WaitRecord | undefined => (waits ?? this.#waits).get(waitId);
    records.forEach((record, offset) => {
      const index = this.#records.length + offset;
      // Every appended record is pending: the cursor never passes the end of the history.
      if (record.kind !== 'wait_opening' && !record.retained) fail('is pending but released its payload', index);
      if (record.kind === 'child_wait_answer' && record.answered === undefined) {
        fail('is a pending child-wait answer without its answered children', index);
      }
      if (record.kind === 'wait_opening' && waitOf((record.waitId as WaitId).toString()) !== undefined) {
        fail(`opens ${(record.waitId as WaitId).toString()} a second time`, index);
      }
      const id = record.id.toString();
      const earlier = this.#positions.get(id) ?? positions.get(id);
      if (earlier !== undefined) fail(`repeats signal id ${id} (first at record ${earlier})`, index);
      positions.set(id, index);
      if (record.kind === 'wait_opening') {
        const waitId = (record.waitId as WaitId).toString();
        const opens = record.opens as WaitOpening;
        const key = (opens.kind === 'external' ? opens.key : opens.spec.key).toString();
        const previous = (latestByKey ?? this.#latestByKey).get(key);
        if (previous !== undefined) {
          const answer = waitOf(previous)?.answerIndex;
          if (answer === undefined || answer >= cursor) fail(`opens a second wait for key ${key} while ${previous} is still open`, index);
        }
        latestByKey ??= new Map(this.#latestByKey);
        latestByKey.set(key, waitId);
        waits ??= new Map(this.#waits);
        waits.set(waitId, new WaitRecord(record.waitId as WaitId, opens, index, undefined, cursor));
        return;
      }
      if (record.waitId === undefined) return;
      const waitId = record.waitId.toString();
      const opening = waitOf(waitId);
      if (opening === undefined) fail(`addresses ${waitId}, which no earlier record opened`, index);
      const problem = addressingProblem(record, opening.opens, waitId);
      if (problem !== undefined) fail(problem, index);
      if (opening.answerIndex !== undefined) fail(`answers ${waitId} again (first answer at record ${opening.answerIndex})`, index);
      waits ??= new Map(this.#waits);
      // Answered but pending (the answer lies past the cursor), so the wait stays open.
      waits.set(waitId, new WaitRecord(opening.waitId, opening.opens, opening.openedAt, index, cursor));
    });
    const all = Object.freeze([...this.#records, ...records]);
    return new Mailbox(
      all,
      cursor,
      waits ?? this.#waits,
      latestByKey ?? this.#latestByKey,
      this.#positions.with(positions),
      this.#recordsBytes + recordsLength(records) + (this.#records.length > 0 ? 1 : 0),
      this.#runs.extendedTo(all),
    );
  }

  /**
   * Consumes the first `count` pending records: they release their payloads (keeping digests),
   * and consumed answers close their waits, whose openings then drop their answer contract. Only
   * the consumed records and the closed waits' openings change, so no other rule is re-checked.
   */
  consume(count: number): Mailbox {
    if (!Number.isSafeInteger(count) || count < 0 || count > this.pendingCount) {
      throw new KernelError(
        ErrorCode.invalidSnapshot,
        `cannot consume ${String(count)} of ${this.pendingCount} pending signals`,
      );
    }
    if (count === 0) return this;
    const cursor = this.#cursor + count;
    const records = [...this.#records];
    let bytes = this.#recordsBytes;
    const changed: number[] = [];
    const replace = (index: number, record: MailboxRecord): void => {
      bytes += record.toWire().byteLength - (records[index] as MailboxRecord).toWire().byteLength;
      records[index] = record;
      changed.push(index);
    };
    let waits: Map<string, WaitRecord> | undefined;
    for (let index = this.#cursor; index < cursor; index += 1) {
      const record = this.#records[index] as MailboxRecord;
      if (record.kind === 'wait_opening') continue;
      replace(index, record.released());
      if (record.waitId === undefined) continue;
      const wait = this.#waits.get(record.waitId.toString()) as WaitRecord;
      waits ??= new Map(this.#waits);
      waits.set(wait.waitId.toString(), new WaitRecord(wait.waitId, withoutContract(wait.opens), wait.openedAt, wait.answerIndex, cursor));
      replace(wait.openedAt, (records[wait.openedAt] as MailboxRecord).withoutAnswerContract());
    }
    const frozen = Object.freeze(records);
    return new Mailbox(frozen, cursor, waits ?? this.#waits, this.#latestByKey, this.#positions, bytes, this.#runs.replacedIn(frozen, changed));
  }

  /** The 0-based position of the record with `id`, if admitted. */
  indexOf(id: SignalId): number | undefined {
    return this.#positions.get(id.toString());
  }

  /** Receipts in arrival order. */
  receipts(): SignalReceipt[] {
    return this.#records.map((record, index) => new SignalReceipt(record, BigInt(index + 1), index < this.#cursor));
  }

  /** The receipt of `id`, if admitted. */
  receipt(id: SignalId): SignalReceipt | undefined {
    const index = this.#positions.get(id.toString());
    if (index === undefined) return undefined;
    return new SignalReceipt(this.#records[index] as MailboxRecord, BigInt(index + 1), index < this.#cursor);
  }

  /** Every wait this mailbox opened, in opening order. */
  waits(): WaitRecord[] {
    return [...this.#waits.values()];
  }

  wait(id: WaitId): WaitRecord | undefined {
    return this.#waits.get(id.toString());
  }

  /**
   * Waits not yet closed by the cursor, in opening order. Process termination closes every wait;
   * the enclosing snapshot applies that (see `ProcessSnapshot.openWaits`).
   */
  openWaits(): WaitRecord[] {
    return this.waits().filter((wait) => !wait.closed);
  }

  /** The open wait for a logical key, if any (at most one exists). */
  openWaitFor(key: WaitKey): WaitRecord | undefined {
    return this.openWaits().find((wait) => wait.key.equals(key));
  }

  /**
   * The canonical mailbox as one spliced value: its parts are the records' own cached texts, so the
   * enclosing snapshot measures, hashes and writes it without joining the history again.
   */
  toWire(): WireValue {
    if (this.#raw === undefined) {
      const suffix = `],"signal_cursor":${this.#cursor}}`;
      const parts: (string | RawJson)[] = [recordsPrefix, ...this.#runs.parts(this.#records), suffix];
      this.#raw = RawJson.spliced(parts, recordsPrefix.length + this.#recordsBytes + suffix.length);
    }
    return this.#raw;
  }

  json(): string {
    this.#json ??= (this.toWire() as RawJson).text;
    return this.#json;
  }

  equals(other: Mailbox): boolean {
    return other instanceof Mailbox && other.json() === this.json();
  }
}

/* ================================================================================================
 * Helpers
 * ============================================================================================== */

function invalidRecord(message: string): KernelError {
  return new KernelError(ErrorCode.invalidSnapshot, `invalid mailbox record: ${message}`);
}

const recordsPrefix = '{"records":[';

/** The UTF-8 length of `records` written one after another with commas between them. */
function recordsLength(records: readonly MailboxRecord[]): number {
  let length = Math.max(0, records.length - 1);
  for (const record of records) length += record.toWire().byteLength;
  return length;
}

/** An opening's facts once its wait closed: an external wait keeps its key, not its answer contract. */
function withoutContract(opens: WaitOpening): WaitOpening {
  return opens.kind === 'external' ? { kind: 'external', key: opens.key } : opens;
}

function sameOptional(a: WaitId | undefined, b: WaitId | undefined): boolean {
  return a === undefined ? b === undefined : a.equals(b);
}


/** Why `record` cannot answer the wait `opens` opened (undefined: it can) — shared by create and append. */
function addressingProblem(record: MailboxRecord, opens: WaitOpening, waitId: string): string | undefined {
  if (record.kind === 'external') {
    if (opens.kind !== 'external') return `is host input addressed to child wait ${waitId}, which only the Engine answers`;
    return record.payload === undefined ? undefined : answerProblem(opens.answerSchema, record.payload, waitId);
  }
  if (record.kind === 'child_wait_answer') {
    if (opens.kind !== 'children') return `is an Engine answer to external wait ${waitId}`;
    return record.answered === undefined ? undefined : answeredProblem(opens.spec, record.answered);
  }
  return undefined;
}

/** Why `payload` cannot answer a wait whose run-time schema is `schema` (undefined: it can). */
function answerProblem(schema: Schema | undefined, payload: Payload, waitId: string): string | undefined {
  if (schema === undefined) return undefined;
  try {
    schema.validate(payload, `the answer to ${waitId}`);
    return undefined;
  } catch (error) {
    return `is an answer that its wait's answer schema rejects: ${messageOf(error)}`;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
