/**
 * The planning loop on a real embedded Host (Engine, committer, dispatchers): it senses after every
 * action, excludes a failed action and an action sensing did not confirm and re-plans without them,
 * delegates an action to a child Process awaited until its subtree drained (a refused child start is a
 * failed attempt), and fails clearly when the rounds, the plans or the planner's budget run out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningDefinition, type PlanningActionSpec } from '../../../strategies/planning/definition.js';
import { goapPlanner } from '../../../strategies/planning/goap/planner.js';
import { Budget } from '../../../src/kernel/budget.js';
import { Deployment } from '../../../src/kernel/deployment.js';
import { Digest } from '../../../src/kernel/digest.js';
import { Payload } from '../../../src/kernel/payload.js';
import { Quota } from '../../../src/kernel/quota.js';
import { Settlement } from '../../../src/kernel/settlement.js';
import { echoDefinition } from '../../../strategies/demo/echo.js';
import { echoDispatcher } from '../../../src/server/demo-dispatchers.js';
import { planningWorldDispatcher } from '../../../src/server/dispatchers/planning-world.js';
import type { Definition } from '../../../src/kernel/definition.js';
import type { Dispatcher } from '../../../src/kernel/index.js';
import { errandActions, errandsDefinition, errandsWorld } from '../../../src/server/examples/planning.js';
import { embeddedHost, result, start } from '../../server/harness.js';

interface RoundOut {
  round: number;
  plan: string[];
  action: string;
  outcome: string;
  reason?: string;
}

/** A deployment of `definition` over `dispatcher` that records every dispatched operation (`sense` or the action's name). */
function recorded(definition: Definition, dispatcher: Dispatcher, name: string): { deployment: Deployment; operations: string[] } {
  const operations: string[] = [];
  const recording: Dispatcher = {
    dispatch(request, emit, signal) {
      const payload = request.effect.payload.decode<{ operation?: string; action?: string }>();
      operations.push(payload.operation === 'planning.sense' ? 'sense' : String(payload.action));
      return dispatcher.dispatch(request, emit, signal);
    },
    replayPolicy: (effect) => dispatcher.replayPolicy(effect),
  };
  const deployment = Deployment.create({ definition, dispatcher: recording, implementationDigest: Digest.of(`test:${name}`), configurationDigest: Digest.of(`test:${name}`) });
  return { deployment, operations };
}

test('errands: senses after every action, excludes the failed and the unconfirmed action, re-plans, and completes', async () => {
  const errands = recorded(errandsDefinition({ name: 'test.planning.errands' }), errandsWorld(), 'planning-errands');
  const host = embeddedHost({ deployments: [errands.deployment] });
  try {
    const { processId } = await start(host, 'test.planning.errands', { goal: { groceries: true, at: 'home' } });
    const done = await result(host, processId);
    assert.equal(done.status, 'completed', JSON.stringify(done.failure));
    const output = done.output as unknown as { world: Record<string, unknown>; rounds: RoundOut[]; excluded: string[] };
    assert.deepEqual(output.world, { at: 'home', car_at: 'home', groceries: true });
    assert.deepEqual(
      output.rounds.map((round) => [round.action, round.outcome]),
      [
        ['drive_to_store', 'failed'],
        ['walk_to_store', 'confirmed'],
        ['buy_groceries', 'confirmed'],
        ['take_bus_home', 'unconfirmed'],
        ['walk_home', 'confirmed'],
      ],
    );
    assert.deepEqual(output.rounds[0]?.plan, ['drive_to_store', 'buy_groceries', 'drive_home']);
    assert.match(output.rounds[0]?.reason ?? '', /planning\.example\.action_failed/);
    assert.match(output.rounds[3]?.reason ?? '', /sensing did not show at/);
    assert.deepEqual(output.excluded, ['drive_to_store', 'take_bus_home']);
    // No plan after an exclusion uses the excluded action.
    assert.ok(output.rounds.slice(1).every((round) => !round.plan.includes('drive_to_store')));
    assert.ok(output.rounds.slice(4).every((round) => !round.plan.includes('take_bus_home')));
    // A sensing before the first action and after every action, failed ones included.
    assert.deepEqual(errands.operations, [
      'sense', 'drive_to_store', 'sense', 'walk_to_store', 'sense', 'buy_groceries', 'sense', 'take_bus_home', 'sense', 'walk_home', 'sense',
    ]);
  } finally {
    await host.close(0);
  }
});

test('a goal that already holds completes after one sensing, with no round and no action', async () => {
  const errands = recorded(errandsDefinition({ name: 'test.planning.home' }), errandsWorld(), 'planning-home');
  const host = embeddedHost({ deployments: [errands.deployment] });
  try {
    const { processId } = await start(host, 'test.planning.home', { goal: { at: 'home' } });
    const done = await result(host, processId);
    assert.equal(done.status, 'completed', JSON.stringify(done.failure));
    assert.deepEqual(done.output, { world: { at: 'home', car_at: 'home', groceries: false }, rounds: [], excluded: [] });
    assert.deepEqual(errands.operations, ['sense']);
  } finally {
    await host.close(0);
  }
});

test('the rounds bound fails the process with planning.rounds_exhausted', async () => {
  const host = embeddedHost();
  try {
    const { processId } = await start(host, 'example.planning.errands', { goal: { groceries: true, at: 'home' }, maxRounds: 2 });
    const done = await result(host, processId);
    assert.equal(done.status, 'failed');
    assert.equal(done.failure?.code, 'planning.rounds_exhausted');
    assert.equal(done.failure?.kind, 'execution');
    assert.match(done.failure?.message ?? '', /2 planning rounds made/);
  } finally {
    await host.close(0);
  }
});

