/**
 * The example's simulated world (src/server/dispatchers/planning-world.ts): sensing reports the
 * process's world, an action applies its effects only when its preconditions hold, a replay of the
 * same Effect returns the same settlement without acting twice, malformed requests settle failed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planningAction } from '../../../strategies/planning/planner.js';
import { actEffect, senseEffect } from '../../../strategies/planning/wire.js';
import { Effect, EffectRequest } from '../../../src/kernel/effect.js';
import { ProcessId } from '../../../src/kernel/identity.js';
import { Payload } from '../../../src/kernel/payload.js';
import { ProcessRelation } from '../../../src/kernel/relation.js';
import { errandActions, errandsWorld, planningDeployments } from '../../../src/server/examples/planning.js';
import { isOwnerDispatched } from '../../../src/transport/placement.js';

const pid = ProcessId.parse('process:errands');
const ref = planningDeployments()[0]?.ref as never;
let step = 0n;
function request(effect: Effect, processId = pid): EffectRequest {
  step += 1n;
  return EffectRequest.create({ processId, relation: ProcessRelation.root(processId), deploymentRef: ref, stepSequence: step, batchIndex: 0, effect });
}
const live = (): AbortSignal => new AbortController().signal;
const act = (name: string, round = 1): Effect => actEffect(planningAction({ name, ...(errandActions[name] as { preconditions: object; effects: object; cost: number }) }), round);

test('the errands world: sense, a failing first drive, an applicable walk, a bus that changes nothing, one world per process', async () => {
  const world = errandsWorld();
  const sensed = await world.dispatch(request(senseEffect(0)), undefined, live());
  assert.deepEqual([sensed.status, sensed.payload.decode()], ['succeeded', { world: { at: 'home', car_at: 'home', groceries: false } }]);
  const drive = await world.dispatch(request(act('drive_to_store')), undefined, live());
  assert.equal(drive.status, 'failed');
  assert.equal(drive.payload.decode<{ error: { code: string } }>().error.code, 'planning.example.action_failed');
  const walkHome = await world.dispatch(request(act('walk_home')), undefined, live());
  assert.equal(walkHome.payload.decode<{ error: { code: string } }>().error.code, 'planning.example.not_applicable');
  const walk = await world.dispatch(request(act('walk_to_store')), undefined, live());
  assert.deepEqual(walk.payload.decode(), { world: { at: 'store', car_at: 'home', groceries: false } });
  const bus = await world.dispatch(request(act('take_bus_home')), undefined, live());
  assert.equal(bus.status, 'succeeded');
  assert.deepEqual(world.worldOf(pid.toString()), { at: 'store', car_at: 'home', groceries: false });
  // Another process has its own world.
  const other = await world.dispatch(request(senseEffect(0), ProcessId.parse('process:other')), undefined, live());
  assert.deepEqual(other.payload.decode(), { world: { at: 'home', car_at: 'home', groceries: false } });
});

test('a replay of the same Effect returns its first settlement and acts once; the deployment is owner-dispatched', async () => {
  const world = errandsWorld();
  const walk = request(act('walk_to_store'));
  const first = await world.dispatch(walk, undefined, live());
  const again = await world.dispatch(walk, undefined, live());
  assert.deepEqual(again.payload.decode(), first.payload.decode());
  // A second walk from the store is not applicable: the replay did not walk again, a new Effect would be refused.
  const back = await world.dispatch(request(act('walk_to_store', 2)), undefined, live());
  assert.equal(back.status, 'failed');
  assert.equal(world.replayPolicy(walk.effect), 'same_identity');
  assert.ok(isOwnerDispatched(planningDeployments()[0]?.dispatcher));
});

test('malformed requests and unknown actions settle failed', async () => {
  const world = errandsWorld();
  for (const payload of [{}, { operation: 'planning.sense' }, { operation: 'planning.sense', round: 0, extra: 1 }, { operation: 'planning.act', action: 'x', round: 1 }]) {
    const settlement = await world.dispatch(request(Effect.dispatcher(Payload.encode(payload))), undefined, live());
    assert.equal(settlement.status, 'failed', JSON.stringify(payload));
    assert.equal(settlement.payload.decode<{ error: { code: string } }>().error.code, 'planning.example.invalid_request');
  }
  const unknown = await world.dispatch(request(Effect.dispatcher(Payload.encode({ operation: 'planning.act', action: 'fly', round: 1, predicted: { at: 'moon' } }))), undefined, live());
  assert.equal(unknown.payload.decode<{ error: { code: string } }>().error.code, 'planning.example.unknown_action');
});
