import type { Plan, PlanOutcome, Planner, PlanningAction, Problem } from '../planner.js';
import { PlanningValueError, applyEffects, type Facts, factsKey, satisfies } from '../world.js';

/**
 * goap: goal-oriented action planning as a uniform-cost search over world states (contract §6.5).
 *
 * - Complete and cost-optimal for non-negative finite costs (the Problem guarantees them): nodes
 *   leave the frontier in order of path cost, the goal test happens when a node leaves it, and a
 *   state is expanded at most once (the first time is the cheapest).
 * - Deterministic: the frontier is ordered by (path cost, generation number); successors are
 *   generated in action-name order, so equal-cost plans are broken the same way on every run.
 * - Bounded: at most `maxExpansions` nodes expanded and `maxGenerated` successor nodes generated.
 *   Hitting either is `budget_exhausted` — distinct from `no_plan`, which only a search that ran out
 *   of frontier within both budgets reports.
 *
 * Determinism: no clock, randomness or shared state; `plan` is a function of its Problem.
 */
export interface GoapBudget {
  /** Positive safe integer; default {@link defaultGoapBudget}. */
  readonly maxExpansions: number;
  /** Positive safe integer; default {@link defaultGoapBudget}. */
  readonly maxGenerated: number;
}

export const defaultGoapBudget: GoapBudget = Object.freeze({ maxExpansions: 10_000, maxGenerated: 100_000 });

interface SearchNode {
  readonly state: Facts;
  readonly key: string;
  readonly cost: number;
  /** Generation number: the tie-breaker among equal costs (earlier first). */
  readonly order: number;
  readonly parent?: SearchNode;
  readonly action?: PlanningAction;
}

/** A uniform-cost planner within `budget`; invalid budgets are rejected here (`planning.invalid_budget`). */
export function goapPlanner(budget: Partial<GoapBudget> = {}): Planner {
  const maxExpansions = budget.maxExpansions ?? defaultGoapBudget.maxExpansions;
  const maxGenerated = budget.maxGenerated ?? defaultGoapBudget.maxGenerated;
  for (const [name, value] of [['maxExpansions', maxExpansions], ['maxGenerated', maxGenerated]] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw new PlanningValueError('planning.invalid_budget', `${name} must be a positive safe integer, got ${String(value)}`);
  }
  return Object.freeze({ plan: (problem: Problem): PlanOutcome => search(problem, maxExpansions, maxGenerated) });
}

function search(problem: Problem, maxExpansions: number, maxGenerated: number): PlanOutcome {
  const frontier = new NodeHeap();
  const closed = new Set<string>();
  const best = new Map<string, number>();
  let expanded = 0;
  let generated = 0;
  const root: SearchNode = { state: problem.initial, key: factsKey(problem.initial), cost: 0, order: 0 };
  best.set(root.key, 0);
  frontier.push(root);
  for (let node = frontier.pop(); node !== undefined; node = frontier.pop()) {
    if (closed.has(node.key)) continue;
    if (satisfies(node.state, problem.goal)) return { status: 'found', plan: planOf(node), expanded, generated };
    if (expanded >= maxExpansions) return { status: 'budget_exhausted', budget: 'expansions', limit: maxExpansions, expanded, generated };
    expanded += 1;
    closed.add(node.key);
    for (const action of problem.actions) {
      if (!satisfies(node.state, action.preconditions)) continue;
      const state = applyEffects(node.state, action.effects);
      const key = factsKey(state);
      if (closed.has(key)) continue;
      const cost = node.cost + action.cost;
      const known = best.get(key);
      if (known !== undefined && known <= cost) continue;
      if (generated >= maxGenerated) return { status: 'budget_exhausted', budget: 'generated_nodes', limit: maxGenerated, expanded, generated };
      generated += 1;
      best.set(key, cost);
      frontier.push({ state, key, cost, order: generated, parent: node, action });
    }
  }
  return { status: 'no_plan', expanded, generated };
}

function planOf(node: SearchNode): Plan {
  const actions: PlanningAction[] = [];
  for (let at: SearchNode | undefined = node; at?.action !== undefined; at = at.parent) actions.push(at.action);
  actions.reverse();
  // Summed in plan order, so the reported cost is exactly what a caller adding the costs gets.
  const cost = actions.reduce((sum, action) => sum + action.cost, 0);
  return Object.freeze({ actions: Object.freeze(actions.map((action) => action.name)), cost });
}

/** A binary min-heap on (cost, order). */
class NodeHeap {
  readonly #items: SearchNode[] = [];

  push(node: SearchNode): void {
    const items = this.#items;
    items.push(node);
    let at = items.length - 1;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!before(items[at] as SearchNode, items[parent] as SearchNode)) break;
      [items[at], items[parent]] = [items[parent] as SearchNode, items[at] as SearchNode];
      at = parent;
    }
  }

  pop(): SearchNode | undefined {
    const items = this.#items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let at = 0;
      for (;;) {
        const left = 2 * at + 1;
        const right = left + 1;
        let least = at;
        if (left < items.length && before(items[left] as SearchNode, items[least] as SearchNode)) least = left;
        if (right < items.length && before(items[right] as SearchNode, items[least] as SearchNode)) least = right;
        if (least === at) break;
        [items[at], items[least]] = [items[least] as SearchNode, items[at] as SearchNode];
        at = least;
      }
    }
    return top;
  }
}

function before(a: SearchNode, b: SearchNode): boolean {
  return a.cost < b.cost || (a.cost === b.cost && a.order < b.order);
}
