import type { Budget } from '../../src/kernel/budget.js';
import { CapabilitySet } from '../../src/kernel/capability.js';
import { ClassifiedError } from '../../src/kernel/classified-error.js';
import type { Definition } from '../../src/kernel/definition.js';
import type { Deployment } from '../../src/kernel/deployment.js';
import { Descriptor } from '../../src/kernel/descriptor.js';
import { ChildSpec, ChildWaitCondition, ChildWaitSpec, Effect } from '../../src/kernel/effect.js';
import { Failure, type FailureKind, normalizeDiagnostic } from '../../src/kernel/failure.js';
import { ChildKey, ProcessId, WaitId, WaitKey } from '../../src/kernel/identity.js';
import { Payload } from '../../src/kernel/payload.js';
import { Schema } from '../../src/kernel/schema.js';
import type { Signal } from '../../src/kernel/signal.js';
import { Transition } from '../../src/kernel/transition.js';
import { invalidState, machineDefinition, objectOf, stateInteger, statePhase, stateRecord } from '../internal/machine.js';
import { type PlanningAction, type Planner, planningAction, problem } from './planner.js';
import { type Facts, PlanningValueError, facts, maxFacts, satisfies, unmet } from './world.js';
import { actEffect, senseEffect } from './wire.js';

/**
 * The planning strategy (contract §6.5): a Definition that reaches a goal by sensing, planning and
 * acting, one action at a time.
 *
 * Each round: a **sensor** dispatcher Effect reports the world state (the only way the world enters a
 * Step); if the goal holds the Process completes; otherwise the {@link Planner} searches a plan from
 * the sensed state over the actions not yet excluded, and the plan's first action runs outside the
 * Step — a dispatcher Effect (`dispatch`) or a child Process (`delegate`, awaited until its subtree
 * drained). Then the strategy senses again: an action that reported success stays *current* until a
 * sensing shows its predicted effects hold (confirmed); if they do not it is *unconfirmed*. Failed
 * attempts (a failed settlement, a refused child start, a child that did not complete) and
 * unconfirmed actions are excluded from every later plan. At most `maxRounds` plans are made.
 *
 * Failure codes (all `planning.…`): `sensor_failed` (external: the sensor settled failed),
 * `invalid_world` (contract: the sensor's report is not a world state), `no_plan` (execution: no plan
 * from the sensed state with the remaining actions), `planner_budget_exhausted` (execution: the
 * planner stopped at a search budget), `rounds_exhausted` (execution: `maxRounds` plans made, goal
 * not reached), `subtree_unresolved` (external: a delegated action's child subtree drained with
 * Unknown effects), and the Step errors `missing_settlement` / `missing_wait` (contract: the window
 * lacks what the Engine owes the previous Effect).
 *
 * Determinism: the state is JSON; the planner is pure; nothing else is read.
 */

/** How an action runs: through the deployment's dispatcher, or as a child Process of a bound deployment. */
export type ActionExecution =
  | { readonly kind: 'dispatch' }
  | { readonly kind: 'delegate'; readonly deployment: Deployment; readonly input: unknown; readonly budget: Budget };

export interface PlanningActionSpec {
  readonly name: string;
  readonly preconditions?: Readonly<Record<string, unknown>>;
  readonly effects: Readonly<Record<string, unknown>>;
  readonly cost: number;
  readonly execution: ActionExecution;
}

export interface PlanningDefinitionConfig {
  /** The Descriptor name (a qualified name). */
  readonly name: string;
  readonly description: string;
  readonly actions: readonly PlanningActionSpec[];
  readonly planner: Planner;
  /** The most plans a Process makes (1..256); an input may lower it. */
  readonly maxRounds: number;
}

export const maxRoundsLimit = 256;

type Phase = 'init' | 'sensing' | 'acting' | 'starting' | 'opening' | 'waiting';
const phases: readonly Phase[] = ['init', 'sensing', 'acting', 'starting', 'opening', 'waiting'];

/** What happened to one round's action. */
type Outcome = 'pending' | 'reported' | 'confirmed' | 'unconfirmed' | 'failed';
const outcomes: readonly Outcome[] = ['pending', 'reported', 'confirmed', 'unconfirmed', 'failed'];

interface Round {
  readonly round: number;
  /** The plan made this round (its first action ran). */
  readonly plan: readonly string[];
  readonly action: string;
  readonly outcome: Outcome;
  /** Why the attempt failed (a failed attempt only). */
  readonly reason?: string;
}

interface PlanningState {
  readonly phase: Phase;
  readonly goal: Facts;
  readonly maxRounds: number;
  /** Actions excluded from planning, in exclusion order. */
  readonly excluded: readonly string[];
  /** The rounds so far; the last one's action is the one running or awaiting confirmation. */
  readonly rounds: readonly Round[];
  /** The delegated child of the running action (starting → waiting). */
  readonly child?: string;
  readonly waitId?: string;
}

