// Over 500 lines: the Event envelope and its fifteen small fact classes, which share one wire module.
import { parseJson, type JsonNode } from './canonical-json.js';
import { DeploymentRef } from './deployment.js';
import { describe } from './digest.js';
import { isEffectTarget, effectTargetValues, type EffectTarget } from './effect.js';
import { ErrorCode, KernelError } from './errors.js';
import { FailureClassification } from './failure.js';
import { EffectAttemptId, EffectId, ProcessId, SignalId, TreeIncarnationId, WaitId } from './identity.js';
import { Payload, payloadOfWire } from './payload.js';
import { ProcessRelation } from './relation.js';
import { formatUtcTimestamp, isUtcTimestamp, timestampToDate, type Result } from './result.js';
import { isSettlementStatus, settlementStatusValues, type SettlementStatus } from './settlement.js';
import { isStatus, statusValues, type Status, type TerminalStatus } from './status.js';
import {
  causeOfFailureKind,
  isTerminationCause,
  statusOfCause,
  terminationCauseValues,
  type Termination,
  type TerminationCause,
} from './termination.js';
import { Usage } from './usage.js';
import { encodeWire, maxUint64, RawJson, WireRecord, type WireValue } from './wire.js';

/**
 * Events: the immutable, ordered Framework facts published to EventListeners. Observers may
 * project or instrument them, but an observer never changes Process state, and an Event payload is
 * descriptive data — never a Signal or a command.
 */

/* ================================================================================================
 * Names, phases and scopes
 * ============================================================================================== */

/** The fifteen Framework event names. */
export const eventNames = Object.freeze({
  processStarted: 'agent.process.started',
  processRestored: 'agent.process.restored',
  processPaused: 'agent.process.paused',
  processResumed: 'agent.process.resumed',
  processFinished: 'agent.process.finished',
  /**
   * Loss of an active instance without a committed logical terminal result; it never changes the
   * durable Process lifecycle.
   */
  runtimeStopped: 'agent.runtime.stopped',
  signalAccepted: 'agent.signal.accepted',
  stepStarted: 'agent.step.started',
  stepFinished: 'agent.step.finished',
  stepPrepared: 'agent.step.prepared',
  stepCommitted: 'agent.step.committed',
  effectStarted: 'agent.effect.started',
  effectFinished: 'agent.effect.finished',
  /** An Unknown settlement replaced by a definite result (host adjudication or explicit replay). */
  effectResolved: 'agent.effect.resolved',
  deltaDropped: 'agent.delta.dropped',
} as const);

export type EventName = (typeof eventNames)[keyof typeof eventNames];

export const eventNameValues: readonly EventName[] = Object.freeze(Object.values(eventNames));

export function isEventName(value: unknown): value is EventName {
  return typeof value === 'string' && (eventNameValues as readonly string[]).includes(value);
}

export function parseEventName(value: unknown): EventName {
  if (!isEventName(value)) throw new KernelError(ErrorCode.invalidEvent, `invalid event name: ${describe(value)}`);
  return value;
}

/**
 * Whether an event is a runtime observation (`attempt`: it asserts no committed state change) or a
 * fact supported by authoritative Process state (`committed`: published only after the
 * TreeCommitter acknowledged the resulting tree state).
 */
export type EventPhase = 'attempt' | 'committed';

export const eventPhaseValues: readonly EventPhase[] = Object.freeze(['attempt', 'committed']);

export function isEventPhase(value: unknown): value is EventPhase {
  return typeof value === 'string' && (eventPhaseValues as readonly string[]).includes(value);
}

export function parseEventPhase(value: unknown): EventPhase {
  if (!isEventPhase(value)) throw new KernelError(ErrorCode.invalidEvent, `invalid event phase: ${describe(value)}`);
  return value;
}

/**
 * Which identities an event carries besides its Process: `process` events carry no step or effect
 * identity, `step` events carry the step sequence only, `effect` events carry both.
 */
export type EventScope = 'process' | 'step' | 'effect';

export const eventScopeValues: readonly EventScope[] = Object.freeze(['process', 'step', 'effect']);

/** The phase and scope of every event name (kernel-contract §4.19). */
export const eventRules: Readonly<Record<EventName, { readonly phase: EventPhase; readonly scope: EventScope }>> =
  Object.freeze({
    'agent.process.started': Object.freeze({ phase: 'committed', scope: 'process' }),
    'agent.process.restored': Object.freeze({ phase: 'committed', scope: 'process' }),
    'agent.process.paused': Object.freeze({ phase: 'committed', scope: 'process' }),
    'agent.process.resumed': Object.freeze({ phase: 'committed', scope: 'process' }),
    'agent.process.finished': Object.freeze({ phase: 'committed', scope: 'process' }),
    'agent.runtime.stopped': Object.freeze({ phase: 'attempt', scope: 'process' }),
    'agent.signal.accepted': Object.freeze({ phase: 'committed', scope: 'process' }),
    'agent.step.started': Object.freeze({ phase: 'attempt', scope: 'step' }),
    'agent.step.prepared': Object.freeze({ phase: 'attempt', scope: 'step' }),
    'agent.step.finished': Object.freeze({ phase: 'attempt', scope: 'step' }),
    'agent.step.committed': Object.freeze({ phase: 'committed', scope: 'step' }),
    'agent.effect.started': Object.freeze({ phase: 'attempt', scope: 'effect' }),
    'agent.effect.finished': Object.freeze({ phase: 'attempt', scope: 'effect' }),
    'agent.delta.dropped': Object.freeze({ phase: 'attempt', scope: 'effect' }),
    'agent.effect.resolved': Object.freeze({ phase: 'committed', scope: 'effect' }),
  } as const);

export function eventPhaseOf(name: EventName): EventPhase {
  return eventRules[parseEventName(name)].phase;
}

export function eventScopeOf(name: EventName): EventScope {
  return eventRules[parseEventName(name)].scope;
}

/** Bounds the canonical encoding of an Event payload (1 MiB). */
export const maxEventPayloadBytes = 1 << 20;

/* ================================================================================================
 * Typed payload facts
 * ============================================================================================== */

