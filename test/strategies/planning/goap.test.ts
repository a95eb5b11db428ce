/**
 * goap: the uniform-cost planner is cost-optimal (hand-made problems with known optimal costs, and
 * fast-check problems against a brute-force planner written here), deterministic (same problem, any
 * action order → same plan), bounded (budget exhaustion is its own result, never `no_plan`), and
 * rejects invalid costs and budgets eagerly.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { goapPlanner } from '../../../strategies/planning/goap/planner.js';
import { type PlanningAction, type Problem, planningAction, problem } from '../../../strategies/planning/planner.js';
import { type Facts, PlanningValueError, applyEffects, factsKey, satisfies } from '../../../strategies/planning/world.js';

/** The cheapest plan by exhaustive enumeration of every path that never repeats a state. */
function bruteForce(p: Problem): number | undefined {
  let bestCost: number | undefined;
  const visit = (state: Facts, cost: number, seen: Set<string>): void => {
    if (satisfies(state, p.goal)) {
      if (bestCost === undefined || cost < bestCost) bestCost = cost;
      return;
    }
    for (const action of p.actions) {
      if (!satisfies(state, action.preconditions)) continue;
      const next = applyEffects(state, action.effects);
      const key = factsKey(next);
      if (seen.has(key)) continue;
      seen.add(key);
      visit(next, cost + action.cost, seen);
      seen.delete(key);
    }
  };
  visit(p.initial, 0, new Set([factsKey(p.initial)]));
  return bestCost;
}

/** Replays a plan: every action applicable in turn, the goal holds at the end; returns its cost. */
function replay(p: Problem, names: readonly string[]): number {
  let state = p.initial;
  let cost = 0;
  for (const name of names) {
    const action = p.actions.find((candidate) => candidate.name === name) as PlanningAction;
    assert.ok(action !== undefined, `unknown action ${name}`);
    assert.ok(satisfies(state, action.preconditions), `${name} is not applicable`);
    state = applyEffects(state, action.effects);
    cost += action.cost;
  }
  assert.ok(satisfies(state, p.goal), 'the plan does not reach the goal');
  return cost;
}

const facts = ['a', 'b', 'c', 'd'] as const;
const partialFacts = fc.dictionary(fc.constantFrom(...facts), fc.boolean(), { maxKeys: 3 });
const arbitraryProblem = fc
  .record({
    initial: fc.record({ a: fc.boolean(), b: fc.boolean(), c: fc.boolean(), d: fc.boolean() }),
    goal: partialFacts,
    actions: fc.array(fc.record({ preconditions: partialFacts, effects: partialFacts.filter((e) => Object.keys(e).length > 0), cost: fc.integer({ min: 0, max: 9 }) }), { minLength: 0, maxLength: 7 }),
  })
  .map(({ initial, goal, actions }) =>
    problem({ initial, goal, actions: actions.map((action, index) => planningAction({ name: `act_${index}`, ...action })) }),
  );

test('optimal on small problems with known optimal costs', () => {
  const errands = [
    planningAction({ name: 'drive_to_store', preconditions: { at: 'home', car: true }, effects: { at: 'store' }, cost: 2 }),
    planningAction({ name: 'walk_to_store', preconditions: { at: 'home' }, effects: { at: 'store' }, cost: 5 }),
    planningAction({ name: 'buy_groceries', preconditions: { at: 'store' }, effects: { groceries: true }, cost: 1 }),
    planningAction({ name: 'drive_home', preconditions: { at: 'store', car: true }, effects: { at: 'home' }, cost: 2 }),
    planningAction({ name: 'walk_home', preconditions: { at: 'store' }, effects: { at: 'home' }, cost: 5 }),
  ];
  const cases: { initial: Facts; goal: Facts; actions: PlanningAction[]; cost: number | undefined; plan?: string[] }[] = [
    { initial: { at: 'home', car: true }, goal: { groceries: true, at: 'home' }, actions: errands, cost: 5, plan: ['drive_to_store', 'buy_groceries', 'drive_home'] },
    { initial: { at: 'home', car: false }, goal: { groceries: true, at: 'home' }, actions: errands, cost: 11, plan: ['walk_to_store', 'buy_groceries', 'walk_home'] },
    { initial: { at: 'home', car: true }, goal: { at: 'home' }, actions: errands, cost: 0, plan: [] },
    // A cheap first step that leads to an expensive path loses to a dear first step.
    {
      initial: { n: 0 },
      goal: { n: 3 },
      actions: [
        planningAction({ name: 'cheap', preconditions: { n: 0 }, effects: { n: 1 }, cost: 1 }),
        planningAction({ name: 'cheap_then_dear', preconditions: { n: 1 }, effects: { n: 3 }, cost: 10 }),
        planningAction({ name: 'dear', preconditions: { n: 0 }, effects: { n: 2 }, cost: 4 }),
        planningAction({ name: 'finish', preconditions: { n: 2 }, effects: { n: 3 }, cost: 0.5 }),
      ],
      cost: 4.5,
      plan: ['dear', 'finish'],
    },
    // Zero-cost cycles terminate.
    {
      initial: { x: false },
      goal: { y: true },
      actions: [
        planningAction({ name: 'flip_on', preconditions: { x: false }, effects: { x: true }, cost: 0 }),
        planningAction({ name: 'flip_off', preconditions: { x: true }, effects: { x: false }, cost: 0 }),
      ],
      cost: undefined,
    },
  ];
  for (const { initial, goal, actions, cost, plan } of cases) {
    const p = problem({ initial, goal, actions });
    const outcome = goapPlanner().plan(p);
    if (cost === undefined) {
      assert.equal(outcome.status, 'no_plan');
      continue;
    }
    assert.equal(outcome.status, 'found');
    assert.equal(outcome.plan.cost, cost);
    assert.deepEqual(outcome.plan.actions, plan);
    assert.equal(replay(p, outcome.plan.actions), cost);
  }
});

