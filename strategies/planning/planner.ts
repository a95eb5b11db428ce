import { type Facts, PlanningValueError, facts } from './world.js';

/**
 * The planning port (contract §6.5): a {@link Planner} is a pure, deterministic search over a
 * {@link Problem} — a world state, a goal and the actions that may be used — that returns a
 * {@link PlanOutcome}. The planning strategy calls it inside a Step, so it must read nothing but its
 * argument: the same Problem always gives the same outcome.
 */

/** One action as the planner sees it: what it needs, what it predicts, what it costs. */
export interface PlanningAction {
  /** Unique within a Problem (`^[a-z][a-z0-9_]{0,63}$`). */
  readonly name: string;
  readonly preconditions: Facts;
  /** The facts the action predicts it makes true. */
  readonly effects: Facts;
  /** A finite, non-negative cost. */
  readonly cost: number;
}

/** A validated planning problem; its actions are in name order (so input order never matters). */
export interface Problem {
  readonly initial: Facts;
  readonly goal: Facts;
  readonly actions: readonly PlanningAction[];
}

/** An ordered list of actions and its total cost (the costs summed in plan order). */
export interface Plan {
  readonly actions: readonly string[];
  readonly cost: number;
}

/** How much a search did. */
export interface SearchStatistics {
  /** Nodes taken from the frontier and expanded (their successors generated). */
  readonly expanded: number;
  /** Successor nodes generated (the start node not counted). */
  readonly generated: number;
}

/**
 * A search's result. `found` carries a plan (empty when the goal already holds); `no_plan` means the
 * search completed and no sequence of the given actions reaches the goal; `budget_exhausted` means
 * the search stopped at a budget before it could tell either way — an error of the planner's
 * configuration, never a claim that no plan exists.
 */
export type PlanOutcome =
  | ({ readonly status: 'found'; readonly plan: Plan } & SearchStatistics)
  | ({ readonly status: 'no_plan' } & SearchStatistics)
  | ({ readonly status: 'budget_exhausted'; readonly budget: 'expansions' | 'generated_nodes'; readonly limit: number } & SearchStatistics);

/** The pure search the planning strategy delegates to. Determinism: same Problem → same outcome. */
export interface Planner {
  plan(problem: Problem): PlanOutcome;
}

const actionName = /^[a-z][a-z0-9_]{0,63}$/;
export const maxActions = 64;

/**
 * A validated planning action. Rejections are {@link PlanningValueError}s with code
 * `planning.invalid_action`, raised here, eagerly, never during a search: a cost must be a finite,
 * non-negative number (NaN, ±Infinity and negative costs would break the optimality of a
 * uniform-cost search).
 */
export function planningAction(config: { name: string; preconditions?: unknown; effects: unknown; cost: number }): PlanningAction {
  const code = 'planning.invalid_action';
  if (typeof config.name !== 'string' || !actionName.test(config.name)) {
    throw new PlanningValueError(code, `action name ${JSON.stringify(String(config.name).slice(0, 80))} is not ^[a-z][a-z0-9_]{0,63}$`);
  }
  if (typeof config.cost !== 'number' || !Number.isFinite(config.cost) || config.cost < 0) {
    throw new PlanningValueError(code, `action ${config.name}: cost must be a finite, non-negative number, got ${String(config.cost)}`);
  }
  const preconditions = facts(config.preconditions ?? {}, `action ${config.name} preconditions`, code);
  const effects = facts(config.effects, `action ${config.name} effects`, code);
  if (Object.keys(effects).length === 0) throw new PlanningValueError(code, `action ${config.name} predicts no effect`);
  return Object.freeze({ name: config.name, preconditions, effects, cost: config.cost === 0 ? 0 : config.cost });
}

/** A validated Problem: distinct action names (at most {@link maxActions}), sorted by name. */
export function problem(config: { initial: unknown; goal: unknown; actions: readonly PlanningAction[] }): Problem {
  const initial = facts(config.initial, 'the world state', 'planning.invalid_world');
  const goal = facts(config.goal, 'the goal', 'planning.invalid_goal');
  if (config.actions.length > maxActions) throw new PlanningValueError('planning.invalid_action', `at most ${maxActions} actions, got ${config.actions.length}`);
  const actions = config.actions.map((action) => planningAction(action)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (let index = 1; index < actions.length; index += 1) {
    if ((actions[index - 1] as PlanningAction).name === (actions[index] as PlanningAction).name) {
      throw new PlanningValueError('planning.invalid_action', `action ${(actions[index] as PlanningAction).name} is declared twice`);
    }
  }
  return Object.freeze({ initial, goal, actions: Object.freeze(actions) });
}