/** One typed Event payload: the fact an event of `eventName` carries. */
export interface EventFact {
  /** The only event name that carries this fact. */
  readonly eventName: EventName;
  toWire(): WireValue;
  json(): string;
  /** The fact as an Event payload. */
  payload(): Payload;
}

/**
 * Whether one Step reduction succeeded. It is deliberately narrower than Status: a failed Step
 * does not by itself terminate a Process. `discarded` closes an attempt whose candidate was thrown
 * away (for example after a restore), not a reduction failure.
 */
export type StepStatus = 'succeeded' | 'failed' | 'discarded';

export const stepStatusValues: readonly StepStatus[] = Object.freeze(['succeeded', 'failed', 'discarded']);

export function isStepStatus(value: unknown): value is StepStatus {
  return typeof value === 'string' && (stepStatusValues as readonly string[]).includes(value);
}

export function parseStepStatus(value: unknown): StepStatus {
  if (!isStepStatus(value)) throw new KernelError(ErrorCode.invalidEvent, `invalid step status: ${describe(value)}`);
  return value;
}

export interface ProcessFinishedConfig {
  /** Optional: derived from `cause`; when given it must equal the derived status. */
  readonly status?: TerminalStatus;
  readonly cause: TerminationCause;
  /** Present exactly when the Process failed; its kind must map to `cause`. */
  readonly failure?: FailureClassification;
  /** The authoritative Framework-owned terminal usage. */
  readonly usage: Usage;
}

/**
 * The terminal fact of `agent.process.finished`: status, cause, the failure classification
 * (exactly when failed; no diagnostic text) and the terminal usage.
 *
 * Wire: `{"cause","failure"?:{"code","kind"},"status","usage"}`.
 */
export class ProcessFinished implements EventFact {
  readonly eventName = eventNames.processFinished;
  readonly #cause: TerminationCause;
  readonly #failure: FailureClassification | undefined;
  readonly #usage: Usage;

  private constructor(cause: TerminationCause, failure: FailureClassification | undefined, usage: Usage) {
    this.#cause = cause;
    this.#failure = failure;
    this.#usage = usage;
    Object.freeze(this);
  }

  static create(config: ProcessFinishedConfig): ProcessFinished {
    const fail = factFailer('process finished');
    if (typeof config !== 'object' || config === null) fail(`expected the fact members, got ${describe(config)}`);
    if (!isTerminationCause(config.cause)) fail(`cause must be one of ${terminationCauseValues.join(', ')}`);
    if (config.failure !== undefined && !(config.failure instanceof FailureClassification)) {
      fail('failure must be a FailureClassification when present');
    }
    if (!(config.usage instanceof Usage)) fail('usage must be a Usage');
    checkProcessFinished(config.status, config.cause, config.failure, fail);
    return new ProcessFinished(config.cause, config.failure, config.usage);
  }

  /** The fact of a committed Termination and its terminal usage. */
  static fromTermination(termination: Termination, usage: Usage): ProcessFinished {
    return ProcessFinished.create({
      cause: termination.cause,
      failure: termination.failure?.classification(),
      usage,
    });
  }

  /** The fact of a terminal Result. */
  static fromResult(result: Result): ProcessFinished {
    return ProcessFinished.fromTermination(result.termination, result.usage);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): ProcessFinished {
    const record: WireRecord = new WireRecord(node, path, code);
    const cause = record.string('cause');
    const failureNode = record.optional('failure');
    const failure =
      failureNode === undefined ? undefined : FailureClassification.fromWire(failureNode, record.childPath('failure'), code);
    const status = record.string('status');
    const usage = Usage.fromWire(record.required('usage'), record.childPath('usage'), code);
    record.finish();
    if (!isTerminationCause(cause)) record.fail(`must be one of ${terminationCauseValues.join(', ')}`, 'cause');
    if (!isStatus(status)) record.fail(`must be one of ${statusValues.join(', ')}`, 'status');
    checkProcessFinished(status, cause, failure, (message, member) => record.fail(message, member));
    return new ProcessFinished(cause, failure, usage);
  }

  static parse(input: string | Uint8Array): ProcessFinished {
    return ProcessFinished.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'process finished fact' }));
  }

  get status(): TerminalStatus {
    return statusOfCause(this.#cause);
  }

  get cause(): TerminationCause {
    return this.#cause;
  }

  /** The failure classification, present exactly when the Process failed. */
  get failure(): FailureClassification | undefined {
    return this.#failure;
  }

  get usage(): Usage {
    return this.#usage;
  }

  toWire(): WireValue {
    return {
      cause: this.#cause,
      failure: this.#failure?.toWire(),
      status: this.status,
      usage: this.#usage.toWire(),
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  payload(): Payload {
    return payloadOfWire(this.json());
  }

  equals(other: ProcessFinished | undefined): boolean {
    return other instanceof ProcessFinished && other.json() === this.json();
  }
}

function checkProcessFinished(
  status: string | undefined,
  cause: TerminationCause,
  failure: FailureClassification | undefined,
  fail: (message: string, member?: string) => never,
): void {
  const derived = statusOfCause(cause);
  if (status !== undefined && status !== derived) {
    fail(`status ${describe(status)} does not follow cause ${cause} (${derived})`, 'status');
  }
  if (derived === 'failed' && failure === undefined) fail('a failed process needs its failure classification', 'failure');
  if (derived !== 'failed' && failure !== undefined) fail(`a ${derived} process has no failure`, 'failure');
  if (failure !== undefined && causeOfFailureKind(failure.kind) !== cause) {
    fail(`failure kind ${failure.kind} does not match cause ${cause}`, 'failure');
  }
}

/**
 * The fact of `agent.runtime.stopped`: an instance failure, not a logical Process termination. It
 * carries the failure classification only — never storage error text or application payloads.
 *
 * Wire: `{"failure":{"code","kind"}}`.
 */
export class RuntimeStopped implements EventFact {
  readonly eventName = eventNames.runtimeStopped;
  readonly #failure: FailureClassification;

  private constructor(failure: FailureClassification) {
    this.#failure = failure;
    Object.freeze(this);
  }

  static create(failure: FailureClassification): RuntimeStopped {
    if (!(failure instanceof FailureClassification)) {
      factFailer('runtime stopped')('failure must be a FailureClassification');
    }
    return new RuntimeStopped(failure);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): RuntimeStopped {
    const record: WireRecord = new WireRecord(node, path, code);
    const failure = FailureClassification.fromWire(record.required('failure'), record.childPath('failure'), code);
    record.finish();
    return new RuntimeStopped(failure);
  }

  static parse(input: string | Uint8Array): RuntimeStopped {
    return RuntimeStopped.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'runtime stopped fact' }));
  }

  get failure(): FailureClassification {
    return this.#failure;
  }

  toWire(): WireValue {
    return { failure: this.#failure.toWire() };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  payload(): Payload {
    return payloadOfWire(this.json());
  }

  equals(other: RuntimeStopped | undefined): boolean {
    return other instanceof RuntimeStopped && other.#failure.equals(this.#failure);
  }
}

