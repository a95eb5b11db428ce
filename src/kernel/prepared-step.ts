// Over 500 lines: the prepared step and its effects, whose phase rules are checked together on decode.
import { parseJson, type JsonNode } from './canonical-json.js';
import { describe } from './digest.js';
import { Effect, type FrameworkOperation } from './effect.js';
import { ErrorCode, KernelError } from './errors.js';
import { ExecutionState } from './execution-state.js';
import { Failure } from './failure.js';
import { EffectId, ProcessId, WaitId } from './identity.js';
import { childWaitOpenedPayload, MailboxRecord, waitOpenedPayload } from './mailbox.js';
import { Payload, payloadOfWire } from './payload.js';
import { isSettlementStatus, Settlement, settlementStatusValues } from './settlement.js';
import { Transition } from './transition.js';
import { encodeWire, maxUint64, RawJson, WireRecord, wireError, type WireValue } from './wire.js';

/**
 * The prepared Step: the persisted execution frontier between preparation and adoption. It holds
 * the candidate ExecutionState, the intent (the Transition with its Effects stripped) and one
 * prepared Effect per declared Effect, in declaration order. The Step sequence
 * (`committed_steps + 1`) and the EffectIds (`EffectId.derive(process, sequence, index)`) are
 * implied by the enclosing Process.
 *
 * Wire: `{"candidate_state":ExecutionState,"effects":[PreparedEffectWire…],"intent":Transition}`,
 * each prepared Effect being
 * `{"effect"?:Effect,"started_child"?:{"input"},"progress"?:{"settlement"?,"diagnostic"?:Failure}}`:
 *
 * - the phase is derived: no `progress` = planned; `progress` without `settlement` = pending;
 *   with `settlement` = settled;
 * - a Dispatcher settlement is `{"status","payload"}`; a Framework settlement is `{"failure"?}`
 *   (its payload is rendered from the request, see {@link frameworkSettlementPayload});
 * - a successfully started child is recorded as `started_child: {"input"}` instead of `effect`:
 *   key, Deployment, budget and capabilities come from the child's own record in the tree;
 * - `diagnostic` (uncertain-dispatch evidence) only on a settled Dispatcher Effect.
 *
 * Frontier invariant (scanning in declaration order): every definitely settled Effect, then at
 * most one Effect that is pending or settled Unknown, then only planned Effects.
 */

export type EffectPhase = 'planned' | 'pending' | 'settled';

export const effectPhaseValues: readonly EffectPhase[] = Object.freeze(['planned', 'pending', 'settled']);

/**
 * The payload of a Framework Effect's settlement, rendered from the request: `wait` →
 * `{"operation":"wait"}`; `wait_children` → `{"operation":"child_wait_opened"}`; `start_child` →
 * `{"operation":"start_child","process_id"}` or `{"failure","operation":"start_child"}`;
 * `signal_child` / `cancel_child` → `{"operation"}` or `{"failure","operation"}`. Waits cannot fail.
 */
export function frameworkSettlementPayload(effectId: EffectId, operation: FrameworkOperation, failure?: Failure): Payload {
  switch (operation.operation) {
    case 'wait':
    case 'wait_children':
      if (failure !== undefined) {
        throw new KernelError(ErrorCode.invalidSettlement, `a ${operation.operation} effect settles without failure`);
      }
      return operation.operation === 'wait' ? waitOpenedPayload : childWaitOpenedPayload;
    case 'start_child':
      return payloadOfWire(
        encodeWire({
          operation: 'start_child',
          process_id: failure === undefined ? ProcessId.child(effectId).toString() : undefined,
          failure: failure?.toWire(),
        }),
      );
    case 'signal_child':
    case 'cancel_child':
      return payloadOfWire(encodeWire({ operation: operation.operation, failure: failure?.toWire() }));
  }
}

function canFail(operation: FrameworkOperation): boolean {
  return operation.operation !== 'wait' && operation.operation !== 'wait_children';
}

/** How one prepared Effect is described to {@link PreparedStep.create}. */
export interface PreparedEffectInput {
  readonly effect: Effect;
  /** Default: `settled` when a settlement (or framework failure) is given, else `planned`. */
  readonly phase?: EffectPhase;
  /** A Dispatcher Effect's settlement (any status). */
  readonly settlement?: Settlement;
  /** A settled Framework Effect's failure (start_child, signal_child, cancel_child only). */
  readonly failure?: Failure;
  /** Uncertain-dispatch evidence of a settled Dispatcher Effect. */
  readonly diagnostic?: Failure;
}

