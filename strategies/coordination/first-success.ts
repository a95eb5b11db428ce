import { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import type { Definition } from '../../src/kernel/definition.js';
import type { Deployment } from '../../src/kernel/deployment.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../../src/kernel/effect.js';
import { ErrorCode, KernelError } from '../../src/kernel/errors.js';
import { ChildKey, ProcessId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Quota } from '../../src/kernel/quota.js';
import { Schema } from '../../src/kernel/schema.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { invalidState, machineDefinition, stateRecord, statePhase } from '../internal/machine.js';
import { openedWait, protocolError, recordOf, stateWaitId } from './protocol.js';

/**
 * FirstSuccess: a competition between candidate child Processes. The input is a non-empty list of
 * candidates `{deployment, input, budget}` (the deployment by name, from the Definition's static
 * bindings). Every candidate starts in one batch, so selection begins only once every start has
 * settled (a slow admission delays it). Then the Definition waits at `terminal_result` for any of
 * the candidates still running; in each satisfaction, in request order, the first *completed*
 * candidate whose output the pure `accept` predicate accepts wins. Without a winner it waits again
 * for the rest; when none is left it completes with no winner — an explicit business result, not a
 * failure. On a winner it cancels every candidate still running (`cancel_child`: each loser's whole
 * subtree) and completes once the cancellations are recorded (not drained).
 *
 * Output: `{winner?: {index, processId, output}, outcomes: [...], canceled: [processId]}` where
 * `outcomes` lists, in request order, every candidate whose fate was observed: a start refusal
 * (`status: "not_started"`, with the failure's kind and code) or a terminal Result (`status`, and
 * the failure's kind and code for a failed one).
 *
 * A predicate that throws fails the Step with its own error (an execution failure unless it
 * carries a classification); it is not a protocol violation.
 *
 * Phases (stored): `ready` → `starting` → `awaiting_open` ⇄ `waiting` → (`canceling` →) `completed`.
 */

/** A completed candidate, as the predicate sees it. */
export interface CandidateResult {
  /** The candidate's position in the input. */
  readonly index: number;
  readonly deployment: string;
  readonly processId: string;
  /** The candidate's output (decoded JSON). */
  readonly output: unknown;
}

/** Decides whether a completed candidate wins. Pure: no clock, randomness, I/O or shared state. */
export type SuccessPredicate = (candidate: CandidateResult) => boolean;

export interface FirstSuccessConfig {
  readonly name: string;
  readonly description: string;
  /** The bound on the number of candidates (1..64). */
  readonly maxCandidates: number;
  readonly accept: SuccessPredicate;
  /** The candidate deployments, by their Definition name (the static child bindings). */
  readonly deployments: readonly Deployment[];
}

/** The per-candidate grant bound: each dimension a finite quota up to this. */
export const maxCandidateQuota = 1_000_000;
const maxCandidatesLimit = 64;

interface Candidate {
  readonly deployment: string;
  readonly input: unknown;
  readonly budget: { readonly steps: number; readonly effects: number; readonly signals: number };
}

interface Outcome {
  readonly index: number;
  readonly processId?: string;
  readonly status: string;
  readonly failure?: { readonly kind: string; readonly code: string };
}

interface Winner {
  readonly index: number;
  readonly processId: string;
  readonly output: unknown;
}

type Phase = 'ready' | 'starting' | 'awaiting_open' | 'waiting' | 'canceling' | 'completed';
const phases: readonly Phase[] = ['ready', 'starting', 'awaiting_open', 'waiting', 'canceling', 'completed'];

interface FirstSuccessState {
  readonly phase: Phase;
  readonly candidates: readonly Candidate[];
  /** Per candidate once the starts settled: its ProcessId, or null when its start was refused. */
  readonly started: readonly (string | null)[];
  /** Observed fates, in request order. */
  readonly outcomes: readonly Outcome[];
  /** While `waiting`: the current child wait. */
  readonly wait_id?: string;
  readonly winner?: Winner;
  /** The losers canceled on selection. */
  readonly canceled: readonly string[];
}

const budgetSchema = {
  type: 'object',
  properties: Object.fromEntries(['steps', 'effects', 'signals'].map((name) => [name, { type: 'integer', minimum: 1, maximum: maxCandidateQuota }])),
  required: ['steps', 'effects', 'signals'],
  additionalProperties: false,
} as const;

const failureSchema = {
  type: 'object',
  properties: { kind: { type: 'string' }, code: { type: 'string' } },
  required: ['kind', 'code'],
  additionalProperties: false,
} as const;

const outputSchema: Schema = Schema.of({
  type: 'object',
  properties: {
    winner: {
      type: 'object',
      properties: { index: { type: 'integer', minimum: 0 }, processId: { type: 'string' }, output: true },
      required: ['index', 'processId', 'output'],
      additionalProperties: false,
    },
    outcomes: {
      type: 'array',
      items: {
        type: 'object',
        properties: { index: { type: 'integer', minimum: 0 }, processId: { type: 'string' }, status: { type: 'string' }, failure: failureSchema },
        required: ['index', 'status'],
        additionalProperties: false,
      },
    },
    canceled: { type: 'array', items: { type: 'string' } },
  },
  required: ['outcomes', 'canceled'],
  additionalProperties: false,
});

function configError(message: string): never {
  throw new KernelError(ErrorCode.invalidDescriptor, `invalid first-success configuration: ${message}`);
}

export function firstSuccessDefinition(config: FirstSuccessConfig): Definition {
  if (!Number.isSafeInteger(config.maxCandidates) || config.maxCandidates < 1 || config.maxCandidates > maxCandidatesLimit) {
    configError(`maxCandidates must be an integer in 1..${maxCandidatesLimit}`);
  }
  if (typeof config.accept !== 'function') configError('accept must be a predicate');
  const bindings = new Map<string, Deployment>();
  for (const deployment of config.deployments) {
    const name = deployment.ref.name;
    if (bindings.has(name)) configError(`deployment ${name} is bound twice`);
    bindings.set(name, deployment);
  }
  if (bindings.size === 0) configError('at least one candidate deployment must be bound');
  const kind = config.name;
  const accept = config.accept;
  const descriptor = Descriptor.create({
    name: config.name,
    description: config.description,
    inputSchema: Schema.of({
      type: 'array',
      minItems: 1,
      maxItems: config.maxCandidates,
      items: {
        type: 'object',
        properties: { deployment: { enum: [...bindings.keys()] }, input: true, budget: budgetSchema },
        required: ['deployment', 'input', 'budget'],
        additionalProperties: false,
      },
    }),
    outputSchema,
  });
  const candidateListSchema = descriptor.inputSchema;

  const check = (value: unknown): FirstSuccessState => {
    const record = stateRecord(kind, value, ['phase', 'candidates', 'started', 'outcomes', 'canceled'], ['wait_id', 'winner']);
    const phase = statePhase(kind, record, phases);
    if (!candidateListSchema.accepts(Payload.encode(record.candidates))) throw invalidState(kind, 'candidates do not satisfy the input schema');
    const candidates = record.candidates as Candidate[];
    const started = record.started;
    if (!Array.isArray(started) || started.some((id) => id !== null && !isProcessId(id))) throw invalidState(kind, 'started must list process ids or nulls');
    const startsSettled = phase !== 'ready' && phase !== 'starting';
    if (started.length !== (startsSettled ? candidates.length : 0)) throw invalidState(kind, 'started is aligned with the candidates exactly once the starts settled');
    const outcomes = record.outcomes;
    if (!Array.isArray(outcomes) || !outcomes.every((outcome) => isOutcome(outcome, candidates.length))) throw invalidState(kind, 'outcomes are malformed');
    const canceled = record.canceled;
    if (!Array.isArray(canceled) || canceled.some((id) => !started.includes(id))) throw invalidState(kind, 'canceled must list started candidates');
    if ((phase === 'waiting') !== Object.hasOwn(record, 'wait_id')) throw invalidState(kind, 'wait_id is present exactly while waiting');
    const decided = phase === 'canceling' || phase === 'completed';
    if (phase === 'canceling' && !Object.hasOwn(record, 'winner')) throw invalidState(kind, 'the losers are canceled only for a winner');
    if (!decided && Object.hasOwn(record, 'winner')) throw invalidState(kind, 'a winner ends the competition');
    if (!Object.hasOwn(record, 'winner') && canceled.length > 0) throw invalidState(kind, 'losers are canceled only once a winner exists');
    const state: FirstSuccessState = { phase, candidates, started: started as (string | null)[], outcomes: outcomes as Outcome[], canceled: canceled as string[] };
    if (phase === 'waiting') return { ...state, wait_id: stateWaitId(kind, record, 'wait_id') };
    if (Object.hasOwn(record, 'winner')) {
      const winner = recordOf(record.winner);
      if (winner === undefined || typeof winner.index !== 'number' || started[winner.index] !== winner.processId || !Object.hasOwn(winner, 'output')) {
        throw invalidState(kind, 'winner must be a started candidate with its output');
      }
      return { ...state, winner: winner as unknown as Winner };
    }
    return state;
  };

  /** One start effect per candidate, in request order (they settle as one batch). */
  const starts = (candidates: readonly Candidate[]): Effect[] =>
    candidates.map((candidate, index) =>
      Effect.startChild(
        ChildSpec.create({
          key: ChildKey.parse(`candidate-${index}`),
          deploymentRef: (bindings.get(candidate.deployment) as Deployment).ref,
          input: Payload.encode(candidate.input),
          budget: Budget.of({ steps: Quota.of(candidate.budget.steps), effects: Quota.of(candidate.budget.effects), signals: Quota.of(candidate.budget.signals) }),
          capabilities: CapabilitySet.empty,
        }),
      ),
    );

  /** The candidates started and not yet observed terminal, in request order. */
  const running = (state: FirstSuccessState): string[] => {
    const seen = new Set(state.outcomes.map((outcome) => outcome.index));
    return state.started.flatMap((id, index) => (id === null || seen.has(index) ? [] : [id]));
  };

  const finish = (state: FirstSuccessState, consumed: number): { state: FirstSuccessState; transition: Transition } => {
    const outcomes = [...state.outcomes].sort((a, b) => a.index - b.index);
    const output = state.winner === undefined ? { outcomes, canceled: state.canceled } : { winner: state.winner, outcomes, canceled: state.canceled };
    return { state: { ...state, phase: 'completed', outcomes }, transition: Transition.complete(consumed, Payload.encode(output)) };
  };

  /** After an answer (or the starts): wait for the rest, cancel the losers, or finish. */
  const next = (state: FirstSuccessState, consumed: number): { state: FirstSuccessState; transition: Transition } => {
    const rest = running(state);
    if (state.winner !== undefined) {
      if (rest.length === 0) return finish(state, consumed);
      const reason = `candidate ${state.winner.index} won the competition`;
      return {
        state: { ...state, phase: 'canceling', canceled: rest },
        transition: Transition.continue(consumed, rest.map((id) => Effect.cancelChild(ProcessId.parse(id), reason))),
      };
    }
    if (rest.length === 0) return finish(state, consumed);
    const wait = ChildWaitSpec.create({
      key: WaitKey.parse(`candidates-${state.outcomes.length}`),
      children: rest.map((id) => ProcessId.parse(id)),
      boundary: 'terminal_result',
      condition: ChildWaitCondition.any(),
    });
    return { state: { ...state, phase: 'awaiting_open', wait_id: undefined }, transition: Transition.continue(consumed, [Effect.waitChildren(wait)]) };
  };

  /** Folds one child-wait answer into the state: outcomes in request order, the first accepted success wins. */
  const answered = (state: FirstSuccessState, answer: Signal): FirstSuccessState => {
    const outcomes = [...state.outcomes];
    let winner = state.winner;
    const reported = recordOf(answer.payload.decode<unknown>())?.outcomes;
    if (!Array.isArray(reported) || reported.length === 0) protocolError(`the child-wait answer ${answer.id.toString()} carries no outcomes`);
    for (const entry of reported) {
      const result = recordOf(recordOf(entry)?.result);
      const processId = result?.process_id;
      const termination = recordOf(result?.termination);
      const index = state.started.indexOf(typeof processId === 'string' ? processId : null);
      if (result === undefined || termination === undefined || typeof termination.status !== 'string' || index < 0 || typeof processId !== 'string') {
        protocolError(`the child-wait answer ${answer.id.toString()} reports a result that is not a candidate's`);
      }
      if (outcomes.some((outcome) => outcome.index === index)) continue;
      const failure = recordOf(termination.failure);
      const status = termination.status;
      outcomes.push(
        failure === undefined
          ? { index, processId, status }
          : { index, processId, status, failure: { kind: String(failure.kind), code: String(failure.code) } },
      );
      if (winner !== undefined || status !== 'completed') continue;
      if (!Object.hasOwn(result, 'output')) protocolError(`the completed candidate ${processId} has no output`);
      const candidate: CandidateResult = { index, deployment: (state.candidates[index] as Candidate).deployment, processId, output: result.output };
      if (accept(candidate)) winner = { index, processId, output: result.output };
    }
    return winner === undefined ? { ...state, outcomes } : { ...state, outcomes, winner };
  };

  return machineDefinition<FirstSuccessState>({
    descriptor,
    stateKind: kind,
    childDeployments: [...bindings.values()],
    initial: (input) => ({ phase: 'ready', candidates: input.decode<Candidate[]>(), started: [], outcomes: [], canceled: [] }),
    check,
    step(state, signals) {
      switch (state.phase) {
        case 'ready':
          if (signals.length > 0) protocolError(`the competition received ${signals[0]?.id.toString()} before it started`);
          return { state: { ...state, phase: 'starting' }, transition: Transition.continue(0, starts(state.candidates)) };
        case 'starting': {
          const count = state.candidates.length;
          if (signals.length < count) protocolError(`expected ${count} start results, got ${signals.length} signals`);
          const started: (string | null)[] = [];
          const outcomes: Outcome[] = [];
          signals.slice(0, count).forEach((signal, index) => {
            const result = recordOf(signal.payload.decode<unknown>());
            if (!signal.engineOwned || result?.operation !== 'start_child') protocolError(`signal ${signal.id.toString()} is not a start result`);
            const failure = recordOf(result.failure);
            if (failure !== undefined) {
              started.push(null);
              outcomes.push({ index, status: 'not_started', failure: { kind: String(failure.kind), code: String(failure.code) } });
            } else if (isProcessId(result.process_id)) {
              started.push(result.process_id);
            } else {
              protocolError(`start result ${signal.id.toString()} names no process`);
            }
          });
          if (signals.length > count) protocolError(`unexpected signal ${signals[count]?.id.toString()} after the start results`);
          return next({ ...state, started, outcomes }, count);
        }
        case 'awaiting_open': {
          const waitId = openedWait(signals[0]);
          if (waitId === undefined) protocolError('the competition expected its child-wait opening first');
          return onWindow({ ...state, phase: 'waiting', wait_id: waitId.toString() }, signals, 1);
        }
        case 'waiting':
          return onWindow(state, signals, 0);
        case 'canceling': {
          const count = state.canceled.length;
          const receipts = signals.slice(0, count);
          if (receipts.length < count || receipts.some((signal) => !signal.engineOwned || recordOf(signal.payload.decode<unknown>())?.operation !== 'cancel_child')) {
            protocolError(`expected ${count} cancellation receipts`);
          }
          if (signals.length > count) protocolError(`unexpected signal ${signals[count]?.id.toString()} after the cancellation receipts`);
          return finish(state, count);
        }
        case 'completed':
          return protocolError('the competition has completed');
      }
    },
  });

  function onWindow(state: FirstSuccessState, signals: readonly Signal[], from: number): { state: FirstSuccessState; transition: Transition } {
    const waitId = WaitId.parse(state.wait_id);
    const rest = signals.slice(from);
    if (rest.length === 0) return { state, transition: Transition.wait(from, waitId) };
    const [answer, ...others] = rest as [Signal, ...Signal[]];
    if (!answer.engineOwned || !waitId.equals(answer.waitId)) protocolError(`expected the answer to ${waitId.toString()}, got ${answer.id.toString()}`);
    if (others.length > 0) protocolError(`unexpected signal ${others[0]?.id.toString()} after the child-wait answer`);
    const folded = answered(state, answer);
    return next({ ...folded, wait_id: undefined }, signals.length);
  }
}

function isProcessId(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    ProcessId.parse(value);
    return true;
  } catch {
    return false;
  }
}

function isOutcome(value: unknown, count: number): boolean {
  const outcome = recordOf(value);
  if (outcome === undefined || typeof outcome.status !== 'string') return false;
  if (typeof outcome.index !== 'number' || !Number.isSafeInteger(outcome.index) || outcome.index < 0 || outcome.index >= count) return false;
  if (outcome.processId !== undefined && !isProcessId(outcome.processId)) return false;
  const failure = outcome.failure === undefined ? {} : recordOf(outcome.failure);
  return failure !== undefined && Object.keys(outcome).every((name) => ['index', 'processId', 'status', 'failure'].includes(name));
}