export interface SignalAcceptedConfig {
  readonly signalId: SignalId;
  /** Present only for a wait-addressed Signal. */
  readonly waitId?: WaitId;
}

/**
 * The delivery identity of `agent.signal.accepted`. Wire: `{"signal_id","wait_id"?}`.
 */
export class SignalAccepted implements EventFact {
  readonly eventName = eventNames.signalAccepted;
  readonly #signalId: SignalId;
  readonly #waitId: WaitId | undefined;

  private constructor(signalId: SignalId, waitId: WaitId | undefined) {
    this.#signalId = signalId;
    this.#waitId = waitId;
    Object.freeze(this);
  }

  static create(config: SignalAcceptedConfig): SignalAccepted {
    const fail = factFailer('signal accepted');
    if (typeof config !== 'object' || config === null) fail(`expected the fact members, got ${describe(config)}`);
    if (!(config.signalId instanceof SignalId)) fail('signalId must be a SignalId');
    if (config.waitId !== undefined && !(config.waitId instanceof WaitId)) fail('waitId must be a WaitId when present');
    return new SignalAccepted(config.signalId, config.waitId);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): SignalAccepted {
    const record: WireRecord = new WireRecord(node, path, code);
    const signalId = record.identity('signal_id', (text) => SignalId.parse(text));
    const waitId = record.has('wait_id') ? record.identity('wait_id', (text) => WaitId.parse(text)) : undefined;
    record.finish();
    return new SignalAccepted(signalId, waitId);
  }

  static parse(input: string | Uint8Array): SignalAccepted {
    return SignalAccepted.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'signal accepted fact' }));
  }

  get signalId(): SignalId {
    return this.#signalId;
  }

  get waitId(): WaitId | undefined {
    return this.#waitId;
  }

  toWire(): WireValue {
    return { signal_id: this.#signalId.toString(), wait_id: this.#waitId?.toString() };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  payload(): Payload {
    return payloadOfWire(this.json());
  }

  equals(other: SignalAccepted | undefined): boolean {
    return other instanceof SignalAccepted && other.json() === this.json();
  }
}

export interface StepFinishedConfig {
  readonly status: StepStatus;
  /** Monotonic nanoseconds spent in Step, Snapshot and Restore in the worker (uint64). */
  readonly workDurationNs: bigint;
  /** Monotonic nanoseconds from completion delivery to adoption by the tree owner (uint64). */
  readonly adoptionDelayNs: bigint;
}

/**
 * Closes one physical Step attempt (discarded candidates included) with monotonic elapsed times,
 * independent of the wall-clock lifecycle stamps.
 *
 * Wire: `{"adoption_delay_ns","status","work_duration_ns"}` (durations as uint64 nanoseconds).
 */
export class StepFinished implements EventFact {
  readonly eventName = eventNames.stepFinished;
  readonly #status: StepStatus;
  readonly #workDurationNs: bigint;
  readonly #adoptionDelayNs: bigint;

  private constructor(status: StepStatus, workDurationNs: bigint, adoptionDelayNs: bigint) {
    this.#status = status;
    this.#workDurationNs = workDurationNs;
    this.#adoptionDelayNs = adoptionDelayNs;
    Object.freeze(this);
  }

  static create(config: StepFinishedConfig): StepFinished {
    const fail = factFailer('step finished');
    if (typeof config !== 'object' || config === null) fail(`expected the fact members, got ${describe(config)}`);
    if (!isStepStatus(config.status)) fail(`status must be one of ${stepStatusValues.join(', ')}`);
    if (!isUint64(config.workDurationNs)) fail(`workDurationNs must be a uint64, got ${describe(config.workDurationNs)}`);
    if (!isUint64(config.adoptionDelayNs)) fail(`adoptionDelayNs must be a uint64, got ${describe(config.adoptionDelayNs)}`);
    return new StepFinished(config.status, config.workDurationNs, config.adoptionDelayNs);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): StepFinished {
    const record: WireRecord = new WireRecord(node, path, code);
    const adoptionDelayNs = record.uint64('adoption_delay_ns');
    const status = record.string('status');
    const workDurationNs = record.uint64('work_duration_ns');
    record.finish();
    if (!isStepStatus(status)) record.fail(`must be one of ${stepStatusValues.join(', ')}`, 'status');
    return new StepFinished(status, workDurationNs, adoptionDelayNs);
  }