test('property: the plan is valid and as cheap as the brute-force optimum; no_plan exactly when none exists', () => {
  fc.assert(
    fc.property(arbitraryProblem, (p) => {
      const optimum = bruteForce(p);
      const outcome = goapPlanner().plan(p);
      if (optimum === undefined) {
        assert.equal(outcome.status, 'no_plan');
        return;
      }
      assert.equal(outcome.status, 'found');
      assert.equal(outcome.plan.cost, optimum);
      assert.equal(replay(p, outcome.plan.actions), optimum);
    }),
    { numRuns: 400, seed: 20261202 },
  );
});

test('property: deterministic — the same problem, with its actions in any order, gives the same outcome', () => {
  fc.assert(
    fc.property(arbitraryProblem, fc.infiniteStream(fc.nat()), (p, keys) => {
      const order = p.actions.map((action) => ({ action, key: keys.next().value as number })).sort((x, y) => x.key - y.key);
      const shuffled = problem({ initial: p.initial, goal: p.goal, actions: order.map((entry) => entry.action) });
      const first = goapPlanner().plan(p);
      assert.deepEqual(goapPlanner().plan(p), first);
      assert.deepEqual(goapPlanner().plan(shuffled), first);
    }),
    { numRuns: 200, seed: 7 },
  );
});

/** A chain n=0 → n=1 → … → n=length, one action per link. */
function chain(length: number): Problem {
  const actions = Array.from({ length }, (_, index) => planningAction({ name: `step_${index}`, preconditions: { n: index }, effects: { n: index + 1 }, cost: 1 }));
  return problem({ initial: { n: 0 }, goal: { n: length }, actions });
}

test('budget exhaustion is a result of its own, never no_plan, for either budget', () => {
  const p = chain(5);
  assert.equal(goapPlanner({ maxExpansions: 5 }).plan(p).status, 'found');
  const expansions = goapPlanner({ maxExpansions: 4 }).plan(p);
  assert.deepEqual(expansions, { status: 'budget_exhausted', budget: 'expansions', limit: 4, expanded: 4, generated: 4 });
  const generated = goapPlanner({ maxGenerated: 3 }).plan(p);
  assert.deepEqual(generated, { status: 'budget_exhausted', budget: 'generated_nodes', limit: 3, expanded: 4, generated: 3 });
  // A problem with no plan reports no_plan within the budget, and budget_exhausted when the budget is too small to tell.
  const hopeless = problem({ initial: p.initial, goal: { n: 99 }, actions: p.actions });
  assert.equal(goapPlanner().plan(hopeless).status, 'no_plan');
  assert.equal(goapPlanner({ maxExpansions: 2 }).plan(hopeless).status, 'budget_exhausted');
});

test('invalid costs, names and budgets are rejected when declared, not during a search', () => {
  for (const cost of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -1, -0.001]) {
    assert.throws(
      () => planningAction({ name: 'bad', effects: { x: true }, cost }),
      (error: unknown) => error instanceof PlanningValueError && error.code === 'planning.invalid_action',
    );
  }
  assert.throws(() => planningAction({ name: 'Bad Name', effects: { x: true }, cost: 1 }), /is not/);
  assert.throws(() => planningAction({ name: 'none', effects: {}, cost: 1 }), /predicts no effect/);
  const twice = planningAction({ name: 'twice', effects: { x: true }, cost: 1 });
  assert.throws(() => problem({ initial: {}, goal: {}, actions: [twice, twice] }), /declared twice/);
  for (const budget of [{ maxExpansions: 0 }, { maxGenerated: -1 }, { maxExpansions: 1.5 }]) {
    assert.throws(() => goapPlanner(budget), (error: unknown) => error instanceof PlanningValueError && error.code === 'planning.invalid_budget');
  }
});
