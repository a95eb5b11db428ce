// Over 500 lines: the process snapshot and its strict decoder: its invariants span every member.
import { Budget } from './budget.js';
import { parseJson, type JsonNode } from './canonical-json.js';
import { CapabilitySet } from './capability.js';
import { DeploymentRef } from './deployment.js';
import { Descriptor } from './descriptor.js';
import { describe, Digest } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { ExecutionState } from './execution-state.js';
import { Failure, maxDiagnosticBytes, validDiagnostic } from './failure.js';
import { ChildKey, EffectId, ProcessId, WaitId } from './identity.js';
import { Mailbox, type ChildWaitAnswerRenderer, type SignalReceipt, type WaitKind, type WaitRecord } from './mailbox.js';
import { Payload } from './payload.js';
import { PreparedStep, type EffectPhase, type PreparedEffect, type StartedChildRenderer } from './prepared-step.js';
import { ProcessRelation } from './relation.js';
import { isUtcTimestamp, Result } from './result.js';
import type { Settlement } from './settlement.js';
import { isStatus, isTerminalStatus, statusValues, type Status } from './status.js';
import { Termination } from './termination.js';
import { TreeLimits } from './tree-limits.js';
import { Usage } from './usage.js';
import { answerSchemaOf, CurrentWait } from './wait.js';
import { encodedWireLength, encodeWire, maxUint64, RawJson, WireRecord, wireError, wirePieces, type WireValue } from './wire.js';

/**
 * ProcessSnapshot: the immutable capture of one Engine-owned Process inside a TreeSnapshot (the
 * only recovery unit). Strategy state and Effect payloads stay opaque.
 *
 * Wire (canonical JSON, members sorted):
 * `{"process_id","relation":{"parent_id"?,"child_key"?},"child_request_digest"?,"deployment_ref",
 * "started_at","finished_at"?,"status","committed_steps","budget","allocated_resources":
 * {"steps","effects","signals"},"capabilities","counters":{"prepared_effects","dropped_deltas"},
 * "committed_execution_state","mailbox","prepared"?,"current_wait_id"?,"pause_reason"?,
 * "pending_control","output"?,"termination"?}`.
 *
 * The relation keeps only the parent link and child key: the enclosing tree supplies the root id
 * and depth, and the TreeLimits the record must satisfy. Every factory validates the complete
 * rule set of the contract (§2.5) and caches the canonical JSON, so a tree splices it unchanged.
 */

/** Who recorded a deadline or cancellation intent. */
export type ControlOwner = 'parent' | 'host';

export const controlOwnerValues: readonly ControlOwner[] = Object.freeze(['parent', 'host']);

export function isControlOwner(value: unknown): value is ControlOwner {
  return value === 'parent' || value === 'host';
}

/** An owned control intent (deadline or cancellation). */
export interface OwnedControl {
  readonly owner: ControlOwner;
  readonly reason: string;
}

/** The members of a {@link PendingControl}. */
export interface PendingControlConfig {
  /** An asynchronously recorded failure (e.g. a child-completion delivery failure). */
  readonly failure?: Failure;
  readonly killReason?: string;
  readonly deadline?: OwnedControl;
  readonly cancellation?: OwnedControl;
  /** A pause requested but not yet applied at a safe Step boundary. */
  readonly pauseReason?: string;
}

/**
 * Recorded-but-not-yet-applied control intent. Wire: `{"failure"?,"kill_reason"?,
 * "deadline_owner"?,"deadline_reason"?,"cancellation_owner"?,"cancellation_reason"?,
 * "pause_reason"?}` — an owner and its reason appear together; reasons are non-empty, trimmed and
 * at most 4096 UTF-8 bytes.
 */
export class PendingControl {
  readonly failure: Failure | undefined;
  readonly killReason: string | undefined;
  readonly deadline: OwnedControl | undefined;
  readonly cancellation: OwnedControl | undefined;
  readonly pauseReason: string | undefined;
  static readonly #empty = new PendingControl({});

  private constructor(config: PendingControlConfig) {
    this.failure = config.failure;
    this.killReason = config.killReason;
    this.deadline = config.deadline === undefined ? undefined : Object.freeze({ ...config.deadline });
    this.cancellation = config.cancellation === undefined ? undefined : Object.freeze({ ...config.cancellation });
    this.pauseReason = config.pauseReason;
    Object.freeze(this);
  }

  static empty(): PendingControl {
    return PendingControl.#empty;
  }