  static parse(input: string | Uint8Array): StepFinished {
    return StepFinished.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'step finished fact' }));
  }

  get status(): StepStatus {
    return this.#status;
  }

  get workDurationNs(): bigint {
    return this.#workDurationNs;
  }

  get adoptionDelayNs(): bigint {
    return this.#adoptionDelayNs;
  }

  toWire(): WireValue {
    return {
      adoption_delay_ns: this.#adoptionDelayNs,
      status: this.#status,
      work_duration_ns: this.#workDurationNs,
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  payload(): Payload {
    return payloadOfWire(this.json());
  }

  equals(other: StepFinished | undefined): boolean {
    return other instanceof StepFinished && other.json() === this.json();
  }
}

/**
 * The fact of `agent.step.committed`: the Process status that resulted from the committed Step.
 * Wire: `{"status"}`.
 */
export class StepCommitted implements EventFact {
  readonly eventName = eventNames.stepCommitted;
  readonly #status: Status;

  private constructor(status: Status) {
    this.#status = status;
    Object.freeze(this);
  }

  static create(config: { readonly status: Status }): StepCommitted {
    const fail = factFailer('step committed');
    if (typeof config !== 'object' || config === null) fail(`expected the fact members, got ${describe(config)}`);
    if (!isStatus(config.status)) fail(`status must be one of ${statusValues.join(', ')}`);
    return new StepCommitted(config.status);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): StepCommitted {
    const record: WireRecord = new WireRecord(node, path, code);
    const status = record.string('status');
    record.finish();
    if (!isStatus(status)) record.fail(`must be one of ${statusValues.join(', ')}`, 'status');
    return new StepCommitted(status);
  }

  static parse(input: string | Uint8Array): StepCommitted {
    return StepCommitted.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'step committed fact' }));
  }

  get status(): Status {
    return this.#status;
  }

  toWire(): WireValue {
    return { status: this.#status };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  payload(): Payload {
    return payloadOfWire(this.json());
  }

  equals(other: StepCommitted | undefined): boolean {
    return other instanceof StepCommitted && other.#status === this.#status;
  }
}

export interface EffectStartedConfig {
  readonly attemptId: EffectAttemptId;
  readonly target: EffectTarget;
}

/** The fact of `agent.effect.started`. Wire: `{"attempt_id","target"}`. */
export class EffectStarted implements EventFact {
  readonly eventName = eventNames.effectStarted;
  readonly #attemptId: EffectAttemptId;
  readonly #target: EffectTarget;

  private constructor(attemptId: EffectAttemptId, target: EffectTarget) {
    this.#attemptId = attemptId;
    this.#target = target;
    Object.freeze(this);
  }

  static create(config: EffectStartedConfig): EffectStarted {
    const fail = factFailer('effect started');
    if (typeof config !== 'object' || config === null) fail(`expected the fact members, got ${describe(config)}`);
    if (!(config.attemptId instanceof EffectAttemptId)) fail('attemptId must be an EffectAttemptId');
    if (!isEffectTarget(config.target)) fail(`target must be one of ${effectTargetValues.join(', ')}`);
    return new EffectStarted(config.attemptId, config.target);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): EffectStarted {
    const record: WireRecord = new WireRecord(node, path, code);
    const attemptId = record.identity('attempt_id', (text) => EffectAttemptId.parse(text));
    const target = readTarget(record);
    record.finish();
    return new EffectStarted(attemptId, target);
  }

  static parse(input: string | Uint8Array): EffectStarted {
    return EffectStarted.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'effect started fact' }));
  }

  get attemptId(): EffectAttemptId {
    return this.#attemptId;
  }

  get target(): EffectTarget {
    return this.#target;
  }

  toWire(): WireValue {
    return { attempt_id: this.#attemptId.toString(), target: this.#target };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  payload(): Payload {
    return payloadOfWire(this.json());
  }

  equals(other: EffectStarted | undefined): boolean {
    return other instanceof EffectStarted && other.json() === this.json();
  }
}

export interface EffectFinishedConfig {
  readonly attemptId: EffectAttemptId;
  readonly target: EffectTarget;
  readonly settlementStatus: SettlementStatus;
  /** Monotonic nanoseconds of the attempt (uint64). */
  readonly durationNs: bigint;
  /**
   * Classifies the Dispatcher error that made the outcome unknown (so only with an `unknown`
   * status); an Unknown returned directly by the Dispatcher has none.
   */
  readonly failure?: FailureClassification;
}

/**
 * The settlement observation of one Effect attempt; it does not replace the durable Effect
 * boundary. Wire: `{"attempt_id","duration_ns","failure"?:{"code","kind"},"settlement_status","target"}`.
 */
export class EffectFinished implements EventFact {
  readonly eventName = eventNames.effectFinished;
  readonly #attemptId: EffectAttemptId;
  readonly #target: EffectTarget;
  readonly #settlementStatus: SettlementStatus;
  readonly #durationNs: bigint;
  readonly #failure: FailureClassification | undefined;

  private constructor(
    attemptId: EffectAttemptId,
    target: EffectTarget,
    settlementStatus: SettlementStatus,
    durationNs: bigint,
    failure: FailureClassification | undefined,
  ) {
    this.#attemptId = attemptId;
    this.#target = target;
    this.#settlementStatus = settlementStatus;
    this.#durationNs = durationNs;
    this.#failure = failure;
    Object.freeze(this);
  }

  static create(config: EffectFinishedConfig): EffectFinished {
    const fail = factFailer('effect finished');
    if (typeof config !== 'object' || config === null) fail(`expected the fact members, got ${describe(config)}`);
    if (!(config.attemptId instanceof EffectAttemptId)) fail('attemptId must be an EffectAttemptId');
    if (!isEffectTarget(config.target)) fail(`target must be one of ${effectTargetValues.join(', ')}`);
    if (!isSettlementStatus(config.settlementStatus)) {
      fail(`settlementStatus must be one of ${settlementStatusValues.join(', ')}`);
    }
    if (!isUint64(config.durationNs)) fail(`durationNs must be a uint64, got ${describe(config.durationNs)}`);
    if (config.failure !== undefined && !(config.failure instanceof FailureClassification)) {
      fail('failure must be a FailureClassification when present');
    }
    checkEffectFinished(config.settlementStatus, config.failure, fail);
    return new EffectFinished(config.attemptId, config.target, config.settlementStatus, config.durationNs, config.failure);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): EffectFinished {
    const record: WireRecord = new WireRecord(node, path, code);
    const attemptId = record.identity('attempt_id', (text) => EffectAttemptId.parse(text));
    const durationNs = record.uint64('duration_ns');
    const failureNode = record.optional('failure');
    const failure =
      failureNode === undefined ? undefined : FailureClassification.fromWire(failureNode, record.childPath('failure'), code);
    const settlementStatus = record.string('settlement_status');
    const target = readTarget(record);
    record.finish();
    if (!isSettlementStatus(settlementStatus)) {
      record.fail(`must be one of ${settlementStatusValues.join(', ')}`, 'settlement_status');
    }
    checkEffectFinished(settlementStatus, failure, (message, member) => record.fail(message, member));
    return new EffectFinished(attemptId, target, settlementStatus, durationNs, failure);
  }

