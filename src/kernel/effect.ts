// Over 500 lines: the Effect value with its closed vocabulary of framework operations, each with its wire form.
import { Budget } from './budget.js';
import { parseJson, type JsonNode } from './canonical-json.js';
import { CapabilitySet } from './capability.js';
import { DeploymentRef } from './deployment.js';
import { describe, Digest } from './digest.js';
import { ErrorCode, KernelError } from './errors.js';
import { maxDescriptionBytes, maxDiagnosticBytes, validDescription, validDiagnostic } from './failure.js';
import {
  ChildKey,
  EffectAttemptId,
  EffectId,
  ProcessId,
  TreeIncarnationId,
  WaitKey,
} from './identity.js';
import { Payload, payloadOfWire } from './payload.js';
import { ProcessRelation } from './relation.js';
import { Schema } from './schema.js';
import { SignalRequest } from './signal.js';
import { checkWaitOptions, type WaitOptions } from './wait.js';
import { encodeWire, maxUint64, RawJson, WireRecord, type WireValue } from './wire.js';

/* ================================================================================================
 * Targets and framework operations
 * ============================================================================================== */

/**
 * Which execution boundary owns an Effect: `framework` Effects are interpreted by the Engine (a
 * closed set of operations); `dispatcher` Effects stay opaque to the Engine and are interpreted by
 * the Deployment-bound Dispatcher.
 */
export type EffectTarget = 'framework' | 'dispatcher';

export const effectTargetValues: readonly EffectTarget[] = Object.freeze(['framework', 'dispatcher']);

export function isEffectTarget(value: unknown): value is EffectTarget {
  return typeof value === 'string' && (effectTargetValues as readonly string[]).includes(value);
}

export function parseEffectTarget(value: unknown): EffectTarget {
  if (!isEffectTarget(value)) throw new KernelError(ErrorCode.invalidEffect, `invalid effect target: ${describe(value)}`);
  return value;
}

/** The closed set of Framework operations (the `operation` discriminator of a framework payload). */
export type FrameworkOperationName = 'wait' | 'start_child' | 'wait_children' | 'signal_child' | 'cancel_child';

export const frameworkOperationValues: readonly FrameworkOperationName[] = Object.freeze([
  'wait',
  'start_child',
  'wait_children',
  'signal_child',
  'cancel_child',
]);

/** A decoded Framework Effect payload. */
export type FrameworkOperation =
  | { readonly operation: 'wait'; readonly key: WaitKey; readonly answerSchema?: Schema; readonly prompt?: string }
  | { readonly operation: 'start_child'; readonly spec: ChildSpec }
  | { readonly operation: 'wait_children'; readonly spec: ChildWaitSpec }
  | { readonly operation: 'signal_child'; readonly childId: ProcessId; readonly signal: SignalRequest }
  | { readonly operation: 'cancel_child'; readonly childId: ProcessId; readonly reason: string };

/** Which lifecycle fact a child wait counts. */
export type ChildWaitBoundary = 'terminal_result' | 'subtree_drained';

export const childWaitBoundaryValues: readonly ChildWaitBoundary[] = Object.freeze(['terminal_result', 'subtree_drained']);

export function isChildWaitBoundary(value: unknown): value is ChildWaitBoundary {
  return typeof value === 'string' && (childWaitBoundaryValues as readonly string[]).includes(value);
}

export function parseChildWaitBoundary(value: unknown): ChildWaitBoundary {
  if (!isChildWaitBoundary(value)) {
    throw new KernelError(ErrorCode.invalidChildWait, `invalid child wait boundary: ${describe(value)}`);
  }
  return value;
}

/**
 * When a set of children releases its parent: `all` of them, `any` one, or a `quorum` count
 * (1..number of children). It counts children at the requested boundary; it neither cancels the
 * others nor reinterprets terminal statuses. Wire: `{"kind"}` or `{"kind":"quorum","quorum":n}`.
 */
export type ChildWaitCondition =
  | { readonly kind: 'all' }
  | { readonly kind: 'any' }
  | { readonly kind: 'quorum'; readonly quorum: number };

export type ChildWaitConditionKind = ChildWaitCondition['kind'];