  /** Validates each intent; rejections are `code` (default `invalid_snapshot`). */
  static create(config: PendingControlConfig = {}, code: string = ErrorCode.invalidSnapshot): PendingControl {
    const fail: (message: string) => never = (message) => {
      throw new KernelError(code, `pending control: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected control members, got ${describe(config)}`);
    if (config.failure !== undefined && !(config.failure instanceof Failure)) fail('failure must be a Failure');
    checkReason(config.killReason, 'kill reason', fail);
    checkReason(config.pauseReason, 'pause reason', fail);
    for (const [name, owned] of [
      ['deadline', config.deadline],
      ['cancellation', config.cancellation],
    ] as const) {
      if (owned === undefined) continue;
      if (typeof owned !== 'object' || owned === null) fail(`${name} must be {owner, reason}`);
      if (!isControlOwner(owned.owner)) fail(`${name} owner must be parent or host, got ${describe(owned.owner)}`);
      if (owned.reason === undefined) fail(`${name} needs a reason`);
      checkReason(owned.reason, `${name} reason`, fail);
    }
    const control = new PendingControl(config);
    return control.isEmpty ? PendingControl.#empty : control;
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidSnapshot): PendingControl {
    const record: WireRecord = new WireRecord(node, path, code);
    const failureNode = record.optional('failure');
    const killReason = record.optionalString('kill_reason');
    const deadlineOwner = record.optionalString('deadline_owner');
    const deadlineReason = record.optionalString('deadline_reason');
    const cancellationOwner = record.optionalString('cancellation_owner');
    const cancellationReason = record.optionalString('cancellation_reason');
    const pauseReason = record.optionalString('pause_reason');
    record.finish();
    const failure =
      failureNode === undefined ? undefined : recode(code, () => Failure.fromWire(failureNode, record.childPath('failure')));
    const owned = (name: string, owner: string | undefined, reason: string | undefined): OwnedControl | undefined => {
      if ((owner === undefined) !== (reason === undefined)) {
        record.fail(`${name}_owner and ${name}_reason must appear together`);
      }
      if (owner === undefined || reason === undefined) return undefined;
      if (!isControlOwner(owner)) record.fail('must be parent or host', `${name}_owner`);
      return { owner, reason };
    };
    const deadline = owned('deadline', deadlineOwner, deadlineReason);
    const cancellation = owned('cancellation', cancellationOwner, cancellationReason);
    return recode(
      code,
      () => PendingControl.create({ failure, killReason, deadline, cancellation, pauseReason }, code),
      record.path,
    );
  }

  static parse(input: string | Uint8Array): PendingControl {
    return PendingControl.fromWire(parseJson(input, { code: ErrorCode.invalidSnapshot, what: 'pending control' }));
  }

  get isEmpty(): boolean {
    return (
      this.failure === undefined &&
      this.killReason === undefined &&
      this.deadline === undefined &&
      this.cancellation === undefined &&
      this.pauseReason === undefined
    );
  }

  /** This intent with `changes` applied (`undefined` members keep the current value). */
  with(changes: PendingControlConfig): PendingControl {
    return PendingControl.create({
      failure: changes.failure ?? this.failure,
      killReason: changes.killReason ?? this.killReason,
      deadline: changes.deadline ?? this.deadline,
      cancellation: changes.cancellation ?? this.cancellation,
      pauseReason: changes.pauseReason ?? this.pauseReason,
    });
  }

  /** This intent with the named members cleared (e.g. `without('pauseReason')` once the pause applied). */
  without(...members: ReadonlyArray<keyof PendingControlConfig>): PendingControl {
    const config: { -readonly [K in keyof PendingControlConfig]: PendingControlConfig[K] } = {
      failure: this.failure,
      killReason: this.killReason,
      deadline: this.deadline,
      cancellation: this.cancellation,
      pauseReason: this.pauseReason,
    };
    for (const member of members) delete config[member];
    return PendingControl.create(config);
  }

  toWire(): WireValue {
    return {
      failure: this.failure?.toWire(),
      kill_reason: this.killReason,
      deadline_owner: this.deadline?.owner,
      deadline_reason: this.deadline?.reason,
      cancellation_owner: this.cancellation?.owner,
      cancellation_reason: this.cancellation?.reason,
      pause_reason: this.pauseReason,
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: PendingControl | undefined): boolean {
    return other instanceof PendingControl && other.json() === this.json();
  }
}

/** Refuses a snapshot being created (`invalid_snapshot`); one function, not a closure a call. */
function failSnapshot(message: string): never {
  throw new KernelError(ErrorCode.invalidSnapshot, `invalid process snapshot: ${message}`);
}

function checkReason(reason: unknown, what: string, fail: (message: string) => never): void {
  if (reason !== undefined && !validDiagnostic(reason)) {
    fail(`${what} must be non-empty, trimmed, well-formed text of at most ${maxDiagnosticBytes} UTF-8 bytes`);
  }
}

/** Finite budget debits of children granted by a Process (`allocated_resources`). */
export interface ResourceAmounts {
  readonly steps: bigint;
  readonly effects: bigint;
  readonly signals: bigint;
}

/** Counters the mailbox and committed steps do not already carry (`counters`). */
export interface ProcessCounters {
  /** Stable Effect identities prepared across all Steps (charged at preparation, never refunded). */
  readonly preparedEffects: bigint;
  /** Delta increments dropped (saturating). */
  readonly droppedDeltas: bigint;
}

const zeroAmounts: ResourceAmounts = Object.freeze({ steps: 0n, effects: 0n, signals: 0n });
const zeroCounters: ProcessCounters = Object.freeze({ preparedEffects: 0n, droppedDeltas: 0n });

/** Every member of a ProcessSnapshot; see {@link ProcessSnapshot.create}. */
export interface ProcessSnapshotFields {
  /** The full location (the wire keeps only parent and key; the tree supplies root and depth). */
  readonly relation: ProcessRelation;
  /** Present exactly for a child: the digest of the ChildSpec that started it. */
  readonly childRequestDigest?: Digest;
  readonly deploymentRef: DeploymentRef;
  /** Canonical UTC RFC 3339 timestamp (see `isUtcTimestamp`). */
  readonly startedAt: string;
  /** Present exactly when terminal. */
  readonly finishedAt?: string;
  readonly status: Status;
  readonly committedSteps: bigint;
  readonly budget: Budget;
  /** Default: zero. */
  readonly allocatedResources?: ResourceAmounts;
  readonly capabilities: CapabilitySet;
  /** Default: zero. */
  readonly counters?: ProcessCounters;
  readonly committedExecutionState: ExecutionState;
  /** Default: empty. */
  readonly mailbox?: Mailbox;
  readonly prepared?: PreparedStep;
  readonly currentWaitId?: WaitId;
  readonly pauseReason?: string;
  /** Default: empty. */
  readonly pendingControl?: PendingControl;
  readonly output?: Payload;
  readonly termination?: Termination;
}

/** {@link ProcessSnapshot.create} members plus the tree's limits (capacity is checked only when given). */
export interface ProcessSnapshotCreateOptions extends ProcessSnapshotFields {
  readonly treeLimits?: TreeLimits;
}

/** Context for decoding a record: the tree supplies relation, limits and child renderers. */
export interface ProcessSnapshotDecodeOptions {
  /** Default `invalid_snapshot`; a tree passes `invalid_tree_snapshot`. */
  readonly code?: string;
  /** The full relation; without it the record must be a root. */
  readonly relation?: ProcessRelation;
  /** Capacity rules are checked only when given. */
  readonly treeLimits?: TreeLimits;
  readonly renderStartedChild?: StartedChildRenderer;
  readonly renderChildWaitAnswer?: ChildWaitAnswerRenderer;
}

interface NormalizedFields {
  readonly relation: ProcessRelation;
  readonly childRequestDigest: Digest | undefined;
  readonly deploymentRef: DeploymentRef;
  readonly startedAt: string;
  readonly finishedAt: string | undefined;
  readonly status: Status;
  readonly committedSteps: bigint;
  readonly budget: Budget;
  readonly allocatedResources: ResourceAmounts;
  readonly capabilities: CapabilitySet;
  readonly counters: ProcessCounters;
  readonly committedExecutionState: ExecutionState;
  readonly mailbox: Mailbox;
  readonly prepared: PreparedStep | undefined;
  readonly currentWaitId: WaitId | undefined;
  readonly pauseReason: string | undefined;
  readonly pendingControl: PendingControl;
  readonly output: Payload | undefined;
  readonly termination: Termination | undefined;
}

/**
 * The immutable, validated capture of one Process. An interrupted terminal Process keeps its
 * prepared batch as evidence: settled Effects keep their actual results, planned ones never ran,
 * and the candidate state and input cursor were not adopted.
 */
export class ProcessSnapshot {
  readonly #fields: NormalizedFields;
  /**
   * The wire form (nested records spliced as their cached JSON), built on first use and kept until
   * its pieces are built: an intermediate snapshot the Engine derives another from (a settled batch
   * the same commit adopts) is never encoded.
   */
  #wire: WireValue | undefined;
  #pieces: readonly string[] | undefined;
  #json: string | undefined;
  #size: number | undefined;
  #digest: Digest | undefined;

  private constructor(fields: NormalizedFields) {
    this.#fields = fields;
    Object.freeze(this);
  }

  /**
   * The Engine's typed factory: validates every process rule of the contract, and the capacity
   * rules against `treeLimits` when given (a tree always re-checks them against its own limits).
   * Rejections are `invalid_snapshot`.
   */
  static create(options: ProcessSnapshotCreateOptions): ProcessSnapshot {
    const fail: (message: string) => never = failSnapshot;
    if (typeof options !== 'object' || options === null) fail(`expected snapshot members, got ${describe(options)}`);
    const limits = options.treeLimits;
    if (limits !== undefined && !(limits instanceof TreeLimits)) fail('treeLimits must be TreeLimits');
    const fields = normalize(options, fail);
    return ProcessSnapshot.#validated(fields, limits, fail);
  }

  static #validated(
    fields: NormalizedFields,
    limits: TreeLimits | undefined,
    fail: (message: string) => never,
  ): ProcessSnapshot {
    checkRules(fields, fail);
    const snapshot = new ProcessSnapshot(fields);
    if (limits !== undefined) snapshot.checkCapacity(limits, fail);
    return snapshot;
  }

  /**
   * Strict decode of one record; the tree passes relation, limits and child renderers. Every
   * rejection (nested values included) is `options.code` (default `invalid_snapshot`).
   */
  static fromWire(node: JsonNode, path = '', options: ProcessSnapshotDecodeOptions = {}): ProcessSnapshot {
    const code = options.code ?? ErrorCode.invalidSnapshot;
    return recode(code, () => ProcessSnapshot.#decode(node, path, options, code));
  }

  static #decode(node: JsonNode, path: string, options: ProcessSnapshotDecodeOptions, code: string): ProcessSnapshot {
    const limits = options.treeLimits;
    const record: WireRecord = new WireRecord(node, path, code);
    const processId = record.identity('process_id', (text) => ProcessId.parse(text));
    const relation = readRelation(record, processId, options.relation);
    const childRequestDigest = record.has('child_request_digest')
      ? record.identity('child_request_digest', (text) => Digest.parse(text))
      : undefined;
    const deploymentRef = DeploymentRef.fromWire(record.required('deployment_ref'), record.childPath('deployment_ref'), code);
    const startedAt = record.string('started_at');
    const finishedAt = record.optionalString('finished_at');
    const status = record.string('status');
    if (!isStatus(status)) record.fail(`must be one of ${statusValues.join(', ')}`, 'status');
    const committedSteps = record.uint64('committed_steps');
    const budget = Budget.fromWire(record.required('budget'), record.childPath('budget'), code);
    const allocatedResources = readAmounts(record, 'allocated_resources');
    const capabilities = CapabilitySet.fromWire(record.required('capabilities'), record.childPath('capabilities'), code);
    const counters = readCounters(record, 'counters');
    const committedExecutionState = ExecutionState.fromWire(
      record.required('committed_execution_state'),
      record.childPath('committed_execution_state'),
      code,
    );
    const mailbox = Mailbox.fromWire(record.required('mailbox'), record.childPath('mailbox'), {
      code,
      renderChildWaitAnswer: options.renderChildWaitAnswer,
    });
    const preparedNode = record.optional('prepared');
    let prepared: PreparedStep | undefined;
    if (preparedNode !== undefined) {
      if (committedSteps === maxUint64) record.fail('cannot follow the last representable step', 'prepared');
      prepared = PreparedStep.fromWire(preparedNode, record.childPath('prepared'), {
        processId,
        stepSequence: committedSteps + 1n,
        code,
        renderStartedChild: options.renderStartedChild,
      });
    }
    const currentWaitId = record.has('current_wait_id')
      ? record.identity('current_wait_id', (text) => WaitId.parse(text))
      : undefined;
    const pauseReason = record.optionalString('pause_reason');
    const pendingControl = PendingControl.fromWire(
      record.required('pending_control'),
      record.childPath('pending_control'),
      code,
    );
    const outputNode = record.optional('output');
    const output = outputNode === undefined ? undefined : recode(code, () => Payload.fromNode(outputNode), record.childPath('output'));
    const terminationNode = record.optional('termination');
    const termination =
      terminationNode === undefined
        ? undefined
        : Termination.fromWire(terminationNode, record.childPath('termination'), code);
    record.finish();
    const fields: NormalizedFields = {
      relation,
      childRequestDigest,
      deploymentRef,
      startedAt,
      finishedAt,
      status,
      committedSteps,
      budget,
      allocatedResources,
      capabilities,
      counters,
      committedExecutionState,
      mailbox,
      prepared,
      currentWaitId,
      pauseReason,
      pendingControl,
      output,
      termination,
    };
    return ProcessSnapshot.#validated(fields, limits, (message) => {
      throw wireError(code, path, message);
    });
  }

  /** Decodes one record on its own (a root unless `options.relation` places it). */
  static parse(input: string | Uint8Array, options: ProcessSnapshotDecodeOptions = {}): ProcessSnapshot {
    const code = options.code ?? ErrorCode.invalidSnapshot;
    return ProcessSnapshot.fromWire(parseJson(input, { code, what: 'process snapshot', maxBytes: maxSnapshotInputBytes }), '', options);
  }

  /**
   * Re-checks the TreeLimits capacity rules: depth, pending signals now and after the prepared
   * Step consumes its prefix and appends one settlement per Effect, and the encoded size.
   */
  checkCapacity(limits: TreeLimits, fail: (message: string) => never): void {
    const f = this.#fields;
    if (f.relation.depth > limits.maxDepth) fail(`depth ${f.relation.depth} exceeds max_depth ${limits.maxDepth}`);
    const pending = BigInt(f.mailbox.pendingCount);
    if (pending > limits.maxPendingSignals) {
      fail(`${pending} pending signals exceed max_pending_signals ${limits.maxPendingSignals}`);
    }
    if (f.prepared !== undefined && !isTerminalStatus(f.status)) {
      const after = pending - BigInt(f.prepared.intent.consumedSignals) + BigInt(f.prepared.effectCount);
      if (after > limits.maxPendingSignals) {
        fail(`${after} pending signals after the prepared step exceed max_pending_signals ${limits.maxPendingSignals}`);
      }
    }
    const size = this.encodedSize;
    if (!limits.maxProcessSnapshotBytes.admits(BigInt(size))) {
      fail(`encoded size ${size} exceeds max_process_snapshot_bytes ${limits.maxProcessSnapshotBytes.toString()}`);
    }
  }

  /* ---------------------------------------------------------------------------------------------
   * Accessors
   * ------------------------------------------------------------------------------------------- */

  get processId(): ProcessId {
    return this.#fields.relation.processId;
  }

  get relation(): ProcessRelation {
    return this.#fields.relation;
  }

  get childRequestDigest(): Digest | undefined {
    return this.#fields.childRequestDigest;
  }

  get deploymentRef(): DeploymentRef {
    return this.#fields.deploymentRef;
  }

  get startedAt(): string {
    return this.#fields.startedAt;
  }

  get finishedAt(): string | undefined {
    return this.#fields.finishedAt;
  }

  get status(): Status {
    return this.#fields.status;
  }

  get isTerminal(): boolean {
    return isTerminalStatus(this.#fields.status);
  }

  get committedSteps(): bigint {
    return this.#fields.committedSteps;
  }

  get budget(): Budget {
    return this.#fields.budget;
  }

  get allocatedResources(): ResourceAmounts {
    return this.#fields.allocatedResources;
  }

  get capabilities(): CapabilitySet {
    return this.#fields.capabilities;
  }

  get counters(): ProcessCounters {
    return this.#fields.counters;
  }

  /** committed_steps, counters.prepared_effects, accepted_signals (mailbox length), dropped_deltas. */
  usage(): Usage {
    const f = this.#fields;
    return Usage.of({
      committedSteps: f.committedSteps,
      preparedEffects: f.counters.preparedEffects,
      acceptedSignals: BigInt(f.mailbox.length),
      droppedDeltas: f.counters.droppedDeltas,
    });
  }

  /** The latest committed opaque Strategy state (a prepared candidate stays an Engine detail). */
  get committedExecutionState(): ExecutionState {
    return this.#fields.committedExecutionState;
  }

  get mailbox(): Mailbox {
    return this.#fields.mailbox;
  }

  /** The prepared Step (execution frontier), if any. */
  get prepared(): PreparedStep | undefined {
    return this.#fields.prepared;
  }

  /** The current unanswered Engine-minted wait (also while paused). */
  get waitId(): WaitId | undefined {
    return this.#fields.currentWaitId;
  }

  /** Host input (`external`) or child completion (`children`) while a wait is current. */
  get waitKind(): WaitKind | undefined {
    const id = this.#fields.currentWaitId;
    return id === undefined ? undefined : this.#fields.mailbox.wait(id)?.kind;
  }

  /**
   * The current wait as a Host lists it: id, key, kind, effective answer schema, run-time prompt
   * and the static description (see `CurrentWait`); undefined while no wait is current. `descriptor`
   * supplies the static declarations and must be the one this Process's DeploymentRef names
   * (`invalid_descriptor` otherwise).
   */
  currentWait(descriptor: Descriptor): CurrentWait | undefined {
    if (!(descriptor instanceof Descriptor) || !descriptor.digest().equals(this.#fields.deploymentRef.contractDigest)) {
      throw new KernelError(
        ErrorCode.invalidDescriptor,
        `currentWait needs the descriptor of ${this.#fields.deploymentRef.toString()}, whose contract digest is ${this.#fields.deploymentRef.contractDigest.toString()}`,
      );
    }
    const id = this.#fields.currentWaitId;
    const wait = id === undefined ? undefined : this.#fields.mailbox.wait(id);
    if (wait === undefined) return undefined;
    const external = wait.kind === 'external';
    return CurrentWait.create({
      waitId: wait.waitId,
      key: wait.key,
      kind: wait.kind,
      answerSchema: answerSchemaOf(descriptor, wait),
      prompt: external ? wait.prompt : undefined,
      description: external ? descriptor.wait(wait.key)?.description : undefined,
    });
  }

  get pauseReason(): string | undefined {
    return this.#fields.pauseReason;
  }

  get pendingControl(): PendingControl {
    return this.#fields.pendingControl;
  }

  get output(): Payload | undefined {
    return this.#fields.output;
  }

  get termination(): Termination | undefined {
    return this.#fields.termination;
  }

  /** Admitted Signals in arrival order with their consumption state. */
  signalReceipts(): SignalReceipt[] {
    return this.#fields.mailbox.receipts();
  }

  /** Waits still open: none once terminal (termination closes every wait). */
  openWaits(): WaitRecord[] {
    return this.isTerminal ? [] : this.#fields.mailbox.openWaits();
  }

  /** Effects whose captured settlement is Unknown, ascending. */
  unknownEffectIds(): EffectId[] {
    return this.#fields.prepared?.unknownEffectIds() ?? [];
  }

  /** Retained settlements of the prepared Step in declaration order (not a journal). */
  settlements(): Settlement[] {
    return this.#fields.prepared?.settlements() ?? [];
  }

  preparedEffect(id: EffectId): PreparedEffect | undefined {
    return this.#fields.prepared?.effect(id);
  }

  /** The phase of a prepared Effect, or undefined when this snapshot retains no such Effect. */
  effectPhase(id: EffectId): EffectPhase | undefined {
    return this.preparedEffect(id)?.phase;
  }

  effectSettlement(id: EffectId): Settlement | undefined {
    return this.preparedEffect(id)?.settlement;
  }

  /** The bounded uncertain-dispatch diagnostic retained for `id`. */
  effectDiagnostic(id: EffectId): Failure | undefined {
    return this.preparedEffect(id)?.diagnostic;
  }

  /** The terminal Result, when terminal. */
  result(): Result | undefined {
    const f = this.#fields;
    if (f.termination === undefined || f.finishedAt === undefined) return undefined;
    return Result.create({
      processId: this.processId,
      startedAt: f.startedAt,
      finishedAt: f.finishedAt,
      output: f.output,
      termination: f.termination,
      usage: this.usage(),
    });
  }

  /** The members, for `ProcessSnapshot.create({ ...snapshot.toFields(), status: … })`. */
  toFields(): ProcessSnapshotFields {
    return { ...this.#fields };
  }

  /** A validated copy with `changes` applied (capacity checked only if `changes.treeLimits` is given). */
  with(changes: Partial<ProcessSnapshotCreateOptions>): ProcessSnapshot {
    return ProcessSnapshot.create({ ...this.#fields, ...changes });
  }

  /* ---------------------------------------------------------------------------------------------
   * Wire
   * ------------------------------------------------------------------------------------------- */

  /** The canonical JSON as a pre-encoded value, so an enclosing tree splices it unchanged. */
  toWire(): WireValue {
    return RawJson.spliced(this.pieces(), this.encodedSize);
  }

  /**
   * The canonical JSON as pieces (see `wirePieces`): the long cached members — mailbox records,
   * payloads, the execution state — are the same string objects from one version of the process to
   * the next, so the tree's digest rehashes only what a commit changed.
   */
  pieces(): readonly string[] {
    if (this.#pieces === undefined) {
      const wire = this.#wireValue();
      // The size too, before the wire form goes: the pieces alone would have to be measured again.
      this.#size ??= encodedWireLength(wire);
      this.#pieces = Object.freeze(wirePieces(wire));
      this.#wire = undefined;
    }
    return this.#pieces;
  }

  /** The canonical JSON (built once, on first use). */
  json(): string {
    this.#json ??= this.pieces().join('');
    return this.#json;
  }

  /** The canonical length in UTF-8 bytes. */
  get encodedSize(): number {
    // Measured from the structure: a large cached member (the mailbox) is not rescanned.
    this.#size ??= encodedWireLength(this.#wireValue());
    return this.#size;
  }

  #wireValue(): WireValue {
    this.#wire ??= toWire(this.#fields);
    return this.#wire;
  }

  digest(): Digest {
    this.#digest ??= Digest.of(this.json());
    return this.#digest;
  }

  /** Same canonical bytes: told from the sizes when they differ, else piece by piece (most are shared string objects). */
  sameBytes(other: ProcessSnapshot): boolean {
    if (other === this) return true;
    if (other.encodedSize !== this.encodedSize) return false;
    const mine = this.pieces();
    const theirs = other.pieces();
    if (mine.length === theirs.length) {
      let index = 0;
      for (; index < mine.length; index += 1) {
        const piece = mine[index] as string;
        const their = theirs[index] as string;
        if (piece.length !== their.length) break;
        // Every piece before this one had the same length, so both start at the same offset.
        if (piece !== their) return false;
      }
      if (index === mine.length) return true;
    }
    // Pieces cut at different places can still spell the same text.
    return other.json() === this.json();
  }

  /** Same canonical record and same location. */
  equals(other: ProcessSnapshot | undefined): boolean {
    return other instanceof ProcessSnapshot && other.json() === this.json() && other.relation.equals(this.relation);
  }
}

/** The largest tree or process text accepted before its own quota is known (2 GiB). */
export const maxSnapshotInputBytes = 2 ** 31;

/* ================================================================================================
 * Validation
 * ============================================================================================== */

function normalize(options: ProcessSnapshotCreateOptions, fail: (message: string) => never): NormalizedFields {
  const o = options;
  if (!(o.relation instanceof ProcessRelation)) fail('relation must be a ProcessRelation');
  if (o.childRequestDigest !== undefined && !(o.childRequestDigest instanceof Digest)) fail('childRequestDigest must be a Digest');
  if (!(o.deploymentRef instanceof DeploymentRef)) fail('deploymentRef must be a DeploymentRef');
  if (typeof o.startedAt !== 'string') fail('startedAt must be a timestamp string');
  if (o.finishedAt !== undefined && typeof o.finishedAt !== 'string') fail('finishedAt must be a timestamp string');
  if (!isStatus(o.status)) fail(`status must be one of ${statusValues.join(', ')}, got ${describe(o.status)}`);
  checkUint64(o.committedSteps, 'committedSteps', fail);
  if (!(o.budget instanceof Budget)) fail('budget must be a Budget');
  const allocatedResources = o.allocatedResources ?? zeroAmounts;
  for (const name of ['steps', 'effects', 'signals'] as const) {
    checkUint64(allocatedResources[name], `allocatedResources.${name}`, fail);
  }
  if (!(o.capabilities instanceof CapabilitySet)) fail('capabilities must be a CapabilitySet');
  const counters = o.counters ?? zeroCounters;
  checkUint64(counters.preparedEffects, 'counters.preparedEffects', fail);
  checkUint64(counters.droppedDeltas, 'counters.droppedDeltas', fail);
  if (!(o.committedExecutionState instanceof ExecutionState)) fail('committedExecutionState must be an ExecutionState');
  const mailbox = o.mailbox ?? Mailbox.empty();
  if (!(mailbox instanceof Mailbox)) fail('mailbox must be a Mailbox');
  if (o.prepared !== undefined && !(o.prepared instanceof PreparedStep)) fail('prepared must be a PreparedStep');
  if (o.currentWaitId !== undefined && !(o.currentWaitId instanceof WaitId)) fail('currentWaitId must be a WaitId');
  if (o.pauseReason !== undefined && typeof o.pauseReason !== 'string') fail('pauseReason must be a string');
  const pendingControl = o.pendingControl ?? PendingControl.empty();
  if (!(pendingControl instanceof PendingControl)) fail('pendingControl must be a PendingControl');
  if (o.output !== undefined && !(o.output instanceof Payload)) fail('output must be a Payload');
  if (o.termination !== undefined && !(o.termination instanceof Termination)) fail('termination must be a Termination');
  if (o.prepared !== undefined) {
    if (!o.prepared.processId.equals(o.relation.processId)) fail('the prepared step belongs to another process');
  }
  return {
    relation: o.relation,
    childRequestDigest: o.childRequestDigest,
    deploymentRef: o.deploymentRef,
    startedAt: o.startedAt,
    finishedAt: o.finishedAt,
    status: o.status,
    committedSteps: o.committedSteps,
    budget: o.budget,
    allocatedResources: Object.freeze({ ...allocatedResources }),
    capabilities: o.capabilities,
    counters: Object.freeze({ preparedEffects: counters.preparedEffects, droppedDeltas: counters.droppedDeltas }),
    committedExecutionState: o.committedExecutionState,
    mailbox,
    prepared: o.prepared,
    currentWaitId: o.currentWaitId,
    pauseReason: o.pauseReason,
    pendingControl,
    output: o.output,
    termination: o.termination,
  };
}

function checkUint64(value: unknown, name: string, fail: (message: string) => never): void {
  if (typeof value !== 'bigint' || value < 0n || value > maxUint64) fail(`${name} must be a uint64 bigint, got ${describe(value)}`);
}

/** Every process-local rule of contract §2.5 (capacity against TreeLimits is checked separately). */
function checkRules(f: NormalizedFields, fail: (message: string) => never): void {
  const terminal = isTerminalStatus(f.status);
  const { relation, mailbox, prepared } = f;

  // Relation and request digest.
  if (relation.isRoot && f.childRequestDigest !== undefined) fail('child_request_digest is present only on a child');
  if (!relation.isRoot && f.childRequestDigest === undefined) fail('a child needs its child_request_digest');

  // Times.
  if (!isUtcTimestamp(f.startedAt)) fail(`started_at ${describe(f.startedAt)} is not a canonical UTC RFC 3339 timestamp`);
  if (f.finishedAt !== undefined && !isUtcTimestamp(f.finishedAt)) {
    fail(`finished_at ${describe(f.finishedAt)} is not a canonical UTC RFC 3339 timestamp`);
  }

  // Lifecycle: terminal ⇔ termination ⇔ finished_at; statuses agree; output ⇔ completed.
  if (terminal && f.termination === undefined) fail(`a ${f.status} process needs its termination`);
  if (!terminal && f.termination !== undefined) fail(`a ${f.status} process has no termination`);
  if (terminal !== (f.finishedAt !== undefined)) {
    fail(terminal ? `a ${f.status} process needs finished_at` : `a ${f.status} process has no finished_at`);
  }
  if (f.termination !== undefined && f.termination.status !== f.status) {
    fail(`termination status ${f.termination.status} differs from status ${f.status}`);
  }
  if ((f.status === 'completed') !== (f.output !== undefined)) {
    fail(f.status === 'completed' ? 'a completed process needs its output' : `a ${f.status} process has no output`);
  }

  // Pause and control intent.
  if ((f.status === 'paused') !== (f.pauseReason !== undefined)) {
    fail(f.status === 'paused' ? 'a paused process needs its pause_reason' : `a ${f.status} process has no pause_reason`);
  }
  if (f.pauseReason !== undefined && !validDiagnostic(f.pauseReason)) {
    fail(`pause_reason must be non-empty, trimmed, well-formed text of at most ${maxDiagnosticBytes} UTF-8 bytes`);
  }
  if (terminal && !f.pendingControl.isEmpty) fail(`a ${f.status} process keeps no pending_control`);
  if (f.pendingControl.pauseReason !== undefined && f.status !== 'running' && f.status !== 'waiting') {
    fail(`pending_control.pause_reason is recorded only for a running or waiting process, not ${f.status}`);
  }

  // Waits.
  if (f.status === 'waiting' && f.currentWaitId === undefined) fail('a waiting process needs its current_wait_id');
  if (f.currentWaitId !== undefined) {
    if (f.status !== 'waiting' && f.status !== 'paused') {
      fail(`current_wait_id is kept only while waiting or paused, not ${f.status}`);
    }
    const wait = mailbox.wait(f.currentWaitId);
    if (wait === undefined) fail(`current_wait_id ${f.currentWaitId.toString()} was never opened in the mailbox`);
    if (wait.answered) fail(`current_wait_id ${f.currentWaitId.toString()} is already answered`);
  }

  // Prepared step.
  const unknownIds = prepared?.unknownEffectIds() ?? [];
  if (prepared !== undefined) {
    if (f.status !== 'running' && !(terminal && f.status !== 'completed')) {
      fail(`a prepared step is kept only by a running or interrupted terminal process, not ${f.status}`);
    }
    if (prepared.stepSequence !== f.committedSteps + 1n) {
      fail(`the prepared step sequence ${prepared.stepSequence} must be committed_steps + 1 (${f.committedSteps + 1n})`);
    }
    if (prepared.intent.consumedSignals > mailbox.pendingCount) {
      fail(`the prepared step consumes ${prepared.intent.consumedSignals} of ${mailbox.pendingCount} pending signals`);
    }
    if (BigInt(prepared.effectCount) > f.counters.preparedEffects) {
      fail(`${prepared.effectCount} prepared effects exceed counters.prepared_effects ${f.counters.preparedEffects}`);
    }
    for (const effect of prepared.effects()) {
      if (!f.capabilities.allows(effect.effect.requiredCapabilities)) {
        fail(
          `prepared effect ${effect.index} requires capabilities [${effect.effect.requiredCapabilities.values().join(', ')}] ` +
            'the process does not hold',
        );
      }
    }
    if (terminal && prepared.hasPendingEffect) fail(`a ${f.status} snapshot cannot keep a pending effect`);
  }
  if (f.termination !== undefined) {
    const recorded = f.termination.unresolvedEffectIds.map(String);
    const actual = unknownIds.map(String);
    if (recorded.length !== actual.length || recorded.some((id, index) => id !== actual[index])) {
      fail(
        `termination.unresolved_effect_ids [${recorded.join(', ')}] must equal the prepared Unknown effects [${actual.join(', ')}]`,
      );
    }
  }

  // Budget: usage + allocations (+ reservations of a live prepared step) within each quota.
  const live = prepared !== undefined && !terminal;
  const dimensions = [
    ['steps', f.committedSteps, live ? 1n : 0n],
    ['effects', f.counters.preparedEffects, 0n],
    ['signals', BigInt(mailbox.length), live ? BigInt(prepared.effectCount) : 0n],
  ] as const;
  for (const [name, used, reserved] of dimensions) {
    const quota = f.budget[name];
    const allocated = f.allocatedResources[name];
    if (quota.unlimited && allocated !== 0n) {
      fail(`budget.${name} is unlimited, so allocated_resources.${name} must be 0, got ${allocated}`);
    }
    if (!quota.admits(used + allocated + reserved)) {
      const parts = `usage ${used} + allocated ${allocated}${reserved > 0n ? ` + prepared reservation ${reserved}` : ''}`;
      fail(`budget.${name} ${quota.toString()} cannot contain ${parts}`);
    }
  }
}

/* ================================================================================================
 * Wire helpers
 * ============================================================================================== */

function toWire(f: NormalizedFields): WireValue {
  return {
    process_id: f.relation.processId.toString(),
    relation: { parent_id: f.relation.parentId?.toString(), child_key: f.relation.childKey?.toString() },
    child_request_digest: f.childRequestDigest?.toString(),
    deployment_ref: f.deploymentRef.wire(),
    started_at: f.startedAt,
    finished_at: f.finishedAt,
    status: f.status,
    committed_steps: f.committedSteps,
    budget: f.budget.toWire(),
    allocated_resources: {
      steps: f.allocatedResources.steps,
      effects: f.allocatedResources.effects,
      signals: f.allocatedResources.signals,
    },
    capabilities: f.capabilities.toWire(),
    counters: { prepared_effects: f.counters.preparedEffects, dropped_deltas: f.counters.droppedDeltas },
    committed_execution_state: f.committedExecutionState.toWire(),
    mailbox: f.mailbox.toWire(),
    prepared: f.prepared?.toWire(),
    current_wait_id: f.currentWaitId?.toString(),
    pause_reason: f.pauseReason,
    pending_control: f.pendingControl.toWire(),
    output: f.output === undefined ? undefined : new RawJson(f.output.json()),
    termination: f.termination?.toWire(),
  };
}

/** The parent link of a record: `{"parent_id","child_key"}` for a child, `{}` for a root. */
export interface ParentLink {
  readonly parentId: ProcessId;
  readonly childKey: ChildKey;
}

/**
 * Reads a record's `relation` member strictly. Used by the tree to discover the structure before
 * decoding records (it needs parents' relations first).
 */
export function readParentLink(node: JsonNode, path: string, code: string): ParentLink | undefined {
  const record: WireRecord = new WireRecord(node, path, code);
  const parentText = record.optionalString('parent_id');
  const keyText = record.optionalString('child_key');
  record.finish();
  if ((parentText === undefined) !== (keyText === undefined)) record.fail('needs both parent_id and child_key, or neither');
  if (parentText === undefined || keyText === undefined) return undefined;
  return {
    parentId: record.identity('parent_id', (text) => ProcessId.parse(text), parentText),
    childKey: record.identity('child_key', (text) => ChildKey.parse(text), keyText),
  };
}

function readRelation(record: WireRecord, processId: ProcessId, given: ProcessRelation | undefined): ProcessRelation {
  const link = readParentLink(record.required('relation'), record.childPath('relation'), record.code);
  if (given === undefined) {
    if (link !== undefined) {
      record.fail('describes a child, which decodes only within its tree snapshot (pass its relation)', 'relation');
    }
    return ProcessRelation.root(processId);
  }
  if (!given.processId.equals(processId)) record.fail(`is not the process ${given.processId.toString()}`, 'process_id');
  const parentMatches = link === undefined ? given.parentId === undefined : link.parentId.equals(given.parentId);
  const keyMatches = link === undefined ? given.childKey === undefined : link.childKey.equals(given.childKey);
  if (!parentMatches || !keyMatches) record.fail('differs from the relation the tree supplies', 'relation');
  return given;
}

function readAmounts(record: WireRecord, member: string): ResourceAmounts {
  const inner: WireRecord = new WireRecord(record.required(member), record.childPath(member), record.code);
  const amounts = { steps: inner.uint64('steps'), effects: inner.uint64('effects'), signals: inner.uint64('signals') };
  inner.finish();
  return Object.freeze(amounts);
}

function readCounters(record: WireRecord, member: string): ProcessCounters {
  const inner: WireRecord = new WireRecord(record.required(member), record.childPath(member), record.code);
  const counters = { preparedEffects: inner.uint64('prepared_effects'), droppedDeltas: inner.uint64('dropped_deltas') };
  inner.finish();
  return Object.freeze(counters);
}


function recode<T>(code: string, decode: () => T, path?: string): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof KernelError && error.code === code) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new KernelError(code, path === undefined ? message : `${path} is not valid: ${message}`, { cause: error });
  }
}