  static parse(input: string | Uint8Array): EffectFinished {
    return EffectFinished.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'effect finished fact' }));
  }

  get attemptId(): EffectAttemptId {
    return this.#attemptId;
  }

  get target(): EffectTarget {
    return this.#target;
  }

  get settlementStatus(): SettlementStatus {
    return this.#settlementStatus;
  }

  get durationNs(): bigint {
    return this.#durationNs;
  }

  /** The classification of the Dispatcher error behind an unknown outcome, if any. */
  get failure(): FailureClassification | undefined {
    return this.#failure;
  }

  toWire(): WireValue {
    return {
      attempt_id: this.#attemptId.toString(),
      duration_ns: this.#durationNs,
      failure: this.#failure?.toWire(),
      settlement_status: this.#settlementStatus,
      target: this.#target,
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  payload(): Payload {
    return payloadOfWire(this.json());
  }

  equals(other: EffectFinished | undefined): boolean {
    return other instanceof EffectFinished && other.json() === this.json();
  }
}

function checkEffectFinished(
  status: SettlementStatus,
  failure: FailureClassification | undefined,
  fail: (message: string, member?: string) => never,
): void {
  if (failure !== undefined && status !== 'unknown') {
    fail(`a ${status} settlement carries no failure classification (only an unknown outcome does)`, 'failure');
  }
}

export interface EffectResolvedConfig {
  readonly target: EffectTarget;
  /** The definite status (`succeeded` or `failed`) that replaced the Unknown settlement. */
  readonly settlementStatus: SettlementStatus;
}

/**
 * The definite result that replaced an Unknown settlement. It has no duration: adjudication is
 * not an execution attempt. Wire: `{"settlement_status","target"}`.
 */
export class EffectResolved implements EventFact {
  readonly eventName = eventNames.effectResolved;
  readonly #target: EffectTarget;
  readonly #settlementStatus: SettlementStatus;

  private constructor(target: EffectTarget, settlementStatus: SettlementStatus) {
    this.#target = target;
    this.#settlementStatus = settlementStatus;
    Object.freeze(this);
  }

  static create(config: EffectResolvedConfig): EffectResolved {
    const fail = factFailer('effect resolved');
    if (typeof config !== 'object' || config === null) fail(`expected the fact members, got ${describe(config)}`);
    if (!isEffectTarget(config.target)) fail(`target must be one of ${effectTargetValues.join(', ')}`);
    if (!isSettlementStatus(config.settlementStatus)) {
      fail(`settlementStatus must be one of ${settlementStatusValues.join(', ')}`);
    }
    checkResolvedStatus(config.settlementStatus, fail);
    return new EffectResolved(config.target, config.settlementStatus);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): EffectResolved {
    const record: WireRecord = new WireRecord(node, path, code);
    const settlementStatus = record.string('settlement_status');
    const target = readTarget(record);
    record.finish();
    if (!isSettlementStatus(settlementStatus)) {
      record.fail(`must be one of ${settlementStatusValues.join(', ')}`, 'settlement_status');
    }
    checkResolvedStatus(settlementStatus, (message, member) => record.fail(message, member));
    return new EffectResolved(target, settlementStatus);
  }

  static parse(input: string | Uint8Array): EffectResolved {
    return EffectResolved.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'effect resolved fact' }));
  }

  get target(): EffectTarget {
    return this.#target;
  }

  get settlementStatus(): SettlementStatus {
    return this.#settlementStatus;
  }

  toWire(): WireValue {
    return { settlement_status: this.#settlementStatus, target: this.#target };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  payload(): Payload {
    return payloadOfWire(this.json());
  }

  equals(other: EffectResolved | undefined): boolean {
    return other instanceof EffectResolved && other.json() === this.json();
  }
}

function checkResolvedStatus(status: SettlementStatus, fail: (message: string, member?: string) => never): void {
  if (status === 'unknown') fail('a resolution is definite: succeeded or failed, never unknown', 'settlement_status');
}

export interface DeltaDroppedConfig {
  readonly attemptId: EffectAttemptId;
  /** Increments rejected during the attempt (uint64, at least 1; saturates at 2^64−1). */
  readonly count: bigint;
}

/**
 * The number of increments one Effect attempt lost (invalid payload, full queue or exhausted
 * sequence space). Wire: `{"attempt_id","count"}`.
 */
export class DeltaDropped implements EventFact {
  readonly eventName = eventNames.deltaDropped;
  readonly #attemptId: EffectAttemptId;
  readonly #count: bigint;

  private constructor(attemptId: EffectAttemptId, count: bigint) {
    this.#attemptId = attemptId;
    this.#count = count;
    Object.freeze(this);
  }

  static create(config: DeltaDroppedConfig): DeltaDropped {
    const fail = factFailer('delta dropped');
    if (typeof config !== 'object' || config === null) fail(`expected the fact members, got ${describe(config)}`);
    if (!(config.attemptId instanceof EffectAttemptId)) fail('attemptId must be an EffectAttemptId');
    if (!isUint64(config.count) || config.count === 0n) fail(`count must be a uint64 >= 1, got ${describe(config.count)}`);
    return new DeltaDropped(config.attemptId, config.count);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): DeltaDropped {
    const record: WireRecord = new WireRecord(node, path, code);
    const attemptId = record.identity('attempt_id', (text) => EffectAttemptId.parse(text));
    const count = record.uint64('count');
    record.finish();
    if (count === 0n) record.fail('must be at least 1', 'count');
    return new DeltaDropped(attemptId, count);
  }

  static parse(input: string | Uint8Array): DeltaDropped {
    return DeltaDropped.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'delta dropped fact' }));
  }

  get attemptId(): EffectAttemptId {
    return this.#attemptId;
  }

  get count(): bigint {
    return this.#count;
  }

  toWire(): WireValue {
    return { attempt_id: this.#attemptId.toString(), count: this.#count };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  payload(): Payload {
    return payloadOfWire(this.json());
  }

  equals(other: DeltaDropped | undefined): boolean {
    return other instanceof DeltaDropped && other.json() === this.json();
  }
}