/** One Effect of the prepared Step with its derived identity and progress. */
export class PreparedEffect {
  readonly id: EffectId;
  /** Zero-based declaration order. */
  readonly index: number;
  readonly effect: Effect;
  readonly phase: EffectPhase;
  /** The settlement (Framework settlements rendered from the request), when settled. */
  readonly settlement: Settlement | undefined;
  /** The failure a settled Framework Effect recorded. */
  readonly failure: Failure | undefined;
  readonly diagnostic: Failure | undefined;
  /** The derived child id (a hash of the Effect id), computed on first use. */
  #startedChildId: ProcessId | undefined;

  private constructor(
    id: EffectId,
    index: number,
    effect: Effect,
    phase: EffectPhase,
    settlement: Settlement | undefined,
    failure: Failure | undefined,
    diagnostic: Failure | undefined,
  ) {
    this.id = id;
    this.index = index;
    this.effect = effect;
    this.phase = phase;
    this.settlement = settlement;
    this.failure = failure;
    this.diagnostic = diagnostic;
    Object.freeze(this);
  }

  /** Builds and checks one prepared Effect; `fail` receives the problem. */
  static build(
    id: EffectId,
    index: number,
    input: PreparedEffectInput,
    fail: (message: string) => never,
  ): PreparedEffect {
    if (typeof input !== 'object' || input === null) fail(`expected prepared effect members, got ${describe(input)}`);
    const { effect, settlement, failure, diagnostic } = input;
    if (!(effect instanceof Effect)) fail('effect must be an Effect');
    if (settlement !== undefined && !(settlement instanceof Settlement)) fail('settlement must be a Settlement');
    if (failure !== undefined && !(failure instanceof Failure)) fail('failure must be a Failure');
    if (diagnostic !== undefined && !(diagnostic instanceof Failure)) fail('diagnostic must be a Failure');
    const phase = input.phase ?? (settlement !== undefined || failure !== undefined ? 'settled' : 'planned');
    if (!effectPhaseValues.includes(phase)) fail(`phase must be one of ${effectPhaseValues.join(', ')}`);
    if (effect.target === 'dispatcher') {
      if (failure !== undefined) fail('a dispatcher settlement records status and payload, not a framework failure');
      if ((phase === 'settled') !== (settlement !== undefined)) fail('a dispatcher effect has a settlement exactly when settled');
      if (diagnostic !== undefined && phase !== 'settled') fail('a diagnostic is kept only with a settlement');
      return new PreparedEffect(id, index, effect, phase, settlement, undefined, diagnostic);
    }
    const operation = effect.frameworkOperation();
    if (settlement !== undefined) fail('a framework settlement is rendered from the request; pass only its failure');
    if (diagnostic !== undefined) fail('a diagnostic is uncertain-dispatch evidence; framework effects are never dispatched');
    if (failure !== undefined && phase !== 'settled') fail('a framework failure is recorded only when settled');
    if (failure !== undefined && !canFail(operation)) fail(`a ${operation.operation} effect settles without failure`);
    const rendered =
      phase === 'settled'
        ? Settlement.of(failure === undefined ? 'succeeded' : 'failed', frameworkSettlementPayload(id, operation, failure))
        : undefined;
    return new PreparedEffect(id, index, effect, phase, rendered, failure, undefined);
  }

  /** Settled with a definite (succeeded/failed) status. */
  get definite(): boolean {
    return this.settlement !== undefined && this.settlement.status !== 'unknown';
  }

  /** Settled Unknown: requires explicit resolution. */
  get unknown(): boolean {
    return this.settlement?.status === 'unknown';
  }

  /** The child a settled successful `start_child` created (derived from the EffectId). */
  get startedChildId(): ProcessId | undefined {
    if (this.phase !== 'settled' || this.failure !== undefined || this.effect.target !== 'framework') return undefined;
    if (this.effect.frameworkOperation().operation !== 'start_child') return undefined;
    this.#startedChildId ??= ProcessId.child(this.id);
    return this.#startedChildId;
  }

  /** The input of this Effect for {@link PreparedStep.create}. */
  toInput(): PreparedEffectInput {
    return {
      effect: this.effect,
      phase: this.phase,
      settlement: this.effect.target === 'dispatcher' ? this.settlement : undefined,
      failure: this.failure,
      diagnostic: this.diagnostic,
    };
  }