export const childWaitConditionKindValues: readonly ChildWaitConditionKind[] = Object.freeze(['all', 'any', 'quorum']);

const allChildren: ChildWaitCondition = Object.freeze({ kind: 'all' });
const anyChild: ChildWaitCondition = Object.freeze({ kind: 'any' });

/** Constructors of {@link ChildWaitCondition} values. */
export const ChildWaitCondition = Object.freeze({
  all: (): ChildWaitCondition => allChildren,
  any: (): ChildWaitCondition => anyChild,
  /** A quorum of `count` children: a uint32 ≥ 1 (the upper bound is checked by the spec). */
  quorum(count: number): ChildWaitCondition {
    if (!Number.isInteger(count) || count < 1 || count > 0xffff_ffff) {
      throw new KernelError(ErrorCode.invalidChildWait, `invalid child quorum: ${describe(count)} (expected a uint32 >= 1)`);
    }
    return Object.freeze({ kind: 'quorum', quorum: count });
  },
});

/* ================================================================================================
 * ChildSpec
 * ============================================================================================== */

/** The members of a {@link ChildSpec}. */
export interface ChildSpecConfig {
  /** The parent-scoped logical identity of this child start. */
  readonly key: ChildKey;
  readonly deploymentRef: DeploymentRef;
  /** Validated by the target Deployment before any Process is created. */
  readonly input: Payload;
  /** Permanently allocated from the parent to this child. */
  readonly budget: Budget;
  /** The attenuated authority granted to this child (must be a subset of the parent's). */
  readonly capabilities: CapabilitySet;
}

/**
 * The complete Strategy-declared intent for one child Process. Parent-relative checks (budget
 * grant, capability subset, tree limits) belong to the Engine at start time.
 *
 * Wire: `{"budget","capabilities","deployment_ref","input","key"}`.
 */
export class ChildSpec {
  readonly #key: ChildKey;
  readonly #deploymentRef: DeploymentRef;
  readonly #input: Payload;
  readonly #budget: Budget;
  readonly #capabilities: CapabilitySet;
  readonly #json: string;

  private constructor(config: ChildSpecConfig) {
    this.#key = config.key;
    this.#deploymentRef = config.deploymentRef;
    this.#input = config.input;
    this.#budget = config.budget;
    this.#capabilities = config.capabilities;
    this.#json = encodeWire(this.toWire());
    Object.freeze(this);
  }