type FactReader = (node: JsonNode, path: string, code: string) => EventFact;

/** The event names that carry a typed fact, and its strict reader. Other names carry `{}`. */
const factReaders: ReadonlyMap<EventName, FactReader> = new Map<EventName, FactReader>([
  [eventNames.processFinished, (node, path, code) => ProcessFinished.fromWire(node, path, code)],
  [eventNames.runtimeStopped, (node, path, code) => RuntimeStopped.fromWire(node, path, code)],
  [eventNames.signalAccepted, (node, path, code) => SignalAccepted.fromWire(node, path, code)],
  [eventNames.stepFinished, (node, path, code) => StepFinished.fromWire(node, path, code)],
  [eventNames.stepCommitted, (node, path, code) => StepCommitted.fromWire(node, path, code)],
  [eventNames.effectStarted, (node, path, code) => EffectStarted.fromWire(node, path, code)],
  [eventNames.effectFinished, (node, path, code) => EffectFinished.fromWire(node, path, code)],
  [eventNames.effectResolved, (node, path, code) => EffectResolved.fromWire(node, path, code)],
  [eventNames.deltaDropped, (node, path, code) => DeltaDropped.fromWire(node, path, code)],
]);

/** True for an instance of one of the nine typed fact classes. */
export function isEventFact(value: unknown): value is EventFact {
  return (
    value instanceof ProcessFinished ||
    value instanceof RuntimeStopped ||
    value instanceof SignalAccepted ||
    value instanceof StepFinished ||
    value instanceof StepCommitted ||
    value instanceof EffectStarted ||
    value instanceof EffectFinished ||
    value instanceof EffectResolved ||
    value instanceof DeltaDropped
  );
}

/** True when events named `name` carry a typed fact; the others carry the empty object `{}`. */
export function eventCarriesFact(name: EventName): boolean {
  return factReaders.has(parseEventName(name));
}

/* ================================================================================================
 * Event
 * ============================================================================================== */

export interface EventConfig {
  /** Process-local publication order within one tree runtime activation, starting at 1 (uint64). */
  readonly processSequence: bigint;
  readonly processId: ProcessId;
  readonly deploymentRef: DeploymentRef;
  /** The Process's relation; it must describe `processId`. */
  readonly relation: ProcessRelation;
  /** The active writer that emitted the event. */
  readonly treeIncarnationId?: TreeIncarnationId;
  /** Required for step and effect events, absent for process events (uint64 >= 1). */
  readonly stepSequence?: bigint;
  /** Required for effect events, absent otherwise. */
  readonly effectId?: EffectId;
  readonly name: EventName;
  /** Optional: derived from the name; when given it must equal the name's phase. */
  readonly phase?: EventPhase;
  /** A canonical UTC RFC 3339 timestamp or a Date. */
  readonly occurredAt: string | Date;
  /**
   * The typed fact of a fact-carrying event (or its payload form, which must decode as that fact);
   * omitted or `{}` for the other events.
   */
  readonly payload?: Payload | EventFact;
}

/** Refuses an event being created (`invalid_event`); one function, not a closure a call. */
function failEvent(message: string): never {
  throw new KernelError(ErrorCode.invalidEvent, `invalid event: ${message}`);
}

/**
 * An immutable, ordered Framework fact. `Event.create` and `Event.fromWire` enforce the same rules:
 * the phase is the name's phase; the scope rule of the name (process events carry no step or effect
 * identity, step events the step sequence only, effect events both); the payload fits
 * {@link maxEventPayloadBytes}; a fact-carrying event's payload decodes as its typed fact, and every
 * other event carries exactly `{}`.
 *
 * Wire: `{"deployment_ref","effect_id"?,"name","occurred_at","payload","phase","process_id",
 * "process_sequence","relation","step_sequence"?,"tree_incarnation_id"?}`.
 */
export class Event {
  readonly #processSequence: bigint;
  readonly #processId: ProcessId;
  readonly #deploymentRef: DeploymentRef;
  readonly #relation: ProcessRelation;
  readonly #treeIncarnationId: TreeIncarnationId | undefined;
  readonly #stepSequence: bigint | undefined;
  readonly #effectId: EffectId | undefined;
  readonly #name: EventName;
  readonly #occurredAt: string;
  readonly #payload: Payload;
  readonly #fact: EventFact | undefined;
  /** The canonical encoding, made on first use: the log, the commit and the stream all ask for it. */
  #json: string | undefined;

  private constructor(fields: EventFields) {
    this.#processSequence = fields.processSequence;
    this.#processId = fields.processId;
    this.#deploymentRef = fields.deploymentRef;
    this.#relation = fields.relation;
    this.#treeIncarnationId = fields.treeIncarnationId;
    this.#stepSequence = fields.stepSequence;
    this.#effectId = fields.effectId;
    this.#name = fields.name;
    this.#occurredAt = fields.occurredAt;
    this.#payload = fields.payload;
    this.#fact = fields.fact;
    Object.freeze(this);
  }