const factValueSchema = { type: ['boolean', 'integer', 'string'], maxLength: 256 } as const;
const factsSchema = { type: 'object', maxProperties: maxFacts, propertyNames: { pattern: '^[a-z][a-z0-9_]{0,63}$' }, additionalProperties: factValueSchema } as const;

function stepFailure(kind: FailureKind, code: string, message: string): ClassifiedError {
  return new ClassifiedError(kind, code, message);
}

/** The action specs, validated eagerly (costs, names, facts, distinct names, bound deployments). */
function validatedActions(specs: readonly PlanningActionSpec[]): Map<string, { readonly action: PlanningAction; readonly execution: ActionExecution }> {
  const byName = new Map<string, { action: PlanningAction; execution: ActionExecution }>();
  for (const spec of specs) {
    const action = planningAction(spec);
    if (byName.has(action.name)) throw new PlanningValueError('planning.invalid_action', `action ${action.name} is declared twice`);
    if (spec.execution.kind !== 'dispatch' && spec.execution.kind !== 'delegate') throw new PlanningValueError('planning.invalid_action', `action ${action.name} has no execution`);
    byName.set(action.name, { action, execution: spec.execution });
  }
  // One problem over them all checks the count bound too.
  problem({ initial: {}, goal: {}, actions: [...byName.values()].map((entry) => entry.action) });
  return byName;
}