  toWire(): WireValue {
    let progress: WireValue | undefined;
    if (this.phase === 'pending') progress = {};
    if (this.phase === 'settled') {
      const settlement =
        this.effect.target === 'dispatcher'
          ? { status: this.settlement?.status, payload: new RawJson((this.settlement as Settlement).payload.json()) }
          : { failure: this.failure?.toWire() };
      progress = { settlement, diagnostic: this.diagnostic?.toWire() };
    }
    const started = this.startedChildId !== undefined;
    const spec = started ? (this.effect.frameworkOperation() as { spec: { input: Payload } }).spec : undefined;
    return {
      effect: started ? undefined : this.effect.toWire(),
      started_child: spec === undefined ? undefined : { input: new RawJson(spec.input.json()) },
      progress,
    };
  }
}

/** Renders a started child's `start_child` Effect from the tree (child record + retained input). */
export type StartedChildRenderer = (effectId: EffectId, input: Payload) => Effect;

/** Options for {@link PreparedStep.fromWire}. */
export interface PreparedStepDecodeOptions {
  readonly processId: ProcessId;
  /** The Step sequence (the enclosing Process's `committed_steps + 1`). */
  readonly stepSequence: bigint;
  readonly code?: string;
  /** Resolves `started_child` records; without it such a record is rejected. */
  readonly renderStartedChild?: StartedChildRenderer;
}

/** The members of {@link PreparedStep.create}. */
export interface PreparedStepConfig {
  readonly processId: ProcessId;
  /** The one-based Step sequence (`committed_steps + 1`). */
  readonly stepSequence: bigint;
  readonly candidateState: ExecutionState;
  /** The Step's Transition; its Effects (if any) are stripped and must match `effects`. */
  readonly intent: Transition;
  /** Default: every Effect of `intent`, planned. */
  readonly effects?: readonly PreparedEffectInput[];
}

/** The immutable prepared Step. Factories check phases, intent and the frontier invariant. */
export class PreparedStep {
  readonly processId: ProcessId;
  readonly stepSequence: bigint;
  readonly candidateState: ExecutionState;
  /** The intent with its Effects stripped. */
  readonly intent: Transition;
  readonly #effects: readonly PreparedEffect[];

  private constructor(
    processId: ProcessId,
    stepSequence: bigint,
    candidateState: ExecutionState,
    intent: Transition,
    effects: readonly PreparedEffect[],
  ) {
    this.processId = processId;
    this.stepSequence = stepSequence;
    this.candidateState = candidateState;
    this.intent = intent;
    this.#effects = Object.freeze([...effects]);
    Object.freeze(this);
  }

  /** Validates a prepared Step; rejections are `code` (default `invalid_snapshot`). */
  static create(config: PreparedStepConfig, code: string = ErrorCode.invalidSnapshot): PreparedStep {
    const fail: (message: string) => never = (message) => {
      throw new KernelError(code, `prepared step: ${message}`);
    };
    if (typeof config !== 'object' || config === null) fail(`expected prepared step members, got ${describe(config)}`);
    const { processId, stepSequence, candidateState, intent } = config;
    if (!(processId instanceof ProcessId)) fail('processId must be a ProcessId');
    if (typeof stepSequence !== 'bigint' || stepSequence < 1n || stepSequence > maxUint64) {
      fail(`stepSequence must be a uint64 >= 1, got ${describe(stepSequence)}`);
    }
    if (!(candidateState instanceof ExecutionState)) fail('candidateState must be an ExecutionState');
    if (!(intent instanceof Transition)) fail('intent must be a Transition');
    const declared = intent.effects;
    let inputs: readonly PreparedEffectInput[];
    if (config.effects === undefined) {
      inputs = declared.map((effect) => ({ effect }));
    } else {
      if (!Array.isArray(config.effects)) fail('effects must be an array');
      inputs = config.effects;
      if (declared.length > 0) {
        if (declared.length !== inputs.length || declared.some((effect, index) => !effect.equals(inputs[index]?.effect))) {
          fail("the intent's effects differ from the prepared effects");
        }
      }
    }
    const effects = inputs.map((input, index) =>
      PreparedEffect.build(EffectId.derive(processId, stepSequence, index), index, input, (message) =>
        fail(`effects/${index} ${message}`),
      ),
    );
    return PreparedStep.#checked(processId, stepSequence, candidateState, intent.withoutEffects(), effects, fail);
  }