  /** Validates every member and rule; rejections are `invalid_event`. */
  static create(config: EventConfig): Event {
    const fail: (message: string) => never = failEvent;
    if (typeof config !== 'object' || config === null) fail(`expected the event members, got ${describe(config)}`);
    if (!isUint64(config.processSequence) || config.processSequence === 0n) {
      fail(`processSequence must be a uint64 >= 1, got ${describe(config.processSequence)}`);
    }
    if (!(config.processId instanceof ProcessId)) fail('processId must be a ProcessId');
    if (!(config.deploymentRef instanceof DeploymentRef)) fail('deploymentRef must be a DeploymentRef');
    if (!(config.relation instanceof ProcessRelation)) fail('relation must be a ProcessRelation');
    if (config.treeIncarnationId !== undefined && !(config.treeIncarnationId instanceof TreeIncarnationId)) {
      fail('treeIncarnationId must be a TreeIncarnationId when present');
    }
    if (config.stepSequence !== undefined && (!isUint64(config.stepSequence) || config.stepSequence === 0n)) {
      fail(`stepSequence must be a uint64 >= 1 when present, got ${describe(config.stepSequence)}`);
    }
    if (config.effectId !== undefined && !(config.effectId instanceof EffectId)) fail('effectId must be an EffectId when present');
    if (!isEventName(config.name)) fail(`unknown event name ${describe(config.name)}`);
    if (config.phase !== undefined && !isEventPhase(config.phase)) fail(`invalid phase ${describe(config.phase)}`);
    const occurredAt = timestampOf(config.occurredAt, fail);
    const name = config.name;
    checkEventRules(
      {
        processId: config.processId,
        relation: config.relation,
        name,
        phase: config.phase ?? eventRules[name].phase,
        stepSequence: config.stepSequence,
        effectId: config.effectId,
      },
      fail,
    );
    const { payload, fact } = eventPayloadOf(name, config.payload, fail);
    return new Event({
      processSequence: config.processSequence,
      processId: config.processId,
      deploymentRef: config.deploymentRef,
      relation: config.relation,
      treeIncarnationId: config.treeIncarnationId,
      stepSequence: config.stepSequence,
      effectId: config.effectId,
      name,
      occurredAt,
      payload,
      fact,
    });
  }

  /** Strict decode; every rejection (nested ones included) throws `code` with the JSON path. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEvent): Event {
    const record: WireRecord = new WireRecord(node, path, code);
    const processSequence = record.uint64('process_sequence');
    const processId = record.identity('process_id', (text) => ProcessId.parse(text));
    const deploymentRef = DeploymentRef.fromWire(record.required('deployment_ref'), record.childPath('deployment_ref'), code);
    const relation = ProcessRelation.fromWire(record.required('relation'), processId, record.childPath('relation'), code);
    const treeIncarnationId = record.has('tree_incarnation_id')
      ? record.identity('tree_incarnation_id', (text) => TreeIncarnationId.parse(text))
      : undefined;
    const stepSequence = record.has('step_sequence') ? record.uint64('step_sequence') : undefined;
    const effectId = record.has('effect_id') ? record.identity('effect_id', (text) => EffectId.parse(text)) : undefined;
    const name = record.string('name');
    const phase = record.string('phase');
    const occurredAt = record.string('occurred_at');
    const payloadNode = record.required('payload');
    record.finish();

    if (processSequence === 0n) record.fail('must be at least 1', 'process_sequence');
    if (stepSequence === 0n) record.fail('must be at least 1', 'step_sequence');
    if (!isEventName(name)) record.fail('is not a known event name', 'name');
    if (!isEventPhase(phase)) record.fail(`must be one of ${eventPhaseValues.join(', ')}`, 'phase');
    if (!isUtcTimestamp(occurredAt)) record.fail('must be a canonical UTC RFC 3339 timestamp', 'occurred_at');
    checkEventRules({ processId, relation, name, phase, stepSequence, effectId }, (message, member) =>
      record.fail(message, member),
    );
    let payload: Payload;
    try {
      payload = Payload.fromNode(payloadNode);
    } catch (error) {
      throw new KernelError(code, `${record.childPath('payload')} is not a valid payload: ${reasonOf(error)}`, { cause: error });
    }
    checkPayloadSize(payload, (message) => record.fail(message, 'payload'));
    const reader = factReaders.get(name);
    let fact: EventFact | undefined;
    if (reader === undefined) {
      if (payload.json() !== '{}') record.fail(`must be the empty object for ${name}`, 'payload');
    } else {
      fact = reader(payloadNode, record.childPath('payload'), code);
    }
    return new Event({
      processSequence,
      processId,
      deploymentRef,
      relation,
      treeIncarnationId,
      stepSequence,
      effectId,
      name,
      occurredAt,
      payload,
      fact,
    });
  }

  static parse(input: string | Uint8Array): Event {
    return Event.fromWire(parseJson(input, { code: ErrorCode.invalidEvent, what: 'event' }));
  }

  /** Process-local publication order within one tree runtime activation, starting at 1. */
  get processSequence(): bigint {
    return this.#processSequence;
  }

  get processId(): ProcessId {
    return this.#processId;
  }

  get deploymentRef(): DeploymentRef {
    return this.#deploymentRef;
  }

  get relation(): ProcessRelation {
    return this.#relation;
  }

  /** The active writer that emitted this event, when known. */
  get treeIncarnationId(): TreeIncarnationId | undefined {
    return this.#treeIncarnationId;
  }

  /** The one-based Step sequence of a step or effect event; undefined for a process event. */
  get stepSequence(): bigint | undefined {
    return this.#stepSequence;
  }

  /** The Effect of an effect event; undefined otherwise. */
  get effectId(): EffectId | undefined {
    return this.#effectId;
  }

  get name(): EventName {
    return this.#name;
  }