/** A planning Definition over its actions and planner. */
export function planningDefinition(config: PlanningDefinitionConfig): Definition {
  if (!Number.isSafeInteger(config.maxRounds) || config.maxRounds < 1 || config.maxRounds > maxRoundsLimit) {
    throw new PlanningValueError('planning.invalid_budget', `maxRounds must be an integer in 1..${maxRoundsLimit}`);
  }
  const actions = validatedActions(config.actions);
  const kind = config.name;
  const childDeployments: Deployment[] = [];
  for (const { execution } of actions.values()) {
    if (execution.kind === 'delegate' && !childDeployments.some((bound) => bound.ref.equals(execution.deployment.ref))) childDeployments.push(execution.deployment);
  }
  const descriptor = Descriptor.create({
    name: config.name,
    description: config.description,
    inputSchema: Schema.of({
      type: 'object',
      properties: { goal: { ...factsSchema, minProperties: 1 }, maxRounds: { type: 'integer', minimum: 1, maximum: config.maxRounds } },
      required: ['goal'],
      additionalProperties: false,
    }),
    outputSchema: Schema.of({
      type: 'object',
      properties: {
        world: factsSchema,
        rounds: {
          type: 'array',
          items: {
            type: 'object',
            properties: { round: { type: 'integer' }, plan: { type: 'array', items: { type: 'string' } }, action: { type: 'string' }, outcome: { enum: outcomes }, reason: { type: 'string' } },
            required: ['round', 'plan', 'action', 'outcome'],
            additionalProperties: false,
          },
        },
        excluded: { type: 'array', items: { type: 'string' } },
      },
      required: ['world', 'rounds', 'excluded'],
      additionalProperties: false,
    }),
  });

  const check = (value: unknown): PlanningState => {
    const record = stateRecord(kind, value, ['phase', 'goal', 'maxRounds', 'excluded', 'rounds'], ['child', 'waitId']);
    const phase = statePhase(kind, record, phases);
    let goal: Facts;
    try {
      goal = facts(record.goal, 'goal');
    } catch {
      throw invalidState(kind, 'goal must be a fact map');
    }
    const maxRounds = stateInteger(kind, record, 'maxRounds', 1);
    const excluded = record.excluded;
    if (!Array.isArray(excluded) || excluded.some((name) => typeof name !== 'string' || !actions.has(name))) throw invalidState(kind, 'excluded must list declared actions');
    const rounds = record.rounds;
    if (!Array.isArray(rounds) || rounds.length > maxRounds) throw invalidState(kind, 'rounds must be an array of at most maxRounds rounds');
    rounds.forEach((round: unknown, index) => {
      const entry = stateRecord(kind, round, ['round', 'plan', 'action', 'outcome'], ['reason']);
      if (entry.round !== index + 1) throw invalidState(kind, 'rounds must be numbered from 1');
      if (typeof entry.action !== 'string' || !actions.has(entry.action)) throw invalidState(kind, 'a round names a declared action');
      if (!Array.isArray(entry.plan) || entry.plan.some((name) => typeof name !== 'string')) throw invalidState(kind, 'a round plan is a list of action names');
      if (!outcomes.includes(entry.outcome as Outcome)) throw invalidState(kind, 'a round outcome is one of ' + outcomes.join(', '));
      if (entry.reason !== undefined && typeof entry.reason !== 'string') throw invalidState(kind, 'a round reason is a string');
    });
    for (const member of ['child', 'waitId'] as const) {
      if (record[member] !== undefined && typeof record[member] !== 'string') throw invalidState(kind, `${member} must be a string`);
    }
    const running = phase === 'acting' || phase === 'starting' || phase === 'opening' || phase === 'waiting';
    const lastOutcome = (rounds[rounds.length - 1] as { outcome?: unknown } | undefined)?.outcome;
    if (running && lastOutcome !== 'pending') throw invalidState(kind, `${phase} needs a pending round`);
    if (!running && lastOutcome === 'pending') throw invalidState(kind, `${phase} has no pending round`);
    if ((phase === 'opening' || phase === 'waiting') && record.child === undefined) throw invalidState(kind, `${phase} needs the child`);
    if (phase === 'waiting' && record.waitId === undefined) throw invalidState(kind, 'waiting needs the wait id');
    return record as unknown as PlanningState;
  };

  /** The state with the last round's outcome replaced. */
  const settleRound = (state: PlanningState, outcome: Outcome, reason?: string): PlanningState => {
    const last = state.rounds[state.rounds.length - 1] as Round;
    const round: Round = reason === undefined ? { round: last.round, plan: last.plan, action: last.action, outcome } : { round: last.round, plan: last.plan, action: last.action, outcome, reason };
    const excluded = outcome === 'failed' || outcome === 'unconfirmed' ? [...state.excluded, last.action] : state.excluded;
    return { ...state, rounds: [...state.rounds.slice(0, -1), round], excluded };
  };

  const sense = (state: PlanningState, consumed: number): { state: PlanningState; transition: Transition } => {
    const { child: _child, waitId: _waitId, ...rest } = state;
    return { state: { ...rest, phase: 'sensing' }, transition: Transition.continue(consumed, [senseEffect(state.rounds.length)]) };
  };

  const fail = (state: PlanningState, consumed: number, kindOf: FailureKind, code: string, message: string) => ({
    state,
    transition: Transition.fail(consumed, Failure.create(kindOf, code, normalizeDiagnostic(message))),
  });

  /** A sensed world: confirm the current action, finish, or plan and act. */
  const decide = (state: PlanningState, world: Facts): { state: PlanningState; transition: Transition } => {
    const last = state.rounds[state.rounds.length - 1];
    let next = state;
    if (last?.outcome === 'reported') {
      const predicted = (actions.get(last.action) as { action: PlanningAction }).action.effects;
      next = satisfies(world, predicted) ? settleRound(state, 'confirmed') : settleRound(state, 'unconfirmed', `sensing did not show ${unmet(world, predicted).join(', ')}`);
    }
    if (satisfies(world, next.goal)) {
      return { state: next, transition: Transition.complete(1, Payload.encode({ world, rounds: next.rounds, excluded: next.excluded })) };
    }
    if (next.rounds.length >= next.maxRounds) {
      return fail(next, 1, 'execution', 'planning.rounds_exhausted', `${next.maxRounds} planning rounds made and the goal does not hold (unmet: ${unmet(world, next.goal).join(', ')})`);
    }
    const usable = [...actions.values()].filter((entry) => !next.excluded.includes(entry.action.name)).map((entry) => entry.action);
    const outcome = config.planner.plan(problem({ initial: world, goal: next.goal, actions: usable }));
    if (outcome.status === 'no_plan') {
      const without = next.excluded.length === 0 ? '' : ` without the excluded ${next.excluded.join(', ')}`;
      return fail(next, 1, 'execution', 'planning.no_plan', `no plan reaches the goal from the sensed world${without} (searched ${outcome.expanded} states)`);
    }
    if (outcome.status === 'budget_exhausted') {
      return fail(next, 1, 'execution', 'planning.planner_budget_exhausted', `the planner stopped at its ${outcome.budget} budget (${outcome.limit}) before it found a plan or proved there is none`);
    }
    const name = outcome.plan.actions[0] as string;
    const entry = actions.get(name) as { action: PlanningAction; execution: ActionExecution };
    const round: Round = { round: next.rounds.length + 1, plan: outcome.plan.actions, action: name, outcome: 'pending' };
    const acting = { ...next, rounds: [...next.rounds, round] };
    if (entry.execution.kind === 'dispatch') {
      return { state: { ...acting, phase: 'acting' }, transition: Transition.continue(1, [actEffect(entry.action, round.round)]) };
    }
    const spec = ChildSpec.create({
      key: ChildKey.parse(`round-${round.round}`),
      deploymentRef: entry.execution.deployment.ref,
      input: Payload.encode(entry.execution.input),
      budget: entry.execution.budget,
      capabilities: CapabilitySet.empty,
    });
    return { state: { ...acting, phase: 'starting' }, transition: Transition.continue(1, [Effect.startChild(spec)]) };
  };

  const settlementOf = (signals: readonly Signal[], what: string): Signal => {
    const first = signals[0];
    if (first === undefined || first.status === undefined) throw stepFailure('contract', 'planning.missing_settlement', `the window after the ${what} does not start with its settlement`);
    return first;
  };

  return machineDefinition<PlanningState>({
    descriptor,
    stateKind: kind,
    childDeployments,
    initial(input) {
      const { goal, maxRounds } = input.decode<{ goal: Record<string, unknown>; maxRounds?: number }>();
      return { phase: 'init', goal: facts(goal, 'goal'), maxRounds: maxRounds ?? config.maxRounds, excluded: [], rounds: [] };
    },
    check,
    step(state, signals) {
      switch (state.phase) {
        case 'init':
          return sense(state, 0);
        case 'sensing': {
          const settlement = settlementOf(signals, 'sensor effect');
          if (settlement.status !== 'succeeded') return fail(state, 1, 'external', 'planning.sensor_failed', `the sensor failed: ${diagnosticOf(settlement)}`);
          let world: Facts;
          try {
            world = facts(objectOf(settlement.payload)?.world, 'the sensed world', 'planning.invalid_world');
          } catch (error) {
            return fail(state, 1, 'contract', 'planning.invalid_world', error instanceof Error ? error.message : 'the sensor reported no world');
          }
          return decide(state, world);
        }
        case 'acting': {
          const settlement = settlementOf(signals, 'action effect');
          const next = settlement.status === 'succeeded' ? settleRound(state, 'reported') : settleRound(state, 'failed', `the action failed: ${diagnosticOf(settlement)}`);
          return sense(next, 1);
        }
        case 'starting': {
          // A framework settlement carries no status: the Engine-minted `{operation:"start_child",…}`.
          const result = signals[0]?.engineOwned === true ? objectOf((signals[0] as Signal).payload) : undefined;
          if (result?.operation !== 'start_child') throw stepFailure('contract', 'planning.missing_settlement', 'the window after the child start does not start with its result');
          if (result.failure !== undefined || typeof result.process_id !== 'string') {
            const code = (result.failure as { code?: unknown } | undefined)?.code;
            return sense(settleRound(state, 'failed', `the child did not start: ${typeof code === 'string' ? code : 'unknown'}`), 1);
          }
          const child = result.process_id;
          const wait = Effect.waitChildren(
            ChildWaitSpec.create({ key: WaitKey.parse(`round-${state.rounds.length}`), children: [ProcessId.parse(child)], boundary: 'subtree_drained', condition: ChildWaitCondition.all() }),
          );
          return { state: { ...state, phase: 'opening', child }, transition: Transition.continue(1, [wait]) };
        }
        case 'opening': {
          const waitId = signals[0]?.waitId;
          if (waitId === undefined) throw stepFailure('contract', 'planning.missing_wait', 'the window after the child wait does not start with its opening');
          return { state: { ...state, phase: 'waiting', waitId: waitId.toString() }, transition: Transition.wait(1, waitId) };
        }
        case 'waiting': {
          const waitId = WaitId.parse(state.waitId);
          const position = signals.findIndex((signal) => waitId.equals(signal.waitId));
          if (position < 0) return { state, transition: Transition.wait(0, waitId) };
          const answer = objectOf((signals[position] as Signal).payload);
          const first = (Array.isArray(answer?.outcomes) ? answer.outcomes[0] : undefined) as
            | { result?: { termination?: { status?: unknown; failure?: { code?: unknown } } }; subtree_unresolved_effects?: unknown[] }
            | undefined;
          const unresolved = first?.subtree_unresolved_effects ?? [];
          if (unresolved.length > 0) {
            return fail(state, position + 1, 'external', 'planning.subtree_unresolved', `the child ${state.child} of action ${(state.rounds[state.rounds.length - 1] as Round).action} drained with ${unresolved.length} unresolved effect(s)`);
          }
          const termination = first?.result?.termination;
          const next =
            termination?.status === 'completed'
              ? settleRound(state, 'reported')
              : settleRound(state, 'failed', `the child ended ${String(termination?.status ?? 'without a result')}${typeof termination?.failure?.code === 'string' ? `: ${termination.failure.code}` : ''}`);
          return sense(next, position + 1);
        }
      }
    },
  });
}

/** A short diagnostic of a failed settlement: its `error` code/message when it has one. */
function diagnosticOf(settlement: Signal): string {
  const error = objectOf(settlement.payload)?.error;
  if (typeof error === 'string') return error.slice(0, 500);
  if (typeof error === 'object' && error !== null) {
    const { code, message } = error as { code?: unknown; message?: unknown };
    return `${String(code ?? 'error')}: ${String(message ?? '')}`.slice(0, 500);
  }
  return 'no diagnostic';
}