  /** Rejections are `invalid_child_start`. */
  static create(config: ChildSpecConfig): ChildSpec {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidChildStart, `invalid child spec: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected spec members, got ${describe(config)}`);
    if (!(config.key instanceof ChildKey)) fail(`key must be a ChildKey, got ${describe(config.key)}`);
    if (!(config.deploymentRef instanceof DeploymentRef)) fail('deploymentRef must be a DeploymentRef');
    if (!(config.input instanceof Payload)) fail('input must be a Payload');
    if (!(config.budget instanceof Budget)) fail('budget must be a Budget');
    if (!(config.capabilities instanceof CapabilitySet)) fail('capabilities must be a CapabilitySet');
    return new ChildSpec(config);
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidChildStart): ChildSpec {
    const record: WireRecord = new WireRecord(node, path, code);
    const key = record.identity('key', (text) => ChildKey.parse(text));
    const deploymentRef = DeploymentRef.fromWire(record.required('deployment_ref'), record.childPath('deployment_ref'), code);
    const input = record.payload('input');
    const budget = Budget.fromWire(record.required('budget'), record.childPath('budget'), code);
    const capabilities = CapabilitySet.fromWire(record.required('capabilities'), record.childPath('capabilities'), code);
    record.finish();
    return new ChildSpec({ key, deploymentRef, input, budget, capabilities });
  }

  static parse(input: string | Uint8Array): ChildSpec {
    return ChildSpec.fromWire(parseJson(input, { code: ErrorCode.invalidChildStart, what: 'child spec' }));
  }

  get key(): ChildKey {
    return this.#key;
  }

  get deploymentRef(): DeploymentRef {
    return this.#deploymentRef;
  }

  get input(): Payload {
    return this.#input;
  }

  get budget(): Budget {
    return this.#budget;
  }

  get capabilities(): CapabilitySet {
    return this.#capabilities;
  }

  /** sha256 of the canonical wire JSON (the child request digest). */
  digest(): Digest {
    return Digest.of(this.#json);
  }

  toWire(): WireValue {
    return {
      key: this.#key.toString(),
      deployment_ref: this.#deploymentRef.wire(),
      input: new RawJson(this.#input.json()),
      budget: this.#budget.toWire(),
      capabilities: this.#capabilities.toWire(),
    };
  }

  json(): string {
    return this.#json;
  }

  equals(other: ChildSpec | undefined): boolean {
    return other instanceof ChildSpec && other.#json === this.#json;
  }
}

/* ================================================================================================
 * ChildWaitSpec
 * ============================================================================================== */

/** The members of a {@link ChildWaitSpec}. */
export interface ChildWaitSpecConfig {
  /** The Execution-owned logical identity of this wait request. */
  readonly key: WaitKey;
  /** Distinct direct children, in result order (at least one). */
  readonly children: Iterable<ProcessId>;
  readonly boundary: ChildWaitBoundary;
  readonly condition: ChildWaitCondition;
}

/**
 * A wait over direct children. `terminal_result` counts children with a terminal Result;
 * `subtree_drained` counts children whose whole subtree has joined (remote uncertainty may remain).
 * Whether the children are direct children of the waiter is checked by the Engine.
 *
 * Wire: `{"boundary","children":[ProcessId…],"condition":{"kind","quorum"?},"key"}`.
 */
export class ChildWaitSpec {
  readonly #key: WaitKey;
  readonly #children: readonly ProcessId[];
  readonly #boundary: ChildWaitBoundary;
  readonly #condition: ChildWaitCondition;
  readonly #json: string;

  private constructor(key: WaitKey, children: readonly ProcessId[], boundary: ChildWaitBoundary, condition: ChildWaitCondition) {
    this.#key = key;
    this.#children = Object.freeze([...children]);
    this.#boundary = boundary;
    this.#condition = condition;
    this.#json = encodeWire(this.toWire());
    Object.freeze(this);
  }

  /** Rejections are `invalid_child_wait`. */
  static create(config: ChildWaitSpecConfig): ChildWaitSpec {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidChildWait, `invalid child wait spec: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected spec members, got ${describe(config)}`);
    if (!(config.key instanceof WaitKey)) fail(`key must be a WaitKey, got ${describe(config.key)}`);
    if (config.children === null || typeof (config.children as Iterable<ProcessId>)?.[Symbol.iterator] !== 'function') {
      fail('children must be an iterable of ProcessIds');
    }
    const children = [...config.children];
    for (const [index, child] of children.entries()) {
      if (!(child instanceof ProcessId)) fail(`children[${index}] must be a ProcessId, got ${describe(child)}`);
    }
    const problem = childrenProblem(children) ?? conditionProblem(config.condition, children.length);
    if (problem !== undefined) fail(problem);
    if (!isChildWaitBoundary(config.boundary)) {
      fail(`boundary must be one of ${childWaitBoundaryValues.join(', ')}, got ${describe(config.boundary)}`);
    }
    return new ChildWaitSpec(config.key, children, config.boundary, normalizeCondition(config.condition));
  }

  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidChildWait): ChildWaitSpec {
    const record: WireRecord = new WireRecord(node, path, code);
    const key = record.identity('key', (text) => WaitKey.parse(text));
    const items = record.array('children');
    const children = items.map((item, index) => {
      const itemPath = `${record.childPath('children')}/${index}`;
      if (item.kind !== 'string') throw new KernelError(code, `${itemPath} must be a string`);
      try {
        return ProcessId.parse(item.value);
      } catch (error) {
        throw new KernelError(code, `${itemPath} is not a process id: ${describe(item.value)}`, { cause: error });
      }
    });
    const boundary = record.string('boundary');
    if (!isChildWaitBoundary(boundary)) record.fail(`must be one of ${childWaitBoundaryValues.join(', ')}`, 'boundary');
    const condition = readCondition(record.required('condition'), record.childPath('condition'), code);
    record.finish();
    const childProblem = childrenProblem(children);
    if (childProblem !== undefined) record.fail(childProblem, 'children');
    const quorumProblem = conditionProblem(condition, children.length);
    if (quorumProblem !== undefined) record.fail(quorumProblem, 'condition');
    return new ChildWaitSpec(key, children, boundary, condition);
  }

  static parse(input: string | Uint8Array): ChildWaitSpec {
    return ChildWaitSpec.fromWire(parseJson(input, { code: ErrorCode.invalidChildWait, what: 'child wait spec' }));
  }

  get key(): WaitKey {
    return this.#key;
  }

  /** The awaited children in request (result) order; a copy. */
  get children(): ProcessId[] {
    return [...this.#children];
  }

  get boundary(): ChildWaitBoundary {
    return this.#boundary;
  }

  get condition(): ChildWaitCondition {
    return this.#condition;
  }

  /** How many children must reach the boundary: all of them, one, or the quorum. */
  get requiredCount(): number {
    switch (this.#condition.kind) {
      case 'all':
        return this.#children.length;
      case 'any':
        return 1;
      case 'quorum':
        return this.#condition.quorum;
    }
  }

  toWire(): WireValue {
    return {
      key: this.#key.toString(),
      children: this.#children.map((child) => child.toString()),
      boundary: this.#boundary,
      condition:
        this.#condition.kind === 'quorum'
          ? { kind: 'quorum', quorum: this.#condition.quorum }
          : { kind: this.#condition.kind },
    };
  }

  json(): string {
    return this.#json;
  }

  digest(): Digest {
    return Digest.of(this.#json);
  }

  /** Exact equality, children order included. */
  equals(other: ChildWaitSpec | undefined): boolean {
    return other instanceof ChildWaitSpec && other.#json === this.#json;
  }
}

function childrenProblem(children: readonly ProcessId[]): string | undefined {
  if (children.length === 0) return 'a child wait needs at least one child';
  const seen = new Set<string>();
  for (const child of children) {
    const text = child.toString();
    if (seen.has(text)) return `child ${text} is listed twice`;
    seen.add(text);
  }
  return undefined;
}

function conditionProblem(condition: ChildWaitCondition, childCount: number): string | undefined {
  if (typeof condition !== 'object' || condition === null) {
    return `condition must be a ChildWaitCondition, got ${describe(condition)}`;
  }
  switch (condition.kind) {
    case 'all':
    case 'any':
      return Object.keys(condition).length === 1 ? undefined : `a ${condition.kind} condition has no quorum`;
    case 'quorum': {
      const { quorum } = condition;
      if (!Number.isInteger(quorum) || quorum < 1 || quorum > 0xffff_ffff) {
        return `quorum ${describe(quorum)} must be a uint32 >= 1`;
      }
      if (quorum > childCount) return `quorum ${quorum} exceeds the ${childCount} awaited children`;
      return undefined;
    }
    default:
      return (
        `condition kind must be one of ${childWaitConditionKindValues.join(', ')}, ` +
        `got ${describe((condition as { kind?: unknown }).kind)}`
      );
  }
}

function normalizeCondition(condition: ChildWaitCondition): ChildWaitCondition {
  if (condition.kind === 'all') return allChildren;
  if (condition.kind === 'any') return anyChild;
  return Object.freeze({ kind: 'quorum', quorum: condition.quorum });
}

function readCondition(node: JsonNode, path: string, code: string): ChildWaitCondition {
  const record: WireRecord = new WireRecord(node, path, code);
  const kind = record.string('kind');
  if (kind === 'quorum') {
    const quorum = record.uint32('quorum');
    record.finish();
    return Object.freeze({ kind: 'quorum', quorum });
  }
  record.finish();
  if (kind === 'all') return allChildren;
  if (kind === 'any') return anyChild;
  return record.fail(`must be one of ${childWaitConditionKindValues.join(', ')}`, 'kind');
}

/* ================================================================================================
 * Effect
 * ============================================================================================== */

/**
 * An immutable request for an operation outside `Execution.step`. The payload is frozen before
 * dispatch and interpreted only by the target's owner; the EffectId is assigned by the Engine at
 * preparation, so it is not part of the Effect.
 *
 * Wire: `{"payload","required_capabilities"?,"target"}`. `required_capabilities` appears only on a
 * dispatcher Effect with a non-empty set; a framework Effect carries none, and its payload must
 * decode as exactly one closed Framework operation (unknown members rejected).
 */
export class Effect {
  readonly #target: EffectTarget;
  readonly #payload: Payload;
  readonly #requiredCapabilities: CapabilitySet;
  readonly #operation: FrameworkOperation | undefined;
  readonly #json: string;

  private constructor(
    target: EffectTarget,
    payload: Payload,
    requiredCapabilities: CapabilitySet,
    operation: FrameworkOperation | undefined,
  ) {
    this.#target = target;
    this.#payload = payload;
    this.#requiredCapabilities = requiredCapabilities;
    this.#operation = operation;
    this.#json = encodeWire(this.toWire());
    Object.freeze(this);
  }

  /**
   * An opaque Dispatcher request and the authority the Process must hold before it may be prepared
   * (insufficient authority rejects the whole Step before dispatch). Rejections are `invalid_effect`.
   */
  static dispatcher(payload: Payload, requiredCapabilities: CapabilitySet = CapabilitySet.empty): Effect {
    if (!(payload instanceof Payload)) reject(ErrorCode.invalidEffect, 'invalid effect: payload must be a Payload');
    if (!(requiredCapabilities instanceof CapabilitySet)) {
      reject(ErrorCode.invalidEffect, 'invalid effect: requiredCapabilities must be a CapabilitySet');
    }
    return new Effect('dispatcher', payload, requiredCapabilities, undefined);
  }

  /**
   * Asks the Engine to mint one WaitId for `key`; the acknowledging Signal carries it. The
   * Execution keeps whatever the wait is about. `options` carry a run-time answer contract (an
   * answer schema and a prompt), committed with the wait and enforced at signal admission; a key
   * the Descriptor declares takes its schema from there, so a schema here is then an invalid Effect
   * at preparation. Rejections are `invalid_effect`.
   *
   * Wire payload: `{"answer_schema"?,"key","operation":"wait","prompt"?}`.
   */
  static wait(key: WaitKey, options?: WaitOptions): Effect {
    if (!(key instanceof WaitKey)) {
      reject(ErrorCode.invalidEffect, `invalid effect: wait key must be a WaitKey, got ${describe(key)}`);
    }
    const { answerSchema, prompt } = checkWaitOptions(options);
    return Effect.#framework({ operation: 'wait', key, answerSchema, prompt }, ErrorCode.invalidEffect);
  }

  /** Requests one Engine-managed child Process (its ProcessId is derived by the Engine). */
  static startChild(spec: ChildSpec): Effect {
    if (!(spec instanceof ChildSpec)) reject(ErrorCode.invalidChildStart, 'invalid child start: spec must be a ChildSpec');
    return Effect.#framework({ operation: 'start_child', spec }, ErrorCode.invalidChildStart);
  }

  /** Opens an Engine-owned wait over direct children; registration never blocks the Step. */
  static waitChildren(spec: ChildWaitSpec): Effect {
    if (!(spec instanceof ChildWaitSpec)) {
      reject(ErrorCode.invalidChildWait, 'invalid child wait: spec must be a ChildWaitSpec');
    }
    return Effect.#framework({ operation: 'wait_children', spec }, ErrorCode.invalidChildWait);
  }

  /** Delivers `request` through the direct child's ordinary mailbox contract. */
  static signalChild(childId: ProcessId, request: SignalRequest): Effect {
    if (!(childId instanceof ProcessId)) {
      reject(ErrorCode.invalidChildControl, `invalid child control: child id must be a ProcessId, got ${describe(childId)}`);
    }
    if (!(request instanceof SignalRequest)) {
      reject(ErrorCode.invalidChildControl, 'invalid child control: signal must be a SignalRequest');
    }
    return Effect.#framework({ operation: 'signal_child', childId, signal: request }, ErrorCode.invalidChildControl);
  }

  /**
   * Records cancellation intent on a direct child's subtree. `reason` must be non-empty, trimmed,
   * well-formed text of at most 4096 UTF-8 bytes.
   */
  static cancelChild(childId: ProcessId, reason: string): Effect {
    if (!(childId instanceof ProcessId)) {
      reject(ErrorCode.invalidChildControl, `invalid child control: child id must be a ProcessId, got ${describe(childId)}`);
    }
    if (!validDiagnostic(reason)) {
      reject(
        ErrorCode.invalidChildControl,
        'invalid child control: cancellation reason must be non-empty, trimmed, well-formed text ' +
          `of at most ${maxDiagnosticBytes} UTF-8 bytes`,
      );
    }
    return Effect.#framework({ operation: 'cancel_child', childId, reason }, ErrorCode.invalidChildControl);
  }

  static #framework(operation: FrameworkOperation, code: string): Effect {
    let payload: Payload;
    try {
      payload = payloadOfWire(encodeWire(operationWire(operation)));
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new KernelError(code, `invalid ${operation.operation} effect: ${reason}`, { cause: error });
    }
    return new Effect('framework', payload, CapabilitySet.empty, operation);
  }

  /** Strict decode; every rejection throws `code` with the JSON path. */
  static fromWire(node: JsonNode, path = '', code: string = ErrorCode.invalidEffect): Effect {
    const record: WireRecord = new WireRecord(node, path, code);
    const target = record.string('target');
    if (!isEffectTarget(target)) record.fail(`must be one of ${effectTargetValues.join(', ')}`, 'target');
    const payload = record.payload('payload');
    const capabilitiesNode = record.optional('required_capabilities');
    record.finish();
    if (target === 'framework') {
      if (capabilitiesNode !== undefined) {
        record.fail('a framework effect carries no required capabilities', 'required_capabilities');
      }
      const operation = readOperation(payload.node(), record.childPath('payload'), code);
      return new Effect('framework', payload, CapabilitySet.empty, operation);
    }
    let required = CapabilitySet.empty;
    if (capabilitiesNode !== undefined) {
      required = CapabilitySet.fromWire(capabilitiesNode, record.childPath('required_capabilities'), code);
      if (required.size === 0) record.fail('an empty set is omitted, not written', 'required_capabilities');
    }
    return new Effect('dispatcher', payload, required, undefined);
  }

  static parse(input: string | Uint8Array): Effect {
    return Effect.fromWire(parseJson(input, { code: ErrorCode.invalidEffect, what: 'effect' }));
  }

  get target(): EffectTarget {
    return this.#target;
  }

  get isFramework(): boolean {
    return this.#target === 'framework';
  }

  /** The frozen operation intent (owned by the target). */
  get payload(): Payload {
    return this.#payload;
  }

  /** The authority a Process must hold to prepare this Effect; always empty for framework Effects. */
  get requiredCapabilities(): CapabilitySet {
    return this.#requiredCapabilities;
  }

  /** The decoded Framework operation; throws `invalid_effect` for a dispatcher Effect. */
  frameworkOperation(): FrameworkOperation {
    if (this.#operation === undefined) {
      throw new KernelError(ErrorCode.invalidEffect, 'a dispatcher effect has no framework operation');
    }
    return this.#operation;
  }

  /** sha256 of the canonical wire JSON. */
  digest(): Digest {
    return Digest.of(this.#json);
  }

  toWire(): WireValue {
    // Members in canonical order: encodeWire then skips its sort.
    return {
      payload: new RawJson(this.#payload.json()),
      required_capabilities: this.#requiredCapabilities.size === 0 ? undefined : this.#requiredCapabilities.toWire(),
      target: this.#target,
    };
  }

  json(): string {
    return this.#json;
  }

  equals(other: Effect | undefined): boolean {
    return other instanceof Effect && other.#json === this.#json;
  }
}

function operationWire(operation: FrameworkOperation): WireValue {
  switch (operation.operation) {
    case 'wait':
      return { operation: 'wait', key: operation.key.toString(), answer_schema: operation.answerSchema?.toWire(), prompt: operation.prompt };
    case 'start_child':
      return { operation: 'start_child', spec: operation.spec.toWire() };
    case 'wait_children':
      return { operation: 'wait_children', spec: operation.spec.toWire() };
    case 'signal_child':
      return { operation: 'signal_child', child_id: operation.childId.toString(), signal: operation.signal.toWire() };
    case 'cancel_child':
      return { operation: 'cancel_child', child_id: operation.childId.toString(), reason: operation.reason };
  }
}

function readOperation(node: JsonNode, path: string, code: string): FrameworkOperation {
  const record: WireRecord = new WireRecord(node, path, code);
  const name = record.string('operation');
  let operation: FrameworkOperation;
  switch (name) {
    case 'wait': {
      const key = record.identity('key', (text) => WaitKey.parse(text));
      const schemaNode = record.optional('answer_schema');
      const prompt = record.optionalString('prompt');
      if (prompt !== undefined && !validDescription(prompt)) {
        record.fail(`must be non-empty, trimmed, well-formed text of at most ${maxDescriptionBytes} UTF-8 bytes`, 'prompt');
      }
      const answerSchema = schemaNode === undefined ? undefined : readAnswerSchema(schemaNode, record.childPath('answer_schema'), code);
      operation = { operation: 'wait', key, answerSchema, prompt };
      break;
    }
    case 'start_child':
      operation = {
        operation: 'start_child',
        spec: ChildSpec.fromWire(record.required('spec'), record.childPath('spec'), code),
      };
      break;
    case 'wait_children':
      operation = {
        operation: 'wait_children',
        spec: ChildWaitSpec.fromWire(record.required('spec'), record.childPath('spec'), code),
      };
      break;
    case 'signal_child':
      operation = {
        operation: 'signal_child',
        childId: record.identity('child_id', (text) => ProcessId.parse(text)),
        signal: SignalRequest.fromWire(record.required('signal'), record.childPath('signal'), code),
      };
      break;
    case 'cancel_child': {
      const childId = record.identity('child_id', (text) => ProcessId.parse(text));
      const reason = record.string('reason');
      if (!validDiagnostic(reason)) {
        record.fail(`must be non-empty, trimmed, well-formed text of at most ${maxDiagnosticBytes} UTF-8 bytes`, 'reason');
      }
      operation = { operation: 'cancel_child', childId, reason };
      break;
    }
    default:
      return record.fail(`must be one of ${frameworkOperationValues.join(', ')}`, 'operation');
  }
  record.finish();
  return Object.freeze(operation);
}

/** An embedded answer schema; an invalid one is rejected under `code` with its path. */
export function readAnswerSchema(node: JsonNode, path: string, code: string): Schema {
  try {
    return Schema.fromNode(node);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new KernelError(code, `${path} is not a valid answer schema: ${reason}`, { cause: error });
  }
}

/* ================================================================================================
 * EffectRequest
 * ============================================================================================== */

/** The members of an {@link EffectRequest}; its EffectId is derived from them. */
export interface EffectRequestConfig {
  readonly processId: ProcessId;
  readonly relation: ProcessRelation;
  readonly deploymentRef: DeploymentRef;
  /** The one-based sequence of the Step that declared the Effect (uint64). */
  readonly stepSequence: bigint;
  /** The zero-based declaration order within the Step's batch (uint32). */
  readonly batchIndex: number;
  readonly effect: Effect;
  /** The active durable writer, for observation and correlation only. */
  readonly incarnationId?: TreeIncarnationId;
  /** One physical Dispatch invocation; absent on captured requests and commit boundaries. */
  readonly attemptId?: EffectAttemptId;
}

/**
 * The immutable dispatch context the Engine prepares for one Effect. Its `id` is
 * `EffectId.derive(processId, stepSequence, batchIndex)` — stable across restoration and replay;
 * the incarnation and attempt ids are observation metadata, not part of that identity.
 * In memory only (no wire form); `toJSON` gives a payload-free diagnostic view.
 */
export class EffectRequest {
  readonly #processId: ProcessId;
  readonly #relation: ProcessRelation;
  readonly #deploymentRef: DeploymentRef;
  readonly #id: EffectId;
  readonly #stepSequence: bigint;
  readonly #batchIndex: number;
  readonly #effect: Effect;
  readonly #incarnationId: TreeIncarnationId | undefined;
  readonly #attemptId: EffectAttemptId | undefined;

  private constructor(config: EffectRequestConfig, id: EffectId) {
    this.#processId = config.processId;
    this.#relation = config.relation;
    this.#deploymentRef = config.deploymentRef;
    this.#id = id;
    this.#stepSequence = config.stepSequence;
    this.#batchIndex = config.batchIndex;
    this.#effect = config.effect;
    this.#incarnationId = config.incarnationId;
    this.#attemptId = config.attemptId;
    Object.freeze(this);
  }

  /** Validates the members and derives the EffectId; rejections are `invalid_effect`. */
  static create(config: EffectRequestConfig): EffectRequest {
    const fail = (message: string): never => {
      throw new KernelError(ErrorCode.invalidEffect, `invalid effect request: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected request members, got ${describe(config)}`);
    if (!(config.processId instanceof ProcessId)) fail('processId must be a ProcessId');
    if (!(config.relation instanceof ProcessRelation)) fail('relation must be a ProcessRelation');
    if (!config.relation.processId.equals(config.processId)) fail('relation must describe the requesting process');
    if (!(config.deploymentRef instanceof DeploymentRef)) fail('deploymentRef must be a DeploymentRef');
    if (typeof config.stepSequence !== 'bigint' || config.stepSequence < 1n || config.stepSequence > maxUint64) {
      fail(`stepSequence must be a uint64 >= 1, got ${describe(config.stepSequence)}`);
    }
    if (!Number.isInteger(config.batchIndex) || config.batchIndex < 0 || config.batchIndex > 0xffff_ffff) {
      fail(`batchIndex must be a uint32, got ${describe(config.batchIndex)}`);
    }
    if (!(config.effect instanceof Effect)) fail('effect must be an Effect');
    if (config.incarnationId !== undefined && !(config.incarnationId instanceof TreeIncarnationId)) {
      fail('incarnationId must be a TreeIncarnationId when present');
    }
    if (config.attemptId !== undefined && !(config.attemptId instanceof EffectAttemptId)) {
      fail('attemptId must be an EffectAttemptId when present');
    }
    const id = EffectId.derive(config.processId, config.stepSequence, config.batchIndex);
    return new EffectRequest({ ...config }, id);
  }

  get processId(): ProcessId {
    return this.#processId;
  }

  get relation(): ProcessRelation {
    return this.#relation;
  }

  get deploymentRef(): DeploymentRef {
    return this.#deploymentRef;
  }

  get id(): EffectId {
    return this.#id;
  }

  get stepSequence(): bigint {
    return this.#stepSequence;
  }

  get batchIndex(): number {
    return this.#batchIndex;
  }

  get effect(): Effect {
    return this.#effect;
  }

  get incarnationId(): TreeIncarnationId | undefined {
    return this.#incarnationId;
  }

  /** The physical invocation; undefined on captured requests (which authorise nothing). */
  get attemptId(): EffectAttemptId | undefined {
    return this.#attemptId;
  }

  /** The same logical request for another physical invocation (replay keeps the EffectId). */
  withAttempt(attemptId: EffectAttemptId, incarnationId: TreeIncarnationId | undefined = this.#incarnationId): EffectRequest {
    return EffectRequest.create({ ...this.#config(), attemptId, incarnationId });
  }

  #config(): EffectRequestConfig {
    return {
      processId: this.#processId,
      relation: this.#relation,
      deploymentRef: this.#deploymentRef,
      stepSequence: this.#stepSequence,
      batchIndex: this.#batchIndex,
      effect: this.#effect,
      incarnationId: this.#incarnationId,
      attemptId: this.#attemptId,
    };
  }

  /** A diagnostic view without the Effect payload (which may be large or sensitive). */
  toJSON(): Record<string, unknown> {
    return {
      id: this.#id.toString(),
      processId: this.#processId.toString(),
      rootId: this.#relation.rootId.toString(),
      deploymentRef: this.#deploymentRef.toString(),
      stepSequence: this.#stepSequence.toString(),
      batchIndex: this.#batchIndex,
      target: this.#effect.target,
      payloadDigest: this.#effect.payload.digest().toString(),
      incarnationId: this.#incarnationId?.toString(),
      attemptId: this.#attemptId?.toString(),
    };
  }
}

/* ================================================================================================
 * Member readers
 * ============================================================================================== */

function reject(code: string, message: string): never {
  throw new KernelError(code, message);
}