test('an unreachable goal fails with planning.no_plan; a planner out of budget with planning.planner_budget_exhausted', async () => {
  const tight = Deployment.create({
    definition: planningDefinition({
      name: 'test.planning.tight',
      description: 'errands with a one-expansion planner',
      actions: Object.entries(errandActions).map(([name, action]) => ({ name, ...action, execution: { kind: 'dispatch' } as const })),
      planner: goapPlanner({ maxExpansions: 1 }),
      maxRounds: 4,
    }),
    dispatcher: planningWorldDispatcher({ initial: { at: 'home', car_at: 'home' }, actions: errandActions }),
    implementationDigest: Digest.of('test:planning:tight'),
    configurationDigest: Digest.of('test:planning:tight'),
  });
  const host = embeddedHost({ deployments: [tight] });
  try {
    const moon = await start(host, 'example.planning.errands', { goal: { at: 'moon' } });
    const none = await result(host, moon.processId);
    assert.equal(none.failure?.code, 'planning.no_plan');
    const budget = await start(host, 'test.planning.tight', { goal: { groceries: true } });
    const exhausted = await result(host, budget.processId);
    assert.equal(exhausted.failure?.code, 'planning.planner_budget_exhausted');
    assert.match(exhausted.failure?.message ?? '', /expansions budget \(1\)/);
  } finally {
    await host.close(0);
  }
});

/**
 * A world with one fact `asked`: the delegated `ask_helper` (cost 1) runs a demo.echo child whose
 * dispatcher sets it; `do_it_myself` (cost 10) is a dispatcher action that sets it.
 */
function helperWorld(childInput: unknown): { deployment: Deployment; operations: string[]; helped: () => number } {
  let asked = false;
  let helped = 0;
  const inner = echoDispatcher();
  const helper = Deployment.create({
    definition: echoDefinition,
    dispatcher: {
      dispatch(request, emit, signal) {
        helped += 1;
        asked = true;
        return inner.dispatch(request, emit, signal);
      },
      replayPolicy: (effect) => inner.replayPolicy(effect),
    },
    implementationDigest: Digest.of('test:planning:helper'),
    configurationDigest: Digest.of('test:planning:helper'),
  });
  const budget = Budget.of({ steps: Quota.of(8), effects: Quota.of(4), signals: Quota.of(16) });
  const actions: PlanningActionSpec[] = [
    { name: 'ask_helper', effects: { asked: true }, cost: 1, execution: { kind: 'delegate', deployment: helper, input: childInput, budget } },
    { name: 'do_it_myself', effects: { asked: true }, cost: 10, execution: { kind: 'dispatch' } },
  ];
  const world: Dispatcher = {
    async dispatch(request) {
      const payload = request.effect.payload.decode<{ operation: string }>();
      if (payload.operation === 'planning.act') asked = true;
      return Settlement.of('succeeded', Payload.encode({ world: { asked } }));
    },
    replayPolicy: () => 'same_identity',
  };
  const definition = planningDefinition({ name: 'test.planning.helper', description: 'asks a helper child, or does it itself', actions, planner: goapPlanner(), maxRounds: 4 });
  const { deployment, operations } = recorded(definition, world, 'planning-helper');
  return { deployment, operations, helped: () => helped };
}

test('a delegated action runs as a child Process, awaited until its subtree drained, then sensing confirms it', async () => {
  const world = helperWorld({ value: 'please' });
  const host = embeddedHost({ deployments: [world.deployment] });
  try {
    const { processId } = await start(host, 'test.planning.helper', { goal: { asked: true } });
    const done = await result(host, processId);
    assert.equal(done.status, 'completed', JSON.stringify(done.failure));
    const output = done.output as unknown as { rounds: RoundOut[] };
    assert.deepEqual(output.rounds.map((round) => [round.action, round.outcome]), [['ask_helper', 'confirmed']]);
    assert.equal(world.helped(), 1);
    // Only the sensings went through the planning dispatcher: the action ran in the child.
    assert.deepEqual(world.operations, ['sense', 'sense']);
    const children = await host.children(processId);
    assert.equal(children.items.length, 1);
    assert.equal(children.items[0]?.status, 'completed');
  } finally {
    await host.close(0);
  }
});

test('a refused child start is a failed attempt: the delegated action is excluded and the plan falls back', async () => {
  const world = helperWorld({ nope: 1 });
  const host = embeddedHost({ deployments: [world.deployment] });
  try {
    const { processId } = await start(host, 'test.planning.helper', { goal: { asked: true } });
    const done = await result(host, processId);
    assert.equal(done.status, 'completed', JSON.stringify(done.failure));
    const output = done.output as unknown as { rounds: RoundOut[]; excluded: string[] };
    assert.deepEqual(output.rounds.map((round) => [round.action, round.outcome]), [['ask_helper', 'failed'], ['do_it_myself', 'confirmed']]);
    assert.match(output.rounds[0]?.reason ?? '', /the child did not start: engine\.child\.input\.invalid/);
    assert.deepEqual(output.excluded, ['ask_helper']);
    assert.equal(world.helped(), 0);
    assert.deepEqual(world.operations, ['sense', 'sense', 'do_it_myself', 'sense']);
  } finally {
    await host.close(0);
  }
});