  /** The Step as prepared from a Transition: every declared Effect planned. */
  static prepare(processId: ProcessId, stepSequence: bigint, candidateState: ExecutionState, transition: Transition): PreparedStep {
    return PreparedStep.create({ processId, stepSequence, candidateState, intent: transition });
  }

  static #checked(
    processId: ProcessId,
    stepSequence: bigint,
    candidateState: ExecutionState,
    intent: Transition,
    effects: readonly PreparedEffect[],
    fail: (message: string) => never,
  ): PreparedStep {
    if (effects.length > 0 && intent.kind !== 'continue') {
      fail(`effects are allowed only on a continue intent, not ${intent.kind}`);
    }
    const problem = frontierProblem(effects);
    if (problem !== undefined) fail(problem);
    return new PreparedStep(processId, stepSequence, candidateState, intent, effects);
  }

  /** Strict decode; the sequence and process come from the enclosing Process. */
  static fromWire(node: JsonNode, path: string, options: PreparedStepDecodeOptions): PreparedStep {
    const code = options.code ?? ErrorCode.invalidSnapshot;
    const { processId, stepSequence } = options;
    const record: WireRecord = new WireRecord(node, path, code);
    const candidateState = ExecutionState.fromWire(
      record.required('candidate_state'),
      record.childPath('candidate_state'),
      code,
    );
    const intent = Transition.fromWire(record.required('intent'), record.childPath('intent'), code);
    const items = record.array('effects');
    record.finish();
    if (intent.effects.length > 0) record.fail('must not repeat the prepared effects', 'intent/effects');
    const effects = items.map((item, index) =>
      readPreparedEffect(item, `${record.childPath('effects')}/${index}`, index, options, code),
    );
    return PreparedStep.#checked(processId, stepSequence, candidateState, intent, effects, (message) =>
      record.fail(message, 'effects'),
    );
  }

  static parse(input: string | Uint8Array, options: PreparedStepDecodeOptions): PreparedStep {
    const code = options.code ?? ErrorCode.invalidSnapshot;
    return PreparedStep.fromWire(parseJson(input, { code, what: 'prepared step' }), '', options);
  }

  /** The prepared Effects in declaration order (a copy). */
  effects(): PreparedEffect[] {
    return [...this.#effects];
  }

  get effectCount(): number {
    return this.#effects.length;
  }

  effectIds(): EffectId[] {
    return this.#effects.map((effect) => effect.id);
  }

  /** The prepared Effect with `id`, if this Step declared it. */
  effect(id: EffectId): PreparedEffect | undefined {
    return this.#effects.find((effect) => effect.id.equals(id));
  }

  /** The first Effect that is not definitely settled (the frontier), if any. */
  frontier(): PreparedEffect | undefined {
    return this.#effects.find((effect) => !effect.definite);
  }

  /** True when every Effect is definitely settled, so the batch can be adopted. */
  get fullySettled(): boolean {
    return this.frontier() === undefined;
  }

  /** Effects whose settlement is Unknown, in ascending id order. */
  unknownEffectIds(): EffectId[] {
    return this.#effects
      .filter((effect) => effect.unknown)
      .map((effect) => effect.id)
      .sort((a, b) => a.compare(b));
  }

  /** True when an Effect is pending (dispatch permitted, no settlement). */
  get hasPendingEffect(): boolean {
    return this.#effects.some((effect) => effect.phase === 'pending');
  }

  /** Retained settlements in declaration order. */
  settlements(): Settlement[] {
    return this.#effects.flatMap((effect) => (effect.settlement === undefined ? [] : [effect.settlement]));
  }

  /** The planned frontier Effect now pending (dispatch permitted). */
  withPending(id: EffectId): PreparedStep {
    const effect = this.#atFrontier(id);
    if (effect.phase !== 'planned') this.#reject(`effect ${id.toString()} is ${effect.phase}, not planned`);
    return this.#replace(effect, { ...effect.toInput(), phase: 'pending' });
  }

  /**
   * Records a Dispatcher settlement (Unknown included) of the pending frontier Effect; a planned
   * Effect never dispatched cannot settle (nor become Unknown).
   */
  withSettlement(id: EffectId, settlement: Settlement, diagnostic?: Failure): PreparedStep {
    const effect = this.#atFrontier(id);
    if (effect.effect.target !== 'dispatcher') this.#reject(`effect ${id.toString()} is a framework effect`);
    if (effect.phase !== 'pending') this.#reject(`effect ${id.toString()} is ${effect.phase}, not pending`);
    return this.#replace(effect, { effect: effect.effect, phase: 'settled', settlement, diagnostic });
  }

  /** Settles the frontier Framework Effect (planned or pending), with its failure if it failed. */
  withFrameworkSettlement(id: EffectId, failure?: Failure): PreparedStep {
    const effect = this.#atFrontier(id);
    if (effect.effect.target !== 'framework') this.#reject(`effect ${id.toString()} is a dispatcher effect`);
    if (effect.phase === 'settled') this.#reject(`effect ${id.toString()} is already settled`);
    return this.#replace(effect, { effect: effect.effect, phase: 'settled', failure });
  }

  /** Replaces a retained Unknown with a definite settlement, keeping the dispatch diagnostic. */
  withResolution(id: EffectId, settlement: Settlement): PreparedStep {
    const effect = this.effect(id);
    if (effect === undefined) this.#reject(`effect ${id.toString()} is not prepared`);
    if (!effect.unknown) this.#reject(`effect ${id.toString()} is not settled Unknown`);
    if (!(settlement instanceof Settlement) || !settlement.definite) this.#reject('a resolution needs a definite settlement');
    return this.#replace(effect, { ...effect.toInput(), settlement });
  }

  /**
   * The mailbox records adopting this fully settled batch appends, in declaration order: a wait
   * opening for `wait` / `wait_children`, otherwise the settlement delivery (Dispatcher ones with
   * their status).
   */
  adoptionRecords(): MailboxRecord[] {
    return this.#effects.map((effect) => {
      if (!effect.definite) this.#reject(`effect ${effect.id.toString()} is not definitely settled`);
      const settlement = effect.settlement as Settlement;
      if (effect.effect.target === 'dispatcher') {
        return MailboxRecord.settlement(effect.id, settlement.payload, settlement.status as 'succeeded' | 'failed');
      }
      const operation = effect.effect.frameworkOperation();
      if (operation.operation === 'wait') {
        // The run-time answer contract is committed with the wait it opens (it survives restore).
        return MailboxRecord.waitOpening(WaitId.derive(effect.id), {
          kind: 'external',
          key: operation.key,
          answerSchema: operation.answerSchema,
          prompt: operation.prompt,
        });
      }
      if (operation.operation === 'wait_children') {
        return MailboxRecord.waitOpening(WaitId.derive(effect.id), { kind: 'children', spec: operation.spec });
      }
      return MailboxRecord.settlement(effect.id, settlement.payload);
    });
  }

  #atFrontier(id: EffectId): PreparedEffect {
    const effect = this.effect(id);
    if (effect === undefined) this.#reject(`effect ${String(id)} is not prepared`);
    const frontier = this.frontier();
    if (frontier === undefined || !frontier.id.equals(effect.id)) {
      this.#reject(`effect ${id.toString()} is not at the frontier`);
    }
    return effect;
  }

  #replace(effect: PreparedEffect, input: PreparedEffectInput): PreparedStep {
    const inputs = this.#effects.map((current) => (current === effect ? input : current.toInput()));
    return PreparedStep.create({
      processId: this.processId,
      stepSequence: this.stepSequence,
      candidateState: this.candidateState,
      intent: this.intent,
      effects: inputs,
    });
  }

  #reject(message: string): never {
    throw new KernelError(ErrorCode.invalidSnapshot, `prepared step: ${message}`);
  }

  toWire(): WireValue {
    return {
      candidate_state: this.candidateState.toWire(),
      intent: this.intent.toWire(),
      effects: this.#effects.map((effect) => effect.toWire()),
    };
  }

  json(): string {
    return encodeWire(this.toWire());
  }

  equals(other: PreparedStep | undefined): boolean {
    return other instanceof PreparedStep && other.json() === this.json() && other.processId.equals(this.processId);
  }
}

