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
import { Quota } from '../../../src/kernel/quota.js';
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