  get phase(): EventPhase {
    return eventRules[this.#name].phase;
  }

  get scope(): EventScope {
    return eventRules[this.#name].scope;
  }

  get committed(): boolean {
    return this.phase === 'committed';
  }

  /** The exact canonical UTC timestamp. */
  get occurredAt(): string {
    return this.#occurredAt;
  }

  /** The timestamp as a new Date (millisecond precision). */
  get occurredAtDate(): Date {
    return timestampToDate(this.#occurredAt);
  }

  /** The descriptive payload (`{}` for events without a typed fact). */
  get payload(): Payload {
    return this.#payload;
  }

  /** The typed fact of a fact-carrying event; undefined for the others. */
  fact(): EventFact | undefined {
    return this.#fact;
  }

  processFinished(): ProcessFinished | undefined {
    return this.#fact instanceof ProcessFinished ? this.#fact : undefined;
  }

  runtimeStopped(): RuntimeStopped | undefined {
    return this.#fact instanceof RuntimeStopped ? this.#fact : undefined;
  }

  signalAccepted(): SignalAccepted | undefined {
    return this.#fact instanceof SignalAccepted ? this.#fact : undefined;
  }

  stepFinished(): StepFinished | undefined {
    return this.#fact instanceof StepFinished ? this.#fact : undefined;
  }

  stepCommitted(): StepCommitted | undefined {
    return this.#fact instanceof StepCommitted ? this.#fact : undefined;
  }

  effectStarted(): EffectStarted | undefined {
    return this.#fact instanceof EffectStarted ? this.#fact : undefined;
  }

  effectFinished(): EffectFinished | undefined {
    return this.#fact instanceof EffectFinished ? this.#fact : undefined;
  }

  effectResolved(): EffectResolved | undefined {
    return this.#fact instanceof EffectResolved ? this.#fact : undefined;
  }

  deltaDropped(): DeltaDropped | undefined {
    return this.#fact instanceof DeltaDropped ? this.#fact : undefined;
  }

  toWire(): WireValue {
    // Members in canonical order: encodeWire then skips its sort.
    return {
      deployment_ref: this.#deploymentRef.wire(),
      effect_id: this.#effectId?.toString(),
      name: this.#name,
      occurred_at: this.#occurredAt,
      payload: new RawJson(this.#payload.json()),
      phase: this.phase,
      process_id: this.#processId.toString(),
      process_sequence: this.#processSequence,
      relation: this.#relation.toWire(),
      step_sequence: this.#stepSequence,
      tree_incarnation_id: this.#treeIncarnationId?.toString(),
    };
  }

  json(): string {
    this.#json ??= encodeWire(this.toWire());
    return this.#json;
  }

  equals(other: Event | undefined): boolean {
    return other instanceof Event && other.json() === this.json();
  }

  /** A short diagnostic rendering: `<name>#<sequence> <process>`. */
  toString(): string {
    return `${this.#name}#${this.#processSequence} ${this.#processId.toString()}`;
  }
}

interface EventFields {
  readonly processSequence: bigint;
  readonly processId: ProcessId;
  readonly deploymentRef: DeploymentRef;
  readonly relation: ProcessRelation;
  readonly treeIncarnationId: TreeIncarnationId | undefined;
  readonly stepSequence: bigint | undefined;
  readonly effectId: EffectId | undefined;
  readonly name: EventName;
  readonly occurredAt: string;
  readonly payload: Payload;
  readonly fact: EventFact | undefined;
}

interface RuleFields {
  readonly processId: ProcessId;
  readonly relation: ProcessRelation;
  readonly name: EventName;
  readonly phase: EventPhase;
  readonly stepSequence: bigint | undefined;
  readonly effectId: EffectId | undefined;
}

/** The relation, phase and scope rules shared by `create` and `fromWire`. */
function checkEventRules(fields: RuleFields, fail: (message: string, member?: string) => never): void {
  const { name, phase, stepSequence, effectId } = fields;
  if (!fields.relation.processId.equals(fields.processId)) {
    fail(`relation describes ${fields.relation.processId.toString()}, not the process ${fields.processId.toString()}`, 'relation');
  }
  const rule = eventRules[name];
  if (phase !== rule.phase) fail(`${name} is a ${rule.phase} event, not ${phase}`, 'phase');
  switch (rule.scope) {
    case 'process':
      if (stepSequence !== undefined) fail(`process event ${name} carries no step sequence`, 'step_sequence');
      if (effectId !== undefined) fail(`process event ${name} carries no effect id`, 'effect_id');
      break;
    case 'step':
      if (stepSequence === undefined) fail(`step event ${name} needs a step sequence`, 'step_sequence');
      if (effectId !== undefined) fail(`step event ${name} carries no effect id`, 'effect_id');
      break;
    case 'effect':
      if (stepSequence === undefined) fail(`effect event ${name} needs a step sequence`, 'step_sequence');
      if (effectId === undefined) fail(`effect event ${name} needs an effect id`, 'effect_id');
      break;
  }
}

function eventPayloadOf(
  name: EventName,
  supplied: Payload | EventFact | undefined,
  fail: (message: string) => never,
): { payload: Payload; fact: EventFact | undefined } {
  const reader = factReaders.get(name);
  if (reader === undefined) {
    if (supplied === undefined) return { payload: Payload.emptyObject, fact: undefined };
    if (!(supplied instanceof Payload)) fail(`${name} carries no typed fact, only the empty object`);
    if (supplied.json() !== '{}') fail(`${name} carries the empty object {}, got ${describe(supplied.json())}`);
    return { payload: supplied, fact: undefined };
  }
  if (supplied === undefined) fail(`${name} needs its typed fact as payload`);
  if (supplied instanceof Payload) {
    checkPayloadSize(supplied, fail);
    let fact: EventFact;
    try {
      fact = reader(supplied.node(), '/payload', ErrorCode.invalidEvent);
    } catch (error) {
      fail(`payload is not a valid ${name} fact: ${reasonOf(error)}`);
    }
    return { payload: supplied, fact };
  }
  if (!isEventFact(supplied)) fail(`payload must be a Payload or a typed event fact, got ${describe(supplied)}`);
  if (supplied.eventName !== name) fail(`a ${supplied.eventName} fact cannot be the payload of ${name}`);
  const payload = supplied.payload();
  checkPayloadSize(payload, fail);
  return { payload, fact: supplied };
}

function checkPayloadSize(payload: Payload, fail: (message: string) => never): void {
  if (payload.size > maxEventPayloadBytes) {
    fail(`payload of ${payload.size} bytes exceeds the ${maxEventPayloadBytes}-byte event payload bound`);
  }
}

function timestampOf(value: unknown, fail: (message: string) => never): string {
  if (value instanceof Date) {
    try {
      return formatUtcTimestamp(value);
    } catch (error) {
      return fail(`occurredAt is not a representable time: ${reasonOf(error)}`);
    }
  }
  if (!isUtcTimestamp(value)) fail(`occurredAt must be a canonical UTC RFC 3339 timestamp or a Date, got ${describe(value)}`);
  return value;
}

function factFailer(what: string): (message: string) => never {
  return (message: string): never => {
    throw new KernelError(ErrorCode.invalidEvent, `invalid ${what} fact: ${message}`);
  };
}

function isUint64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= 0n && value <= maxUint64;
}

function readTarget(record: WireRecord): EffectTarget {
  const target = record.string('target');
  if (!isEffectTarget(target)) record.fail(`must be one of ${effectTargetValues.join(', ')}`, 'target');
  return target;
}


function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