/** The frontier invariant: definite*, then at most one pending-or-Unknown, then planned*. */
function frontierProblem(effects: readonly PreparedEffect[]): string | undefined {
  let stage: 'settled' | 'frontier' | 'planned' = 'settled';
  for (const effect of effects) {
    if (stage === 'settled') {
      if (effect.definite) continue;
      stage = effect.phase === 'planned' ? 'planned' : 'frontier';
      continue;
    }
    if (effect.phase !== 'planned') {
      const what = effect.phase === 'pending' ? 'pending' : `settled ${effect.settlement?.status ?? ''}`.trim();
      return `effect ${effect.index} is ${what} behind an unsettled frontier (only planned effects may follow it)`;
    }
    stage = 'planned';
  }
  return undefined;
}

function readPreparedEffect(
  node: JsonNode,
  path: string,
  index: number,
  options: PreparedStepDecodeOptions,
  code: string,
): PreparedEffect {
  const record: WireRecord = new WireRecord(node, path, code);
  const effectNode = record.optional('effect');
  const startedNode = record.optional('started_child');
  const progressNode = record.optional('progress');
  record.finish();
  const id = EffectId.derive(options.processId, options.stepSequence, index);
  if ((effectNode === undefined) === (startedNode === undefined)) record.fail('must carry exactly one of effect or started_child');

  let phase: EffectPhase = 'planned';
  let settlementNode: JsonNode | undefined;
  let diagnostic: Failure | undefined;
  if (progressNode !== undefined) {
    const progress: WireRecord = new WireRecord(progressNode, record.childPath('progress'), code);
    settlementNode = progress.optional('settlement');
    const diagnosticNode = progress.optional('diagnostic');
    progress.finish();
    phase = settlementNode === undefined ? 'pending' : 'settled';
    if (diagnosticNode !== undefined) {
      if (settlementNode === undefined) progress.fail('is kept only with a settlement', 'diagnostic');
      diagnostic = recode(code, () => Failure.fromWire(diagnosticNode, progress.childPath('diagnostic')));
    }
  }
  const settlementPath = `${record.childPath('progress')}/settlement`;

  let effect: Effect;
  if (startedNode !== undefined) {
    const started: WireRecord = new WireRecord(startedNode, record.childPath('started_child'), code);
    const inputNode = started.required('input');
    started.finish();
    if (settlementNode === undefined) record.fail('records a started child, so it must be settled', 'started_child');
    const settled: WireRecord = new WireRecord(settlementNode, settlementPath, code);
    settled.finish();
    if (diagnostic !== undefined) record.fail('is not allowed on a framework effect', 'progress/diagnostic');
    const input = recode(code, () => Payload.fromNode(inputNode), started.childPath('input'));
    if (options.renderStartedChild === undefined) {
      record.fail('records a started child, which decodes only within its tree snapshot', 'started_child');
    }
    try {
      effect = options.renderStartedChild(id, input);
    } catch (error) {
      throw wireError(code, record.childPath('started_child'), `does not match a captured child: ${messageOf(error)}`);
    }
    return PreparedEffect.build(id, index, { effect, phase: 'settled' }, (message) => record.fail(message));
  }

  effect = Effect.fromWire(effectNode as JsonNode, record.childPath('effect'), code);
  if (settlementNode === undefined) {
    return PreparedEffect.build(id, index, { effect, phase }, (message) => record.fail(message));
  }
  const settled: WireRecord = new WireRecord(settlementNode, settlementPath, code);
  if (effect.target === 'dispatcher') {
    const status = settled.string('status');
    const payloadNode = settled.required('payload');
    settled.finish();
    if (!isSettlementStatus(status)) settled.fail(`must be one of ${settlementStatusValues.join(', ')}`, 'status');
    const payload = recode(code, () => Payload.fromNode(payloadNode), settled.childPath('payload'));
    return PreparedEffect.build(
      id,
      index,
      { effect, phase, settlement: Settlement.of(status, payload), diagnostic },
      (message) => record.fail(message),
    );
  }
  const failureNode = settled.optional('failure');
  settled.finish();
  if (diagnostic !== undefined) record.fail('is not allowed on a framework effect', 'progress/diagnostic');
  const failure =
    failureNode === undefined ? undefined : recode(code, () => Failure.fromWire(failureNode, settled.childPath('failure')));
  const operation = effect.frameworkOperation();
  if (failure === undefined && operation.operation === 'start_child') {
    record.fail('is a started child, which is recorded as started_child', 'effect');
  }
  if (failure !== undefined && !canFail(operation)) settled.fail(`is not allowed: a ${operation.operation} effect cannot fail`, 'failure');
  return PreparedEffect.build(id, index, { effect, phase, failure }, (message) => record.fail(message));
}

/** Runs a nested decoder and re-throws its KernelError under `code` (keeping the message and path). */
function recode<T>(code: string, decode: () => T, path?: string): T {
  try {
    return decode();
  } catch (error) {
    if (error instanceof KernelError && error.code === code) throw error;
    const message = messageOf(error);
    throw new KernelError(code, path === undefined ? message : `${path} is not valid: ${message}`, { cause: error });
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
